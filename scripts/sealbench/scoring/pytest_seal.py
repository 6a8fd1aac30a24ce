"""The seal of a scoring command: bootstrap, audit hook and pytest plugin (docs/sealed-runs.md#the-seal).

The code under test runs inside the pytest process that judges it, so nothing that process says
is taken on trust unless it comes from a part the tested code cannot reach or change. Three
parts, in the order they start:

1. **Bootstrap** (:func:`boot`). ``seal_site/sitecustomize.py`` calls it while the interpreter
   starts (``PYTHONSAFEPATH=1``: neither the current folder nor a script's folder is on
   ``sys.path``), before ``-m pytest`` or the ``pytest`` script run and before any file of the
   workspace can be imported. It reads the one-time secret from the secret pipe (canary names,
   the failing canary's message, a shuffle seed, the record key, the workspace root, the sealed
   test files, the task's import folders and packages), makes the process non-dumpable (no other
   process of the sandbox can open its memory), imports pytest and its plugins, compiles every
   sealed test file (plain and with pytest's assertion rewriting: the only code a test may run
   as), snapshots the callables of pytest, pluggy and unittest, puts the workspace and the
   import folders at the END of ``sys.path`` (after the standard library, the environment's
   packages and sealbench: a workspace file can never stand for one of their modules), removes
   every trace of the secret from the environment, and installs the audit hook.

2. **Audit hook** (:func:`_install`). PEP 578 hooks cannot be removed from Python. Its state (the
   record key, the stream fd, the sealed code, the snapshot) lives only in its closure: no module
   global, no frame that outlives :func:`boot`, so reaching it needs ``gc`` or a frame of the
   hook itself, which it refuses (not from workspace code that runs ON its frames, such as a
   signal handler: docs/sealed-runs.md, what remains possible). It is the only writer of the report stream: every record is
   HMAC-signed with the key and numbered, so bytes written to the stream by anything else are
   seen as forged. It writes a record only when the event was raised by this module's own code
   (its code objects, compared by identity) with no workspace code on the stack; and it refuses
   — a ``tamper`` record naming the event, then ``os._exit`` — the primitives an in-process
   forgery needs when workspace code reaches them: walking objects (``gc.get_objects``,
   ``get_referrers``, ``get_referents``), ``sys._current_frames``, a frame of the hook itself
   (through ``sys._getframe`` or a traceback's, generator's or coroutine's frame, while workspace
   code is on the stack: its free variables lead to the key; any other frame is not guarded, its
   ``f_back`` and ``f_locals`` being no audit events), replacing a function's code or defaults, making functions from sealed code or executing a
   sealed module's code again, compiling code under a name of a file it did not read,
   ``ctypes``/``cffi`` and their calls, tracing and profiling hooks, more audit hooks, and
   opening a process's ``mem``. "Workspace code" is any frame whose file is not the standard
   library, the environment's packages, sealbench or a sealed test file (code compiled from a
   string counts as workspace code).

3. **Plugin** (``-p sealbench.scoring.pytest_seal``; :class:`_Seal`). Two canary tests among the real
   ones (random places, names built like the suite's own; one passes, one fails with the secret
   message). Every test function — plain, in a class or a ``unittest.TestCase`` method — is
   called through a witness that tells the hook, right before the call, which function it calls:
   the hook checks that its code is code compiled from a sealed file, named as the test, and
   right after, whether it returned or raised. Reports, collection errors, where the packages
   under test were imported from, plugins registered and the session's end are recorded too;
   the hook checks, at every test's end and at the session's end, that no callable of pytest,
   pluggy or unittest was replaced.

The harness judges from the stream (``sealed_report.judge_stream``): a pass needs every record
signed, the canaries as expected, and every real test reported passed witnessed as sealed code
that returned.

PYTEST_DONT_REWRITE: the bootstrap imports this module before pytest does (no assertions here).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import inspect
import json
import os
import random
import sys
import types

import pytest

_ENV = "SEALBENCH_SEAL"
_TEXT_CAP = 1500
#: the audit event this module's code raises to have a record written
RECORD = "sealbench.record"
#: the audit event that hands the plugin the canaries (authenticated like a record)
CANARIES = "sealbench.canaries"
#: the exit status of a process the hook ended for tampering
TAMPER_EXIT = 86

_FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_FUNC_ATTRS = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
_NATIVE = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend"})
_WATCH = frozenset({
    RECORD, CANARIES, "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._getframe",
    "sys._current_frames", "sys.settrace", "sys.setprofile", "sys.addaudithook", "object.__getattr__",
    "object.__setattr__", "object.__delattr__", "function.__new__", "code.__new__", "exec", "compile",
    "import", "open",
})
#: pytest rebinds these itself while it runs (assertion messages, pdb): not a tamper
_REBOUND_BY_PYTEST = frozenset({
    ("_pytest.assertion.util", "_reprcompare"), ("_pytest.assertion.util", "_assertion_pass"),
    ("_pytest.assertion.util", "_config"),
})
_GUARDED = ("pytest", "_pytest", "pluggy", "unittest", "iniconfig", "builtins", __name__)


# ----------------------------------------------------------------------------- bootstrap

def _read_secret(spec: str) -> tuple[dict | None, int | None]:
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
        return None, None
    try:
        return (json.loads(b"".join(chunks)) if chunks else None), wfd
    except ValueError:
        return None, wfd


def _no_dumps() -> None:
    """PR_SET_DUMPABLE 0: no other process of the same user may open this one's memory."""
    loaded = set(sys.modules)
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        pass
    for name in set(sys.modules) - loaded:      # a later ``import ctypes`` is an import again
        del sys.modules[name]


