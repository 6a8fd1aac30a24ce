"""report_html: the reviewer-facing HTML page of one experiment (report.html).

Reads:  decision.json, card.json, tables/{tasks,runs,strata}.parquet of an experiment folder
Writes: report.html in the same folder (atomically)

One self-contained page: inline CSS and inline SVG, no script, no external resource, no
timestamp (the same inputs give the same bytes). Every piece of text from the inputs is
escaped. Sections: the decision (reasons, notes, allowed and refused sentences), plot 1
(pass rate per stratum with Wilson 95% intervals for every solver, controls included, one
panel per split, and its table), plot 2 (the paired outcome table of candidate vs baseline
per stratum on the scored split, with the comparison numbers, the per-stratum deltas and the
tasks won and lost), plot 3 (time to green of agents and humans), the candidate against the
do-nothing controls, humans beside agents, tokens and cost per pass and pass@k, the task
table, the per-task outcomes (each solver's result with links to its patch and logs) and the
card. Every table and line of report.md is here, built by the same functions: report.md is
written by ``report_md.py``, whose ``Table``s and lines this module renders as HTML, so the two
reports cannot disagree.

The module, top to bottom: the shared parts (escaping, number formats, the order and colours of
strata, splits and solvers, the paired counts), the three SVG plots, report.md's tables and lines
as HTML, the per-task outcomes (also ``sealbench show``'s lines on the tasks won and lost), the
sections, and the page (CSS, header, navigation, the order of the sections) with its entry points
``render_html``, ``write_report`` and ``main``.

    python -m sealbench.report.report_html EXP_DIR
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import paths
from ..core.contract import ABSTAINED
from ..core.core import atomic_write_text, read_json
from ..core.refusals import comparison_tone, decision_tone
from .report_md import (
    WON_LOST_HEADING,
    Table,
    banner_headline,
    comparison_banner,
    cost_table,
    dummy_table,
    headline_value_line,
    humans_table,
    interval_note_line,
    paired_heading,
    paired_table,
    pass_at_k_table,
    power_line,
    public_line,
    strata_table,
    stratum_delta_table,
    tasks_table,
    won_lost_lines,
)
from .summaries import per_task_scores, won_lost  # the gate's per-task pass shares and wins, the one definition

# ----------------------------------------------------------------------------- constants


CONTROL_ORDER = ("empty_diff", "stub", "oracle")
#: The do-nothing controls: their fail is the expected outcome (shown grey, not red).
DO_NOTHING = ("empty_diff", "stub")
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


# ----------------------------------------------------------------------------- plots
# The three SVG plots. Plot 1 (``plot_pass_rates``): pass rate per stratum with Wilson 95%
# intervals for every solver, controls included, one panel per split. Plot 2 (``plot_paired``):
# the paired outcomes of candidate vs baseline per stratum, from ``paired_counts``. Plot 3
# (``plot_time_to_green``): time to green of agents and humans. Each returns one inline ``<svg>``
# string with a title and a description; coordinates are printed with a fixed precision, so the
# same inputs give the same bytes.

PAIR_COLOURS = {"both": "#5b7fa6", "cand_only": "#2e8b57", "base_only": "#c0504d", "neither": "#c9c9c9"}

FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif"


def _text(x: float, y: float, s: str, size: int = 12, anchor: str = "start", fill: str = "#222",
          weight: str = "normal", extra: str = "") -> str:
    return (f'<text x="{_f(x)}" y="{_f(y)}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"'
            f' font-weight="{weight}"{extra}>{esc(s)}</text>')


def _svg_open(width: int, height: float, title: str, desc: str, ident: str) -> str:
    return (f'<svg id="{esc(ident)}" role="img" width="{width}" '
            f'height="{_f(height)}" viewBox="0 0 {width} {_f(height)}" aria-labelledby="{esc(ident)}-t {esc(ident)}-d"'
            f' style="{FONT}">'
            f'<title id="{esc(ident)}-t">{esc(title)}</title><desc id="{esc(ident)}-d">{esc(desc)}</desc>'
            f'<rect x="0" y="0" width="{width}" height="{_f(height)}" fill="#ffffff"/>')


# ----------------------------------------------------------------------------- plot 1


def plot_pass_rates(decision: Mapping, strata: pd.DataFrame, runs: pd.DataFrame, strata_names: list[str],
                    splits: list[str]) -> str:
    """Pass rate per stratum with Wilson 95% bars, every solver, one panel per split."""
    comp = decision.get("comparison") or {}
    solvers = solver_order(decision, runs, strata)
    colours = solver_colours(solvers)
    width, label_w, gap, right = 900, 200, 24, 8
    splits = splits or ["(none)"]
    k = len(splits)
    pw = (width - label_w - right - gap * (k - 1)) / k
    nw = 50  # room for the "n=" label right of the axis
    top, row_h, head_h, bottom = 46, 17, 20, 58
    rows: list[tuple[str, str | None, str | None]] = []  # (kind, stratum, solver)
    for s in strata_names:
        rows.append(("head", s, None))
        rows += [("row", s, sv) for sv, _ in solvers]
    height = top + sum(head_h if r[0] == "head" else row_h for r in rows) + bottom
    cells = {}
    if len(strata):
        for r in strata.itertuples(index=False):
            cells[(str(r.solver), str(r.split), str(r.stratum))] = r
    out = [_svg_open(width, height, "Plot 1: hidden-test pass rate per stratum, every solver, Wilson 95% intervals",
                     "One panel per split; one row per solver within each stratum; the dot is the pass rate, the bar "
                     "the Wilson 95% interval, n the number of tasks (epochs averaged per task).", "plot1")]
    panels = []
    for i, sp in enumerate(splits):
        x0 = label_w + i * (pw + gap)
        x1 = x0 + pw - nw
        panels.append((sp, x0, x1))
        scored = " (scored split)" if sp == comp.get("split") else ""
        out.append(_text(x0 + (pw - nw) / 2, 18, f"{sp}{scored}", 14, "middle", weight="bold"))
        for t in (0, 0.25, 0.5, 0.75, 1.0):
            x = x0 + t * (x1 - x0)
            out.append(f'<line x1="{_f(x)}" y1="{top - 8}" x2="{_f(x)}" y2="{_f(height - bottom + 4)}" '
                       f'stroke="{"#999" if t in (0, 1.0) else "#e2e2e2"}" stroke-width="1"/>')
            out.append(_text(x, height - bottom + 17, _pct(t), 11, "middle", "#444"))
            out.append(_text(x, top - 12, _pct(t), 10, "middle", "#777"))
        out.append(_text(x0 + (x1 - x0) / 2, height - bottom + 32, "hidden-test pass rate", 11, "middle", "#444"))
    y = top
    for kind, stratum, sv in rows:
        if kind == "head":
            out.append(f'<rect x="4" y="{_f(y + 1)}" width="{width - 8}" height="{head_h - 2}" fill="#f0f3f7"/>')
            out.append(_text(8, y + 14, f"stratum {stratum}", 12, weight="bold"))
            y += head_h
            continue
        role = dict(solvers)[sv]
        col = colours[sv]
        cy = y + row_h / 2
        out.append(_text(label_w - 8, cy + 4, _label(sv, role, comp), 12, "end", col,
                         "bold" if sv in (comp.get("candidate"), comp.get("baseline")) else "normal"))
        for sp, x0, x1 in panels:
            c = cells.get((sv, sp, stratum))
            if c is None:
                out.append(_text(x0 + 4, cy + 4, "no rows", 10, fill="#999"))
                continue
            n = int(c.n) if not _isnull(c.n) else 0
            rate = getattr(c, "pass_rate", None)
            lo, hi = getattr(c, "ci_low", None), getattr(c, "ci_high", None)
            if _isnull(rate):
                out.append(_text(x0 + 4, cy + 4, f"n={n}: no rate", 10, fill="#999"))
                continue

            def px(v: float) -> float:
                return x0 + max(0.0, min(1.0, float(v))) * (x1 - x0)

            tip = (f"{sv}, {sp}, stratum {stratum}: {float(c.passes):g}/{n} = {_pct(rate)}"
                   f" (Wilson 95% {_pct(lo)}–{_pct(hi)})")
            out.append(f'<g><title>{esc(tip)}</title>')
            if not _isnull(lo) and not _isnull(hi):
                out.append(f'<line x1="{_f(px(lo))}" y1="{_f(cy)}" x2="{_f(px(hi))}" y2="{_f(cy)}" stroke="{col}" '
                           f'stroke-width="2"/>')
                for v in (lo, hi):
                    out.append(f'<line x1="{_f(px(v))}" y1="{_f(cy - 4)}" x2="{_f(px(v))}" y2="{_f(cy + 4)}" '
                               f'stroke="{col}" stroke-width="1.5"/>')
            out.append(f'<circle cx="{_f(px(rate))}" cy="{_f(cy)}" r="4" fill="{col}" stroke="#fff" '
                       f'stroke-width="1"/></g>')
            out.append(_text(x1 + 6, cy + 4, f"n={n}", 11, fill="#333"))
        y += row_h
    out.append(_text(8, height - 10, "Dot: pass rate (tasks, epochs averaged per task; excluded and infra_fail "
                                     "runs left out). Bar: Wilson 95% interval. n: tasks in the cell.", 11, fill="#444"))
    out.append("</svg>")
    return "".join(out)


# ----------------------------------------------------------------------------- plot 2


def plot_paired(rows: list[tuple[str, dict[str, int]]], cand: str, base: str, split: str) -> str:
    width, label_w, right = 900, 110, 80
    top, row_h, bottom = 62, 30, 36
    height = top + row_h * len(rows) + bottom
    bar_w = width - label_w - right
    nmax = max([sum(c.values()) for _, c in rows] + [1])
    out = [_svg_open(width, height, f"Plot 2: paired outcomes, {cand} (candidate) vs {base} (baseline), "
                                    f"{split} split, per stratum",
                     "Stacked bars of matched tasks: both pass, candidate only, baseline only, neither; bar length "
                     "is the number of tasks.", "plot2")]
    x = label_w
    for k in PAIR_LABELS:
        lab = PAIR_LABELS[k]
        if k == "cand_only":
            lab = f"{cand} only (candidate)"
        elif k == "base_only":
            lab = f"{base} only (baseline)"
        out.append(f'<rect x="{_f(x)}" y="10" width="14" height="14" fill="{PAIR_COLOURS[k]}"/>')
        out.append(_text(x + 19, 22, lab, 12))
        x += 28 + 7.0 * len(lab)
    out.append(_text(label_w, 46, f"matched {split} tasks; per task: epochs averaged, share >= 0.5 counted as a pass",
                     11, fill="#555"))
    y = top
    for stratum, c in rows:
        n = sum(c.values())
        cy = y + row_h / 2
        out.append(_text(label_w - 10, cy + 4, "all strata" if stratum == "all" else f"stratum {stratum}", 12, "end",
                         weight="bold" if stratum == "all" else "normal"))
        xx = label_w
        for k in PAIR_LABELS:
            w = bar_w * c[k] / nmax
            if c[k]:
                out.append(f'<g><title>{esc(f"stratum {stratum}: {PAIR_LABELS[k]} {c[k]} of {n}")}</title>'
                           f'<rect x="{_f(xx)}" y="{_f(y + 4)}" width="{_f(w)}" height="{row_h - 8}" '
                           f'fill="{PAIR_COLOURS[k]}" stroke="#fff" stroke-width="1"/></g>')
                if w >= 16:
                    out.append(_text(xx + w / 2, cy + 4, str(c[k]), 12, "middle",
                                     "#222" if k == "neither" else "#fff", "bold"))
            xx += w
        out.append(_text(xx + 8, cy + 4, f"n={n}" if n else "n=0 (no matched tasks)", 11, fill="#333"))
        y += row_h
    out.append(f'<line x1="{label_w}" y1="{top - 2}" x2="{label_w}" y2="{_f(y + 2)}" stroke="#999"/>')
    out.append(_text(label_w, height - 12, "Concordant pairs (both, neither) say nothing about the difference; "
                                           "the discordant ones (candidate only vs baseline only) do.", 11,
                     fill="#444"))
    out.append("</svg>")
    return "".join(out)


# ----------------------------------------------------------------------------- plot 3


def _nice_step(span: float, target: int = 6) -> float:
    raw = span / max(1, target)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def plot_time_to_green(decision: Mapping, card: Mapping, runs: pd.DataFrame, splits: list[str]) -> str:
    """Strip plot of time_to_green_s per solver (agents and humans), median marked, no-green counted."""
    comp = decision.get("comparison") or {}
    solvers = [(s, r) for s, r in solver_order(decision, runs, pd.DataFrame()) if r in ("agent", "human")]
    colours = solver_colours(solver_order(decision, runs, pd.DataFrame()))
    ttg = pd.to_numeric(_col(runs, "time_to_green_s"), errors="coerce")
    groups: list[tuple[str, str, str, list[float], int]] = []  # split, solver, role, times, no_green
    for sp in splits:
        for sv, role in solvers:
            m = (runs.solver == sv) & (runs.split == sp) if len(runs) else pd.Series(dtype=bool)
            if not m.any():
                continue
            sub = runs[m].sort_values(["task_id", "epoch"] if "epoch" in runs.columns else ["task_id"])
            t = ttg[sub.index]
            groups.append((sp, sv, role, [float(v) for v in t.dropna().tolist()], int(t.isna().sum())))
    width, label_w, right = 900, 230, 190
    top, row_h, head_h, bottom = 40, 30, 20, 62
    n_heads = len({g[0] for g in groups})
    height = top + row_h * max(1, len(groups)) + head_h * n_heads + bottom
    title = "Plot 3: time to green (first green visible-test run) per solver, agents and humans"
    out = [_svg_open(width, height, title, "One row per solver and split; dots are runs with a green visible run, "
                                           "the vertical bar is the median, and the count of runs without a green "
                                           "is written on the right.", "plot3")]
    if not groups:
        out.append(_text(width / 2, top + 20, "no agent or human runs in runs.parquet", 13, "middle", "#777"))
        out.append("</svg>")
        return "".join(out)
    allt = [v for g in groups for v in g[3]]
    env = card.get("envelope") or {}
    clock = env.get("max_wall_s")
    clock = float(clock) if isinstance(clock, (int, float)) and not isinstance(clock, bool) and clock > 0 else None
    x0, x1 = label_w, width - right
    pos = [v for v in allt if v > 0]
    hi = max(allt + ([clock] if clock else []) + [1.0])
    use_log = bool(pos) and hi / min(pos) > 30
    if use_log:
        lo_e = math.floor(math.log10(min(pos + ([clock] if clock else []))))
        hi_e = math.ceil(math.log10(hi))
        if hi_e == lo_e:
            hi_e += 1
        floor_v = 10.0 ** lo_e

        def px(v: float) -> float:
            v = max(v, floor_v)
            return x0 + (math.log10(v) - lo_e) / (hi_e - lo_e) * (x1 - x0)
        ticks = [10.0 ** e for e in range(lo_e, hi_e + 1)]
        axis = "time to green, seconds (log scale)"
    else:
        step = _nice_step(hi)
        top_v = step * math.ceil(hi / step)

        def px(v: float) -> float:
            return x0 + max(0.0, v) / top_v * (x1 - x0)
        ticks = [step * i for i in range(int(round(top_v / step)) + 1)]
        axis = "time to green, seconds"
    plot_bottom = height - bottom
    for t in ticks:
        x = px(t)
        out.append(f'<line x1="{_f(x)}" y1="{top - 4}" x2="{_f(x)}" y2="{_f(plot_bottom + 4)}" stroke="#e2e2e2"/>')
        out.append(_text(x, plot_bottom + 17, f"{t:g}", 11, "middle", "#444"))
    out.append(_text((x0 + x1) / 2, plot_bottom + 32, axis, 11, "middle", "#444"))
    out.append(_text(x1 + 10, top - 12, "median · no green", 11, fill="#555", weight="bold"))
    if clock:
        xc = px(clock)
        out.append(f'<line x1="{_f(xc)}" y1="{top - 4}" x2="{_f(xc)}" y2="{_f(plot_bottom + 4)}" stroke="#b22222" '
                   f'stroke-dasharray="4 3"/>')
        out.append(_text(xc, top - 12, f"clock max_wall_s {clock:g} s", 10, "middle", "#b22222"))
    y = top
    cur = None
    for sp, sv, role, times, no_green in groups:
        if sp != cur:
            cur = sp
            scored = " (scored split)" if sp == comp.get("split") else ""
            out.append(f'<rect x="4" y="{_f(y + 1)}" width="{width - 8}" height="{head_h - 2}" fill="#f0f3f7"/>')
            out.append(_text(8, y + 14, f"split {sp}{scored}", 12, weight="bold"))
            y += head_h
        cy = y + row_h / 2
        col = colours.get(sv, "#333")
        out.append(_text(label_w - 10, cy + 4, _label(sv, role, comp), 12, "end", col, "bold"))
        out.append(f'<line x1="{x0}" y1="{_f(cy)}" x2="{x1}" y2="{_f(cy)}" stroke="#f0f0f0"/>')
        for i, v in enumerate(sorted(times)):
            jitter = ((i % 5) - 2) * 2.6
            out.append(f'<circle cx="{_f(px(v))}" cy="{_f(cy + jitter)}" r="3.5" fill="{col}" fill-opacity="0.55" '
                       f'stroke="{col}" stroke-width="0.8"><title>{esc(f"{sv}: {v:g} s")}</title></circle>')
        total = len(times) + no_green
        # the same median as decision.json's roles: runs without a green count as +infinity
        med = float(pd.Series(times + [math.inf] * no_green).median()) if total else math.inf
        if times and med == math.inf:
            right_txt = f"never · no green {no_green}/{total}"
        elif times:
            xm = px(med)
            out.append(f'<line x1="{_f(xm)}" y1="{_f(cy - 11)}" x2="{_f(xm)}" y2="{_f(cy + 11)}" stroke="#111" '
                       f'stroke-width="2.5"><title>{esc(f"median {med:g} s")}</title></line>')
            right_txt = f"{_secs(med)} · no green {no_green}/{total}"
        else:
            out.append(_text(x0 + 6, cy + 4, "no green run", 11, fill="#999"))
            right_txt = f"— · no green {no_green}/{total}"
        out.append(_text(x1 + 10, cy + 4, right_txt, 11, fill="#222"))
        y += row_h
    out.append(_text(8, height - 10, "Dots: runs whose visible tests went green (time from clock start). Black bar: "
                                     "median over all runs, a run without a green counted as never (+inf). No green: runs with a null "
                                     "time_to_green_s.", 11, fill="#444"))
    out.append("</svg>")
    return "".join(out)


# ----------------------------------------------------------------------------- report.md's tables
# report.md's tables and lines in report.html: each ``report_md.Table`` rendered as an HTML table
# under the same heading, and the sentences report.md prints between them, built by the same
# functions (``report_md.py``), so the two reports cannot disagree. ``html_table`` renders one
# table; ``strata_twin`` (under plot 1), ``comparison_twins`` (in the paired section) and
# ``section_side_tables`` (the controls, humans, cost and pass@k sections) place them.

_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?$")

#: (position, header, cells as HTML) of a column the HTML table adds to report.md's.
Extra = tuple[int, str, Sequence[str]]


def html_table(t: Table, extra: Sequence[Extra] = (), cls: Callable[[str, str], str] | None = None,
               row_cls: Sequence[str] = ()) -> str:
    """One table: report.md's columns and cells, plus ``extra`` columns (already HTML) inserted
    before the column at their position (in the given order); ``cls(column, cell)`` names a CSS
    class for a cell (``num`` is added for numbers), ``row_cls`` one for each row."""
    header: list[str] = [f"<th>{esc(h)}</th>" for h in t.header]
    rows: list[list[str]] = []
    for r in t.rows:
        cells = []
        for h, c in zip(t.header, r):
            names = " ".join(x for x in ("num" if _NUMBER.match(c) else "", cls(h, c) if cls else "") if x)
            cells.append(f'<td class="{names}">{esc(c)}</td>' if names else f"<td>{esc(c)}</td>")
        rows.append(cells)
    for _k, (pos, head, col) in sorted(enumerate(extra), key=lambda e: (-e[1][0], -e[0])):
        header.insert(pos, f"<th>{esc(head)}</th>")
        for cells, c in zip(rows, col):
            cells.insert(pos, c)
    row_cls = list(row_cls) + [""] * (len(rows) - len(row_cls))
    out = ["<table><tr>" + "".join(header) + "</tr>"]
    out += [(f'<tr class="{esc(rc)}">' if rc else "<tr>") + "".join(r) + "</tr>" for r, rc in zip(rows, row_cls)]
    if not t.rows:
        out.append(f'<tr><td colspan="{len(header)}" class="sub">no rows</td></tr>')
    return "".join(out) + "</table>"


def titled(t: Table | None, level: str = "h3", anchor: str | None = None) -> str:
    if t is None:
        return ""
    ident = f' id="{esc(anchor)}"' if anchor else ""
    return f"<{level}{ident}>{esc(t.heading)}</{level}>" + html_table(t)


def _p(line: str | None, css: str = "") -> str:
    if not line:
        return ""
    return f'<p class="{css}">{esc(line)}</p>' if css else f"<p>{esc(line)}</p>"


def strata_twin(strata) -> str:
    """Below plot 1: its numbers, with the timeout, infra_fail and excluded rates (folded: one row
    per solver, split and stratum)."""
    t = strata_table(strata)
    return (f'<details class="twin"><summary><h3>{esc(t.heading)}</h3> <span class="sub">— the numbers of plot 1: '
            f"{len(t.rows)} rows, with the timeout, infra_fail and excluded rates</span></summary>"
            + html_table(t) + "</details>")


def comparison_twins(decision: Mapping, won: Sequence[str] | None, lost: Sequence[str] | None) -> str:
    """In the paired section: report.md's comparison table, its notes, the per-stratum deltas and
    the tasks won and lost."""
    c = decision.get("comparison") or {}
    out = [f"<h3>{esc(paired_heading(c))}</h3>"]
    paired = paired_table(c)
    out.append(html_table(paired) if paired is not None else _p(c.get("note") or "No paired interval."))
    out += [_p(interval_note_line(c)), _p(c.get("exclusion_note")), _p(power_line(c))]
    out.append(titled(stratum_delta_table(c)))
    out.append(won_lost_block(c, won, lost))
    return "".join(out)


def won_lost_block(c: Mapping, won: Sequence[str] | None, lost: Sequence[str] | None, level: str = "h3") -> str:
    lines = won_lost_lines(c, won, lost)
    return (f"<{level}>{esc(WON_LOST_HEADING)}</{level}>" + _p(lines[0], "sub")
            + "<ul>" + "".join(f'<li class="mono">{esc(x)}</li>' for x in lines[1:]) + "</ul>")


def section_side_tables(decision: Mapping) -> str:
    """The candidate against the do-nothing controls, humans beside agents, tokens and cost per
    pass, pass@k (with several epochs) and public minus holdout: one section each."""
    out = []
    dummies = dummy_table(decision)
    if dummies is not None:
        out.append(f'<section id="controls">{titled(dummies, "h2")}<p class="sub">Per stratum of the scored split: '
                   "the candidate's hidden pass rate and its difference from each do-nothing control on the same "
                   "tasks (from decision.json).</p></section>")
    out.append(f'<section id="humans">{titled(humans_table(decision), "h2")}<p class="sub">Every agent and person '
               "on the scored split: hidden pass rate per task (epochs averaged), the median time to a green "
               "visible suite within the clock (null when half never went green), steers and timeouts.</p>"
               "</section>")
    out.append(f'<section id="cost">{titled(cost_table(decision), "h2")}')
    out.append(titled(pass_at_k_table(decision), "h2", "passk"))
    out.append(_p(public_line(decision)) + "</section>")
    return "".join(out)


# ----------------------------------------------------------------------------- per-task outcomes
# Each solver's result on each task, with links to the run's files, and the tasks the candidate
# won and lost against the baseline. ``won_lost_of`` reads the won and lost task ids from
# decision.json (``comparison.won_task_ids``, ``lost_task_ids``) or, for a decision written before
# those fields, computes them from runs.parquet with the gate's own per-task scores
# (``summaries.per_task_scores`` and ``summaries.won_lost``). ``section_outcomes`` is report.html's
# outcome table; ``show_lines`` is what ``sealbench show`` prints. Links are relative to the
# experiment folder (``results/experiments/<id>/``), built with the results layout (``paths.py``)
# and written only for files that exist: a report opened through ``results/latest/`` resolves
# ``..`` textually, so open it from its experiment folder (the index, ``results/index.html``,
# links there).

WON, LOST = "won", "lost"


def won_lost_of(decision: Mapping, runs: pd.DataFrame | None) -> tuple[list[str] | None, list[str] | None]:
    """(won, lost) task ids of the candidate against the baseline on the scored split; (None, None)
    when neither the decision nor the runs can tell."""
    c = decision.get("comparison") or {}
    if "won_task_ids" in c:
        return list(c["won_task_ids"]), list(c.get("lost_task_ids") or [])
    cand, base, split = c.get("candidate"), c.get("baseline"), c.get("split")
    if not (cand and base and split) or runs is None or not len(runs):
        return None, None
    return won_lost(per_task_scores(runs, cand, split), per_task_scores(runs, base, split))


def runs_beside(results: Path) -> pd.DataFrame | None:
    """tables/runs.parquet beside a decision (``results`` is the experiment folder or its
    decision.json), or None when there is none."""
    f = (results if results.is_dir() else results.parent) / "tables" / "runs.parquet"
    return pd.read_parquet(f) if f.is_file() else None


def show_lines(decision: Mapping, results: Path) -> list[str]:
    """``sealbench show``'s lines on the tasks won and lost (runs.parquet beside the decision is
    read only for a decision that lacks the ids)."""
    c = decision.get("comparison") or {}
    return won_lost_lines(c, *won_lost_of(decision, None if "won_task_ids" in c else runs_beside(results)))


def results_root(exp_dir: Path | None) -> Path | None:
    """The results folder of an experiment folder laid out as ``<results>/experiments/<id>``."""
    if exp_dir is None or Path(exp_dir).parent.name != "experiments":
        return None
    return Path(exp_dir).parent.parent


def run_files(row: Mapping[str, Any], res: str) -> list[tuple[str, str]]:
    """(label, path under ``res``) of one run's files: its patch, its logs and its scoring (none
    for a row without a task digest)."""
    if _isnull(row.get("task_digest")):
        return []
    t, d, s, e = str(row["task_id"]), str(row["task_digest"]), str(row["solver"]), row["epoch"]
    e = 1 if _isnull(e) else int(e)
    role = row.get("role")
    if role == "control":
        ctl = paths.controls_dir(t, d, res)
        return [("patch", f"{ctl}/{s}.patch"), ("scoring", f"{ctl}/logs/{s}-{e}"),
                ("log", paths.task_log(t, d, "run_dummy", res))]
    if role == "human":
        run = paths.session_dir(t, d, s, e, res)
        score = paths.session_score(t, d, s, e, res)
    else:
        fp = str(row.get("fingerprint"))
        run, score = paths.run_dir(t, d, s, fp, e, res), paths.score(t, d, s, fp, e, res)
    return [("patch", f"{run}/patch.diff"), ("transcript", f"{run}/transcript.jsonl"), ("logs", run),
            ("scoring", score[: -len(".json")] + ".logs")]


def _status_class(status: str) -> str:
    return "pass" if status == "pass" else "fail" if status == "fail" else "warn"


def _a(label: str, href: str) -> str:
    return f'<a href="{esc(href)}">{esc(label)}</a>'


def _files(r: Mapping, exp_dir: Path | None, rel: str | None, only: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(label, href) of the run's files that exist (``only``: just these labels)."""
    if exp_dir is None or rel is None:
        return []
    return [(label, href) for label, href in run_files(r, rel)
            if (not only or label in only) and (exp_dir / href).exists()]


