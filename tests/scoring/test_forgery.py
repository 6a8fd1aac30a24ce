"""Forged verdicts: code a patch adds runs inside the pytest process (or instead of it) and tries
to turn a failing suite into a pass. Each test is one attack on a task whose bug the patch does
NOT fix, scored as ``hidden_score`` scores it: against the hidden suite the controls decoyed (tests
the gold patch fails, ``decoys.py``) and the gold runs' collection. None may come out ``pass`` nor
``infra_fail``: a forgery that turns failures into passes passes a decoy too (``tamper``, rule
``decoy_passed``); one that does not is a ``fail``. The patch rules (shadowing modules, symlinked
config, binaries) still refuse what they refuse (``tamper``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from decoyed import Decoyed, build, caught, honest, tamper_by_decoy  # noqa: E402
from packgen import FIXED, ORACLE  # noqa: E402

pytestmark = pytest.mark.sandbox


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Decoyed:
    """packgen's task (``add`` computes ``a - b``; hidden ``assert add(3, 4) == 7 and add(-1, 1) == 0``),
    its controls run with two decoys asked for; the repo also ships a ``colorsys.py`` of its own."""
    return build(tmp_path_factory.mktemp("forgery"), repo={"colorsys.py": "X = 1\n"})


# ----------------------------------------------------------------------------- controls

def test_honest_fix_passes_and_fails_every_decoy(task: Decoyed, tmp_path: Path) -> None:
    good = task.score(ORACLE.encode(), tmp_path)
    bad = task.score(b"", tmp_path)
    honest(good, bad)
    assert good.hidden.report["decoys"] == task.made >= 1
    assert good.hidden.report["decoys_failed"] == task.made and good.hidden.report["decoys_passed"] == []
    # the counts are the real tests' (the decoys are not among them)
    assert (good.hidden.junit.tests, good.hidden.junit.failures) == (1, 0), good.hidden.junit
    assert set(good.hidden.report["collected"]) == set(task.controls["oracle_ids"]["hidden"])
    assert bad.hidden.junit.failures == 1 and bad.hidden.report["decoys_failed"] == task.made


# ----------------------------------------------------------------------------- forged reports

#: the test ids pytest was asked to run (its command line's files and folders), as a forger finds them
_TESTS = r'''
import os, re, sys

def _tests():
    out = []
    for arg in sys.argv[1:]:
        paths = [arg] if os.path.isfile(arg) else [os.path.join(r, f) for r, _d, fs in os.walk(arg) for f in sorted(fs)]
        for p in paths:
            if p.endswith(".py") and os.path.basename(p) not in ("conftest.py", "__init__.py"):
                out += [f"{p}::{n}" for n in re.findall(r"^def (test\w*)\(", open(p).read(), re.M)]
    return out
'''

#: a complete report stream of passing tests (exactly the tests pytest collects, decoys among
#: them) written with the report plugin's own writer, then the process ended with 0
FORGE_REPORT = _TESTS + r'''
def _forge():
    rep = sys.modules.get("sealbench_report")
    if rep is None:
        return
    tests = _tests()
    rep._record(kind="collected", nodeids=tests)
    for n in tests:
        for w in ("setup", "call", "teardown"):
            rep._record(kind="report", nodeid=n, when=w, outcome="passed", text="", crash="", exception="",
                        xfail=False, subtest=False)
    rep._record(kind="finish", exitstatus=0, collected=len(tests))
    os._exit(0)

_forge()
'''
#: the name the stream forgery had when the report was a JUnit file
FORGE_JUNIT = FORGE_REPORT


def test_a_forged_report_stream_and_exit_zero(task: Decoyed, tmp_path: Path) -> None:
    res = task.attack(task.prelude(tmp_path, FORGE_REPORT), tmp_path)
    tamper_by_decoy(res)


def test_b_os_exit_zero_without_a_report(task: Decoyed, tmp_path: Path) -> None:
    res = task.attack(task.prelude(tmp_path, "import os\nos._exit(0)\n"), tmp_path)
    caught(res, "fail")
    assert "ended before pytest finished (exit 0)" in res.reason, res.reason


MONKEYPATCH_REPORT = '''
from _pytest.reports import TestReport
_init = TestReport.__init__
def _patched(self, *a, **k):
    _init(self, *a, **k)
    self.outcome = "passed"
    self.longrepr = None
TestReport.__init__ = _patched
'''


def test_c_testreport_outcome_monkeypatched(task: Decoyed, tmp_path: Path) -> None:
    tamper_by_decoy(task.attack(task.prelude(tmp_path, MONKEYPATCH_REPORT), tmp_path))


LIVE_CONFIG_PLUGIN = '''
import gc, sys
import pytest
from _pytest.config import Config
class _Rewrite:
    @pytest.hookimpl(hookwrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item, call):
        out = yield
        rep = out.get_result()
        rep.outcome = "passed"
        rep.longrepr = None
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        report.outcome = "passed"
        report.longrepr = None
for _cfg in [o for o in gc.get_objects() if isinstance(o, Config)]:
    _cfg.pluginmanager.register(_Rewrite(), "rewrite-%d" % id(_cfg))
'''


def test_d_plugin_registered_on_the_live_config(task: Decoyed, tmp_path: Path) -> None:
    tamper_by_decoy(task.attack(task.prelude(tmp_path, LIVE_CONFIG_PLUGIN), tmp_path))


#: at exit, after pytest's own finish record: passed reports of every test, a finish that says 0,
#: and exit 0 — the stream already holds the failures
ATEXIT_REWRITE = _TESTS + r'''
import atexit

def _late():
    rep = sys.modules.get("sealbench_report")
    if rep is not None:
        tests = _tests()
        for n in tests:
            rep._record(kind="report", nodeid=n, when="call", outcome="passed", text="", crash="", exception="",
                        xfail=False, subtest=False)
        rep._record(kind="finish", exitstatus=0, collected=len(tests))
    os._exit(0)

atexit.register(_late)
'''


def test_e_atexit_appends_a_passing_report(task: Decoyed, tmp_path: Path) -> None:
    res = task.attack(task.prelude(tmp_path, ATEXIT_REWRITE), tmp_path)
    caught(res, "fail")
    assert res.hidden.junit.failures == 1, "the failures pytest reported first are what count"


# ----------------------------------------------------------------------------- patch rules

@pytest.mark.parametrize("path,text", [
    ("pytest.py", "import sys\nprint('3 passed in 0.01s')\nsys.exit(0)\n"),
    ("argparse.py", "import os\nos._exit(0)\n"),
    ("pluggy.py", "import os\nos._exit(0)\n"),
    ("_pytest/__init__.py", "import os\nos._exit(0)\n"),
    ("iniconfig/__init__.py", "import os\nos._exit(0)\n"),
    ("sealbench/__init__.py", "import os\nos._exit(0)\n"),
    # found by this file's rewrite (the report plugin's own name was not reserved): refused now
    ("sealbench_report.py", "import os\nos._exit(0)\n"),
])
def test_f_top_level_module_shadowing(task: Decoyed, tmp_path: Path, path: str, text: str) -> None:
    def change(wd: Path) -> None:
        (wd / path).parent.mkdir(parents=True, exist_ok=True)
        (wd / path).write_text(text)

    res = task.attack(task.patch(tmp_path, change), tmp_path)
    caught(res, "tamper")
    assert path in res.tamper_paths and "shadows" in res.reason, res


def test_f_an_existing_module_may_be_modified(task: Decoyed, tmp_path: Path) -> None:
    """A repo that itself ships a module named like a stdlib one may still change it."""
    res = task.score(task.patch(tmp_path, lambda wd: (wd / "colorsys.py").write_text("X = 2\n")) + ORACLE.encode(),
                     tmp_path)
    assert res.status == "pass", res.reason


FORCE_PASS_PLUGIN = ("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                     "def pytest_runtest_makereport(item, call):\n    out = yield\n"
                     "    rep = out.get_result()\n    rep.outcome = 'passed'\n    rep.longrepr = None\n")


@pytest.mark.parametrize("name,section", [("setup.cfg", "[tool:pytest]\naddopts = -p forcepass\n"),
                                          ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-p forcepass'\n")])
def test_g_symlinked_config_file(task: Decoyed, tmp_path: Path, name: str, section: str) -> None:
    def change(wd: Path) -> None:
        (wd / "forcepass.py").write_text(FORCE_PASS_PLUGIN)
        (wd / "settings.txt").write_text(section)
        (wd / name).symlink_to("settings.txt")

    res = task.attack(task.patch(tmp_path, change), tmp_path)
    caught(res, "tamper")
    assert name in res.tamper_paths and "symlink" in res.reason, res


EXT_C = "#include <unistd.h>\nvoid *PyInit_calc(void) { _exit(0); return 0; }\n"


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a C compiler")
@pytest.mark.parametrize("soname", ["calc.cpython-311-x86_64-linux-gnu.so", "calc.abi3.so"])
def test_h_compiled_extension_beside_the_module(task: Decoyed, tmp_path: Path, soname: str) -> None:
    src = tmp_path / "ext.c"
    src.write_text(EXT_C)
    so = tmp_path / "ext.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    patch = task.patch(tmp_path, lambda wd: shutil.copyfile(so, wd / soname))
    res = task.attack(patch, tmp_path)
    caught(res, "tamper")
    assert soname in res.tamper_paths and "extension" in res.reason, res
    # even a task that allows binary files refuses compiled extensions
    res = task.attack(patch, tmp_path, meta=dict(task.meta, allow_binary=True))
    assert res.status == "tamper" and soname in res.tamper_paths, res


def test_h_binary_files_need_the_task_to_allow_them(task: Decoyed, tmp_path: Path) -> None:
    patch = task.patch(tmp_path, lambda wd: (wd / "data.bin").write_bytes(bytes(range(256))))
    assert b"GIT binary patch" in patch
    res = task.score(patch + ORACLE.encode(), tmp_path)
    assert res.status == "tamper" and "data.bin" in res.tamper_paths and "binary" in res.reason, res
    res = task.score(patch + ORACLE.encode(), tmp_path, meta=dict(task.meta, allow_binary=True))
    assert res.status == "pass", res.reason


def test_h_bytecode_is_refused(task: Decoyed, tmp_path: Path) -> None:
    patch = task.patch(tmp_path, lambda wd: ((wd / "__pycache__").mkdir(),
                                             (wd / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0" * 40)))
    res = task.attack(patch, tmp_path, meta=dict(task.meta, allow_binary=True))
    caught(res, "tamper")
    assert "__pycache__/calc.cpython-311.pyc" in res.tamper_paths, res


# ----------------------------------------------------------------------------- abstention

@pytest.mark.parametrize("code", [5, 4, 3])
def test_i_patch_making_pytest_exit_with_an_infra_code_is_not_infra(task: Decoyed, tmp_path: Path, code: int) -> None:
    """``pytest.exit`` at import, with an exit code that would read as the harness's: the runner
    started, so the patch broke it. (Today ``tamper``: the module fails to collect, so the
    collection is not the gold runs'; see :func:`test_i_an_honest_patch_that_breaks_the_import_fails`.)"""
    res = task.attack(task.prelude(tmp_path, f"import pytest\npytest.exit('nothing here', returncode={code})\n"),
                      tmp_path)
    caught(res)
    assert res.hidden.runner_started is True, res


@pytest.mark.parametrize("source", ["def add(a, b)\n    return a + b\n", "import no_such_helper\n" + FIXED,
                                    "def add(a, b):\n    return a + b\n\nadd(1)\n"],
                         ids=["syntax-error", "missing-import", "error-at-import"])
def test_i_an_honest_patch_that_breaks_the_import_fails(task: Decoyed, tmp_path: Path, source: str) -> None:
    """Not an attack: a wrong patch whose module does not import is a ``fail``, as plain pytest says
    (found by this file's rewrite: the collection was compared first, so it was tamper)."""
    res = task.attack(task.calc(tmp_path, source), tmp_path)
    assert res.status == "fail", (res.status, res.reason)


def test_i_a_runner_that_never_starts_is_infra(task: Decoyed, tmp_path: Path) -> None:
    """Not an attack: a task whose command cannot start (the harness's or the pack's fault)."""
    res = task.attack(ORACLE.encode(), tmp_path, meta=dict(task.meta, hidden_command="no-such-interpreter -m pytest x"))
    assert res.status == "infra_fail" and res.hidden.runner_started is False, res


def test_i_a_plain_command_cannot_pass(task: Decoyed, tmp_path: Path) -> None:
    """Without pytest there is no report: exit 0 alone is never a pass."""
    res = task.attack(ORACLE.encode(), tmp_path, meta=dict(task.meta, hidden_command="python -c 'import calc'"))
    assert res.status == "fail" and "not a pytest run" in res.reason, res


# ----------------------------------------------------------------------------- the visible run

REWRITE_HIDDEN = '''
import os, sys
if "pytest" in sys.modules and os.path.isdir("hidden_tests"):
    for name in os.listdir("hidden_tests"):
        if name.endswith(".py"):
            try:
                with open(os.path.join("hidden_tests", name), "w") as fh:
                    fh.write("def test_hidden():\\n    pass\\n")
            except OSError:
                pass
'''


def test_j_code_under_test_cannot_rewrite_the_hidden_tests(task: Decoyed, tmp_path: Path) -> None:
    """Code imported by the visible run finds no hidden tests (not there yet) and leaves nothing
    for the hidden run (a fresh workspace); in the hidden run the tests are read-only (bwrap)."""
    res = task.score(task.prelude(tmp_path, REWRITE_HIDDEN), tmp_path)
    caught(res, "fail" if task.sandbox() is not None else None)
    assert res.hidden.junit.failures == 1, res.reason


def test_j_a_visible_only_check_sees_no_hidden_test(task: Decoyed, tmp_path: Path) -> None:
    """The sealed time-to-green check runs the visible command only: the hidden tests are not in
    its workspace (the agent's code must not be able to read them)."""
    spy = ("import os, sys\nif 'pytest' in sys.modules:\n"
           "    assert not os.path.exists('hidden_tests'), 'hidden tests are readable'\n")
    res = task.score(task.prelude(tmp_path, spy, FIXED), tmp_path, commands=("visible",))
    assert res.status == "pass", res.reason


# ----------------------------------------------------------------------------- more in-process routes

#: a plugin that answers pytest_pyfunc_call for every test (nothing runs, nothing fails)
SKIP_REAL_TESTS = '''
import gc, pytest
from _pytest.config import Config
class _Skip:
    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        return True
for _c in [o for o in gc.get_objects() if isinstance(o, Config)]:
    if not _c.pluginmanager.has_plugin("skip-real"):
        _c.pluginmanager.register(_Skip(), "skip-real")
'''


@pytest.mark.parametrize("route", ["gc", "module-global"])
def test_k_pyfunc_call_answered_without_running_the_tests(task: Decoyed, tmp_path: Path, route: str) -> None:
    src = SKIP_REAL_TESTS if route == "gc" else SKIP_REAL_TESTS.replace(
        "[o for o in gc.get_objects() if isinstance(o, Config)]",
        "[__import__('_pytest.debugging').debugging.pytestPDB._config]")
    tamper_by_decoy(task.attack(task.prelude(tmp_path, src), tmp_path))


#: the report plugin's writer (its module is in sys.modules) wrapped: every failure written as a pass
FLIP_PLUGIN_WRITER = '''
import sys
_p = sys.modules.get("sealbench_report")
if _p is not None and not hasattr(_p, "_flipped"):
    _p._flipped = _w = _p._record
    def _rec(**r):
        if r.get("outcome") == "failed":
            r.update(outcome="passed", text="", crash="", exception="")
        if r.get("kind") == "finish":
            r["exitstatus"] = 0
        _w(**r)
    _p._record = _rec
    import atexit, os
    atexit.register(os._exit, 0)
'''


def test_l_the_report_plugin_s_writer_flips_failures(task: Decoyed, tmp_path: Path) -> None:
    tamper_by_decoy(task.attack(task.prelude(tmp_path, FLIP_PLUGIN_WRITER), tmp_path))


#: the same writer, which also drops the ``collected`` record: the stream then names no collection,
#: and the decoys' ids are read from the stream's own collection (``sealed_command._run_check``)
DROP_COLLECTED = FLIP_PLUGIN_WRITER.replace(
    '        if r.get("kind") == "finish":', '        if r.get("kind") == "collected":\n            return\n'
    '        if r.get("kind") == "finish":')


def test_l_the_writer_drops_the_collection_record_too(task: Decoyed, tmp_path: Path) -> None:
    assert "collected" in DROP_COLLECTED
    res = task.attack(task.prelude(tmp_path, DROP_COLLECTED), tmp_path)
    caught(res, "tamper")


#: bytes written into every fd the process has (the report pipe among them): passing reports and a
#: finish, before pytest's own records
WRITE_TO_EVERY_FD = _TESTS + r'''
import json
_lines = b"".join(json.dumps(r).encode() + b"\n" for r in
                  [{"kind": "report", "nodeid": n, "when": "call", "outcome": "passed", "text": "", "crash": "",
                    "xfail": False, "subtest": False} for n in _tests()]
                  + [{"kind": "finish", "exitstatus": 0, "collected": 0}])
for _fd in range(3, 64):
    try:
        os.write(_fd, _lines)
    except OSError:
        pass
'''


def test_m_records_written_into_the_stream_do_not_hide_the_failures(task: Decoyed, tmp_path: Path) -> None:
    res = task.attack(task.prelude(tmp_path, WRITE_TO_EVERY_FD), tmp_path)
    caught(res, "fail")
    assert res.hidden.junit.failures == 1 and res.hidden.report["decoys_passed"] == [], res.reason


#: A forger that reads the decoyed suite: tests whose code is the same but for one constant are a
#: real test and its decoys; a decoy's name is its twin's words shuffled, one swapped, or one word
#: more — so the member with the fewest words, when it is alone, is taken for the real test and
#: only it is given an empty body
SHORTEST_NAME_IS_REAL = _TESTS + r'''
import ast, inspect, textwrap
import _pytest.debugging
from pluggy._hooks import HookImpl

def _shape(fn):
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    tree.name = "_"
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant):
            n.value = None
    return ast.dump(tree)

def _finish(session):
    groups = {}
    for it in session.items:
        try:
            groups.setdefault((str(it.path), _shape(it.obj)), []).append(it)
        except (OSError, TypeError, SyntaxError):
            pass
    for items in groups.values():
        if len(items) < 2:
            continue
        least = min(len(it.name.split("_")) for it in items)
        best = [it for it in items if len(it.name.split("_")) == least]
        if len(best) == 1:
            best[0].obj = lambda *a, **k: None

class _P:
    pass

_pytest.debugging.pytestPDB._config.hook.pytest_collection_finish._add_hookimpl(HookImpl(_P(), "p", _finish, dict(
    wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)))
'''


def test_n_a_forger_that_takes_the_shortest_name_of_a_near_duplicate_group_for_the_real_test(
        task: Decoyed, tmp_path: Path) -> None:
    """Was a finding (an ``xfail``): decoys.decoy_name reorders the twin's words, swaps one or
    inserts one, so a twin that kept its pack name was never longer than its decoys, and here the
    shortest name of the group was the real test. The twin is renamed the same way now (one edit
    from its pack name, as each decoy is): the shortest name is no longer the real test's."""
    caught(task.attack(task.prelude(tmp_path, SHORTEST_NAME_IS_REAL), tmp_path), "tamper")
