"""Seed 000's human-clock sentences (issue 11, items 6 and 7), attacked.

"<agent> matched <person> under an N-minute clock" must compare per-task pass rates on the same
tasks with the same number of attempts per task on both sides: seed 000 never allows the
sentence when only the agent was rerun, so an agent at 1 pass in 3 attempts per task does not
"match" a person at 1 pass in 1 attempt by adding up its passes over epochs.

"<agent> was faster to a green visible suite" must count timeouts as failures: the median
time-to-green is taken over every scored attempt, an attempt that never went green within its
clock counting as +infinity, so 1 green and 9 timeouts is not faster than 10 greens.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.report.sentences import human_sentences, roles_table  # noqa: E402

pytestmark = pytest.mark.unit


def row(task, solver, role, status, epoch=1, ttg=None, steers=0, box=2700.0):
    return {"task_id": task, "solver": solver, "role": role, "status": status, "epoch": epoch, "stratum": "xs",
            "split": "holdout", "time_to_green_s": ttg, "steer_count": steers, "time_box_s": box,
            "tokens_in": None, "tokens_out": None, "cost_usd": None}


def sentences(rows):
    runs = pd.DataFrame(rows)
    return human_sentences(roles_table(runs, "holdout"), runs, "bot", "holdout", True)


def roles(rows):
    return {r["solver"]: r for r in roles_table(pd.DataFrame(rows), "holdout")}


def _matched(texts):
    return [s for s in texts if "matched ana" in s or "did not match ana" in s]


def _faster(texts):
    return [s for s in texts if "faster to a green visible suite" in s]


# ------------------------------------------------------------------------- (6) matched

def test_agent_rerun_three_times_does_not_match_a_person_who_tried_once() -> None:
    """Issue 11 (6): 1/3 per task summed over 3 epochs is 3 passes, like the person's 3/3."""
    rows = [row(f"t{i}", "bot", "agent", "pass" if e == 1 else "fail", epoch=e, ttg=100.0 if e == 1 else None)
            for i in range(3) for e in (1, 2, 3)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(3)]
    allowed, refused = sentences(rows)
    assert _matched(allowed) == [], allowed
    why = [r["why"] for r in refused if "matched ana" in r["sentence"]]
    assert why and "3 times per task" in why[0] and "ana 1" in why[0] and "per attempt" in why[0], refused
    # the same rule refuses "faster": seed 000 never allows it when only the agent was rerun
    assert _faster(allowed) == []
    why_f = [r["why"] for r in refused if "faster to a green" in r["sentence"]]
    assert why_f and "3 times per task" in why_f[0], refused


def test_person_with_more_attempts_on_one_task_is_refused_too() -> None:
    rows = [row(f"t{i}", "bot", "agent", "pass", ttg=100.0) for i in range(3)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(3)]
    rows += [row("t0", "ana", "human", "fail", epoch=2)]
    allowed, refused = sentences(rows)
    assert _matched(allowed) == [] and _faster(allowed) == [], allowed
    why = [r["why"] for r in refused if "matched ana" in r["sentence"]][0]
    assert "t0" in why and "ana 2" in why, why


def test_an_abstained_attempt_on_a_shared_task_refuses_both() -> None:
    """A rerun hidden as an excluded row is still a rerun; and left out, it compares other attempts."""
    rows = [row(f"t{i}", "bot", "agent", "pass", ttg=100.0) for i in range(3)]
    rows += [row("t1", "bot", "agent", "excluded", epoch=2)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(3)]
    rows += [row("t1", "ana", "human", "fail", epoch=2)]
    allowed, refused = sentences(rows)
    assert _matched(allowed) == [] and _faster(allowed) == [], allowed
    assert all("excluded or infra_fail" in r["why"] for r in refused if "ana" in r["sentence"]), refused


