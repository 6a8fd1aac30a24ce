"""The attempt's verdict in one place (``scoring/verdict.py``) and the records it reads (``core/records.py``).

Each rule of the table fires on its case with its exact reason, and not on the honest case beside
it; the table's order is the precedence the stages had (a run killed at its clock is a timeout
whatever its patch scored; an exclusion never hides a timeout, an infra_fail or a tamper); the
records round-trip and a bad one names its file and field; and no module but the table assigns a
status as a verdict. The stream rules' own cases are in ``test_verdict_rules.py``.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core.contract import EXCLUDED, FAIL, INFRA_FAIL, PASS, STATUSES, TAMPER, TIMEOUT  # noqa: E402
from sealbench.core.records import (  # noqa: E402
    SCHEMA_KEY,
    ControlsRecord,
    RecordError,
    RunRecord,
    ScoreRecord,
    write_record,
)
from sealbench.scoring import verdict  # noqa: E402
from sealbench.scoring.sealed_report import stream_facts  # noqa: E402
from sealbench.scoring.verdict import (  # noqa: E402
    CommandEvidence,
    Evidence,
    PatchEvidence,
    Verdict,
    decide,
    first_rule,
)

pytestmark = pytest.mark.unit

REAL = "t/test_x.py::test_real"


def honest_stream(outcome: str = "passed") -> list[dict]:
    """One real test, as the report plugin writes it (no decoys)."""
    body = [{"kind": "report", "nodeid": REAL, "when": w, "outcome": outcome if w == "call" else "passed",
             "crash": "assert 1 == 2" if outcome == "failed" and w == "call" else "",
             "exception": "AssertionError" if outcome == "failed" and w == "call" else "",
             "xfail": False, "subtest": False} for w in ("setup", "call", "teardown")]
    return ([{"kind": "start", "pid": 1}, {"kind": "configured"}, {"kind": "collected", "nodeids": [REAL]}]
            + body + [{"kind": "finish", "exitstatus": int(outcome == "failed")}])


def command(recs: list[dict] | None = None, rc: int | None = 0, **kw) -> Evidence:
    facts = None if recs is None else stream_facts(recs, rc, 1, None, {})
    return Evidence(command=CommandEvidence("hidden", facts, **{"command": "python -m pytest -q", **kw}))


def run(**kw) -> RunRecord:
    return RunRecord.from_dict({"solver": "a", "fingerprint": "f", "epoch": 1, "end_reason": "exit",
                                "exit_code": 0, "timed_out": False, "time_box_s": 60, **kw})


def controls(**kw) -> ControlsRecord:
    return ControlsRecord.from_dict({"control_infra_fail": False, "results": [], **kw})


V_PASS = Verdict(PASS, "command_passed", None)
V_FAIL = Verdict(FAIL, "tests_failed", "hidden tests: the sealed report shows 1 failure")
V_DECOY = Verdict(TAMPER, "decoy_passed", "hidden tests: 1 test that the gold patch fails passed")
V_INFRA = Verdict(INFRA_FAIL, "runner_infra", "hidden command: pytest usage error (exit 4)")
PROTECTED = {"checks/test_x.py": "a test folder"}
OUTSIDE = {"package": "calc", "path": "/usr/lib/python3/calc"}
CRASHED = {"end_reason": "exit", "exit_code": 127}

#: (rule, evidence that makes it fire, status, reason, evidence beside it on which it does not fire)
CASES = [
    # the runs table's row
    ("timed_out_record", Evidence(record=Verdict(FAIL, "x", "r"), run=run(timed_out=True)), TIMEOUT,
     "the worker was stopped at its clock; its patch scored fail (r)",
     Evidence(record=Verdict(FAIL, "x", "r"), run=run())),
    ("session_excluded", Evidence(record=Verdict(PASS, "passed", None), run=run(), session_problems=("far",)),
     EXCLUDED, "pass before exclusion", Evidence(record=Verdict(PASS, "passed", None), run=run())),
    # the attempt
    ("harness_error", Evidence(run=run(end_reason="harness_error", error="OSError: disk")), INFRA_FAIL,
     "the harness could not run the attempt: OSError: disk", Evidence(run=run())),
    ("scoring_raised", Evidence(scoring_error="the harness could not score the attempt: KeyError: 'x'"), INFRA_FAIL,
     "the harness could not score the attempt: KeyError: 'x'", Evidence()),
    ("empty_patch", Evidence(empty_patch="model_patch is null"), FAIL, "empty patch (model_patch is null)",
     Evidence()),
    ("every_control_missing", Evidence(every_control_missing=("yaml",), environment="envs/py311"), INFRA_FAIL,
     "the tests cannot be collected: No module named 'yaml', for every control (the gold patch included): a test "
     "dependency is missing; declare it in the task's environment (envs/py311) (docs/contract.md §1)", Evidence()),
    ("timed_out", Evidence(scored=V_FAIL, run=run(timed_out=True)), TIMEOUT,
     "the worker was stopped at its 60s clock; its patch scored fail (hidden tests: the sealed report shows 1 failure)",
     Evidence(scored=V_FAIL, run=run())),
    ("limit_hit", Evidence(scored=V_FAIL, run=run(limit_hit="hit its memory limit (2048 MB)")), FAIL,
     "the agent run hit its memory limit (2048 MB); its patch scored fail (hidden tests: the sealed report shows "
     "1 failure)", Evidence(scored=V_FAIL, run=run())),
    ("scoring_infra_controls_too",
     Evidence(scored=V_INFRA, run=run(), controls=controls(control_infra_fail=True, results=[
         {"solver": "oracle", "epoch": 1, "status": "infra_fail"}])), INFRA_FAIL,
     "hidden command: pytest usage error (exit 4); the task's controls could not be scored either (oracle#1): "
     "the harness or the task is broken, not the patch",
     Evidence(scored=V_FAIL, run=run(), controls=controls(control_infra_fail=True))),
    ("scoring_infra_patch", Evidence(scored=V_INFRA, run=run(), controls=controls()), FAIL,
     "the patch broke the test run: hidden command: pytest usage error (exit 4); the task's controls ran without "
     "an infra failure, so the patch did it", Evidence(scored=V_FAIL, run=run(), controls=controls())),
    # the patch
    ("protected_not_applied", Evidence(patch=PatchEvidence(False, "does not apply", PROTECTED)), TAMPER,
     "the patch touched protected paths: checks/test_x.py (a test folder); the rest was not scored: does not apply",
     Evidence(patch=PatchEvidence(False, "a path outside the workspace", PROTECTED))),
    ("patch_not_applied", Evidence(patch=PatchEvidence(False, "does not apply")), FAIL, "does not apply",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS))),
    ("workspace_unprepared_protected",
     Evidence(patch=PatchEvidence(True, "", PROTECTED, prepare_error="nested too deep")), TAMPER,
     "the scoring workspace could not be prepared: nested too deep; the patch touched protected paths: "
     "checks/test_x.py", Evidence(patch=PatchEvidence(True, "", prepare_error="nested too deep"))),
    ("workspace_unprepared", Evidence(patch=PatchEvidence(True, "", prepare_error="nested too deep")), FAIL,
     "the scoring workspace could not be prepared: nested too deep",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS))),
    ("forged_report", Evidence(patch=PatchEvidence(True, "", PROTECTED, visible=V_PASS, hidden=V_DECOY)), TAMPER,
     "hidden tests: 1 test that the gold patch fails passed; the patch also touched protected paths, not applied: "
     "checks/test_x.py (a test folder)", Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_FAIL))),
    ("import_outside_task",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS, import_outside=OUTSIDE, task_check=True)),
     INFRA_FAIL, "the tests import calc from /usr/lib/python3/calc, outside the workspace: the environment has the "
     "package installed, or import_paths is wrong; fix the task's environment or its meta.json "
     "import_paths/packages", Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS,
                                                            task_check=True))),
    ("import_outside",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS, import_outside=OUTSIDE)), TAMPER,
     "the tests imported calc from /usr/lib/python3/calc, outside the workspace, while the task's controls import "
     "it from inside: the patch redirected what is tested",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS))),
    ("command_infra", Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_INFRA)), INFRA_FAIL,
     "hidden command: pytest usage error (exit 4)", Evidence(patch=PatchEvidence(True, "", visible=V_PASS,
                                                                               hidden=V_FAIL))),
    ("protected_paths", Evidence(patch=PatchEvidence(True, "", PROTECTED, visible=V_PASS, hidden=V_FAIL)), TAMPER,
     "the patch touched protected paths, not applied: checks/test_x.py (a test folder); the rest scored fail "
     "(hidden tests: the sealed report shows 1 failure)",
     Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_FAIL))),
    ("commands_failed", Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_FAIL)), FAIL,
     "hidden tests: the sealed report shows 1 failure", Evidence(patch=PatchEvidence(True, "", visible=V_PASS,
                                                                                     hidden=V_PASS))),
    ("passed", Evidence(patch=PatchEvidence(True, "", visible=V_PASS, hidden=V_PASS)), PASS, None,
     Evidence(patch=PatchEvidence(True, "", visible=V_FAIL, hidden=V_PASS))),
    # one command
    ("command_limit_hit", command(honest_stream(), limit_hit="hit its memory limit"), FAIL,
     "hidden command hit its memory limit", command(honest_stream())),
    ("command_timed_out", command(honest_stream(), timed_out=True), FAIL, "hidden tests timed out",
     command(honest_stream())),
    ("stream_unreadable", command(honest_stream(), unreadable="record 3 is not JSON"), FAIL,
     "hidden tests: record 3 is not JSON", command(honest_stream())),
    ("no_stream", command(None), FAIL, "hidden command: no report", command(honest_stream())),
    ("runner_infra", command([], 127, infra_reason="command not found (missing interpreter?)"), INFRA_FAIL,
     "hidden command: command not found (missing interpreter?) (exit 127)",
     command(honest_stream(), infra_reason="no tests collected")),
    ("not_pytest", command([], 1, command="make test"), FAIL,
     "hidden command: not a pytest run, so no report (exit 1); sealbench vouches only for pytest suites",
     command(honest_stream(), command="make test")),
    ("stream_passed", command(honest_stream()), PASS, None, command(honest_stream("failed"), 1)),
]


def _stream_rule_cases() -> set[str]:
    """The stream rules ``test_verdict_rules.py`` gives a case each (its ``ORDER``)."""
    tree = ast.parse((Path(__file__).parent / "test_verdict_rules.py").read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ORDER" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("no ORDER in test_verdict_rules.py")


def test_every_rule_has_a_case_here_or_in_the_stream_tests() -> None:
    assert {c[0] for c in CASES} | _stream_rule_cases() == {r.name for r in verdict.RULES}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_rule_fires_on_its_case_and_not_beside_it(case) -> None:
    name, ev, status, reason, honest = case
    v = first_rule(ev)
    assert v == Verdict(status, name, reason), v
    rule = next(r for r in verdict.RULES if r.name == name)
    if rule.status == PASS:     # a pass fires whenever nothing before it refused: beside it, something does
        assert first_rule(honest).rule != name, honest
    else:
        assert not rule.applies(honest) or rule.check(honest) is None, honest


def test_the_table_order() -> None:
    """The order is the precedence: outer layers first, then each layer's own order."""
    names = [r.name for r in verdict.RULES]
    assert names[:21] == [
        "timed_out_record", "session_excluded", "harness_error", "scoring_raised", "empty_patch",
        "every_control_missing", "timed_out",
        "limit_hit", "scoring_infra_controls_too", "scoring_infra_patch", "protected_not_applied",
        "patch_not_applied", "workspace_unprepared_protected", "workspace_unprepared", "forged_report",
        "import_outside_task", "import_outside", "command_infra", "protected_paths", "commands_failed", "passed"]
    assert all(r.status in STATUSES for r in verdict.RULES)


