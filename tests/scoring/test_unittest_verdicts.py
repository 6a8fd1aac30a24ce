"""Scoring judges unittest-style tests as pytest reports them (issue 27, point 2).

pytest 9 runs ``unittest.TestCase`` tests with native ``subTest`` support: every subTest gets its
own report (a ``SubtestReport``, made by a ``pytest_runtest_makereport`` call of its own, so the
seal writes a ``raw`` record for it), and the test's own report comes last, ``passed`` even when
one of its subTests failed. The seal compared every ``raw`` record with the FIRST report of the
same test and phase: a failing subTest after a passing one was "raised … but was reported passed",
``tamper``, for the empty diff of an honest suite. A skipped subTest made its whole test count as
skipped (a suite whose every test skips one subTest was "every test skipped", ``fail``, for the gold
patch). And for a TestCase the ``raw`` record was read before pytest's unittest plugin handed the
call what ``TestCase.run`` had caught (a tearDown failure, an unexpected success): a report turned
into ``passed`` for those was not seen.

Every honest suite here: the gold patch ``pass``, the empty diff ``fail`` (never ``tamper``). Beside
them, attacks on the same suites that must not ``pass``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_forgery import calc_patch, git_patch, not_pass, score, task  # noqa: E402

from packgen import ORACLE  # noqa: E402
from sealbench.scoring.sealed_report import judge_stream  # noqa: E402

HEAD = '''import os
import sys
import unittest

sys.path.insert(0, os.getcwd())
from calc import add
'''

#: a subTest loop whose first case passes with the bug (0 + 0 == 0 - 0) and later ones fail
SUBTEST_LOOP = HEAD + '''

class AddTests(unittest.TestCase):
    def test_pairs(self):
        for a, b in [(0, 0), (1, 2), (3, 4), (5, 0)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(add(a, b), a + b)
'''

#: each test skips one subTest (honestly: a case the platform lacks) and passes the others
SKIP_IN_SUBTEST = HEAD + '''

class AddTests(unittest.TestCase):
    def test_pairs(self):
        for a, b in [(1, 2), (2, 2), (3, 4)]:
            with self.subTest(a=a, b=b):
                if a == 2:
                    self.skipTest("two is not on this platform")
                self.assertEqual(add(a, b), a + b)
'''

#: the shapes real suites use, all in one file (a Django-like base class around the run)
SHAPES = HEAD + '''

def checked(n):
    if n <= 0:
        raise ValueError("n must be > 0")
    return add(n, n)


class SimpleTestCase(unittest.TestCase):
    """Like Django's: its own set-up and tear-down around unittest's run."""

    def __call__(self, result=None):
        self._pre_setup()
        try:
            super().__call__(result)
        finally:
            self._post_teardown()

    def _pre_setup(self):
        self.log = []

    def _post_teardown(self):
        self.log = None


class ShapeTests(SimpleTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.base = add(20, 22)

    @classmethod
    def tearDownClass(cls):
        cls.base = None
        super().tearDownClass()

    def setUp(self):
        self.log.append("set up")
        self.addCleanup(self.log.clear)

    def test_class_fixture(self):
        self.assertEqual(self.base, 42)

    def test_raises_context_manager(self):
        with self.assertRaises(ValueError) as cm:
            checked(0)
        self.assertIn("n must be > 0", str(cm.exception))
        self.assertEqual(checked(3), 6)

    def test_raises_callable(self):
        self.assertRaises(ValueError, checked, -1)
        self.assertRaisesRegex(ValueError, "must be", checked, 0)
        self.assertEqual(checked(2), 4)

    def test_loop_some_expect_errors(self):
        for n in (0, 1, -3, 2):
            with self.subTest(n=n):
                if n <= 0:
                    with self.assertRaises(ValueError):
                        checked(n)
                else:
                    self.assertEqual(checked(n), 2 * n)

    def test_skip_in_subtest(self):
        for n in (1, 2, 3):
            with self.subTest(n=n):
                if n == 2:
                    self.skipTest("two is not on this platform")
                self.assertEqual(add(n, 1), n + 1)

    def test_nested_subtests(self):
        for a in (1, 2):
            with self.subTest(a=a):
                for b in (3, 4):
                    with self.subTest(b=b):
                        self.assertEqual(add(a, b), a + b)

    @unittest.expectedFailure
    def test_expected_failure(self):
        self.assertEqual(checked(0), 0)

    @unittest.expectedFailure
    def test_old_behaviour_is_gone(self):
        # the bug made 2 + 2 == 0: with it this is an unexpected success (a failure)
        self.assertEqual(add(2, 2), 0)

    def test_skip_test(self):
        self.skipTest("needs a network")

    @unittest.skipIf(True, "never here")
    def test_skip_decorated(self):
        self.fail("never runs")


@unittest.skip("the whole class is for another platform")
class SkippedClass(unittest.TestCase):
    def test_never(self):
        self.fail("never runs")
'''

#: more_itertools 11.2.1 ``windowed`` (its more.py) and ``WindowedTests`` (its test_more.py), copied
WINDOWED = '''from collections import deque
from itertools import chain, islice


def windowed(seq, n, fillvalue=None, step=1):
    if n <= 0:
        raise ValueError('n must be > 0')
    if step < 1:
        raise ValueError('step must be >= 1')

    iterator = iter(seq)

    # Generate first window
    window = deque(islice(iterator, n), maxlen=n)

    # Deal with the first window not being full
    if not window:
        return
    if len(window) < n:
        yield tuple(window) + ((fillvalue,) * (n - len(window)))
        return
    yield tuple(window)

    # Create the filler for the next windows. The padding ensures
    # we have just enough elements to fill the last window.
    padding = (fillvalue,) * (n - 1 if step >= n else step - 1)
    filler = map(window.append, chain(iterator, padding))

    # Generate the rest of the windows
    for _ in islice(filler, step - 1, None, step):
        yield tuple(window)
'''
#: the bug planted: no check of ``n``, and the padding of a step longer than the window
WINDOWED_BUGGY = (WINDOWED.replace("    if n <= 0:\n        raise ValueError('n must be > 0')\n", "")
                  .replace("(n - 1 if step >= n else step - 1)", "(step - 1)"))

WINDOWED_TESTS = '''import os
import sys
from unittest import TestCase

sys.path.insert(0, os.getcwd())
import mi_windowed as mi


class WindowedTests(TestCase):
    def test_basic(self):
        iterable = [1, 2, 3, 4, 5]

        for n, expected in (
            (6, [(1, 2, 3, 4, 5, None)]),
            (5, [(1, 2, 3, 4, 5)]),
            (4, [(1, 2, 3, 4), (2, 3, 4, 5)]),
            (3, [(1, 2, 3), (2, 3, 4), (3, 4, 5)]),
            (2, [(1, 2), (2, 3), (3, 4), (4, 5)]),
            (1, [(1,), (2,), (3,), (4,), (5,)]),
        ):
            with self.subTest(n=n):
                actual = list(mi.windowed(iterable, n))
                self.assertEqual(actual, expected)

    def test_fillvalue(self):
        actual = list(mi.windowed([1, 2, 3, 4, 5], 6, fillvalue='!'))
        expected = [(1, 2, 3, 4, 5, '!')]
        self.assertEqual(actual, expected)

    def test_step(self):
        iterable = [1, 2, 3, 4, 5, 6, 7]
        for n, step, expected in [
            (3, 2, [(1, 2, 3), (3, 4, 5), (5, 6, 7)]),  # n > step
            (3, 3, [(1, 2, 3), (4, 5, 6), (7, None, None)]),  # n == step
            (3, 4, [(1, 2, 3), (5, 6, 7)]),  # lines up nicely
            (3, 5, [(1, 2, 3), (6, 7, None)]),  # off by one
            (3, 6, [(1, 2, 3), (7, None, None)]),  # off by two
            (3, 7, [(1, 2, 3)]),  # step past the end
            (7, 8, [(1, 2, 3, 4, 5, 6, 7)]),  # step > len(iterable)
        ]:
            with self.subTest(n=n, step=step):
                actual = list(mi.windowed(iterable, n, step=step))
                self.assertEqual(actual, expected)

    def test_invalid_step(self):
        # Step must be greater than or equal to 1
        with self.assertRaises(ValueError):
            list(mi.windowed([1, 2, 3, 4, 5], 3, step=0))

    def test_fillvalue_step(self):
        actual = list(mi.windowed([1, 2, 3, 4, 5], 3, fillvalue='!', step=3))
        expected = [(1, 2, 3), (4, 5, '!')]
        self.assertEqual(actual, expected)

    def test_invalid_n(self):
        with self.assertRaises(ValueError):
            list(mi.windowed([1, 2, 3, 4, 5], 0))  # n is zero
        with self.assertRaises(ValueError):
            list(mi.windowed([1, 2, 3, 4, 5], -1))  # n is negative

    def test_empty_seq(self):
        actual = list(mi.windowed([], 3))
        expected = []
        self.assertEqual(actual, expected)
'''


def unittest_task(tmp_path: Path, hidden: str, failing_tests: int = 1) -> tuple[Path, dict]:
    t, meta = task(tmp_path, failing_tests=failing_tests)
    (t / "hidden_tests" / "test_hidden.py").write_text(hidden)
    return t, meta


def hidden_only(t: Path, meta: dict, patch: bytes, tmp: Path):
    """The hidden command's verdict alone (the visible tests are plain functions of ``calc``)."""
    return score(t, meta, patch, tmp, commands=("hidden",))


