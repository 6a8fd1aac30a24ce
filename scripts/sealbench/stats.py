"""Statistics for the sealbench gate: which numbers may be published.

Reads nothing and writes nothing: plain typed functions over plain data (sequences of
numbers and labels), frozen dataclasses for results. The gate stage calls these.

The unit of analysis is the *task*: epochs (repeated attempts) are averaged per task
first (:func:`per_task_means`), then candidate and baseline are paired on task ids.

Decision rule (see ``verdict``): a winner is named only when the decision interval
excludes zero: ``ci_low > 0`` names the candidate, ``ci_high < 0`` the baseline; any
interval with ``ci_low <= 0 <= ci_high`` (including the degenerate ``[0, 0]``) is
``NO_WINNER``. The decision interval is the *stratified t interval*

    delta = sum_h w_h * dbar_h,                w_h = n_h / n
    se    = sqrt(sum_h w_h**2 * s_h**2 / n_h), s_h**2 the ddof=1 variance of d in stratum h
    df    = n - H                              (H strata)
    ci    = delta -/+ t_{1-alpha/2, df} * se

which with one stratum is exactly the paired t interval. A blocked (within-stratum)
percentile bootstrap is reported as the variance picture only: it under-covers at small n.

Power: Miller (2024, "Adding Error Bars to Evals") Eq. 9, ``n = (z_{1-a/2} + z_{power})**2
* omega**2 / mde**2`` with ``omega**2 = psi - mde**2`` for a paired binary outcome with
discordance rate ``psi``; Connor (1987) for McNemar's test.

Failure modes are ``ValueError`` with a message naming what is wrong (empty sample,
mismatched lengths, a stratum too small to estimate its variance, ...).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import stats as _st

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_RESAMPLES",
    "VERDICT_CANDIDATE",
    "VERDICT_BASELINE",
    "VERDICT_NONE",
    "PairedResult",
    "ExactBootstrap",
    "VarianceComponents",
    "GateCall",
    "wilson_interval",
    "clopper_pearson_interval",
    "per_task_means",
    "expand_2x2_counts",
    "two_by_two",
    "paired_delta",
    "stratified_t",
    "mcnemar_exact_p",
    "mcnemar_midp",
    "newcombe_paired_interval",
    "newcombe_phi",
    "blocked_bootstrap",
    "stratified_bootstrap_se_exact",
    "exact_stratified_bootstrap",
    "verdict",
    "is_underpowered",
    "gate_call",
    "required_n_miller",
    "required_n_connor",
    "observed_mde",
    "observed_mde_from_sd",
    "task_level_se",
    "clustered_se",
    "naive_attempt_se",
    "miller_variance_components",
    "pass_at_k",
    "pass_hat_k",
]

DEFAULT_SEED = 20241101
"""Seed of the reference bootstrap (``numpy.random.default_rng``)."""
DEFAULT_RESAMPLES = 10_000
"""Bootstrap resamples used by default (at least 2000 are required)."""
MIN_RESAMPLES = 2000

VERDICT_CANDIDATE = "WINNER_CANDIDATE"
VERDICT_BASELINE = "WINNER_BASELINE"
VERDICT_NONE = "NO_WINNER"


# --------------------------------------------------------------------------- helpers


def _check_conf(conf: float) -> float:
    conf = float(conf)
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {conf!r}")
    return conf


def _z(q: float) -> float:
    return float(_st.norm.ppf(q))


def _check_kn(k: int, n: int) -> tuple[int, int]:
    if int(n) != n or int(k) != k:
        raise ValueError(f"k and n must be whole numbers, got k={k!r}, n={n!r}")
    k, n = int(k), int(n)
    if n <= 0:
        raise ValueError(
            f"cannot compute a binomial interval with n={n} trials: no tasks were scored"
        )
    if not 0 <= k <= n:
        raise ValueError(f"successes k={k} must satisfy 0 <= k <= n={n}")
    return k, n


# ----------------------------------------------------------------- binomial intervals


def wilson_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` passes out of ``n`` tasks (no continuity correction).

    Raises ``ValueError`` when ``n == 0`` (no tasks: there is no rate to bound).
    """
    k, n = _check_kn(k, n)
    ci = _st.binomtest(k, n).proportion_ci(confidence_level=_check_conf(conf), method="wilson")
    return float(ci.low), float(ci.high)