# ----------------------------------------------------------------------------- precedence


def test_timeout_beats_whatever_the_patch_scored() -> None:
    """A run killed at its clock is a timeout, its patch's verdict (tamper, the scoring's infra
    turned into the patch's fail) kept in the reason."""
    tamper = Verdict(TAMPER, "protected_paths", "the patch touched protected paths, not applied: x; the rest scored pass")
    v = decide(Evidence(scored=tamper, run=run(timed_out=True)))
    assert (v.status, v.rule) == (TIMEOUT, "timed_out")
    assert v.reason == f"the worker was stopped at its 60s clock; its patch scored tamper ({tamper.reason})"
    v = decide(Evidence(scored=V_INFRA, run=run(timed_out=True), controls=controls()))
    assert v.status == TIMEOUT and "its patch scored fail (the patch broke the test run: " in v.reason, v


def test_a_limit_never_hides_tamper_or_the_harness_and_names_the_raw_score() -> None:
    hit = run(limit_hit="hit its disk limit")
    assert decide(Evidence(scored=V_DECOY, run=hit)) == V_DECOY
    both = controls(control_infra_fail=True)
    assert decide(Evidence(scored=V_INFRA, run=hit, controls=both)).rule == "scoring_infra_controls_too"
    # the scoring's infra_fail that the patch caused: the limit decides, naming what scoring said
    v = decide(Evidence(scored=V_INFRA, run=hit, controls=controls()))
    assert v == Verdict(FAIL, "limit_hit", f"the agent run hit its disk limit; its patch scored infra_fail "
                                           f"({V_INFRA.reason})")


