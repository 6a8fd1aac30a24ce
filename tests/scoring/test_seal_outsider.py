"""An outsider's attacks: every test scores a patch that does NOT fix ``calc.add`` (it still
computes ``a - b``) against the task's decoyed hidden suite, and asserts the harness neither passes
it nor takes it out of the denominator (``infra_fail``): ``tamper`` where the attack turned
failures into passes (a decoy passed too), else ``fail``.

HOLES were attacks that once scored ``pass`` or ``infra_fail`` against the old seal (an audit hook
judging mechanisms); each stays as a regression test against decoys. CAUGHT were stopped already.

The task: three hidden tests in two files (``test_a_first.py``: ``test_a``; ``test_b_later.py``:
``test_b``, ``test_c``), two visible ones.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from decoyed import Decoyed, build, caught, tamper_by_decoy  # noqa: E402
from packgen import BUGGY, PT_VISIBLE, PYTEST  # noqa: E402

pytestmark = pytest.mark.sandbox

IMP = "from calc import add\n\n\n"
HIDDEN = {"test_a_first.py": IMP + "def test_a():\n    assert add(3, 4) == 7\n",
          "test_b_later.py": IMP + "def test_b():\n    assert add(-1, 1) == 0\n\n\ndef test_c():\n"
                                   "    assert add(10, 5) == 15\n"}


@pytest.fixture(scope="module")
def task(tmp_path_factory) -> Decoyed:
    return build(tmp_path_factory.mktemp("outsider"), "os", hidden=HIDDEN,
                 visible={"test_visible.py": IMP + PT_VISIBLE},
                 visible_command=f"{PYTEST} visible_tests", hidden_command=f"{PYTEST} hidden_tests", failing_tests=3)


def run(task: Decoyed, tmp_path: Path, calc_source: str, **kw):
    """Score (the hidden command) a patch that replaces calc.py with ``calc_source``."""
    return task.attack(task.calc(tmp_path, calc_source), tmp_path, **kw)


# =============================================================================== HOLES

#: a tracer that makes every false assertion result the rewritten assert keeps in a local true,
#: installed from code compiled under a made-up ``<frozen …>`` name (the old seal took it for the
#: standard library)
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

#: pytest imports a test module with ``importlib.import_module(name)``, then takes
#: ``sys.modules[name]``: the code under test, imported by that module, puts another module there,
#: whose test functions are a standard-library function that takes no argument
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

#: the assert-flipping tracer installed by pluggy itself: ``sys.settrace`` bound with
#: ``types.MethodType`` is a hook implementation of ``pytest_runtest_setup``
BOUND_BUILTIN_SETTRACE = r'''
import sys, types
import _pytest.debugging
from pluggy._hooks import HookImpl

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

class _Plugin:
    pass

_opts = dict(wrapper=False, hookwrapper=False, optionalhook=False, tryfirst=False, trylast=False, specname=None)
_cfg = _pytest.debugging.pytestPDB._config
_cfg.hook.pytest_runtest_setup._add_hookimpl(
    HookImpl(_Plugin(), "calc-helper", types.MethodType(sys.settrace, _global), _opts))
'''

#: the same tracer installed by the cyclic garbage collector: ``sys.settrace`` bound as the
#: ``__del__`` of an object left in a reference cycle
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
gc.set_threshold(1, 1, 1)
_x = _Later()
_x.me = _x
del _x
'''

#: the tracer from a ``conftest.py`` the code under test writes at run time and imports
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

#: after collection (a hook implementation added to the hook caller, no plugin registered) every
#: item calls a standard-library function that takes no argument instead of its test
ITEMS_CALL_STDLIB = _HOOK + BUGGY + '''
import importlib
def _swap(session):
    for it in session.items:
        it.obj = importlib.invalidate_caches
_add("pytest_collection_finish", _swap)
'''

#: add still computes a - b, but its result claims to equal anything
ALWAYS_EQUAL = r'''
class _Total(int):
    def __eq__(self, other):
        return True
    __hash__ = int.__hash__

def add(a, b):
    return _Total(a - b)
'''

HOLES = {"frozen-filename-tracer": FROZEN_TRACER, "test-module-swapped": SWAP_TEST_MODULE,
         "builtin-bound-as-hookimpl": BOUND_BUILTIN_SETTRACE, "gc-finalizer-tracer": GC_FINALIZER_SETTRACE,
         "runtime-written-conftest": RUNTIME_CONFTEST, "items-call-stdlib": ITEMS_CALL_STDLIB,
         "always-equal": ALWAYS_EQUAL}


@pytest.mark.parametrize("what", sorted(HOLES))
def test_hole_turned_failures_pass_a_decoy(task: Decoyed, tmp_path: Path, what: str) -> None:
    tamper_by_decoy(run(task, tmp_path, HOLES[what]))


def _unreadable_config(task: Decoyed, tmp_path: Path, name: str, data: bytes):
    """A config file pytest cannot read stops it before the report plugin is configured: that
    would read as the harness's failure (``infra_fail``); the patch rules refuse it (``tamper``)."""
    return task.attack(task.patch(tmp_path, lambda wd: (wd / name).write_bytes(data)), tmp_path)


