"""gate: the decision — which sentences may be published, or none — with its reasons.

Reads:  experiment.json, tables/{tasks,runs,strata}.parquet, the split manifest, PACK_HASH.txt
Writes: decision.json, card.json, report.md, report.html in the experiment folder; points results/latest
        at it and rewrites results/index.html

The gate refuses a headline (``publishable: false``) when any control is missing or broken,
each refusal a code plus a sentence a reviewer understands (see ``REFUSALS``). It never fills
a gap with a default: an unknown stays unknown and is named.

This module is the orchestration (:func:`decide`), the paired comparison and the form of the
headline; the steps it runs live beside it: the scored slice (``scored_slice``), the holdout's
ledger and server pin (``holdout_memory``), the refusal rules (``refusal_rules``), the
sensitivity to abstentions (``sensitivity``), the side tables (``summaries``), the sentences,
card and Markdown report (``sentences``, ``card``, ``report_md``), and the index of every
experiment with the ``results/latest`` link (``results_index``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.configuration import envelope_digest
from ..core.contract import ABSTAINED, TIMEOUT
from ..core.core import SealbenchError, atomic_write_text, canonical_json, read_json, sha256_text, write_json
from ..core.refusals import ALPHA, note_for, verdict_words
from ..core.results_index import point_latest, write_index
from ..provenance.draws import DRAWS, DRAWS_CITATION, draw_check
from ..provenance.ledger import LEDGER_CITATION, append_ledger, read_ledger
from ..report.card import build_card, card_claim
from ..report.report_html import write_report
from ..report.report_md import render_report
from ..report.scored_slice import Slice, load_slice
from ..report.sentences import (
    comparison_summary,
    exclusion_note,
    fmt,
    headline_sentences,
    human_sentences,
    public_comparison,
    roles_table,
)
from ..report.summaries import (
    abstention_counts,
    cost_per_pass,
    dominant_failures,
    dummy_deltas,
    pass_at_k_table,
    per_task_scores,
    stratum_deltas,
    won_lost,
)
from ..stats import decision_rule, paired, power
from ..stats.rate_intervals import rate_interval
from .holdout_memory import Memory, holdout_memory, results_copy
from .refusal_rules import RULES, decoys_note, stamp_claims_note, tamper_note, tokens_incomplete_note
from .sensitivity import sensitivity

# -------------------------------------------------------------------- the paired comparison

def compare(s: Slice, alpha: float) -> tuple[dict, list[dict]]:
    """The paired comparison candidate vs baseline on the matched tasks, and its notes."""
    cfg, notes = s.cfg, []
    base_scores = per_task_scores(s.split_runs, s.base, s.split)
    cand_scores = s.cand_scores
    common = sorted(set(cand_scores) & set(base_scores))
    strata_of = s.exp["strata_of"]
    comparison: dict[str, Any] = {
        "candidate": s.cand, "baseline": s.base, "split": s.split, "unit": "task (epochs averaged per task)",
        "matched_tasks": len(common),
        "unmatched_task_ids": sorted(set(cand_scores) ^ set(base_scores)),
    }
    comparison["won_task_ids"], comparison["lost_task_ids"] = won_lost(cand_scores, base_scores)
    n_req_raw, n_req = power.required_n_miller(cfg["mde"], cfg["planning_discordance"])
    comparison["power"] = {"mde": cfg["mde"], "planning_discordance": cfg["planning_discordance"],
                           "required_n_miller": n_req,
                           "required_n_connor": power.required_n_connor(cfg["mde"], cfg["planning_discordance"])[1]}
    verdict_label = "NOT_COMPUTED"
    if len(common) >= 2:
        res = paired.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                                 [base_scores[t] for t in common])
        call = decision_rule.gate_call(res, n_req, mde=cfg["mde"], alpha=alpha)
        verdict_label = call.label
        comparison.update({
            "delta": fmt(res.delta, 6), "ci_low": fmt(res.ci_low, 6), "ci_high": fmt(res.ci_high, 6),
            "ci_raw": [fmt(x, 6) for x in res.ci_raw],
            "se": fmt(res.se, 6), "df": res.df, "method": res.method, "note": res.note,
            "bootstrap_ci": [fmt(x, 6) for x in res.bootstrap_ci], "bootstrap_se": fmt(res.bootstrap_se, 6),
            "mcnemar_p": fmt(res.mcnemar_p, 6), "wins": res.wins, "losses": res.losses,
            "observed_mde": fmt(power.observed_mde(len(common), cfg["planning_discordance"]), 4),
            "verdict": call.verdict, "interval_verdict": call.interval_verdict, "underpowered": call.underpowered,
            "below_mde": call.below_mde, "exact_test_disagrees": call.exact_disagrees,
            "zero_width_interval": call.degenerate_interval,
            "stratum_deltas": stratum_deltas(common, strata_of, cand_scores, base_scores, cfg["strata"]),
        })
        if call.interval_verdict != decision_rule.VERDICT_NONE and call.below_mde and not call.underpowered:
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
    return comparison, notes


def headline_form(s: Slice) -> tuple[bool, list[dict], list[dict]]:
    """Whether a pooled headline may be quoted: (withheld, dummy deltas per stratum, notes).

    Neither rule trusts the order of ``strata`` (easiest first is the author's word): a stratum
    over half the tasks, or a stratum where the dummies are not beaten, withholds it."""
    notes: list[dict] = []
    slice_tasks, cfg = s.slice_tasks, s.cfg
    present = [st for st in cfg["strata"] if (slice_tasks.stratum == st).any()]
    shares = {st: float((slice_tasks.stratum == st).mean()) for st in present}
    big = max(shares, key=lambda st: shares[st]) if shares else None
    # one stratum is not an imbalance: there is nothing for a pooled rate to hide
    unbalanced = big is not None and shares[big] > 0.5 and len(present) > 1
    if unbalanced:
        notes.append(note_for("UNBALANCED_STRATA", f"{shares[big]:.0%} of the {s.split} tasks are in stratum "
                                                   f"'{big}': a pooled rate would mostly measure it. Quote the "
                                                   "per-stratum rates, never one pooled number."))
    dummies = dummy_deltas(s.split_runs, s.cand_scores, s.split, s.exp["strata_of"], cfg["strata"])
    beaten = [d for d in dummies if d["beats_dummies"]]
    not_beaten = [d for d in dummies if not d["beats_dummies"]]
    # named by what happened: which strata, whatever their order (never "easy": it may be the hardest)
    some_only = len(dummies) > 1 and bool(beaten) and bool(not_beaten)
    if some_only:
        won = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in beaten)
        lost_ = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in not_beaten)
        notes.append(note_for("DUMMY_BEATEN_ON_SOME_STRATA",
                              f"{s.cand} beats the do-nothing controls only on {won}; on {lost_} it is no better "
                              "than them. A pooled rate would mix the two: publish the stratum table and "
                              "the dummy deltas, never one pooled number.",
                              strata_beaten=[d["stratum"] for d in beaten],
                              strata_not_beaten=[d["stratum"] for d in not_beaten]))
    if dummies and not beaten:
        rates = "; ".join(f"{d['stratum']} {d['candidate_rate']:.2f} (controls "
                          + "/".join("n/a" if d[f"{c}_rate"] is None else f"{d[f'{c}_rate']:.2f}"
                                     for c in ("empty_diff", "stub")) + ")" for d in dummies)
        notes.append(note_for("DUMMY_BEATEN_NOWHERE",
                              f"{s.cand} beats the do-nothing controls (empty diff / stub) on no stratum: {rates}. "
                              "Its rate is no better than submitting nothing.",
                              strata_beaten=[], strata_not_beaten=[d["stratum"] for d in dummies]))
    return unbalanced or some_only, dummies, notes


# ------------------------------------------------------------------------------ the decision

def decide(exp_dir: Path, split_path: Path, pack_hash_path: Path,
           ledger: Path | None = None, draw_copies: list[Path] | None = None) -> tuple[dict, dict, str]:
    """Compute (decision, card, report markdown) for one experiment folder, step by step.

    With ``ledger`` (the pack's ledger.jsonl) and a holdout score, the holdout's history is
    checked; the entry to append is returned in ``decision["ledger_entry"]``. With
    ``draw_copies`` (the draw record's copies, ``draws.jsonl`` in the pack and in results/), every
    scored run's draw is checked: a slot drawn twice is scored by its first draw."""
    s = load_slice(exp_dir, split_path)
    drawn = draw_check(s.runs, s.split, list(draw_copies or []), Path(exp_dir).parent,
                       s.exp["pack_digest"])                # 0. every draw on the record
    s.runs = drawn.runs
    memory = holdout_memory(s, ledger, exp_dir)           # 1. the holdout's memory (pins servers)
    s.runs = memory.runs
    s.aggregate()                                        # 2. the candidate's aggregates
    reasons = list(drawn.reasons) + list(memory.reasons)
    reasons += [r for _code, rule in RULES if (r := rule(s)) is not None]   # 3. every refusal rule
    notes = list(drawn.notes) + list(memory.notes) + [n for n in [tamper_note(s), tokens_incomplete_note(s),
                                                                   stamp_claims_note(s), decoys_note(s)] if n]
    comparison, cmp_notes = compare(s, memory.alpha)      # 4. the paired comparison
    notes += cmp_notes
    no_pooled, dummies, form_notes = headline_form(s)     # 5. may one pooled number be quoted?
    notes += form_notes
    facts = headline_facts(s)
    public_sens = None                                   # 6. abstention must not pay
    if s.cfg.get("public_results"):
        cand_all = per_task_scores(s.split_runs, s.cand, s.split, abstained_as_failures=True)
        public_sens = public_comparison(s.cfg, s.exp, s.cand,
                                        sum(cand_all.values()) / len(cand_all) if cand_all else None, True)
    sens, sens_reason = sensitivity(s.split_runs, s.cfg, s.cand, s.base, s.split, s.exp["strata_of"], s.cand_scores,
                                    comparison, s.cand_strata, not no_pooled,
                                    public_comparison(s.cfg, s.exp, s.cand, facts["rate"], True), public_sens)
    if sens_reason is not None:
        reasons.append(sens_reason)
    counts = {x: abstention_counts(s.split_runs.loc[s.split_runs.solver == x, ["status"]])
              for x in (s.cand, s.base)}
    comparison["exclusion_rates"] = counts
    comparison["exclusion_note"] = exclusion_note(counts, s.cand, s.base, sens["delta"], sens["verdict"])
    publishable = not reasons                            # 7. the decision and its sentences
    decision = assemble(s, facts, reasons, notes, comparison, sens, dummies, no_pooled, memory, publishable,
                        pack_hash_path, {"first_scored": drawn.first_scored, "interrupted": drawn.interrupted,
                                         "by_solver": drawn.by_solver})
    # the heads are run-specific (paths, fresh draw ids): cited beside decision.json (DRAWS_CITATION),
    # so that the same logs give the same decision.json anywhere
    decision["draw_record"] = {"draws": drawn.draws, "redrawn": drawn.redrawn, "cited_in": DRAWS_CITATION}
    decision["draw_heads"] = drawn.heads
    card = build_card(s.exp, s.manifest, s.tasks, s.runs)
    card.update(card_claim(s.exp, decision))
    card["draw_record"] = {"draws": drawn.draws, "redrawn_slots": len(drawn.redrawn), "cited_in": DRAWS_CITATION}
    return decision, card, render_report(decision, card, s.strata, s.tasks)


def headline_facts(s: Slice) -> dict:
    """The candidate's counts on the slice: n, passes, rate, timeouts, exclusions, scheduled."""
    n_c = len(s.cand_scores)
    passes = sum(s.cand_scores.values())
    per_stratum = []
    for st in s.cfg["strata"]:
        if st in s.cand_strata.index:
            r = s.cand_strata.loc[st]
            per_stratum.append({"stratum": st, "n": int(r.n), "passes": float(r.passes),
                                "pass_rate": fmt(r.pass_rate, 6), "ci_low": fmt(r.ci_low, 6),
                                "ci_high": fmt(r.ci_high, 6), "timeout_rate": fmt(r.timeout_rate, 6)})
    counted = s.cand_rows[~s.cand_rows.status.isin(list(ABSTAINED))]
    return {"n": n_c, "passes": passes, "rate": passes / n_c if n_c else None,
            "timeouts": int((s.cand_rows.status == TIMEOUT).sum()),
            "excluded": int(s.cand_rows.status.isin(list(ABSTAINED)).sum()),
            "scheduled": int(len(s.cand_rows)), "per_stratum": per_stratum,
            # the envelope's caps a sentence may state: each known for every counted run
            "counted": int(len(counted)), **envelope_unknowns(counted)}


def envelope_unknowns(rows: pd.DataFrame) -> dict[str, int]:
    """Of ``rows`` (runs of the runs table), how many have no step count (``steps_unknown``) and
    how many have no output-token count or only a lower bound (``tokens_unknown``: null, or
    ``tokens_source`` ``metered_incomplete``): a cap is confirmed only where both are 0."""
    steps = rows["steps"] if "steps" in rows else pd.Series([None] * len(rows), dtype="object")
    tokens = rows["tokens_out"] if "tokens_out" in rows else pd.Series([None] * len(rows), dtype="object")
    source = rows["tokens_source"] if "tokens_source" in rows else pd.Series([None] * len(rows), dtype="object")
    return {"steps_unknown": int(steps.isna().sum()),
            "tokens_unknown": int((tokens.isna() | source.eq("metered_incomplete").fillna(False).astype(bool)).sum())}


def headline_interval(facts: Mapping, cfg: Mapping, memory: Memory) -> dict | None:
    """The headline rate's interval, corrected (Bonferroni) for the agent versions that reached
    this holdout before the candidate first did: with m versions in all, each interval is at
    1 - alpha/m, so the m looks together keep alpha."""
    if not facts["n"]:
        return None
    versions = (memory.versions or {}).get(cfg["candidate"])
    m = (versions["before"] + 1) if versions else 1
    conf = 1 - ALPHA / m
    method = cfg.get("interval_method", "wilson")
    low, high = rate_interval(facts["passes"], facts["n"], method, conf)
    per = {p["stratum"]: [fmt(x, 6) for x in rate_interval(p["passes"], p["n"], method, conf)]
           for p in facts["per_stratum"] if p["n"]}
    return {"low": fmt(low, 6), "high": fmt(high, 6), "confidence": fmt(conf, 6), "method": method,
            "versions": m, "corrected": m > 1, "per_stratum": per}


def assemble(s: Slice, facts: Mapping, reasons: list[dict], notes: list[dict], comparison: dict, sens: Mapping,
             dummies: list[dict], no_pooled: bool, memory: Memory, publishable: bool, pack_hash_path: Path,
             redraws: Mapping[str, int] | None = None) -> dict:
    """decision.json: the headline, its reasons and notes, and the sentences that follow."""
    exp, cfg, cand, split = s.exp, s.cfg, s.cand, s.split
    rate = facts["rate"]
    headline = round(rate, 6) if (publishable and rate is not None and not no_pooled) else None
    interval = headline_interval(facts, cfg, memory)
    if interval is not None and headline is None:  # no pooled number to bound: only the strata's intervals
        interval = {**interval, "low": None, "high": None}
    allowed, refused = headline_sentences(exp, cfg, facts, sens, comparison, dummies, no_pooled, memory.reuse,
                                          [r["code"] for r in reasons], publishable, memory.alpha, interval,
                                          redraws)
    public = public_comparison(cfg, exp, cand, rate, publishable)
    if public is not None:
        (allowed if public["allowed"] else refused).append(
            public["sentence"] if public["allowed"] else {"sentence": public["sentence"], "why": public["why"]})
    roles = roles_table(s.split_runs, split)
    allowed_h, refused_h = human_sentences(roles, s.split_runs, cand, split, publishable)
    allowed += allowed_h
    refused += refused_h
    steer_known = s.cand_rows.steer_count.notna().all() if len(s.cand_rows) else False
    if not steer_known:
        refused.append({"sentence": f"{cand} ran unsupervised.", "why": "steers were not recorded (steers.jsonl absent)"})
    refused.append({"sentence": "AI is better at coding than most software developers.",
                    "why": "never allowed from this protocol: a local pack and local humans are not the profession"})
    digests = {
        "pack": exp["pack_digest"], "denylist": exp["denylist_digest"], "tasks": exp["task_digests"],
        "split_manifest": exp["split_manifest_digest"],
        "config": sha256_text(canonical_json(exp["config"])), "envelope": envelope_digest(cfg),
        "agent_fingerprints": exp["agent_fingerprints"], "code": exp["code"],
        "toolchain": exp["toolchain_digest"], "analysis_toolchain": exp.get("analysis_toolchain_digest"),
        "pack_hash_file": (Path(pack_hash_path).read_text().splitlines() or [""])[-1],
    }
    excluded, scheduled = facts["excluded"], facts["scheduled"]
    return {
        "experiment": exp["exp_id"], "publishable": publishable, "headline": headline,
        "headline_metric": f"{cand} hidden-test pass rate on the {split} split (per-task, epochs averaged)",
        "headline_interval": interval if publishable else None,
        "n": facts["n"], "passes": facts["passes"], "per_stratum": facts["per_stratum"], "timeouts": facts["timeouts"],
        "exclusions": excluded, "scheduled": scheduled,
        "exclusion_rate_scheduled": fmt(excluded / scheduled, 6) if scheduled else None,
        "dummy_deltas": dummies, "holdout_reuse": memory.reuse, "server_pin": memory.server_pin,
        "pooled_headline_withheld": bool(publishable and no_pooled),
        "comparison_summary": comparison_summary(comparison, cfg),
        "sensitivity": sens, "reasons": reasons, "notes": notes, "allowed_sentences": allowed,
        "refused_sentences": refused, "comparison": comparison, "roles": roles,
        "dominant_failures": dominant_failures(s.split_runs, split),
        "cost_per_pass": cost_per_pass(s.split_runs, split, cfg["strata"]),
        "pass_at_k": pass_at_k_table(s.split_runs, split, int(cfg["epochs"])),
        "interval_method": cfg.get("interval_method", "wilson"),
        "public_minus_holdout": public, "ledger_entry": memory.entry, "digests": digests,
        "toolchain": {"python": exp["toolchain"]["python"], "packages": exp["toolchain"]["packages"],
                      "analysis_packages": (exp.get("analysis_toolchain") or {}).get("packages", [])},
    }


def keep_results_copy(ledger: Path, copy: Path, entry: Mapping) -> None:
    """The ledger's copy in results/: started from the pack's whole ledger, then appended to
    beside it (a pack copied without its ledger leaves the holdout's history here)."""
    try:
        copy.parent.mkdir(parents=True, exist_ok=True)
        if not copy.exists() and ledger.exists():
            shutil.copyfile(ledger, copy)
        append_ledger(copy, entry, read_ledger(copy))
    except ValueError as exc:  # a damaged copy is refused at the next decision (LEDGER_UNREADABLE)
        print(f"gate: {copy}: not appended: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """The gate stage: decide, write card.json, report.md and decision.json (and the HTML report),
    append to the ledger, then point ``--latest`` at the experiment. 0, or 1 on a SealbenchError."""
    ap = argparse.ArgumentParser(prog="sealbench.gate.gate", description=__doc__.splitlines()[0])
    ap.add_argument("--experiment-dir", type=Path, required=True)
    ap.add_argument("--split", type=Path, required=True)
    ap.add_argument("--pack-hash", type=Path, required=True)
    ap.add_argument("--latest", type=Path)
    ap.add_argument("--ledger", type=Path, help="the pack's ledger.jsonl (holdout scorings are checked and appended)")
    args = ap.parse_args(argv)
    try:
        manifest = read_json(args.split)
        copies = [args.ledger.parent / DRAWS, args.experiment_dir.parent.parent / DRAWS] if args.ledger else []
        decision, card, report = decide(args.experiment_dir, args.split, args.pack_hash, args.ledger, copies)
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
            keep_results_copy(args.ledger, results_copy(args.experiment_dir, manifest), entry)
    write_json(args.experiment_dir / DRAWS_CITATION, {"pack_digest": decision["digests"]["pack"],
                                                       "heads": decision.pop("draw_heads")})
    write_json(args.experiment_dir / "decision.json", decision)
    write_report(args.experiment_dir)  # the HTML report, from the files just written
    if args.latest:  # last: results/latest only ever points at a complete experiment
        point_latest(args.latest, args.experiment_dir)
        write_index(args.latest.parent)  # results/index.html: every experiment, this one included
    print(f"gate: {verdict_words(decision)}; reasons={[r['code'] for r in decision['reasons']]}; "
          f"comparison: {decision['comparison_summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
