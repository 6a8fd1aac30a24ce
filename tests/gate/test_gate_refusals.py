"""Every refusal code of the gate, one trigger each, on a synthetic experiment folder.

``build_spec`` makes a clean, internally consistent experiment (18 tasks, xs/s/m x 6, 3 per
stratum in the holdout; controls that behave; a candidate and a baseline sandboxed with
``bwrap``, inside the envelope, with healthy stamps). ``write_experiment`` writes it the way
the pipeline does: experiment.json, tables/{tasks,runs,strata}.parquet (strata from
``stratify.build_strata``), the split manifest and PACK_HASH.txt. Each mutator changes the
smallest consistent thing that triggers its code; where the pipeline cannot produce the
trigger alone (a flaky gold patch also fails an oracle run; a weak test is a passing empty
diff), the other code it implies is listed as expected too.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from sealbench.core import configuration, core, tables  # noqa: E402
from sealbench.core.refusals import REFUSALS  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.isolation.toolchain import toolchain_digest  # noqa: E402
from sealbench.provenance import identity  # noqa: E402
from sealbench.provenance.ledger import append_ledger, read_ledger  # noqa: E402
from sealbench.stages import split  # noqa: E402
from sealbench.stages.stratify import build_strata  # noqa: E402
from sealbench.stats import decision_rule, power  # noqa: E402

STRATA = ["xs", "s", "m"]
CAND, BASE = "cand_agent", "base_agent"
PACK_DIGEST = "p" * 64
# Per stratum: how many of its 6 tasks (in id order) the candidate / the baseline pass.
CAND_PASSES = {"xs": 5, "s": 4, "m": 2}
BASE_PASSES = {"xs": 4, "s": 3, "m": 2}

# Codes the lead engineer is adding to gate.py right now (the ledger codes and the strata
# balance check); their triggers are not written here yet: the lead adds them to MUTATORS and
# drops them from this set. LEDGER_UNREADABLE appeared in gate.py with the ledger codes while
# this file was written, so it is pending too. (UNBALANCED_STRATA is currently a note in
# NOTES, not a refusal; removing it from the set is harmless either way.)
PENDING_CODES = {"HOLDOUT_TUNED", "DENOMINATOR_MOVED", "ENVELOPE_CHANGED", "UNBALANCED_STRATA",
                 "LEDGER_UNREADABLE"}


# ------------------------------------------------------------------------------ builder


def _config() -> dict[str, Any]:
    """A full config as the pipeline holds it: config.yaml's keys plus every schema default."""
    return {
        **configuration.config_defaults(),
        "pack": "pack", "seed": 20261129, "holdout_frac": 0.5, "score_split": "holdout",
        "agents": {CAND: {"command": "python -m cand"}, BASE: {"command": "python -m base"}},
        "candidate": CAND, "baseline": BASE, "epochs": 1, "humans": [], "sandbox": "required",
        "stop_on_green": False, "log_cap_bytes": 1 << 20, "oracle_runs": 3, "score_timeout_s": 300,
        "envelope": {"max_wall_s": 2700, "max_steps": 60, "max_output_tokens": 8192},
        "health": {"allowed_quota_states": ["ok", "unmetered"], "max_queue_ms": 60000, "max_retries": 3,
                   "required_server_id": None},
        "mde": 0.1, "planning_discordance": 0.3,
        # 9 holdout tasks are clean; 6 leaves room for one task lost to a single mutation.
        "min_kept_tasks": 6,
        "strata": list(STRATA),
    }


def _task(tid: str, stratum: str, split_name: str) -> dict[str, Any]:
    return {"task_id": tid, "stratum": stratum, "split": split_name, "task_digest": f"{tid:0<64}"[:64],
            "title": f"task {tid}", "time_box_sec": 1800, "leak_suspect": False, "leak_checks": "denylist;ngram13:humaneval", "oracle_ok": True,
            "oracle_passes": 3, "oracle_runs": 3, "weak_test": False, "stub_passes": False, "flaky": False,
            "control_infra_fail": False, "import_outside": None}