def _sealed_code(files: list[str]) -> tuple[set, set, dict]:
    """Every code object and the module code objects compiled from the sealed test files (plain
    and with pytest's assertion rewriting, as pytest itself compiles them), and per file what its
    module-level names must stay bound to while its tests run: an undecorated function it defines
    (one of its codes) or what it imports from pytest, pluggy or unittest (module, attribute)."""
    import ast

    from _pytest.assertion.rewrite import rewrite_asserts

    codes: set = set()
    modules: set = set()
    bindings: dict[str, dict[str, tuple]] = {}

    def walk(co) -> None:
        codes.add(co)
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)

    for path in files:
        try:
            with open(path, "rb") as fh:
                src = fh.read()
            plain = compile(src, path, "exec", dont_inherit=True)
            tree = ast.parse(src, filename=path)
            body = list(tree.body)
            rewrite_asserts(tree, src, path, None)
            rewritten = compile(tree, path, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            continue        # not Python: pytest will say so when it collects it
        own: dict[str, tuple] = {}
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
                own[node.name] = ("def", frozenset(c for m in (plain, rewritten) for c in m.co_consts
                                                   if isinstance(c, types.CodeType) and c.co_name == node.name))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] in _GUARDED:
                        own[a.asname or a.name.split(".")[0]] = ("module", a.name if a.asname else a.name.split(".")[0],
                                                                 None)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                    node.module.split(".")[0] in _GUARDED:
                for a in node.names:
                    if a.name != "*":
                        own[a.asname or a.name] = ("module", node.module, a.name)
        bindings[os.path.realpath(path)] = own
        for co in (plain, rewritten):
            modules.add(co)
            walk(co)
    return codes, modules, bindings


def _guarded_modules() -> dict[str, types.ModuleType]:
    return {n: m for n, m in list(sys.modules.items())
            if isinstance(m, types.ModuleType) and (n.split(".")[0] in _GUARDED or n in _GUARDED)}


def _snapshot() -> dict[tuple[str, ...], object]:
    """The callables and classes bound in pytest's, pluggy's and unittest's modules and classes."""
    snap: dict[tuple[str, ...], object] = {}
    for name, mod in _guarded_modules().items():
        for k, v in list(vars(mod).items()):
            if callable(v) and (name, k) not in _REBOUND_BY_PYTEST:
                snap[(name, k)] = v
            if isinstance(v, type) and getattr(v, "__module__", None) == name and name != "builtins":
                for a, w in list(vars(v).items()):
                    if callable(w) or isinstance(w, (staticmethod, classmethod, property)):
                        snap[(name, k, a)] = w
    return snap


def _nested_codes(*tops) -> frozenset:
    """The code objects ``tops`` and every code object nested in them."""
    out: set = set()
    todo = list(tops)
    while todo:
        co = todo.pop()
        out.add(co)
        todo.extend(c for c in co.co_consts if isinstance(c, types.CodeType))
    return frozenset(out)


