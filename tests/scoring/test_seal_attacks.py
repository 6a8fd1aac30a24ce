"""The seal judged from outside the reach of the patch (issue 25): attacks that scored ``pass``
before the seal's bootstrap and audit hook, and honest suites beside them that must keep their
verdict.

Every attack is a patch that does NOT fix ``calc.add`` (``a - b``); none may come out ``pass``
(nor ``infra_fail``, which would take the run out of the denominator). On the main this file was
written against (1378ad6) the attacks marked so scored ``pass`` (docs/sealed-runs.md, threat model).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_forgery import calc_patch, git_patch, not_pass, score, task  # noqa: E402

from packgen import BUGGY, FIXED, ORACLE  # noqa: E402

pytestmark = pytest.mark.sandbox



# ----------------------------------------------------------------------------- code before pytest

#: a standard-library name pytest's start-up imports (``from __future__ import annotations`` in
#: every module of pytest): with the workspace first on sys.path it ran before the seal read its
#: secret, and wrote a complete stream of invented passing tests (signed, if the secret has a key)
FORGE_BEFORE_PYTEST = r'''
import hashlib, hmac, json, os
all_feature_names = []
def _go():
    spec = os.environ.get("SEALBENCH_SEAL")
    if not spec:
        return
    rfd, wfd = (int(x) for x in spec.split(":"))
    data = b""
    while True:
        b = os.read(rfd, 65536)
        if not b:
            break
        data += b
    s = json.loads(data)
    key = bytes.fromhex(s["key"]) if "key" in s else None
    names, msg = s["names"], s["message"]
    mod = "hidden_tests/test_hidden.py" if os.path.isdir("hidden_tests") else "visible_tests/test_visible.py"
    tests = [f"{mod}::test_{c}" for c in "abcdef"]
    pc, fc = f"{mod}::{names['pass']}", f"{mod}::{names['fail']}"
    recs = [{"kind": "start", "pid": os.getpid(), "secret": True, "safe_path": True}, {"kind": "configured"},
            {"kind": "collected", "nodeids": tests, "wrapped": tests}, {"kind": "wrapped", "nodeids": tests}]
    for n in tests + [pc]:
        recs += [{"kind": "call", "nodeid": n, "verified": True}, {"kind": "ran", "nodeid": n, "event": "returned"},
                 {"kind": "raw", "nodeid": n, "when": "call", "outcome": "passed", "text": ""}]
        recs += [{"kind": "report", "nodeid": n, "when": w, "outcome": "passed", "text": "", "xfail": False}
                 for w in ("setup", "call", "teardown")]
    recs += [{"kind": "raw", "nodeid": fc, "when": "call", "outcome": "failed", "text": "AssertionError: " + msg},
             {"kind": "report", "nodeid": fc, "when": "call", "outcome": "failed", "text": msg, "xfail": False},
             {"kind": "finish", "exitstatus": 0, "collected": len(tests) + 2, "canaries": 2}]
    out = b""
    for i, r in enumerate(recs, 1):
        body = json.dumps({**r, "seq": i}, separators=(",", ":")).encode()
        out += (hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b" " + body if key else body) + b"\n"
    os.write(wfd, out)
    os._exit(0)
_go()
'''


def test_a_module_that_runs_before_pytest_cannot_forge_the_stream(tmp_path: Path) -> None:
    """Attack (pass on 1378ad6): ``__future__.py`` in the workspace. Now the standard library's
    comes first on sys.path: the file is never imported, the tests run and fail."""
    t, meta = task(tmp_path)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "__future__.py").write_text(FORGE_BEFORE_PYTEST))
    res = score(t, meta, patch, tmp_path)
    not_pass(res)
    assert res.hidden is not None and res.hidden.junit.failures == 3, res.reason


def test_a_workspace_module_named_like_an_installed_one_is_not_what_pytest_imports(tmp_path: Path) -> None:
    """``pluggy.py`` (pytest's own dependency) at the workspace root: the installed one wins."""
    t, meta = task(tmp_path)
    patch = git_patch(t / "repo", tmp_path,
                      lambda wd: (wd / "iniconfig.py").write_text("import os\nos._exit(0)\n"))
    res = score(t, meta, patch, tmp_path)
    not_pass(res)


# ----------------------------------------------------------------------------- in-process routes

#: how code imported by the tests finds the live pytest config
ROUTES = {
    "gc": "cfgs = [o for o in __import__('gc').get_objects() if isinstance(o, Config)]",
    "frames": ("cfgs = []\nf = sys._getframe()\nwhile f is not None:\n"
               "    s = f.f_locals.get('self')\n"
               "    if hasattr(getattr(s, 'config', None), 'pluginmanager'):\n"
               "        cfgs.append(s.config)\n        break\n    f = f.f_back"),
    "module-global": ("import _pytest.debugging\n"
                      "cfgs = [c for c in [getattr(_pytest.debugging.pytestPDB, '_config', None)] if c]"),
}

EMPTY_BODIES = '''
import sys
import pytest
from _pytest.config import Config
{route}
class _Empty:
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        for it in items:
            fn = getattr(getattr(it, "obj", None), "__wrapped__", getattr(it, "obj", None))
            if hasattr(fn, "__code__"):
                fn.__code__ = (lambda: None).__code__
for cfg in cfgs:
    if not cfg.pluginmanager.has_plugin("empty"):
        cfg.pluginmanager.register(_Empty(), "empty")
'''


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_b_a_plugin_that_empties_every_test_body(tmp_path: Path, route: str) -> None:
    """Attack (pass on 1378ad6 by gc and by a collector's frame): a plugin registered on the live
    config sets every test function's ``__code__`` to an empty body. Refused, named."""
    t, meta = task(tmp_path)
    res = score(t, meta, calc_patch(tmp_path, t, EMPTY_BODIES.format(route=ROUTES[route])), tmp_path)
    not_pass(res)
    assert res.status == "tamper", res.reason
    assert "the seal refused" in res.reason, res.reason


#: reached without gc or frames (a module global of pytest's), the items' witnesses get another
#: function to call: an empty one
SWAP_THE_CALLED_FUNCTION = '''
import _pytest.debugging
_done = []
def add(a, b):
    if not _done:
        _done.append(1)
        cfg = _pytest.debugging.pytestPDB._config
        session = cfg.pluginmanager.get_plugin("session")
        for it in session.items:
            obj = it.obj
            cells = getattr(obj, "__closure__", None) or ()
            for c in cells:
                if callable(c.cell_contents):
                    c.cell_contents = lambda *a, **k: None
            it.obj = lambda *a, **k: None
    return a - b
'''


def test_c_the_function_a_test_calls_is_the_sealed_one(tmp_path: Path) -> None:
    t, meta = task(tmp_path)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(SWAP_THE_CALLED_FUNCTION))
    res = score(t, meta, patch, tmp_path)
    not_pass(res)