def _run(task: dict, solver: str, role: str, epoch: int, status: str) -> dict[str, Any]:
    row: dict[str, Any] = {c[0]: None for c in tables.RUNS_COLUMNS}
    row.update({"task_id": task["task_id"], "stratum": task["stratum"], "split": task["split"], "solver": solver,
                "role": role, "fingerprint": f"fp-{solver}", "epoch": epoch, "status": status,
                "visible_pass": status == "pass", "hidden_pass": status == "pass",
                "task_digest": task["task_digest"], "pack_digest": PACK_DIGEST,
                "reason": None if status == "pass" else "hidden tests failed", "patch_bytes": 0})
    if role == "control":
        row["end_reason"] = "control"
    else:
        row.update({"wall_s": 120.0, "time_box_s": 1800.0, "end_reason": "exit", "exit_code": 0, "steps": 12,
                    "tokens_in": 5000, "tokens_out": 900, "cost_usd": 0.01, "steer_count": 0,
                    "visible_attempts": 2, "patch_bytes": 300, "isolation": "bwrap", "over_envelope": False,
                    "server_id": "srv-1", "queue_ms": 100, "retries": 0, "quota_state": "ok",
                    "route_changed": False})
    return row


def build_spec() -> dict[str, Any]:
    """The clean experiment as plain data: {"cfg", "tasks", "runs"}; mutators edit it in place."""
    tasks, runs = [], []
    for h in STRATA:
        for i in range(6):
            tasks.append(_task(f"{h}{i + 1:02d}", h, "holdout" if i % 2 == 0 else "tune"))
    for t in tasks:
        runs.append(_run(t, "empty_diff", "control", 1, "fail"))
        runs.append(_run(t, "stub", "control", 1, "fail"))
        runs += [_run(t, "oracle", "control", e, "pass") for e in (1, 2, 3)]
    for t in tasks:
        i = int(t["task_id"][len(t["stratum"]):]) - 1
        runs.append(_run(t, CAND, "agent", 1, "pass" if i < CAND_PASSES[t["stratum"]] else "fail"))
        runs.append(_run(t, BASE, "agent", 1, "pass" if i < BASE_PASSES[t["stratum"]] else "fail"))
    return {"cfg": _config(), "tasks": tasks, "runs": runs}


def write_experiment(root: Path, spec: dict[str, Any]) -> tuple[Path, Path, Path]:
    """Write spec as the pipeline would; returns (exp_dir, split_path, pack_hash_path)."""
    cfg, tasks, runs = spec["cfg"], spec["tasks"], spec["runs"]
    manifest = {"seed": cfg["seed"], "holdout_frac": cfg["holdout_frac"],
                "tune": sorted(t["task_id"] for t in tasks if t["split"] == "tune"),
                "holdout": sorted(t["task_id"] for t in tasks if t["split"] == "holdout")}
    if spec.get("slices"):  # a pack grown by split --extend
        manifest["slices"] = spec["slices"]
    split_path = root / "split" / "split_manifest.json"
    core.write_json(split_path, manifest)
    pack_hash = root / "packs" / PACK_DIGEST / "PACK_HASH.txt"
    pack_hash.parent.mkdir(parents=True, exist_ok=True)
    pack_hash.write_text("# sealbench pack hash\n" + PACK_DIGEST + "\n")
    tc = {"python": "3.11.0", "implementation": "cpython", "executable": "/usr/bin/python3",
          "packages": ["numpy==2.0.0", "pandas==2.2.0"]}
    config_id = {k: v for k, v in cfg.items() if k != "pack"}
    ident = {
        "pack_digest": PACK_DIGEST, "split_manifest_digest": split.manifest_digest(manifest),
        "config": config_id, "code": "c" * 16, "toolchain_digest": toolchain_digest(tc),
        "agent_fingerprints": {a: identity.agent_fingerprint(a, cfg["agents"][a]) for a in cfg["agents"]},
        "human_sessions": [],
    }
    exp = dict(ident, exp_id=core.sha256_text(core.canonical_json(ident))[:16], pack=cfg["pack"],
               task_digests={t["task_id"]: t["task_digest"] for t in tasks},
               oracle_commands=[{"commands": "visible: pytest -q visible_tests | hidden: pytest -q hidden_tests",
                                 "tasks": sorted(t["task_id"] for t in tasks)}],
               denylist_lines=2, denylist_digest="d" * 64,
               strata_of={t["task_id"]: t["stratum"] for t in tasks}, toolchain=tc, config_full=cfg,
               agent_identity=spec.get("agent_identity", {}))
    exp_dir = root / "experiments" / exp["exp_id"]
    core.write_json(exp_dir / "experiment.json", exp)
    tables.write_table(tasks, "tasks", exp_dir / "tables" / "tasks.parquet")
    tables.write_table(runs, "runs", exp_dir / "tables" / "runs.parquet")
    tables.write_table(build_strata(runs, cfg["strata"]), "strata", exp_dir / "tables" / "strata.parquet")
    return exp_dir, split_path, pack_hash


