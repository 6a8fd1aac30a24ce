"""The gate's side tables: humans beside agents, cost per pass, pass@k, human-clock sentences."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.report import summaries  # noqa: E402
from sealbench.report.card import contamination_posture  # noqa: E402
from sealbench.report.sentences import human_sentences, roles_table  # noqa: E402
from sealbench.stats import epoch_stats  # noqa: E402

pytestmark = pytest.mark.unit


def row(task, solver, role, status, epoch=1, ttg=None, steers=0, box=2700.0, tin=None, tout=None, cost=None,
        stratum="xs", split="holdout"):
    return {"task_id": task, "solver": solver, "role": role, "status": status, "epoch": epoch, "stratum": stratum,
            "split": split, "time_to_green_s": ttg, "steer_count": steers, "time_box_s": box,
            "tokens_in": tin, "tokens_out": tout, "cost_usd": cost}


def frame(rows):
    return pd.DataFrame(rows)


def test_pass_at_k_matches_the_unbiased_estimators() -> None:
    rows = [row("t1", "a", "agent", s, e) for e, s in enumerate(["pass", "fail", "pass"], 1)]
    rows += [row("t2", "a", "agent", s, e) for e, s in enumerate(["fail", "fail", "fail"], 1)]
    t = summaries.pass_at_k_table(frame(rows), "holdout", 3)["a"]
    assert t["k"] == [1, 2, 3]
    for i, k in enumerate(t["k"]):
        assert t["pass_at_k"][i] == pytest.approx((epoch_stats.pass_at_k(3, 2, k) + epoch_stats.pass_at_k(3, 0, k)) / 2, abs=1e-6)
        assert t["pass_hat_k"][i] == pytest.approx((epoch_stats.pass_hat_k(3, 2, k) + epoch_stats.pass_hat_k(3, 0, k)) / 2, abs=1e-6)
    assert summaries.pass_at_k_table(frame(rows), "holdout", 1) == {}


def test_cost_per_pass_is_null_when_unknown() -> None:
    rows = [row("t1", "a", "agent", "pass", tin=100, tout=50, cost=0.2), row("t2", "a", "agent", "fail", tin=10, tout=5,
                                                                              cost=0.1),
            row("t1", "b", "agent", "pass")]
    out = {r["solver"]: r for r in summaries.cost_per_pass(frame(rows), "holdout", ["xs"])}
    assert out["a"]["tokens_per_pass"] == 165.0 and out["a"]["cost_per_pass_usd"] == pytest.approx(0.3)
    assert out["b"]["tokens_per_pass"] is None and out["b"]["cost_per_pass_usd"] is None


def _pair(agent_ttg, human_ttg, human_box=2700.0, human_steers=1):
    rows = [row(f"t{i}", "bot", "agent", "pass", ttg=agent_ttg) for i in range(3)]
    rows += [row(f"t{i}", "ana", "human", "pass" if i else "fail", ttg=human_ttg if i else None,
                 steers=human_steers, box=human_box) for i in range(3)]
    runs = frame(rows)
    return human_sentences(roles_table(runs, "holdout"), runs, "bot", "holdout", True)


def test_matched_and_faster_sentences_need_same_clock_and_steers() -> None:
    allowed, refused = _pair(100.0, 900.0)
    assert any("bot matched ana under a 45-minute clock" in s and "3 vs 2" in s for s in allowed)
    assert any("faster to a green visible suite" in s and "100 s vs 900 s" in s for s in allowed)
    allowed, refused = _pair(100.0, 900.0, human_box=1800.0)
    assert allowed == [] and all("clocks differ" in r["why"] for r in refused)
    allowed, refused = _pair(100.0, 900.0, human_steers=None)
    assert allowed == [] and "steers were not recorded" in refused[0]["why"]
    allowed, refused = _pair(950.0, 900.0)
    assert not any("faster" in s for s in allowed) and any("it was not" in r["why"] for r in refused)


def test_no_human_means_no_human_sentence() -> None:
    runs = frame([row("t1", "bot", "agent", "pass")])
    allowed, refused = human_sentences(roles_table(runs, "holdout"), runs, "bot", "holdout", True)
    assert allowed == [] and "no human session" in refused[0]["why"]


def test_contamination_posture_says_what_ran_on_every_task() -> None:
    t = pd.DataFrame({"leak_checks": ["denylist;ngram13:humaneval", "ngram13:humaneval;denylist"]})
    assert contamination_posture(t) == "ngram_scan"
    t = pd.DataFrame({"leak_checks": ["denylist;ngram13:humaneval", "denylist"]})
    assert contamination_posture(t) == "filename_scan"
    t = pd.DataFrame({"leak_checks": ["", "denylist"]})
    assert contamination_posture(t) == "unchecked"


def test_the_card_counts_tasks_whose_decoys_can_refuse_a_forger_apart() -> None:
    """A task whose decoys all change an input fails a forger there but cannot make it ``tamper``
    (degenerate honest code passes an input decoy too): the card says how many tasks carry a value
    decoy beside how many carry any."""
    import pandas as pd

    from sealbench.report.card import _decoy_coverage

    tasks = pd.DataFrame({"task_id": ["a", "b", "c", "d"], "decoys": pd.array([2, 2, 0, None], dtype="Int64"),
                          "decoys_input": pd.array([0, 2, 0, None], dtype="Int64")})
    cov = _decoy_coverage({"decoys_per_task": 2}, tasks)
    assert (cov["tasks_known"], cov["tasks_covered"], cov["tasks_with_value_decoys"]) == (3, 2, 1), cov
    assert cov["uncovered"] == ["c"]
