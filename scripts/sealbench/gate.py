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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from . import stats
from .card import build_card, card_claim
from .core import SealbenchError, atomic_write_text, canonical_json, envelope_digest, read_json, sha256_text, write_json
from .ledger import (LEDGER_CITATION, NO_SERVER, append_ledger, bare_entry, holdout_reuse, ledger_entry,
                     ledger_reasons, lost_ledger_lines, pinned_servers, read_ledger)
from .contract import ABSTAINED
from .refusals import ALPHA, note_for, refusal
from .report import write_report
from .report_md import render_report
from .sentences import (abstained_words, comparison_summary, exclusion_note, fmt, headline_sentences,
                        human_sentences, public_comparison, roles_table)



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


@dataclass
class Slice:
    """What the rules read: the experiment's tables and the candidate's aggregates on the
    scored split (built once by :func:`load_slice`; ``runs`` already carries the server pin)."""

    exp: dict
    cfg: dict
    manifest: dict
    tasks: Any
    runs: Any
    strata: Any
    split: str
    cand: str
    base: str
    slice_tasks: Any = None
    cand_rows: Any = None
    cand_strata: Any = None
    cand_scores: dict = field(default_factory=dict)
    clean: set = field(default_factory=set)

    def aggregate(self) -> "Slice":
        self.slice_tasks = self.tasks[self.tasks.split == self.split]
        self.cand_rows = self.runs[(self.runs.solver == self.cand) & (self.runs.split == self.split)]
        self.cand_strata = self.strata[(self.strata.solver == self.cand)
                                       & (self.strata.split == self.split)].set_index("stratum")
        self.cand_scores = per_task_scores(self.runs, self.cand, self.split)
        unclean = set(self.slice_tasks.task_id[self.slice_tasks.weak_test | self.slice_tasks.flaky])
        self.clean = {t for t in self.cand_scores if t not in unclean}
        return self


def load_slice(exp_dir: Path, split_path: Path) -> Slice:
    import pandas as pd

    exp = read_json(exp_dir / "experiment.json")
    cfg = exp["config_full"]
    return Slice(exp=exp, cfg=cfg, manifest=read_json(split_path),
                 tasks=pd.read_parquet(exp_dir / "tables" / "tasks.parquet"),
                 runs=pd.read_parquet(exp_dir / "tables" / "runs.parquet"),
                 strata=pd.read_parquet(exp_dir / "tables" / "strata.parquet"),
                 split=cfg["score_split"], cand=cfg["candidate"], base=cfg["baseline"])


@dataclass
class Memory:
    """What the holdout's ledger says about this scoring (:func:`holdout_memory`)."""

    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    runs: Any = None
    entry: dict | None = None
    reuse: dict | None = None
    server_pin: dict | None = None

    @property
    def alpha(self) -> float:
        return self.reuse["alpha"] if self.reuse else ALPHA


def _server_labels(rows):
    return rows.server_id.where(rows.server_id.notna(), NO_SERVER).astype(str)