def _cell(rows: list[dict], exp_dir: Path | None, root: Path | None) -> str:
    """One solver on one task: the outcome (``k/n pass`` over epochs; hover for the reasons), then
    the links: per epoch for agents and people, once (scoring per epoch) for a control."""
    if not rows:
        return "<td></td>"
    rel = os.path.relpath(root, exp_dir) if root is not None and exp_dir is not None else None
    rows = sorted(rows, key=lambda r: 0 if _isnull(r.get("epoch")) else int(r["epoch"]))
    statuses = [str(r.get("status")) for r in rows]
    whys = []
    for r, st in zip(rows, statuses):
        why = r.get("excluded_reason") if st == "excluded" else r.get("reason")
        if not _isnull(why) and str(why):
            whys.append(str(why) if len(rows) == 1 else f"e{r.get('epoch')}: {why}")
    k = statuses.count("pass")
    others = sorted({st for st in statuses if st != "pass"})
    summary = statuses[0] if len(rows) == 1 else f"{k}/{len(rows)} pass" + (f" ({', '.join(others)})" if others
                                                                            else "")
    title = f' title="{esc("; ".join(whys))}"' if whys else ""
    out = [f'<div class="st"{title}>{esc(summary)}</div>']
    multi = len(rows) > 1
    if rows[0].get("role") == "control":  # one patch and one job log per task; scoring per epoch
        links = [_a(*f) for f in _files(rows[0], exp_dir, rel, ("patch", "log"))]
        scoring = [(r, f) for r in rows for f in _files(r, exp_dir, rel, ("scoring",))]
        links += [_a(*f) for _r, f in scoring] if not multi else []
        if links:
            out.append('<div class="links">' + " ".join(links) + "</div>")
        if multi and scoring:
            out.append('<div class="links">scoring ' + " ".join(_a(f"e{r.get('epoch')}", href)
                                                              for r, (_l, href) in scoring) + "</div>")
    else:
        for r, st in zip(rows, statuses):
            links = [_a(*f) for f in _files(r, exp_dir, rel)]
            head = f'<span class="ep-{_status_class(st)}">e{r.get("epoch")}</span> ' if multi else ""
            if links or head:
                out.append(f'<div class="links">{head}' + " ".join(links) + "</div>")
    cls = "pass" if k == len(statuses) else "fail" if set(statuses) <= {"fail"} else "warn"
    if cls == "fail" and str(rows[0].get("solver")) in DO_NOTHING:
        cls = "expected"  # a do-nothing control failing is what it should do: grey, not red
    return f'<td class="{cls} runs">' + "".join(out) + "</td>"


