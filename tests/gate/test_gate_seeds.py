"""The gate says what the seeds say (issue 11): one test per rule the gate used to get wrong.

Each test builds a synthetic experiment folder with the builder of ``test_gate_refusals`` (18
tasks, 9 in the holdout, xs/s/m x 3), changes the smallest thing that shows the rule, and
runs the real ``gate.decide`` on it; ledger tests go through ``append_ledger`` the way
``gate.main`` does. Seed 003's FIXTURE and seed 001's example report are run at the end.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import (  # noqa: E402
    BASE,
    CAND,
    _run,
    _set_status,
    _task,
    build_spec,
    codes,
    decide,
    write_experiment,
)

from sealbench.core import configuration  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.provenance import identity  # noqa: E402
from sealbench.provenance.ledger import append_ledger, read_ledger  # noqa: E402
from sealbench.stats import decision_rule  # noqa: E402


def notes(d: dict) -> list[str]:
    return [n["code"] for n in d["notes"]]


def ledger_decide(root: Path, spec: dict, ledger: Path) -> dict:
    decision, card, report = gate.decide(*write_experiment(root, spec), ledger=ledger)
    entry = decision.pop("ledger_entry")
    if entry is not None:
        append_ledger(ledger, entry, read_ledger(ledger))
    decision["_card"], decision["_report"] = card, report
    return decision


def holdout_ids(spec: dict, stratum: str | None = None) -> list[str]:
    return sorted(t["task_id"] for t in spec["tasks"]
                  if t["split"] == "holdout" and (stratum is None or t["stratum"] == stratum))


def set_agent(spec: dict, solver: str, passing: set[str]) -> None:
    """Make ``solver`` pass exactly the tasks in ``passing`` (every epoch), fail the rest."""
    for r in spec["runs"]:
        if r["solver"] == solver:
            _set_status(r, "pass" if r["task_id"] in passing else "fail")


def with_identity(spec: dict, name: str, files: dict[str, str], lineage: str | None = None) -> None:
    spec.setdefault("agent_identity", {})[name] = {"lineage": lineage or name, "files": files}


def rename_candidate(spec: dict, new: str) -> None:
    cfg = spec["cfg"]
    cfg["agents"][new] = dict(cfg["agents"].pop(CAND))
    cfg["candidate"] = new
    for r in spec["runs"]:
        if r["solver"] == CAND:
            r["solver"] = new


# ------------------------------------------------------------------ 2. lineage and reach


@pytest.mark.sandbox
def test_2_renamed_agent_with_the_same_code_file_is_holdout_tuned(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    first = build_spec()
    with_identity(first, CAND, {"agents/my_agent.py": "a" * 64})
    assert codes(ledger_decide(tmp_path / "a", first, ledger)) == []
    second = build_spec()
    rename_candidate(second, "fresh_name")
    second["cfg"]["agents"]["fresh_name"]["command"] += " --prompt v2"
    with_identity(second, "fresh_name", {"agents/my_agent.py": "b" * 64})
    d = ledger_decide(tmp_path / "b", second, ledger)
    assert "HOLDOUT_TUNED" in codes(d), codes(d)
    assert "agents/my_agent.py" in next(r for r in d["reasons"] if r["code"] == "HOLDOUT_TUNED")["sentence"]


@pytest.mark.unit
def test_2_declared_lineage_ties_a_renamed_agent(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    first = build_spec()
    with_identity(first, CAND, {}, lineage="acme-coder")
    ledger_decide(tmp_path / "a", first, ledger)
    second = build_spec()
    rename_candidate(second, "acme_v2")
    with_identity(second, "acme_v2", {}, lineage="acme-coder")
    assert "HOLDOUT_TUNED" in codes(ledger_decide(tmp_path / "b", second, ledger))


@pytest.mark.unit
def test_2_a_run_with_no_scored_row_does_not_reach_the_holdout(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    broken = build_spec()
    for r in broken["runs"]:
        if r["solver"] in (CAND, BASE):
            _set_status(r, "infra_fail")
    ledger_decide(tmp_path / "a", broken, ledger)
    assert not ledger.exists() or not ledger.read_text().strip(), "nothing reached the holdout"
    fixed = build_spec()
    fixed["cfg"]["agents"][CAND]["command"] += " --harness-fixed"
    d = ledger_decide(tmp_path / "b", fixed, ledger)
    assert "HOLDOUT_TUNED" not in codes(d), codes(d)


@pytest.mark.sandbox
def test_2_a_candidate_after_other_versions_carries_the_multiple_comparisons_note(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    other = build_spec()
    rename_candidate(other, "another_agent")
    d = ledger_decide(tmp_path / "b", other, ledger)
    assert codes(d) == [] and "HOLDOUT_REUSED" in notes(d)
    # issue 26: every version that reached the holdout before counts, the baseline's included
    # (it was 1, the old candidate only): the same count as the budget and the interval's correction
    assert d["holdout_reuse"]["count"] == 2
    assert "2 other agent version" in d["allowed_sentences"][0]


# --------------------------------------------------------------- 3. the pre-registration


@pytest.mark.unit
@pytest.mark.parametrize("knob,first,then", [("min_kept_tasks", 12, 6), ("mde", 0.1, 0.5),
                                             ("planning_discordance", 0.3, 0.6), ("oracle_runs", 3, 2),
                                             ("interval_method", "wilson", "clopper_pearson")])
def test_3_moving_a_decision_knob_after_a_scored_run_is_refused(tmp_path: Path, knob: str, first, then) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = build_spec()
    spec["cfg"][knob] = first
    ledger_decide(tmp_path / "a", spec, ledger)
    spec = build_spec()
    spec["cfg"][knob] = then
    d = ledger_decide(tmp_path / "b", spec, ledger)
    r = next((r for r in d["reasons"] if r["code"] == "PREREGISTRATION_CHANGED"), None)
    assert r is not None, codes(d)
    assert knob in r["sentence"] and json.dumps(first) in r["sentence"] and json.dumps(then) in r["sentence"]
    assert d["publishable"] is False


@pytest.mark.unit
def test_attack_declaring_an_agent_offline_after_its_runs_were_excluded_is_refused(tmp_path: Path) -> None:
    """`offline: true` decides whether a run without a stamp is excluded: set after the result,
    it would move the number; the holdout pins it like any decision knob."""
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    spec["cfg"]["agents"][CAND]["offline"] = True
    d = ledger_decide(tmp_path / "b", spec, ledger)
    r = next((r for r in d["reasons"] if r["code"] == "PREREGISTRATION_CHANGED"), None)
    assert r is not None and "offline_agents" in r["sentence"], codes(d)


@pytest.mark.sandbox
def test_3_lowering_min_kept_after_too_few_clean_tasks_does_not_make_a_headline(tmp_path: Path) -> None:
    """Seed 003: 'Lowering that floor after seeing the gap would convert a written control into
    a marketing dial.'"""
    ledger = tmp_path / "ledger.jsonl"
    spec = build_spec()
    spec["cfg"]["min_kept_tasks"] = 10
    assert "TOO_FEW_CLEAN_TASKS" in codes(ledger_decide(tmp_path / "a", spec, ledger))
    spec = build_spec()
    spec["cfg"]["min_kept_tasks"] = 6
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert d["headline"] is None and "PREREGISTRATION_CHANGED" in codes(d)
    # a new card name on the same holdout is no fresh start: the holdout keeps its pre-registration
    spec = build_spec()
    spec["cfg"].update(min_kept_tasks=6, card_name="second_card")
    d = ledger_decide(tmp_path / "c", spec, ledger)
    assert "PREREGISTRATION_CHANGED" in codes(d) and "no fresh start" in d["reasons"][-1]["sentence"]