def clopper_pearson_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson ("exact") interval for ``k`` passes out of ``n`` tasks.

    Raises ``ValueError`` when ``n == 0``.
    """
    k, n = _check_kn(k, n)
    ci = _st.binomtest(k, n).proportion_ci(confidence_level=_check_conf(conf), method="exact")
    return float(ci.low), float(ci.high)


def rate_interval(passes: float, n: int, method: str = "wilson") -> tuple[float | None, float | None]:
    """95% interval of a per-task pass share: Wilson (default) or Clopper–Pearson. With epochs
    ``passes`` may be fractional; Wilson then uses the per-task share as p-hat and Clopper–Pearson
    rounds to the nearest whole count (said in docs/results.md)."""
    if n == 0:
        return None, None
    if method == "clopper_pearson":
        return clopper_pearson_interval(int(round(passes)), n)
    if abs(passes - round(passes)) < 1e-9:
        return wilson_interval(int(round(passes)), n)
    z = 1.959963984540054
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


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
    """Lower end of the decision interval."""
    ci_high: float
    """Upper end of the decision interval."""
    method: str
    """"stratified_t" (H >= 2 strata) or "paired_t" (one stratum, or a fallback)."""
    n: int
    """Number of paired tasks."""
    n_by_stratum: dict[str, int]
    """Tasks per stratum, in first-appearance order."""
    paired_t_ci: tuple[float, float]
    """Unstratified paired t interval (ignores strata), for comparison."""
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


def stratified_t(
    strata: Sequence[str], d: Sequence[float], conf: float = 0.95
) -> tuple[float, float, int, tuple[float, float]]:
    """Stratified t interval for paired differences ``d``: ``(delta, se, df, (lo, hi))``.

    ``delta = sum w_h dbar_h`` with ``w_h = n_h/n``; ``se = sqrt(sum w_h^2 s_h^2 / n_h)``
    (``s_h^2`` ddof=1); ``df = n - H``. Raises ``ValueError`` if a stratum has fewer
    than 2 tasks (its variance cannot be estimated).
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
    half = float(_st.t.ppf(0.5 + conf / 2, df)) * se
    return delta, se, df, (delta - half, delta + half)


def _paired_t(d: np.ndarray, conf: float) -> tuple[float, float, int, tuple[float, float]]:
    n = len(d)
    if n < 2:
        raise ValueError(f"a paired t interval needs at least 2 tasks, got {n}")
    delta = float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    half = float(_st.t.ppf(0.5 + conf / 2, n - 1)) * se
    return delta, se, n - 1, (delta - half, delta + half)


def _t_pvalue(delta: float, se: float, df: int) -> float:
    if se == 0.0:
        return 1.0 if delta == 0.0 else 0.0
    return float(2.0 * _st.t.sf(abs(delta) / se, df))


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
    return float(min(1.0, 2.0 * _st.binom.cdf(min(wins, losses), m, 0.5)))


def mcnemar_midp(wins: int, losses: int) -> float:
    """Mid-p version of the exact McNemar test (exact p minus the point probability)."""
    wins, losses = int(wins), int(losses)
    m = wins + losses
    if m == 0:
        return 1.0
    k = min(wins, losses)
    p = 2.0 * (_st.binom.cdf(k, m, 0.5) - 0.5 * _st.binom.pmf(k, m, 0.5))
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


# ---------------------------------------------------------------------- bootstrap


def blocked_bootstrap(
    strata: Sequence[str],
    d: Sequence[float],
    conf: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[tuple[float, float], float, np.ndarray]:
    """Blocked bootstrap of the stratified delta: resample tasks *within* each stratum.

    Returns ``((lo, hi), se, draws)``: the percentile interval (``numpy.quantile``,
    linear rule), the ddof=1 sd of the draws, and the draws themselves. Draw order: for
    each stratum in first-appearance order, ``rng.integers(0, n_h, size=(B, n_h))``.
    """
    conf = _check_conf(conf)
    if n_resamples < MIN_RESAMPLES:
        raise ValueError(f"n_resamples must be at least {MIN_RESAMPLES}, got {n_resamples}")
    d_arr = np.asarray(d, dtype=float)
    labels = np.asarray([str(s) for s in strata])
    if len(labels) != len(d_arr) or len(d_arr) == 0:
        raise ValueError("need one stratum label per difference and at least one task")
    n = len(d_arr)
    rng = np.random.default_rng(seed)
    sums = np.zeros(n_resamples)
    for h in dict.fromkeys(labels.tolist()):
        dh = d_arr[labels == h]
        idx = rng.integers(0, len(dh), size=(n_resamples, len(dh)))
        sums += dh[idx].sum(axis=1)
    # sum_h (n_h/n) * mean*_h == (sum of resampled d) / n; dividing once keeps
    # lattice values exact (an all-zero or tied resample is exactly 0, not 1e-17).
    draws = sums / n
    alpha = 1.0 - conf
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi)), float(draws.std(ddof=1)), draws