def decide(root: Path, spec: dict[str, Any]) -> dict:
    decision, card, report = gate.decide(*write_experiment(root, spec))
    assert card["dataset"]["n_tasks"] == len(spec["tasks"])
    assert isinstance(report, str) and report
    return decision


def codes(decision: dict) -> list[str]:
    return [r["code"] for r in decision["reasons"]]


# ---------------------------------------------------------------------- spec helpers


def _task_of(spec: dict, tid: str) -> dict:
    return next(t for t in spec["tasks"] if t["task_id"] == tid)


def _rows(spec: dict, tid: str, solver: str) -> list[dict]:
    rows = [r for r in spec["runs"] if r["task_id"] == tid and r["solver"] == solver]
    assert rows, (tid, solver)
    return rows


def _set_status(row: dict, status: str) -> None:
    row["status"] = status
    row["visible_pass"] = row["hidden_pass"] = status == "pass"
    row["reason"] = None if status == "pass" else f"{status} (test)"


HOLDOUT_TASK = "s01"  # tasks 01, 03, 05 of each stratum are in the holdout
TUNE_TASK = "s02"


# ------------------------------------------------------------------------ mutators


def leak_suspect(spec: dict) -> None:
    _task_of(spec, "m03")["leak_suspect"] = True


def oracle_fails(spec: dict) -> None:
    # every oracle run fails (so the task is broken, not flaky)
    for r in _rows(spec, TUNE_TASK, "oracle"):
        _set_status(r, "fail")
    _task_of(spec, TUNE_TASK).update(oracle_ok=False, oracle_passes=0)


def stub_passes(spec: dict) -> None:
    _set_status(_rows(spec, "xs02", "stub")[0], "pass")
    _task_of(spec, "xs02")["stub_passes"] = True


def control_infra_fail(spec: dict) -> None:
    _set_status(_rows(spec, "m04", "empty_diff")[0], "infra_fail")
    _task_of(spec, "m04")["control_infra_fail"] = True


def imports_outside(spec: dict) -> None:
    # the controls' tests imported the package under test from an installed copy
    control_infra_fail(spec)
    _task_of(spec, "m04")["import_outside"] = "numlib from /venv/site-packages/numlib/__init__.py"


def make_weak_test(spec: dict, tid: str) -> None:
    # a weak test *is* an empty diff that passes, which is also a passing do-nothing control
    _set_status(_rows(spec, tid, "empty_diff")[0], "pass")
    _task_of(spec, tid)["weak_test"] = True


def make_flaky(spec: dict, tid: str) -> None:
    # a flaky gold patch disagrees between runs, so it also failed at least one oracle run
    _set_status(_rows(spec, tid, "oracle")[1], "fail")
    _task_of(spec, tid).update(flaky=True, oracle_ok=False, oracle_passes=2)


def weak_test_in_holdout(spec: dict) -> None:
    make_weak_test(spec, HOLDOUT_TASK)


def flaky_in_holdout(spec: dict) -> None:
    make_flaky(spec, HOLDOUT_TASK)


def score_on_tune(spec: dict) -> None:
    spec["cfg"]["score_split"] = "tune"


def stratum_too_small(spec: dict) -> None:
    # two of the candidate's three xs holdout rows fall outside the health envelope (excluded)
    for tid in ("xs03", "xs05"):
        row = _rows(spec, tid, CAND)[0]
        row.update(quota_state="exhausted", excluded_reason="quota state 'exhausted' is not one of ['ok', 'unmetered']",
                   reason=f"{row['status']} before exclusion", status="excluded")