# ------------------------------------------------------------------------- 4. BELOW_MDE


@pytest.mark.unit
def test_4_a_significant_delta_below_the_mde_names_no_winner(tmp_path: Path) -> None:
    spec = build_spec()
    # 6 wins, 0 losses over 9 tasks (2 per stratum): delta 0.667, exact p 0.031, interval > 0
    wins = {t for s in ("xs", "s", "m") for t in holdout_ids(spec, s)[:2]}
    set_agent(spec, CAND, wins)
    set_agent(spec, BASE, set())
    spec["cfg"].update(mde=0.7, planning_discordance=0.6, min_kept_tasks=6)
    d = decide(tmp_path, spec)
    c = d["comparison"]
    assert c["ci_low"] > 0 and c["mcnemar_p"] < 0.05 and not c["underpowered"]
    assert c["verdict"] == decision_rule.VERDICT_NONE and "BELOW_MDE" in c["verdict_label"]
    assert "BELOW_MDE" in notes(d)
    assert not any("passed more than" in s for s in d["allowed_sentences"])


# --------------------------------------------------------------- 5. degenerate interval


@pytest.mark.unit
def test_5_a_zero_width_interval_is_not_certainty(tmp_path: Path) -> None:
    spec = build_spec()
    # xs: 3 wins; s and m: ties. Every stratum has one paired outcome -> [0.333, 0.333]
    set_agent(spec, CAND, set(holdout_ids(spec, "xs")) | set(holdout_ids(spec, "s")))
    set_agent(spec, BASE, set(holdout_ids(spec, "s")))
    spec["cfg"].update(mde=0.3, planning_discordance=0.1)
    d = decide(tmp_path, spec)
    c = d["comparison"]
    assert c["ci_low"] == c["ci_high"] > 0 and not c["underpowered"]
    assert c["wins"] == 3 and c["losses"] == 0 and c["mcnemar_p"] == pytest.approx(0.25)
    assert c["verdict"] == decision_rule.VERDICT_NONE, "3 wins and 0 losses is p 0.25, not a winner"
    assert "ZERO_WIDTH_INTERVAL" in notes(d) and "not certainty" in c["interval_note"]
    assert "EXACT_TEST_NOT_SIGNIFICANT" in notes(d)


