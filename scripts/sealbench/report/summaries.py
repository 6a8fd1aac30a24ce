"""The tables a decision reports, computed from runs.parquet: per-task scores (with the
excluded and infra_fail rows left out, or counted as failures or passes), abstention counts,
each solver's dominant failure, the paired delta per stratum, the candidate against the
do-nothing controls per stratum, cost per pass and pass@k.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..core.contract import ABSTAINED, EXCLUDED, INFRA_FAIL, PASS, STATUSES, TIMEOUT
from ..stats import epoch_stats
from .sentences import fmt


def per_task_scores(runs, solver: str, split: str, abstained_as_failures: bool = False,
                    abstained_as_passes: bool = False) -> dict[str, float]:
    """Per-task pass share for a solver on a split (epochs averaged; excluded/infra rows left
    out, or counted as failures with ``abstained_as_failures`` — the sensitivity rate — or as
    passes with ``abstained_as_passes``: the worst case for a claim against this solver)."""
    sub = runs.loc[(runs.solver == solver) & (runs.split == split), ["task_id", "status"]]
    if not (abstained_as_failures or abstained_as_passes):
        sub = sub[~sub.status.isin(ABSTAINED)]
    won = sub.status.eq(PASS) | (sub.status.isin(ABSTAINED) if abstained_as_passes else False)
    share = won.groupby(sub.task_id).mean()
    return {str(tid): float(v) for tid, v in share.items()}


def abstention_counts(rows) -> dict:
    """Runs, excluded and infra_fail rows of one solver on the slice, and their share; with
    ``timeouts``, the runs stopped at their clock (failures, not abstentions: the winner sentence
    states them for both solvers, as the headline does for the candidate)."""
    total = int(len(rows))
    ex, inf = int((rows.status == EXCLUDED).sum()), int((rows.status == INFRA_FAIL).sum())
    return {"runs": total, "excluded": ex, "infra_fail": inf, "rate": fmt((ex + inf) / total, 6) if total else None,
            "timeouts": int((rows.status == TIMEOUT).sum())}


#: Longest reason key :func:`failure_key` returns (an ellipsis marks a cut).
REASON_KEY_CHARS = 120


def failure_key(reason: str | None, limit: int = REASON_KEY_CHARS) -> str:
    """A short key for a run's reason text: its first clause (up to the first ``;``), blanks
    collapsed, cut at a word boundary to at most ``limit`` characters with an ellipsis."""
    if reason is None or reason != reason or not str(reason).strip():
        return "no reason recorded"
    text = " ".join(str(reason).split(";", 1)[0].split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 1]
    if " " in cut[limit // 2:]:
        cut = cut[:cut.rindex(" ")]
    return cut.rstrip(" ,:(") + "…"


def _row_key(status: str, reason: Any, excluded_reason: Any) -> str:
    # an excluded row failed the health envelope: why it was excluded is its reason (the
    # server pin writes its reason into ``reason`` and leaves ``excluded_reason`` null)
    if status == EXCLUDED and isinstance(excluded_reason, str) and excluded_reason.strip():
        return failure_key(excluded_reason)
    return failure_key(reason)


def dominant_failure(runs, solver: str, split: str, strata: list[str] | None = None) -> dict | None:
    """A solver's most common outcome other than ``pass`` on a split (only ``strata`` when
    given), with the most common reason among those rows and the counts, e.g.
    ``flip: 24/24 infra_fail: command not found``. The reason key is :func:`failure_key` of the
    row's ``reason`` (of ``excluded_reason`` for an excluded row). When fewer than all rows of
    that outcome share the key, the sentence says how many do: ``… (12 of the 20)``. Ties go to
    the earlier status in ``contract.STATUSES``, then the alphabetically first key. None when
    the solver has no row there."""
    sub = runs.loc[(runs.solver == solver) & (runs.split == split), ["stratum", "status", "reason", "excluded_reason"]]
    if strata is not None:
        sub = sub[sub.stratum.isin(list(strata))]
    total = int(len(sub))
    if not total:
        return None
    bad = sub[sub.status != PASS]
    out: dict[str, Any] = {"solver": solver, "split": split, "runs": total, "passes": total - int(len(bad)),
                           "status": None, "count": 0, "reason": None, "reason_count": 0}
    if not len(bad):
        out["sentence"] = f"{solver}: no failure ({total}/{total} pass)"
        return out
    order = {st: i for i, st in enumerate(STATUSES)}
    by_status = Counter(map(str, bad.status))
    status = min(by_status, key=lambda st: (-by_status[st], order.get(st, len(order)), st))
    rows = bad[bad.status == status]
    keys: Counter = Counter()
    for (r, e), m in Counter(zip(rows.reason, rows.excluded_reason)).items():  # each distinct pair keyed once
        keys[_row_key(status, r, e)] += m
    key = min(keys, key=lambda k: (-keys[k], k))
    n, k = by_status[status], keys[key]
    out.update(status=status, count=n, reason=key, reason_count=k,
               sentence=f"{solver}: {n}/{total} {status}: {key}" + ("" if k == n else f" ({k} of the {n})"))
    return out


def dominant_failures(runs, split: str) -> list[dict]:
    """:func:`dominant_failure` of every agent and person with rows on the split (the controls
    fail by design and have their own refusals), agents first, then by name."""
    sub = runs.loc[(runs.split == split) & runs.role.isin(["agent", "human"]),
                   ["role", "solver", "split", "stratum", "status", "reason", "excluded_reason"]]
    pairs = sub[["role", "solver"]].drop_duplicates()
    workers = sorted({(str(r), str(s)) for r, s in zip(pairs.role, pairs.solver)}, key=lambda rs: (rs[0] != "agent", rs[1]))
    by_solver = dict(iter(sub.groupby("solver", sort=False)))  # each solver's rows (in order), split once
    return [d for _role, solver in workers
            if (d := dominant_failure(by_solver.get(solver, sub), solver, split)) is not None]


def cost_per_pass(runs, split: str, strata_order: list[str]) -> list[dict]:
    """Tokens and cost per passing task, per solver and stratum (null when unknown or no pass)."""
    out = []
    cols = ["solver", "stratum", "status", "tokens_in", "tokens_out", "cost_usd"]
    sub = runs.loc[(runs.split == split) & (runs.role.isin(["agent", "human"])),
                   cols + (["tokens_source"] if "tokens_source" in runs else [])]
    for (solver, stratum), g in sub.groupby(["solver", "stratum"]):
        passes = int((g.status == PASS).sum())
        unknown = g.tokens_in.isna() | g.tokens_out.isna()
        # metered tokens with a reply that carried no usage are a lower bound: not known either
        lower_bound = g.tokens_source.eq("metered_incomplete") if "tokens_source" in g else unknown & False
        unknown = unknown | lower_bound
        tok_known = not unknown.any()
        tok_missing = int(unknown.sum())
        cost_known = g.cost_usd.notna().all()
        tokens = int(g.tokens_in.sum() + g.tokens_out.sum()) if tok_known else None
        cost = float(g.cost_usd.sum()) if cost_known else None
        out.append({"solver": solver, "stratum": stratum, "runs": int(len(g)), "passes": passes,
                    "tokens": tokens, "cost_usd": fmt(cost, 6),
                    # seed 002: tokens missing -> pass/fail only, labelled as incomplete
                    "tokens_status": "complete" if tok_known else f"incomplete ({tok_missing} of {len(g)} runs "
                                                                  "without tokens" + (
                                                                      " or with metered tokens incomplete"
                                                                      if lower_bound.any() else "") + ")",
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
    sub = runs.loc[(runs.split == split) & (runs.role == "agent") & (~runs.status.isin(list(ABSTAINED))),
                   ["solver", "task_id", "status"]]
    for solver, g in sub.groupby("solver"):
        counts = g.status.eq(PASS).groupby(g.task_id).agg(["size", "sum"])
        # tasks share few (n, c) pairs: compute each once
        pairs = Counter(zip(counts["size"].astype(int), counts["sum"].astype(int)))
        ks = list(range(1, epochs + 1))
        at = [_mean_over_tasks(epoch_stats.pass_at_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
        hat = [_mean_over_tasks(epoch_stats.pass_hat_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
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
    # the do-nothing controls' rows on the split, once (the rows per_task_scores reads)
    ctl_rows = runs.loc[runs.solver.isin(["empty_diff", "stub"]) & (runs.split == split),
                        ["solver", "split", "task_id", "status"]]
    for s in order:
        ids = sorted(t for t in cand_scores if strata_of.get(t) == s)
        if not ids:
            continue
        row: dict[str, Any] = {"stratum": s, "n": len(ids), "candidate_rate": fmt(sum(cand_scores[t] for t in ids) / len(ids), 6)}
        for ctl in ("empty_diff", "stub"):
            sc = per_task_scores(ctl_rows[ctl_rows.task_id.isin(ids)], ctl, split)
            got = [t for t in ids if t in sc]
            rate = sum(sc[t] for t in got) / len(got) if got else None
            row[f"{ctl}_rate"] = fmt(rate, 6)
            row[f"delta_vs_{ctl}"] = None if rate is None else fmt(row["candidate_rate"] - rate, 6)
        known = [row[f"delta_vs_{c}"] for c in ("empty_diff", "stub") if row[f"delta_vs_{c}"] is not None]
        row["beats_dummies"] = bool(known) and min(known) > 0
        out.append(row)
    return out


def won_lost(cand_scores: Mapping[str, float], base_scores: Mapping[str, float]) -> tuple[list[str], list[str]]:
    """The matched tasks the candidate won (its per-task pass share above the baseline's) and
    lost (below): the tasks behind the paired comparison's ``wins`` and ``losses``."""
    common = sorted(set(cand_scores) & set(base_scores))
    return ([t for t in common if cand_scores[t] > base_scores[t]],
            [t for t in common if cand_scores[t] < base_scores[t]])