def test_missing_modules_are_infra_only_when_every_control_missed_them_too() -> None:
    ev = Evidence(scored=V_FAIL, run=run(), missing_modules=("yaml",),
                  controls=controls(control_infra_fail=True, missing_modules=["yaml"]))
    v = decide(ev)
    assert (v.status, v.rule) == (INFRA_FAIL, "scoring_infra_controls_too")
    assert v.reason.startswith(f"{V_FAIL.reason} (No module named 'yaml': a test dependency the task's environment "
                               "lacks, see its controls); the task's controls could not be scored either ("), v
    v = decide(Evidence(scored=V_FAIL, run=run(), missing_modules=("yaml",),
                        controls=controls(missing_modules=["yaml"])))
    assert (v.status, v.rule) == (FAIL, "scoring_infra_patch")
    # the controls did not miss it: the patch's own failure stands
    assert decide(Evidence(scored=V_FAIL, run=run(), missing_modules=("yaml",), controls=controls())) == V_FAIL


@pytest.mark.parametrize("status", [INFRA_FAIL, TIMEOUT, TAMPER])
def test_an_exclusion_never_hides_infra_timeout_or_tamper(status: str) -> None:
    rec = Verdict(status, "x", "why")
    assert decide(Evidence(record=rec, run=run(), session_problems=("queue delay over the cap",))) == rec


