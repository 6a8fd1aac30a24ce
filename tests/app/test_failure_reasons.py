"""Issue 13 point 3: an agent learns what it must write and what happens otherwise, an agent
that calls no server says so (``offline: true``) instead of being excluded for a missing
stamp, and every place that refuses a headline for lack of clean tasks names each solver's
most common failure with its counts ("flip: 24/24 infra_fail: command not found").

Offline is a claim the harness checks: a run of an ``offline: true`` agent that reached a
server (an endpoint, replies metered at the bridge) or ran unsandboxed (its network use cannot
be ruled out) is not offline, and without a healthy stamp it is excluded with the reason.
"""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import CAND, _config, build_spec, codes, write_experiment  # noqa: E402

from sealbench.app import cli  # noqa: E402
from sealbench.core import configuration, core  # noqa: E402
from sealbench.report import summaries  # noqa: E402
from sealbench.stages.stratify import build_runs  # noqa: E402

pytestmark = pytest.mark.unit

HEALTH = {"allowed_quota_states": ["ok"], "max_queue_ms": 60000, "max_retries": 3, "required_server_id": None}
GOOD_STAMP = {"server_id": "srv-1", "queue_ms": 0, "retries": 0, "quota_state": "ok", "route_changed": False}
NO_STAMP = {k: None for k in GOOD_STAMP}


# ------------------------------------------------------------------ offline: true (stratify)

def _score(stamp: dict, *, status: str = "fail", isolation: str = "bwrap", endpoint: str | None = None,
           metered: dict | None = None, tokens_source: str = "agent", tid: str = "t1") -> dict:
    """A score record as hidden_score writes it, with its run.json embedded."""
    return {"task_id": tid, "solver": "flip", "fingerprint": "f" * 16, "epoch": 1, "status": status,
            "reason": None if status == "pass" else "hidden tests: 2 failed", "visible_pass": False,
            "hidden_pass": status == "pass", "time_to_green_s": None,
            "run": {"role": "agent", "timed_out": False, "end_reason": "exit", "exit_code": 0, "wall_s": 5.0,
                    "time_box_s": 60.0, "stamp": dict(stamp), "usage": {}, "isolation": isolation,
                    "attempts": [], "endpoint": endpoint, "usage_metered": metered, "tokens_source": tokens_source}}