def _plugin_codes() -> set:
    """Every code object of this module: the hook writes records only for events they raise."""
    out: set = set()
    mod = sys.modules[__name__]

    def walk(co) -> None:
        out.add(co)
        for c in co.co_consts:
            if isinstance(c, types.CodeType):
                walk(c)

    for v in list(vars(mod).values()):
        for f in ([v] if isinstance(v, types.FunctionType) else
                  [w for w in vars(v).values() if isinstance(w, types.FunctionType)]
                  if isinstance(v, type) and v.__module__ == __name__ else []):
            walk(f.__code__)
    return out


def _is_pytest_run(argv: list[str]) -> bool:
    """Whether the interpreter was started as ``python [options] -m pytest`` or as the
    ``pytest``/``py.test`` script."""
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "-m":
            return bool(args) and args[0] in ("pytest", "py.test")
        if a in ("-c", "-"):
            return False
        if a in ("-X", "-W", "-Q"):
            args = args[1:]
            continue
        if a.startswith("-"):
            continue
        return os.path.basename(a) in ("pytest", "py.test")
    return False


def boot(site_dir: str) -> None:
    """Set the process up before pytest and any workspace code run (see the module docstring)."""
    import time

    t0 = time.perf_counter()
    spec = os.environ.pop(_ENV, None)
    # the environment a test's subprocess inherits is the task's, not the seal's
    for var in ("PYTHONSAFEPATH", "PYTHONPATH"):
        os.environ.pop(var, None)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != site_dir]
    if not _is_pytest_run(getattr(sys, "orig_argv", sys.argv)):
        return          # not a pytest run: nothing is sealed, and such a command can never pass
    secret, fd = _read_secret(spec or "")
    if fd is None:
        return
    if secret is None or not isinstance(secret.get("key"), str):
        os.write(fd, b'{"kind":"start","secret":false}\n')
        return
    _no_dumps()
    root = os.path.realpath(secret["root"])
    trusted = [os.path.realpath(p) for p in sys.path if p and os.path.isabs(p)]
    trusted = [p for p in trusted if not (root + "/").startswith(p.rstrip("/") + "/")]
    # pytest, its plugins and unittest are loaded while no workspace code can have run (pytest
    # would import them all anyway: their time is reported apart, as import_ms)
    t_import = time.perf_counter()
    import unittest  # noqa: F401

    import _pytest.config
    import _pytest.python  # noqa: F401
    import _pytest.unittest  # noqa: F401
    for name in _pytest.config.default_plugins:
        try:
            __import__(f"_pytest.{name}")
        except ImportError:
            pass
    t0 += time.perf_counter() - t_import        # the bootstrap's own time excludes the imports
    import_ms = round((time.perf_counter() - t_import) * 1000, 2)
    sealed_files = sorted({os.path.realpath(p) for p in secret.get("sealed_files") or ()})
    codes, module_codes, bindings = _sealed_code(sealed_files)
    for p in secret.get("paths") or ():
        if p not in sys.path:
            sys.path.append(p)
    if secret["root"] not in sys.path:
        sys.path.append(secret["root"])
    _install(secret, fd, root, trusted, sealed_files, codes, module_codes, bindings, t0, import_ms)


# ----------------------------------------------------------------------------- the audit hook