def test_a_timed_out_record_is_a_timeout_before_any_exclusion() -> None:
    v = decide(Evidence(record=Verdict(PASS, "passed", None), run=run(timed_out=True), session_problems=("far",)))
    assert v == Verdict(TIMEOUT, "timed_out_record", "the worker was stopped at its clock; its patch scored pass")
    # already a timeout (hidden_score decided it): not wrapped twice
    done = Verdict(TIMEOUT, "timed_out", "the worker was stopped at its 60s clock; its patch scored fail")
    assert decide(Evidence(record=done, run=run(timed_out=True))) == done


def test_a_score_record_keeps_its_harness_error() -> None:
    """The harness_error rule decides before scoring; a score record already carries it."""
    rec = Verdict(INFRA_FAIL, "harness_error", "an older wording")
    assert decide(Evidence(record=rec, run=run(end_reason="harness_error", error="E"))) == rec
    stopped = run(end_reason="harness_error", error="stopped: the first 3 runs failed", stopped={"health": "h"})
    assert first_rule(Evidence(run=stopped)) == Verdict(INFRA_FAIL, "harness_error", "stopped: the first 3 runs failed")


def test_a_forged_report_beats_an_import_from_outside_and_the_harness() -> None:
    ev = PatchEvidence(True, "", visible=V_INFRA, hidden=V_DECOY, import_outside=OUTSIDE, task_check=True)
    assert decide(Evidence(patch=ev)).rule == "forged_report"
    ev = PatchEvidence(True, "", visible=V_INFRA, hidden=V_FAIL, import_outside=OUTSIDE)
    assert decide(Evidence(patch=ev)).rule == "import_outside"
    ev = PatchEvidence(True, "", PROTECTED, visible=V_INFRA, hidden=V_FAIL)
    assert decide(Evidence(patch=ev)).rule == "command_infra"


def test_a_command_not_asked_for_does_not_count() -> None:
    assert decide(Evidence(patch=PatchEvidence(True, "", visible=V_PASS))) == Verdict(PASS, "passed", None)


def test_the_stream_rules_name_the_command() -> None:
    v = decide(command(honest_stream("failed"), 1))
    assert v == Verdict(FAIL, "tests_failed", "hidden tests: the sealed report shows 1 failure")
    assert decide(command([{"kind": "start", "pid": 1}], 4)) == Verdict(
        INFRA_FAIL, "stopped_before_configured", "hidden command: pytest stopped before it was configured (exit 4; "
        "usage error?)")


