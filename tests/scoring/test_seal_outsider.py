"""An outsider's attacks on the redesigned seal (bootstrap + audit hook + plugin, pytest_seal.py).

Every test scores a patch that does NOT fix ``calc.add`` (it still computes ``a - b``) and asserts
that the harness neither passes it nor takes it out of the denominator (``infra_fail``).

Two sections: HOLES (each FAILED on the main it was written against, 5ba2ba7: the attack scored
``pass`` or ``infra_fail``; each is closed now, and the test stays as its regression test — except
``test_hole_always_equal_result``, which remains possible, see
docs/sealed-runs.md "What remains possible") and CAUGHT (stopped on 5ba2ba7 already).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_forgery import git_patch, score, task  # noqa: E402

from packgen import BUGGY  # noqa: E402

pytestmark = pytest.mark.sandbox


def not_pass_nor_infra(res) -> None:
    assert res.status not in ("pass", "infra_fail"), (res.status, res.reason)


def run(tmp_path: Path, calc_source: str, **meta):
    """Score a patch that replaces calc.py with ``calc_source`` (which must keep a - b)."""
    t, m = task(tmp_path, **meta)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(calc_source))
    return score(t, m, patch, tmp_path)


# =============================================================================== HOLES
# (each of these FAILS on main 5ba2ba7: the attack got "pass" or "infra_fail")

#: code compiled under a file name that starts with "<frozen " is classed as the standard library
#: by the hook (kind() -> "s"), and compile() only checks names that start with "/". Frozen-named
#: code called from a test is then neither "workspace code" (no refusal) nor on the stack as such.
#: From inside add it installs a trace function (sys.settrace allowed: innermost non-stdlib frame
#: is the sealed test) and flips the rewritten assert's result local in the test's frame.
FROZEN_TRACER = r'''
_SRC = """
import sys
def _tracer(frame, event, arg):
    return None

def _local(frame, event, arg):
    if event == "opcode":
        for k, v in list(frame.f_locals.items()):
            if k.startswith("@py_assert") and v is False:
                frame.f_locals[k] = True
    return _local

def add(a, b):
    f = sys._getframe(1)
    f.f_trace = _local
    f.f_trace_opcodes = True
    if sys.gettrace() is None:
        sys.settrace(_tracer)
    return a - b
