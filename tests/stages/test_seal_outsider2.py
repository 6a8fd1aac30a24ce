"""Second outsider round against the seal (pytest_seal.py, sealed_report.judge_stream, scoring.py).

Every test scores a patch that does NOT fix ``calc.add`` (it still computes ``a - b``) and asserts
the harness neither passes it nor takes it out of the denominator (``infra_fail``, or an exception
out of ``score_patch``, which ``hidden_score.main`` records as ``infra_fail``).

Two sections: HOLES (each FAILED on the main it was written against, 62ddc9b: the attack scored
``pass`` or ``infra_fail``; each is closed now and the test stays as its regression test, except
``test_hole_pytest_approx_replaced_only_while_the_test_runs``, which remains possible:
docs/sealed-runs.md "What remains possible") and CAUGHT (stopped on 62ddc9b already).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from test_forgery import git_patch, score, task  # noqa: E402

from packgen import BUGGY, ORACLE  # noqa: E402
from sealbench.isolation import sandbox as sb  # noqa: E402

pytestmark = pytest.mark.sandbox


def not_pass_nor_infra(res) -> None:
    assert res.status not in ("pass", "infra_fail"), (res.status, res.reason)


def gold_ids(t: Path, m: dict, tmp_path: Path, **kw) -> dict:
    """The test ids the gold patch's runs collect (what the controls hand the scorer)."""
    gold = score(t, m, ORACLE.encode(), tmp_path, **kw)
    assert gold.status == "pass", gold.reason
    return {"visible": gold.visible.report["collected"], "hidden": gold.hidden.report["collected"]}


def bwrap(tmp_path: Path):
    return sb.make_sandbox("bwrap", hide=[tmp_path / "tasks"])


def run(tmp_path: Path, calc_source: str, *, sandboxed: bool = False, ids: bool = True, timeout_s: float = 60,
        **meta):
    """Score a patch that replaces calc.py with ``calc_source`` (which must keep a - b), with the
    gold runs' test ids as the controls would give them; ``sandboxed``: in bubblewrap;
    ``timeout_s``: each scoring command's clock (a patch that hangs its run ends there)."""
    t, m = task(tmp_path, **meta)
    kw = {"sandbox": bwrap(tmp_path)} if sandboxed else {}
    if ids:
        kw["expected_ids"] = gold_ids(t, m, tmp_path, **kw)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(calc_source))
    return score(t, m, patch, tmp_path, timeout_s, **kw)


def run_with_tests(tmp_path: Path, calc_source: str, visible: str, hidden: str, *, sandboxed: bool = False,
                   more_hidden: dict | None = None, **meta):
    """``run`` on a task whose test files are ``visible``/``hidden`` (each imports ``add``), and
    ``more_hidden`` (file name -> text) in hidden_tests/."""
    t, m = task(tmp_path, **meta)
    imp = "import sys, os\nsys.path.insert(0, os.getcwd())\nimport pytest\nfrom calc import add\n\n"
    (t / "visible_tests" / "test_visible.py").write_text(imp + visible)
    (t / "hidden_tests" / "test_hidden.py").write_text(imp + hidden)
    for name, text in (more_hidden or {}).items():
        (t / "hidden_tests" / name).write_text(imp + text)
    kw = {"sandbox": bwrap(tmp_path)} if sandboxed else {}
    kw["expected_ids"] = gold_ids(t, m, tmp_path, **kw)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(calc_source))
    return score(t, m, patch, tmp_path, **kw)


SANDBOX = pytest.mark.skipif(bool(sb.bwrap_problem()), reason="needs bubblewrap")
BOTH = pytest.mark.parametrize("sandboxed", [False, pytest.param(True, marks=SANDBOX)], ids=["bare", "bwrap"])


# =============================================================================== HOLES
# (each of these FAILS on the main it was written against, 62ddc9b: "pass", or an exception out of
# score_patch that hidden_score.main records as infra_fail)