def envelope_blank(spec: dict) -> None:
    spec["cfg"]["envelope"]["max_output_tokens"] = None


def min_kept_too_high(spec: dict) -> None:
    spec["cfg"]["min_kept_tasks"] = 10


def candidate_without_rows(spec: dict) -> None:
    # the candidate ran only on the tune split
    spec["runs"] = [r for r in spec["runs"] if not (r["solver"] == CAND and r["split"] == "holdout")]


def unsandboxed_agent(spec: dict) -> None:
    _rows(spec, "m05", BASE)[0]["isolation"] = "none"


def candidate_over_envelope(spec: dict) -> None:
    _rows(spec, "xs05", CAND)[0].update(steps=61, over_envelope=True)


def candidate_abstains_on_failures(spec: dict) -> None:
    # the candidate passes the *01 and *03 holdout tasks and fails the three *05 (6/9); it
    # abstains on those three (two route changes, one infra_fail): 6/6 if abstention paid
    for r in spec["runs"]:
        if r["solver"] == CAND and r["split"] == "holdout":
            _set_status(r, "fail" if r["task_id"].endswith("05") else "pass")
    for tid in ("xs05", "s05"):
        _rows(spec, tid, CAND)[0].update(route_changed=True, status="excluded",
                                         excluded_reason="the route changed during the session (or is unknown)")
    _rows(spec, "m05", CAND)[0].update(status="infra_fail")


def candidate_tampers(spec: dict) -> None:
    # one forged run among passes (a canary failed): the rest of its numbers are not trusted
    _rows(spec, "s03", CAND)[0].update(status="tamper", tamper_paths="hidden_tests/test_x.py")


def no_task_carries_decoys(spec: dict) -> None:
    # every task's controls made no decoy (decoys_per_task 0, or none held): a forged pass would pass
    for t in spec["tasks"]:
        t.update(decoys=0, decoys_why_none="no candidate held")


def baseline_tampers(spec: dict) -> None:
    _rows(spec, "s03", BASE)[0].update(status="tamper", tamper_paths="hidden_tests/test_x.py")


# code -> (mutator, every code the mutated pack must raise)
MUTATORS: dict[str, tuple[Callable[[dict], None], set[str]]] = {
    "LEAK_SUSPECT": (leak_suspect, {"LEAK_SUSPECT"}),
    "ORACLE_FAILED": (oracle_fails, {"ORACLE_FAILED"}),
    "DUMMY_PASSED": (stub_passes, {"DUMMY_PASSED"}),
    "CONTROL_INFRA_FAIL": (control_infra_fail, {"CONTROL_INFRA_FAIL"}),
    "TASK_IMPORTS_OUTSIDE": (imports_outside, {"TASK_IMPORTS_OUTSIDE", "CONTROL_INFRA_FAIL"}),
    "WEAK_TEST_IN_SLICE": (weak_test_in_holdout, {"WEAK_TEST_IN_SLICE", "DUMMY_PASSED"}),
    "FLAKY_IN_SLICE": (flaky_in_holdout, {"FLAKY_IN_SLICE", "ORACLE_FAILED"}),
    "TUNE_SPLIT": (score_on_tune, {"TUNE_SPLIT"}),
    "STRATUM_TOO_SMALL": (stratum_too_small, {"STRATUM_TOO_SMALL"}),
    "ENVELOPE_INCOMPLETE": (envelope_blank, {"ENVELOPE_INCOMPLETE"}),
    "TOO_FEW_CLEAN_TASKS": (min_kept_too_high, {"TOO_FEW_CLEAN_TASKS"}),
    # no candidate rows also empties every candidate stratum and leaves no clean task
    "NO_CANDIDATE_ROWS": (candidate_without_rows, {"NO_CANDIDATE_ROWS", "STRATUM_TOO_SMALL", "TOO_FEW_CLEAN_TASKS"}),
    "UNSANDBOXED": (unsandboxed_agent, {"UNSANDBOXED"}),
    "OVER_ENVELOPE": (candidate_over_envelope, {"OVER_ENVELOPE"}),
    "EXCLUSIONS_DECIDE": (candidate_abstains_on_failures, {"EXCLUSIONS_DECIDE"}),
    "CANDIDATE_TAMPERED": (candidate_tampers, {"CANDIDATE_TAMPERED"}),
    "DECOYS_NONE": (no_task_carries_decoys, {"DECOYS_NONE"}),
}