"""
exec(compile(_SRC, "<frozen calc>", "exec"), globals())
'''


def test_hole_frozen_filename_tracer_flips_assert(tmp_path: Path) -> None:
    res = run(tmp_path, FROZEN_TRACER)
    not_pass_nor_infra(res)


#: pytest imports a test module with ``importlib.import_module(name)`` and then takes
#: ``sys.modules[name]``: the code under test, imported by that module, puts another module there.
#: Its test functions are a standard-library function that takes no argument and returns None
#: (``importlib.invalidate_caches``). The witness calls it; the hook sees a function that is not
#: sealed code but not workspace code either and records ``verified: False`` -- which
#: ``judge_stream`` never reads.
SWAP_TEST_MODULE = r'''
import importlib, os, re, sys, types

def add(a, b):
    return a - b

def _swap():
    for name, mod in list(sys.modules.items()):
        f = getattr(mod, "__file__", None) or ""
        if not os.path.basename(f).startswith("test_") or "_fake" in vars(mod):
            continue
        fake = types.ModuleType(name)
        fake.__file__ = f
        fake._fake = True
        fake.add = add
        for t in re.findall(r"^def (test\w*)\(", open(f).read(), re.M):
            setattr(fake, t, importlib.invalidate_caches)
        sys.modules[name] = fake

_swap()
'''


def test_hole_test_module_swapped_in_sys_modules(tmp_path: Path) -> None:
    res = run(tmp_path, SWAP_TEST_MODULE)
    not_pass_nor_infra(res)


#: A builtin bound with ``types.MethodType`` is a routine pluggy accepts as a hook
#: implementation (its one positional parameter is taken for ``self``, so pluggy passes nothing).
#: pluggy then calls ``sys.settrace(tracer)`` itself: the hook's caller frame is pluggy's (trusted),
#: no workspace frame is on the stack, so the hook allows it. The tracer (workspace code) is then
#: handed every frame by the interpreter -- no audited getter involved -- and flips the rewritten
#: assert's result local in the sealed test's frame (3.11 writes f_locals back after a trace call).
#: The live config is a module global of pytest's (``pytestPDB._config``); the hook implementation
#: is added to the hook caller directly (``pluginmanager.register`` would fire the seal's own
#: ``pytest_plugin_registered`` record with this module on the stack, which is refused).
BOUND_BUILTIN_SETTRACE = r'''
import sys, types
import _pytest.debugging

def add(a, b):
    return a - b

def _local(frame, event, arg):
    if event == "opcode":
        for k, v in list(frame.f_locals.items()):
            if k.startswith("@py_assert") and v is False:
                frame.f_locals[k] = True
    return _local

def _global(frame, event, arg):
    if event == "call" and any(n.startswith("@py_assert") for n in frame.f_code.co_varnames):
        frame.f_trace_opcodes = True
        return _local
    return None

from pluggy._hooks import HookImpl

class _Plugin:
    pass

# not pluginmanager.register: that fires the seal's pytest_plugin_registered (a record raised
# with this module on the stack: refused). The hook implementation is added to the caller.
_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_cfg = _pytest.debugging.pytestPDB._config
_cfg.hook.pytest_runtest_setup._add_hookimpl(
    HookImpl(_Plugin(), "calc-helper", types.MethodType(sys.settrace, _global), _opts))
'''


def test_hole_builtin_bound_as_hookimpl_installs_tracer(tmp_path: Path) -> None:
    res = run(tmp_path, BOUND_BUILTIN_SETTRACE)
    not_pass_nor_infra(res)


#: the same as BOUND_BUILTIN_SETTRACE without touching pytest at all: ``sys.settrace`` bound with
#: ``types.MethodType`` is the ``__del__`` of an object left in a reference cycle. The cyclic
#: garbage collector runs it later from whatever frame allocates at that moment (the rest of the
#: test module's import, pytest's collection): the audit hook's caller is that frame, not this
#: module, so the trace function is allowed in.
GC_FINALIZER_SETTRACE = r'''
import sys, types

def add(a, b):
    return a - b

def _local(frame, event, arg):
    if event == "opcode":
        for k, v in list(frame.f_locals.items()):
            if k.startswith("@py_assert") and v is False:
                frame.f_locals[k] = True
    return _local

def _global(frame, event, arg):
    if gc.get_threshold()[0] == 1:
        gc.set_threshold(700, 10, 10)
    if event == "call" and any(n.startswith("@py_assert") for n in frame.f_code.co_varnames):
        frame.f_trace_opcodes = True
        return _local
    return None

class _Later:
    __del__ = types.MethodType(sys.settrace, _global)

import gc
gc.set_threshold(1, 1, 1)      # collected at the next allocation after this module returns
_x = _Later()
_x.me = _x
del _x
'''


def test_hole_gc_finalizer_installs_tracer(tmp_path: Path) -> None:
    res = run(tmp_path, GC_FINALIZER_SETTRACE)
    not_pass_nor_infra(res)


#: the same trick as FROZEN_TRACER with a file instead of a made-up name: any file named
#: ``conftest.py`` under the workspace root is classed "trusted" (a patch can never add one), but
#: the code under test can WRITE one at run time (the workspace is writable in the sandbox) and
#: import it: its functions are trusted frames (innermost() -> "t"), so sys.settrace from them is
#: allowed, and the compile() check passes because the content is the file's.
RUNTIME_CONFTEST = r"""
import importlib.util, os
_SRC = '''
import sys
def _tracer(frame, event, arg):
    return None

def _local(frame, event, arg):
    if event == "opcode":
        for k, v in list(frame.f_locals.items()):
            if k.startswith("@py_assert") and v is False:
                frame.f_locals[k] = True
    return _local

def add(a, b):
    f = sys._getframe(1)
    f.f_trace = _local
    f.f_trace_opcodes = True
    if sys.gettrace() is None:
        sys.settrace(_tracer)
    return a - b
'''
_d = os.path.join(os.getcwd(), ".calc_cache")
os.makedirs(_d, exist_ok=True)
_p = os.path.join(_d, "conftest.py")
with open(_p, "w") as _fh:
    _fh.write(_SRC)
