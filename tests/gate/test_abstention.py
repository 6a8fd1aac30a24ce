"""Abstention must not pay: an agent cannot raise its rate by turning its failures into rows
that leave the denominator (``infra_fail``, ``excluded``).

Attacks, each against the stage that used to reward it:
- the agent exits 127/126 when its tests are red (hidden_score made that ``infra_fail``);
- the patch makes the test runner exit 5/4/127 (no tests collected, usage error, "command not
  found") while the task's controls ran fine (scoring made that ``infra_fail``);
- a run killed at its clock that wrote no stamp, or a forged one (stratify made it ``excluded``);
- failures reported as ``route_changed: true`` (excluded): the gate's rate with exclusions
  counted as failures must agree with the headline, or there is no headline (EXCLUSIONS_DECIDE).
  Since issue 26 point 3 the stamp no longer excludes at all (a note, ``stamp_notes``); the
  gate tests below still build ``excluded`` rows directly, as an observed change would.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from test_gate_refusals import (  # noqa: E402
    BASE,
    CAND,
    _rows,
    _set_status,
    build_spec,
    codes,
    decide,
)

from packgen import FIX_AGENT, ORACLE, STAMP, write_pytest_task  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.refusals import REFUSALS  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.scoring import scoring  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent, run_dummy  # noqa: E402
from sealbench.stages.stratify import build_runs  # noqa: E402
from sealbench.stats import decision_rule  # noqa: E402

ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100}


# ------------------------------------------------------------------------------ helpers

def _seal(task: Path, out: Path) -> Path:
    hash_pack.seal_task(task, core.task_digest(task), out / "sealed", out / "sealed.json")
    return out / "sealed"


def _pytest_task(root: Path, name: str = "pt", **meta) -> Path:
    """A task whose visible/hidden commands are real pytest suites (2 visible, 3 hidden tests)."""
    return write_pytest_task(root / "tasks", name, **meta)


@pytest.fixture(scope="module")
def pyt(tmp_path_factory) -> tuple[Path, Path]:
    """A sealed pytest task and its real controls.json (the controls ran fine)."""
    root = tmp_path_factory.mktemp("pyt")
    sealed = _seal(_pytest_task(root), root / "pt")
    ctl = run_dummy.run_controls(sealed, root / "pt" / "controls", oracle_runs=1, timeout_s=60)
    assert not ctl["control_infra_fail"] and ctl["oracle_ok"], ctl
    return sealed, root / "pt" / "controls" / "controls.json"


def _agent(sealed: Path, controls: Path | None, tmp: Path, command: str, envelope=ENVELOPE,
           name: str = "a") -> tuple[dict, dict]:
    rd = tmp / "runs" / name
    rec = run_agent.run_agent(sealed, rd, name, "0" * 16, command, {}, 1, envelope)
    return rec, hidden_score.score_run(sealed, rd, tmp / "scores" / f"{name}.json", 60, controls=controls)


def _scored_patch(sealed: Path, controls: Path | None, tmp: Path, patch: str, **run_over) -> dict:
    """Score ``patch`` as an agent attempt that exited 0 within its clock (run.json as run_agent writes it)."""
    rd = tmp / "run"
    rd.mkdir(parents=True)
    run = {"task_id": "t", "solver": "a", "fingerprint": "0" * 16, "epoch": 1, "role": "agent", "exit_code": 0,
           "end_reason": "exit", "timed_out": False, "time_box_s": 60.0, "wall_s": 1.0, "attempts": [],
           "patch_bytes": len(patch), "stamp": {}, "usage": {}}
    run.update(run_over)
    core.write_json(rd / "run.json", run)
    (rd / "patch.diff").write_text(patch)
    return hidden_score.score_run(sealed, rd, tmp / "score.json", 60, controls=controls)


def _calc_patch(new_body: str) -> str:
    old = ["def add(a, b):", "    return a - b"]
    new = new_body.rstrip("\n").splitlines()
    return ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
            f"@@ -1,2 +1,{len(new)} @@\n" + "".join(f"-{x}\n" for x in old) + "".join(f"+{x}\n" for x in new))


def _exit_at_import(code: int) -> str:
    """calc.py that ends the test process with ``code`` as soon as a test imports it."""
    return _calc_patch(f"import os\nos._exit({code})\ndef add(a, b):\n    return a - b\n")


# ------------------------------------------------- 1. the agent's exit status is never infra

@pytest.mark.sandbox
@pytest.mark.parametrize("code", [127, 126])
def test_agent_exiting_127_or_126_when_red_is_fail_not_infra(pyt, tmp_path: Path, code: int) -> None:
    sealed, controls = pyt
    rec, score = _agent(sealed, controls, tmp_path, f"{STAMP}; exit {code}")
    assert rec["exit_code"] == code
    assert score["status"] == "fail", score["reason"]
    assert score["agent_exit_code"] == code
    assert f"exit {code}" in score["reason"]


@pytest.mark.sandbox
def test_agent_command_not_found_is_fail_with_its_exit_code(pyt, tmp_path: Path) -> None:
    sealed, controls = pyt
    _, score = _agent(sealed, controls, tmp_path, "no-such-agent-binary --go")
    assert score["status"] == "fail" and score["agent_exit_code"] == 127
    assert "command not found" in score["reason"]


@pytest.mark.sandbox
def test_agent_exiting_127_after_fixing_still_passes(pyt, tmp_path: Path) -> None:
    """The exit status is recorded, never the verdict: the patch is what is scored."""
    sealed, controls = pyt
    _, score = _agent(sealed, controls, tmp_path, FIX_AGENT + "; exit 127")
    assert score["status"] == "pass" and score["agent_exit_code"] == 127


@pytest.mark.sandbox
def test_harness_error_is_still_infra_fail(pyt, tmp_path: Path) -> None:
    sealed, controls = pyt
    score = _scored_patch(sealed, controls, tmp_path, "", end_reason="harness_error", exit_code=None,
                          error="OSError: cannot copy the snapshot")
    assert score["status"] == "infra_fail" and "harness" in score["reason"]


# --------------------------------- 1b. a patch that breaks the test run is the patch's failure

@pytest.mark.sandbox
@pytest.mark.parametrize("code", [5, 4, 127, 126, 3])
def test_patch_making_pytest_exit_infra_code_is_fail_when_controls_ran(pyt, tmp_path: Path, code: int) -> None:
    sealed, controls = pyt
    score = _scored_patch(sealed, controls, tmp_path, _exit_at_import(code))
    assert score["status"] == "fail", score["reason"]
    # scoring may call it infra (the runner exited with an infra code): then the controls decide
    assert score["score"]["status"] == "fail" or "controls" in score["reason"]


@pytest.mark.sandbox
@pytest.mark.parametrize("why", ["visible command: no tests collected (exit 5)",
                                 "hidden command: pytest usage error (exit 4)",
                                 "visible command: the test runner never started (exit 1)"])
def test_any_scoring_infra_fail_is_the_patch_when_controls_ran(pyt, tmp_path: Path, monkeypatch, why: str) -> None:
    """Whatever scoring calls infra (today or after its rework), on an agent's patch it is the
    patch's doing unless the task's controls hit infra too."""
    sealed, controls = pyt
    monkeypatch.setattr(hidden_score, "score_patch",
                        lambda *a, **k: scoring.ScoreResult("infra_fail", None, None, why, True))
    score = _scored_patch(sealed, controls, tmp_path, _exit_at_import(5))
    assert score["status"] == "fail" and why in score["reason"] and "controls" in score["reason"]
    ctl = core.read_json(controls)
    broken = tmp_path / "controls.json"
    shutil.copytree(Path(controls).parent / "decoys", tmp_path / "decoys")   # its decoyed suite beside it
    core.write_json(broken, dict(ctl, control_infra_fail=True,
                                 results=[dict(r, status="infra_fail") if r["solver"] == "empty_diff" else r
                                          for r in ctl["results"]]))
    again = _scored_patch(sealed, broken, tmp_path / "b", _exit_at_import(5))
    assert again["status"] == "infra_fail" and "empty_diff#1" in again["reason"]


@pytest.mark.sandbox
def test_patch_breaking_collection_is_fail(pyt, tmp_path: Path) -> None:
    sealed, controls = pyt
    score = _scored_patch(sealed, controls, tmp_path, _calc_patch("def add(a, b:\n    return a + b\n"))
    assert score["status"] == "fail", score["reason"]


@pytest.mark.sandbox
def test_scoring_infra_stays_infra_when_the_controls_hit_it_too(tmp_path: Path) -> None:
    """The harness's own breakage: the task's controls could not be scored either."""
    root = tmp_path / "x"
    t = _pytest_task(root, hidden_command="no-such-interpreter -m pytest -q hidden_tests")
    sealed = _seal(t, root / "pt")
    ctl = run_dummy.run_controls(sealed, root / "controls", oracle_runs=1, timeout_s=60)
    assert ctl["control_infra_fail"]
    score = _scored_patch(sealed, root / "controls" / "controls.json", tmp_path / "s", ORACLE)
    assert score["status"] == "infra_fail" and "controls" in score["reason"]


# ---------------------------------------------------- 2. a run killed at its clock is a timeout

def _score_record(status: str, stamp: dict | None, timed_out: bool, tid: str = "t1") -> dict:
    return {"task_id": tid, "solver": CAND, "fingerprint": "f" * 16, "epoch": 1, "status": status,
            "reason": "the worker was stopped at its 60s clock" if status == "timeout" else None,
            "visible_pass": False, "hidden_pass": False, "time_to_green_s": None,
            "run": {"role": "agent", "timed_out": timed_out, "end_reason": "time_box" if timed_out else "exit",
                    "exit_code": None if timed_out else 0, "wall_s": 60.0, "time_box_s": 60.0,
                    "stamp": stamp or {}, "usage": {}, "isolation": "bwrap", "attempts": []}}


HEALTH = {"allowed_quota_states": ["ok"], "max_queue_ms": 60000, "max_retries": 3, "required_server_id": None}
GOOD_STAMP = {"server_id": "s", "queue_ms": 0, "retries": 0, "quota_state": "ok", "route_changed": False}


def _runs_of(score: dict) -> list[dict]:
    exp = {"pack_digest": "p" * 64}
    tasks = [{"task_id": score["task_id"], "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    return build_runs(exp, tasks, [], [score], HEALTH)


@pytest.mark.unit
@pytest.mark.parametrize("stamp", [None, dict(GOOD_STAMP, route_changed=True), dict(GOOD_STAMP, quota_state="x")],
                         ids=["no_stamp", "route_changed", "bad_quota"])
def test_timed_out_run_is_timeout_whatever_its_stamp(stamp) -> None:
    [row] = _runs_of(_score_record("timeout", stamp, True))
    assert row["status"] == "timeout"


@pytest.mark.unit
def test_timed_out_run_is_timeout_even_if_its_score_record_says_otherwise() -> None:
    [row] = _runs_of(_score_record("fail", None, True))
    assert row["status"] == "timeout"


@pytest.mark.unit
def test_a_route_changed_stamp_within_its_clock_is_a_failure_with_a_note() -> None:
    """Issue 26 point 3 (was: excluded): the stamp is the agent's claim; only a route change the
    bridge observed excludes a run (tests/gate/test_observed_exclusions.py)."""
    [row] = _runs_of(_score_record("fail", dict(GOOD_STAMP, route_changed=True), False))
    assert row["status"] == "fail" and "route changed" in row["stamp_notes"]


@pytest.mark.sandbox
def test_hidden_score_timeout_beats_agent_exit_status(pyt, tmp_path: Path) -> None:
    sealed, controls = pyt
    score = _scored_patch(sealed, controls, tmp_path, "", timed_out=True, exit_code=127, end_reason="time_box")
    assert score["status"] == "timeout"


@pytest.mark.sandbox
def test_two_timeouts_count_the_same_with_or_without_stamps(tmp_path: Path) -> None:
    """6/9 with stamps; without them the two timeouts used to be excluded (6/7, "timeouts 0")."""
    results = {}
    for stamped in (True, False):
        spec = build_spec()
        for tid in ("s05", "m05"):  # two failing holdout tasks, killed at the clock
            row = _rows(spec, tid, CAND)[0]
            _set_status(row, "timeout")
            score = _score_record("timeout", GOOD_STAMP if stamped else None, True, tid)
            [built] = _runs_of(score)
            row["status"] = built["status"]
            if not stamped:
                row.update(server_id=None, queue_ms=None, retries=None, quota_state=None, route_changed=None)
        results[stamped] = decide(tmp_path / str(stamped), spec)
    for d in results.values():
        assert (d["passes"], d["n"], d["timeouts"], d["exclusions"]) == (6, 9, 2, 0)
        assert "timeouts 2 (counted as failures), exclusions 0 of 9 scheduled" in d["allowed_sentences"][0]


# ------------------------------------------- 3. the gate: exclusions must not decide the result

def _abstain(spec: dict, tids, status: str = "excluded") -> None:
    """The candidate's failing rows on ``tids`` become ``status`` (what it failed, it abstained on)."""
    for tid in tids:
        row = _rows(spec, tid, CAND)[0]
        assert row["status"] == "fail"
        if status == "excluded":
            row.update(route_changed=True, excluded_reason="the route changed during the session (or is unknown)",
                       reason="fail before exclusion: hidden tests failed", status="excluded")
        else:
            row.update(status=status, reason="agent command: command not found (exit 127)")