def task_order(tasks: pd.DataFrame, decision: Mapping) -> list[dict]:
    """Task records, the scored split first, then by stratum (config order) and id."""
    scored = (decision.get("comparison") or {}).get("split")
    sp_rank = {s: i + 1 for i, s in enumerate(split_order(tasks))}
    st_rank = {s: i for i, s in enumerate(strata_order(decision, {}, tasks))}

    def key(t: Mapping) -> tuple:
        sp, st = str(t.get("split")), str(t.get("stratum"))
        return (0 if sp == scored else sp_rank.get(sp, 99), st_rank.get(st, 99), str(t.get("task_id")))

    return sorted(tasks.to_dict("records"), key=key)


def section_outcomes(decision: Mapping, tasks: pd.DataFrame, runs: pd.DataFrame, exp_dir: Path | None = None) -> str:
    """One row per task: whether the candidate won or lost it against the baseline, then each
    solver's outcome per epoch (pass, fail, timeout, excluded, …; hover for the reason) with
    links to the run's patch, logs and scoring output."""
    c = decision.get("comparison") or {}
    won, lost = won_lost_of(decision, runs)
    root = results_root(exp_dir)
    solvers = [s for s, _r in solver_order(decision, runs, pd.DataFrame())]
    out = ['<section id="outcomes"><h2>Per-task outcomes</h2>', won_lost_block(c, won, lost),
           '<p class="sub">Each solver\'s outcome on each task and epoch, from runs.parquet (hover an outcome for '
           "its reason). Links, relative to this experiment's folder: <code>patch</code> (the diff scored), "
           "<code>transcript</code> (the model traffic the bridge relayed: each request and reply, keys redacted), "
           "<code>logs</code> (the run folder: the agent's output, run.json, visible runs), <code>scoring</code> "
           "(the sealed visible and hidden test output), <code>log</code> (the controls' job log); a file no "
           "longer in results/ gets no link. The column vs baseline marks the tasks the candidate won or lost."
           "</p>"]
    if root is None:
        out.append('<p class="sub">No links: this report was not rendered inside a results folder.</p>')
    head = ["task", "vs baseline"] + solvers
    out.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")
    by: dict[tuple[str, str], list[dict]] = {}
    if len(runs):
        for r in runs.assign(role=_col(runs, "role", "agent")).to_dict("records"):
            by.setdefault((str(r["task_id"]), str(r["solver"])), []).append(r)
    won_set, lost_set = set(won or []), set(lost or [])
    for t in task_order(tasks, decision):
        tid = str(t.get("task_id"))
        vs = WON if tid in won_set else LOST if tid in lost_set else ""
        cells = [f'<td class="task"><span class="mono">{esc(tid)}</span><div class="sub">{esc(t.get("stratum"))} · '
                 f'{esc(t.get("split"))}</div><div class="ttl">{esc(t.get("title") or "")}</div></td>',
                 f'<td class="{"pass" if vs == WON else "fail" if vs == LOST else ""}">{esc(vs)}</td>']
        cells += [_cell(by.get((tid, s), []), exp_dir, root) for s in solvers]
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></section>")
    return "".join(out)