def stratified_bootstrap_se_exact(strata: Sequence[str], d: Sequence[float]) -> float:
    """Exact (B -> infinity) SE of the blocked bootstrap: sqrt(sum w_h^2 var0_h / n_h).

    ``var0_h`` is the ddof=0 variance of d within stratum h. With a single stratum label
    this is the unstratified bootstrap SE.
    """
    d_arr = np.asarray(d, dtype=float)
    labels = np.asarray([str(s) for s in strata])
    n = len(d_arr)
    if n == 0 or len(labels) != n:
        raise ValueError("need one stratum label per difference and at least one task")
    var = 0.0
    for h in dict.fromkeys(labels.tolist()):
        dh = d_arr[labels == h]
        var += (len(dh) / n) ** 2 * float(dh.var(ddof=0)) / len(dh)
    return math.sqrt(var)


@dataclass(frozen=True)
class ExactBootstrap:
    """The exact (B -> infinity) blocked-bootstrap distribution of the stratified delta."""

    values: np.ndarray
    """Support of the distribution (sorted)."""
    probs: np.ndarray
    """Probability of each support value."""
    se: float
    """Standard deviation of the distribution."""
    p_le_0: float
    """P(delta* <= 0)."""
    ci_low: float
    """Inverse-CDF lower percentile: min x with F(x) >= alpha/2."""
    ci_high: float
    """Inverse-CDF upper percentile: min x with F(x) >= 1 - alpha/2."""


def _lattice_scale(d: np.ndarray, max_scale: int = 1000) -> int:
    fracs = [Fraction(float(x)).limit_denominator(max_scale) for x in np.unique(d)]
    scale = 1
    for f in fracs:
        scale = scale * f.denominator // math.gcd(scale, f.denominator)
    if scale > max_scale or not np.allclose(d * scale, np.round(d * scale), atol=1e-9):
        raise ValueError(
            "exact bootstrap needs differences on a lattice k/m with m <= "
            f"{max_scale} (e.g. pass rates over a fixed number of epochs)"
        )
    return scale


def _pmf_power(pmf: np.ndarray, k: int) -> np.ndarray:
    result = np.array([1.0])
    base = pmf
    while k:
        if k & 1:
            result = np.convolve(result, base)
        k >>= 1
        if k:
            base = np.convolve(base, base)
    return result