@pytest.mark.unit
def test_clean_run_is_unchanged(tmp_path: Path) -> None:
    d = decide(tmp_path, build_spec())
    assert d["publishable"] is True and codes(d) == [] and d["headline"] == pytest.approx(6 / 9)
    assert d["sensitivity"]["rate"] == pytest.approx(6 / 9) and d["sensitivity"]["excluded"] == 0


@pytest.mark.unit
def test_excluding_failures_to_move_the_headline_refuses_it(tmp_path: Path) -> None:
    spec = build_spec()
    # the candidate passes xs01, xs03, s01, s03, m01, m03 and fails the three *05 holdout tasks
    # (6/9). It abstains on two of them (route changed: excluded) and on one with a
    # harness-looking infra_fail: 6/6 if abstention leaves the denominator.
    for r in spec["runs"]:
        if r["solver"] == CAND and r["split"] == "holdout":
            _set_status(r, "fail" if r["task_id"].endswith("05") else "pass")
    _abstain(spec, ["xs05", "s05"])
    _abstain(spec, ["m05"], "infra_fail")
    d = decide(tmp_path, spec)
    assert "EXCLUSIONS_DECIDE" in codes(d), codes(d)
    assert set(codes(d)) == {"EXCLUSIONS_DECIDE"}
    assert d["publishable"] is False and d["headline"] is None
    r = next(r for r in d["reasons"] if r["code"] == "EXCLUSIONS_DECIDE")
    assert "2 excluded and 1 infra_fail" in r["sentence"]
    assert "0.67" in r["sentence"] and "1.00" in r["sentence"]
    assert r["meaning"] == REFUSALS["EXCLUSIONS_DECIDE"]
    assert d["sensitivity"]["rate"] == pytest.approx(6 / 9)