def honest_verdicts(t: Path, meta: dict, tmp: Path, gold: bytes = ORACLE.encode()) -> None:
    good = score(t, meta, gold, tmp)
    assert good.status == "pass", good.reason
    bad = score(t, meta, b"", tmp)
    assert bad.status == "fail", bad.reason
    assert bad.hidden is not None and bad.hidden.junit is not None and bad.hidden.junit.failures >= 1, bad.reason


# ----------------------------------------------------------------------------- honest suites

@pytest.mark.sandbox
def test_a_failing_subtest_after_a_passing_one_is_a_failure(tmp_path: Path) -> None:
    """The empty diff's reported case: ``fail`` (it was ``tamper``, "raised … but was reported
    passed", the failing subTest's exception set against the passing one's report)."""
    t, meta = unittest_task(tmp_path, SUBTEST_LOOP)
    honest_verdicts(t, meta, tmp_path)
    bad = hidden_only(t, meta, b"", tmp_path)
    assert bad.status == "fail" and "1 failure" in (bad.reason or ""), bad.reason
    assert bad.hidden.junit.tests == 1 and bad.hidden.junit.failures == 1, bad.hidden.junit


@pytest.mark.sandbox
def test_b_a_skipped_subtest_does_not_skip_its_test(tmp_path: Path) -> None:
    """A test that skips one subTest and passes the others passed (it was counted skipped: the
    gold patch's run was "every one of the collected tests was skipped")."""
    t, meta = unittest_task(tmp_path, SKIP_IN_SUBTEST)
    honest_verdicts(t, meta, tmp_path)
    good = hidden_only(t, meta, ORACLE.encode(), tmp_path)
    assert good.hidden.junit.skipped == 0, good.hidden.junit


