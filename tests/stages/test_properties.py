"""Property-based tests (hypothesis) for the statistics and the parsers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core.core import PackError  # noqa: E402
from sealbench.pack import packs, patches  # noqa: E402
from sealbench.stages import leak_check  # noqa: E402
from sealbench.stats import decision_rule, paired, rate_intervals  # noqa: E402

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


@pytest.mark.unit
@FAST
@given(paired_packs())
def test_decision_interval_contains_the_point_estimate(pack) -> None:
    strata, cand, base = pack
    r = paired.paired_delta(strata, cand, base, n_resamples=2000)
    assert r.ci_low - 1e-12 <= r.delta <= r.ci_high + 1e-12


@pytest.mark.unit
@FAST
@given(paired_packs())
def test_swapping_candidate_and_baseline_flips_the_sign(pack) -> None:
    strata, cand, base = pack
    a = paired.paired_delta(strata, cand, base, n_resamples=2000)
    b = paired.paired_delta(strata, base, cand, n_resamples=2000)
    assert a.delta == pytest.approx(-b.delta, abs=1e-12)
    assert a.ci_low == pytest.approx(-b.ci_high, abs=1e-9) and a.ci_high == pytest.approx(-b.ci_low, abs=1e-9)
    flip = {decision_rule.VERDICT_CANDIDATE: decision_rule.VERDICT_BASELINE, decision_rule.VERDICT_BASELINE: decision_rule.VERDICT_CANDIDATE,
            decision_rule.VERDICT_NONE: decision_rule.VERDICT_NONE}
    assert decision_rule.verdict(b) == flip[decision_rule.verdict(a)]


@pytest.mark.unit
@FAST
@given(paired_packs(), st.sampled_from(STRATA))
def test_a_task_both_fail_never_turns_no_winner_into_a_loser(pack, stratum) -> None:
    """A task both fail (a tie) leaves the wins, the losses and so the exact test as they were,
    never grows |delta|, and never reverses a named winner. The stratified t interval alone is
    not monotone in ties (a tie can shrink a stratum's variance and raise its degrees of
    freedom: xs [0, 1] + a tie turns [-…, …] into [0.03, 0.83]); that is one reason the gate
    names a winner only when the exact McNemar test agrees, and a tie cannot move that test."""
    strata, cand, base = pack
    r0 = paired.paired_delta(strata, cand, base, n_resamples=2000)
    r1 = paired.paired_delta(strata + [stratum], cand + [0.0], base + [0.0], n_resamples=2000)
    assert (r1.wins, r1.losses, r1.mcnemar_p) == (r0.wins, r0.losses, r0.mcnemar_p)
    assert abs(r1.delta) <= abs(r0.delta) + 1e-12
    before = decision_rule.gate_call(r0, alpha=0.05).verdict
    after = decision_rule.gate_call(r1, alpha=0.05).verdict
    if before != decision_rule.VERDICT_NONE:
        assert after in (before, decision_rule.VERDICT_NONE)
    if not r0.mcnemar_p < 0.05:
        assert after == decision_rule.VERDICT_NONE


@pytest.mark.unit
@FAST
@given(st.integers(0, 60), st.integers(1, 60))
def test_wilson_interval_is_inside_0_1_and_contains_the_rate(k, n) -> None:
    k = min(k, n)
    lo, hi = rate_intervals.wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


@pytest.mark.unit
@FAST
@given(st.binary(max_size=400))
def test_split_patch_never_crashes_on_garbage(data) -> None:
    try:
        sections = patches.split_patch(data)
    except ValueError:
        return
    assert all(isinstance(s.new_path, str) for s in sections)


@pytest.mark.unit
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


@pytest.mark.sandbox
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
        packs.validate_meta(d / "meta.json", STRATA)
    except PackError as exc:
        assert "meta.json" in str(exc)