def _install(secret: dict, fd: int, root: str, trusted: list[str], sealed_files: list[str], codes: set,
             module_codes: set, bindings: dict, t0: float, import_ms: float) -> None:
    import _thread

    key = bytes.fromhex(secret["key"])
    seq = [0]
    # the standard library: os's folder, its lib-dynload, the zip beside it
    base = os.path.realpath(os.path.dirname(os.__file__))
    stdlib = [base] + [os.path.realpath(p) for p in sys.path if p.endswith(".zip") or
                       os.path.realpath(p) == os.path.join(base, "lib-dynload")]
    trusted = [p for p in trusted if not any(p == s or p.startswith(s + "/") for s in stdlib)]
    sealed = frozenset(sealed_files)
    own = _plugin_codes()
    # the frames that hold the record key: the hook's (its closure) and the bootstrap's
    hook_codes = _nested_codes(_install.__code__, boot.__code__, _read_secret.__code__)
    snapshot = _snapshot()
    kinds: dict[str, str] = {}
    busy: set = set()
    calls: dict[str, object] = {}
    canary_codes: set = set()
    get_ident, getframe, realpath = _thread.get_ident, sys._getframe, os.path.realpath
    FunctionType, MethodType, CodeType, FrameType = (types.FunctionType, types.MethodType, types.CodeType,
                                                     types.FrameType)

    def write(rec: dict) -> None:
        seq[0] += 1
        body = json.dumps({**rec, "seq": seq[0]}, separators=(",", ":"), default=str).encode()
        line = hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b" " + body + b"\n"
        while line:
            try:
                n = os.write(fd, line)
            except OSError:
                return
            line = line[n:]

    def refuse(what: str) -> None:
        write({"kind": "tamper", "problem": what})
        os._exit(TAMPER_EXIT)

    def kind(filename: str) -> str:
        """``s`` standard library, ``t`` trusted (the environment's packages, sealbench, the
        sealed tests), ``u`` the workspace (and code compiled from a string)."""
        if type(filename) is not str:       # a str subclass would run its own __hash__ in here
            return "u"
        k = kinds.get(filename)
        if k is None:
            if filename.startswith("<frozen ") and filename.endswith(">") and _is_frozen(filename[8:-1]):
                k = "s"
            elif not filename.startswith("/"):
                k = "u"
            else:
                p = realpath(filename)
                if p in sealed:
                    k = "t"         # the sealed tests and the snapshot's own conftest.py files
                elif any(p.startswith(s + "/") for s in stdlib):
                    k = "s"
                elif any(p.startswith(t + "/") for t in trusted):
                    k = "t"
                else:
                    k = "u"
            kinds[filename] = k
        return k

    def fkind(frame) -> str:
        return kind(frame.f_code.co_filename)

    def innermost(frame) -> str | None:
        """The kind of the innermost frame that is not the standard library's (None: none)."""
        while frame is not None:
            k = fkind(frame)
            if k != "s":
                return k
            frame = frame.f_back
        return None

    def culprit(frame) -> str:
        """Where the innermost workspace frame is, for a refusal's reason."""
        while frame is not None and fkind(frame) != "u":
            frame = frame.f_back
        return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}"

    def any_workspace(frame) -> bool:
        while frame is not None:
            if fkind(frame) == "u":
                return True
            frame = frame.f_back
        return False

    def frame_rule(caller, got, what: str) -> None:
        """``got`` (a frame handed out by ``sys._getframe`` or a traceback's, generator's or
        coroutine's getter) is refused only when it is a frame of the hook itself (or of the
        bootstrap) and workspace code is on the stack: those frames hold the record key (a
        closure's free variables are in ``f_locals``). Any other frame is not guarded: its
        ``f_back`` and ``f_locals`` are not audited, so the workspace's own frame already reaches
        every outer one (the sealed test's, the witness's, pytest's); what they hold is judged by
        the records, which only the hook writes, for events the seal's own code raises."""
        if type(got) is FrameType and got.f_code in hook_codes and any_workspace(caller):
            refuse(f"{what}: workspace code reached a frame of the seal's audit hook ({got.f_code.co_name})")

    def changed() -> str | None:
        for k, v in list(snapshot.items()):
            mod = sys.modules.get(k[0])
            if mod is None:
                continue
            holder = vars(mod) if len(k) == 2 else vars(vars(mod).get(k[1], object))
            cur = holder.get(k[-1], _MISSING)
            if cur is not v:
                return ".".join(k)
        return None

    def check_call(rec: dict, fn) -> dict:
        """The function a witness is about to call for a test: code compiled from the sealed file
        and named as the test (directly, or inside decorators that keep ``__wrapped__``), with the
        names its module bound still bound; else refused (or, for a test outside the sealed files,
        recorded as not verified)."""
        nodeid = rec.get("nodeid")
        if type(nodeid) is not str:
            refuse("a test call without a node id")
        name = nodeid.rsplit("::", 1)[-1].split("[", 1)[0]
        chain, f = [], fn
        for _ in range(20):
            if type(f) is MethodType:
                f = f.__func__
            if type(f) is not FunctionType:
                break
            chain.append(f)
            f = dict.get(f.__dict__, "__wrapped__", None)
        path = nodeid.split("::", 1)[0]
        in_sealed = any(sf == path or sf.endswith("/" + path) for sf in sealed)
        in_class = nodeid.count("::") > 1       # a method: it may be inherited from another file

        def own_file(co) -> bool:
            fn_ = co.co_filename
            return in_class or type(fn_) is str and (fn_ == path or realpath(fn_).endswith("/" + path))

        target = next((g for g in chain if (g.__code__ in codes or g.__code__ in canary_codes)
                       and g.__code__.co_name == name and own_file(g.__code__)), None)
        outer = chain[0].__code__ if chain else None
        where_outer = f"{outer.co_filename}:{outer.co_name}" if outer is not None else type(fn).__name__
        if target is None:
            if in_sealed:
                refuse(f"{nodeid} ran code that was not compiled from the sealed test file ({where_outer})")
            return {**rec, "verified": False, "why": f"the test runs {where_outer}"}
        if outer is not None and kind(outer.co_filename) == "u":
            refuse(f"{nodeid} was called through workspace code ({where_outer})")
        co = target.__code__
        where = bindings.get(realpath(co.co_filename)) or {}
        for glob in co.co_names:     # what the test calls by name in its module is still sealed
            spec = where.get(glob)
            if spec is None:
                continue
            g = dict.get(target.__globals__, glob, _MISSING)
            if spec[0] == "def":
                ok = type(g) is FunctionType and g.__code__ in spec[1]
            else:
                mod = sys.modules.get(spec[1])
                ok = mod is not None and g is (mod if spec[2] is None else vars(mod).get(spec[2], _MISSING))
            if not ok:
                refuse(f"{nodeid}: {glob} in its test module is no longer what the sealed file bound to it")
        calls[nodeid] = co
        return {**rec, "verified": True}

    def on_record(caller, args) -> None:
        if caller.f_code not in own or any_workspace(caller):
            refuse("a sealbench record raised from outside the seal (workspace code on the stack)")
        rec = args[0] if args else None
        if type(rec) is not dict:
            refuse("a sealbench record that is not a record")
        k = rec.get("kind")
        if k in ("call", "ran", "finish") and (sys.gettrace() is not None or sys.getprofile() is not None):
            which = sys.gettrace() or sys.getprofile()
            refuse(f"a trace or profile function was set while the tests ran ({_describe(which)})")
        if k == "call":
            what = changed()
            if what:
                refuse(f"{what} was replaced while the tests ran")
            rec = check_call(rec, args[1] if len(args) > 1 else None)
        elif k == "ran":
            if rec.get("nodeid") not in calls and rec.get("verified", True):
                rec = {**rec, "verified": False}
            calls.pop(rec.get("nodeid"), None)
            what = changed()
            if what:
                refuse(f"{what} was replaced while the tests ran")
        elif k == "resnapshot":
            # pytest's own plugins patch pytest's classes before any conftest loads (legacypath):
            # taken as the new reference, unless a replacement is workspace code
            fresh = _snapshot()
            for key_, v in fresh.items():
                if snapshot.get(key_, _MISSING) is not v:
                    where = _origin(v)
                    if where is not None and kind(where) == "u":
                        refuse(f"{'.'.join(key_)} was replaced by workspace code ({where})")
            snapshot.clear()
            snapshot.update(fresh)
            return
        elif k == "canary_code":
            canary_codes.add(args[1])
            return
        elif k == "finish":
            what = changed()
            if what:
                refuse(f"{what} was replaced while the tests ran")
        write(rec)

    def dispatch(event: str, args: tuple) -> None:
        try:
            caller = getframe(2)
        except ValueError:      # raised by the interpreter itself, with no Python code running
            return
        if event == RECORD:
            on_record(caller, args)
        elif event == CANARIES:
            if caller.f_code not in own or any_workspace(caller):
                refuse("the canaries asked for from outside the seal")
            args[0].append({"names": dict(secret["names"]), "message": secret["message"], "seed": secret["seed"],
                            "packages": list(secret.get("packages") or ())})
        elif event == "sys._getframe":
            frame_rule(caller, args[0], event)
        elif event == "object.__getattr__":
            name = args[1]
            if name in _FRAME_ATTRS:
                frame_rule(caller, getattr(args[0], name, None), f"{type(args[0]).__name__}.{name}")
            elif name == "__code__" and type(args[0]) is FunctionType and args[0].__code__ in canary_codes \
                    and innermost(caller) == "u":
                refuse("workspace code read a canary's code")
        elif event in ("object.__setattr__", "object.__delattr__"):
            obj, name = args[0], args[1]
            if name in _FUNC_ATTRS and type(obj) is FunctionType:
                co = obj.__code__
                if co in codes or co in canary_codes:
                    refuse(f"{event} {name} of the sealed test function {co.co_name}")
                if innermost(caller) == "u" and kind(co.co_filename) != "u":
                    refuse(f"{event} {name} of {co.co_filename}:{co.co_name} from workspace code")
        elif event in ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys._current_frames",
                       "sys.settrace", "sys.setprofile", "sys.addaudithook"):
            if innermost(caller) == "u":
                refuse(f"{event} from workspace code")
        elif event == "function.__new__":
            if args[0] in codes or args[0] in own or args[0] in canary_codes:
                if innermost(caller) == "u":
                    refuse("function.__new__ of sealed code from workspace code")
        elif event == "code.__new__":
            if isinstance(args[1], str) and kind(args[1]) != "u" and innermost(caller) == "u":
                refuse(f"code.__new__ named {args[1]} from workspace code")
        elif event == "exec":
            co = args[0]
            if (co in module_codes or co in own) and innermost(caller) == "u":
                refuse(f"exec of the sealed module {co.co_filename} from workspace code ({culprit(caller)})")
            if type(co) is CodeType and co.co_name == "<module>" and co not in module_codes and \
                    caller.f_code not in own and realpath(co.co_filename) in sealed:
                refuse(f"{co.co_filename} is not the sealed file any more (changed on disk while the tests ran)")
        elif event == "compile":
            src, filename = args[0], args[1]
            if isinstance(filename, str) and kind(filename) != "u" and innermost(caller) == "u":
                try:
                    with open(filename, "rb") as fh:
                        real = fh.read()
                except OSError:
                    real = None
                text = src.encode() if isinstance(src, str) else src
                if not isinstance(text, bytes) or real is None or text != real:
                    refuse(f"compile named {filename} (not its content) from workspace code")
        elif event == "import":
            if args[0] in _NATIVE and innermost(caller) == "u":
                refuse(f"import {args[0]} from workspace code")
        elif event == "open":
            p = args[0]
            if isinstance(p, bytes):
                p = p.decode("utf-8", "replace")
            if isinstance(p, str) and p.startswith("/proc/") and p.rstrip("/").endswith("/mem") \
                    and innermost(caller) == "u":
                refuse(f"open {p} from workspace code")
        elif event.startswith("ctypes."):
            if innermost(caller) == "u":
                refuse(f"{event} from workspace code")

    def hook(event: str, args: tuple) -> None:
        if event not in _WATCH and event[:7] != "ctypes.":
            return
        if event == "open":
            p = args[0]
            if not ((type(p) is str and p.startswith("/proc/")) or (type(p) is bytes and p.startswith(b"/proc/"))):
                return
        if event == "object.__getattr__" and args[1] not in _FRAME_ATTRS and args[1] != "__code__":
            return
        if event == "object.__getattr__" and args[1] == "__code__" and not canary_codes:
            return
        me = get_ident()
        if me in busy:
            return
        busy.add(me)
        try:
            dispatch(event, args)
        finally:
            busy.discard(me)

    write({"kind": "start", "pid": os.getpid(), "secret": True, "safe_path": bool(sys.flags.safe_path),
           "sealed_files": len(sealed_files), "sealed_code": len(codes),
           "boot_ms": round((__import__("time").perf_counter() - t0) * 1000, 2), "import_ms": import_ms})
    sys.addaudithook(hook)