def _rows(score: dict, offline: bool | None) -> list[dict]:
    spec: dict[str, Any] = {"command": "flip"}
    if offline is not None:
        spec["offline"] = offline
    exp = {"pack_digest": "p" * 64, "config_full": {"agents": {"flip": spec}}}
    tasks = [{"task_id": score["task_id"], "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    return build_runs(exp, tasks, [], [score], HEALTH)


def test_offline_agent_without_a_stamp_is_not_excluded() -> None:
    [row] = _rows(_score(NO_STAMP), offline=True)
    assert row["status"] == "fail", row
    assert row["excluded_reason"] is None
    # the row says why it has no session: there was no server
    assert row["server_id"] == "offline"


def test_offline_agent_pass_without_a_stamp_counts_as_a_pass() -> None:
    [row] = _rows(_score(NO_STAMP, status="pass"), offline=True)
    assert row["status"] == "pass" and row["server_id"] == "offline"


def test_agent_without_offline_and_without_a_stamp_is_scored_with_a_note() -> None:
    """Issue 26 point 3 (was: excluded): a missing stamp is the agent's doing, so it is a note
    (``stamp_notes``) and the row keeps its scored status; a sandboxed run without an endpoint
    provably reached no server (``offline``), so it had no session to stamp (no note)."""
    for offline in (None, False):
        [row] = _rows(_score(NO_STAMP, isolation="bwrap"), offline=offline)
        assert row["status"] == "fail" and row["excluded_reason"] is None, row
        assert row["server_id"] == "offline" and row["stamp_notes"] is None
        [row] = _rows(_score(NO_STAMP, isolation="none"), offline=offline)
        assert row["status"] == "fail" and row["excluded_reason"] is None, row
        assert row["server_id"] is None and "stamp.json missing" in row["stamp_notes"]


def test_offline_agent_that_writes_a_stamp_has_it_noted() -> None:
    """Issue 26 point 3 (was: excluded, server_id from the stamp): the stamp's route change is
    a note; the server is the observed one (``offline``), not the stamp's ``srv-1``."""
    [row] = _rows(_score(dict(GOOD_STAMP, route_changed=True)), offline=True)
    assert row["status"] == "fail" and "route changed" in row["stamp_notes"]
    [row] = _rows(_score(GOOD_STAMP), offline=True)
    assert row["status"] == "fail" and row["server_id"] == "offline" and row["stamp_notes"] is None


@pytest.mark.parametrize("run", [
    {"endpoint": "127.0.0.1:8000"},
    {"endpoint": "127.0.0.1:8000", "metered": {"tokens_in": 900, "tokens_out": 120, "responses": 3,
                                                "responses_with_usage": 3, "responses_unparsed": 0},
     "tokens_source": "metered"},
    {"metered": {"tokens_in": 0, "tokens_out": 0, "responses": 1, "responses_with_usage": 0,
                 "responses_unparsed": 1}},
], ids=["endpoint", "metered_tokens", "bridge_replies"])
def test_offline_agent_that_used_the_endpoint_is_excluded_with_the_reason(run: dict) -> None:
    [row] = _rows(_score(NO_STAMP, **run), offline=True)
    assert row["status"] == "excluded", row
    why = row["excluded_reason"]
    assert "offline" in why and ("endpoint" in why or "bridge" in why), why
    # issue 26 point 3: the missing stamp is a note now, no longer part of the exclusion's reason
    assert "stamp.json missing" in row["stamp_notes"] and "stamp.json" not in why
    assert row["server_id"] is None  # nothing is invented for a run that reached a server


def test_offline_agent_that_used_the_endpoint_is_excluded_even_with_a_healthy_stamp() -> None:
    """A false declaration is not a healthy session: the row is excluded, naming it."""
    [row] = _rows(_score(GOOD_STAMP, endpoint="127.0.0.1:8000", tokens_source="metered",
                         metered={"tokens_in": 10, "tokens_out": 5, "responses": 1, "responses_with_usage": 1,
                                  "responses_unparsed": 0}), offline=True)
    assert row["status"] == "excluded" and "offline" in row["excluded_reason"]


def test_offline_agent_run_unsandboxed_cannot_prove_it_and_is_excluded() -> None:
    [row] = _rows(_score(NO_STAMP, isolation="none"), offline=True)
    assert row["status"] == "excluded"
    assert "offline" in row["excluded_reason"] and "sandbox" in row["excluded_reason"]


def test_offline_timeout_and_infra_fail_keep_their_status() -> None:
    s = _score(NO_STAMP, endpoint="127.0.0.1:8000", status="infra_fail")
    [row] = _rows(s, offline=True)
    assert row["status"] == "infra_fail"


def test_a_tampering_run_without_a_stamp_stays_tamper() -> None:
    """Leaving the stamp out (or spoiling it) must not turn a run caught tampering into an
    exclusion: CANDIDATE_TAMPERED counts tamper rows, and an excluded row is not one."""
    for offline in (None, True):
        for stamp in (NO_STAMP, dict(GOOD_STAMP, route_changed=True)):
            [row] = _rows(_score(stamp, status="tamper"), offline=offline)
            assert row["status"] == "tamper", (offline, stamp, row)


def test_config_schema_accepts_offline_as_a_boolean_only(tmp_path: Path) -> None:
    (tmp_path / "pack" / "tasks").mkdir(parents=True)
    cfg = copy.deepcopy(_config())
    cfg["pack"] = str(tmp_path / "pack")
    cfg["agents"][CAND]["offline"] = True
    assert configuration.validate_config(cfg)["agents"][CAND]["offline"] is True
    cfg["agents"][CAND]["offline"] = "yes"
    with pytest.raises(core.ConfigError, match="offline"):
        configuration.validate_config(cfg)


def test_config_refuses_offline_with_an_endpoint(tmp_path: Path) -> None:
    (tmp_path / "pack" / "tasks").mkdir(parents=True)
    cfg = copy.deepcopy(_config())
    cfg["pack"] = str(tmp_path / "pack")
    cfg["agents"][CAND].update(offline=True, endpoint="127.0.0.1:8000")
    with pytest.raises(core.ConfigError, match=r"field 'agents\.cand_agent\.offline': False was expected"):
        configuration.validate_config(cfg)


# -------------------------------------------------------- the dominant failure (summaries)

def _runs_frame(rows: list[tuple[str, str | None, str | None]], solver: str = "flip") -> pd.DataFrame:
    return pd.DataFrame([{"solver": solver, "role": "agent", "split": "holdout", "stratum": "xs",
                          "task_id": f"t{i}", "epoch": 1, "status": st, "reason": why, "excluded_reason": ex}
                         for i, (st, why, ex) in enumerate(rows)])


def test_failure_key_is_the_first_clause_truncated_sensibly() -> None:
    assert summaries.failure_key("command not found (exit 127); the task's controls ran") \
        == "command not found (exit 127)"
    assert summaries.failure_key(None) == "no reason recorded"
    long = "the harness could not run the attempt: " + "x " * 80
    key = summaries.failure_key(long)
    assert len(key) <= summaries.REASON_KEY_CHARS <= 120 and key.endswith("…")
    assert key.startswith("the harness could not run the attempt: x x") and not key.endswith(" …")
    # what run_agent writes for the runs it no longer starts: the words that matter survive the cut
    stopped = ("the harness could not run the attempt: stopped: the first 3 runs of flip all ended "
               "'command not found: flip' (exit 127); fix the command and rerun")
    assert summaries.failure_key(stopped).endswith("'command not found: flip' (exit 127)")
    assert summaries.failure_key("  two\n  lines  ") == "two lines"


def test_dominant_failure_counts_the_most_common_outcome_and_reason() -> None:
    runs = _runs_frame([("infra_fail", "command not found (exit 127)", None)] * 24)
    d = summaries.dominant_failure(runs, "flip", "holdout")
    assert d["sentence"] == "flip: 24/24 infra_fail: command not found (exit 127)"
    assert (d["runs"], d["status"], d["count"], d["reason_count"]) == (24, "infra_fail", 24, 24)


def test_dominant_failure_of_excluded_rows_is_why_they_were_excluded() -> None:
    runs = _runs_frame([("excluded", "fail before exclusion: hidden tests: 1 failed",
                         "stamp.json missing: the session cannot be checked")] * 20
                       + [("pass", None, None)] * 3 + [("fail", "hidden tests: 1 failed", None)])
    d = summaries.dominant_failure(runs, "flip", "holdout")
    assert d["sentence"] == "flip: 20/24 excluded: stamp.json missing: the session cannot be checked"


def test_dominant_failure_with_mixed_reasons_says_how_many_share_the_named_one() -> None:
    runs = _runs_frame([("fail", "hidden tests: 1 failed", None)] * 3 + [("fail", "visible tests timed out", None)] * 2
                       + [("timeout", "the worker was stopped at its 60s clock", None)])
    d = summaries.dominant_failure(runs, "flip", "holdout")
    assert d["sentence"] == "flip: 5/6 fail: hidden tests: 1 failed (3 of the 5)"


def test_dominant_failure_of_a_solver_that_always_passed() -> None:
    d = summaries.dominant_failure(_runs_frame([("pass", None, None)] * 4), "flip", "holdout")
    assert d["status"] is None and d["sentence"] == "flip: no failure (4/4 pass)"
    assert summaries.dominant_failure(_runs_frame([("pass", None, None)]), "other", "holdout") is None


# --------------------------------------- the refusals, `sealbench show` and the HTML report

CNF = "command not found (exit 127)"


def _all_infra(spec: dict) -> None:
    for r in spec["runs"]:
        if r["solver"] == CAND and r["split"] == "holdout":
            r.update(status="infra_fail", visible_pass=None, hidden_pass=None, reason=CNF)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_refusals_for_too_few_clean_tasks_name_the_dominant_failure(tmp_path: Path) -> None:
    spec = build_spec()
    _all_infra(spec)
    exp_dir, split_path, pack_hash = write_experiment(tmp_path, spec)
    from sealbench.gate import gate

    d, _card, report = gate.decide(exp_dir, split_path, pack_hash)
    assert {"TOO_FEW_CLEAN_TASKS", "STRATUM_TOO_SMALL"} <= set(codes(d))
    want = f"{CAND}: 9/9 infra_fail: {CNF}"
    for r in d["reasons"]:
        if r["code"] in ("TOO_FEW_CLEAN_TASKS", "STRATUM_TOO_SMALL"):
            assert want in r["sentence"], r["sentence"]
    assert want in report  # report.md lists the reasons


def test_stratum_too_small_names_the_failure_of_the_small_strata_rows(tmp_path: Path) -> None:
    from test_gate_refusals import decide, stratum_too_small

    spec = build_spec()
    stratum_too_small(spec)  # two of the candidate's three xs holdout rows excluded for their quota
    [r] = [r for r in decide(tmp_path, spec)["reasons"] if r["code"] == "STRATUM_TOO_SMALL"]
    assert f"{CAND}: 2/3 excluded: quota state 'exhausted' is not one of ['ok', 'unmetered']" in r["sentence"]


def test_show_prints_each_solvers_dominant_failure(tmp_path: Path, capsys) -> None:
    spec = build_spec()
    _all_infra(spec)
    exp_dir, split_path, pack_hash = write_experiment(tmp_path, spec)
    from sealbench.gate import gate

    d, _card, _report = gate.decide(exp_dir, split_path, pack_hash)
    d.pop("dominant_failures", None)  # an older decision: show reads runs.parquet beside it
    core.write_json(exp_dir / "decision.json", d)
    assert cli.main(["show", str(exp_dir)]) == 0
    out = _flat(capsys.readouterr().out)
    assert f"{CAND}: 9/9 infra_fail: {CNF}" in out
    assert "base_agent: 4/9 fail: hidden tests failed" in out


def test_show_prefers_the_decisions_own_field(tmp_path: Path, capsys) -> None:
    spec = build_spec()
    exp_dir, split_path, pack_hash = write_experiment(tmp_path, spec)
    from sealbench.gate import gate

    d, _card, _report = gate.decide(exp_dir, split_path, pack_hash)
    d["dominant_failures"] = [{"solver": CAND, "sentence": f"{CAND}: 1/1 tamper: recorded in the decision"}]
    core.write_json(exp_dir / "decision.json", d)
    assert cli.main(["show", str(exp_dir)]) == 0
    assert "recorded in the decision" in _flat(capsys.readouterr().out)


def test_html_decision_section_has_a_line_per_solver() -> None:
    from sealbench.report.report_html import section_decision

    d = {"publishable": False, "headline": None, "reasons": [], "notes": [],
         "dominant_failures": [{"solver": CAND, "sentence": f"{CAND}: 9/9 infra_fail: <{CNF}>"},
                               {"solver": "base_agent", "sentence": "base_agent: 3/9 fail: hidden tests failed"}]}
    html = section_decision(d)
    assert f"{CAND}: 9/9 infra_fail: &lt;{CNF}&gt;" in html
    assert "base_agent: 3/9 fail: hidden tests failed" in html


def test_dominant_failures_of_the_scored_split_cover_every_worker_not_the_controls() -> None:
    spec = build_spec()
    _all_infra(spec)
    runs = pd.DataFrame(spec["runs"])
    got = summaries.dominant_failures(runs, "holdout")
    assert [g["solver"] for g in got] == sorted(["base_agent", CAND])
    assert next(g for g in got if g["solver"] == CAND)["sentence"] == f"{CAND}: 9/9 infra_fail: {CNF}"
