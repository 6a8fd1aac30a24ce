"""stratify.build_strata counts with pandas what the loop over row dicts counted: the same
cells in the same order, and the same numbers to the last bit (``passes`` is the sum of the
per-task shares in the order the tasks first appear), from row dicts, columns or a DataFrame."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core.contract import ABSTAINED, INFRA_FAIL, PASS, TIMEOUT  # noqa: E402
from sealbench.stages.stratify import build_strata  # noqa: E402
from sealbench.stats.rate_intervals import rate_interval  # noqa: E402


def loop_strata(runs: list[dict], strata_order: list[str], method: str = "wilson") -> list[dict]:
    """The reference: build_strata as it was first written, over row dicts."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in runs:
        cells[(r["solver"], r["role"], r["split"], r["stratum"])].append(r)
    order = {s: i for i, s in enumerate(strata_order)}
    out = []
    for (solver, role, split, stratum), rows in sorted(
            cells.items(), key=lambda kv: (kv[0][1] != "agent", kv[0][0], kv[0][2], order.get(kv[0][3], 99), kv[0][3])):
        per_task: dict[str, list[float]] = defaultdict(list)
        for r in rows:
            if r["status"] not in ABSTAINED:
                per_task[r["task_id"]].append(1.0 if r["status"] == PASS else 0.0)
        n = len(per_task)
        passes = float(sum(sum(v) / len(v) for v in per_task.values()))
        lo, hi = rate_interval(passes, n, method)
        total = len(rows)
        out.append({
            "solver": solver, "role": role, "split": split, "stratum": stratum, "n": n, "passes": passes,
            "pass_rate": passes / n if n else None, "ci_low": lo, "ci_high": hi,
            "timeout_rate": sum(r["status"] == TIMEOUT for r in rows) / total,
            "infra_rate": sum(r["status"] == INFRA_FAIL for r in rows) / total,
            "excluded_rate": sum(r["status"] in ABSTAINED for r in rows) / total,
        })
    return out


COLUMNS = ("solver", "role", "split", "stratum", "task_id", "status", "epoch")
ROW = st.fixed_dictionaries({
    "solver": st.sampled_from(["a1", "a2", "oracle", "stub", "h"]),
    "role": st.sampled_from(["agent", "control", "human"]),
    "split": st.sampled_from(["tune", "holdout"]),
    "stratum": st.sampled_from(["xs", "s", "m", "odd"]),
    "task_id": st.sampled_from([f"t{i}" for i in range(12)]),
    "status": st.sampled_from(["pass", "pass", "fail", "timeout", "tamper", "infra_fail", "excluded"]),
    "epoch": st.integers(1, 7),
})


@pytest.mark.sandbox
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ROW, max_size=120), st.sampled_from(["wilson", "clopper_pearson"]))
def test_build_strata_counts_exactly_what_the_loop_counted(rows: list[dict], method: str) -> None:
    order = ["xs", "s", "m"]
    want = loop_strata(rows, order, method)
    assert build_strata(rows, order, method) == want
    cols = {k: [r[k] for r in rows] for k in COLUMNS}
    assert build_strata(cols, order, method) == want
    assert build_strata(pd.DataFrame(cols), order, method) == want


@pytest.mark.unit
def test_epoch_shares_are_summed_in_task_order() -> None:
    """Shares like 0.2 and 0.6 round: the sum is taken in the order the tasks appear."""
    rows = []
    for i, k in enumerate([1, 3, 2, 4, 1, 3, 3, 2, 1, 4, 2, 3, 1]):
        rows += [{"solver": "a", "role": "agent", "split": "holdout", "stratum": "s", "task_id": f"t{i}",
                  "status": "pass" if e < k else "fail"} for e in range(5)]
    assert build_strata(rows[::-1], ["s"]) == loop_strata(rows[::-1], ["s"])
    assert build_strata(rows, ["s"]) == loop_strata(rows, ["s"])


def loop_task_means(rows: list[dict], task_col: str, value_col: str) -> dict:
    """The reference: epoch_stats.per_task_means as the loop over rows computes it."""
    sums: dict = {}
    counts: dict = {}
    for row in rows:
        task, value = row[task_col], row[value_col]
        if value is None or (isinstance(value, float) and value != value):
            continue
        sums[task] = sums.get(task, 0.0) + float(value)
        counts[task] = counts.get(task, 0) + 1
    return {task: sums[task] / counts[task] for task in sums}


@pytest.mark.unit
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(["t1", "t2", "t3", "t4"]),
                          st.one_of(st.floats(-5, 5, allow_nan=False), st.sampled_from([0.0, 1.0, 0.2, float("nan")]))),
                max_size=60))
def test_per_task_means_of_a_frame_equals_the_loop(pairs) -> None:
    from sealbench.stats import epoch_stats

    rows = [{"task_id": t, "v": v} for t, v in pairs]
    want = loop_task_means(rows, "task_id", "v")
    got = epoch_stats.per_task_means(pd.DataFrame(rows, columns=["task_id", "v"]), "task_id", "v")
    assert got == want and list(got) == list(want)
