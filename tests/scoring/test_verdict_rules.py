"""The score verdict as an ordered table of named rules (issue 28, point 3).

``sealed_report.judge_stream`` reads a sealed-report stream into facts once, then asks the rules of
``sealed_report.VERDICT_RULES`` in order; the first that gives a verdict decides. Here: the table
is in the order its docstring lists, and each rule has a hand-built stream (the smallest change
to an honest one) that it is the first to refuse, with its exact reason. The streams are built
the way the seal writes them (``pytest_seal``): a ``raw`` record then a ``report`` per phase.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.scoring import sealed_report  # noqa: E402
from sealbench.scoring.sealed_report import judge_stream  # noqa: E402

NAMES = {"pass": "test_p_canary", "fail": "test_f_canary"}
MSG = "expected 1, got 2 [abc]"
REAL = "t/test_x.py::test_real"
PC, FC = "t/test_x.py::" + NAMES["pass"], "t/test_x.py::" + NAMES["fail"]


def phases(nid: str, call: str = "passed", text: str = "", *, report: str | None = None,
           teardown: str = "passed") -> list[dict]:
    """One test's three phases as the seal writes them: per phase what the test raised
    (``raw``), then pytest's report of it (``report``: a forged call outcome when given)."""
    out: list[dict] = []
    for when in ("setup", "call", "teardown"):
        o = call if when == "call" else teardown if when == "teardown" else "passed"
        t = text if when == "call" else ""
        out += [{"kind": "raw", "nodeid": nid, "when": when, "outcome": o, "text": t},
                {"kind": "report", "nodeid": nid, "when": when,
                 "outcome": (report or o) if when == "call" else o, "text": t, "xfail": False, "subtest": False}]
    return out


def canaries() -> list[dict]:
    """The two canaries as expected: the passing one passes, the failing one fails with MSG."""
    return (phases(PC) + [{"kind": "ran", "nodeid": PC, "event": "returned"}]
            + phases(FC, "failed", "AssertionError: " + MSG))


def honest(call: str = "passed", text: str = "") -> list[dict]:
    """A finished honest stream of one real test whose call is ``call``: start, collection,
    the canaries, the test (and its witnessed return when it passed), finish."""
    return ([{"kind": "start", "pid": 1, "secret": True}, {"kind": "configured"},
             {"kind": "collected", "nodeids": [REAL], "wrapped": [REAL]}]
            + canaries() + phases(REAL, call, text)
            + ([{"kind": "ran", "nodeid": REAL, "event": "returned"}] if call == "passed" else [])
            + [{"kind": "finish", "exitstatus": 0 if call == "passed" else 1}])


def replace(recs: list[dict], nodeid: str, when: str, kind: str, **change: object) -> list[dict]:
    """``recs`` with the ``kind`` record of ``nodeid``'s ``when`` phase changed."""
    return [dict(r, **change) if (r.get("nodeid"), r.get("when"), r.get("kind")) == (nodeid, when, kind) else r
            for r in recs]


def without(recs: list[dict], drop) -> list[dict]:
    """``recs`` without the records ``drop`` says yes to."""
    return [r for r in recs if not drop(r)]


def _before_finish(recs: list[dict], *extra: dict) -> list[dict]:
    return recs[:-1] + list(extra) + recs[-1:]