# ----------------------------------------------------------------------------- sections
# ``section_decision`` (the verdict, each solver's most common failure, reasons, notes, allowed and
# refused sentences), ``section_comparison`` (plot 2 with its table, the comparison numbers,
# report.md's comparison tables and the tasks won and lost), ``section_card`` (the card and the
# digests) and ``section_tasks`` (report.md's task table with the clock and every flag). Each
# returns one ``<section>`` string.

def _evidence(ev: Any) -> str:
    if ev is None:
        return ""
    if isinstance(ev, (list, tuple)):
        return ", ".join(str(e) for e in ev)
    if isinstance(ev, (dict,)):
        return json.dumps(ev, sort_keys=True, ensure_ascii=False)
    return str(ev)


def section_decision(decision: Mapping) -> str:
    pub = bool(decision.get("publishable"))
    # green: publishable and better than doing nothing somewhere; grey: a neutral outcome (no
    # better than doing nothing, no winner, the baseline ahead); red: refused
    out = [f'<section id="decision"><h2>Decision</h2>'
           f'<div class="verdict {decision_tone(decision)}">{esc(banner_headline(decision))}</div>']
    if decision.get("comparison_summary"):
        out.append(f'<div class="verdict {comparison_tone(decision)}">'
                   f'{esc(comparison_banner(decision))}</div>')
    head = decision.get("headline")
    if head is None:
        why = ("the gate refused a headline" if not pub else
               "publishable per stratum only: no pooled number (see the notes)")
        out.append(f"<p>{esc(headline_value_line(decision))} <span class=\"sub\">— {why}.</span></p>")
    else:
        out.append(f"<p>{esc(headline_value_line(decision))} <span class=\"sub\">— {esc(_pct(head))} of the scored "
                   "tasks.</span></p>")
    facts = []
    for key, lab in (("n", "scored tasks"), ("passes", "passes"), ("timeouts", "timeouts"),
                     ("exclusions", "exclusions")):
        if key in decision:
            facts.append(f"{lab}: {_num(decision[key], 3)}")
    if facts:
        out.append(f'<p class="sub">{esc("; ".join(facts))}</p>')
    failures = decision.get("dominant_failures") or []
    if failures:
        out.append("<h3>Most common failure per solver</h3><p class=\"sub\">Each agent's and person's most "
                   "common outcome other than pass on the scored split, with the most common reason among "
                   "those runs (from runs.parquet).</p>")
        out.append('<ul class="failures">' + "".join(f"<li>{esc(f.get('sentence', ''))}</li>" for f in failures)
                   + "</ul>")
    reasons = decision.get("reasons") or []
    out.append("<h3>Why not (blocking refusals)</h3>")
    if reasons:
        out.append('<table><tr><th>code</th><th>meaning</th><th>sentence</th><th>evidence</th></tr>')
        for r in reasons:
            out.append(f"<tr><td><code>{esc(r.get('code'))}</code></td><td>{esc(r.get('meaning', ''))}</td>"
                       f"<td>{esc(r.get('sentence', ''))}</td><td class=\"mono\">{esc(_evidence(r.get('evidence')))}"
                       f"</td></tr>")
        out.append("</table>")
    else:
        out.append("<p>none — no control is missing or broken.</p>")
    notes = decision.get("notes") or []
    out.append("<h3>Notes (not blocking)</h3>")
    if notes:
        out.append("<ul>" + "".join(f"<li><code>{esc(n.get('code'))}</code>: {esc(n.get('sentence', ''))}</li>"
                                    for n in notes) + "</ul>")
    else:
        out.append("<p>none</p>")
    out.append("<h3>Sentences you may publish</h3>")
    allowed = decision.get("allowed_sentences") or []
    if allowed:
        out.append('<ul class="sentences">' + "".join(f"<li>{esc(s)}</li>" for s in allowed) + "</ul>")
    else:
        out.append("<p>none</p>")
    out.append("<h3>Sentences you may not publish</h3>")
    refused = decision.get("refused_sentences") or []
    if refused:
        out.append('<ul class="sentences">' + "".join(
            f'<li><span class="refused">{esc(r.get("sentence", ""))}</span> — {esc(r.get("why", ""))}</li>'
            for r in refused) + "</ul>")
    else:
        out.append("<p>none</p>")
    out.append("</section>")
    return "".join(out)