# ---------------------------------------------- 8. dummy beaten only on the easiest stratum


@pytest.mark.unit
def test_8_beating_the_dummy_only_on_xs_gets_no_pooled_headline(tmp_path: Path) -> None:
    spec = build_spec()
    set_agent(spec, CAND, set(holdout_ids(spec, "xs")))   # xs 3/3, s 0/3, m 0/3 -> 33% pooled
    set_agent(spec, BASE, set())
    spec["cfg"]["min_kept_tasks"] = 6
    d = decide(tmp_path, spec)
    assert d["publishable"] is True and d["headline"] is None
    assert "DUMMY_BEATEN_ON_SOME_STRATA" in notes(d)
    by = {x["stratum"]: x for x in d["dummy_deltas"]}
    assert by["xs"]["delta_vs_empty_diff"] == 1.0 and by["m"]["delta_vs_empty_diff"] == 0.0
    assert not by["m"]["beats_dummies"]
    assert any("do-nothing controls" in s and "m 0.00" in s for s in d["allowed_sentences"])


@pytest.mark.unit
def test_8_beating_the_dummy_only_on_the_hardest_stratum_is_not_called_easy(tmp_path: Path) -> None:
    """Issue 35.5: the note is named by what happened (some strata, which), never "easy"."""
    spec = build_spec()
    set_agent(spec, CAND, set(holdout_ids(spec, "m")))    # m 3/3 (the hardest), xs 0/3, s 0/3
    set_agent(spec, BASE, set())
    spec["cfg"]["min_kept_tasks"] = 6
    d = decide(tmp_path, spec)
    assert d["publishable"] is True and d["headline"] is None
    assert "DUMMY_BEATEN_ON_SOME_STRATA" in notes(d) and not any("EASY" in c for c in notes(d)), notes(d)
    note = next(n for n in d["notes"] if n["code"] == "DUMMY_BEATEN_ON_SOME_STRATA")
    assert note["strata_beaten"] == ["m"] and note["strata_not_beaten"] == ["xs", "s"]
    assert "only on m 1.00" in note["sentence"] and "easi" not in (note["sentence"] + note["meaning"]).lower()