UNITTEST_HIDDEN = '''import os
import sys
import unittest

sys.path.insert(0, os.getcwd())
from calc import add


class AddTests(unittest.TestCase):
    def test_pairs(self):
        for a, b in [(1, 2), (3, 4), (10, 5)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), a + b)

    def test_raises(self):
        with self.assertRaises(TypeError):
            add(1, "x")

    @unittest.expectedFailure
    def test_known_bug(self):
        self.assertEqual(1, 2)

    @unittest.skip("not on this platform")
    def test_skipped(self):
        self.fail("never runs")
'''


def unittest_task(tmp_path: Path) -> tuple[Path, dict]:
    t, meta = task(tmp_path, failing_tests=1)
    (t / "hidden_tests" / "test_hidden.py").write_text(UNITTEST_HIDDEN)
    return t, meta


PATCH_ASSERT_EQUAL = '''
import unittest
unittest.TestCase.assertEqual = lambda self, *a, **k: None
'''


def test_d_replacing_unittest_assert_equal(tmp_path: Path) -> None:
    """Attack (pass on 1378ad6): the code under test replaces ``TestCase.assertEqual``."""
    t, meta = unittest_task(tmp_path)
    res = score(t, meta, calc_patch(tmp_path, t, PATCH_ASSERT_EQUAL), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "assertEqual was replaced" in res.reason, res.reason


def test_d_honest_unittest_suite_keeps_its_verdict(tmp_path: Path) -> None:
    """subTest, assertRaises, expectedFailure and skip in a TestCase: the gold patch passes, the
    empty patch fails (never ``tamper``)."""
    t, meta = unittest_task(tmp_path)
    good = score(t, meta, ORACLE.encode(), tmp_path)
    assert good.status == "pass", good.reason
    bad = score(t, meta, b"", tmp_path)
    assert bad.status == "fail", bad.reason


PATCH_RAISES = '''
import contextlib, pytest
pytest.raises = lambda *a, **k: contextlib.suppress(BaseException)
'''


def test_e_replacing_pytest_raises(tmp_path: Path) -> None:
    t, meta = task(tmp_path)
    res = score(t, meta, calc_patch(tmp_path, t, PATCH_RAISES), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "pytest.raises was replaced" in res.reason, res.reason


WRITE_TO_EVERY_FD = r'''
import json, os
for fd in range(3, 64):
    try:
        os.write(fd, b'{"kind":"finish","exitstatus":0,"collected":5,"canaries":2}\n')
    except OSError:
        pass
'''


def test_f_bytes_written_into_the_stream_are_not_records(tmp_path: Path) -> None:
    t, meta = task(tmp_path)
    res = score(t, meta, calc_patch(tmp_path, t, WRITE_TO_EVERY_FD), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "not written by the seal" in res.reason, res.reason


NATIVE = {
    "ctypes": "import ctypes\nctypes.string_at(id(0), 8)",
    "proc-mem": "open('/proc/self/mem', 'rb')",
    "settrace": "import sys\nsys.settrace(lambda *a: None)",
    "audit-hook": "import sys\nsys.addaudithook(lambda *a: None)",
    "code-new": "import os\n(lambda: 0).__code__.replace(co_filename=os.__file__)",
}


@pytest.mark.parametrize("what", sorted(NATIVE))
def test_g_primitives_of_in_process_forgery_are_refused(tmp_path: Path, what: str) -> None:
    t, meta = task(tmp_path)
    res = score(t, meta, calc_patch(tmp_path, t, NATIVE[what] + "\n"), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "the seal refused" in res.reason, res.reason


#: what honest library code does that touches the audited primitives from the standard library
HONEST_LIBRARY = '''
import collections, dataclasses, enum, functools, inspect, logging, traceback, typing, warnings
T = typing.TypeVar("T")
Pair = collections.namedtuple("Pair", "a b")
Colour = enum.Enum("Colour", "RED GREEN")
log = logging.getLogger(__name__)

@dataclasses.dataclass
class Box:
    value: int = 0

class NT(typing.NamedTuple):
    x: int

def _deco(f):
    @functools.wraps(f)
    def inner(*a, **k):
        return f(*a, **k)
    return inner

def _describe():
    try:
        {}["missing"]
    except KeyError:
        text = traceback.format_exc()
    warnings.warn("calc imported", DeprecationWarning)
    log.warning("calc: %s", len(text))
    return inspect.signature(add), inspect.getsource(_describe)[:10], Pair(1, 2), Box(3), NT(1), Colour.RED

@_deco
def add(a, b):
    return a + b

_describe()
'''


def test_h_honest_library_code_is_not_tamper(tmp_path: Path) -> None:
    t, meta = task(tmp_path)
    patch = git_patch(t / "repo", tmp_path, lambda wd: (wd / "calc.py").write_text(HONEST_LIBRARY))
    res = score(t, meta, patch, tmp_path)
    assert res.status == "pass", res.reason


def test_i_the_tests_collected_must_be_the_gold_runs(tmp_path: Path) -> None:
    """The controls record the test ids the gold patch's runs collected; a run that collects
    another set is ``tamper`` (named), the same set keeps its verdict."""
    t, meta = task(tmp_path)
    gold = score(t, meta, ORACLE.encode(), tmp_path)
    ids = {"visible": gold.visible.report["collected"], "hidden": gold.hidden.report["collected"]}
    assert len(ids["hidden"]) == 3, ids
    again = score(t, meta, ORACLE.encode(), tmp_path, expected_ids=ids)
    assert again.status == "pass", again.reason
    fewer = {"visible": ids["visible"], "hidden": ids["hidden"] + ["hidden_tests/test_hidden.py::test_gone"]}
    res = score(t, meta, ORACLE.encode(), tmp_path, expected_ids=fewer)
    assert res.status == "tamper" and "test_gone" in res.reason, res.reason


def test_j_the_fixed_module_still_passes_with_its_own_helpers(tmp_path: Path) -> None:
    """A fix that imports helper modules of its own (new files) is judged as before."""
    t, meta = task(tmp_path)

    def change(wd: Path) -> None:
        (wd / "calc_helpers.py").write_text("def plus(a, b):\n    return a + b\n")
        (wd / "calc.py").write_text("from calc_helpers import plus\n\n\ndef add(a, b):\n    return plus(a, b)\n")

    res = score(t, meta, git_patch(t / "repo", tmp_path, change), tmp_path)
    assert res.status == "pass", res.reason
    assert json.dumps(res.to_dict(), default=str)
    assert BUGGY != FIXED
