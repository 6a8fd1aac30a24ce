"""sealbench's report plugin for a scoring command (docs/sealed-runs.md#scoring-commands).

The harness puts this folder on ``PYTHONPATH`` and loads the plugin by name
(``-p sealbench_report`` in ``PYTEST_ADDOPTS``); it hands over a pipe's write end in
``SEALBENCH_REPORT_FD`` and the task's packages under test in ``SEALBENCH_REPORT_PACKAGES``.
The plugin writes one JSON line per record to the pipe: that pytest started and was configured,
each conftest loaded, the collected test ids, each collection error, each test phase's report,
where the packages under test were imported from, and pytest's own exit status at the end.

It changes nothing of the run: no test is wrapped, added, reordered or refused, so a suite is
judged exactly as plain pytest judges it. Nothing here is trusted to resist the code under test
(it runs in the same process): the harness judges a pass against decoy tests the tested code
cannot tell from the real ones (``sealbench.scoring.decoys``), not against this plugin's honesty.
Standard library and pytest only: it is imported in the task's own environment.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

_FD = "SEALBENCH_REPORT_FD"
_PACKAGES = "SEALBENCH_REPORT_PACKAGES"
_TEXT_CAP = 1500


def _open() -> tuple[object | None, list[str]]:
    fd = os.environ.pop(_FD, "")
    names = os.environ.pop(_PACKAGES, "")
    try:
        out = os.fdopen(int(fd), "wb", buffering=0) if fd else None
    except (OSError, ValueError):
        out = None
    try:
        packages = [str(n) for n in json.loads(names)] if names else []
    except ValueError:
        packages = []
    return out, packages


_OUT, _WATCHED = _open()


def _record(**rec) -> None:
    if _OUT is None:
        return
    data = (json.dumps(rec, default=str) + "\n").encode()
    try:
        view = memoryview(data)
        while view:
            view = view[_OUT.write(view) or 0:]
    except OSError:
        pass


def _text(get) -> str:
    try:
        t = get()
    except Exception:  # noqa: BLE001 - the text of a report is for reading only
        return ""
    return t if isinstance(t, str) else ""


def _crash(report) -> str:
    """The first line of what ended a failed phase (``AssertionError: assert 1 == 2``)."""
    return _text(lambda: report.longrepr.reprcrash.message.splitlines()[0][:300]) or \
        _text(lambda: str(report.longrepr).strip().splitlines()[-1][:300])


def _imports(when: str) -> None:
    mods = {}
    for name in _WATCHED:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        f = getattr(mod, "__file__", None)
        where = [f] if isinstance(f, str) and f else [str(p) for p in (getattr(mod, "__path__", None) or [])]
        mods[name] = [os.path.realpath(p) for p in where] or ["(no file: built in, or made at run time)"]
    _record(kind="imports", when=when, modules=mods)


_record(kind="start", pid=os.getpid())


def pytest_plugin_registered(plugin, manager) -> None:
    """A conftest loaded before configure may import the tested code: the harness is told, so
    that a stop before configure counts as infra only when no such code can have run."""
    name = str(getattr(plugin, "__name__", "") or "")
    if name == "conftest" or name.endswith(".conftest") or str(getattr(plugin, "__file__", "")).endswith("conftest.py"):
        _record(kind="conftest", file=str(getattr(plugin, "__file__", "")))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config) -> None:
    # read: a test's own pytest runs (pytester, subprocesses) get none of the harness's options
    os.environ.pop("PYTEST_ADDOPTS", None)
    _record(kind="configured")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items) -> None:
    _imports("collected")
    _record(kind="collected", nodeids=[str(it.nodeid) for it in items])


@pytest.hookimpl(tryfirst=True)
def pytest_collectreport(report) -> None:
    if report.outcome != "passed":
        _record(kind="collect", nodeid=str(report.nodeid), outcome=str(report.outcome),
                text=_text(lambda: report.longreprtext[-_TEXT_CAP:]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    excinfo = call.excinfo
    if excinfo is not None and report is not None:
        try:
            report.sealbench_exception = excinfo.typename      # what ended the phase: the type's name
        except Exception:  # noqa: BLE001 - a report that takes no attribute: the first line says it
            pass


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report) -> None:
    failed = report.outcome == "failed"
    _record(kind="report", nodeid=str(report.nodeid), when=str(report.when), outcome=str(report.outcome),
            text=_text(lambda: report.longreprtext[-_TEXT_CAP:]) if failed else "",
            crash=_crash(report) if failed else "",
            exception=str(getattr(report, "sealbench_exception", "") or "") if failed else "",
            xfail=hasattr(report, "wasxfail"), subtest=type(report).__name__ != "TestReport")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus) -> None:
    _imports("finish")
    _record(kind="finish", exitstatus=int(session.exitstatus), collected=int(session.testscollected))
