"""The sensitivity analysis: the candidate's rate and the comparison's verdict with the runs
left out of the rate (excluded, infra_fail) counted against the claim — the worst case — and
the refusal ``EXCLUSIONS_DECIDE`` when that changes the result by more than chance.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..core.refusals import ALPHA, refusal
from ..report.sentences import abstained_words, fmt
from ..report.summaries import abstention_counts, dominant_failure, per_task_scores
from ..stats import decision_rule, paired, rate_intervals


def _verdict_of(cand_scores: Mapping[str, float], base_scores: Mapping[str, float], strata_of: Mapping[str, str],
                n_req: int, mde: float, alpha: float = 0.05) -> tuple[str, float | None]:
    """(verdict, delta) of the paired comparison on the matched tasks (NO_WINNER under 2)."""
    common = sorted(set(cand_scores) & set(base_scores))
    if len(common) < 2:
        return decision_rule.VERDICT_NONE, None
    res = paired.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                             [base_scores[t] for t in common])
    return decision_rule.gate_call(res, n_req, mde=mde, alpha=alpha).verdict, res.delta


def sensitivity(runs, cfg: Mapping, cand: str, base: str, split: str, strata_of: Mapping[str, str],
                cand_scores: Mapping[str, float], comparison: Mapping, cand_strata, pooled: bool,
                public: Mapping | None, public_sens: Mapping | None) -> tuple[dict, dict | None]:
    """The candidate's rate with its excluded and infra_fail rows counted as failures (per task,
    epochs averaged, like the headline), the comparison verdict with both solvers' such rows
    counted as failures, and the refusal (``EXCLUSIONS_DECIDE``) when either differs from the
    published one by more than chance: the verdict changes, the public-vs-holdout sentence
    flips, or the rate moves by more than the half-width of the headline's 95% interval (per
    stratum when there is no pooled headline). Returns (record, reason or None)."""
    rows = runs.loc[(runs.split == split) & (runs.solver.isin([cand, base])), ["solver", "status"]]
    counts = {s: abstention_counts(rows[rows.solver == s]) for s in (cand, base)}
    method = cfg.get("interval_method", "wilson")
    passes, n = float(sum(cand_scores.values())), len(cand_scores)
    rate = passes / n if n else None
    verdict = comparison.get("verdict") or decision_rule.VERDICT_NONE
    any_abstained = any(c["excluded"] + c["infra_fail"] for c in counts.values())
    if any_abstained:
        cand_all = per_task_scores(runs, cand, split, abstained_as_failures=True)
        # the worst case for the verdict claimed: the winner's left-out rows as failures and
        # the loser's as passes (excluding the other side's wins must not make a winner)
        # (no winner claimed: both sides' left-out rows as failures, as before)
        c_w, b_w = cand_all, per_task_scores(runs, base, split, abstained_as_failures=True)
        if verdict == decision_rule.VERDICT_BASELINE:
            c_w = per_task_scores(runs, cand, split, abstained_as_passes=True)
        elif verdict == decision_rule.VERDICT_CANDIDATE:
            b_w = per_task_scores(runs, base, split, abstained_as_passes=True)
        verdict_s, delta_s = _verdict_of(c_w, b_w, strata_of, comparison["power"]["required_n_miller"],
                                         cfg["mde"], comparison.get("alpha", ALPHA))
    else:
        cand_all, verdict_s, delta_s = dict(cand_scores), verdict, comparison.get("delta")
    passes_s, n_s = float(sum(cand_all.values())), len(cand_all)
    rate_s = passes_s / n_s if n_s else None
    lo, hi = rate_intervals.rate_interval(passes, n, method)
    half = None if lo is None else (hi - lo) / 2
    moved: list[str] = []
    if any_abstained and rate is not None and rate_s is not None:
        if pooled:
            if rate - rate_s > half + 1e-12:
                moved.append(f"{cand}'s rate is {rate_s:.2f} ({passes_s:g}/{n_s}), not {rate:.2f} ({passes:g}/{n}): "
                             f"a move of {rate - rate_s:.2f}, more than the half-width {half:.2f} of the headline's "
                             "95% interval")
        else:
            for stratum in cfg["strata"]:
                ids = [t for t in cand_all if strata_of.get(t) == stratum]
                if not ids or stratum not in cand_strata.index or cand_strata.loc[stratum, "ci_low"] != \
                        cand_strata.loc[stratum, "ci_low"]:
                    continue
                r0 = float(cand_strata.loc[stratum, "pass_rate"])
                r1 = sum(cand_all[t] for t in ids) / len(ids)
                hw = (float(cand_strata.loc[stratum, "ci_high"]) - float(cand_strata.loc[stratum, "ci_low"])) / 2
                if r0 - r1 > hw + 1e-12:
                    moved.append(f"{cand}'s {stratum} rate is {r1:.2f}, not {r0:.2f}: a move of {r0 - r1:.2f}, "
                                 f"more than the half-width {hw:.2f} of its 95% interval")
    if verdict_s != verdict:
        moved.append(f"the comparison with {base} would be {verdict_s}, not {verdict}")
    if public is not None and public_sens is not None and public["allowed"] != public_sens["allowed"]:
        moved.append("the public-minus-holdout sentence would " + ("not " if public["allowed"] else "")
                     + "be allowed")
    record = {
        "definition": "excluded and infra_fail rows counted as failures (per task, epochs averaged); for the "
                      "verdict, the worst case for the verdict claimed: the winner's such rows as failures, the "
                      "other side's as passes",
        "rate": fmt(rate_s, 6), "passes": passes_s, "n": n_s, "headline_rate": fmt(rate, 6),
        "headline_half_width": fmt(half, 6), "excluded": counts[cand]["excluded"],
        "infra_fail": counts[cand]["infra_fail"], "verdict": verdict_s, "delta": fmt(delta_s, 6),
        "decides": bool(moved),
    }
    reason = None
    if moved:
        whose = f"its {abstained_words(counts[cand])} runs"
        if counts[base]["excluded"] + counts[base]["infra_fail"]:
            whose += f" (and {base}'s {abstained_words(counts[base])})"
        sentence = (f"With {whose} counted as failures, " + "; ".join(moved) + ". Runs left out of the rate decide "
                    "this result: fix what excluded them (the server, its queue, retries or quota, a route change the "
                    "bridge observed, the harness) and rerun.")
        named = [d["sentence"] for x in (cand, base)
                 if (d := dominant_failure(runs, x, split)) is not None and d["status"] is not None]
        if named:
            sentence += " Most common failure: " + "; ".join(named) + "."
        reason = refusal("EXCLUSIONS_DECIDE", sentence,
                         {"rate": record["headline_rate"], "rate_with_exclusions_as_failures": record["rate"],
                          "half_width": record["headline_half_width"], "verdict": verdict,
                          "verdict_with_exclusions_as_failures": verdict_s, "abstained": counts})
    return record, reason
