"""The stream rules of the verdict table (``verdict.RULES``), judged on report streams alone.

``judge_stream`` reads a report stream into facts once (``sealed_report.stream_facts``), then asks
the table's rules in order; the first
that gives a verdict decides, a stream none refuses passes. Here, on hand-made streams written the
way the report plugin (``report_site/sealbench_report.py``) writes them — ``start``,
``configured``, ``collected``, a ``report`` per test phase, ``finish`` — each rule decides its own
case (the smallest change to an honest stream) with its exact reason, and gives no verdict on an
honest stream. The decoys are part of the stream: an honest pass has every real test green and
every decoy red (so pytest itself exits 1).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.scoring import sealed_report, verdict  # noqa: E402
from sealbench.scoring.verdict import CommandEvidence, Evidence, judge_stream  # noqa: E402

pytestmark = pytest.mark.unit

REAL = "t/test_x.py::test_real"
DECOY = "t/test_x.py::test_real_case"        # REAL's twin with one expectation changed
DECOYS = {DECOY: REAL}
GOLD_IDS = [REAL, DECOY]


def phases(nid: str, call: str = "passed", crash: str = "", *, setup: str = "passed",
           teardown: str = "passed", xfail: bool = False) -> list[dict]:
    """One test's three phase reports as the plugin writes them."""
    out = []
    for when, outcome in (("setup", setup), ("call", call), ("teardown", teardown)):
        if when == "call" and setup != "passed":
            continue          # a test whose setup failed or skipped has no call
        failed = outcome == "failed"
        out.append({"kind": "report", "nodeid": nid, "when": when, "outcome": outcome,
                    "text": crash if failed else "", "crash": crash if failed else "",
                    "exception": "AssertionError" if failed else "", "xfail": xfail, "subtest": False})
    return out


def stream(real: str = "passed", decoy: str | None = "failed", *, collected: list[str] | None = None,
           exitstatus: int | None = None, extra: list[dict] = ()) -> list[dict]:
    """A finished stream: the real test's call ``real``, the decoy's ``decoy`` (None: no decoy in
    the suite), ``extra`` records before the finish; pytest's exit status as its reports call for
    unless given."""
    ids = [REAL] + ([DECOY] if decoy is not None else [])
    body = phases(REAL, real, "assert -1 == 7" if real == "failed" else "")
    if decoy is not None:
        body += phases(DECOY, decoy, "assert 7 == 12" if decoy == "failed" else "")
    body += list(extra)
    if exitstatus is None:
        exitstatus = 1 if any(r.get("outcome") == "failed" for r in body) else 0
    return ([{"kind": "start", "pid": 1}, {"kind": "configured"},
             {"kind": "imports", "when": "collected", "modules": {}},
             {"kind": "collected", "nodeids": collected if collected is not None else ids}]
            + body + [{"kind": "imports", "when": "finish", "modules": {}},
                      {"kind": "finish", "exitstatus": exitstatus, "collected": len(ids)}])


def replace(recs: list[dict], nodeid: str, when: str, **change: object) -> list[dict]:
    return [dict(r, **change) if (r.get("nodeid"), r.get("when")) == (nodeid, when) else r for r in recs]


def without(recs: list[dict], drop) -> list[dict]:
    return [r for r in recs if not drop(r)]


HONEST = stream()                       # the real test passes, the decoy fails: exit 1
HONEST_RC = 1