def holdout_memory(s: Slice, ledger: Path | None, exp_dir: Path) -> Memory:
    """Read the ledger (refusing a damaged or shortened one), pin the holdout's servers (rows
    from others become excluded), and check this scoring against what reached the holdout."""
    mem = Memory(runs=s.runs)
    if ledger is None or s.split != "holdout":
        return mem
    try:
        prior = read_ledger(ledger)
    except ValueError as exc:
        mem.reasons.append(refusal("LEDGER_UNREADABLE", f"{exc} Restore it from version control; never edit it.",
                                   str(ledger)))
        return mem
    lost = lost_ledger_lines(ledger, prior, Path(exp_dir).parent)
    if lost:
        mem.reasons.append(refusal("LEDGER_UNREADABLE", f"{ledger} no longer holds the lines that earlier "
                                   f"decisions in this results folder cite (experiments {', '.join(lost[:5])}): "
                                   "the ledger was deleted, truncated or replaced. Restore it from version "
                                   "control; never edit it.", lost))
    runs, split, cfg = s.runs, s.split, s.cfg
    agent_rows = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin([s.cand, s.base])]
    # an agent that ran on the holdout reached it, even when its rows were excluded (a run
    # without a stamp still saw the tasks); only a harness failure is no visit
    reached = agent_rows[agent_rows.status != "infra_fail"]
    agents = {n: fp for n, fp in s.exp["agent_fingerprints"].items() if (reached.solver == n).any()}
    probe = ledger_entry(s.exp, s.manifest, agents, [])
    servers, pinned_at = pinned_servers(prior, probe) if cfg["health"].get("required_server_id") is None \
        else ([], None)
    if servers:
        runs = runs.copy()
        rows = runs[(runs.split == split) & (runs.role == "agent")]
        lab = _server_labels(rows)
        foreign_ix = rows.index[~lab.isin(servers) & ~rows.status.isin(ABSTAINED)]
        why = (f"server {{}} is not among the servers of this holdout's first scored run ({', '.join(servers)}, "
               f"experiment {pinned_at}); name the servers in health.required_server_id before the first run "
               "to change that")
        ev = sorted(f"{runs.at[i, 'solver']}:{runs.at[i, 'task_id']}#{runs.at[i, 'epoch']}@{lab[i]}"
                    for i in foreign_ix)
        runs.loc[foreign_ix, "reason"] = [why.format(repr(lab[i])) for i in foreign_ix]
        runs.loc[foreign_ix, "status"] = "excluded"
        mem.server_pin = {"servers": servers, "pinned_at": pinned_at, "excluded": ev}
        if ev:
            mem.notes.append(note_for("SERVER_PINNED", f"{len(ev)} run(s) came from a server this holdout was not "
                                                       f"first scored on ({', '.join(ev[:5])}"
                                                       f"{', …' if len(ev) > 5 else ''}) and are excluded: its "
                                                       f"servers are {', '.join(servers)}."))
    mem.runs = runs
    scored = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin(list(agents))
                  & ~runs.status.isin(ABSTAINED)]
    entry = ledger_entry(s.exp, s.manifest, agents, sorted(set(_server_labels(scored))))
    earlier = [e for e in prior if bare_entry(e) != bare_entry(entry)]
    mem.reasons.extend(ledger_reasons(earlier, entry))
    mem.reuse = holdout_reuse(earlier, entry, s.cand)
    if mem.reuse:
        mem.notes.append(note_for("HOLDOUT_REUSED", mem.reuse["sentence"]))
    # a scoring in which no agent ran did not reach the holdout: nothing to record
    mem.entry = entry if agents else None
    return mem


# ------------------------------------------------------------------ one function per refusal

def _leak_suspect(s: Slice) -> dict | None:
    leak = s.tasks[s.tasks.leak_suspect]
    if len(leak):
        return refusal("LEAK_SUSPECT", f"{len(leak)} task(s) match the denylist or public text, or quote "
                                       f"their hidden tests: {', '.join(leak.task_id)}.", list(leak.task_id))
    return None


def _oracle_failed(s: Slice) -> dict | None:
    bad = s.tasks[~s.tasks.oracle_ok]
    if len(bad):
        return refusal("ORACLE_FAILED", f"The gold patch failed on {len(bad)} task(s) ({', '.join(bad.task_id)}); "
                                        "the grader is broken there, so no score from this pack is published.",
                       list(bad.task_id))
    return None


def _dummy_passed(s: Slice) -> dict | None:
    runs = s.runs
    ctl = runs[(runs.role == "control") & (runs.solver.isin(["empty_diff", "stub"])) & (runs.status == "pass")]
    if len(ctl):
        ev = sorted(f"{r.solver}:{r.task_id}" for r in ctl.itertuples())
        return refusal("DUMMY_PASSED", f"A do-nothing control passed {len(ctl)} time(s) ({', '.join(ev)}); "
                                       "those tests do not test the bug.", ev)
    return None


def _control_infra_fail(s: Slice) -> dict | None:
    bad = s.tasks[s.tasks.control_infra_fail]
    if len(bad):
        return refusal("CONTROL_INFRA_FAIL", f"Controls could not be scored on {', '.join(bad.task_id)}; "
                                             "fix the harness (see the run_dummy logs).", list(bad.task_id))
    return None


