"""The sentences of a decision: which may be published, which may not and why (the seeds'
tables), and the comparison's words.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path

from ..core.contract import ABSTAINED, EXCLUDED, INFRA_FAIL, PASS, TAMPER, TIMEOUT
from ..core.core import read_json
from ..core.refusals import ALPHA
from ..stats import decision_rule


def signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def comparison_why(comparison: Mapping, cfg: Mapping) -> str:
    """Why no winner is named, in words (the comparison half of the banner)."""
    if "delta" not in comparison:
        return comparison.get("note") or "no paired comparison was computed"
    why = []
    if comparison.get("interval_verdict") == decision_rule.VERDICT_NONE:
        why.append(f"the 95% interval [{comparison['ci_low']:+.3f}, {comparison['ci_high']:+.3f}] includes 0")
    if comparison.get("underpowered"):
        why.append(f"{comparison['matched_tasks']} paired tasks detect about {comparison['observed_mde']:.2f}; the "
                   f"pre-registered MDE {cfg['mde']} needs {comparison['power']['required_n_miller']}")
    if comparison.get("below_mde"):
        why.append(f"|delta| {abs(comparison['delta']):.3f} is below the pre-registered MDE {cfg['mde']}")
    if comparison.get("exact_test_disagrees"):
        why.append(f"the exact McNemar p is {comparison['mcnemar_p']:.3f}, not below "
                   f"{comparison.get('alpha', ALPHA):.4g} ({comparison['wins']} wins, {comparison['losses']} losses)")
    return "; ".join(why) or comparison.get("verdict_label", "no winner")


def comparison_summary(comparison: Mapping, cfg: Mapping) -> str:
    """The comparison half of the banner: the winner, or "no winner" and why."""
    v = comparison.get("verdict")
    if v == decision_rule.VERDICT_CANDIDATE:
        return f"winner: {comparison['candidate']} over {comparison['baseline']}"
    if v == decision_rule.VERDICT_BASELINE:
        return f"winner: {comparison['baseline']} over {comparison['candidate']}"
    return "no winner (" + comparison_why(comparison, cfg) + ")"


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def fmt(x: float | None, nd: int = 3) -> float | None:
    """Round for JSON; None and NaN (pandas' null) stay null."""
    return None if x is None or x != x else round(float(x), nd)


def abstained_words(c: Mapping) -> str:
    parts = [f"{c[k]} {k}" for k in (EXCLUDED, INFRA_FAIL) if c[k]]
    return " and ".join(parts) if parts else "0 excluded or infra_fail"


def exclusion_note(counts: Mapping[str, Mapping], cand: str, base: str, delta_s: float | None,
                   verdict_s: str) -> str | None:
    """The sentence stated beside the delta when candidate and baseline abstained at different rates."""
    c, b = counts[cand], counts[base]
    if c["rate"] == b["rate"]:
        return None
    def one(name: str, x: Mapping) -> str:
        return (f"{name} {x['excluded'] + x['infra_fail']} of {x['runs']} runs "
                f"({pct(x['rate'])}: {abstained_words(x)})")
    tail = "" if delta_s is None else f"; with them counted as failures the delta is {delta_s:+.3f} ({verdict_s})"
    return f"Exclusion rates differ: {one(cand, c)} vs {one(base, b)}{tail}."


def median_of(values) -> float | None:
    vals = [float(v) for v in values if v is not None and v == v]
    return None if not vals else float(statistics.median(vals))


def roles_table(runs, split: str) -> list[dict]:
    """Humans beside agents on one split: n, hidden pass rate, median time-to-green, steers, timeouts.

    ``hidden_pass_rate``: per task (epochs averaged), excluded and infra_fail rows left out.
    ``scored_attempts``: the rows that are not excluded or infra_fail. ``greens``: the scored
    attempts that went green *within their clock*: a ``time_to_green_s`` no later than the
    attempt's ``time_box_s``, on an attempt that was neither stopped at its clock (``timeout``)
    nor scored ``tamper``. ``median_time_to_green_s``: the median over **all** scored attempts,
    every attempt that did not go green within its clock counted as +infinity (seed 000:
    timeouts are failures, not discarded); null when there is no scored attempt or when at
    least half of them never went green (the median is infinite: not reached). A median over
    the greens alone made 1 green and 9 timeouts "faster" than 10 greens (issue 11).
    """
    import numpy as np

    out = []
    inf = float("inf")
    sub = runs.loc[(runs.split == split) & (runs.role.isin(["agent", "human"])),
                   ["solver", "role", "task_id", "status", "time_to_green_s", "time_box_s", "steer_count"]]
    # iter(): sorted() of the groupby itself would first ask its length, which builds every group's index
    for (solver, role), g in sorted(iter(sub.groupby(["solver", "role"])), key=lambda kv: (kv[0][1], kv[0][0])):
        scored = g[~g.status.isin(ABSTAINED)]
        per_task = scored.status.eq(PASS).groupby(scored.task_id).mean()
        steers = g.steer_count
        # one per scored attempt: seconds to a green within the clock, or +inf
        ttg = scored.time_to_green_s.astype(float).to_numpy()
        box = scored.time_box_s.astype(float).to_numpy()
        with np.errstate(invalid="ignore"):
            green = ~np.isnan(ttg) & ~scored.status.isin((TIMEOUT, TAMPER)).to_numpy() & (np.isnan(box) | (ttg <= box))
        times = np.where(green, ttg, inf)
        med = median_of(times.tolist())
        out.append({
            "solver": solver, "role": role, "tasks": int(per_task.size), "runs": int(len(g)),
            "hidden_pass_rate": fmt(per_task.mean() if per_task.size else None, 6),
            "scored_attempts": len(times),
            "median_time_to_green_s": None if med is None or med == inf else fmt(med, 3),
            "greens": int((times != inf).sum()),
            "steers": None if steers.isna().any() else int(steers.sum()),
            "timeouts": int((g.status == TIMEOUT).sum()),
            "time_box_s": sorted(float(x) for x in g.time_box_s.dropna().unique()),
        })
    return out


EDIT_CODES = {"HOLDOUT_TUNED", "DENOMINATOR_MOVED", "ENVELOPE_CHANGED", "LEDGER_UNREADABLE", "TUNE_SPLIT"}


def public_comparison(cfg: Mapping, exp: Mapping, cand: str, rate: float | None, publishable: bool) -> dict | None:
    """Public-minus-holdout accuracy of the candidate, when a public-pack experiment is given.

    The sentence "public-set accuracy was higher than holdout accuracy" is allowed only when
    both runs were made without edits (no ledger or split refusal on either side), with the
    same candidate fingerprint, and this decision is publishable."""
    if not cfg.get("public_results"):
        return None
    pub_dir = Path(cfg["public_results"])
    pub = read_json(pub_dir / "decision.json")
    pub_exp = read_json(pub_dir / "experiment.json") if (pub_dir / "experiment.json").exists() else {}
    pub_rate = None if not pub.get("n") else pub["passes"] / pub["n"]
    fp_here = exp["agent_fingerprints"].get(cand)
    fp_there = (pub_exp.get("agent_fingerprints") or {}).get(cand)
    delta = None if pub_rate is None or rate is None else round(pub_rate - rate, 6)
    why = []
    if not publishable:
        why.append("this decision is not publishable")
    edits = sorted({r["code"] for r in pub.get("reasons", []) if r["code"] in EDIT_CODES})
    if edits:
        why.append(f"the public run was edited or fitted ({', '.join(edits)})")
    if fp_here is None or fp_here != fp_there:
        why.append(f"the candidate's fingerprint differs between the runs ({fp_there} vs {fp_here})")
    if delta is None:
        why.append("a rate is missing")
    elif delta <= 0:
        why.append(f"it was not higher (public {pub_rate:.3f} vs holdout {rate:.3f})")
    sentence = "Public-set accuracy was higher than holdout accuracy"
    if delta is not None:
        sentence += f" ({cand}: public {pub_rate:.0%} vs holdout {rate:.0%}, delta {delta:+.3f})"
    return {"public_experiment": pub.get("experiment"), "public_pack_digest": (pub.get("digests") or {}).get("pack"),
            "public_rate": fmt(pub_rate, 6), "holdout_rate": fmt(rate, 6), "delta": delta,
            "allowed": not why, "sentence": sentence + ".", "why": "; ".join(why) or None}


def human_sentences(roles: list[dict], runs, cand: str, split: str, publishable: bool) -> tuple[list[str], list[dict]]:
    """The seed's human-clock sentences (seed 000's table): allowed only when their conditions hold.

    Both compare the candidate with each person on the tasks both attempted on this split (the
    shared tasks) and nowhere else; their numbers (rates, passes, timeouts, steers) are those of
    :func:`roles_table` on that slice.

    *Attempts.* Seed 000 never allows "faster" when "you reran only the agent", and its matched
    clock gives both sides the same session; summing passes over epochs let an agent at 1 pass
    in 3 attempts per task "match" a person at 1 in 1 (issue 11). So, rather than restating
    rates per attempt when the attempt counts differ, both sentences are refused whenever the
    number of attempts (rows of any status: a rerun is a rerun, whatever it scored) differs on
    any shared task, naming the counts. With the same attempts per task on both sides, each
    task's pass rate (passes / attempts, epochs averaged) is a per-attempt rate on the same
    footing. An excluded or infra_fail attempt on a shared task refuses both sentences too:
    leaving it out would compare different attempts, counting it as a failure would charge one
    side for the harness.

    *Matched.* The mean per-task hidden pass rate over the shared tasks: "matched" when the
    candidate's is at least the person's, else "did not match" (also a fact worth stating);
    the sentence gives both rates, the attempts per task, the passes, steers and timeouts
    (timeouts are failures).

    *Faster.* :func:`roles_table`'s median time-to-green on the shared tasks: over every scored
    attempt, an attempt that did not go green within its clock counted as +infinity. Allowed
    only when the candidate's median is finite (most of its attempts went green) and below the
    person's, which may be infinite ("never").
    """
    allowed: list[str] = []
    refused: list[dict] = []
    agent = next((r for r in roles if r["solver"] == cand), None)
    humans = [r for r in roles if r["role"] == "human"]
    if not humans or agent is None:
        refused.append({"sentence": f"On this sealed pack, {cand} matched our developers under the same clock.",
                        "why": "no human session was scored on this split under the same snapshot and clock"})
        refused.append({"sentence": f"{cand} was faster to a green visible suite than our developers.",
                        "why": "no human time-to-green to compare with"})
        return allowed, refused
    for h in humans:
        who = h["solver"]
        shared = sorted(set(runs[(runs.solver == who) & (runs.split == split)].task_id)
                        & set(runs[(runs.solver == cand) & (runs.split == split)].task_id))
        same_clock = bool(h["time_box_s"]) and h["time_box_s"] == agent["time_box_s"]
        why_not = []
        if not publishable:
            why_not.append("the gate refused a headline")
        if not shared:
            why_not.append(f"{who} and {cand} share no scored task")
        if not same_clock:
            why_not.append(f"the clocks differ ({who}: {h['time_box_s']}, {cand}: {agent['time_box_s']})")
        if h["steers"] is None or agent["steers"] is None:
            why_not.append("steers were not recorded for both")
        a = runs[(runs.solver == cand) & (runs.split == split) & (runs.task_id.isin(shared))]
        b = runs[(runs.solver == who) & (runs.split == split) & (runs.task_id.isin(shared))]
        a_n, b_n = a.groupby("task_id").size(), b.groupby("task_id").size()
        moved = [t for t in shared if int(a_n.get(t, 0)) != int(b_n.get(t, 0))]

        def times(counts) -> str:
            lo, hi = int(counts.min()), int(counts.max())
            return f"{lo} time{'' if lo == 1 else 's'}" if lo == hi else f"{lo} to {hi} times"
        if moved:
            per = ", ".join(f"{t}: {cand} {int(a_n.get(t, 0))} vs {who} {int(b_n.get(t, 0))}"
                            for t in moved[:5])
            why_not.append(f"{cand} was run {times(a_n)} per task and {who} {times(b_n)} ({per}"
                           + (f", and {len(moved) - 5} more" if len(moved) > 5 else "") + "): seed 000 never "
                           "allows these sentences when one side was rerun and the other not; compare per attempt, "
                           "with the same number of attempts per task on both sides")
        a_abs, b_abs = int(a.status.isin(ABSTAINED).sum()), int(b.status.isin(ABSTAINED).sum())
        if a_abs or b_abs:
            why_not.append(f"{a_abs} of {cand}'s and {b_abs} of {who}'s attempts on the shared tasks were excluded or "
                           "infra_fail: left out, the sides would not be compared on the same attempts; fix what "
                           "excluded them and rerun")
        clock_min = f"{agent['time_box_s'][0] / 60:g}-minute" if agent["time_box_s"] else "same"
        matched = f"On this sealed pack, {cand} matched {who} under a {clock_min} clock"
        faster = f"{cand} was faster to a green visible suite than {who} on these tasks"
        if why_not:
            refused.append({"sentence": matched + ".", "why": "; ".join(why_not)})
            refused.append({"sentence": faster + ".", "why": "; ".join(why_not)})
            continue
        # the same slice through roles_table: one definition of rates, greens and medians
        sl = {r["solver"]: r for r in roles_table(runs[(runs.split == split) & runs.solver.isin([cand, who])
                                                       & runs.task_id.isin(shared)], split)}
        ra, rb = sl[cand], sl[who]
        a_rate = float(a.status.eq(PASS).groupby(a.task_id).mean().mean())
        b_rate = float(b.status.eq(PASS).groupby(b.task_id).mean().mean())
        a_pass, b_pass = int((a.status == PASS).sum()), int((b.status == PASS).sum())
        attempts = times(a_n).replace("time", "attempt")
        verb = "matched" if a_rate >= b_rate - 1e-9 else "did not match"
        allowed.append(f"On this sealed pack, {cand} {verb} {who} under a {clock_min} clock: mean per-task hidden pass "
                       f"rate {a_rate:.2f} vs {b_rate:.2f} on the same {len(shared)} {split} tasks, {attempts} per "
                       f"task each ({a_pass} vs {b_pass} passes in {len(a)} attempts each; steers: {cand} "
                       f"{ra['steers']}, {who} {rb['steers']}; timeouts {ra['timeouts']} vs {rb['timeouts']}, "
                       "counted as failures).")
        a_med, b_med = ra["median_time_to_green_s"], rb["median_time_to_green_s"]
        a_never, b_never = ra["scored_attempts"] - ra["greens"], rb["scored_attempts"] - rb["greens"]

        def secs(m) -> str:
            return "never" if m is None else f"{m:.0f} s"
        if a_med is None:
            refused.append({"sentence": faster + ".",
                            "why": f"at least half of {cand}'s attempts never went green within the clock "
                                   f"({a_never} of {ra['scored_attempts']}: timeouts, tamper or no green visible "
                                   "suite), so its median time-to-green, timeouts counted as never, is not reached"})
        elif b_med is None or a_med < b_med:
            allowed.append(f"{faster}: median time-to-green {secs(a_med)} vs {secs(b_med)} over all "
                           f"{ra['scored_attempts']} scored attempts each on the same {len(shared)} {split} tasks, an "
                           "attempt that did not go green within its clock (a timeout, tamper, or no green visible "
                           f"suite) counted as +infinity ({a_never} vs {b_never} such attempts; timeouts "
                           f"{ra['timeouts']} vs {rb['timeouts']}).")
        else:
            refused.append({"sentence": faster + ".", "why": f"it was not: median {secs(a_med)} vs {secs(b_med)}, "
                                                             "timeouts counted as never green"})
    return allowed, refused


def redraw_words(redraws: Mapping[str, int]) -> str:
    """The headline sentence's count of slots drawn more than once (empty when none was)."""
    first, cut = redraws.get("first_scored", 0), redraws.get("interrupted", 0)
    if not first and not cut:
        return ""
    parts = []
    if first:
        parts.append(f"{first} run slot(s) were drawn again after a scored draw; the first draw's outcome is counted")
    if cut:
        parts.append(f"{cut} run slot(s) were drawn again after a first draw was interrupted before its agent "
                     "ended; the later draw is counted")
    who = ", ".join(f"{n} of {name}" for name, n in sorted((redraws.get("by_solver") or {}).items()))
    return " " + "; ".join(parts) + (f" ({who})" if who else "") + "."


def timeout_share(solver: str, counts: Mapping) -> str:
    """``NAME t of n runs (p%)``: one solver's runs on the scored split stopped at their clock
    (``counts``: :func:`sealbench.report.summaries.abstention_counts`), as the winner sentence states them."""
    runs, t = counts["runs"], counts["timeouts"]
    return f"{solver} {t} of {runs} runs ({pct(t / runs if runs else None)})"


def envelope_words(env: Mapping, facts: Mapping) -> str:
    """The envelope the headline's runs kept, stating a cap only where it was confirmed on every
    counted run (``facts``: ``counted``, ``steps_unknown``, ``tokens_unknown`` of
    ``gate.headline_facts``); an unconfirmed cap is said to be unconfirmed, with how many runs
    leave it so. The clock is the harness's own and always holds."""
    n = facts.get("counted", 0)
    caps, unconfirmed = [], []
    for cap, unknown, what in ((f"{env['max_steps']} steps", facts.get("steps_unknown", 0),
                                "reported no step count"),
                               (f"{env['max_output_tokens']} output tokens", facts.get("tokens_unknown", 0),
                                "have no output-token count, or only a lower bound")):
        (unconfirmed if unknown else caps).append((cap, unknown, what))
    parts = [f"a clock of at most {env['max_wall_s']} s per task", *(c for c, _u, _w in caps)]
    said = "under " + (", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0])
    if unconfirmed:
        said += (" (not confirmed: the cap of " + " and the cap of ".join(
            f"{c} ({u} of {n} runs {w})" for c, u, w in unconfirmed) + ")")
    return said


def headline_sentences(exp: Mapping, cfg: Mapping, facts: Mapping, sens: Mapping, comparison: Mapping,
                       dummies: list[dict], no_pooled: bool, reuse: Mapping | None, codes: list[str],
                       publishable: bool, alpha: float, interval: Mapping | None = None,
                       redraws: Mapping[str, int] | None = None) -> tuple[list[str], list[dict]]:
    """The headline sentence (pooled or per stratum, with its interval: corrected for the agent
    versions that reached the holdout before, and saying so; with the slots drawn more than once
    counted), the dummy deltas and the comparison sentence — or, when the gate refused, the
    refused headline. The comparison sentence that names a winner states both solvers' timeouts
    on the scored split (the headline states the candidate's), from
    ``comparison["exclusion_rates"]``."""
    cand, base, split = cfg["candidate"], cfg["baseline"], cfg["score_split"]
    env = cfg["envelope"]
    allowed: list[str] = []
    refused: list[dict] = []
    if not publishable:
        refused.append({"sentence": f"{cand} clears {pct(facts['rate'])}.",
                        "why": "the gate refused a headline: " + ", ".join(codes)})
        return allowed, refused
    strata_txt = "; ".join(f"{p['stratum']} {p['passes']:g}/{p['n']}" for p in facts["per_stratum"])
    per = (interval or {}).get("per_stratum") or {}
    if interval is not None and interval.get("corrected") and per:
        # the strata are published numbers too: their intervals carry the same correction
        strata_txt = (f"({interval['confidence'] * 100:.4g}% intervals, Bonferroni-corrected for the "
                      f"{interval['versions']} agent versions that have reached this holdout) " + "; ".join(
                          f"{p['stratum']} {p['passes']:g}/{p['n']} [{per[p['stratum']][0]:.3f}, "
                          f"{per[p['stratum']][1]:.3f}]" for p in facts["per_stratum"] if p["stratum"] in per))
    ci = ""
    if interval is not None and interval.get("low") is not None:
        level = f"{interval['confidence'] * 100:.4g}%"
        ci = (f"; {level} {interval['method'].replace('_', '-')} interval [{interval['low']:.3f}, "
              f"{interval['high']:.3f}]" + (f", Bonferroni-corrected for the {interval['versions']} agent versions "
                                            "that have reached this holdout" if interval.get("corrected") else ""))
    pooled = "" if no_pooled else (f"passed {facts['passes']:g} of {facts['n']} {split} tasks "
                                   f"({pct(facts['rate'])}{ci}) on hidden tests, ")
    allowed.append(
        f"On this sealed pack (digest {exp['pack_digest'][:12]}), {cand} {pooled}"
        f"{'passed hidden tests ' if no_pooled else ''}{envelope_words(env, facts)}; per stratum: {strata_txt}; "
        f"timeouts {facts['timeouts']} (counted as failures), exclusions {facts['excluded']} of "
        f"{facts['scheduled']} scheduled runs"
        + (f" (with them counted as failures: {sens['passes']:g} of {sens['n']}, {pct(sens['rate'])})"
           if facts["excluded"] else "") + "."
        + redraw_words(redraws or {})
        + (f" {reuse['sentence']}" if reuse else "")
    )
    if len(dummies) > 1 or no_pooled:
        allowed.append(f"Against the do-nothing controls on the same {split} tasks, per stratum: " + "; ".join(
            f"{d['stratum']} {d['candidate_rate']:.2f} (empty diff {signed(d['delta_vs_empty_diff'])}, "
            f"stub {signed(d['delta_vs_stub'])}, n={d['n']})" for d in dummies) + ".")
    if comparison.get("verdict") in (decision_rule.VERDICT_CANDIDATE, decision_rule.VERDICT_BASELINE):
        winner, loser = (cand, base) if comparison["verdict"] == decision_rule.VERDICT_CANDIDATE else (base, cand)
        allowed.append(
            f"On these {comparison['matched_tasks']} {split} tasks, {winner} passed more than {loser}: delta "
            f"{comparison['delta']:+.3f} (95% {comparison['method'].replace('_', ' ')} interval "
            f"[{comparison['ci_low']:+.3f}, {comparison['ci_high']:+.3f}], exact McNemar p "
            f"{comparison['mcnemar_p']:.3f} < {alpha:.4g}); timeouts (counted as failures): "
            + ", ".join(timeout_share(x, comparison["exclusion_rates"][x]) for x in (winner, loser))
            + (f". {comparison['exclusion_note']}" if comparison["exclusion_note"] else ".")
            + (f" {reuse['sentence']}" if reuse else "")
        )
    else:
        refused.append({"sentence": f"{cand} is better than {base}.", "why": comparison_why(comparison, cfg)})
    return allowed, refused