def solver_version(card: Mapping, exp: Mapping | None, name: str) -> str:
    """An agent's version as the report's header gives it: its fingerprint (the version the
    ledger counts) and, for a client preset, the client and its version."""
    solver = next((card.get(k) for k in ("candidate", "baseline") if (card.get(k) or {}).get("name") == name), None)
    fp = (solver or {}).get("fingerprint") or ((exp or {}).get("agent_fingerprints") or {}).get(name)
    client = (solver or {}).get("client") or {}
    if not client and exp:
        spec = ((exp.get("config_full") or {}).get("agents") or {}).get(name) or {}
        client = {"name": spec.get("client"), "version": spec.get("version")} if spec.get("client") else {}
    parts = ([f"fingerprint {fp}"] if fp else []) + (
        [f"{client.get('name')} {client.get('version') or '(version not recorded)'}"] if client.get("name") else [])
    return ", ".join(parts) or "version not recorded"


def pack_words(exp: Mapping | None, decision: Mapping) -> str:
    """The pack by its name (the folder the config names) and its digest."""
    cfg = (exp or {}).get("config_full") or (exp or {}).get("config") or {}
    where = (exp or {}).get("pack") or cfg.get("pack")
    digest = (exp or {}).get("pack_digest") or (decision.get("digests") or {}).get("pack")
    name = Path(str(where)).name if where else "(name not recorded)"
    return f"pack {name}" + (f" (digest {str(digest)[:12]})" if digest else "")