@pytest.mark.unit
def test_tasks_without_decoys_beside_covered_ones_are_a_note_not_a_refusal(tmp_path: Path) -> None:
    """The honest case beside DECOYS_NONE: most tasks carry decoys, two do not — publishable, with
    the DECOYS_PARTIAL note naming the two."""
    spec = build_spec()
    for t in spec["tasks"]:
        t.update(decoys=2, decoys_why_none=None)
    bare = [t for t in spec["tasks"] if t["split"] == "holdout"][:2]
    for t in bare:
        t.update(decoys=0, decoys_why_none="no candidate held")
    d = decide(tmp_path, spec)
    assert d["publishable"] is True and "DECOYS_NONE" not in codes(d), d["reasons"]
    note = next(n for n in d["notes"] if n["code"] == "DECOYS_PARTIAL")
    assert all(t["task_id"] in note["sentence"] for t in bare), note


@pytest.mark.unit
def test_a_tampering_baseline_is_a_note_not_a_refusal(tmp_path: Path) -> None:
    spec = build_spec()
    baseline_tampers(spec)
    d = decide(tmp_path, spec)
    assert "CANDIDATE_TAMPERED" not in codes(d)
    assert "TAMPER" in [n["code"] for n in d["notes"]]


# --------------------------------------------------------------------------- tests


@pytest.mark.unit
def test_clean_builder_config_is_a_valid_config(tmp_path: Path) -> None:
    cfg = copy.deepcopy(_config())
    (tmp_path / "pack" / "tasks").mkdir(parents=True)
    cfg["pack"] = str(tmp_path / "pack")
    assert configuration.validate_config(cfg) == cfg  # every key given, nothing defaulted, nothing unknown


@pytest.mark.unit
def test_clean_experiment_is_publishable_with_no_reason(tmp_path: Path) -> None:
    """The 'absent' case of every code: nothing is wrong, nothing is refused."""
    spec = build_spec()
    d = decide(tmp_path, spec)
    assert d["reasons"] == []
    assert d["publishable"] is True
    holdout_passes = sum(1 for r in spec["runs"] if r["solver"] == CAND and r["split"] == "holdout"
                         and r["status"] == "pass")
    assert d["n"] == 9 and d["passes"] == holdout_passes == 6
    assert d["headline"] == pytest.approx(holdout_passes / 9)
    assert [p["n"] for p in d["per_stratum"]] == [3, 3, 3]
    assert d["allowed_sentences"], "a publishable decision allows the headline sentence"


@pytest.mark.sandbox
@pytest.mark.parametrize("code", sorted(MUTATORS))
def test_refusal_code_is_raised_by_its_trigger(tmp_path: Path, code: str) -> None:
    mutate, expected = MUTATORS[code]
    spec = build_spec()
    mutate(spec)
    d = decide(tmp_path, spec)
    assert code in codes(d)
    assert set(codes(d)) == expected, f"{code}: unexpected side effects {codes(d)}"
    assert d["publishable"] is False
    assert d["headline"] is None
    assert all(r["meaning"] == REFUSALS[r["code"]] and r["sentence"] for r in d["reasons"])


@pytest.mark.unit
def test_every_refusal_code_has_a_trigger_test() -> None:
    # The ledger codes are triggered through the ledger file: see LEDGER_TRIGGERS below.
    # The draw record's and the budget's codes are triggered in tests/app/test_draws_budget.py.
    assert set(MUTATORS) | set(LEDGER_TRIGGERS) | set(DRAW_TRIGGERS) == set(REFUSALS)


# ------------------------------------------------------------------------- the ledger

def _ledger_decide(root: Path, spec: dict, ledger: Path) -> dict:
    """Decide with the ledger and append like gate.main does; return the decision."""
    decision, _, _ = gate.decide(*write_experiment(root, spec), ledger=ledger)
    entry = decision.pop("ledger_entry")
    if entry is not None:
        append_ledger(ledger, entry, read_ledger(ledger))
    return decision