_spec = importlib.util.spec_from_file_location("_calc_impl", _p)
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)
add = _mod.add
"""


def test_hole_runtime_written_conftest_is_trusted(tmp_path: Path) -> None:
    res = run(tmp_path, RUNTIME_CONFTEST)
    not_pass_nor_infra(res)


# ---- infra_fail at score_patch level. hidden_score._scoring_infra turns a scoring infra_fail into
# ``fail`` when the task's controls ran without one, so in the pipeline these stay in the
# denominator (unless a control of the task was itself infra_fail); score_patch, the sealed check
# of a green visible run and anything else calling it directly still see infra_fail.

def _with_file(tmp_path: Path, name: str, text: str):
    """Score a patch that leaves calc.py buggy and adds ``name`` (at the repo root) with ``text``."""
    t, m = task(tmp_path)

    def change(wd: Path) -> None:
        (wd / name).write_text(text)

    return score(t, m, git_patch(t / "repo", tmp_path, change), tmp_path)


def test_hole_malformed_setup_cfg_is_infra(tmp_path: Path) -> None:
    """A setup.cfg with no pytest section that iniconfig cannot parse: pytest stops with a usage
    error (exit 4) while locating its config, before the seal's ``configured`` record, so the stream
    reads "pytest stopped before it was configured" and the run is ``infra_fail``. tamper_rules
    only looks for a [tool:pytest] section in setup.cfg, never whether it parses."""
    res = _with_file(tmp_path, "setup.cfg", "  indented line before any section\n[metadata]\nname = calc\n")
    not_pass_nor_infra(res)


def test_hole_pyproject_tool_not_a_table_is_infra(tmp_path: Path) -> None:
    """``tool = 1`` in pyproject.toml: valid TOML (the post-apply check parses it and finds no
    pytest table because ``tool`` is not a dict), but pytest's ``config.get("tool", {}).get(...)``
    raises AttributeError before the seal's ``configured`` record: exit 1, ``infra_fail``."""
    res = _with_file(tmp_path, "pyproject.toml", 'tool = 1\n[project]\nname = "calc"\n')
    not_pass_nor_infra(res)


def test_hole_pyproject_not_utf8_is_infra(tmp_path: Path) -> None:
    """A pyproject.toml with a byte that is not UTF-8: the post-apply check decodes it with
    ``errors="replace"`` and it parses, pytest reads it strictly (UnicodeDecodeError while locating
    its config, exit 1, before ``configured``): ``infra_fail``."""
    t, m = task(tmp_path)

    def change(wd: Path) -> None:
        (wd / "pyproject.toml").write_bytes(b'# caf\xe9\n[project]\nname = "calc"\n')

    res = score(t, m, git_patch(t / "repo", tmp_path, change), tmp_path)
    not_pass_nor_infra(res)


#: the witness's closure cell ``fn`` (reached through a module global of pytest's, no gc, no frame;
#: a hook implementation added to the hook caller, not registered, runs after collection) gets a
#: standard-library function: check_call records ``verified: False``, the judge ignores it. The
#: canaries are told apart with the seal plugin's own ``canary_ids`` (a public attribute).
CELL_TO_STDLIB = r'''
import importlib
import _pytest.debugging
from pluggy._hooks import HookImpl

def add(a, b):
    return a - b

def _swap(session):
    canaries = session.config.pluginmanager.get_plugin("sealbench-seal").canary_ids   # readable
    for it in session.items:
        if it.nodeid in canaries:
            continue
        for c in getattr(it.obj, "__closure__", None) or ():
            if callable(c.cell_contents) and getattr(c.cell_contents, "__name__", "") == it.name:
                c.cell_contents = importlib.invalidate_caches

class _P:
    pass

_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_pytest.debugging.pytestPDB._config.hook.pytest_collection_finish._add_hookimpl(HookImpl(_P(), "p", _swap, _opts))
'''