def test_hole_malformed_setup_cfg_is_tamper(task: Decoyed, tmp_path: Path) -> None:
    """No pytest section, not INI: pytest stops with a usage error while locating its config."""
    res = _unreadable_config(task, tmp_path, "setup.cfg", b"  indented line before any section\n[metadata]\nname = calc\n")
    caught(res, "tamper")


@pytest.mark.parametrize("data", [b'tool = 1\n[project]\nname = "calc"\n', b'# caf\xe9\n[project]\nname = "calc"\n'],
                         ids=["tool-not-a-table", "not-utf8"])
def test_hole_malformed_pyproject_is_tamper(task: Decoyed, tmp_path: Path, data: bytes) -> None:
    """Valid TOML whose ``tool`` is not a table (pytest raises reading it), or not UTF-8 (pytest
    reads it strictly)."""
    caught(_unreadable_config(task, tmp_path, "pyproject.toml", data), "tamper")


@pytest.mark.skipif(not __import__("decoyed").bwrap_available(), reason="needs bubblewrap")
def test_hole_test_modules_collected_later_cannot_be_rewritten(task: Decoyed, tmp_path: Path) -> None:
    """The first hidden module imports the code under test, which rewrites the modules pytest
    collects after it: the sealed test folders are read-only inside the sandbox."""
    src = '''
import os, sys
if "pytest" in sys.modules:
    for d in ("visible_tests", "hidden_tests"):
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
            if name.startswith("test_") and name != "test_a_first.py":
                try:
                    with open(os.path.join(d, name), "w") as fh:
                        fh.write("def test_b():\\n    pass\\n\\ndef test_c():\\n    pass\\n")
                except OSError:
                    pass
''' + "def add(a, b):\n    return 7 if (a, b) == (3, 4) else a - b\n"
    res = run(task, tmp_path, src)
    caught(res, "fail")
    assert res.hidden.junit.failures == 2, res.reason


# =============================================================================== CAUGHT