@pytest.mark.unit
def test_8_beating_the_dummy_nowhere_is_said_beside_a_publishable_zero(tmp_path: Path) -> None:
    """Issue 35.5: a candidate no better than doing nothing on every stratum gets a note saying so
    (its pooled 0.000 stays publishable: it is a true number); one that beats them somewhere does not."""
    spec = build_spec()
    set_agent(spec, CAND, set())
    set_agent(spec, BASE, set())
    spec["cfg"]["min_kept_tasks"] = 6
    d = decide(tmp_path, spec)
    assert d["publishable"] is True and d["headline"] == 0.0
    assert "DUMMY_BEATEN_NOWHERE" in notes(d), notes(d)
    note = next(n for n in d["notes"] if n["code"] == "DUMMY_BEATEN_NOWHERE")
    assert "on no stratum" in note["sentence"] and "xs 0.00" in note["sentence"] and "m 0.00" in note["sentence"]
    honest = decide(tmp_path / "honest", build_spec())   # beats the controls on every stratum
    assert not {"DUMMY_BEATEN_NOWHERE", "DUMMY_BEATEN_ON_SOME_STRATA"} & set(notes(honest))


# ------------------------------------------------------------ 10. servers pinned per card


@pytest.mark.sandbox
def test_10_rows_from_another_server_than_the_first_scored_run_are_excluded(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    moved = holdout_ids(spec, "xs")[:2]
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] in moved:
            r["server_id"] = "srv-elsewhere"
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert "SERVER_PINNED" in notes(d)
    assert sorted(x.split(":")[1].split("#")[0] for x in d["server_pin"]["excluded"]) == moved
    assert d["n"] == 7, "the two foreign rows are excluded, not scored"
    # naming the servers in the config lifts the pin (the config decides, stratify excludes)
    spec["cfg"]["health"]["required_server_id"] = "srv-elsewhere"
    d2, _, _ = gate.decide(*write_experiment(tmp_path / "c", spec), ledger=ledger)
    assert d2["server_pin"] is None


@pytest.mark.unit
def test_attack_a_tampering_run_on_a_foreign_server_is_not_excluded_by_the_pin(tmp_path: Path) -> None:
    """The server pin excludes rows from another server: it must not turn the candidate's
    tampering or its timeouts into exclusions (an exclusion must not pay)."""
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    t_tamper, t_timeout = holdout_ids(spec, "xs")[:2]
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] in (t_tamper, t_timeout):
            r["server_id"] = "srv-elsewhere"
            _set_status(r, "tamper" if r["task_id"] == t_tamper else "timeout")
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert "CANDIDATE_TAMPERED" in codes(d), codes(d)
    assert d["server_pin"]["excluded"] == [], d["server_pin"]


# ------------------------------------------------------------------------- 12. smaller


@pytest.mark.unit
def test_12_a_single_stratum_pack_is_not_unbalanced(tmp_path: Path) -> None:
    spec = build_spec()
    for t in spec["tasks"]:
        t["stratum"] = "xs"
    for r in spec["runs"]:
        r["stratum"] = "xs"
    spec["cfg"]["strata"] = ["xs"]
    d = decide(tmp_path, spec)
    assert "UNBALANCED_STRATA" not in notes(d)
    assert d["publishable"] is True and d["headline"] is not None


@pytest.mark.unit
def test_12_exclusion_rate_over_scheduled_runs_and_stratum_deltas(tmp_path: Path) -> None:
    spec = build_spec()
    t = holdout_ids(spec, "m")[2]
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] == t:
            _set_status(r, "excluded")
    d = decide(tmp_path, spec)
    assert d["scheduled"] == 9 and d["exclusions"] == 1
    assert d["exclusion_rate_scheduled"] == pytest.approx(1 / 9, abs=1e-6)
    assert "1 of 9 scheduled" in d["allowed_sentences"][0]
    sd = {x["stratum"]: x for x in d["comparison"]["stratum_deltas"]}
    assert set(sd) == {"xs", "s", "m"} and sd["m"]["n"] == 2