def _retune(spec: dict) -> None:
    spec["cfg"]["agents"][CAND]["command"] += " --tuned"


def _move_denominator(spec: dict) -> None:
    _task_of(spec, "xs01")["task_digest"] = "e" * 64


def _change_envelope(spec: dict) -> None:
    spec["cfg"]["envelope"]["max_steps"] += 1


def _lower_min_kept(spec: dict) -> None:
    spec["cfg"]["min_kept_tasks"] -= 1


def _truncate(ledger: Path) -> None:
    ledger.write_bytes(ledger.read_bytes()[:-40])


def _grow_pack(spec: dict) -> None:
    """split --extend added xs07 to the holdout: slice 2, scored under the card of slice 1."""
    t = _task("xs07", "xs", "holdout")
    spec["tasks"].append(t)
    spec["runs"] += [_run(t, "empty_diff", "control", 1, "fail"), _run(t, "stub", "control", 1, "fail")]
    spec["runs"] += [_run(t, "oracle", "control", e, "pass") for e in (1, 2, 3)]
    spec["runs"] += [_run(t, CAND, "agent", 1, "pass"), _run(t, BASE, "agent", 1, "fail")]
    spec["slices"] = [{"slice": 2, "added": {"tune": [], "holdout": ["xs07"]}, "date": "2026-11-30",
                       "pack_digest": "q" * 64, "seed": spec["cfg"]["seed"],
                       "holdout_frac": spec["cfg"]["holdout_frac"], "method": "test"}]


#: Codes whose trigger tests live in tests/app/test_draws_budget.py (a record file of their own).
DRAW_TRIGGERS = {"REDRAWN": "test_a_first_draw_that_ended_without_a_recorded_outcome_is_refused",
                 "DRAW_RECORD_UNREADABLE": "test_a_scored_draw_missing_from_both_copies_is_refused_and_old_runs_are_not",
                 "HOLDOUT_EXHAUSTED": "test_versions_under_new_names_and_paths_exhaust_the_budget"}


LEDGER_TRIGGERS: dict[str, Callable] = {
    "HOLDOUT_TUNED": _retune,
    "DENOMINATOR_MOVED": _move_denominator,
    "ENVELOPE_CHANGED": _change_envelope,
    "PREREGISTRATION_CHANGED": _lower_min_kept,
    "LEDGER_UNREADABLE": None,
    "CARD_ON_EARLIER_SLICE": _grow_pack,  # more in tests/app/test_split_extend.py
}


@pytest.mark.sandbox
@pytest.mark.parametrize("code", ["HOLDOUT_TUNED", "DENOMINATOR_MOVED", "ENVELOPE_CHANGED", "PREREGISTRATION_CHANGED",
                                  "LEDGER_UNREADABLE", "CARD_ON_EARLIER_SLICE"])
def test_ledger_refusals(tmp_path: Path, code: str) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    first = _ledger_decide(tmp_path / "a", build_spec(), ledger)
    assert codes(first) == [] and len(ledger.read_text().splitlines()) == 1
    again = _ledger_decide(tmp_path / "b", build_spec(), ledger)
    assert codes(again) == [] and len(ledger.read_text().splitlines()) == 1, "a rerun appends nothing"
    spec = build_spec()
    if code == "LEDGER_UNREADABLE":
        _truncate(ledger)
    else:
        LEDGER_TRIGGERS[code](spec)
    d = _ledger_decide(tmp_path / "c", spec, ledger)
    assert code in codes(d) and d["publishable"] is False