# ----------------------------------------------------------------------------- notes


def test_a_crashed_agent_is_noted_never_decisive() -> None:
    v = decide(Evidence(scored=V_FAIL, run=run(**CRASHED)))
    assert (v.status, v.rule) == (FAIL, "tests_failed")
    assert v.reason == (f"{V_FAIL.reason}; the agent's command ended with exit 127 (command not found (missing "
                        "interpreter?)): recorded, scored as usual (an agent's exit is never infra)")
    assert decide(Evidence(scored=V_PASS, run=run(**CRASHED))) == V_PASS      # a pass is a pass
    killed = decide(Evidence(scored=V_FAIL, run=run(end_reason="exit", exit_code=None, signal="SIGSEGV")))
    assert "the agent's command was killed by SIGSEGV: recorded" in killed.reason
    # not after a timeout or a limit (their reasons say what ended the run)
    assert "agent's command" not in decide(Evidence(scored=V_FAIL, run=run(timed_out=True, **CRASHED))).reason


def test_a_workspace_that_was_not_a_patch_is_noted() -> None:
    v = decide(Evidence(scored=V_FAIL, run=run(timed_out=True, patch_error="git: index.lock exists")))
    assert v.status == TIMEOUT and v.reason.endswith(
        "; the agent left its workspace in a state that cannot be taken as a patch, so it was scored as an empty "
        "patch (git: index.lock exists)"), v
    assert decide(Evidence(scored=V_PASS, run=run(patch_error="x"))) == V_PASS


def test_nothing_to_decide_is_an_error() -> None:
    with pytest.raises(ValueError, match="no rule decides"):
        decide(Evidence(run=run()))


# ----------------------------------------------------------------------------- records


RUN = {"task_id": "t1", "solver": "a", "fingerprint": "f", "epoch": 2, "role": "agent", "end_reason": "exit",
       "timed_out": False, "time_box_s": 60, "limit_hit": None, "exit_code": 1, "signal": None, "patch_error": None,
       "usage": {"steps": 3}, "attempts": [{"exit": 0}], "isolation": "bwrap"}


def test_records_round_trip(tmp_path: Path) -> None:
    rec = RunRecord.from_dict(RUN)
    assert (rec.epoch, rec.exit_code, rec.timed_out, rec.extra["usage"]) == (2, 1, False, {"steps": 3})
    assert rec.to_dict() == {**RUN, SCHEMA_KEY: 1}
    written = write_record(RunRecord, tmp_path / "run.json", RUN)
    assert json.loads((tmp_path / "run.json").read_text()) == written == {**RUN, SCHEMA_KEY: 1}
    assert RunRecord.read(tmp_path / "run.json") == rec
    score = {"task_id": "t1", "solver": "a", "fingerprint": "f", "epoch": 2, "status": "fail", "reason": "r",
             "rule": "tests_failed", "visible_pass": True, "hidden_pass": False, "run": RUN, "tamper_paths": []}
    assert ScoreRecord.from_dict(score).to_dict() == {**score, SCHEMA_KEY: 1}
    assert ScoreRecord.from_dict(score).run_record() == rec
    ctl = {"task_id": "t1", "control_infra_fail": False, "missing_modules": ["yaml"], "results": [],
           "oracle_hidden_ran": 3, "oracle_ids": None, "import_outside": None, "oracle_ok": True}
    assert ControlsRecord.from_dict(ctl).to_dict() == {**ctl, SCHEMA_KEY: 1}


@pytest.mark.parametrize("change, field, words", [
    ({"timed_out": "yes"}, "timed_out", "is str ('yes'), not bool"),
    ({"epoch": True}, "epoch", "is bool (True), not int"),
    ({"time_box_s": "60"}, "time_box_s", "not int or float"),
    ({SCHEMA_KEY: 2}, SCHEMA_KEY, "this sealbench reads run record version 1"),
])
def test_a_bad_run_record_names_its_file_and_field(tmp_path: Path, change: dict, field: str, words: str) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**RUN, **change}))
    with pytest.raises(RecordError) as err:
        RunRecord.read(path)
    assert str(path) in str(err.value) and repr(field) in str(err.value) and words in str(err.value), err.value