@pytest.mark.unit
def test_12_missing_tokens_are_labelled_incomplete(tmp_path: Path) -> None:
    spec = build_spec()
    for r in spec["runs"]:
        if r["solver"] == CAND and r["stratum"] == "m":
            r["tokens_in"] = r["tokens_out"] = None
    d = decide(tmp_path, spec)
    rows = {(r["solver"], r["stratum"]): r for r in d["cost_per_pass"]}
    assert rows[(CAND, "m")]["tokens_status"].startswith("incomplete")
    assert rows[(CAND, "xs")]["tokens_status"] == "complete"


@pytest.mark.unit
def test_12_card_is_self_contained_with_temperature_and_model(tmp_path: Path) -> None:
    spec = build_spec()
    spec["cfg"]["envelope"].update(temperature=0.0, model="local/coder-7b")
    decision, card, report = gate.decide(*write_experiment(tmp_path, spec))
    assert card["candidate"]["name"] == CAND and card["candidate"]["command"] == "python -m cand"
    assert card["candidate"]["fingerprint"] == identity.agent_fingerprint(CAND, spec["cfg"]["agents"][CAND])
    assert card["headline"]["value"] == decision["headline"] and card["headline"]["publishable"] is True
    assert card["envelope"]["temperature"] == 0.0 and card["envelope"]["model"] == "local/coder-7b"
    assert card["preregistration"]["mde"] == 0.1
    assert "Headline: publishable per stratum only" not in report


@pytest.mark.unit
def test_12_envelope_temperature_and_model_are_valid_config(tmp_path: Path) -> None:
    cfg = configuration.load_config_file(ROOT / "config" / "config.yaml")
    raw = {k: v for k, v in cfg.items()}
    raw["envelope"] = dict(raw["envelope"], temperature=0.2, model="m-1")
    assert configuration.validate_config(raw, where="test")["envelope"]["model"] == "m-1"


# ------------------------------------------------------------------------- 13. the banner


@pytest.mark.unit
def test_13_the_banner_separates_headline_and_comparison(tmp_path: Path) -> None:
    decision, card, report = gate.decide(*write_experiment(tmp_path, build_spec()))
    assert "**Headline: publishable (" in report
    assert re.search(r"\*\*Comparison: delta [+-]\d\.\d{3} .* matched holdout tasks: no winner \(", report) and "needs 228" in report
    assert decision["comparison_summary"].startswith("no winner")


# ----------------------------------------------------------------- the seeds' own fixtures

# Seed 003's FIXTURE: (task, stratum, baseline_pass, candidate_pass, queue_ms, retries, quota, server, route_changed)
SEED3 = [
    ("t1", "repair", 1, 1, 800, 0, "ok", "srv-lab-a", False),
    ("t2", "repair", 0, 1, 900, 0, "ok", "srv-lab-a", False),
    ("t3", "repair", 1, 1, 1200, 0, "ok", "srv-lab-a", False),
    ("t4", "migration", 0, 0, 1500, 1, "ok", "srv-lab-a", False),
    ("t5", "migration", 0, 1, 9000, 0, "ok", "srv-lab-a", False),
    ("t6", "migration", 1, 1, 700, 0, "exhausted", "srv-lab-a", False),
    ("t7", "explain", 1, 1, 600, 0, "ok", "srv-lab-a", False),
    ("t8", "explain", 0, 1, 650, 0, "ok", "srv-other", False),
    ("t9", "explain", 1, 0, 700, 0, "ok", "srv-lab-a", True),
    ("t10", "repair", 0, 1, 500, 0, "within_budget", "srv-lab-a", False),
]
SEED3_HEALTH = {"allowed_quota_states": ["ok", "within_budget"], "max_queue_ms": 4000, "max_retries": 1,
                "required_server_id": "srv-lab-a"}


