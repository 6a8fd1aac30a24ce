"""sealbench's pytest plugin: the sealed report of a scoring run (loaded with ``-p sealbench.pytest_seal``).

The harness (``sealed_command._run_check``) starts pytest with ``SEALBENCH_SEAL=<secret fd>:<stream fd>``.
At *import* — while pytest parses its options, before any conftest or test module (and so
before any code of the patch) is imported — this module:

- reads the one-time secret from the secret pipe (canary names, the failing canary's message,
  a shuffle seed), closes it and removes the variable from the environment, so code imported
  later finds neither;
- keeps the stream fd (a pipe the harness reads; the process can only append to it) out of
  child processes, and writes a ``start`` record.

Then it inserts two canary tests among the real ones (random positions, parents among the
real test modules, names built like the suite's own): one passes, one fails with the secret
message. Every test report (node id, phase, outcome, failure text) and what each test really
raised (read from the call before any report object exists) is streamed as it happens, and a
``finish`` record closes the stream. Each plain test function is wrapped so that the stream
also says it really ran and returned (``ran``): a pass reported for a test that was never
called is caught. The failing canary does not count towards ``-x``/
``--maxfail`` or the exit code. After collection and at the session's end, an ``imports`` record
says where each of the task's packages (named in the secret) was imported from. The harness judges from the stream (``sealed_report.judge_stream``).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import random
import sys

import pytest

_ENV = "SEALBENCH_SEAL"
_TEXT_CAP = 1500


def _open_seal():
    spec = os.environ.pop(_ENV, None)
    if not spec:
        return None, None
    try:
        rfd, wfd = (int(x) for x in spec.split(":"))
    except ValueError:
        return None, None
    chunks = []
    try:
        while True:
            b = os.read(rfd, 65536)
            if not b:
                break
            chunks.append(b)
    except OSError:
        chunks = []
    finally:
        try:
            os.close(rfd)
        except OSError:
            pass
    try:
        os.set_inheritable(wfd, False)
    except OSError:
        wfd = None
    try:
        secret = json.loads(b"".join(chunks)) if chunks else None
    except ValueError:
        secret = None
    return secret, wfd


def _make_plugin():
    # Everything secret lives in this closure only (no module globals to read it from).
    secret, fd = _open_seal()

    def send(**rec) -> None:
        if fd is None:
            return
        data = (json.dumps(rec, separators=(",", ":")) + "\n").encode()
        try:
            os.write(fd, data)
        except OSError:
            pass

    send(kind="start", pid=os.getpid(), secret=secret is not None)
    if secret is None:
        return None
    names = dict(secret["names"])               # {"pass": name, "fail": name}
    message = secret["message"]
    rng = random.Random(secret["seed"])
    canary_ids: dict[str, str] = {}             # nodeid -> "pass" | "fail"
    watched = [str(n) for n in secret.get("packages") or ()]    # the code under test

    def send_imports(when: str) -> None:
        # where each package under test was imported from (its file, or a namespace
        # package's folders), resolved now: the harness checks it lies in the workspace
        mods = {}
        for name in watched:
            mod = sys.modules.get(name)
            if mod is None:
                continue
            f = getattr(mod, "__file__", None)
            where = [f] if isinstance(f, str) and f else [str(p) for p in (getattr(mod, "__path__", None) or [])]
            mods[name] = [os.path.realpath(p) for p in where] or ["(no file: built in, or made at run time)"]
        send(kind="imports", when=when, modules=mods)
    sessions: list = []

    def canary_function(module, name: str, role: str):
        path = str(getattr(module, "path", "") or "")
        a, b = rng.randint(2, 9999), rng.randint(2, 9999)
        body = (f"    assert {a} + {b} == {a + b}\n" if role == "pass"
                else f"    raise AssertionError({message!r})\n")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:   # closed: no ResourceWarning
                lines = len(fh.read().splitlines())             # for a suite that makes warnings errors
        except OSError:
            lines = 0
        src = "\n" * (lines + rng.randint(1, 40)) + f"def {name}():\n{body}"
        code = compile(src, path or "<test>", "exec")
        try:
            glb = module.obj.__dict__
        except Exception:  # noqa: BLE001 - a module whose import failed has no namespace
            glb = {"__name__": "test"}
        ns: dict = {}
        exec(code, glb, ns)
        return ns[name]

    def _witness(fn, nodeid: str):
        @functools.wraps(fn)
        def run_test(*args, **kwargs):
            try:
                result = fn(*args, **kwargs)
            except BaseException:
                send(kind="ran", nodeid=nodeid, event="raised")
                raise
            send(kind="ran", nodeid=nodeid, event="returned")
            return result
        return run_test

    class SealPlugin:
        @pytest.hookimpl(tryfirst=True)
        def pytest_configure(self, config) -> None:
            send(kind="configured")

        @pytest.hookimpl(trylast=True)
        def pytest_collection_modifyitems(self, session, config, items) -> None:
            send_imports("collected")
            modules = [(i, it.getparent(pytest.Module)) for i, it in enumerate(items)]
            if not any(m is not None for _, m in modules):
                return
            for role in ("pass", "fail"):
                # a slot between items that share no class, so no class fixture is torn down
                slots = [i for i in range(len(items) + 1)
                         if i in (0, len(items)) or items[i - 1].parent is not items[i].parent
                         or isinstance(items[i - 1].parent, pytest.Module)]
                pos = rng.choice(slots)
                neighbour = items[pos - 1] if pos > 0 else items[0]
                module = neighbour.getparent(pytest.Module) or next(m for _, m in modules if m is not None)
                fn = canary_function(module, names[role], role)
                item = pytest.Function.from_parent(module, name=names[role], callobj=fn)
                canary_ids[item.nodeid] = role
                items.insert(pos, item)
            # every plain test function is wrapped, so the stream says that it really ran and
            # returned: a plugin that answers pytest_pyfunc_call without calling the test (or
            # a report forged for a test that never ran) shows as a pass with no "ran" record
            wrapped = []
            for it in items:
                if type(it) is not pytest.Function or it.nodeid in canary_ids:
                    continue
                fn = getattr(it, "obj", None)
                if not callable(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
                    continue
                it.obj = _witness(fn, it.nodeid)
                wrapped.append(it.nodeid)
            send(kind="wrapped", nodeids=wrapped)

        @pytest.hookimpl(hookwrapper=True, tryfirst=True)
        def pytest_runtest_makereport(self, item, call):
            exc = call.excinfo
            if exc is None:
                raw, text = "passed", ""
            else:
                skip = pytest.skip.Exception
                xfail = pytest.xfail.Exception
                raw = "skipped" if exc.errisinstance((skip, xfail)) else "failed"
                try:
                    text = exc.exconly()[:_TEXT_CAP]
                except Exception:  # noqa: BLE001
                    text = repr(exc.value)[:_TEXT_CAP]
            send(kind="raw", nodeid=item.nodeid, when=call.when, outcome=raw, text=text)
            yield

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_logreport(self, report) -> None:
            try:
                text = report.longreprtext[-_TEXT_CAP:] if report.failed else ""
            except Exception:  # noqa: BLE001
                text = ""
            send(kind="report", nodeid=report.nodeid, when=report.when, outcome=report.outcome, text=text,
                 xfail=hasattr(report, "wasxfail"))

        @pytest.hookimpl(tryfirst=True)
        def pytest_collectreport(self, report) -> None:
            if report.outcome != "passed":
                try:
                    text = report.longreprtext[-_TEXT_CAP:]
                except Exception:  # noqa: BLE001
                    text = ""
                send(kind="collect", nodeid=report.nodeid, outcome=report.outcome, text=text)

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionfinish(self, session, exitstatus) -> None:
            send_imports("finish")
            send(kind="finish", exitstatus=int(session.exitstatus), collected=int(session.testscollected),
                 canaries=len(canary_ids))

    class MaxfailGuard:
        """Runs after the session's own bookkeeping: the failing canary is not a test failure."""

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(self, report) -> None:
            if report.failed and canary_ids.get(report.nodeid) == "fail" and not hasattr(report, "wasxfail"):
                session = sessions[-1] if sessions else None
                if session is not None and session.testsfailed > 0:
                    session.testsfailed -= 1
                    maxfail = session.config.getoption("maxfail", 0)
                    if session.shouldfail and (not maxfail or session.testsfailed < maxfail):
                        session.shouldfail = False

        @pytest.hookimpl(tryfirst=True)
        def pytest_sessionstart(self, session) -> None:
            sessions.append(session)

    def on_registered(plugin) -> None:
        name = getattr(plugin, "__name__", "") or ""
        if name == "conftest" or name.endswith(".conftest") or str(getattr(plugin, "__file__", "")).endswith("conftest.py"):
            send(kind="conftest", file=str(getattr(plugin, "__file__", "")))

    return SealPlugin(), MaxfailGuard(), on_registered


_PLUGINS = _make_plugin()


def pytest_plugin_registered(plugin, manager) -> None:
    """A conftest loaded before configure may import the tested code: the harness is told, so
    that a stop before configure counts as infra only when no such code can have run."""
    if _PLUGINS is not None:
        _PLUGINS[2](plugin)


def pytest_configure(config) -> None:
    if _PLUGINS is None:
        return
    seal, guard, _ = _PLUGINS
    config.pluginmanager.register(seal, "sealbench-seal")
    config.pluginmanager.register(guard, "sealbench-seal-maxfail")