def section_comparison(decision: Mapping, runs: pd.DataFrame, strata_names: list[str]) -> str:
    comp = decision.get("comparison") or {}
    cand, base, split = comp.get("candidate"), comp.get("baseline"), comp.get("split")
    out = ['<section id="paired"><h2>Plot 2 — paired comparison: candidate vs baseline</h2>']
    if not (cand and base and split) or not len(runs):
        out.append("<p>No comparison in the decision (candidate, baseline or split missing) or no runs.</p>")
        rows: list[tuple[str, dict[str, int]]] = [("all", {k: 0 for k in PAIR_LABELS})]
        unmatched: list[str] = []
        cand, base, split = cand or "?", base or "?", split or "?"
    else:
        rows, unmatched = paired_counts(runs, str(cand), str(base), str(split), strata_names)
    out.append(f"<figure>{plot_paired(rows, str(cand), str(base), str(split))}<figcaption>"
               f"Matched tasks of the <strong>{esc(split)}</strong> split (the scored split), from runs.parquet. "
               "Per task and solver the epochs are averaged (excluded and infra_fail runs left out, as the gate "
               "does) and the share is then rounded: <strong>≥ 0.5 counts as a pass</strong>. With one epoch "
               "this is the plain outcome.</figcaption></figure>")
    out.append('<table><tr><th>stratum</th><th class="num">both pass</th>'
               f'<th class="num">{esc(cand)} only (candidate)</th><th class="num">{esc(base)} only (baseline)</th>'
               '<th class="num">neither</th><th class="num">matched n</th></tr>')
    for s, c in rows:
        lab = "<strong>all strata</strong>" if s == "all" else esc(s)
        out.append(f"<tr><td>{lab}</td>" + "".join(f'<td class="num">{c[k]}</td>' for k in PAIR_LABELS)
                   + f'<td class="num">{sum(c.values())}</td></tr>')
    out.append("</table>")
    if unmatched:
        out.append(f'<p class="sub">Tasks scored for only one of the two (not in the table): '
                   f'{esc(", ".join(unmatched))}</p>')
    out.append("<h3>Comparison numbers (from decision.json)</h3><dl>")

    def item(k: str, v: str) -> None:
        out.append(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>")

    item("candidate − baseline", f"{cand} − {base} on the {split} split; unit: {comp.get('unit', 'task')}")
    item("matched tasks", _num(comp.get("matched_tasks")))
    if "delta" in comp:
        item("delta", _num(comp.get("delta"), 3, signed=True))
        item("decision interval (95%)", f"[{_num(comp.get('ci_low'), 3, True)}, {_num(comp.get('ci_high'), 3, True)}]"
                                        f" — method {comp.get('method', 'n/a')}"
                                        f"; se {_num(comp.get('se'), 4)}, df {_num(comp.get('df'))}")
        bci = comp.get("bootstrap_ci") or [None, None]
        item("blocked bootstrap interval (95%, variance picture only)",
             f"[{_num(bci[0], 3, True)}, {_num(bci[1], 3, True)}]; se {_num(comp.get('bootstrap_se'), 4)}")
        item("McNemar exact p", f"{_num(comp.get('mcnemar_p'), 4)} (wins {_num(comp.get('wins'))}, losses "
                                f"{_num(comp.get('losses'))}: per-task differences of the epoch-averaged shares)")
        item("verdict", f"{comp.get('verdict_label', comp.get('verdict', 'n/a'))}")
        if comp.get("observed_mde") is not None:
            item("detectable difference at this n", _num(comp.get("observed_mde"), 3))
    else:
        item("verdict", str(comp.get("verdict_label", "NOT_COMPUTED")))
    if comp.get("note"):
        item("note", str(comp.get("note")))
    if comp.get("exclusion_note"):
        item("exclusions", str(comp.get("exclusion_note")))
    pw = comp.get("power") or {}
    if pw:
        item("required n", f"{_num(pw.get('required_n_miller'))} tasks for the pre-registered MDE "
                           f"{_num(pw.get('mde'), 3)} at planning discordance {_num(pw.get('planning_discordance'), 3)}"
                           f" (Miller Eq. 9; Connor: {_num(pw.get('required_n_connor'))})")
    out.append("</dl>")
    out.append(comparison_twins(decision, *won_lost_of(decision, runs)))
    out.append("</section>")
    return "".join(out)


def _dl(obj: Any, depth: int = 0) -> str:
    if isinstance(obj, Mapping):
        if not obj:
            return "<em>empty</em>"
        return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{_dl(v, depth + 1)}</dd>" for k, v in obj.items()) + "</dl>"
    if isinstance(obj, (list, tuple)):
        if not obj:
            return "<em>none</em>"
        if all(not isinstance(v, (Mapping, list, tuple)) for v in obj):
            return esc(", ".join("null" if v is None else str(v) for v in obj))
        return "<ol>" + "".join(f"<li>{_dl(v, depth + 1)}</li>" for v in obj) + "</ol>"
    if obj is None:
        return "<em>null</em>"
    if isinstance(obj, bool):
        return "true" if obj else "false"
    s = str(obj)
    return f'<span class="mono">{esc(s)}</span>' if len(s) >= 16 and " " not in s else esc(s)


def section_card(card: Mapping, decision: Mapping) -> str:
    out = ['<section id="card"><h2>Card</h2><p class="sub">The fields that make a score citeable: dataset '
           "(digests, strata, split), oracle, metric family, envelope, isolation and contamination posture.</p>"]
    keys = [k for k in ("name", "dataset", "oracle", "metric_family", "envelope", "isolation", "contamination")
            if k in card] + sorted(k for k in card if k not in
                                   ("name", "dataset", "oracle", "metric_family", "envelope", "isolation",
                                    "contamination"))
    out.append("<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{_dl(card[k])}</dd>" for k in keys) + "</dl>")
    if decision.get("digests"):
        out.append("<details><summary>All digests of the decision (pack, tasks, config, code, toolchain, "
                   "agent fingerprints)</summary>" + _dl(decision["digests"]) + "</details>")
    tc = decision.get("toolchain") or {}
    if tc:
        out.append("<details><summary>Toolchain (Python " + esc(tc.get("python", "?")) + ", "
                   + esc(len(tc.get("packages") or [])) + " packages)</summary>" + _dl(tc) + "</details>")
    out.append("</section>")
    return "".join(out)