#: (case, the rule that must decide it, stream, exit code, expected, expected ids, decoys, kind, reason)
CASES = [
    ("no start, exit 0", "never_started_exit_0", [], 0, 0, None, {}, "fail",
     "exit 0 but the test runner never reported starting (no report)"),
    ("no start, exit 4", "never_started", [], 4, 0, None, {}, "infra_fail", "the test runner never started (exit 4)"),
    ("usage error", "stopped_before_configured", HONEST[:1], 4, 0, None, {}, "infra_fail",
     "pytest stopped before it was configured (exit 4; usage error?)"),
    ("unfinished", "ended_before_finish", HONEST[:-1], 1, 0, GOLD_IDS, DECOYS, "fail",
     "the test process ended before pytest finished (exit 1)"),
    ("unfinished, exit 0", "ended_before_finish", HONEST[:5], 0, 0, GOLD_IDS, DECOYS, "fail",
     "the test process ended before pytest finished (exit 0)"),
    ("a gold test not collected", "gold_collection", HONEST, HONEST_RC, 1, GOLD_IDS + ["t/test_x.py::test_gone"],
     DECOYS, "tamper",
     "the collection differs from the gold patch's: 1 of the gold patch's tests not collected (t/test_x.py::test_gone)"),
    ("a test the gold runs lacked", "gold_collection", HONEST, HONEST_RC, 1, [REAL], {}, "tamper",
     f"the collection differs from the gold patch's: 1 tests the gold patch's run did not have ({DECOY})"),
    ("decoy passed", "decoy_passed", stream("passed", "passed"), 0, 1, GOLD_IDS, DECOYS, "tamper",
     f"1 test that the gold patch fails passed: {DECOY} (twin of {REAL}) — a decoy, a real test's twin with one "
     "expectation changed, passes only when failures are turned into passes"),
    ("decoy passed, real failed", "decoy_passed", stream("failed", "passed"), 1, 1, GOLD_IDS, DECOYS, "tamper",
     f"1 test that the gold patch fails passed: {DECOY} (twin of {REAL}) — a decoy, a real test's twin with one "
     "expectation changed, passes only when failures are turned into passes"),
    ("collection error", "collection_errors",
     stream(extra=[{"kind": "collect", "nodeid": "t/test_y.py", "outcome": "failed", "text": "ImportError"}]),
     HONEST_RC, 0, GOLD_IDS, DECOYS, "fail", "collection errors (t/test_y.py)"),
    ("no test", "no_test_ran", without(stream(decoy=None), lambda r: r.get("nodeid") == REAL), 0, 0, None, {},
     "fail", "no test ran: pytest collected no test"),
    ("modules skipped", "no_test_ran",
     without(stream(decoy=None, extra=[{"kind": "collect", "nodeid": "t/test_x.py", "outcome": "skipped"}]),
             lambda r: r.get("nodeid") == REAL), 0, 0, None, {}, "fail", "no test ran: every test module was skipped"),
    ("all skipped", "all_skipped", stream("skipped"), HONEST_RC, 0, GOLD_IDS, DECOYS, "fail",
     "every one of the 1 collected test was skipped"),
    ("all xfailed", "all_skipped", replace(stream("skipped"), REAL, "call", xfail=True), HONEST_RC, 0, GOLD_IDS,
     DECOYS, "fail", "every one of the 1 collected test was skipped"),
    ("collected, never reported", "collected_not_reported",
     stream(collected=GOLD_IDS + ["t/test_x.py::test_later"]), HONEST_RC, 0, None, DECOYS, "fail",
     "1 collected test never ran to a report (t/test_x.py::test_later)"),
    ("decoy never reported", "collected_not_reported", without(HONEST, lambda r: r.get("nodeid") == DECOY),
     0, 0, GOLD_IDS, DECOYS, "fail", f"1 collected test never ran to a report ({DECOY})"),
    ("real failure", "tests_failed", stream("failed"), 1, 1, GOLD_IDS, DECOYS, "fail",
     "the sealed report shows 1 failure"),
    ("teardown error", "tests_failed", replace(HONEST, REAL, "teardown", outcome="failed", crash="boom"), 1, 1,
     GOLD_IDS, DECOYS, "fail", "the sealed report shows 1 error"),
    ("decoy skipped", "decoy_not_failed", stream("passed", "skipped"), 0, 1, GOLD_IDS, DECOYS, "fail",
     f"1 test that the gold patch fails did not run to a failure ({DECOY}: skipped)"),
    ("decoy xfailed", "decoy_not_failed", replace(stream("passed", "skipped"), DECOY, "call", xfail=True), 0, 1,
     GOLD_IDS, DECOYS, "fail", f"1 test that the gold patch fails did not run to a failure ({DECOY}: xfailed)"),
    ("pytest says 0 over a failed decoy", "exit_status", stream(exitstatus=0), 0, 1, GOLD_IDS, DECOYS, "fail",
     "pytest finished with exit 0"),
    ("pytest exit 5", "exit_status", stream(decoy=None, exitstatus=5), 5, 1, None, {}, "fail",
     "pytest finished with exit 5"),
    ("exit 0 after pytest's 1", "exit_status", HONEST, 0, 1, GOLD_IDS, DECOYS, "fail",
     "exit 0 after pytest finished with exit 1"),
    ("exit 1 after pytest's 0", "exit_status", stream(decoy=None), 1, 1, [REAL], {}, "fail",
     "exit 1 after pytest finished with exit 0"),
    ("too few passed", "too_few_passed", HONEST, HONEST_RC, 2, GOLD_IDS, DECOYS, "fail",
     "only 1 test passed, 2 expected"),
    ("honest pass", "", HONEST, HONEST_RC, 1, GOLD_IDS, DECOYS, "pass", None),
    ("honest pass, no decoys", "", stream(decoy=None), 0, 1, [REAL], {}, "pass", None),
    # an input decoy (one input of a computed-vs-computed check changed) passed with every real test:
    # a constant passes such a check whatever its inputs, so it is a failure, never tamper
    ("input decoy passed", "input_decoy_passed", stream("passed", "passed"), 0, 1, GOLD_IDS, DECOYS, "fail",
     f"1 test that the gold patch fails passed: {DECOY} (twin of {REAL}) — a real test's twin with one input "
     "changed: the patch gives equal values where the gold patch does not (or failures were turned into passes)",
     {DECOY}),
    ("input decoy passed, real failed", "tests_failed", stream("failed", "passed"), 1, 1, GOLD_IDS, DECOYS, "fail",
     "the sealed report shows 1 failure", {DECOY}),
]