def seed3_spec() -> dict:
    """Seed 003's ten rows as a holdout, with its envelope; the session facts go through
    stratify's health check (the pipeline's exclusion rule), not through a copy of the seed's
    keep(). Since issue 26 point 3 only what the harness observed excludes a run, so the seed's
    rows (read "from the provider's live response") are the sessions the bridge observed
    (``observed_problems``), not agent-written stamps: the seed's decision is unchanged."""
    from sealbench.stages.stratify import observed_problems

    spec = build_spec()
    spec["cfg"].update(strata=["repair", "migration", "explain"], health=SEED3_HEALTH, min_kept_tasks=8,
                       mde=0.05, planning_discordance=0.3)
    tasks = [_task(tid, stratum, "holdout") for tid, stratum, *_ in SEED3]
    runs = []
    for t in tasks:
        runs.append(_run(t, "empty_diff", "control", 1, "fail"))
        runs.append(_run(t, "stub", "control", 1, "fail"))
        runs += [_run(t, "oracle", "control", e, "pass") for e in (1, 2, 3)]
    for (_tid, _stratum, b, c, q, retries, quota, server, route), t in zip(SEED3, tasks):
        stamp = {"server_id": server, "queue_ms": q, "retries": retries, "quota_state": quota,
                 "route_changed": route}
        for solver, ok in ((CAND, c), (BASE, b)):
            row = _run(t, solver, "agent", 1, "pass" if ok else "fail")
            row.update(stamp)
            problems = observed_problems(stamp, SEED3_HEALTH)
            if problems:
                _set_status(row, "excluded")
                row["reason"] = "; ".join(problems)
            runs.append(row)
    spec["tasks"], spec["runs"] = tasks, runs
    return spec


@pytest.mark.unit
def test_seed_003_fixture_gives_the_seeds_decision(tmp_path: Path) -> None:
    d = decide(tmp_path, seed3_spec())
    # the seed: headline None, reason too_few_clean_tasks, dropped t5 t6 t8 t9 (6 kept < 8)
    assert d["headline"] is None and d["publishable"] is False
    assert "TOO_FEW_CLEAN_TASKS" in codes(d)
    assert d["n"] == 6 and d["exclusions"] == 4
    # stricter, for a stated reason (docs/results.md "Seeds"): migration and explain keep 1 task each
    assert "STRATUM_TOO_SMALL" in codes(d)


@pytest.mark.unit
def test_seed_003_lowering_the_floor_afterwards_is_refused(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", seed3_spec(), ledger)
    spec = seed3_spec()
    spec["cfg"]["min_kept_tasks"] = 6
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert "PREREGISTRATION_CHANGED" in codes(d) and d["headline"] is None


def seed1_spec() -> dict:
    """Seed 001's example report: 8 scheduled holdout tasks, 7 attempted, 3 passed, 1 excluded
    (a missing interpreter), one stratum; the gold patch passes everywhere."""
    spec = build_spec()
    spec["cfg"].update(strata=["all"], min_kept_tasks=7)
    tasks = [_task(f"T{i:03d}", "all", "holdout") for i in range(1, 9)] + \
            [_task(f"U{i:03d}", "all", "tune") for i in range(1, 5)]
    runs = []
    for t in tasks:
        runs.append(_run(t, "empty_diff", "control", 1, "fail"))
        runs.append(_run(t, "stub", "control", 1, "fail"))
        runs += [_run(t, "oracle", "control", e, "pass") for e in (1, 2, 3)]
    for i, t in enumerate(tasks):
        status = "pass" if i < 3 else ("excluded" if i == 7 else "fail")
        runs.append(_run(t, CAND, "agent", 1, status))
        runs.append(_run(t, BASE, "agent", 1, "fail"))
    spec["tasks"], spec["runs"] = tasks, runs
    return spec


@pytest.mark.unit
def test_seed_001_example_report_gives_the_seeds_decision(tmp_path: Path) -> None:
    d = decide(tmp_path, seed1_spec())
    # the seed: publishable, holdout_pass_rate 0.429 (3/7 attempted), exclusion_rate 0.125 (1/8 scheduled)
    assert d["publishable"] is True, codes(d)
    assert d["headline"] == pytest.approx(0.428571, abs=1e-6)
    assert d["scheduled"] == 8 and d["exclusions"] == 1 and d["exclusion_rate_scheduled"] == 0.125
    assert "UNBALANCED_STRATA" not in notes(d)
    assert "1 of 8 scheduled" in d["allowed_sentences"][0]