def section_tasks(tasks: pd.DataFrame, decision: Mapping) -> str:
    """report.md's task table (the scored split first, its rows marked with a blue left edge)
    with the clock, the oracle's passes and the other flags beside it."""
    scored = (decision.get("comparison") or {}).get("split")
    records = task_order(tasks, decision)
    ordered = pd.DataFrame.from_records(records, columns=list(tasks.columns))
    table = tasks_table(ordered)
    clocks = [f'<td class="num">{esc(_num(t.get("time_box_sec")))}</td>' for t in records]
    oracle, other = [], []
    for t in records:
        runs = "" if _isnull(t.get("oracle_runs")) else f"{_num(t.get('oracle_passes'))}/{_num(t.get('oracle_runs'))}"
        oracle.append(f'<td class="num">{esc(runs)}</td>')
        flags = [lab for col, lab in (("stub_passes", "stub passes"), ("control_infra_fail", "control infra_fail"))
                 if not _isnull(t.get(col)) and bool(t.get(col))]
        other.append("<td>" + "".join(f'<span class="flag">{esc(f)}</span>' for f in flags) + "</td>")

    def flag(col: str, c: str) -> str:
        bad = (col == "oracle_ok" and c == "False") or (col in ("weak_test", "flaky", "leak") and c == "True") \
            or (col == "decoys" and c == "0")
        return "fail" if bad else ""

    rows = ["scored" if scored is not None and t.get("split") == scored else "" for t in records]
    body = html_table(table, [(3, "clock s", clocks), (4, "oracle passes", oracle), (8, "other flags", other)],
                      flag, rows)
    return ('<section id="tasks"><h2>Tasks</h2><p class="sub">One row per task, the scored split first (its rows '
            "marked with a blue left edge): its checks (oracle_ok: the gold patch passed every run; weak_test: "
            "the empty diff passes; flaky; decoys: the decoy tests its hidden suite carries, 0 marked: a pass "
            "there rests on its tests alone; leak: a leak suspect), clock and the other flags. Each task's title "
            "and each solver's outcome are under Per-task outcomes.</p>" + body + "</section>")


# ----------------------------------------------------------------------------- style