@pytest.mark.sandbox
def test_c_the_shapes_of_real_unittest_suites(tmp_path: Path) -> None:
    """setUpClass/tearDownClass, a Django-like base class, addCleanup, assertRaises (both forms),
    subTests that expect errors, a skip inside a subTest, nested subTests, expectedFailure, an
    unexpected success (with the bug), skipTest and skipped tests and classes."""
    t, meta = unittest_task(tmp_path, SHAPES, failing_tests=6)
    honest_verdicts(t, meta, tmp_path)
    good = hidden_only(t, meta, ORACLE.encode(), tmp_path)
    j = good.hidden.junit
    # 11 tests: 6 pass; 2 expected failures, 2 skipped tests and a skipped class (reported skipped)
    assert (j.tests, j.failures, j.errors, j.skipped) == (11, 0, 0, 5), j
    bad = hidden_only(t, meta, b"", tmp_path)
    # with the bug: the class fixture, both assertRaises tests, the loop, the skip-in-subtest
    # test, the nested subTests and the unexpected success fail
    assert bad.status == "fail" and bad.hidden.junit.failures == 7, (bad.reason, bad.hidden.junit)


def windowed_task(tmp_path: Path) -> tuple[Path, dict, bytes]:
    t, meta = unittest_task(tmp_path, WINDOWED_TESTS, failing_tests=7)
    (t / "repo" / "mi_windowed.py").write_text(WINDOWED_BUGGY)
    # the gold patch: calc's fix and the real ``windowed``
    gold = git_patch(t / "repo", tmp_path, lambda wd: ((wd / "mi_windowed.py").write_text(WINDOWED),
                                                       (wd / "calc.py").write_text("def add(a, b):\n    return a + b\n")))
    return t, meta, gold