#: The plugin decides which items get a witness through ``self._wrap(it)``: an attribute looked up
#: on the plugin INSTANCE at call time. The instance is reachable (pytestPDB._config ->
#: pluginmanager.get_plugin("sealbench-seal")) and instance attributes are in no snapshot. The
#: replacement says "not wrapped" for every item and gives each real test an empty function:
#: nothing is witnessed, nothing is checked, and judge_stream only asks a "ran returned" of the
#: tests listed as wrapped. The collected ids are the gold runs' (expected_ids given).
WRAP_REPLACED = r'''
import _pytest.debugging

def add(a, b):
    return a - b

def _noop(*a, **k):
    return None

_seal = _pytest.debugging.pytestPDB._config.pluginmanager.get_plugin("sealbench-seal")

def _wrap(it):
    if it.nodeid not in _seal.canary_ids:
        it.obj = _noop
    return False

_seal._wrap = _wrap
'''


@BOTH
def test_hole_seal_wrap_replaced_on_the_plugin_instance(tmp_path: Path, sandboxed: bool) -> None:
    res = run(tmp_path, WRAP_REPLACED, sandboxed=sandboxed)
    not_pass_nor_infra(res)


#: After the seal's trylast modifyitems has written the "collected" record (the gold ids) and
#: wrapped the items, a hook implementation added to ``pytest_collection_finish`` (hook caller,
#: not register: no plugin record) swaps every real item for a twin under another id (``test_a_``)
#: calling an empty function. The real ids never report (nothing asks that every collected id
#: ran), the twins are not in "collected" nor "wrapped" (nothing asks that a reported id was
#: collected), and they count as passed: 3 >= failing_tests.
TWIN_ITEMS = r'''
import pytest
import _pytest.debugging
from pluggy._hooks import HookImpl

def add(a, b):
    return a - b

def _noop():
    return None

def _finish(session):
    canaries = session.config.pluginmanager.get_plugin("sealbench-seal").canary_ids
    session.items[:] = [it if it.nodeid in canaries else
                        pytest.Function.from_parent(it.parent, name=it.name + "_", callobj=_noop)
                        for it in session.items]

class _P:
    pass

_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_pytest.debugging.pytestPDB._config.hook.pytest_collection_finish._add_hookimpl(HookImpl(_P(), "p", _finish, _opts))
'''


@BOTH
def test_hole_twin_items_added_after_the_collected_record(tmp_path: Path, sandboxed: bool) -> None:
    res = run(tmp_path, TWIN_ITEMS, sandboxed=sandboxed)
    not_pass_nor_infra(res)


#: The seal's audit hook ignores every event a thread raises while the hook itself runs for that
#: thread (``busy``, its re-entrancy guard). The hook runs workspace code: for a ``compile`` event
#: it looks the file name up in its ``kinds`` cache (``kinds.get(filename)``), and a file name that
#: is a ``str`` subclass has its own ``__hash__``. Inside that ``__hash__`` nothing is audited:
#: ``sys.settrace``, ``gc.get_objects`` (the record key is one gc walk away in the hook's
#: closure: a full forgery), ``sys._getframe(n)``, ``import ctypes``. Here: the round-1 tracer
#: that flips the rewritten assert's result local, installed and removed inside such windows (so
#: no trace function is set when the seal's call/ran records are written).
REENTRANT_WINDOW = r'''
import sys

class _Window(str):
    def __hash__(self):
        _Window.job()
        return str.__hash__(self)
    __eq__ = str.__eq__

def _inside(job):
    _Window.job = staticmethod(job)
    compile("0", _Window("calc-window"), "eval")

def _local(frame, event, arg):
    if event == "opcode":
        for k, v in list(frame.f_locals.items()):
            if k.startswith("@py_assert") and v is False:
                frame.f_locals[k] = True
    elif event == "return":
        _inside(lambda: sys.settrace(None))
    return _local

def _global(frame, event, arg):
    return None

def add(a, b):
    test = sys._getframe(0).f_back          # own frame (allowed), then f_back (not audited)
    test.f_trace = _local
    test.f_trace_opcodes = True
    _inside(lambda: sys.settrace(_global))
    return a - b
'''


@BOTH
def test_hole_audit_hook_reentrancy_window_through_a_str_subclass_file_name(tmp_path: Path, sandboxed: bool) -> None:
    res = run(tmp_path, REENTRANT_WINDOW, sandboxed=sandboxed)
    not_pass_nor_infra(res)