#: the stream rules in the order they are asked (the order decides a stream that several refuse)
ORDER = ["never_started_exit_0", "never_started", "stopped_before_configured", "ended_before_finish", "collection_errors", "gold_collection",
         "decoy_passed", "no_test_ran", "all_skipped", "collected_not_reported", "tests_failed",
         "input_decoy_passed", "decoy_not_failed", "exit_status", "too_few_passed"]


def _documented_names() -> list[str]:
    """The rule names the table's docstring lists (``- name: what it refuses``), in order."""
    tree = ast.parse((ROOT / "scripts" / "sealbench" / "scoring" / "verdict.py").read_text("utf-8"))
    for i, node in enumerate(tree.body):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == "RULES" for t in targets):
            doc = tree.body[i + 1]
            assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), "RULES has no docstring"
            names = []
            for ln in str(doc.value.value).splitlines():
                if ln.strip().startswith("- "):
                    names += [n.strip() for n in ln.strip()[2:].split(":", 1)[0].split("/")]
            return names
    raise AssertionError("no RULES in verdict.py")


def _stream_evidence(recs, rc, expected=0, expected_ids=None, decoys=None, inputs=()) -> Evidence:
    """A stream judged alone: no command name, nothing known of how its command ended."""
    return Evidence(command=CommandEvidence(None, sealed_report.stream_facts(recs, rc, expected, expected_ids,
                                                                            decoys, inputs)))


def _first_rule(recs, rc, expected, expected_ids, decoys, inputs=()) -> str:
    v = verdict.first_rule(_stream_evidence(recs, rc, expected, expected_ids, decoys, inputs))
    return "" if v is None or v.rule == "stream_passed" else v.rule


def test_table_names_unique_and_in_documented_order() -> None:
    names = [rule.name for rule in verdict.RULES]
    assert len(names) == len(set(names)), names
    assert names == _documented_names()
    # the stream rules come last, in this order, then the pass
    assert names[-len(ORDER) - 1:] == ORDER + ["stream_passed"]
    assert all(callable(rule.check) for rule in verdict.RULES)