_MISSING = object()


def _is_frozen(name: str) -> bool:
    """Whether ``<frozen name>`` names a module frozen into this interpreter (importlib's own two
    are frozen as ``_frozen_importlib`` and ``_frozen_importlib_external``)."""
    import _imp

    alias = {"importlib._bootstrap": "_frozen_importlib",
             "importlib._bootstrap_external": "_frozen_importlib_external"}.get(name, name)
    try:
        return bool(_imp.is_frozen(alias))
    except Exception:  # noqa: BLE001 - a name the import system cannot even look up
        return False


def _describe(fn) -> str:
    """Where a trace or profile function comes from, for a refusal's reason."""
    f = fn.__func__ if isinstance(fn, types.MethodType) else fn
    co = f.__code__ if isinstance(f, types.FunctionType) else None
    return f"{co.co_filename}:{co.co_name}" if co is not None else type(fn).__name__


def _origin(v) -> str | None:
    """The file a callable's code comes from (None: not Python code)."""
    if isinstance(v, property):
        v = v.fget
    elif isinstance(v, (staticmethod, classmethod, types.MethodType)):
        v = v.__func__
    elif isinstance(v, functools.partial):
        v = v.func
    return v.__code__.co_filename if isinstance(v, types.FunctionType) else None


# ----------------------------------------------------------------------------- the plugin

