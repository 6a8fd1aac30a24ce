"""The blocked bootstrap draws exactly what the plain loop over strata drew: the same random
numbers, consumed in the same order, give bit-identical draws, interval and standard error
(``bootstrap.blocked_bootstrap`` gathers and sums the resamples in blocks of rows to keep its
memory small; nothing about the numbers may change)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.stats import bootstrap  # noqa: E402


def loop_bootstrap(strata: Sequence[str], d: Sequence[float], conf: float = 0.95,
                   n_resamples: int = bootstrap.DEFAULT_RESAMPLES,
                   seed: int = bootstrap.DEFAULT_SEED) -> tuple[tuple[float, float], float, np.ndarray]:
    """The reference: blocked_bootstrap as it was written first (one gather of every resample)."""
    d_arr = np.asarray(d, dtype=float)
    labels = np.asarray([str(s) for s in strata])
    n = len(d_arr)
    rng = np.random.default_rng(seed)
    sums = np.zeros(n_resamples)
    for h in dict.fromkeys(labels.tolist()):
        dh = d_arr[labels == h]
        idx = rng.integers(0, len(dh), size=(n_resamples, len(dh)))
        sums += dh[idx].sum(axis=1)
    draws = sums / n
    alpha = 1.0 - conf
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return (float(lo), float(hi)), float(draws.std(ddof=1)), draws


def assert_same(strata, d, **kw) -> None:
    (lo, hi), se, draws = bootstrap.blocked_bootstrap(strata, d, **kw)
    (rlo, rhi), rse, rdraws = loop_bootstrap(strata, d, **kw)
    assert draws.dtype == rdraws.dtype and draws.shape == rdraws.shape
    assert np.array_equal(draws, rdraws)  # bit for bit, not approximately
    assert (lo, hi, se) == (rlo, rhi, rse)


VALUES = st.one_of(
    st.sampled_from([-1.0, -0.8, -0.6, -0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0]),  # epochs averaged (5)
    st.sampled_from([-1.0, -2 / 3, -1 / 3, 0.0, 1 / 3, 2 / 3, 1.0]),              # 3 epochs
    st.floats(-1.0, 1.0, allow_nan=False),
)


@st.composite
def samples(draw):
    names = draw(st.lists(st.sampled_from(["xs", "s", "m", "l", "7"]), min_size=1, max_size=4, unique=True))
    n = draw(st.integers(1, 60))
    strata = draw(st.lists(st.sampled_from(names), min_size=n, max_size=n))
    d = draw(st.lists(VALUES, min_size=n, max_size=n))
    return strata, d


EXACT = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.sandbox
@EXACT
@given(samples(), st.integers(0, 2**63 - 1), st.integers(2000, 2600), st.sampled_from([0.8, 0.9, 0.95, 0.99]),
       st.integers(1, 700))
def test_blocked_bootstrap_draws_exactly_what_the_loop_drew(sample, seed, b, conf, block) -> None:
    strata, d = sample
    saved = bootstrap.BLOCK_VALUES
    bootstrap.BLOCK_VALUES = block  # blocks of a few rows, or of one: every way of cutting the resamples
    try:
        assert_same(strata, d, conf=conf, n_resamples=b, seed=seed)
    finally:
        bootstrap.BLOCK_VALUES = saved


@pytest.mark.sandbox
@pytest.mark.parametrize("n,strata", [(5000, 3), (2001, 1), (999, 4)])
def test_large_samples_at_the_default_block_size(n: int, strata: int) -> None:
    rng = np.random.default_rng(n)
    labels = [f"s{i % strata}" for i in rng.permutation(n)]
    d = (rng.integers(0, 6, n) - rng.integers(0, 6, n)) / 5
    assert_same(labels, d.tolist())
    assert_same(labels, d, n_resamples=2000, seed=7)


@pytest.mark.unit
def test_the_int64_draw_as_written_gives_the_same_draws(monkeypatch) -> None:
    """Where int32 draws could differ (another numpy), the int64 draw of the reference is used."""
    monkeypatch.setattr(bootstrap, "_int32_draws_agree", lambda n_h: False)
    rng = np.random.default_rng(3)
    labels = [f"s{i % 3}" for i in range(600)]
    d = ((rng.integers(0, 6, 600) - rng.integers(0, 6, 600)) / 5).tolist()
    assert_same(labels, d)
    assert bootstrap._draw_indices(np.random.default_rng(1), 7, 2000).dtype == np.int64


@pytest.mark.unit
def test_the_int32_draw_is_taken_only_where_it_agrees() -> None:
    """The smaller, faster int32 draw is taken where this numpy draws the same numbers with it
    (numpy 2.x: below 2**32 both dtypes use one 32-bit bounded generator), else the int64 one."""
    for n_h in (1, 2, 3, 1667, 5000, 2**20 + 7):
        agree = bootstrap._int32_draws_agree(n_h)
        a, b = np.random.default_rng(5), np.random.default_rng(5)
        got = bootstrap._draw_indices(a, n_h, 5)
        assert got.dtype == (np.int32 if agree else np.int64)
        assert np.array_equal(got, b.integers(0, n_h, size=(5, n_h)))
        assert a.bit_generator.state == b.bit_generator.state