@pytest.mark.unit
def test_excluding_failures_to_win_refuses_the_winner(tmp_path: Path) -> None:
    """The candidate passes 6 holdout tasks and abstains on the 3 the baseline passes."""
    spec = build_spec()
    spec["cfg"].update(mde=0.6, planning_discordance=0.6)  # n_required 6
    abstained = ["xs05", "s05", "m05"]
    for r in spec["runs"]:
        if r["solver"] in (CAND, BASE) and r["split"] == "holdout":
            cand_passes = r["task_id"] not in abstained
            _set_status(r, "pass" if (r["solver"] == CAND) == cand_passes else "fail")
    _abstain(spec, abstained)
    d = decide(tmp_path, spec)
    assert "EXCLUSIONS_DECIDE" in codes(d), (codes(d), d["comparison"].get("verdict"))
    assert not any("passed more than" in s for s in d["allowed_sentences"])
    assert d["sensitivity"]["verdict"] != d["comparison"]["verdict"]


@pytest.mark.unit
def test_small_exclusion_that_decides_nothing_is_stated_not_refused(tmp_path: Path) -> None:
    spec = build_spec()
    _abstain(spec, ["m05"])  # 6/8 vs 6/9: well inside the interval; no winner either way
    d = decide(tmp_path, spec)
    assert d["publishable"] is True and "EXCLUSIONS_DECIDE" not in codes(d)
    assert d["sensitivity"]["rate"] == pytest.approx(6 / 9) and d["headline"] == pytest.approx(6 / 8)
    c = d["comparison"]
    assert c["exclusion_rates"][CAND]["excluded"] == 1 and c["exclusion_rates"][BASE]["excluded"] == 0
    assert c["exclusion_note"] and CAND in c["exclusion_note"] and BASE in c["exclusion_note"]
    assert any("counted as failures" in s for s in d["allowed_sentences"])