def _record(**rec) -> None:
    sys.audit(RECORD, rec)


def _text(get) -> str:
    try:
        t = get()
    except Exception:  # noqa: BLE001 - the text of a report is for reading only
        return ""
    return t if type(t) is str else ""


class _Seal:
    """The pytest side of the seal: canaries, witnesses and records (see the module docstring).
    Slots: no method can be shadowed on the instance (the class is in the hook's snapshot)."""

    __slots__ = ("on", "names", "message", "rng", "watched", "canary_ids", "sessions")

    def __init__(self) -> None:
        box: list = []
        sys.audit(CANARIES, box)
        self.on = bool(box)
        secret = box[0] if box else {"names": {}, "message": "", "seed": 0, "packages": []}
        self.names = dict(secret["names"])
        self.message = secret["message"]
        self.rng = random.Random(secret["seed"])
        self.watched = [str(n) for n in secret.get("packages") or ()]
        self.canary_ids: dict[str, str] = {}
        self.sessions: list = []

    def send_imports(self, when: str) -> None:
        mods = {}
        for name in self.watched:
            mod = sys.modules.get(name)
            if mod is None:
                continue
            f = getattr(mod, "__file__", None)
            where = [f] if isinstance(f, str) and f else [str(p) for p in (getattr(mod, "__path__", None) or [])]
            mods[name] = [os.path.realpath(p) for p in where] or ["(no file: built in, or made at run time)"]
        _record(kind="imports", when=when, modules=mods)

    def canary_function(self, module, name: str, role: str):
        path = str(getattr(module, "path", "") or "")
        a, b = self.rng.randint(2, 9999), self.rng.randint(2, 9999)
        body = (f"    assert {a} + {b} == {a + b}\n" if role == "pass"
                else f"    raise AssertionError({self.message!r})\n")
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:   # closed: no ResourceWarning
                lines = len(fh.read().splitlines())
        except OSError:
            lines = 0
        src = "\n" * (lines + self.rng.randint(1, 40)) + f"def {name}():\n{body}"
        code = compile(src, path or "<test>", "exec")
        try:
            glb = module.obj.__dict__
        except Exception:  # noqa: BLE001 - a module whose import failed has no namespace
            glb = {"__name__": "test"}
        ns: dict = {}
        exec(code, glb, ns)
        sys.audit(RECORD, {"kind": "canary_code"}, ns[name].__code__)
        return ns[name]

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config) -> None:
        os.environ.pop("PYTEST_ADDOPTS", None)     # read: a test's own pytest runs need none of it
        _record(kind="configured")

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session, config, items) -> None:
        self.send_imports("collected")
        modules = [(i, it.getparent(pytest.Module)) for i, it in enumerate(items)]
        if any(m is not None for _, m in modules):
            for role in ("pass", "fail"):
                # a slot between items that share no class, so no class fixture is torn down
                slots = [i for i in range(len(items) + 1)
                         if i in (0, len(items)) or items[i - 1].parent is not items[i].parent
                         or isinstance(items[i - 1].parent, pytest.Module)]
                pos = self.rng.choice(slots)
                neighbour = items[pos - 1] if pos > 0 else items[0]
                module = neighbour.getparent(pytest.Module) or next(m for _, m in modules if m is not None)
                fn = self.canary_function(module, self.names[role], role)
                item = pytest.Function.from_parent(module, name=self.names[role], callobj=fn)
                self.canary_ids[item.nodeid] = role
                items.insert(pos, item)
        wrapped = []
        for it in items:
            if isinstance(it, pytest.Function) and not _is_unittest(it) and self._wrap(it):
                wrapped.append(it.nodeid)
            elif _is_unittest(it):
                wrapped.append(it.nodeid)
        _record(kind="collected", nodeids=[it.nodeid for it in items if it.nodeid not in self.canary_ids],
                wrapped=wrapped)

    def _wrap(self, it) -> bool:
        fn = getattr(it, "obj", None)
        if not callable(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            return False
        it.obj = _witness(fn, it.nodeid)
        return True

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_call(self, item):
        # a TestCase's method is looked up on its instance, made at set-up: wrapped here
        if _is_unittest(item):
            fn = getattr(item, "obj", None)
            if callable(fn) and not inspect.iscoroutinefunction(fn):
                item.obj = _witness(fn, item.nodeid)
        yield

    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        exc = call.excinfo
        if _is_unittest(item):
            # what ``TestCase.run`` caught (a failure, an error of setUp or tearDown, a skip, an
            # expected failure, an unexpected success) pytest's unittest plugin hands this call,
            # the oldest first, in its own makereport, which runs after this wrapper's first half
            caught = vars(item).get("_excinfo")
            if type(caught) is list and caught:
                exc = caught[0]
        if exc is None:
            raw, text = "passed", ""
        else:
            skip = pytest.skip.Exception
            xfail = pytest.xfail.Exception
            ut_skip = getattr(sys.modules.get("unittest"), "SkipTest", skip)   # pytest makes it a skip
            raw = "skipped" if exc.errisinstance((skip, xfail, ut_skip)) else "failed"
            text = _text(lambda: exc.exconly()[:_TEXT_CAP]) or _text(lambda: repr(exc.value)[:_TEXT_CAP])
        _record(kind="raw", nodeid=str(item.nodeid), when=str(call.when), outcome=raw, text=text)
        yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report) -> None:
        text = _text(lambda: report.longreprtext[-_TEXT_CAP:]) if report.failed else ""
        _record(kind="report", nodeid=str(report.nodeid), when=str(report.when), outcome=str(report.outcome),
                text=text, xfail=hasattr(report, "wasxfail"), subtest=type(report).__name__ != "TestReport")

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report) -> None:
        if report.outcome != "passed":
            _record(kind="collect", nodeid=str(report.nodeid), outcome=str(report.outcome),
                    text=_text(lambda: report.longreprtext[-_TEXT_CAP:]))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session) -> None:
        self.sessions.append(session)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self.send_imports("finish")
        _record(kind="finish", exitstatus=int(session.exitstatus), collected=int(session.testscollected),
                canaries=len(self.canary_ids))

    @pytest.hookimpl(trylast=True)
    def pytest_plugin_registered(self, plugin, plugin_name, manager) -> None:
        _record(kind="plugin", name=str(plugin_name), file=str(getattr(plugin, "__file__", "") or ""))