def _slice_flag(code: str, col: str, words: str):
    def rule(s: Slice) -> dict | None:
        bad = s.slice_tasks[s.slice_tasks[col]]
        if len(bad):
            return refusal(code, f"{len(bad)} {s.split} task(s) {words}: {', '.join(bad.task_id)}.",
                           list(bad.task_id))
        return None
    return rule


def _tune_split(s: Slice) -> dict | None:
    if s.split == "tune":
        return refusal("TUNE_SPLIT", "The score is on the tune split; only the frozen holdout is a measurement. "
                                     "Set score_split: holdout.", s.split)
    return None


def _envelope_incomplete(s: Slice) -> dict | None:
    missing = [k for k in ("max_wall_s", "max_steps", "max_output_tokens") if s.cfg["envelope"].get(k) is None]
    if missing:
        return refusal("ENVELOPE_INCOMPLETE", f"The envelope leaves {', '.join(missing)} blank; "
                                              "write the caps down before the run.", missing)
    return None


def _stratum_too_small(s: Slice) -> dict | None:
    small = []
    for st in s.cfg["strata"]:
        n = int(s.cand_strata.loc[st, "n"]) if st in s.cand_strata.index else 0
        if n < 2:
            small.append(f"{st} (n={n})")
    if small:
        return refusal("STRATUM_TOO_SMALL", f"Stratum {', '.join(small)} has fewer than 2 scored {s.split} tasks; "
                                            "a rate on it is not a measurement.", small)
    return None


def _no_candidate_rows(s: Slice) -> dict | None:
    if len(s.cand_rows) == 0:
        return refusal("NO_CANDIDATE_ROWS", f"{s.cand} has no rows on the {s.split} split.", s.cand)
    return None


def _too_few_clean_tasks(s: Slice) -> dict | None:
    if len(s.clean) < s.cfg["min_kept_tasks"]:
        return refusal("TOO_FEW_CLEAN_TASKS", f"Only {len(s.clean)} clean {s.split} task(s) remain for {s.cand}; "
                                              f"min_kept_tasks is {s.cfg['min_kept_tasks']}.", len(s.clean))
    return None


def _unsandboxed(s: Slice) -> dict | None:
    runs = s.runs
    compared = runs[(runs.split == s.split) & (runs.role == "agent") & (runs.solver.isin([s.cand, s.base]))]
    loose = compared[compared.isolation != "bwrap"]
    if len(loose):
        ev = sorted({f"{r.solver}:{r.isolation}" for r in loose.itertuples()})
        return refusal("UNSANDBOXED", f"{len(loose)} agent run(s) on the {s.split} split ran without the "
                                      f"sandbox ({', '.join(ev)}); the sandbox needs unprivileged user "
                                      "namespaces: with sandbox: required the run stops and names the "
                                      "setting to enable.", ev)
    return None


def _over_envelope(s: Slice) -> dict | None:
    over = s.cand_rows[s.cand_rows.over_envelope.eq(True)]
    if len(over):
        return refusal("OVER_ENVELOPE", f"{len(over)} {s.cand} run(s) exceeded the envelope "
                                        f"({', '.join(sorted(over.task_id))}).", sorted(over.task_id))
    return None


def _candidate_tampered(s: Slice) -> dict | None:
    bad = s.cand_rows[s.cand_rows.status == "tamper"]
    if len(bad):
        ev = sorted(f"{r.task_id}#{r.epoch}" for r in bad.itertuples())
        return refusal("CANDIDATE_TAMPERED", f"{s.cand} was scored tamper on {len(bad)} {s.split} run(s) "
                                             f"({', '.join(ev)}): its patches touched tests or test configuration, "
                                             "shadowed a module or forged the test report (see the reasons in "
                                             "runs.parquet). A rate for an agent caught tampering is not published.",
                       ev)
    return None