def test_every_rule_has_a_case() -> None:
    assert {rule for _, rule, *_ in CASES} - {""} == set(ORDER)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_rule_decides_its_stream(case) -> None:
    _, rule, recs, rc, expected, expected_ids, decoys, kind, reason, *inputs = case
    inputs = inputs[0] if inputs else ()
    v = judge_stream(recs, rc, expected, expected_ids, decoys, input_decoys=inputs)
    assert (v.kind, v.problem) == (kind, reason), v
    assert _first_rule(recs, rc, expected, expected_ids, decoys, inputs) == rule


@pytest.mark.parametrize("honest", ["decoyed", "no decoys"])
def test_no_rule_fires_on_an_honest_passing_stream(honest: str) -> None:
    recs, rc, ids, decoys = ((HONEST, HONEST_RC, GOLD_IDS, DECOYS) if honest == "decoyed"
                             else (stream(decoy=None), 0, [REAL], {}))
    ev = _stream_evidence(recs, rc, 1, ids, decoys)
    fired = {rule.name: rule.check(ev) for rule in verdict.RULES if rule.applies(ev)}
    assert fired == {**dict.fromkeys(n for n in fired if n != "stream_passed"), "stream_passed": ""}
    assert set(ORDER) <= set(fired)


def test_honest_pass_and_fail_with_a_decoy() -> None:
    ok = judge_stream(HONEST, HONEST_RC, 1, GOLD_IDS, DECOYS)
    assert (ok.started, ok.finished, ok.kind, ok.problem, ok.passed) == (True, True, "pass", None, 1)
    assert (ok.decoys_passed, ok.decoys_failed) == ([], 1)
    # the counts are the real tests' (the decoy is not one)
    assert ok.summary == sealed_report.JUnitSummary(tests=1, failures=0, errors=0, skipped=0)
    bad = judge_stream(stream("failed"), 1, 1, GOLD_IDS, DECOYS)
    assert (bad.kind, bad.passed, bad.decoys_failed) == ("fail", 0, 1), bad
    assert bad.summary == sealed_report.JUnitSummary(tests=1, failures=1, errors=0, skipped=0)


def test_a_passed_decoy_is_tamper_whatever_else_the_stream_says() -> None:
    """A decoy that passed decides before any failure, skip or exit status: the report or the values
    were forged (the gold patch fails it). Only a collection error comes first (a patch whose module
    does not import is a failure, never a pass: :func:`test_a_module_that_fails_to_collect_is_a_failure_not_tamper`)."""
    for recs, rc in ((stream("passed", "passed"), 0), (stream("failed", "passed"), 1),
                     (stream("skipped", "passed"), 0), (stream("passed", "passed", exitstatus=3), 3)):
        v = judge_stream(recs, rc, 1, GOLD_IDS, DECOYS)
        assert v.kind == "tamper" and "the gold patch fails" in v.problem, v
        assert v.decoys_passed == [f"{DECOY} (twin of {REAL})"], v


def test_a_module_that_fails_to_collect_is_a_failure_not_tamper() -> None:
    """The stream pytest writes when the module under test does not import (a SyntaxError in the
    patch): the test module fails to collect, so neither the real test nor the decoy is collected.
    Found by this file's rewrite (the collection was compared first: tamper); now a failure."""
    recs = ([{"kind": "start", "pid": 1}, {"kind": "configured"},
             {"kind": "collect", "nodeid": "t/test_x.py", "outcome": "failed", "text": "SyntaxError: invalid syntax"},
             {"kind": "collected", "nodeids": []}, {"kind": "finish", "exitstatus": 2, "collected": 0}])
    v = judge_stream(recs, 2, 1, GOLD_IDS, DECOYS)
    assert (v.kind, v.problem) == ("fail", "collection errors (t/test_x.py)"), v


def test_a_stream_without_its_collection_record_is_not_a_pass() -> None:
    """``judge_stream`` given the decoys: a stream that drops its ``collected`` record but reports the
    decoy passed is still tamper here (the decoys were given by id). Through ``sealed_command._run_check``
    the decoys' ids come from the stream's own collection (see test_forgery's
    ``test_l_the_writer_drops_the_collection_record_too``)."""
    recs = without(stream("passed", "passed"), lambda r: r.get("kind") == "collected")
    v = judge_stream(recs, 0, 1, GOLD_IDS, DECOYS)
    assert v.kind == "tamper", v