class _MaxfailGuard:
    """Runs after the session's own bookkeeping: the failing canary is not a test failure."""

    __slots__ = ("seal",)

    def __init__(self, seal: _Seal) -> None:
        self.seal = seal

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report) -> None:
        seal = self.seal
        if report.failed and seal.canary_ids.get(report.nodeid) == "fail" and not hasattr(report, "wasxfail"):
            session = seal.sessions[-1] if seal.sessions else None
            if session is not None and session.testsfailed > 0:
                session.testsfailed -= 1
                maxfail = session.config.getoption("maxfail", 0)
                if session.shouldfail and (not maxfail or session.testsfailed < maxfail):
                    session.shouldfail = False


def _is_unittest(item) -> bool:
    return type(item).__name__ == "TestCaseFunction"


def _witness(fn, nodeid: str):
    """``fn`` called so that the hook sees which function runs for ``nodeid``, and how it ends."""

    @functools.wraps(fn)
    def sealed_test(*args, **kwargs):
        f = fn
        sys.audit(RECORD, {"kind": "call", "nodeid": nodeid}, f)
        try:
            result = f(*args, **kwargs)
        except BaseException as exc:
            sys.audit(RECORD, {"kind": "ran", "nodeid": nodeid, "event": "raised", "type": type(exc).__name__})
            raise
        sys.audit(RECORD, {"kind": "ran", "nodeid": nodeid, "event": "returned"})
        return result

    return sealed_test


def pytest_plugin_registered(plugin, manager) -> None:
    """A conftest loaded before configure may import the tested code: the harness is told, so
    that a stop before configure counts as infra only when no such code can have run."""
    name = str(getattr(plugin, "__name__", "") or "")
    if name == "conftest" or name.endswith(".conftest") or str(getattr(plugin, "__file__", "")).endswith("conftest.py"):
        _record(kind="conftest", file=str(getattr(plugin, "__file__", "")))


@pytest.hookimpl
def pytest_load_initial_conftests(early_config) -> None:
    """After pytest's own early patches (tryfirst) and before any conftest (trylast)."""
    _record(kind="resnapshot")


def pytest_configure(config) -> None:
    seal = _Seal()
    if not seal.on:
        return
    config.pluginmanager.register(seal, "sealbench-seal")
    config.pluginmanager.register(_MaxfailGuard(seal), "sealbench-seal-maxfail")