def test_a_missing_field_is_named(tmp_path: Path) -> None:
    path = tmp_path / "1.json"
    path.write_text(json.dumps({"task_id": "t1", "solver": "a", "fingerprint": "f", "epoch": 1, "run": {}}))
    with pytest.raises(RecordError, match=r"1\.json: field 'status' of the score record is missing"):
        ScoreRecord.read(path)
    with pytest.raises(RecordError, match=r"run\.json: field 'solver' of the run record is missing"):
        RunRecord.from_dict({"epoch": 1}).require("solver", source=tmp_path / "run.json")
    with pytest.raises(RecordError, match=r"score\.json: run: field 'exit_code'"):
        ScoreRecord.from_dict({"task_id": "t", "solver": "a", "fingerprint": "f", "epoch": 1, "status": "pass",
                               "run": {"exit_code": "0"}}).run_record("score.json")
    with pytest.raises(RecordError, match="controls.json: a controls record must be a JSON object"):
        ControlsRecord.from_dict([], "controls.json")


# ----------------------------------------------------------------------------- one place


#: Modules allowed to assign a status constant, each for a reason that is not an attempt's verdict.
ALLOWED = {
    # the table itself
    "scoring/verdict.py": "the verdict table",
    # the constants are defined there
    "core/contract.py": "defines the statuses",
    # the gate's server pin: rows of a holdout whose server is not among those of its first scored
    # experiment are excluded over the runs table, from the holdout's memory of earlier experiments
    # (not from one attempt's records); it never touches infra_fail/timeout/tamper rows
    "gate/holdout_memory.py": "the gate's server pin over the runs table",
}


def _status_assignments(tree: ast.AST) -> list[int]:
    """Lines that assign a status constant (``PASS`` ... or its string) as a status: ``status =``,
    ``x["status"] =``, ``{"status": ...}``, ``status=...`` keywords, ``ScoreResult(...)``/``Verdict(...)``."""
    names = {"PASS", "FAIL", "TIMEOUT", "TAMPER", "INFRA_FAIL", "EXCLUDED"}

    def is_status(v: ast.AST | None) -> bool:
        return ((isinstance(v, ast.Name) and v.id in names) or (isinstance(v, ast.Constant) and v.value in STATUSES)
                or (isinstance(v, ast.IfExp) and (is_status(v.body) or is_status(v.orelse))))

    def is_status_target(t: ast.AST) -> bool:
        if isinstance(t, ast.Name | ast.Attribute):
            return (t.id if isinstance(t, ast.Name) else t.attr) == "status"
        if isinstance(t, ast.Subscript):
            keys = t.slice.elts if isinstance(t.slice, ast.Tuple) else [t.slice]
            return any(isinstance(k, ast.Constant) and k.value == "status" for k in keys)
        if isinstance(t, ast.Tuple):
            return any(is_status_target(e) for e in t.elts)
        return False

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(is_status_target(t) for t in node.targets):
            vals = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            if any(is_status(v) for v in vals):
                lines.append(node.lineno)
        elif isinstance(node, ast.Dict):
            if any(isinstance(k, ast.Constant) and k.value == "status" and is_status(v)
                   for k, v in zip(node.keys, node.values)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            if any(k.arg == "status" and is_status(k.value) for k in node.keywords):
                lines.append(node.lineno)
            fn = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if fn in ("ScoreResult", "Verdict") and node.args and is_status(node.args[0]):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_the_finder_finds_what_it_looks_for() -> None:
    src = ('status = TIMEOUT\nrow["status"] = EXCLUDED\nrec = {"status": TAMPER}\nrec.update(status=FAIL)\n'
           'ScoreResult(PASS, 1)\nruns.loc[ix, "status"] = EXCLUDED\nstatus, why = INFRA_FAIL, "x"\n'
           'ok = status == PASS\nx = {"status": s}\n')
    assert _status_assignments(ast.parse(src)) == [1, 2, 3, 4, 5, 6, 7]


def test_no_module_but_the_table_assigns_a_verdict() -> None:
    pkg = ROOT / "scripts" / "sealbench"
    found = {}
    for path in sorted(pkg.rglob("*.py")):
        rel = path.relative_to(pkg).as_posix()
        if rel in ALLOWED:
            continue
        lines = _status_assignments(ast.parse(path.read_text("utf-8")))
        if lines:
            found[rel] = lines
    assert found == {}, f"statuses assigned outside scoring/verdict.py (decide them there): {found}"