def exact_stratified_bootstrap(
    strata: Sequence[str], d: Sequence[float], conf: float = 0.95
) -> ExactBootstrap:
    """Exact blocked-bootstrap distribution of the stratified delta (w_h = n_h / n).

    Works for differences on a lattice (binary outcomes, or per-task means over epochs):
    the resampled sum within each stratum is an n_h-fold convolution of the stratum's
    empirical distribution, and the stratified delta is the sum over strata divided by n.
    """
    conf = _check_conf(conf)
    d_arr = np.asarray(d, dtype=float)
    labels = np.asarray([str(s) for s in strata])
    n = len(d_arr)
    if n == 0 or len(labels) != n:
        raise ValueError("need one stratum label per difference and at least one task")
    m = _lattice_scale(d_arr)
    ints = np.round(d_arr * m).astype(int)
    offset = 0
    total = np.array([1.0])
    for h in dict.fromkeys(labels.tolist()):
        ih = ints[labels == h]
        lo = int(ih.min())
        pmf = np.bincount(ih - lo).astype(float) / len(ih)
        total = np.convolve(total, _pmf_power(pmf, len(ih)))
        offset += lo * len(ih)
    values = (np.arange(len(total)) + offset) / (m * n)
    probs = total / total.sum()
    keep = probs > 0
    values, probs = values[keep], probs[keep]
    cdf = np.cumsum(probs)
    alpha = 1.0 - conf
    eps = 1e-12
    lo_v = float(values[np.searchsorted(cdf, alpha / 2 - eps)])
    hi_v = float(values[min(len(values) - 1, np.searchsorted(cdf, 1 - alpha / 2 - eps))])
    mean = float(np.sum(values * probs))
    se = math.sqrt(float(np.sum(probs * (values - mean) ** 2)))
    return ExactBootstrap(
        values=values,
        probs=probs,
        se=se,
        p_le_0=float(probs[values <= 1e-12].sum()),
        ci_low=lo_v,
        ci_high=hi_v,
    )


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
    outcomes the Newcombe hybrid score interval.
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

    boot_ci, boot_se, _ = blocked_bootstrap(labels, d, conf, n_resamples, seed)
    wins = int(np.sum(d > 0))
    losses = int(np.sum(d < 0))

    newcombe = None
    c, b = cb
    if np.all(np.isin(c, (0.0, 1.0))) and np.all(np.isin(b, (0.0, 1.0))):
        newcombe = newcombe_paired_interval(**two_by_two(c, b), conf=conf)

    return PairedResult(
        delta=float(delta),
        se=float(se),
        df=int(df),
        ci_low=float(ci[0]),
        ci_high=float(ci[1]),
        method=method,
        n=n,
        n_by_stratum=n_by,
        paired_t_ci=(float(pt_ci[0]), float(pt_ci[1])),
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
    )


# ------------------------------------------------------------------------ decision


def is_underpowered(n: int, n_required: int | None) -> bool:
    """True when a pack of ``n`` tasks is smaller than the pre-registered ``n_required``."""
    return n_required is not None and int(n) < int(n_required)


def verdict(result: PairedResult, n_required: int | None = None) -> str:
    """The gate's call from the decision interval.

    ``"WINNER_CANDIDATE"`` if ``ci_low > 0``, ``"WINNER_BASELINE"`` if ``ci_high < 0``,
    else ``"NO_WINNER"`` (so a degenerate ``[0, 0]`` is NO_WINNER). When ``n_required``
    is given and ``result.n < n_required`` the pack is underpowered for the
    pre-registered MDE and no winner is named: the result is ``"NO_WINNER"`` whatever
    the interval says (see :func:`gate_call` for the interval-only call and the flag).
    """
    call = _interval_call(result.ci_low, result.ci_high)
    if is_underpowered(result.n, n_required):
        return VERDICT_NONE
    return call


def _interval_call(lo: float, hi: float) -> str:
    if lo > 0:
        return VERDICT_CANDIDATE
    if hi < 0:
        return VERDICT_BASELINE
    return VERDICT_NONE


@dataclass(frozen=True)
class GateCall:
    """The decision with its flags, e.g. ``NO_WINNER + UNDERPOWERED`` or ``NO_WINNER + BELOW_MDE``."""

    verdict: str
    """Final call: a winner is named only when the interval excludes 0, the pack is powered,
    the exact sign test agrees (when ``alpha`` is given) and |delta| >= ``mde`` (when given)."""
    interval_verdict: str
    """What the interval alone says, ignoring power."""
    underpowered: bool
    """n < n_required for the pre-registered MDE."""
    n: int
    """Tasks in the comparison."""
    n_required: int | None
    """Tasks required for the pre-registered MDE (None if not given)."""
    below_mde: bool = False
    """The interval excludes 0 but |delta| is smaller than the pre-registered MDE (seed 003: no winner)."""
    exact_disagrees: bool = False
    """The interval excludes 0 but the exact McNemar (sign) test on the discordant tasks has
    p >= alpha: a collapsed or too-narrow interval is not evidence (e.g. 4 wins / 0 losses, p 0.125)."""
    degenerate_interval: bool = False
    """The decision interval has zero width: every task in each stratum has the same paired
    outcome. It shows no spread, not certainty."""

    @property
    def label(self) -> str:
        """``verdict`` plus each flag that held the winner back."""
        flags = [name for name, on in (("UNDERPOWERED", self.underpowered), ("BELOW_MDE", self.below_mde),
                                       ("EXACT_TEST_NOT_SIGNIFICANT", self.exact_disagrees)) if on]
        return " + ".join([self.verdict, *flags])