@pytest.mark.sandbox
def test_d_more_itertools_windowed_tests(tmp_path: Path) -> None:
    """more_itertools 11.2.1 ``WindowedTests`` (copied, with its ``windowed``): the gold patch
    ``pass``; the empty diff (no check of ``n``, a wrong padding for long steps) ``fail`` (it was
    "test_step raised (AssertionError: Lists differ …) but was reported passed", ``tamper``)."""
    t, meta, gold = windowed_task(tmp_path)
    honest_verdicts(t, meta, tmp_path, gold)
    bad = hidden_only(t, meta, b"", tmp_path)
    # test_step fails its later subTests after passing the first two; test_invalid_n raises nothing
    assert "failure" in (bad.reason or "") and bad.hidden.junit.failures == 2, (bad.reason, bad.hidden.junit)


# ----------------------------------------------------------------------------- attacks beside them

SWALLOW_SUBTEST = '''
import contextlib, unittest

@contextlib.contextmanager
def _quiet(self, msg=None, **params):
    try:
        yield
    except Exception:
        pass

unittest.TestCase.subTest = _quiet
'''

REPLACE_ASSERT_RAISES = '''
import contextlib, unittest
unittest.TestCase.assertRaises = lambda self, *a, **k: contextlib.suppress(BaseException)
'''

REPLACE_RUN = '''
import unittest
unittest.TestCase.run = lambda self, result=None: None
'''

#: a hook implementation slipped into the live config's ``pytest_runtest_logreport`` (reached through
#: a pytest module global; added to the hook caller directly, so no plugin is registered) that turns
#: failed reports of TestCase tests (``path::Class::test``; the canaries are module-level functions)
#: into passed ones before the seal's own hook reads them
FLIP_REPORTS = '''
import _pytest.debugging
from pluggy._hooks import HookImpl


class _Flip:
    def pytest_runtest_logreport(self, report):
        if report.failed and report.nodeid.count("::") == 2:
            report.outcome = "passed"
            report.longrepr = None


_cfg = getattr(_pytest.debugging.pytestPDB, "_config", None)
if _cfg is not None:
    _flip = _Flip()
    _cfg.pluginmanager.hook.pytest_runtest_logreport._add_hookimpl(HookImpl(
        _flip, "flip", _flip.pytest_runtest_logreport,
        {"wrapper": False, "hookwrapper": False, "optionalhook": False, "tryfirst": True, "trylast": False,
         "specname": None}))
'''

#: only the failures ``TestCase.run`` catches after the test method returned: a tearDown that
#: checks what the test did, and an unexpected success
TEARDOWN_CHECKS = HEAD + '''

class TeardownChecks(unittest.TestCase):
    def setUp(self):
        self.totals = []

    def tearDown(self):
        self.assertEqual(self.totals, [5, 7][:len(self.totals)])

    def test_totals(self):
        self.totals.append(add(2, 3))
        self.totals.append(add(3, 4))

    @unittest.expectedFailure
    def test_old_behaviour_is_gone(self):
        self.assertEqual(add(2, 2), 0)
'''