#: The report folder (``scratch/reports``) is writable in BOTH commands and shared between them.
#: The visible run's tested code (the path: ``config.option.xmlpath`` through pytestPDB._config)
#: makes ``hidden.junit.xml`` a folder; before the hidden command, ``_run_check`` does
#: ``junit_path.unlink(missing_ok=True)`` -> IsADirectoryError out of score_patch, which
#: ``hidden_score.main`` records as ``infra_fail`` ("the harness could not score the attempt").
JUNIT_DIR_PLANTED = r'''
import os
import _pytest.debugging

def add(a, b):
    return a - b

_x = getattr(_pytest.debugging.pytestPDB._config.option, "xmlpath", None)
if _x and os.path.basename(_x) == "visible.junit.xml":
    os.makedirs(os.path.join(os.path.dirname(_x), "hidden.junit.xml", "x"), exist_ok=True)
'''


@BOTH
def test_hole_visible_run_makes_the_hidden_junit_path_a_folder(tmp_path: Path, sandboxed: bool) -> None:
    res = run(tmp_path, JUNIT_DIR_PLANTED, sandboxed=sandboxed)
    not_pass_nor_infra(res)


#: The code under test sets its module's ``__file__`` to a path through a symlink loop it made
#: in the report folder (the same path inside and outside the sandbox). The seal's realpath (non
#: strict) passes it through; the harness's ``import_outside`` calls ``Path(p).resolve()``, which
#: on Python 3.11 raises RuntimeError("Symlink loop") -> out of score_patch -> infra_fail.
LOOP_FILE = r'''
import os
import _pytest.debugging

def add(a, b):
    return a - b

_d = os.path.dirname(os.path.abspath(_pytest.debugging.pytestPDB._config.option.xmlpath))
try:
    os.symlink("loop", os.path.join(_d, "loop"))
except FileExistsError:
    pass
__file__ = os.path.join(_d, "loop", "calc.py")
'''


@BOTH
def test_hole_package_file_through_a_symlink_loop_crashes_the_harness(tmp_path: Path, sandboxed: bool) -> None:
    res = run(tmp_path, LOOP_FILE, sandboxed=sandboxed)
    not_pass_nor_infra(res)


def test_hole_harness_crash_is_infra_fail_in_the_pipeline(tmp_path: Path) -> None:
    """The same crash through ``hidden_score.main`` (what the pipeline runs): the attempt's record
    is ``infra_fail`` ("the harness could not score the attempt"), out of the denominator."""
    import json

    from sealbench.core import core
    from sealbench.stages import hash_pack, hidden_score

    t, _m = task(tmp_path)
    sealed = tmp_path / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, tmp_path / "results" / "sealed.json")
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(LOOP_FILE))
    rd = tmp_path / "run"
    rd.mkdir()
    core.write_json(rd / "run.json", {
        "task_id": "ft", "solver": "a", "fingerprint": "0" * 16, "epoch": 1, "role": "agent", "exit_code": 0,
        "end_reason": "exit", "timed_out": False, "time_box_s": 60.0, "wall_s": 1.0, "attempts": [],
        "patch_bytes": len(patch), "stamp": {}, "usage": {}})
    (rd / "patch.diff").write_bytes(patch)
    out = tmp_path / "score.json"
    hidden_score.main(["--sealed", str(sealed), "--run-dir", str(rd), "--out", str(out), "--timeout", "60",
                       "--sandbox", "off"])
    rec = json.loads(out.read_text())
    assert rec["status"] not in ("pass", "infra_fail"), (rec["status"], rec["reason"])


#: The snapshot of pytest's callables is compared at each test's END. ``add`` (called first in
#: ``add(x) == pytest.approx(y)``) replaces ``pytest.approx`` with a function that puts the real
#: one back and returns an object equal to anything: by the "ran" record, nothing is replaced.
#: (Not the known "value that lies": add returns a real float; the lie comes out of pytest.approx.)
APPROX_TRANSIENT = r'''
import pytest

_real = pytest.approx

class _Any:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

def _fake(*a, **k):
    pytest.approx = _real
    return _Any()

def add(a, b):
    pytest.approx = _fake
    return a - b
'''
APPROX_VISIBLE = ("def test_two():\n    assert add(2.0, 2.0) == pytest.approx(4.0)\n\n"
                  "def test_zero():\n    assert add(0.5, 0.0) == pytest.approx(0.5)\n")
