"""The paired comparison of candidate and baseline over tasks: the gate's decision interval.

Reads nothing and writes nothing: plain typed functions over plain data (sequences of
numbers and labels), frozen dataclasses for results. The gate stage calls these.

The unit of analysis is the *task*: epochs (repeated attempts) are averaged per task
first (``per_task_means`` in ``epoch_stats.py``), then candidate and baseline are paired on
task ids. The decision interval of :func:`paired_delta` is the *stratified t interval*

    delta = sum_h w_h * dbar_h,                w_h = n_h / n
    se    = sqrt(sum_h w_h**2 * s_h**2 / n_h), s_h**2 the ddof=1 variance of d in stratum h
    df    = n - H                              (H strata)
    ci    = delta -/+ t_{1-alpha/2, df} * se

which with one stratum is exactly the paired t interval. For per-task pass rates (every score
in [0, 1]) the difference lies in [-1, 1], so the t bounds are clamped to [-1, 1] (a t interval
is symmetric and knows no such limit: ``[+0.196, +1.138]`` would print otherwise); the point
estimate, the se and the p-values are not changed, and the raw bounds are kept
(``ci_raw``, ``paired_t_ci_raw``), which are what the reference values from scipy check.
Reported alongside it: the
unstratified paired t interval, a blocked (within-stratum) percentile bootstrap
(``bootstrap.py``; the variance picture only: it under-covers at small n), the exact McNemar
(sign-test) p and, for binary outcomes, the Newcombe hybrid score interval. The call made
from the interval (``WINNER_CANDIDATE``, ``WINNER_BASELINE``, ``NO_WINNER``) is in
``decision_rule.py``.

Failure modes are ``ValueError`` with a message naming what is wrong (empty sample,
mismatched lengths, a stratum too small to estimate its variance, ...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import scipy_stats as _st
from .bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, blocked_bootstrap
from .rate_intervals import _check_conf, wilson_interval

__all__ = [
    "PairedResult",
    "expand_2x2_counts",
    "two_by_two",
    "paired_delta",
    "stratified_t",
    "clamp_interval",
    "mcnemar_exact_p",
    "mcnemar_midp",
    "newcombe_paired_interval",
    "newcombe_phi",
]


# ------------------------------------------------------------------------ shaping data


def expand_2x2_counts(
    counts: Mapping[str, Mapping[str, int]],
) -> tuple[list[str], list[int], list[int]]:
    """Expand per-stratum paired 2x2 counts to task-level ``(strata, cand, base)`` lists.

    ``counts[stratum]`` has keys ``both``, ``cand_only``, ``base_only``, ``neither``.
    """
    cells = {"both": (1, 1), "cand_only": (1, 0), "base_only": (0, 1), "neither": (0, 0)}
    strata: list[str] = []
    cand: list[int] = []
    base: list[int] = []
    for stratum, table in counts.items():
        unknown = set(table) - set(cells)
        if unknown:
            raise ValueError(f"stratum {stratum!r}: unknown 2x2 cells {sorted(unknown)}")
        for cell, (c, b) in cells.items():
            m = int(table.get(cell, 0))
            if m < 0:
                raise ValueError(f"stratum {stratum!r}: negative count for {cell!r}")
            strata += [stratum] * m
            cand += [c] * m
            base += [b] * m
    return strata, cand, base


def _as_pairs(
    strata: Sequence[str], cand: Sequence[float], base: Sequence[float]
) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    n = len(cand)
    if len(base) != n or len(strata) != n:
        raise ValueError(
            f"strata, cand and base must have one entry per task; got lengths "
            f"{len(strata)}, {n}, {len(base)}"
        )
    if n == 0:
        raise ValueError("no paired tasks: cannot compare candidate and baseline")
    c = np.asarray(cand, dtype=float)
    b = np.asarray(base, dtype=float)
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(b))):
        raise ValueError("cand and base must be finite numbers (drop unknown tasks first)")
    labels = [str(s) for s in strata]
    order = list(dict.fromkeys(labels))
    index = {h: i for i, h in enumerate(order)}
    codes = np.array([index[s] for s in labels])
    return c - b, order, codes, np.stack([c, b])


# ----------------------------------------------------------------- paired comparisons


# ----------------------------------------------------------------- paired comparisons


@dataclass(frozen=True)
class PairedResult:
    """Paired candidate-minus-baseline comparison over tasks (the task is the unit)."""

    delta: float
    """Stratified delta sum_h (n_h/n) * mean(d_h) (equals the plain mean of d)."""
    se: float
    """Standard error of the decision interval."""
    df: int
    """Degrees of freedom of the decision interval (n - H, or n - 1 for paired_t)."""
    ci_low: float
    """Lower end of the decision interval (clamped to -1 for rates; see ``ci_raw``)."""
    ci_high: float
    """Upper end of the decision interval (clamped to 1 for rates; see ``ci_raw``)."""
    method: str
    """"stratified_t" (H >= 2 strata) or "paired_t" (one stratum, or a fallback)."""
    n: int
    """Number of paired tasks."""
    n_by_stratum: dict[str, int]
    """Tasks per stratum, in first-appearance order."""
    paired_t_ci: tuple[float, float]
    """Unstratified paired t interval (ignores strata), for comparison (clamped like ``ci_low``)."""
    paired_t_p: float
    """Two-sided p of the unstratified paired t test of mean(d) = 0 (1.0 if all d equal 0)."""
    bootstrap_ci: tuple[float, float]
    """Blocked (within-stratum) percentile bootstrap interval: the picture, not the decision."""
    bootstrap_se: float
    """Standard deviation (ddof=1) of the bootstrap draws."""
    mcnemar_p: float
    """Exact two-sided McNemar / sign-test p on tasks with d > 0 vs d < 0 (1.0 if none)."""
    discordance: float
    """Fraction of tasks with d != 0 (observed psi)."""
    wins: int
    """Tasks where the candidate beat the baseline (d > 0)."""
    losses: int
    """Tasks where the baseline beat the candidate (d < 0)."""
    conf: float = 0.95
    """Confidence level of every interval above."""
    newcombe_ci: tuple[float, float] | None = None
    """Newcombe hybrid score interval for matched pairs (binary outcomes only, else None)."""
    note: str = ""
    """Why the method fell back from stratified_t, empty otherwise."""
    bootstrap_resamples: int = DEFAULT_RESAMPLES
    """Number of bootstrap resamples drawn."""
    seed: int = DEFAULT_SEED
    """Seed given to numpy.random.default_rng for the bootstrap."""
    ci_raw: tuple[float, float] | None = None
    """The decision interval before clamping to [-1, 1] (delta -/+ t * se as computed)."""
    paired_t_ci_raw: tuple[float, float] | None = None
    """The unstratified paired t interval before clamping."""


def clamp_interval(ci: tuple[float, float], limits: tuple[float, float] | None) -> tuple[float, float]:
    """``ci`` with each bound moved into ``limits`` (the range the estimated quantity can take:
    (-1, 1) for a difference of rates); ``ci`` unchanged when ``limits`` is None."""
    if limits is None:
        return float(ci[0]), float(ci[1])
    lo, hi = float(limits[0]), float(limits[1])
    return min(max(float(ci[0]), lo), hi), min(max(float(ci[1]), lo), hi)


def stratified_t(
    strata: Sequence[str], d: Sequence[float], conf: float = 0.95, *,
    limits: tuple[float, float] | None = None,
) -> tuple[float, float, int, tuple[float, float]]:
    """Stratified t interval for paired differences ``d``: ``(delta, se, df, (lo, hi))``.

    ``delta = sum w_h dbar_h`` with ``w_h = n_h/n``; ``se = sqrt(sum w_h^2 s_h^2 / n_h)``
    (``s_h^2`` ddof=1); ``df = n - H``. With ``limits`` (``(-1, 1)`` for a difference of rates)
    the bounds are clamped to it (:func:`clamp_interval`); delta and se never are. Raises
    ``ValueError`` if a stratum has fewer than 2 tasks (its variance cannot be estimated).
    """
    conf = _check_conf(conf)
    d_arr = np.asarray(d, dtype=float)
    labels = [str(s) for s in strata]
    if len(labels) != len(d_arr):
        raise ValueError(f"got {len(labels)} strata labels for {len(d_arr)} differences")
    n = len(d_arr)
    if n == 0:
        raise ValueError("no paired tasks")
    order = list(dict.fromkeys(labels))
    lab = np.asarray(labels)
    delta = 0.0
    var = 0.0
    for h in order:
        dh = d_arr[lab == h]
        nh = len(dh)
        if nh < 2:
            raise ValueError(
                f"stratum {h!r} has {nh} task(s); the stratified t interval needs at least "
                f"2 per stratum (merge it into a neighbouring stratum)"
            )
        w = nh / n
        delta += w * float(dh.mean())
        var += w * w * float(dh.var(ddof=1)) / nh
    df = n - len(order)
    se = math.sqrt(var)
    half = float(_st().t.ppf(0.5 + conf / 2, df)) * se
    return delta, se, df, clamp_interval((delta - half, delta + half), limits)


def _paired_t(d: np.ndarray, conf: float, limits: tuple[float, float] | None = None,
              ) -> tuple[float, float, int, tuple[float, float]]:
    """The paired t interval of ``d`` (bounds clamped to ``limits`` when given)."""
    n = len(d)
    if n < 2:
        raise ValueError(f"a paired t interval needs at least 2 tasks, got {n}")
    delta = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    half = float(_st().t.ppf(0.5 + conf / 2, n - 1)) * se
    return delta, se, n - 1, clamp_interval((delta - half, delta + half), limits)


def _t_pvalue(delta: float, se: float, df: int) -> float:
    if se == 0.0:
        return 1.0 if delta == 0.0 else 0.0
    return float(2.0 * _st().t.sf(abs(delta) / se, df))


def two_by_two(cand: Sequence[float], base: Sequence[float]) -> dict[str, int]:
    """Paired 2x2 counts of binary outcomes: ``both``, ``cand_only``, ``base_only``, ``neither``."""
    c = np.asarray(cand, dtype=float)
    b = np.asarray(base, dtype=float)
    if c.shape != b.shape:
        raise ValueError(f"cand and base differ in length: {len(c)} vs {len(b)}")
    if not (np.all(np.isin(c, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0)))):
        raise ValueError("a 2x2 table needs binary (0/1) outcomes")
    return {
        "both": int(np.sum((c == 1) & (b == 1))),
        "cand_only": int(np.sum((c == 1) & (b == 0))),
        "base_only": int(np.sum((c == 0) & (b == 1))),
        "neither": int(np.sum((c == 0) & (b == 0))),
    }


def mcnemar_exact_p(wins: int, losses: int) -> float:
    """Exact two-sided McNemar p: binomial(wins + losses, 1/2) on the discordant pairs.

    Returns 1.0 when there are no discordant pairs. Equals ``2 * P(X <= min(wins, losses))``
    capped at 1.
    """
    wins, losses = int(wins), int(losses)
    if wins < 0 or losses < 0:
        raise ValueError(f"wins and losses must be >= 0, got {wins}, {losses}")
    m = wins + losses
    if m == 0:
        return 1.0
    return float(min(1.0, 2.0 * _st().binom.cdf(min(wins, losses), m, 0.5)))


def mcnemar_midp(wins: int, losses: int) -> float:
    """Mid-p version of the exact McNemar test (exact p minus the point probability)."""
    wins, losses = int(wins), int(losses)
    m = wins + losses
    if m == 0:
        return 1.0
    k = min(wins, losses)
    p = 2.0 * (_st().binom.cdf(k, m, 0.5) - 0.5 * _st().binom.pmf(k, m, 0.5))
    return float(min(1.0, p))


def newcombe_phi(both: int, cand_only: int, base_only: int, neither: int) -> float:
    """Phi coefficient of the paired 2x2 table (0 when a margin is empty)."""
    a, b, c, d = both, cand_only, base_only, neither
    denom = (a + b) * (c + d) * (a + c) * (b + d)
    if denom == 0:
        return 0.0
    return (a * d - b * c) / math.sqrt(denom)


def newcombe_paired_interval(
    both: int, cand_only: int, base_only: int, neither: int, conf: float = 0.95
) -> tuple[float, float]:
    """Newcombe (1998, method 10) hybrid score interval for a paired difference of rates.

    Combines the Wilson intervals of the candidate and baseline rates with the phi
    correlation of the paired 2x2 table (uncorrected phi, as in the reference values).
    """
    conf = _check_conf(conf)
    n = both + cand_only + base_only + neither
    p1 = (both + cand_only) / n
    p2 = (both + base_only) / n
    l1, u1 = wilson_interval(both + cand_only, n, conf)
    l2, u2 = wilson_interval(both + base_only, n, conf)
    phi = newcombe_phi(both, cand_only, base_only, neither)
    delta = p1 - p2
    dl = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    du = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    return delta - dl, delta + du


# ----------------------------------------------------------------- the paired delta


def paired_delta(
    strata: Sequence[str],
    cand: Sequence[float],
    base: Sequence[float],
    conf: float = 0.95,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> PairedResult:
    """Paired candidate-minus-baseline delta over tasks, with the decision interval.

    ``cand[i]`` and ``base[i]`` are per-task scores (pass 0/1, or per-task means over
    epochs) for the same task, ``strata[i]`` its stratum. The decision interval is the
    stratified t interval (method ``"stratified_t"``); with one stratum it is the paired
    t interval (method ``"paired_t"``). If some stratum has a single task its variance
    cannot be estimated, and the result falls back to the unstratified paired t interval
    (method ``"paired_t"``, reason in ``note``). Also reports the unstratified paired t
    interval, a blocked bootstrap, the exact McNemar (sign-test) p, and for binary
    outcomes the Newcombe hybrid score interval. When every score is in [0, 1] (pass rates)
    the t bounds (``ci_low``/``ci_high``, ``paired_t_ci``) are clamped to [-1, 1], the raw ones
    kept in ``ci_raw``/``paired_t_ci_raw``; delta, se and the p-values are never changed.
    """
    conf = _check_conf(conf)
    d, order, codes, cb = _as_pairs(strata, cand, base)
    n = len(d)
    labels = [order[c] for c in codes]
    n_by = {h: int(np.sum(codes == i)) for i, h in enumerate(order)}
    if n < 2:
        raise ValueError(f"need at least 2 paired tasks for an interval, got {n}")

    pt_delta, pt_se, pt_df, pt_ci = _paired_t(d, conf)
    note = ""
    if len(order) == 1:
        delta, se, df, ci, method = pt_delta, pt_se, pt_df, pt_ci, "paired_t"
    elif min(n_by.values()) < 2:
        small = [h for h, k in n_by.items() if k < 2]
        note = (
            f"strata {small} have fewer than 2 tasks: stratified t variance undefined; "
            f"fell back to the unstratified paired t interval"
        )
        delta, se, df, ci, method = pt_delta, pt_se, pt_df, pt_ci, "paired_t"
    else:
        delta, se, df, ci = stratified_t(labels, d, conf)
        method = "stratified_t"
    c, b = cb
    rates = bool(np.all((c >= 0) & (c <= 1)) and np.all((b >= 0) & (b <= 1)))
    limits = (-1.0, 1.0) if rates else None  # a difference of two rates

    boot_ci, boot_se, _ = blocked_bootstrap(labels, d, conf, n_resamples, seed)
    wins = int(np.sum(d > 0))
    losses = int(np.sum(d < 0))

    newcombe = None
    if np.all(np.isin(c, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))):
        newcombe = newcombe_paired_interval(**two_by_two(c, b), conf=conf)

    return PairedResult(
        delta=float(delta),
        se=float(se),
        df=int(df),
        ci_low=clamp_interval(ci, limits)[0],
        ci_high=clamp_interval(ci, limits)[1],
        method=method,
        n=n,
        n_by_stratum=n_by,
        paired_t_ci=clamp_interval(pt_ci, limits),
        paired_t_p=_t_pvalue(pt_delta, pt_se, pt_df),
        bootstrap_ci=boot_ci,
        bootstrap_se=boot_se,
        mcnemar_p=mcnemar_exact_p(wins, losses),
        discordance=(wins + losses) / n,
        wins=wins,
        losses=losses,
        conf=conf,
        newcombe_ci=newcombe,
        note=note,
        bootstrap_resamples=int(n_resamples),
        seed=int(seed),
        ci_raw=(float(ci[0]), float(ci[1])),
        paired_t_ci_raw=(float(pt_ci[0]), float(pt_ci[1])),
    )


# ------------------------------------------------------------------------ decision
