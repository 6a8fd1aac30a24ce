"""The blocked (within-stratum) bootstrap of the stratified paired delta.

Tasks are resampled *within* each stratum, so the resampled delta keeps the weights
``w_h = n_h / n``. This is the variance picture reported next to the decision interval, never
the decision itself: a percentile bootstrap under-covers at small n. :func:`blocked_bootstrap`
draws the resamples (``numpy.random.default_rng(DEFAULT_SEED)``, ``DEFAULT_RESAMPLES`` draws,
at least ``MIN_RESAMPLES``); :func:`stratified_bootstrap_se_exact` and
:func:`exact_stratified_bootstrap` give its B -> infinity limit (the SE, and the whole
distribution for differences on a lattice).

Reads nothing and writes nothing. Failure modes are ``ValueError`` naming what is wrong.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .rate_intervals import _check_conf

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_RESAMPLES",
    "ExactBootstrap",
    "blocked_bootstrap",
    "stratified_bootstrap_se_exact",
    "exact_stratified_bootstrap",
]


DEFAULT_SEED = 20241101
"""Seed of the reference bootstrap (``numpy.random.default_rng``)."""
DEFAULT_RESAMPLES = 10_000
"""Bootstrap resamples used by default (at least 2000 are required)."""
MIN_RESAMPLES = 2000


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
        idx = _draw_indices(rng, len(dh), n_resamples)
        sums += _row_sums(dh, idx)
        del idx  # before the next stratum's draw: one (B, n_h) array of indices alive at a time
    # sum_h (n_h/n) * mean*_h == (sum of resampled d) / n; dividing once keeps
    # lattice values exact (an all-zero or tied resample is exactly 0, not 1e-17).
    draws = sums / n
    alpha = 1.0 - conf
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi)), float(draws.std(ddof=1)), draws


def _draw_indices(rng: np.random.Generator, n_h: int, n_resamples: int) -> np.ndarray:
    """``rng.integers(0, n_h, size=(n_resamples, n_h))``: the same numbers from the same stream,
    drawn as int32 where this numpy draws them identically either way (below 2**32 both dtypes
    use its one 32-bit bounded generator; checked by :func:`_int32_draws_agree`), which halves
    the memory and the time of the draw."""
    if n_h < 2**31 and _int32_draws_agree(n_h):
        return rng.integers(0, n_h, size=(n_resamples, n_h), dtype=np.int32)
    return rng.integers(0, n_h, size=(n_resamples, n_h))


@functools.lru_cache(maxsize=256)
def _int32_draws_agree(n_h: int) -> bool:
    """Whether int32 and int64 draws of ``integers(0, n_h)`` give the same numbers and leave
    the generator in the same state, on a few seeds (else the int64 draw is used as written)."""
    for seed in (0, 1, DEFAULT_SEED):
        a, b = np.random.default_rng(seed), np.random.default_rng(seed)
        x = a.integers(0, n_h, size=(3, 101))
        y = b.integers(0, n_h, size=(3, 101), dtype=np.int32)
        if not (np.array_equal(x, y) and a.bit_generator.state == b.bit_generator.state):
            return False
    return True


#: Resampled values :func:`_row_sums` gathers at once (about 4 MB of float64): a block of whole
#: resamples stays in cache, and the (B, n_h) gather is never held in memory.
BLOCK_VALUES = 1 << 19


def _row_sums(dh: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """``dh[idx].sum(axis=1)``, gathered a block of rows at a time: each row is summed by the
    same reduction over the same values, so every sum is bit-identical to the one-shot form."""
    rows = max(1, BLOCK_VALUES // max(1, idx.shape[1]))
    out = np.empty(idx.shape[0])
    for start in range(0, idx.shape[0], rows):
        np.take(dh, idx[start:start + rows]).sum(axis=1, out=out[start:start + rows])
    return out


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