#: (case, the rule that must decide it, stream, exit code, expected, expected_ids, kind, reason)
CASES: list[tuple[str, str, list[dict], int | None, int, list[str] | None, str, str | None]] = [
    ("no start, exit 0", "never_started", [], 0, 0, None, "tamper",
     ("exit 0 but the test runner never reported starting (no sealed report: the process was replaced or "
      "ended from inside)")),
    ("no start, exit 4", "never_started", [], 4, 0, None, "infra_fail", "the test runner never started (exit 4)"),
    ("no secret", "no_secret", [dict(honest()[0], secret=False)] + honest()[1:], 0, 0, None, "infra_fail",
     "the sealbench pytest plugin got no canary secret"),
    ("seal refused", "seal_refused", _before_finish(honest(), {"kind": "tamper", "problem": "a frame write"}),
     0, 0, None, "tamper", "the seal refused a frame write"),
    ("two sessions", "two_sessions", honest()[:1] + honest(), 0, 0, None, "tamper",
     "stream: 2 pytest sessions reported in one command"),
    ("unfinished, exit 0", "unfinished_exit_0", honest()[:-1], 0, 0, None, "tamper",
     "exit 0 but pytest never reported finishing (the process was ended from inside)"),
    ("usage error", "stopped_before_configured", honest()[:1], 4, 0, None, "infra_fail",
     "pytest stopped before it was configured (exit 4; usage error?)"),
    ("unfinished", "ended_before_finish", honest()[:-1], 1, 0, None, "fail",
     "the test process ended before pytest finished (exit 1)"),
    ("after finish", "records_after_finish", honest() + [{"kind": "report"}], 0, 0, None, "tamper",
     "stream: records after pytest reported finishing"),
    ("collection error", "collection_errors",
     _before_finish(honest(), {"kind": "collect", "nodeid": "t/test_y.py", "outcome": "failed"}), 0, 0, None,
     "fail", "collection errors (t/test_y.py)"),
    ("no test", "no_test_ran", without(honest(), lambda r: r.get("nodeid") == REAL), 0, 0, None, "fail",
     "no test ran: pytest collected no test"),
    ("modules skipped", "no_test_ran",
     _before_finish(without(honest(), lambda r: r.get("nodeid") == REAL),
                    {"kind": "collect", "nodeid": "t/test_x.py", "outcome": "skipped"}), 0, 0, None, "fail",
     "no test ran: every test module was skipped"),
    ("all skipped", "all_skipped", honest("skipped", "Skipped: no")[:-1] + [{"kind": "finish", "exitstatus": 0}],
     0, 0, None, "fail", "every one of the 1 collected test was skipped"),
    ("canary missing", "canary_never_ran", without(honest(), lambda r: r.get("nodeid") == FC), 0, 0, None,
     "tamper", "canary: a canary test never ran"),
    ("passing canary failed", "passing_canary_failed", replace(honest(), PC, "call", "raw", outcome="failed"),
     0, 0, None, "tamper", "canary: the passing canary did not pass"),
    ("failing canary passed", "failing_canary_failed", replace(honest(), FC, "call", "report", outcome="passed"),
     0, 0, None, "tamper", "canary: the failing canary was reported passed"),
    ("canary message", "canary_message_kept",
     replace(honest(), FC, "call", "raw", text="AssertionError: expected 1, got 1"), 0, 0, None, "tamper",
     "canary: the failing canary's message was altered"),
    ("canary teardown", "canary_setup_teardown", replace(honest(), PC, "teardown", "report", outcome="failed"),
     0, 0, None, "tamper", "canary: a canary's setup or teardown failed"),
    ("raised, reported passed", "raised_but_passed",
     replace(honest(), REAL, "call", "raw", outcome="failed", text="AssertionError: 3 != 4"), 0, 0, None,
     "tamper", f"stream: {REAL} raised (AssertionError: 3 != 4) but was reported passed"),
    ("gold test missing", "gold_collection", honest(), 0, 0, [REAL, "t/test_x.py::test_gone"], "tamper",
     "stream: 1 of the gold patch's tests not collected (t/test_x.py::test_gone)"),
    ("test the gold run lacked", "gold_collection", honest(), 0, 0, [], "tamper",
     f"stream: 1 tests the gold patch's run did not have ({REAL})"),
    ("reported, not collected", "reported_not_collected",
     _before_finish(honest(), *phases("t/test_x.py::test_ghost")), 0, 0, None, "tamper",
     "stream: t/test_x.py::test_ghost was reported but never collected (1 such test)"),
    ("collected, never reported", "collected_not_reported",
     [dict(r, nodeids=[REAL, "t/test_x.py::test_later"]) if r["kind"] == "collected" else r for r in honest()],
     0, 0, None, "fail",
     "1 collected test never ran to a report (t/test_x.py::test_later): the session ended before them"),
    ("never returned", "passed_not_returned", without(honest(), lambda r: r["kind"] == "ran" and r["nodeid"] == REAL),
     0, 0, None, "tamper",
     f"stream: {REAL} was reported passed but its test function never ran to its end (1 such test)"),
    ("honest failure", "tests_failed", honest("failed", "AssertionError: 3 != 4"), 1, 0, None, "fail",
     "the sealed report shows 1 failure"),
    ("teardown error", "tests_failed", replace(replace(honest(), REAL, "teardown", "raw", outcome="failed"),
                                               REAL, "teardown", "report", outcome="failed"), 1, 0, None, "fail",
     "the sealed report shows 1 error"),
    ("exit 0 over a failure", "exit_code_differs", honest()[:-1] + [{"kind": "finish", "exitstatus": 1}], 0, 0,
     None, "tamper", "exit 0 but pytest finished with exit 1"),
    ("exit 1 over a pass", "exit_code_differs", honest(), 1, 0, None, "fail",
     "exit 1 after pytest finished with exit 0"),
    ("pytest exit 5", "pytest_exit_nonzero", honest()[:-1] + [{"kind": "finish", "exitstatus": 5}], 5, 0, None,
     "fail", "pytest finished with exit 5"),
    ("too few passed", "too_few_passed", honest(), 0, 2, None, "fail", "only 1 test passed, 2 expected"),
    ("honest pass", "", honest(), 0, 1, [REAL], "pass", None),
]