@pytest.mark.sandbox
@pytest.mark.parametrize("attack", ["swallow-subtest", "assert-raises", "run"])
def test_e_patching_unittest_does_not_pass(tmp_path: Path, attack: str) -> None:
    """A patch that leaves the bug and replaces ``TestCase.subTest`` (to swallow the failures),
    ``assertRaises`` or ``run``: ``tamper``, named."""
    prelude, name = {"swallow-subtest": (SWALLOW_SUBTEST, "subTest"),
                     "assert-raises": (REPLACE_ASSERT_RAISES, "assertRaises"),
                     "run": (REPLACE_RUN, "run")}[attack]
    t, meta = unittest_task(tmp_path, SHAPES, failing_tests=6)
    res = score(t, meta, calc_patch(tmp_path, t, prelude), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and f"{name} was replaced" in (res.reason or ""), res.reason


@pytest.mark.sandbox
def test_f_failed_subtest_reports_turned_passed(tmp_path: Path) -> None:
    """The failing subTests of the loop turned into passed reports: ``tamper`` (each subTest's
    exception is set against its own report)."""
    t, meta = unittest_task(tmp_path, SUBTEST_LOOP)
    res = hidden_only(t, meta, calc_patch(tmp_path, t, FLIP_REPORTS), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "but was reported passed" in (res.reason or ""), res.reason
    assert "AssertionError: -1 != 3" in res.reason, res.reason


@pytest.mark.sandbox
def test_g_failures_caught_by_testcase_run_turned_passed(tmp_path: Path) -> None:
    """A tearDown failure and an unexpected success (the test method returned both times) turned
    into passed reports: ``tamper``. The honest suite: gold ``pass``, empty diff ``fail``."""
    t, meta = unittest_task(tmp_path, TEARDOWN_CHECKS, failing_tests=1)
    honest_verdicts(t, meta, tmp_path)
    res = hidden_only(t, meta, calc_patch(tmp_path, t, FLIP_REPORTS), tmp_path)
    not_pass(res)
    assert res.status == "tamper" and "but was reported passed" in (res.reason or ""), res.reason


# ----------------------------------------------------------------------------- the judge alone

NAMES = {"pass": "test_p_canary", "fail": "test_f_canary"}
MSG = "expected 1, got 2 [abc]"
NID = "t/test_x.py::AddTests::test_pairs"


def stream(body: list[dict]) -> list[dict]:
    """A finished stream: start, collection, the canaries as expected, ``body``, finish."""
    pc, fc = "t/test_x.py::" + NAMES["pass"], "t/test_x.py::" + NAMES["fail"]

    def phases(nid: str, call: str, text: str = "") -> list[dict]:
        out = []
        for when in ("setup", "call", "teardown"):
            o = call if when == "call" else "passed"
            t = text if when == "call" else ""
            out += [{"kind": "raw", "nodeid": nid, "when": when, "outcome": o, "text": t},
                    {"kind": "report", "nodeid": nid, "when": when, "outcome": o, "text": t, "xfail": False,
                     "subtest": False}]
        return out

    return ([{"kind": "start", "secret": True}, {"kind": "configured"},
             {"kind": "collected", "nodeids": [NID], "wrapped": [NID]}]
            + phases(pc, "passed") + [{"kind": "ran", "nodeid": pc, "event": "returned"}]
            + phases(fc, "failed", "AssertionError: " + MSG) + body
            + [{"kind": "finish", "exitstatus": 1 if any(r.get("outcome") == "failed" for r in body) else 0}])


def sub(outcome: str, text: str = "", reported: str | None = None) -> list[dict]:
    """One subTest: what its call raised, then its report (``reported``: a forged outcome)."""
    return [{"kind": "raw", "nodeid": NID, "when": "call", "outcome": outcome, "text": text},
            {"kind": "report", "nodeid": NID, "when": "call", "outcome": reported or outcome, "text": text,
             "xfail": False, "subtest": True}]


def own(call: str = "passed") -> list[dict]:
    """The test's own reports (after its subTests') and its witnessed return."""
    return ([{"kind": "raw", "nodeid": NID, "when": "setup", "outcome": "passed", "text": ""},
             {"kind": "report", "nodeid": NID, "when": "setup", "outcome": "passed", "text": "", "xfail": False,
              "subtest": False}], [{"kind": "ran", "nodeid": NID, "event": "returned"}] + [
        r for w in ("call", "teardown") for r in (
            {"kind": "raw", "nodeid": NID, "when": w, "outcome": call if w == "call" else "passed", "text": ""},
            {"kind": "report", "nodeid": NID, "when": w, "outcome": call if w == "call" else "passed", "text": "",
             "xfail": False, "subtest": False})])


def judged(subs: list[list[dict]], call: str = "passed"):
    before, after = own(call)
    recs = stream(before + [r for s in subs for r in s] + after)
    rc = recs[-1]["exitstatus"]
    return judge_stream(recs, NAMES, MSG, rc)


@pytest.mark.unit
def test_h_each_subtest_is_judged_by_its_own_report() -> None:
    ok = judged([sub("passed"), sub("passed")])
    assert ok.kind == "pass" and ok.passed == 1, ok
    # a failing subTest after a passing one: the test failed, it is not counted passed
    v = judged([sub("passed"), sub("failed", "AssertionError: -1 != 3"), sub("passed")])
    assert v.kind == "fail" and v.passed == 0, v
    assert (v.summary.tests, v.summary.failures, v.summary.skipped) == (1, 1, 0), v.summary
    # the same subTest's exception under a report forged to passed: tamper, named
    forged = judged([sub("passed"), sub("failed", "AssertionError: -1 != 3", reported="passed")])
    assert forged.kind == "tamper" and "AssertionError: -1 != 3" in (forged.problem or ""), forged
    # a skipped subTest: the test still passed
    sk = judged([sub("passed"), sub("skipped", "Skipped: two"), sub("passed")])
    assert sk.kind == "pass" and sk.passed == 1 and sk.summary.skipped == 0, sk