def test_hole_witness_cell_swapped_for_stdlib_function(tmp_path: Path) -> None:
    res = run(tmp_path, CELL_TO_STDLIB)
    not_pass_nor_infra(res)


#: add still computes a - b, but its result claims to equal anything (the hidden tests compare
#: with ``==`` only). Not a seal problem: the tests cannot tell.
ALWAYS_EQUAL = r'''
class _Total(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

def add(a, b):
    return _Total(a - b)
'''


@pytest.mark.xfail(strict=True, reason="remains possible: a value whose __eq__ lies is what the tests compare; "
                   "the seal judges what ran, not what the tests can tell (docs/sealed-runs.md)")
def test_hole_always_equal_result(tmp_path: Path) -> None:
    res = run(tmp_path, ALWAYS_EQUAL)
    not_pass_nor_infra(res)


# =============================================================================== CAUGHT
# (each of these passes on main 5ba2ba7: the attack came out fail or tamper)

_HOOK = r'''
import _pytest.debugging
from pluggy._hooks import HookImpl
class _P:
    pass
def _add(name, fn, **kw):
    opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
    opts.update(kw)
    getattr(_pytest.debugging.pytestPDB._config.hook, name)._add_hookimpl(HookImpl(_P(), "p", fn, opts))
'''

CAUGHT = {
    # an exception that claims to be a skip: skipped tests are not passed ones
    "skip-from-add": ("import pytest\ndef add(a, b):\n    pytest.skip('not here')\n", "fail"),
    "unittest-skip-from-add": ("import unittest\ndef add(a, b):\n    raise unittest.SkipTest('no')\n", "fail"),
    "sys-exit-0-in-add": ("import sys\ndef add(a, b):\n    sys.exit(0)\n", "fail"),
    "os-exit-0-in-add": ("import os\ndef add(a, b):\n    os._exit(0)\n", "tamper"),
    "sigkill-in-add": ("import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n", "fail"),
    "keyboard-interrupt": ("def add(a, b):\n    raise KeyboardInterrupt\n", None),
    "pytest-exit-0": ("import pytest\ndef add(a, b):\n    pytest.exit('done', returncode=0)\n", None),
    # the process replaced by another program: exit 0 without a finish is tamper, exit 4 is fail
    "execv-exit-0": ("import os, sys\ndef add(a, b):\n    os.execv(sys.executable, [sys.executable, '-c', 'pass'])\n",
                     "tamper"),
    "execv-exit-4": ("import os, sys\ndef add(a, b):\n"
                     "    os.execv(sys.executable, [sys.executable, '-c', 'import sys; sys.exit(4)'])\n", "fail"),
    "execv-exit-127": ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import sys; sys.exit(127)'])\n",
                       "fail"),
    # the stream's fd closed / pointed elsewhere at import: no finish record, exit 1
    "close-fds": ("import os\nos.closerange(3, 64)\n" + BUGGY, "fail"),
    "dup2-devnull": ("import os\n_n = os.open(os.devnull, os.O_WRONLY)\n"
                     "for _fd in range(3, 64):\n    if _fd != _n:\n        try:\n            os.dup2(_n, _fd)\n"
                     "        except OSError:\n            pass\n" + BUGGY, "fail"),
    "fork-parent-exits-0": ("import os\nif os.fork():\n    os.wait()\n    os._exit(0)\n" + BUGGY, None),
    "thread-exits-0-at-end": ("import atexit, os, threading\n"
                              "threading.Thread(target=lambda: (threading.main_thread().join(), os._exit(0)),"
                              " daemon=True).start()\natexit.register(lambda: os._exit(0))\n" + BUGGY, None),
    "collection-error": ("raise ImportError('no')\n", "fail"),
    "shouldstop": ("import _pytest.debugging\ndef add(a, b):\n"
                   "    _pytest.debugging.pytestPDB._config.pluginmanager.get_plugin('session').shouldstop = 'x'\n"
                   "    return a - b\n", None),
    # compile under a trusted file's name with other content; exec the sealed module's own code
    "compile-trusted-name": ("import os\nexec(compile('def add(a, b):\\n    return a - b\\n', os.__file__, 'exec'))\n",
                             "tamper"),
    "exec-sealed-module": ("import glob, os\nfor _f in glob.glob(os.path.join(os.getcwd(), '*_tests', 'test_*.py')):\n"
                           "    exec(compile(open(_f, 'rb').read(), _f, 'exec', dont_inherit=True), {'__name__': 'x'})\n"
                           + BUGGY, "tamper"),
    # pytest objects reached without gc or an outer frame's getter (a module global; f_back from
    # the module's own frame): outcome rewritten in hooks added to the hook callers
    "excinfo-cleared": (_HOOK + BUGGY + '''
def _wrap(item, call):
    if call.when == "call" and item.nodeid not in item.config.pluginmanager.get_plugin("sealbench-seal").canary_ids:
        call.excinfo = None
    yield
_add("pytest_runtest_makereport", _wrap, hookwrapper=True, tryfirst=True)
''', "tamper"),
    "item-obj-replaced-after-wrap": (_HOOK + BUGGY + '''
import importlib
def _setup(item):
    if item.nodeid not in item.config.pluginmanager.get_plugin("sealbench-seal").canary_ids:
        item.obj = importlib.invalidate_caches
_add("pytest_runtest_setup", _setup)
''', "tamper"),
    "xfail-marker": (_HOOK + BUGGY + '''
import pytest
def _setup(item):
    item.add_marker(pytest.mark.xfail(reason="x"))
_add("pytest_runtest_setup", _setup)
''', "tamper"),
    "report-rewritten-in-logreport": (_HOOK + BUGGY + '''
def _log(report):
    report.outcome = "passed"
    report.longrepr = None
_add("pytest_runtest_logreport", _log, tryfirst=True)
''', None),
    "f-back-walk-testsfailed": (BUGGY + '''
import sys
def _walk():
    f = sys._getframe(0)
    while f is not None:
        s = f.f_locals.get("session")
        if s is not None and hasattr(s, "testsfailed"):
            return s
        f = f.f_back
_s = _walk()
_orig = add
def add(a, b):
    _s.testsfailed = 0
    _s.shouldfail = False
    return _orig(a, b)
''', "fail"),
}