#: the rules in the order they are asked (the order decides a stream that several refuse)
ORDER = ["never_started", "no_secret", "seal_refused", "two_sessions", "unfinished_exit_0",
         "stopped_before_configured", "ended_before_finish", "records_after_finish", "collection_errors",
         "no_test_ran", "all_skipped", "canary_never_ran", "passing_canary_failed", "failing_canary_failed",
         "canary_message_kept", "canary_setup_teardown", "raised_but_passed", "gold_collection",
         "reported_not_collected", "collected_not_reported", "passed_not_returned", "tests_failed",
         "exit_code_differs", "pytest_exit_nonzero", "too_few_passed"]


def _documented_names() -> list[str]:
    """The rule names the table's docstring lists (``- name: what it refuses``), in order."""
    tree = ast.parse((ROOT / "scripts" / "sealbench" / "scoring" / "sealed_report.py").read_text("utf-8"))
    body = tree.body
    for i, node in enumerate(body):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "VERDICT_RULES" for t in targets):
            doc = body[i + 1]
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), "VERDICT_RULES has no docstring"
            return [ln.strip()[2:].split(":", 1)[0] for ln in str(doc.value.value).splitlines()
                    if ln.strip().startswith("- ")]
    raise AssertionError("no VERDICT_RULES in sealed_report.py")


@pytest.mark.unit
def test_table_names_unique_and_in_documented_order() -> None:
    names = [name for name, _ in sealed_report.VERDICT_RULES]
    assert len(names) == len(set(names)), names
    assert names == _documented_names() == ORDER
    assert all(callable(rule) for _, rule in sealed_report.VERDICT_RULES)


@pytest.mark.unit
def test_every_rule_has_a_case() -> None:
    assert {rule for _, rule, *_ in CASES} - {""} == set(ORDER)


def _first_rule(recs: list[dict], rc: int | None, expected: int, expected_ids: list[str] | None) -> str:
    facts = sealed_report.stream_facts(recs, NAMES, MSG, rc, expected, expected_ids)
    return next((name for name, rule in sealed_report.VERDICT_RULES if rule(facts) is not None), "")


@pytest.mark.unit
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_rule_decides_its_stream(case) -> None:
    _, rule, recs, rc, expected, expected_ids, kind, reason = case
    v = judge_stream(recs, NAMES, MSG, rc, expected, expected_ids)
    assert (v.kind, v.problem) == (kind, reason), v
    assert _first_rule(recs, rc, expected, expected_ids) == rule


@pytest.mark.unit
def test_honest_pass_and_fail() -> None:
    ok = judge_stream(honest(), NAMES, MSG, 0, 1, [REAL])
    assert (ok.started, ok.finished, ok.kind, ok.problem, ok.passed, ok.canaries) == (True, True, "pass", None, 1, "ok")
    assert ok.summary == sealed_report.JUnitSummary(tests=1, failures=0, errors=0, skipped=0)
    bad = judge_stream(honest("failed", "AssertionError: 3 != 4"), NAMES, MSG, 1, 1, [REAL])
    assert (bad.kind, bad.passed, bad.canaries) == ("fail", 0, "ok"), bad
    assert bad.summary == sealed_report.JUnitSummary(tests=1, failures=1, errors=0, skipped=0)


@pytest.mark.unit
def test_verdict_fields_by_stage() -> None:
    """Before the counts are read a verdict has none; the collection rules give the counts but
    no passes and no canaries; from the canaries on a verdict has all three."""
    early = judge_stream(honest()[:1], NAMES, MSG, 4)
    assert (early.started, early.finished, early.summary) == (False, False, None)
    after = judge_stream(honest() + [{"kind": "report"}], NAMES, MSG, 0)
    assert (after.started, after.finished, after.summary, after.passed, after.canaries) == (
        True, True, None, 0, "not run")
    coll = judge_stream(_before_finish(honest(), {"kind": "collect", "nodeid": "t/y.py", "outcome": "failed"}),
                        NAMES, MSG, 0)
    assert (coll.summary.tests, coll.passed, coll.canaries) == (1, 0, "not run")
    canary = judge_stream(replace(honest(), PC, "call", "raw", outcome="failed"), NAMES, MSG, 0)
    assert (canary.passed, canary.canaries) == (1, "wrong")
    late = judge_stream(honest(), NAMES, MSG, 0, 2)
    assert (late.passed, late.canaries) == (1, "ok")