APPROX_HIDDEN = ("def test_a():\n    assert add(0.5, 0.25) == pytest.approx(0.75)\n\n"
                 "def test_b():\n    assert add(1.5, 1.5) == pytest.approx(3.0)\n\n"
                 "def test_c():\n    assert add(2.0, 0.5) == pytest.approx(2.5)\n")


@pytest.mark.xfail(strict=True, reason="remains possible: a callable replaced and put back within one test "
                   "is not seen by a snapshot taken at the test's edges (docs/sealed-runs.md)")
def test_hole_pytest_approx_replaced_only_while_the_test_runs(tmp_path: Path) -> None:
    res = run_with_tests(tmp_path, APPROX_TRANSIENT, APPROX_VISIBLE, APPROX_HIDDEN)
    not_pass_nor_infra(res)


#: Builtins are in no snapshot: ``builtins.all`` rebound to answer True for generators made in
#: the test files. (A wider case of the documented "helper of another module rebound": every
#: suite calls builtins -- len, all, sorted, isinstance -- and no test module binds them.)
BUILTIN_ALL = r'''
import builtins

_all = builtins.all

def _lying_all(it):
    code = getattr(it, "gi_code", None)
    if code is not None and code.co_filename.endswith(("test_hidden.py", "test_visible.py")):
        return True
    return _all(it)

builtins.all = _lying_all

def add(a, b):
    return a - b
'''
ALL_VISIBLE = "def test_two():\n    assert all(add(a, b) == a + b for a, b in [(2, 2), (1, 1)])\n"
ALL_HIDDEN = ("CASES = [(3, 4), (-1, 1), (10, 5)]\n\n"
              "def test_a():\n    assert all(add(a, b) == a + b for a, b in CASES)\n\n"
              "def test_b():\n    assert all(add(b, a) == a + b for a, b in CASES)\n\n"
              "def test_c():\n    assert all(add(a, a) == 2 * a for a, _ in CASES)\n")


def test_hole_builtin_all_rebound(tmp_path: Path) -> None:
    res = run_with_tests(tmp_path, BUILTIN_ALL, ALL_VISIBLE, ALL_HIDDEN)
    not_pass_nor_infra(res)


#: check_call accepts any sealed code NAMED like the test: the file is never compared with the
#: node id's. Suites reuse names across files (test_empty, test_basic...). Two hidden files each
#: have a ``test_a``; the one of test_other.py passes with a - b. After collection, the witness cell
#: of ``test_hidden.py::test_a`` gets test_other.py's ``test_a``: sealed code, named as the test,
#: its own module's names intact -- accepted, and it returns.
SAME_NAME_VISIBLE = "def test_two():\n    assert add(0, 0) == 0\n"
SAME_NAME_HIDDEN = "def test_a():\n    assert add(3, 4) == 7\n"
SAME_NAME_OTHER = "def test_a():\n    assert add(0, 0) == 0\n"
SAME_NAME_SWAP = r'''
import _pytest.debugging
from pluggy._hooks import HookImpl

def add(a, b):
    return a - b

def _cell(it):
    return next(c for c in it.obj.__closure__ if getattr(c.cell_contents, "__name__", "") == it.name)

def _finish(session):
    by_name = {}
    for it in session.items:
        if "test_other.py" in it.nodeid:
            by_name[it.name] = _cell(it).cell_contents
    for it in session.items:
        if "test_hidden.py" in it.nodeid and it.name in by_name:
            _cell(it).cell_contents = by_name[it.name]

class _P:
    pass

_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_pytest.debugging.pytestPDB._config.hook.pytest_collection_finish._add_hookimpl(HookImpl(_P(), "p", _finish, _opts))
'''


def test_hole_same_named_test_of_another_sealed_file(tmp_path: Path) -> None:
    res = run_with_tests(tmp_path, SAME_NAME_SWAP, SAME_NAME_VISIBLE, SAME_NAME_HIDDEN,
                         more_hidden={"test_other.py": SAME_NAME_OTHER}, failing_tests=2)
    not_pass_nor_infra(res)