def test_verdict_fields_by_stage() -> None:
    """Before the counts are read a verdict has none; from the collection on it has them. A stop
    before pytest was configured counts as a runner that never started (no code of the patch ran)."""
    early = judge_stream(HONEST[:1], 4)
    assert (early.started, early.finished, early.summary) == (False, False, None)
    unfinished = judge_stream(HONEST[:-1], 1, 0, GOLD_IDS, DECOYS)
    assert (unfinished.started, unfinished.finished, unfinished.summary) == (True, False, None)
    coll = judge_stream(HONEST, HONEST_RC, 1, GOLD_IDS + ["t/x.py::test_gone"], DECOYS)
    assert (coll.kind, coll.summary.tests, coll.passed) == ("tamper", 1, 1)


# ----------------------------------------------------------------------------- outcomes as pytest judges them

SUB = "t/test_x.py::AddTests::test_pairs"


def sub(outcome: str, crash: str = "") -> dict:
    """One subTest's report (pytest 9 reports each subTest apart, before the test's own)."""
    return {"kind": "report", "nodeid": SUB, "when": "call", "outcome": outcome, "text": crash, "crash": crash,
            "exception": "AssertionError" if outcome == "failed" else "", "xfail": False, "subtest": True}


def judged_subtests(*subs: dict):
    own = phases(SUB)
    recs = ([{"kind": "start", "pid": 1}, {"kind": "configured"}, {"kind": "collected", "nodeids": [SUB]}]
            + own[:1] + list(subs) + own[1:])
    failed = any(s["outcome"] == "failed" for s in subs)
    recs.append({"kind": "finish", "exitstatus": int(failed)})
    return judge_stream(recs, int(failed), 1, [SUB], {})


def test_each_subtest_is_judged_by_its_own_report() -> None:
    ok = judged_subtests(sub("passed"), sub("passed"))
    assert ok.kind == "pass" and ok.passed == 1, ok
    # a failing subTest after a passing one: the test failed (its own report says passed)
    v = judged_subtests(sub("passed"), sub("failed", "AssertionError: -1 != 3"), sub("passed"))
    assert v.kind == "fail" and v.passed == 0, v
    assert (v.summary.tests, v.summary.failures, v.summary.skipped) == (1, 1, 0), v.summary
    # a skipped subTest: the test still passed
    sk = judged_subtests(sub("passed"), sub("skipped", "Skipped: two"), sub("passed"))
    assert sk.kind == "pass" and sk.passed == 1 and sk.summary.skipped == 0, sk


def test_outcomes_and_failure_lines() -> None:
    recs = (phases("m.py::test_p") + phases("m.py::test_f", "failed", "assert -1 == 7")
            + phases("m.py::test_s", "skipped") + phases("m.py::test_e", setup="failed")
            + replace(phases("m.py::test_x", "skipped"), "m.py::test_x", "call", xfail=True)
            + replace(phases("m.py::test_xp"), "m.py::test_xp", "call", xfail=True)
            + phases("m.py::test_u")[:1])
    assert sealed_report.test_outcomes(recs) == {
        "m.py::test_p": "passed", "m.py::test_f": "failed", "m.py::test_s": "skipped", "m.py::test_e": "failed",
        "m.py::test_x": "xfailed", "m.py::test_xp": "xpassed", "m.py::test_u": "unfinished"}
    # a failure's kind is the exception the plugin saw (a rewritten assert's first line has none)
    assert sealed_report.failure_lines(recs)["m.py::test_f"] == "AssertionError: assert -1 == 7"


def test_parse_stream() -> None:
    good = b'{"kind": "start", "pid": 1}\n\n{"kind": "finish", "exitstatus": 0}\n'
    assert sealed_report.parse_stream(good) == ([{"kind": "start", "pid": 1}, {"kind": "finish", "exitstatus": 0}],
                                                None)
    assert sealed_report.parse_stream(good + b"not json\n")[1] == "record 3 is not JSON"
    assert sealed_report.parse_stream(b'[1, 2]\n')[1] == "record 1 is not a sealbench record"