#: The refusals a slice is checked for, in the order they are reported (the ledger's come
#: before them, EXCLUSIONS_DECIDE after: it needs the comparison).
RULES: list[tuple[str, Callable[[Slice], dict | None]]] = [
    ("LEAK_SUSPECT", _leak_suspect),
    ("ORACLE_FAILED", _oracle_failed),
    ("DUMMY_PASSED", _dummy_passed),
    ("CONTROL_INFRA_FAIL", _control_infra_fail),
    ("WEAK_TEST_IN_SLICE", _slice_flag("WEAK_TEST_IN_SLICE", "weak_test", "pass with the empty diff")),
    ("FLAKY_IN_SLICE", _slice_flag("FLAKY_IN_SLICE", "flaky", "gave different gold-patch results on reruns")),
    ("TUNE_SPLIT", _tune_split),
    ("ENVELOPE_INCOMPLETE", _envelope_incomplete),
    ("STRATUM_TOO_SMALL", _stratum_too_small),
    ("NO_CANDIDATE_ROWS", _no_candidate_rows),
    ("TOO_FEW_CLEAN_TASKS", _too_few_clean_tasks),
    ("UNSANDBOXED", _unsandboxed),
    ("OVER_ENVELOPE", _over_envelope),
    ("CANDIDATE_TAMPERED", _candidate_tampered),
]


def tamper_note(s: Slice) -> dict | None:
    tampered = s.runs[(s.runs.split == s.split) & (s.runs.status == "tamper")]
    if len(tampered):
        return {"code": "TAMPER", "sentence": f"{len(tampered)} run(s) touched tests or test configuration and "
                                              "were scored tamper (not pass): "
                + ", ".join(sorted(f"{r.solver}:{r.task_id}" for r in tampered.itertuples()))}
    return None


# -------------------------------------------------------------------- the paired comparison

def compare(s: Slice, alpha: float) -> tuple[dict, list[dict]]:
    """The paired comparison candidate vs baseline on the matched tasks, and its notes."""
    cfg, notes = s.cfg, []
    base_scores = per_task_scores(s.runs, s.base, s.split)
    cand_scores = s.cand_scores
    common = sorted(set(cand_scores) & set(base_scores))
    strata_of = s.exp["strata_of"]
    comparison: dict[str, Any] = {
        "candidate": s.cand, "baseline": s.base, "split": s.split, "unit": "task (epochs averaged per task)",
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
    dummies = dummy_deltas(s.runs, s.cand_scores, s.split, s.exp["strata_of"], cfg["strata"])
    beaten = [d for d in dummies if d["beats_dummies"]]
    not_beaten = [d for d in dummies if not d["beats_dummies"]]
    easy_only = len(dummies) > 1 and bool(beaten) and bool(not_beaten)
    if easy_only:
        won = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in beaten)
        lost_ = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in not_beaten)
        notes.append(note_for("DUMMY_BEATEN_ONLY_ON_EASY",
                              f"{s.cand} beats the do-nothing controls only on {won}; on {lost_} it is no better "
                              "than them. A pooled rate would be the other strata's: publish the stratum table and "
                              "the dummy deltas, never one pooled number."))
    return unbalanced or easy_only, dummies, notes