#: The visible command is judged with ``expected`` 0 (score_patch; ``visible.sealed_green`` runs it
#: alone). The canaries are moved first (after the collected record), then the first real test
#: raises KeyboardInterrupt: pytest re-raises it from the call (no makereport: no raw, no report),
#: the session ends "interrupted" (exit 2, finish exitstatus 2). The stream then holds the canaries,
#: one setup "passed", no failure, exit == exitstatus: the visible run is PASS with no test passed,
#: i.e. a forged sealed green (time_to_green, stop_on_green).
INTERRUPT_AFTER_CANARIES = r'''
import _pytest.debugging
from pluggy._hooks import HookImpl

def add(a, b):
    raise KeyboardInterrupt

def _finish(session):
    canaries = session.config.pluginmanager.get_plugin("sealbench-seal").canary_ids
    session.items.sort(key=lambda it: it.nodeid not in canaries)

class _P:
    pass

_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_pytest.debugging.pytestPDB._config.hook.pytest_collection_finish._add_hookimpl(HookImpl(_P(), "p", _finish, _opts))
'''


def test_hole_visible_green_from_an_interrupted_session(tmp_path: Path) -> None:
    t, m = task(tmp_path)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(INTERRUPT_AFTER_CANARIES))
    res = score(t, m, patch, tmp_path, commands=("visible",))       # what visible.sealed_green runs
    not_pass_nor_infra(res)


# =============================================================================== CAUGHT
# (each of these passes on 62ddc9b: the attack came out fail or tamper)

_HOOK = r'''
import _pytest.debugging
from pluggy._hooks import HookImpl
class _P:
    pass
def _add(name, fn, **kw):
    opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
    opts.update(kw)
    getattr(_pytest.debugging.pytestPDB._config.hook, name)._add_hookimpl(HookImpl(_P(), "p", fn, opts))
_seal = _pytest.debugging.pytestPDB._config.pluginmanager.get_plugin("sealbench-seal")
'''

CAUGHT = {
    # the plugin module's globals (not in the snapshot) replaced: the witness gives an empty
    # function -- the items are still listed as wrapped, and no "ran returned" comes
    "module-witness-replaced": (_HOOK + BUGGY + "import sys\n"
                                "sys.modules['sealbench.scoring.pytest_seal']._witness = lambda fn, nodeid: (lambda *a, **k: None)\n",
                                "tamper"),
    # every record the plugin's methods send dropped (no collected, no report, no finish)
    "module-record-dropped": (_HOOK + BUGGY + "import sys\nsys.modules['sealbench.scoring.pytest_seal']._record = lambda **r: None\n",
                              None),
    # the canaries renamed on the plugin instance: the judge looks for the secret's names (the real
    # failures explain the missing canaries: fail)
    "canary-names-replaced": (_HOOK + BUGGY + "_seal.names = {'pass': 'test_p', 'fail': 'test_q'}\n", "tamper"),
    # the failing canary's message replaced on the instance
    "canary-message-replaced": (_HOOK + BUGGY + "_seal.message = 'nothing'\n", "tamper"),
    # inspect.iscoroutinefunction (stdlib, not snapshotted) says yes: unwrapped, but pytest skips
    # them, the canaries included
    "iscoroutinefunction-true": ("import inspect\ninspect.iscoroutinefunction = lambda f: True\n" + BUGGY, "tamper"),
    # an exception whose __str__ raises KeyboardInterrupt inside the seal's record building
    # (_text catches Exception only): the hidden run still needs 3 passed tests
    "str-raises-interrupt-in-record": ("class _E(Exception):\n    def __str__(self):\n        raise KeyboardInterrupt\n"
                                       "    __repr__ = __str__\n"
                                       "def add(a, b):\n    raise _E()\n", None),
    # the recursion limit lowered so that the hook's own dispatch overflows on the next record
    "recursion-limit-in-hook": ("import sys\ndef add(a, b):\n    sys.setrecursionlimit(60)\n    return a - b\n", None),
    # a pytest11 entry point in a dist-info folder the patch adds (the workspace is on sys.path):
    # PYTEST_DISABLE_PLUGIN_AUTOLOAD keeps pytest from loading it
    "dist-info-entry-point": (None, "fail"),
    # the real items moved behind a KeyboardInterrupt after the canaries: the full scoring needs
    # failing_tests passed tests in the hidden run
    "interrupt-full-scoring": (INTERRUPT_AFTER_CANARIES, "fail"),
}