@pytest.mark.unit
def test_tune_scoring_does_not_touch_the_ledger(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = build_spec()
    spec["cfg"]["score_split"] = "tune"
    _ledger_decide(tmp_path / "a", spec, ledger)
    assert not ledger.exists()


# ---------------------------------------------------------------------------- notes

@pytest.mark.unit
def test_unbalanced_strata_withholds_the_pooled_headline(tmp_path: Path) -> None:
    spec = build_spec()
    for t in spec["tasks"]:  # every xs task in the holdout, one s task out: xs is 6 of 11
        if t["stratum"] == "xs":
            t["split"] = "holdout"
    next(t for t in spec["tasks"] if t["stratum"] == "s" and t["split"] == "holdout")["split"] = "tune"
    for r in spec["runs"]:
        r["split"] = _task_of(spec, r["task_id"])["split"]
    d = decide(tmp_path, spec)
    assert "UNBALANCED_STRATA" in [n["code"] for n in d["notes"]]
    assert d["publishable"] is True and d["headline"] is None
    assert d["allowed_sentences"] and "per stratum" in d["allowed_sentences"][0]
    balanced = decide(tmp_path / "b", build_spec())
    assert "UNBALANCED_STRATA" not in [n["code"] for n in balanced["notes"]] and balanced["headline"] is not None


@pytest.mark.unit
@pytest.mark.parametrize("mutate", [make_weak_test, make_flaky], ids=["weak_test", "flaky"])
def test_weak_or_flaky_task_outside_the_scored_split_is_not_a_slice_refusal(tmp_path: Path, mutate) -> None:
    spec = build_spec()
    mutate(spec, TUNE_TASK)
    got = set(codes(decide(tmp_path, spec)))
    assert not got & {"WEAK_TEST_IN_SLICE", "FLAKY_IN_SLICE"}
    assert got  # the pack-wide control check still refuses (DUMMY_PASSED / ORACLE_FAILED)


# ------------------------------------------------------------------ paired comparison


def _dominant_candidate(spec: dict) -> None:
    """The candidate passes every task, the baseline none."""
    for r in spec["runs"]:
        if r["solver"] in (CAND, BASE):
            _set_status(r, "pass" if r["solver"] == CAND else "fail")


@pytest.mark.unit
def test_winner_named_only_when_interval_excludes_zero_and_pack_is_powered(tmp_path: Path) -> None:
    spec = build_spec()
    _dominant_candidate(spec)
    spec["cfg"].update(mde=0.5, planning_discordance=0.5)
    n_req = power.required_n_miller(0.5, 0.5)[1]
    assert n_req <= 9
    d = decide(tmp_path, spec)
    c = d["comparison"]
    assert d["reasons"] == [] and d["publishable"] is True
    assert c["matched_tasks"] == 9 and c["power"]["required_n_miller"] == n_req
    assert c["ci_low"] > 0
    assert c["verdict"] == decision_rule.VERDICT_CANDIDATE and c["underpowered"] is False
    assert c["verdict_label"] == decision_rule.VERDICT_CANDIDATE
    assert any(s.startswith(f"On these 9 holdout tasks, {CAND} passed more than {BASE}")
               for s in d["allowed_sentences"])
    assert not any(n["code"] == "UNDERPOWERED" for n in d["notes"])


@pytest.mark.unit
def test_interval_excluding_zero_but_underpowered_is_no_winner(tmp_path: Path) -> None:
    spec = build_spec()
    _dominant_candidate(spec)  # default mde 0.1 / psi 0.3 -> n_required 228 > 9
    d = decide(tmp_path, spec)
    c = d["comparison"]
    assert c["ci_low"] > 0  # the interval alone would name the candidate
    assert c["underpowered"] is True
    assert c["verdict"] == decision_rule.VERDICT_NONE
    assert c["verdict_label"] == "NO_WINNER + UNDERPOWERED"
    assert any(n["code"] == "UNDERPOWERED" for n in d["notes"])
    assert not any("passed more than" in s for s in d["allowed_sentences"])
    assert any(r["sentence"] == f"{CAND} is better than {BASE}." for r in d["refused_sentences"])


@pytest.mark.unit
def test_interval_including_zero_is_no_winner_even_when_powered(tmp_path: Path) -> None:
    spec = build_spec()  # the clean pack: delta 1/9 over 9 holdout tasks, interval spans 0
    spec["cfg"].update(mde=0.5, planning_discordance=0.5)
    d = decide(tmp_path, spec)
    c = d["comparison"]
    assert c["ci_low"] <= 0 <= c["ci_high"]
    assert c["underpowered"] is False
    assert c["verdict"] == decision_rule.VERDICT_NONE and c["verdict_label"] == decision_rule.VERDICT_NONE
    assert not any("passed more than" in s for s in d["allowed_sentences"])