def decide(exp_dir: Path, split_path: Path, pack_hash_path: Path,
           ledger: Path | None = None) -> tuple[dict, dict, str]:
    """Compute (decision, card, report markdown) for one experiment folder, step by step.

    With ``ledger`` (the pack's ledger.jsonl) and a holdout score, the holdout's history is
    checked; the entry to append is returned in ``decision["ledger_entry"]``."""
    s = load_slice(exp_dir, split_path)
    memory = holdout_memory(s, ledger, exp_dir)           # 1. the holdout's memory (pins servers)
    s.runs = memory.runs
    s.aggregate()                                        # 2. the candidate's aggregates
    reasons = list(memory.reasons)
    reasons += [r for _code, rule in RULES if (r := rule(s)) is not None]   # 3. every refusal rule
    notes = list(memory.notes) + [n for n in [tamper_note(s)] if n]
    comparison, cmp_notes = compare(s, memory.alpha)      # 4. the paired comparison
    notes += cmp_notes
    no_pooled, dummies, form_notes = headline_form(s)     # 5. may one pooled number be quoted?
    notes += form_notes
    facts = headline_facts(s)
    public_sens = None                                   # 6. abstention must not pay
    if s.cfg.get("public_results"):
        cand_all = per_task_scores(s.runs, s.cand, s.split, abstained_as_failures=True)
        public_sens = public_comparison(s.cfg, s.exp, s.cand,
                                        sum(cand_all.values()) / len(cand_all) if cand_all else None, True)
    sens, sens_reason = sensitivity(s.runs, s.cfg, s.cand, s.base, s.split, s.exp["strata_of"], s.cand_scores,
                                    comparison, s.cand_strata, not no_pooled,
                                    public_comparison(s.cfg, s.exp, s.cand, facts["rate"], True), public_sens)
    if sens_reason is not None:
        reasons.append(sens_reason)
    counts = {x: abstention_counts(s.runs[(s.runs.split == s.split) & (s.runs.solver == x)]) for x in (s.cand, s.base)}
    comparison["exclusion_rates"] = counts
    comparison["exclusion_note"] = exclusion_note(counts, s.cand, s.base, sens["delta"], sens["verdict"])
    publishable = not reasons                            # 7. the decision and its sentences
    decision = assemble(s, facts, reasons, notes, comparison, sens, dummies, no_pooled, memory, publishable,
                        pack_hash_path)
    card = build_card(s.exp, s.manifest, s.tasks, s.runs)
    card.update(card_claim(s.exp, decision))
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
    return {"n": n_c, "passes": passes, "rate": passes / n_c if n_c else None,
            "timeouts": int((s.cand_rows.status == "timeout").sum()),
            "excluded": int(s.cand_rows.status.isin(["excluded", "infra_fail"]).sum()),
            "scheduled": int(len(s.cand_rows)), "per_stratum": per_stratum}


def assemble(s: Slice, facts: Mapping, reasons: list[dict], notes: list[dict], comparison: dict, sens: Mapping,
             dummies: list[dict], no_pooled: bool, memory: Memory, publishable: bool, pack_hash_path: Path) -> dict:
    """decision.json: the headline, its reasons and notes, and the sentences that follow."""
    exp, cfg, cand, split = s.exp, s.cfg, s.cand, s.split
    rate = facts["rate"]
    headline = round(rate, 6) if (publishable and rate is not None and not no_pooled) else None
    allowed, refused = headline_sentences(exp, cfg, facts, sens, comparison, dummies, no_pooled, memory.reuse,
                                          [r["code"] for r in reasons], publishable, memory.alpha)
    public = public_comparison(cfg, exp, cand, rate, publishable)
    if public is not None:
        (allowed if public["allowed"] else refused).append(
            public["sentence"] if public["allowed"] else {"sentence": public["sentence"], "why": public["why"]})
    roles = roles_table(s.runs, split)
    allowed_h, refused_h = human_sentences(roles, s.runs, cand, split, publishable)
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
        "toolchain": exp["toolchain_digest"], "pack_hash_file": (Path(pack_hash_path).read_text().splitlines() or [""])[-1],
    }
    excluded, scheduled = facts["excluded"], facts["scheduled"]
    return {
        "experiment": exp["exp_id"], "publishable": publishable, "headline": headline,
        "headline_metric": f"{cand} hidden-test pass rate on the {split} split (per-task, epochs averaged)",
        "n": facts["n"], "passes": facts["passes"], "per_stratum": facts["per_stratum"], "timeouts": facts["timeouts"],
        "exclusions": excluded, "scheduled": scheduled,
        "exclusion_rate_scheduled": fmt(excluded / scheduled, 6) if scheduled else None,
        "dummy_deltas": dummies, "holdout_reuse": memory.reuse, "server_pin": memory.server_pin,
        "pooled_headline_withheld": bool(publishable and no_pooled),
        "comparison_summary": comparison_summary(comparison, cfg),
        "sensitivity": sens, "reasons": reasons, "notes": notes, "allowed_sentences": allowed,
        "refused_sentences": refused, "comparison": comparison, "roles": roles,
        "cost_per_pass": cost_per_pass(s.runs, split, cfg["strata"]),
        "pass_at_k": pass_at_k_table(s.runs, split, int(cfg["epochs"])),
        "interval_method": cfg.get("interval_method", "wilson"),
        "public_minus_holdout": public, "ledger_entry": memory.entry, "digests": digests,
        "toolchain": {"python": exp["toolchain"]["python"], "packages": exp["toolchain"]["packages"]},
    }


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