def _entry_point_patch(wd: Path) -> None:
    d = wd / "calc_helper-1.0.dist-info"
    d.mkdir()
    (d / "METADATA").write_text("Metadata-Version: 2.1\nName: calc-helper\nVersion: 1.0\n")
    (d / "entry_points.txt").write_text("[pytest11]\ncalc_helper = calc_plugin\n")
    (wd / "calc_plugin.py").write_text("import os\nos._exit(4)\n")


@pytest.mark.parametrize("what", sorted(CAUGHT))
def test_caught(tmp_path: Path, what: str) -> None:
    src, want = CAUGHT[what]
    if src is None:
        t, m = task(tmp_path)
        res = score(t, m, git_patch(t / "repo", tmp_path, _entry_point_patch), tmp_path)
    else:
        res = run(tmp_path, src)
    not_pass_nor_infra(res)
    if want:
        assert res.status == want, (res.status, res.reason)


#: sandboxed: processes the tested code starts
SANDBOXED = {
    # a child reads the pytest process's memory / environment (non-dumpable: refused by the kernel)
    # and writes unsigned records through /proc/<pid>/fd/* into every pipe it can open
    "child-proc-of-pytest": r'''
import os, subprocess, sys
_CHILD = """
import os, sys
pid = int(sys.argv[1])
for what in ("mem", "environ", "maps"):
    try:
        open(f"/proc/{pid}/{what}", "rb").read(64)
        print("READ", what, flush=True)
    except OSError as e:
        print("DENIED", what, e.errno, flush=True)
try:
    fds = os.listdir(f"/proc/{pid}/fd")
except OSError:
    fds = []
for fd in fds:
    try:
        with open(f"/proc/{pid}/fd/{fd}", "wb") as fh:
            fh.write(b'{"kind":"finish","exitstatus":0}\\n')
    except OSError:
        pass
"""
subprocess.run([sys.executable, "-c", _CHILD, str(os.getpid())], timeout=20)
def add(a, b):
    return a - b
''',
    # the visible run leaves a double-forked daemon that rewrites the hidden tests of the next
    # workspace (same path in copy mode) as soon as they appear
    "daemon-between-commands": r'''
import os, time
if os.path.isdir("visible_tests") and not os.path.isdir("hidden_tests") and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        here = os.getcwd()
        for _ in range(600):
            p = os.path.join(here, "hidden_tests", "test_hidden.py")
            try:
                with open(p, "w") as fh:
                    fh.write("def test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef test_c():\n    pass\n")
            except OSError:
                pass
            time.sleep(0.05)
    os._exit(0)
def add(a, b):
    return a - b
''',
    # the tested code turns the JUnit path of its own run into a FIFO and a link to /dev/zero,
    # and fills the report folder
    "report-folder-fifo": r'''
import os
import _pytest.debugging
_x = os.path.abspath(_pytest.debugging.pytestPDB._config.option.xmlpath)
_d = os.path.dirname(_x)
for n in ("visible.junit.xml", "hidden.junit.xml"):
    try:
        os.unlink(os.path.join(_d, n))
    except OSError:
        pass
os.mkfifo(_x)
os.symlink("/dev/zero", os.path.join(_d, "hidden.junit.xml" if "visible" in _x else "visible.junit.xml"))
for i in range(200):
    open(os.path.join(_d, f"f{i}.xml"), "w").write("<x/>")
def add(a, b):
    return a - b
''',
}


@SANDBOX
@pytest.mark.parametrize("what", sorted(SANDBOXED))
def test_caught_sandboxed(tmp_path: Path, what: str) -> None:
    # the FIFO hangs pytest's report writing until the scoring clock: a short clock ends it sooner
    res = run(tmp_path, SANDBOXED[what], sandboxed=True, timeout_s=20 if "fifo" in what else 60)
    not_pass_nor_infra(res)