CAUGHT = {
    # an exception that claims to be a skip: skipped tests are not passed ones
    "skip-from-add": ("import pytest\ndef add(a, b):\n    pytest.skip('not here')\n", "fail"),
    "unittest-skip-from-add": ("import unittest\ndef add(a, b):\n    raise unittest.SkipTest('no')\n", "fail"),
    "sys-exit-0-in-add": ("import sys\ndef add(a, b):\n    sys.exit(0)\n", "fail"),
    "os-exit-0-in-add": ("import os\ndef add(a, b):\n    os._exit(0)\n", "fail"),
    "sigkill-in-add": ("import os, signal\ndef add(a, b):\n    os.kill(os.getpid(), signal.SIGKILL)\n", "fail"),
    "keyboard-interrupt": ("def add(a, b):\n    raise KeyboardInterrupt\n", "fail"),
    "pytest-exit-0": ("import pytest\ndef add(a, b):\n    pytest.exit('done', returncode=0)\n", "fail"),
    # the process replaced by another program
    "execv-exit-0": ("import os, sys\ndef add(a, b):\n    os.execv(sys.executable, [sys.executable, '-c', 'pass'])\n",
                     "fail"),
    "execv-exit-4": ("import os, sys\ndef add(a, b):\n"
                     "    os.execv(sys.executable, [sys.executable, '-c', 'import sys; sys.exit(4)'])\n", "fail"),
    "execv-exit-127": ("import os, sys\nos.execv(sys.executable, [sys.executable, '-c', 'import sys; sys.exit(127)'])\n",
                       "fail"),
    # the stream's fd closed / pointed elsewhere at import: no finish record
    "close-fds": ("import os\nos.closerange(3, 64)\n" + BUGGY, "fail"),
    "dup2-devnull": ("import os\n_n = os.open(os.devnull, os.O_WRONLY)\n"
                     "for _fd in range(3, 64):\n    if _fd != _n:\n        try:\n            os.dup2(_n, _fd)\n"
                     "        except OSError:\n            pass\n" + BUGGY, "fail"),
    "fork-parent-exits-0": ("import os\nif os.fork():\n    os.wait()\n    os._exit(0)\n" + BUGGY, "fail"),
    "thread-exits-0-at-end": ("import atexit, os, threading\n"
                              "threading.Thread(target=lambda: (threading.main_thread().join(), os._exit(0)),"
                              " daemon=True).start()\natexit.register(lambda: os._exit(0))\n" + BUGGY, "fail"),
    # the module does not import: today tamper (the collection is not the gold runs': see
    # test_forgery.test_i_an_honest_patch_that_breaks_the_import_fails)
    "collection-error": ("raise ImportError('no')\n", None),
    "shouldstop": ("import _pytest.debugging\ndef add(a, b):\n"
                   "    _pytest.debugging.pytestPDB._config.pluginmanager.get_plugin('session').shouldstop = 'x'\n"
                   "    return a - b\n", "fail"),
    # compiled under a standard-library file's name; the sealed test modules' code run again
    "compile-trusted-name": ("import os\nexec(compile('def add(a, b):\\n    return a - b\\n', os.__file__, 'exec'))\n",
                             "fail"),
    "exec-sealed-module": (BUGGY + "import glob, os\nfor _f in glob.glob(os.path.join(os.getcwd(), '*_tests', 'test_*.py')):\n"
                           "    exec(compile(open(_f, 'rb').read(), _f, 'exec', dont_inherit=True), {'__name__': 'x'})\n",
                           "fail"),
    # pytest objects reached through a module global of pytest's: outcomes rewritten in hooks added
    # to the hook callers
    "excinfo-cleared": (_HOOK + BUGGY + '''
def _wrap(item, call):
    if call.when == "call":
        call.excinfo = None
    yield
_add("pytest_runtest_makereport", _wrap, hookwrapper=True, tryfirst=True)
''', "tamper"),
    "item-obj-replaced-at-setup": (_HOOK + BUGGY + '''
import importlib
def _setup(item):
    item.obj = importlib.invalidate_caches
_add("pytest_runtest_setup", _setup)
''', "tamper"),
    # every test marked xfail: failures become expected ones, so does every decoy's
    "xfail-marker": (_HOOK + BUGGY + '''
import pytest
def _setup(item):
    item.add_marker(pytest.mark.xfail(reason="x"))
_add("pytest_runtest_setup", _setup)
''', "fail"),
    "report-rewritten-in-logreport": (_HOOK + BUGGY + '''
def _log(report):
    report.outcome = "passed"
    report.longrepr = None
_add("pytest_runtest_logreport", _log, tryfirst=True)
''', "tamper"),
}


@pytest.mark.parametrize("what", sorted(CAUGHT))
def test_caught(task: Decoyed, tmp_path: Path, what: str) -> None:
    src, want = CAUGHT[what]
    res = run(task, tmp_path, src)
    caught(res, want)
    if want == "tamper":
        tamper_by_decoy(res)


def test_caught_poisoned_pytest_cache(task: Decoyed, tmp_path: Path) -> None:
    """For a task whose command keeps pytest's cache plugin: a patch adds
    ``.pytest_cache/v/cache/nodeids`` holding ``[1]`` (the cache plugin would crash before the
    report plugin is configured). The scoring workspace is copied without build artefacts, so the
    poisoned cache never reaches pytest."""
    cmd = "python -m pytest -q"
    meta = dict(task.meta, visible_command=f"{cmd} visible_tests", hidden_command=f"{cmd} hidden_tests")

    def change(wd: Path) -> None:
        d = wd / ".pytest_cache" / "v" / "cache"
        d.mkdir(parents=True)
        (d / "nodeids").write_text("[1]\n")
        (d / "lastfailed").write_text("{}\n")

    caught(task.attack(task.patch(tmp_path, change), tmp_path, meta=meta), "fail")