@pytest.mark.parametrize("what", sorted(CAUGHT))
def test_caught(tmp_path: Path, what: str) -> None:
    src, want = CAUGHT[what]
    res = run(tmp_path, src)
    not_pass_nor_infra(res)
    if want:
        assert res.status == want, (res.status, res.reason)


def test_caught_poisoned_pytest_cache(tmp_path: Path) -> None:
    """For a task whose command keeps pytest's cache plugin (most real ones): a patch adds
    ``.pytest_cache/v/cache/nodeids`` holding ``[1]``. The cache plugin's ``pytest_configure`` is
    tryfirst, so it runs before the seal's module-level configure that registers the plugin and
    writes ``configured``; ``NFPlugin.__init__`` calls ``NodeId.parse(1)`` and pytest crashes:
    no ``configured`` record, ``infra_fail``. ``.pytest_cache/`` is no protected path -- but the
    scoring workspace is copied without build artefacts (``workspace.ARTEFACT_NAMES``), so the
    poisoned cache never reaches pytest: caught (``fail``)."""
    cmd = "python -m pytest -q"
    t, m = task(tmp_path, visible_command=f"{cmd} visible_tests", hidden_command=f"{cmd} hidden_tests")

    def change(wd: Path) -> None:
        d = wd / ".pytest_cache" / "v" / "cache"
        d.mkdir(parents=True)
        (d / "nodeids").write_text("[1]\n")
        (d / "lastfailed").write_text("{}\n")

    res = score(t, m, git_patch(t / "repo", tmp_path, change), tmp_path)
    not_pass_nor_infra(res)
