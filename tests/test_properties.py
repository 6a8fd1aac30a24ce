"""Property-based tests (hypothesis) for the statistics and the parsers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench import core, leak_check, scoring, stats  # noqa: E402
from sealbench.core import PackError  # noqa: E402

STRATA = ["xs", "s", "m"]


@st.composite
def paired_packs(draw, min_per_stratum=2, max_per_stratum=12):
    strata, cand, base = [], [], []
    for h in STRATA:
        n = draw(st.integers(min_per_stratum, max_per_stratum))
        strata += [h] * n
        cand += draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
        base += draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=n, max_size=n))
    return strata, cand, base


FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(paired_packs())
def test_decision_interval_contains_the_point_estimate(pack) -> None:
    strata, cand, base = pack
    r = stats.paired_delta(strata, cand, base, n_resamples=2000)
    assert r.ci_low - 1e-12 <= r.delta <= r.ci_high + 1e-12


@FAST
@given(paired_packs())
def test_swapping_candidate_and_baseline_flips_the_sign(pack) -> None:
    strata, cand, base = pack
    a = stats.paired_delta(strata, cand, base, n_resamples=2000)
    b = stats.paired_delta(strata, base, cand, n_resamples=2000)
    assert a.delta == pytest.approx(-b.delta, abs=1e-12)
    assert a.ci_low == pytest.approx(-b.ci_high, abs=1e-9) and a.ci_high == pytest.approx(-b.ci_low, abs=1e-9)
    flip = {stats.VERDICT_CANDIDATE: stats.VERDICT_BASELINE, stats.VERDICT_BASELINE: stats.VERDICT_CANDIDATE,
            stats.VERDICT_NONE: stats.VERDICT_NONE}
    assert stats.verdict(b) == flip[stats.verdict(a)]


@FAST
@given(paired_packs(), st.sampled_from(STRATA))
def test_a_task_both_fail_never_turns_no_winner_into_a_loser(pack, stratum) -> None:
    strata, cand, base = pack
    before = stats.verdict(stats.paired_delta(strata, cand, base, n_resamples=2000))
    after = stats.verdict(stats.paired_delta(strata + [stratum], cand + [0.0], base + [0.0], n_resamples=2000))
    if before == stats.VERDICT_NONE:
        assert after == stats.VERDICT_NONE
    else:
        assert after in (before, stats.VERDICT_NONE)


@FAST
@given(st.integers(0, 60), st.integers(1, 60))
def test_wilson_interval_is_inside_0_1_and_contains_the_rate(k, n) -> None:
    k = min(k, n)
    lo, hi = stats.wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


@FAST
@given(st.binary(max_size=400))
def test_split_patch_never_crashes_on_garbage(data) -> None:
    try:
        sections = scoring.split_patch(data)
    except ValueError:
        return
    assert all(isinstance(s.new_path, str) for s in sections)


@FAST
@given(st.binary(max_size=300))
def test_denylist_reader_takes_any_bytes(tmp_path_factory, data) -> None:
    p = tmp_path_factory.mktemp("d") / "denylist.txt"
    p.write_bytes(data)
    try:
        lines = leak_check.read_denylist(p)
    except PackError as exc:
        assert "denylist.txt" in str(exc) and "UTF-8" in str(exc)
        return
    assert all(line.text and not line.text.startswith("#") for line in lines)


meta_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=8),
                        st.lists(st.integers(), max_size=2))


@FAST
@given(st.dictionaries(st.sampled_from(["id", "title", "stratum", "language", "time_box_sec", "visible_command",
                                        "hidden_command", "failing_tests", "loc", "notes", "tags", "extra"]),
                       meta_values, max_size=12))
def test_meta_validation_names_the_file_or_accepts(tmp_path_factory, meta) -> None:
    d = tmp_path_factory.mktemp("pack") / "tasks" / "t1"
    for sub in ("repo", "visible_tests", "hidden_tests"):
        (d / sub).mkdir(parents=True)
    for f in ("prompt.md", "oracle.patch"):
        (d / f).write_text("x\n")
    (d / "meta.json").write_text(json.dumps(meta))
    try:
        core.validate_meta(d / "meta.json", STRATA)
    except PackError as exc:
        assert "meta.json" in str(exc)
