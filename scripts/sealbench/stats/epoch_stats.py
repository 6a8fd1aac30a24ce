"""Repeated attempts (epochs) of a task: per-task means, standard errors, pass@k.

The task is the unit: :func:`per_task_means` averages the epochs of each task before any
comparison. :func:`task_level_se`, :func:`clustered_se` (tasks as clusters, Miller App. A)
and :func:`naive_attempt_se` (every epoch independent: wrong for inference, reported for
contrast) are the standard errors of a mean over attempts; :func:`miller_variance_components`
splits the variance of per-task means into between-task and within-task parts;
:func:`pass_at_k` and :func:`pass_hat_k` are the unbiased pass@k and pass^k estimators.

Reads nothing and writes nothing. Failure modes are ``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "VarianceComponents",
    "per_task_means",
    "task_level_se",
    "clustered_se",
    "naive_attempt_se",
    "miller_variance_components",
    "pass_at_k",
    "pass_hat_k",
]


# ------------------------------------------------------------------------ shaping data


def per_task_means(
    rows: Iterable[Mapping[str, Any]] | Any, task_col: str, value_col: str
) -> dict[str, float]:
    """Average ``value_col`` over all rows (epochs) of each task: the task is the unit.

    ``rows`` is an iterable of mappings (or a pandas DataFrame). Rows whose value is None
    or NaN are skipped (unknown is not a fail); a task with no known value is absent from
    the result. Order follows first appearance of each task.
    """
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        means = _frame_task_means(rows, task_col, value_col)
        if means is not None:
            return means
        rows = rows.to_dict("records")
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for row in rows:
        try:
            task, value = row[task_col], row[value_col]
        except KeyError as exc:
            raise ValueError(f"row is missing column {exc.args[0]!r}: {dict(row)!r}") from None
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        sums[task] = sums.get(task, 0.0) + float(value)
        counts[task] = counts.get(task, 0) + 1
    return {task: sums[task] / counts[task] for task in sums}


def _frame_task_means(frame: Any, task_col: str, value_col: str) -> dict | None:
    """:func:`per_task_means` of a DataFrame, column-wise: the same sums, each task's values
    added one by one in row order (``np.add.at``), so the same floats as the loop over rows.
    None (use the loop) when the value column is not plain numpy numbers or a task id is
    missing: the loop's own handling of those stays the one definition."""
    import pandas as pd

    if not len(frame) or task_col not in frame.columns or value_col not in frame.columns:
        return None
    values, tasks = frame[value_col], frame[task_col]
    if not isinstance(values.dtype, np.dtype) or values.dtype.kind not in "biuf" or tasks.isna().any():
        return None
    v = values.to_numpy(dtype=float)
    known = ~np.isnan(v)
    codes, uniques = pd.factorize(tasks.to_numpy()[known])
    sums = np.zeros(len(uniques))
    np.add.at(sums, codes, v[known])  # unbuffered: in row order, like sums[task] += value
    counts = np.bincount(codes, minlength=len(uniques))
    return dict(zip(pd.Index(uniques).tolist(), (sums / counts).tolist()))


# -------------------------------------------------------------------------- epochs


def task_level_se(task_means: Sequence[float]) -> float:
    """SE of the mean over tasks: ddof=1 sd of per-task values / sqrt(number of tasks)."""
    x = np.asarray(task_means, dtype=float)
    if len(x) < 2:
        raise ValueError(f"need at least 2 tasks for a standard error, got {len(x)}")
    return float(x.std(ddof=1)) / math.sqrt(len(x))


def _clusters(values_by_task: Mapping[str, Sequence[float]]) -> list[np.ndarray]:
    groups = [np.asarray(v, dtype=float) for v in values_by_task.values()]
    if not groups or any(len(g) == 0 for g in groups):
        raise ValueError("every task needs at least one attempt")
    return groups


def clustered_se(values_by_task: Mapping[str, Sequence[float]], fpc: bool = False) -> float:
    """Cluster-robust SE of the attempt-level mean, tasks as clusters (Miller App. A).

    ``se = sqrt(sum_c (sum_i (x_ci - xbar))^2) / N`` over all N attempts; with
    ``fpc=True`` multiplied by ``sqrt(C / (C - 1))`` (C tasks), as inspect-ai does.
    """
    groups = _clusters(values_by_task)
    allx = np.concatenate(groups)
    xbar = float(allx.mean())
    ss = sum(float(np.sum(g - xbar)) ** 2 for g in groups)
    se = math.sqrt(ss) / len(allx)
    if fpc:
        c = len(groups)
        if c < 2:
            raise ValueError("finite-population correction needs at least 2 tasks")
        se *= math.sqrt(c / (c - 1))
    return se


def naive_attempt_se(values_by_task: Mapping[str, Sequence[float]]) -> float:
    """Attempt-level SE treating every epoch as independent (ddof=0 sd / sqrt(N)).

    WRONG for inference (epochs of one task are correlated); reported only to show how
    much it understates the task-level SE.
    """
    allx = np.concatenate(_clusters(values_by_task))
    return float(allx.std(ddof=0)) / math.sqrt(len(allx))


@dataclass(frozen=True)
class VarianceComponents:
    """Miller's split of the variance of per-task means over K epochs."""

    var_x_hat: float
    """Between-task variance of the true per-task score: Var(xbar_i) - E[sigma_i^2]/K."""
    e_sigma2_hat: float
    """Mean over tasks of the within-task (ddof=1) variance across epochs."""
    k: int
    """Epochs per task."""


def miller_variance_components(
    values_by_task: Mapping[str, Sequence[float]],
) -> VarianceComponents:
    """Split per-task means' variance into between-task and within-task parts (equal K)."""
    groups = _clusters(values_by_task)
    ks = {len(g) for g in groups}
    if len(ks) != 1:
        raise ValueError(f"every task needs the same number of epochs, got {sorted(ks)}")
    k = ks.pop()
    if k < 2 or len(groups) < 2:
        raise ValueError("need at least 2 tasks and 2 epochs per task")
    means = np.array([g.mean() for g in groups])
    e_sigma2 = float(np.mean([g.var(ddof=1) for g in groups]))
    return VarianceComponents(
        var_x_hat=float(means.var(ddof=1)) - e_sigma2 / k, e_sigma2_hat=e_sigma2, k=k
    )


# ------------------------------------------------------------------------- pass@k


# ------------------------------------------------------------------------- pass@k


def _check_nck(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``c`` passes in ``n`` attempts: ``1 - C(n-c, k) / C(n, k)``."""
    _check_nck(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k (all k attempts pass) from ``c`` of ``n``: ``C(c, k) / C(n, k)``."""
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)