CSS = """
*{box-sizing:border-box}
body{margin:0 auto;max-width:960px;padding:16px 24px 48px;color:#1d1d1f;background:#fff;
 font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:16px 0 6px}
code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:13px}
.verdict{padding:12px 16px;border-radius:6px;font-size:20px;font-weight:700;margin:12px 0}
.ok{background:#e3f4e6;border:2px solid #2e7d32;color:#1b5e20}
.no{background:#fbe5e3;border:2px solid #c62828;color:#8e1c1c}
.neutral{background:#f1f1f1;border:2px solid #8a8a8a;color:#333}
.sub{color:#555;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-size:13px;width:100%}
th,td{border:1px solid #d6d6d6;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f3f7}td.num,th.num{text-align:right}
tr.scored td:first-child{border-left:3px solid #1f5fa8}
.pass{background:#e3f4e6}.fail{background:#fbe9e7}.warn{background:#fff4d6}.expected{background:#f1f1f1}
.flag{display:inline-block;background:#fbe5e3;color:#8e1c1c;border-radius:3px;padding:0 4px;margin:1px;font-size:12px}
.refused{text-decoration:line-through;color:#8e1c1c}
ul.sentences li{margin:4px 0}
dl{margin:4px 0 4px 0;display:grid;grid-template-columns:fit-content(45%) minmax(0,1fr);gap:2px 12px}
dt{font-weight:600;color:#333;overflow-wrap:anywhere}dd{margin:0;overflow-wrap:anywhere}
dl dl{border-left:2px solid #e2e2e2;padding-left:8px}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
figure{margin:12px 0}figcaption{font-size:13px;color:#444}
nav a{margin-right:12px;font-size:13px}
details{margin:6px 0}summary{cursor:pointer;color:#1f5fa8}
#outcomes table,#tasks table{font-size:12px}td.task{width:30%}td.task .mono{font-size:12px}
.ttl{color:#444;font-size:11px}.st{font-weight:600}.links{font-size:11px}.links a{margin-right:3px;white-space:nowrap}
.ep-pass{color:#1b5e20;font-weight:600}.ep-fail{color:#8e1c1c;font-weight:600}.ep-warn{color:#8a5a00;font-weight:600}
#tasks td:first-child{white-space:nowrap}
details.twin summary h3{display:inline;color:#1d1d1f}
"""


# ----------------------------------------------------------------------------- page


def render_html(decision: dict, card: dict, tasks: pd.DataFrame, runs: pd.DataFrame, strata: pd.DataFrame,
                exp_dir: Path | None = None, exp: Mapping | None = None) -> str:
    """The whole report page as one self-contained HTML string (deterministic for the same inputs
    and the same files under results/). With ``exp_dir`` (``results/experiments/<id>``), the
    per-task outcomes link to each run's files that exist; with ``exp`` (its experiment.json), the
    header names the pack."""
    tasks = tasks.reset_index(drop=True)
    runs = runs.reset_index(drop=True)
    strata = strata.reset_index(drop=True)
    if len(runs) and "epoch" not in runs.columns:
        runs = runs.assign(epoch=1)
    strata_names = strata_order(decision, card, strata, tasks, runs)
    splits = split_order(strata, tasks, runs)
    exp_id = decision.get("experiment", "")
    name = card.get("name") or f"sealbench-{exp_id}"
    pub = bool(decision.get("publishable"))
    comp = decision.get("comparison") or {}
    cand, base = comp.get("candidate", "?"), comp.get("baseline", "?")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc('sealbench report — ' + str(exp_id) + ' — ' + ('PUBLISHABLE' if pub else 'NOT PUBLISHABLE'))}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>sealbench report — experiment <span class=\"mono\">{esc(exp_id)}</span></h1>",
        f'<p class="sub">{esc(name)}; {esc(pack_words(exp, decision))}; candidate <strong>{esc(cand)}</strong> '
        f'({esc(solver_version(card, exp, cand))}), baseline <strong>{esc(base)}</strong> '
        f'({esc(solver_version(card, exp, base))}), scored split <strong>{esc(comp.get("split", "?"))}'
        f"</strong>. Generated from decision.json, card.json and tables/*.parquet.</p>",
        '<nav><a href="#decision">Decision</a><a href="#rates">Pass rates</a><a href="#paired">Paired</a>'
        '<a href="#ttg">Time to green</a>' + ('<a href="#controls">Controls</a>' if decision.get("dummy_deltas")
                                              else "")
        + '<a href="#humans">Humans</a><a href="#cost">Cost</a><a href="#tasks">Tasks</a>'
        '<a href="#outcomes">Outcomes</a><a href="#card">Card</a></nav></header>',
        section_decision(decision),
        '<section id="rates"><h2>Plot 1 — pass rate per stratum, every solver</h2><figure>',
        plot_pass_rates(decision, strata, runs, strata_names, splits),
        "<figcaption>From strata.parquet: hidden-test pass rate of every solver — the candidate, the baseline, "
        "other agents, humans and the controls (empty_diff and stub must be 0%, oracle must be 100%) — per stratum "
        "and split, with the Wilson 95% interval and the number of tasks n.</figcaption></figure>",
        strata_twin(strata), "</section>",
        section_comparison(decision, runs, strata_names),
        '<section id="ttg"><h2>Plot 3 — time to green, agents and humans</h2><figure>',
        plot_time_to_green(decision, card, runs, splits),
        "<figcaption>time_to_green_s from runs.parquet: seconds from the start of the clock to the first green "
        "visible-test run, for runs whose final state is green. A green visible run is not a hidden pass. Runs "
        "with no value are counted as “no green” (k / rows of that solver and split).</figcaption></figure></section>",
        section_side_tables(decision),
        section_tasks(tasks, decision),
        section_outcomes(decision, tasks, runs, exp_dir),
        section_card(card, decision),
        "</body></html>",
        "",
    ]
    return "\n".join(parts)


def write_report(exp_dir: Path) -> Path:
    """Read an experiment folder and write its report.html there (atomically); return the path."""
    exp_dir = Path(exp_dir)
    decision = read_json(exp_dir / "decision.json")
    card = read_json(exp_dir / "card.json")
    tables = {t: pd.read_parquet(exp_dir / "tables" / f"{t}.parquet") for t in ("tasks", "runs", "strata")}
    exp = read_json(exp_dir / "experiment.json") if (exp_dir / "experiment.json").is_file() else None
    page = render_html(decision, card, tables["tasks"], tables["runs"], tables["strata"], exp_dir, exp)
    out = exp_dir / "report.html"
    atomic_write_text(out, page)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.report.report_html", description=__doc__.splitlines()[0])
    ap.add_argument("exp_dir", type=Path, metavar="EXP_DIR", help="experiment folder (with decision.json, card.json, "
                                                                  "tables/)")
    args = ap.parse_args(argv)
    missing = [p for p in ("decision.json", "card.json", "tables/tasks.parquet", "tables/runs.parquet",
                           "tables/strata.parquet") if not (args.exp_dir / p).is_file()]
    if missing:
        print(f"report_html: {args.exp_dir} lacks {', '.join(missing)}", file=sys.stderr)
        return 1
    out = write_report(args.exp_dir)
    print(f"report_html: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