def gate_call(result: PairedResult, n_required: int | None = None, *, mde: float | None = None,
              alpha: float | None = None) -> GateCall:
    """Verdict, interval-only verdict and the flags that can hold a winner back.

    ``mde``: the pre-registered minimum detectable effect; a delta with ``|delta| < mde`` names
    no winner (``below_mde``). ``alpha``: the exact McNemar p on the per-task wins and losses
    must be below it too, so a collapsed interval (``[d, d]`` when every task in each stratum
    has the same paired outcome) never names a winner on a handful of wins alone."""
    interval = _interval_call(result.ci_low, result.ci_high)
    underpowered = is_underpowered(result.n, n_required)
    below = mde is not None and interval != VERDICT_NONE and abs(result.delta) < mde - 1e-12
    exact_no = alpha is not None and interval != VERDICT_NONE and not result.mcnemar_p < alpha
    final = VERDICT_NONE if (underpowered or below or exact_no) else interval
    return GateCall(
        verdict=final,
        interval_verdict=interval,
        underpowered=underpowered,
        n=result.n,
        n_required=n_required,
        below_mde=below,
        exact_disagrees=exact_no,
        degenerate_interval=result.ci_high - result.ci_low <= 1e-12,
    )


# --------------------------------------------------------------------------- power


def _zsum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    return _z(1 - alpha / 2) + _z(power)


def _check_mde_psi(mde: float, psi: float) -> None:
    if mde <= 0:
        raise ValueError(f"mde must be > 0, got {mde}")
    if not 0 < psi <= 1:
        raise ValueError(f"discordance rate psi must be in (0, 1], got {psi}")
    if psi <= mde**2:
        raise ValueError(
            f"mde={mde} is impossible with discordance psi={psi} (need psi > mde**2)"
        )


def required_n_miller(
    mde: float,
    psi: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    omega2: float | None = None,
) -> tuple[float, int]:
    """Tasks needed to detect a paired delta ``mde`` (Miller Eq. 9): ``(raw, ceil)``.

    ``n = (z_{1-alpha/2} + z_power)^2 * omega^2 / mde^2`` with ``omega^2 = psi - mde^2``
    for binary paired outcomes at discordance ``psi``; or pass ``omega2`` directly (the
    variance of the paired difference) instead of ``psi``. Planning formula: like the
    reference it accepts any ``psi > mde^2``, although a binary pack can only realise
    ``|delta| <= psi``.
    """
    if (psi is None) == (omega2 is None):
        raise ValueError("give exactly one of psi (discordance rate) or omega2")
    if omega2 is None:
        _check_mde_psi(mde, psi)
        omega2 = psi - mde**2
    elif mde <= 0 or omega2 <= 0:
        raise ValueError(f"mde and omega2 must be > 0, got {mde}, {omega2}")
    raw = _zsum(alpha, power) ** 2 * omega2 / mde**2
    return raw, math.ceil(raw - 1e-9)


def required_n_connor(
    mde: float, psi: float, alpha: float = 0.05, power: float = 0.8
) -> tuple[float, int]:
    """Tasks needed for McNemar's test (Connor 1987): ``(raw, ceil)``.

    ``n = (z_{1-alpha/2} sqrt(psi) + z_power sqrt(psi - mde^2))^2 / mde^2``.
    """
    _check_mde_psi(mde, psi)
    _zsum(alpha, power)
    raw = (_z(1 - alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(psi - mde**2)) ** 2 / mde**2
    return raw, math.ceil(raw - 1e-9)


def observed_mde(n: int, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest paired delta a pack of ``n`` tasks detects at discordance ``psi``.

    Inverts Miller Eq. 9 with ``omega^2 = psi - mde^2``:
    ``mde = sqrt(Z^2 psi / (n + Z^2))``, ``Z = z_{1-alpha/2} + z_power``.
    """
    if n <= 0 or not 0 < psi <= 1:
        raise ValueError(f"need n > 0 and psi in (0, 1], got n={n}, psi={psi}")
    z2 = _zsum(alpha, power) ** 2
    return math.sqrt(z2 * psi / (n + z2))


def observed_mde_from_sd(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """MDE from an observed sd of the paired differences: ``Z * sd / sqrt(n)`` (Eq. 9)."""
    if n <= 0 or sd < 0:
        raise ValueError(f"need n > 0 and sd >= 0, got n={n}, sd={sd}")
    return _zsum(alpha, power) * sd / math.sqrt(n)


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
