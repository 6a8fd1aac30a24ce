"""gate: the decision — which sentences may be published, or none — with its reasons.

Reads:  experiment.json, tables/{tasks,runs,strata}.parquet, the split manifest, PACK_HASH.txt
Writes: decision.json, card.json, report.md in the experiment folder; points results/latest at it

The gate refuses a headline (``publishable: false``) when any control is missing or broken,
each refusal a code plus a sentence a reviewer understands (see ``REFUSALS``). It never fills
a gap with a default: an unknown stays unknown and is named.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from . import stats
from .card import build_card, card_claim
from .core import SealbenchError, atomic_write_text, canonical_json, envelope_digest, read_json, sha256_text, write_json
from .ledger import (LEDGER_CITATION, NO_SERVER, append_ledger, bare_entry, holdout_reuse, ledger_entry,
                     ledger_reasons, lost_ledger_lines, pinned_servers, read_ledger)
from .refusals import ABSTAINED, ALPHA, note_for, refusal
from .report import write_report
from .report_md import render_report
from .sentences import (abstained_words, comparison_summary, comparison_why, exclusion_note, fmt, human_sentences,
                        pct, public_comparison, roles_table, signed)


# ------------------------------------------------------------------------------ ledger


def per_task_scores(runs, solver: str, split: str, abstained_as_failures: bool = False,
                    abstained_as_passes: bool = False) -> dict[str, float]:
    """Per-task pass share for a solver on a split (epochs averaged; excluded/infra rows left
    out, or counted as failures with ``abstained_as_failures`` — the sensitivity rate — or as
    passes with ``abstained_as_passes``: the worst case for a claim against this solver)."""
    sub = runs[(runs.solver == solver) & (runs.split == split)]
    if not (abstained_as_failures or abstained_as_passes):
        sub = sub[~sub.status.isin(ABSTAINED)]
    won = sub.status.eq("pass") | (sub.status.isin(ABSTAINED) if abstained_as_passes else False)
    share = won.groupby(sub.task_id).mean()
    return {str(tid): float(v) for tid, v in share.items()}


def abstention_counts(rows) -> dict:
    """Runs, excluded and infra_fail rows of one solver on the slice, and their share."""
    total = int(len(rows))
    ex, inf = int((rows.status == "excluded").sum()), int((rows.status == "infra_fail").sum())
    return {"runs": total, "excluded": ex, "infra_fail": inf, "rate": fmt((ex + inf) / total, 6) if total else None}


def _verdict_of(cand_scores: Mapping[str, float], base_scores: Mapping[str, float], strata_of: Mapping[str, str],
                n_req: int, mde: float, alpha: float = 0.05) -> tuple[str, float | None]:
    """(verdict, delta) of the paired comparison on the matched tasks (NO_WINNER under 2)."""
    common = sorted(set(cand_scores) & set(base_scores))
    if len(common) < 2:
        return stats.VERDICT_NONE, None
    res = stats.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                             [base_scores[t] for t in common])
    return stats.gate_call(res, n_req, mde=mde, alpha=alpha).verdict, res.delta


def sensitivity(runs, cfg: Mapping, cand: str, base: str, split: str, strata_of: Mapping[str, str],
                cand_scores: Mapping[str, float], comparison: Mapping, cand_strata, pooled: bool,
                public: Mapping | None, public_sens: Mapping | None) -> tuple[dict, dict | None]:
    """The candidate's rate with its excluded and infra_fail rows counted as failures (per task,
    epochs averaged, like the headline), the comparison verdict with both solvers' such rows
    counted as failures, and the refusal (``EXCLUSIONS_DECIDE``) when either differs from the
    published one by more than chance: the verdict changes, the public-vs-holdout sentence
    flips, or the rate moves by more than the half-width of the headline's 95% interval (per
    stratum when there is no pooled headline). Returns (record, reason or None)."""
    rows = runs[(runs.split == split) & (runs.solver.isin([cand, base]))]
    counts = {s: abstention_counts(rows[rows.solver == s]) for s in (cand, base)}
    method = cfg.get("interval_method", "wilson")
    passes, n = float(sum(cand_scores.values())), len(cand_scores)
    rate = passes / n if n else None
    verdict = comparison.get("verdict") or stats.VERDICT_NONE
    any_abstained = any(c["excluded"] + c["infra_fail"] for c in counts.values())
    if any_abstained:
        cand_all = per_task_scores(runs, cand, split, abstained_as_failures=True)
        # the worst case for the verdict claimed: the winner's left-out rows as failures and
        # the loser's as passes (excluding the other side's wins must not make a winner)
        # (no winner claimed: both sides' left-out rows as failures, as before)
        c_w, b_w = cand_all, per_task_scores(runs, base, split, abstained_as_failures=True)
        if verdict == stats.VERDICT_BASELINE:
            c_w = per_task_scores(runs, cand, split, abstained_as_passes=True)
        elif verdict == stats.VERDICT_CANDIDATE:
            b_w = per_task_scores(runs, base, split, abstained_as_passes=True)
        verdict_s, delta_s = _verdict_of(c_w, b_w, strata_of, comparison["power"]["required_n_miller"],
                                         cfg["mde"], comparison.get("alpha", ALPHA))
    else:
        cand_all, verdict_s, delta_s = dict(cand_scores), verdict, comparison.get("delta")
    passes_s, n_s = float(sum(cand_all.values())), len(cand_all)
    rate_s = passes_s / n_s if n_s else None
    lo, hi = stats.rate_interval(passes, n, method)
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
                    "this result, and an agent can abstain on its failures (a forged stamp, a dropped route): fix what "
                    "excluded them (session stamps, server, quota, the harness) and rerun.")
        reason = refusal("EXCLUSIONS_DECIDE", sentence,
                         {"rate": record["headline_rate"], "rate_with_exclusions_as_failures": record["rate"],
                          "half_width": record["headline_half_width"], "verdict": verdict,
                          "verdict_with_exclusions_as_failures": verdict_s, "abstained": counts})
    return record, reason


def cost_per_pass(runs, split: str, strata_order: list[str]) -> list[dict]:
    """Tokens and cost per passing task, per solver and stratum (null when unknown or no pass)."""
    out = []
    sub = runs[(runs.split == split) & (runs.role.isin(["agent", "human"]))]
    for (solver, stratum), g in sub.groupby(["solver", "stratum"]):
        passes = int((g.status == "pass").sum())
        tok_known = g.tokens_in.notna().all() and g.tokens_out.notna().all()
        tok_missing = int((g.tokens_in.isna() | g.tokens_out.isna()).sum())
        cost_known = g.cost_usd.notna().all()
        tokens = int(g.tokens_in.sum() + g.tokens_out.sum()) if tok_known else None
        cost = float(g.cost_usd.sum()) if cost_known else None
        out.append({"solver": solver, "stratum": stratum, "runs": int(len(g)), "passes": passes,
                    "tokens": tokens, "cost_usd": fmt(cost, 6),
                    # seed 002: tokens missing -> pass/fail only, labelled as incomplete
                    "tokens_status": "complete" if tok_known else f"incomplete ({tok_missing} of {len(g)} runs "
                                                                  "without tokens)",
                    "tokens_per_pass": None if tokens is None or not passes else round(tokens / passes, 1),
                    "cost_per_pass_usd": None if cost is None or not passes else round(cost / passes, 6)})
    order = {s: i for i, s in enumerate(strata_order)}
    return sorted(out, key=lambda r: (r["solver"], order.get(r["stratum"], 99), r["stratum"]))


def _mean_over_tasks(fn, pairs: Counter, k: int) -> float:
    """The mean of ``fn(n, c, k)`` over tasks with n >= k, from a Counter of (n, c) pairs:
    each value computed once, then averaged over every task exactly (``fmean`` sums exactly)."""
    return statistics.fmean([v for (n, c), m in pairs.items() if n >= k for v in [fn(n, c, k)] * m])


def pass_at_k_table(runs, split: str, epochs: int) -> dict:
    """Unbiased pass@k and pass^k per agent, averaged over tasks (only when epochs > 1)."""
    if epochs < 2:
        return {}
    out = {}
    sub = runs[(runs.split == split) & (runs.role == "agent") & (~runs.status.isin(["excluded", "infra_fail"]))]
    for solver, g in sub.groupby("solver"):
        counts = g.status.eq("pass").groupby(g.task_id).agg(["size", "sum"])
        # tasks share few (n, c) pairs: compute each once
        pairs = Counter(zip(counts["size"].astype(int), counts["sum"].astype(int)))
        ks = list(range(1, epochs + 1))
        at = [_mean_over_tasks(stats.pass_at_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
        hat = [_mean_over_tasks(stats.pass_hat_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
        out[solver] = {"k": ks[:len(at)], "pass_at_k": [round(x, 6) for x in at], "pass_hat_k": [round(x, 6) for x in hat]}
    return out


def stratum_deltas(common: list[str], strata_of: Mapping[str, str], cand_scores: Mapping[str, float],
                   base_scores: Mapping[str, float], order: list[str]) -> list[dict]:
    """The paired delta per stratum on the matched tasks (seed 003: stratum means stay visible)."""
    out = []
    for s in order:
        ids = [t for t in common if strata_of.get(t) == s]
        if ids:
            c, b = sum(cand_scores[t] for t in ids), sum(base_scores[t] for t in ids)
            out.append({"stratum": s, "n": len(ids), "candidate_rate": fmt(c / len(ids), 6),
                        "baseline_rate": fmt(b / len(ids), 6), "delta": fmt((c - b) / len(ids), 6)})
    return out


def dummy_deltas(runs, cand_scores: Mapping[str, float], split: str, strata_of: Mapping[str, str],
                 order: list[str]) -> list[dict]:
    """Per stratum: the candidate's rate minus each do-nothing control's rate on the same tasks
    (seed 002: "stratum table + dummy deltas")."""
    out = []
    for s in order:
        ids = sorted(t for t in cand_scores if strata_of.get(t) == s)
        if not ids:
            continue
        row: dict[str, Any] = {"stratum": s, "n": len(ids), "candidate_rate": fmt(sum(cand_scores[t] for t in ids) / len(ids), 6)}
        for ctl in ("empty_diff", "stub"):
            sc = per_task_scores(runs[runs.task_id.isin(ids)], ctl, split)
            got = [t for t in ids if t in sc]
            rate = sum(sc[t] for t in got) / len(got) if got else None
            row[f"{ctl}_rate"] = fmt(rate, 6)
            row[f"delta_vs_{ctl}"] = None if rate is None else fmt(row["candidate_rate"] - rate, 6)
        known = [row[f"delta_vs_{c}"] for c in ("empty_diff", "stub") if row[f"delta_vs_{c}"] is not None]
        row["beats_dummies"] = bool(known) and min(known) > 0
        out.append(row)
    return out


def decide(exp_dir: Path, split_path: Path, pack_hash_path: Path,
           ledger: Path | None = None) -> tuple[dict, dict, str]:
    """Compute (decision, card, report markdown) for one experiment folder.

    With ``ledger`` (the pack's ledger.jsonl) and a holdout score, the holdout's history is
    checked; the entry to append is returned in ``decision["ledger_entry"]``."""
    import pandas as pd

    exp = read_json(exp_dir / "experiment.json")
    cfg = exp["config_full"]
    manifest = read_json(split_path)
    tasks = pd.read_parquet(exp_dir / "tables" / "tasks.parquet")
    runs = pd.read_parquet(exp_dir / "tables" / "runs.parquet")
    strata = pd.read_parquet(exp_dir / "tables" / "strata.parquet")
    split = cfg["score_split"]
    cand, base = cfg["candidate"], cfg["baseline"]
    slice_tasks = tasks[tasks.split == split]
    reasons: list[dict] = []
    notes: list[dict] = []

    # --- the holdout's memory, read first: it pins the servers and sets the exact test's alpha --
    prior: list[dict] | None = None
    server_pin = None
    ledger_entry_out = None
    reuse = None
    if ledger is not None and split == "holdout":
        try:
            prior = read_ledger(ledger)
        except ValueError as exc:
            reasons.append(refusal("LEDGER_UNREADABLE", f"{exc} Restore it from version control; never edit it.",
                                   str(ledger)))
        else:
            lost = lost_ledger_lines(ledger, prior, Path(exp_dir).parent)
            if lost:
                reasons.append(refusal("LEDGER_UNREADABLE", f"{ledger} no longer holds the lines that earlier "
                                       f"decisions in this results folder cite (experiments {', '.join(lost[:5])}): "
                                       "the ledger was deleted, truncated or replaced. Restore it from version "
                                       "control; never edit it.", lost))
    if prior is not None:
        def labels(rows):
            return rows.server_id.where(rows.server_id.notna(), NO_SERVER).astype(str)

        agent_rows = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin([cand, base])]
        # an agent that ran on the holdout reached it, even when its rows were excluded (a run
        # without a stamp still saw the tasks); only a harness failure is no visit
        reached = agent_rows[agent_rows.status != "infra_fail"]
        agents = {n: fp for n, fp in exp["agent_fingerprints"].items() if (reached.solver == n).any()}
        probe = ledger_entry(exp, manifest, agents, [])
        servers, pinned_at = pinned_servers(prior, probe) if cfg["health"].get("required_server_id") is None \
            else ([], None)
        if servers:
            runs = runs.copy()
            rows = runs[(runs.split == split) & (runs.role == "agent")]
            lab = labels(rows)
            foreign_ix = rows.index[~lab.isin(servers) & ~rows.status.isin(ABSTAINED)]
            why = (f"server {{}} is not among the servers of this holdout's first scored run ({', '.join(servers)}, "
                   f"experiment {pinned_at}); name the servers in health.required_server_id before the first run "
                   "to change that")
            ev = sorted(f"{runs.at[i, 'solver']}:{runs.at[i, 'task_id']}#{runs.at[i, 'epoch']}@{lab[i]}"
                        for i in foreign_ix)
            runs.loc[foreign_ix, "reason"] = [why.format(repr(lab[i])) for i in foreign_ix]
            runs.loc[foreign_ix, "status"] = "excluded"
            server_pin = {"servers": servers, "pinned_at": pinned_at, "excluded": ev}
            if ev:
                notes.append(note_for("SERVER_PINNED", f"{len(ev)} run(s) came from a server this holdout was not "
                                                    f"first scored on ({', '.join(ev[:5])}"
                                                    f"{', …' if len(ev) > 5 else ''}) and are excluded: its servers "
                                                    f"are {', '.join(servers)}."))
        scored = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin(list(agents))
                      & ~runs.status.isin(ABSTAINED)]
        entry = ledger_entry(exp, manifest, agents, sorted(set(labels(scored))))
        earlier = [e for e in prior if bare_entry(e) != bare_entry(entry)]
        reasons.extend(ledger_reasons(earlier, entry))
        reuse = holdout_reuse(earlier, entry, cand)
        if reuse:
            notes.append(note_for("HOLDOUT_REUSED", reuse["sentence"]))
        # a scoring in which no agent ran did not reach the holdout: nothing to record
        ledger_entry_out = entry if agents else None
    holdout_reuse_out = reuse
    alpha = reuse["alpha"] if reuse else ALPHA

    # --- controls and pack health ------------------------------------------------------
    leak = tasks[tasks.leak_suspect]
    if len(leak):
        reasons.append(refusal("LEAK_SUSPECT", f"{len(leak)} task(s) match the denylist or public text, or quote "
                                               f"their hidden tests: {', '.join(leak.task_id)}.",
                               list(leak.task_id)))
    bad_oracle = tasks[~tasks.oracle_ok]
    if len(bad_oracle):
        reasons.append(refusal("ORACLE_FAILED",
                               f"The gold patch failed on {len(bad_oracle)} task(s) ({', '.join(bad_oracle.task_id)}); "
                               "the grader is broken there, so no score from this pack is published.",
                               list(bad_oracle.task_id)))
    ctl = runs[(runs.role == "control") & (runs.solver.isin(["empty_diff", "stub"])) & (runs.status == "pass")]
    if len(ctl):
        ev = sorted(f"{r.solver}:{r.task_id}" for r in ctl.itertuples())
        reasons.append(refusal("DUMMY_PASSED", f"A do-nothing control passed {len(ctl)} time(s) ({', '.join(ev)}); "
                                               "those tests do not test the bug.", ev))
    ctl_infra = tasks[tasks.control_infra_fail]
    if len(ctl_infra):
        reasons.append(refusal("CONTROL_INFRA_FAIL", f"Controls could not be scored on {', '.join(ctl_infra.task_id)}; "
                                                     "fix the harness (see the run_dummy logs).", list(ctl_infra.task_id)))
    for code, col, words in (("WEAK_TEST_IN_SLICE", "weak_test", "pass with the empty diff"),
                             ("FLAKY_IN_SLICE", "flaky", "gave different gold-patch results on reruns")):
        bad = slice_tasks[slice_tasks[col]]
        if len(bad):
            reasons.append(refusal(code, f"{len(bad)} {split} task(s) {words}: {', '.join(bad.task_id)}.", list(bad.task_id)))
    if split == "tune":
        reasons.append(refusal("TUNE_SPLIT", "The score is on the tune split; only the frozen holdout is a measurement. "
                                             "Set score_split: holdout.", split))
    missing_env = [k for k in ("max_wall_s", "max_steps", "max_output_tokens") if cfg["envelope"].get(k) is None]
    if missing_env:
        reasons.append(refusal("ENVELOPE_INCOMPLETE", f"The envelope leaves {', '.join(missing_env)} blank; "
                                                      "write the caps down before the run.", missing_env))

    # --- the candidate's rates per stratum -----------------------------------------------
    cand_rows = runs[(runs.solver == cand) & (runs.split == split)]
    cand_strata = strata[(strata.solver == cand) & (strata.split == split)].set_index("stratum")
    small = []
    for s in cfg["strata"]:
        n = int(cand_strata.loc[s, "n"]) if s in cand_strata.index else 0
        if n < 2:
            small.append(f"{s} (n={n})")
    if small:
        reasons.append(refusal("STRATUM_TOO_SMALL", f"Stratum {', '.join(small)} has fewer than 2 scored {split} tasks; "
                                                    "a rate on it is not a measurement.", small))
    cand_scores = per_task_scores(runs, cand, split)
    unclean = set(slice_tasks.task_id[slice_tasks.weak_test | slice_tasks.flaky])
    clean = {t for t in cand_scores if t not in unclean}
    if len(cand_rows) == 0:
        reasons.append(refusal("NO_CANDIDATE_ROWS", f"{cand} has no rows on the {split} split.", cand))
    if len(clean) < cfg["min_kept_tasks"]:
        reasons.append(refusal("TOO_FEW_CLEAN_TASKS", f"Only {len(clean)} clean {split} task(s) remain for {cand}; "
                                                      f"min_kept_tasks is {cfg['min_kept_tasks']}.", len(clean)))
    compared = runs[(runs.split == split) & (runs.role == "agent") & (runs.solver.isin([cand, base]))]
    loose = compared[compared.isolation != "bwrap"]
    if len(loose):
        ev = sorted({f"{r.solver}:{r.isolation}" for r in loose.itertuples()})
        reasons.append(refusal("UNSANDBOXED", f"{len(loose)} agent run(s) on the {split} split ran without the "
                                              f"sandbox ({', '.join(ev)}); the sandbox needs unprivileged user "
                                              "namespaces: with sandbox: required the run stops and names the "
                                              "setting to enable.",
                               ev))
    over = cand_rows[cand_rows.over_envelope.eq(True)]
    if len(over):
        reasons.append(refusal("OVER_ENVELOPE", f"{len(over)} {cand} run(s) exceeded the envelope "
                                                f"({', '.join(sorted(over.task_id))}).", sorted(over.task_id)))
    cand_tamper = cand_rows[cand_rows.status == "tamper"]
    if len(cand_tamper):
        ev = sorted(f"{r.task_id}#{r.epoch}" for r in cand_tamper.itertuples())
        reasons.append(refusal("CANDIDATE_TAMPERED", f"{cand} was scored tamper on {len(cand_tamper)} {split} run(s) "
                                                     f"({', '.join(ev)}): its patches touched tests or test configuration, "
                                                     "shadowed a module or forged the test report (see the reasons in "
                                                     "runs.parquet). A rate for an agent caught tampering is not published.",
                               ev))
    tampered = runs[(runs.split == split) & (runs.status == "tamper")]
    if len(tampered):
        notes.append({"code": "TAMPER", "sentence": f"{len(tampered)} run(s) touched tests or test configuration and "
                                                    "were scored tamper (not pass): "
                      + ", ".join(sorted(f"{r.solver}:{r.task_id}" for r in tampered.itertuples()))})
    n_c = len(cand_scores)
    scheduled = int(len(cand_rows))
    passes = sum(cand_scores.values())
    rate = passes / n_c if n_c else None
    timeouts = int((cand_rows.status == "timeout").sum())
    excluded = cand_rows[cand_rows.status.isin(["excluded", "infra_fail"])]

    # --- paired comparison ---------------------------------------------------------------
    base_scores = per_task_scores(runs, base, split)
    common = sorted(set(cand_scores) & set(base_scores))
    strata_of = exp["strata_of"]
    comparison: dict[str, Any] = {
        "candidate": cand, "baseline": base, "split": split, "unit": "task (epochs averaged per task)",
        "matched_tasks": len(common),
        "unmatched_task_ids": sorted(set(cand_scores) ^ set(base_scores)),
    }
    n_req_raw, n_req = stats.required_n_miller(cfg["mde"], cfg["planning_discordance"])
    comparison["power"] = {"mde": cfg["mde"], "planning_discordance": cfg["planning_discordance"],
                           "required_n_miller": n_req,
                           "required_n_connor": stats.required_n_connor(cfg["mde"], cfg["planning_discordance"])[1]}
    verdict_label = "NOT_COMPUTED"
    if len(common) >= 2:
        res = stats.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                                 [base_scores[t] for t in common])
        call = stats.gate_call(res, n_req, mde=cfg["mde"], alpha=alpha)
        verdict_label = call.label
        comparison.update({
            "delta": fmt(res.delta, 6), "ci_low": fmt(res.ci_low, 6), "ci_high": fmt(res.ci_high, 6),
            "se": fmt(res.se, 6), "df": res.df, "method": res.method, "note": res.note,
            "bootstrap_ci": [fmt(x, 6) for x in res.bootstrap_ci], "bootstrap_se": fmt(res.bootstrap_se, 6),
            "mcnemar_p": fmt(res.mcnemar_p, 6), "wins": res.wins, "losses": res.losses,
            "observed_mde": fmt(stats.observed_mde(len(common), cfg["planning_discordance"]), 4),
            "verdict": call.verdict, "interval_verdict": call.interval_verdict, "underpowered": call.underpowered,
            "below_mde": call.below_mde, "exact_test_disagrees": call.exact_disagrees,
            "zero_width_interval": call.degenerate_interval,
            "stratum_deltas": stratum_deltas(common, strata_of, cand_scores, base_scores, cfg["strata"]),
        })
        if call.interval_verdict != stats.VERDICT_NONE and call.below_mde and not call.underpowered:
            notes.append(note_for("BELOW_MDE", f"The delta {res.delta:+.3f} is smaller than the pre-registered MDE "
                                            f"{cfg['mde']}: a difference too small to have been planned for is not a "
                                            "ranking. No winner is named."))
        if call.exact_disagrees:
            notes.append(note_for("EXACT_TEST_NOT_SIGNIFICANT",
                               f"{res.wins} win(s) and {res.losses} loss(es) over {len(common)} paired tasks: the "
                               f"exact McNemar p is {res.mcnemar_p:.3f}, not below {alpha:.4g}, although the "
                               f"{res.method.replace('_', ' ')} interval [{res.ci_low:+.3f}, {res.ci_high:+.3f}] "
                               "excludes 0. No winner is named."))
        if call.degenerate_interval:
            what = ("no task was discordant" if res.wins + res.losses == 0 else
                    "every task in each stratum had the same paired outcome")
            comparison["interval_note"] = (f"zero-width interval: {what}; the interval shows no spread, not "
                                           f"certainty (exact McNemar p {res.mcnemar_p:.3f} on {res.wins} win(s) / "
                                           f"{res.losses} loss(es))")
            notes.append(note_for("ZERO_WIDTH_INTERVAL", comparison["interval_note"][0].upper()
                               + comparison["interval_note"][1:] + "."))
        if call.underpowered:
            notes.append({"code": "UNDERPOWERED", "sentence":
                          f"{len(common)} paired tasks detect a difference of about "
                          f"{comparison['observed_mde']:.2f}; the pre-registered MDE of {cfg['mde']} needs "
                          f"{n_req} tasks. No winner is named."})
    else:
        comparison["note"] = "fewer than 2 matched tasks: no interval"
    comparison["verdict_label"] = verdict_label
    comparison["alpha"] = alpha

    # --- no pooled headline over unbalanced strata ----------------------------------------
    # Neither rule trusts the order of `strata` (easiest first is the author's word): any
    # stratum over half the tasks, and any stratum where the dummies are not beaten, withhold it.
    present = [s for s in cfg["strata"] if (slice_tasks.stratum == s).any()]
    shares = {s: float((slice_tasks.stratum == s).mean()) for s in present}
    big = max(shares, key=lambda s: shares[s]) if shares else None
    # one stratum is not an imbalance: there is nothing for a pooled rate to hide
    unbalanced = big is not None and shares[big] > 0.5 and len(present) > 1
    if unbalanced:
        notes.append(note_for("UNBALANCED_STRATA", f"{shares[big]:.0%} of the {split} tasks are in stratum "
                                                f"'{big}': a pooled rate would mostly measure it. Quote the "
                                                "per-stratum rates, never one pooled number."))
    dummies = dummy_deltas(runs, cand_scores, split, strata_of, cfg["strata"])
    beaten = [d for d in dummies if d["beats_dummies"]]
    not_beaten = [d for d in dummies if not d["beats_dummies"]]
    easy_only = len(dummies) > 1 and bool(beaten) and bool(not_beaten)
    if easy_only:
        won = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in beaten)
        lost_ = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in not_beaten)
        notes.append(note_for("DUMMY_BEATEN_ONLY_ON_EASY",
                           f"{cand} beats the do-nothing controls only on {won}; on {lost_} it is no better than "
                           "them. A pooled rate would be the other strata's: publish the stratum table and the "
                           "dummy deltas, never one pooled number."))
    no_pooled = unbalanced or easy_only

    # --- abstention must not pay: the rate with exclusions counted as failures -------------
    public_sens = None
    if cfg.get("public_results"):
        cand_all = per_task_scores(runs, cand, split, abstained_as_failures=True)
        public_sens = public_comparison(cfg, exp, cand, sum(cand_all.values()) / len(cand_all) if cand_all else None,
                                        True)
    sens, sens_reason = sensitivity(runs, cfg, cand, base, split, strata_of, cand_scores, comparison, cand_strata,
                                    not no_pooled, public_comparison(cfg, exp, cand, rate, True), public_sens)
    if sens_reason is not None:
        reasons.append(sens_reason)
    counts = {s: abstention_counts(runs[(runs.split == split) & (runs.solver == s)]) for s in (cand, base)}
    comparison["exclusion_rates"] = counts
    comparison["exclusion_note"] = exclusion_note(counts, cand, base, sens["delta"], sens["verdict"])

    publishable = not reasons
    headline = round(rate, 6) if (publishable and rate is not None and not no_pooled) else None
    per_stratum = []
    for s in cfg["strata"]:
        if s in cand_strata.index:
            r = cand_strata.loc[s]
            per_stratum.append({"stratum": s, "n": int(r.n), "passes": float(r.passes), "pass_rate": fmt(r.pass_rate, 6),
                                "ci_low": fmt(r.ci_low, 6), "ci_high": fmt(r.ci_high, 6),
                                "timeout_rate": fmt(r.timeout_rate, 6)})
    env = cfg["envelope"]
    steer_known = cand_rows.steer_count.notna().all() if len(cand_rows) else False
    allowed: list[str] = []
    refused: list[dict] = []
    if publishable:
        strata_txt = "; ".join(f"{p['stratum']} {p['passes']:g}/{p['n']}" for p in per_stratum)
        pooled = "" if no_pooled else f"passed {passes:g} of {n_c} {split} tasks ({pct(rate)}) on hidden tests, "
        allowed.append(
            f"On this sealed pack (digest {exp['pack_digest'][:12]}), {cand} {pooled}"
            f"{'passed hidden tests ' if no_pooled else ''}under a clock of at most {env['max_wall_s']} s per task, "
            f"{env['max_steps']} steps and {env['max_output_tokens']} output tokens; per stratum: {strata_txt}; "
            f"timeouts {timeouts} (counted as failures), exclusions {len(excluded)} of {scheduled} scheduled runs"
            + (f" (with them counted as failures: {sens['passes']:g} of {sens['n']}, {pct(sens['rate'])})"
               if len(excluded) else "") + "."
            + (f" {holdout_reuse_out['sentence']}" if holdout_reuse_out else "")
        )
        if len(dummies) > 1 or no_pooled:
            allowed.append(f"Against the do-nothing controls on the same {split} tasks, per stratum: " + "; ".join(
                f"{d['stratum']} {d['candidate_rate']:.2f} (empty diff {signed(d['delta_vs_empty_diff'])}, "
                f"stub {signed(d['delta_vs_stub'])}, n={d['n']})" for d in dummies) + ".")
        if comparison.get("verdict") in (stats.VERDICT_CANDIDATE, stats.VERDICT_BASELINE):
            winner, loser = (cand, base) if comparison["verdict"] == stats.VERDICT_CANDIDATE else (base, cand)
            allowed.append(
                f"On these {len(common)} {split} tasks, {winner} passed more than {loser}: delta "
                f"{comparison['delta']:+.3f} (95% {comparison['method'].replace('_', ' ')} interval "
                f"[{comparison['ci_low']:+.3f}, {comparison['ci_high']:+.3f}], exact McNemar p "
                f"{comparison['mcnemar_p']:.3f} < {alpha:.4g})"
                + (f". {comparison['exclusion_note']}" if comparison["exclusion_note"] else ".")
                + (f" {holdout_reuse_out['sentence']}" if holdout_reuse_out else "")
            )
        else:
            refused.append({"sentence": f"{cand} is better than {base}.", "why": comparison_why(comparison, cfg)})
    else:
        refused.append({"sentence": f"{cand} clears {pct(rate)}.",
                        "why": "the gate refused a headline: " + ", ".join(r["code"] for r in reasons)})
    public = public_comparison(cfg, exp, cand, rate, publishable)
    if public is not None:
        (allowed if public["allowed"] else refused).append(
            public["sentence"] if public["allowed"] else {"sentence": public["sentence"], "why": public["why"]})
    roles = roles_table(runs, split)
    allowed_h, refused_h = human_sentences(roles, runs, cand, split, publishable)
    allowed += allowed_h
    refused += refused_h
    if not steer_known:
        refused.append({"sentence": f"{cand} ran unsupervised.", "why": "steers were not recorded (steers.jsonl absent)"})
    refused.append({"sentence": "AI is better at coding than most software developers.",
                    "why": "never allowed from this protocol: a local pack and local humans are not the profession"})

    digests = {
        "pack": exp["pack_digest"], "denylist": exp["denylist_digest"], "tasks": exp["task_digests"],
        "split_manifest": exp["split_manifest_digest"],
        "config": sha256_text(canonical_json(exp["config"])), "envelope": envelope_digest(cfg),
        "agent_fingerprints": exp["agent_fingerprints"], "code": exp["code"],
        "toolchain": exp["toolchain_digest"], "pack_hash_file": (Path(pack_hash_path).read_text().splitlines() or [""])[-1],
    }
    decision = {
        "experiment": exp["exp_id"], "publishable": publishable, "headline": headline,
        "headline_metric": f"{cand} hidden-test pass rate on the {split} split (per-task, epochs averaged)",
        "n": n_c, "passes": passes, "per_stratum": per_stratum, "timeouts": timeouts,
        "exclusions": len(excluded), "scheduled": scheduled,
        "exclusion_rate_scheduled": fmt(len(excluded) / scheduled, 6) if scheduled else None,
        "dummy_deltas": dummies, "holdout_reuse": holdout_reuse_out, "server_pin": server_pin,
        "pooled_headline_withheld": bool(publishable and no_pooled),
        "comparison_summary": comparison_summary(comparison, cfg),
        "sensitivity": sens, "reasons": reasons, "notes": notes, "allowed_sentences": allowed,
        "refused_sentences": refused, "comparison": comparison, "roles": roles,
        "cost_per_pass": cost_per_pass(runs, split, cfg["strata"]),
        "pass_at_k": pass_at_k_table(runs, split, int(cfg["epochs"])),
        "interval_method": cfg.get("interval_method", "wilson"),
        "public_minus_holdout": public, "ledger_entry": ledger_entry_out, "digests": digests,
        "toolchain": {"python": exp["toolchain"]["python"], "packages": exp["toolchain"]["packages"]},
    }
    card = build_card(exp, manifest, tasks, runs)
    card.update(card_claim(exp, decision))
    report = render_report(decision, card, strata, tasks)
    return decision, card, report


def point_latest(latest: Path, exp_dir: Path) -> None:
    """Atomically point ``results/latest`` at the experiment folder (relative symlink)."""
    latest = Path(latest)
    target = os.path.relpath(exp_dir, latest.parent)
    tmp = latest.with_name(".latest.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, latest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.gate", description=__doc__.splitlines()[0])
    ap.add_argument("--experiment-dir", type=Path, required=True)
    ap.add_argument("--split", type=Path, required=True)
    ap.add_argument("--pack-hash", type=Path, required=True)
    ap.add_argument("--latest", type=Path)
    ap.add_argument("--ledger", type=Path, help="the pack's ledger.jsonl (holdout scorings are checked and appended)")
    args = ap.parse_args(argv)
    try:
        decision, card, report = decide(args.experiment_dir, args.split, args.pack_hash, args.ledger)
    except SealbenchError as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 1
    write_json(args.experiment_dir / "card.json", card)
    atomic_write_text(args.experiment_dir / "report.md", report)
    entry = decision.pop("ledger_entry", None)
    if args.ledger is not None and entry is not None:
        try:
            prior = read_ledger(args.ledger)
        except ValueError:
            prior = None  # a damaged ledger is refused (LEDGER_UNREADABLE) and never appended to
        if prior is not None:  # run-specific (a time, a path): beside decision.json, not in it
            write_json(args.experiment_dir / LEDGER_CITATION, {"path": os.path.realpath(args.ledger),
                                                               "line": append_ledger(args.ledger, entry, prior)})
    write_json(args.experiment_dir / "decision.json", decision)
    write_report(args.experiment_dir)  # the HTML report, from the files just written
    if args.latest:  # last: results/latest only ever points at a complete experiment
        point_latest(args.latest, args.experiment_dir)
    state = "PUBLISHABLE" if decision["publishable"] else "NOT PUBLISHABLE"
    print(f"gate: headline {state}; headline={decision['headline']}; reasons={[r['code'] for r in decision['reasons']]}; "
          f"comparison: {decision['comparison_summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