@pytest.mark.unit
def test_equal_exclusion_rates_add_no_note(tmp_path: Path) -> None:
    d = decide(tmp_path, build_spec())
    assert d["comparison"]["exclusion_note"] is None


@pytest.mark.unit
def test_report_states_differing_exclusion_rates_beside_the_delta(tmp_path: Path) -> None:
    spec = build_spec()
    _abstain(spec, ["m05"])
    from test_gate_refusals import write_experiment
    _, _, report = gate.decide(*write_experiment(tmp_path, spec))
    section = report.split("## Paired comparison", 1)[1].split("## Humans", 1)[0]
    assert "Exclusion rates differ" in section


@pytest.mark.unit
def test_refusal_code_is_documented_like_the_others() -> None:
    assert "EXCLUSIONS_DECIDE" in REFUSALS
    assert decision_rule.VERDICT_NONE  # the verdict names used in the sentence exist


# ------------------------------------------------- found by red-teaming

@pytest.mark.sandbox
@pytest.mark.parametrize("name", ["GIT~1", ".git.", "sub/.git."])
def test_a_file_git_refuses_to_add_is_the_agents_fail_not_infra(pyt, tmp_path: Path, name: str) -> None:
    """A path git refuses (``core.protectNTFS``) made taking the patch raise, which the harness
    recorded as its own error (infra_fail): an abstention any agent could choose."""
    sealed, controls = pyt
    rec, score = _agent(sealed, controls, tmp_path, f"mkdir -p sub; echo x > '{name}'; {STAMP}")
    assert rec["end_reason"] != "harness_error"
    # the patch is read without git (the workspace's layers), so it carries the file; applying
    # it to the scoring workspace is what git refuses: the agent's fail, never infra
    assert rec["patch_error"] is None and rec["patch_bytes"] > 0
    assert score["status"] == "fail", score["reason"]
    assert "git apply failed" in score["reason"] and name.rsplit("/", 1)[-1] in score["reason"], score["reason"]