def test_matched_states_per_task_rates_and_attempts() -> None:
    """Same attempts on both sides (3 per task): the sentence compares per-task rates."""
    rows = [row(f"t{i}", "bot", "agent", "pass" if e == 1 else "fail", epoch=e) for i in range(3) for e in (1, 2, 3)]
    rows += [row(f"t{i}", "ana", "human", "pass", epoch=e, steers=1) for i in range(3) for e in (1, 2, 3)]
    allowed, _ = sentences(rows)
    m = _matched(allowed)
    assert len(m) == 1 and "bot did not match ana" in m[0], allowed
    assert "per-task hidden pass rate 0.33 vs 1.00" in m[0] and "3 attempts per task each" in m[0], m[0]
    assert "same 3 holdout tasks" in m[0] and "3 vs 9 passes" in m[0], m[0]


def test_matched_uses_only_shared_tasks_and_their_timeouts() -> None:
    """A task only the agent ran does not count, nor do its timeouts."""
    rows = [row(f"t{i}", "bot", "agent", "pass") for i in range(2)] + [row("t9", "bot", "agent", "timeout")]
    rows += [row(f"t{i}", "ana", "human", "pass") for i in range(2)]
    allowed, _ = sentences(rows)
    m = _matched(allowed)
    assert len(m) == 1 and "bot matched ana" in m[0] and "same 2 holdout tasks" in m[0], allowed
    assert "timeouts 0 vs 0" in m[0], m[0]


# -------------------------------------------------------------------------- (7) faster

def test_one_green_and_nine_timeouts_is_not_faster_than_ten_greens() -> None:
    """Issue 11 (7): the old median was over green runs only (100 s vs 900 s)."""
    rows = [row("t0", "bot", "agent", "pass", ttg=100.0)]
    rows += [row(f"t{i}", "bot", "agent", "timeout") for i in range(1, 10)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(10)]
    allowed, refused = sentences(rows)
    assert _faster(allowed) == [], allowed
    why = [r["why"] for r in refused if "faster to a green" in r["sentence"]]
    assert why and "9 of 10" in why[0] and "never went green" in why[0], refused
    t = roles(rows)
    assert t["bot"]["median_time_to_green_s"] is None and t["ana"]["median_time_to_green_s"] == 900.0, t
    assert t["bot"]["greens"] == 1 and t["bot"]["scored_attempts"] == 10, t["bot"]


def test_timeouts_with_a_recorded_green_are_not_green_within_the_clock() -> None:
    """A run stopped at its clock is not green within it, whatever time it recorded."""
    rows = [row(f"t{i}", "bot", "agent", "timeout", ttg=50.0) for i in range(4)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(4)]
    allowed, refused = sentences(rows)
    assert _faster(allowed) == [], allowed
    assert roles(rows)["bot"]["median_time_to_green_s"] is None
    assert roles(rows)["bot"]["greens"] == 0


def test_faster_sentence_says_how_timeouts_were_counted() -> None:
    rows = [row(f"t{i}", "bot", "agent", "pass", ttg=100.0) for i in range(6)]
    rows += [row(f"t{i}", "bot", "agent", "timeout") for i in range(6, 10)]
    rows += [row(f"t{i}", "ana", "human", "pass", ttg=900.0) for i in range(10)]
    allowed, _ = sentences(rows)
    f = _faster(allowed)
    assert len(f) == 1 and "100 s vs 900 s" in f[0], allowed
    assert "all 10 scored attempts each" in f[0] and "+infinity" in f[0] and "4 vs 0" in f[0], f[0]
    assert roles(rows)["bot"]["median_time_to_green_s"] == 100.0


def test_a_person_who_never_went_green_is_slower_not_missing() -> None:
    rows = [row(f"t{i}", "bot", "agent", "pass", ttg=300.0) for i in range(3)]
    rows += [row(f"t{i}", "ana", "human", "timeout") for i in range(3)]
    allowed, _ = sentences(rows)
    f = _faster(allowed)
    assert len(f) == 1 and "300 s vs never" in f[0], allowed
