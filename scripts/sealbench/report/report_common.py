"""The shared parts of the HTML report (``report_html.py``): escaping, number formats, the order
and colours of strata, splits and solvers, and the per-task numbers behind the plots and tables.

Constants and helpers only; nothing here writes a file.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from ..core.contract import ABSTAINED
from .summaries import per_task_scores  # the gate's per-task pass shares, the one definition

CONTROL_ORDER = ("empty_diff", "stub", "oracle")
SPLIT_ORDER = ("tune", "holdout")
#: Statuses left out of per-task pass shares (as the gate does).
UNSCORED = ABSTAINED

AGENT_COLOURS = ("#1f5fa8", "#c2571a", "#7a3fb0", "#1b8a6b", "#a8327a", "#5b6b00", "#0b7a99", "#8c5a2b")
HUMAN_COLOURS = ("#2e7d32", "#9e2a2b", "#4e5d94", "#b8860b", "#6d4c41")
CONTROL_COLOURS = {"empty_diff": "#7d7d7d", "stub": "#4a4a4a", "oracle": "#a07400"}
PAIR_LABELS = {"both": "both pass", "cand_only": "candidate only", "base_only": "baseline only", "neither": "neither"}


# ----------------------------------------------------------------------------- helpers


def esc(x: Any) -> str:
    """Escape any value for HTML text or an attribute value."""
    return html.escape("" if x is None else str(x), quote=True)


def _isnull(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


def _num(x: Any, nd: int = 3, signed: bool = False) -> str:
    if _isnull(x):
        return "n/a"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int) or (isinstance(x, float) and float(x).is_integer() and not signed):
        return f"{int(x):+d}" if signed else f"{int(x)}"
    return f"{float(x):+.{nd}f}" if signed else f"{float(x):.{nd}f}"


def _pct(x: Any) -> str:
    return "n/a" if _isnull(x) else f"{100 * float(x):.0f}%"


def _secs(s: float) -> str:
    if s < 10:
        return f"{s:.1f} s"
    if s < 1000:
        return f"{s:.0f} s"
    return f"{s:.0f} s ({s / 60:.0f} min)"


def _f(x: float) -> str:
    """Coordinates with a fixed precision (stable bytes)."""
    return f"{x:.1f}"


def _col(df: pd.DataFrame, name: str, default: Any = None) -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series([default] * len(df), index=df.index, dtype=object)


def _ordered(values: Iterable[str], first: Sequence[str] = ()) -> list[str]:
    vals = {str(v) for v in values if not _isnull(v)}
    return [v for v in first if v in vals] + sorted(vals - set(first))


def strata_order(decision: Mapping, card: Mapping, *frames: pd.DataFrame) -> list[str]:
    """Config order where it is known (the decision's per_stratum, strata.parquet order)."""
    out: list[str] = []
    for p in decision.get("per_stratum") or []:
        if p.get("stratum") not in out:
            out.append(str(p["stratum"]))
    for df in frames:
        if "stratum" in df.columns:
            for s in df["stratum"].tolist():
                if not _isnull(s) and str(s) not in out:
                    out.append(str(s))
    for s in ((card.get("dataset") or {}).get("strata") or {}):
        if s not in out:
            out.append(str(s))
    return out


def split_order(*frames: pd.DataFrame) -> list[str]:
    vals: list[str] = []
    for df in frames:
        if "split" in df.columns:
            vals += [str(s) for s in df["split"].dropna().tolist()]
    return _ordered(vals, SPLIT_ORDER)


def solver_order(decision: Mapping, runs: pd.DataFrame, strata: pd.DataFrame) -> list[tuple[str, str]]:
    """(solver, role): candidate, baseline, other agents, humans, then the controls."""
    comp = decision.get("comparison") or {}
    roles: dict[str, str] = {}
    for df in (strata, runs):
        if "solver" in df.columns:
            for s, r in zip(df["solver"].tolist(), _col(df, "role", "agent").tolist()):
                roles.setdefault(str(s), "agent" if _isnull(r) else str(r))
    for c in CONTROL_ORDER:
        if c in roles:
            roles[c] = "control"

    def key(s: str) -> tuple:
        r = roles[s]
        if r == "control":
            return (3, CONTROL_ORDER.index(s) if s in CONTROL_ORDER else 9, s)
        if s == comp.get("candidate"):
            return (0, 0, s)
        if s == comp.get("baseline"):
            return (0, 1, s)
        return (1 if r == "agent" else 2, 0, s)

    return [(s, roles[s]) for s in sorted(roles, key=key)]


def solver_colours(solvers: Sequence[tuple[str, str]]) -> dict[str, str]:
    out: dict[str, str] = {}
    ia = ih = 0
    for s, r in solvers:
        if r == "control":
            out[s] = CONTROL_COLOURS.get(s, "#666666")
        elif r == "human":
            out[s] = HUMAN_COLOURS[ih % len(HUMAN_COLOURS)]
            ih += 1
        else:
            out[s] = AGENT_COLOURS[ia % len(AGENT_COLOURS)]
            ia += 1
    return out


def _label(solver: str, role: str, comp: Mapping) -> str:
    tag = role
    if solver == comp.get("candidate"):
        tag = "candidate"
    elif solver == comp.get("baseline"):
        tag = "baseline"
    return f"{solver} ({tag})"


def paired_counts(runs: pd.DataFrame, cand: str, base: str, split: str,
                  strata_names: list[str]) -> tuple[list[tuple[str, dict[str, int]]], list[str]]:
    """Per-stratum 2x2 counts of candidate vs baseline on matched tasks of ``split``.

    Per task: epochs averaged (excluded and infra_fail rows left out), then a share >= 0.5
    counts as a pass. Returns ([(stratum, counts)...] with an "all" row last, unmatched ids).
    """
    cs = per_task_scores(runs, cand, split)
    bs = per_task_scores(runs, base, split)
    common = sorted(set(cs) & set(bs))
    sub = runs[(runs.split == split)]
    stratum_of = {str(t): str(s) for t, s in zip(sub.task_id.tolist(), sub.stratum.tolist())}
    names = list(strata_names) + sorted({stratum_of[t] for t in common} - set(strata_names))
    table = {s: {"both": 0, "cand_only": 0, "base_only": 0, "neither": 0} for s in names}
    for t in common:
        c, b = cs[t] >= 0.5, bs[t] >= 0.5
        k = "both" if c and b else "cand_only" if c else "base_only" if b else "neither"
        table[stratum_of[t]][k] += 1
    rows = [(s, table[s]) for s in names]
    total = {k: sum(r[k] for _, r in rows) for k in PAIR_LABELS}
    rows.append(("all", total))
    return rows, sorted(set(cs) ^ set(bs))
