"""report: the reviewer-facing HTML page of one experiment.

Reads:  decision.json, card.json, tables/{tasks,runs,strata}.parquet of an experiment folder
Writes: report.html in the same folder (atomically)

One self-contained page: inline CSS and inline SVG, no script, no external resource, no
timestamp (the same inputs give the same bytes). Every piece of text from the inputs is
escaped. Sections: the decision (reasons, notes, allowed and refused sentences), plot 1
(pass rate per stratum with Wilson 95% intervals for every solver, controls included, one
panel per split), plot 2 (the paired outcome table of candidate vs baseline per stratum on
the scored split, with the comparison numbers), plot 3 (time to green of agents and humans),
the card and the per-task table.

    python -m sealbench.report EXP_DIR
"""

from __future__ import annotations

import argparse
import html
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from .core import atomic_write_text, read_json

CONTROL_ORDER = ("empty_diff", "stub", "oracle")
SPLIT_ORDER = ("tune", "holdout")
#: Statuses left out of per-task pass shares (as the gate does).
UNSCORED = ("excluded", "infra_fail")

AGENT_COLOURS = ("#1f5fa8", "#c2571a", "#7a3fb0", "#1b8a6b", "#a8327a", "#5b6b00", "#0b7a99", "#8c5a2b")
HUMAN_COLOURS = ("#2e7d32", "#9e2a2b", "#4e5d94", "#b8860b", "#6d4c41")
CONTROL_COLOURS = {"empty_diff": "#7d7d7d", "stub": "#4a4a4a", "oracle": "#a07400"}
PAIR_COLOURS = {"both": "#5b7fa6", "cand_only": "#2e8b57", "base_only": "#c0504d", "neither": "#c9c9c9"}
PAIR_LABELS = {"both": "both pass", "cand_only": "candidate only", "base_only": "baseline only", "neither": "neither"}

FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',Arial,sans-serif"


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


def per_task_scores(runs: pd.DataFrame, solver: str, split: str) -> dict[str, float]:
    """Per-task pass share (epochs averaged; excluded and infra_fail rows left out, as the gate does)."""
    sub = runs[(runs.solver == solver) & (runs.split == split) & (~runs.status.isin(UNSCORED))]
    return {str(t): float(g.status.eq("pass").mean()) for t, g in sub.groupby("task_id", sort=True)}


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


# ----------------------------------------------------------------------------- HTML parts


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
.sub{color:#555;font-size:13px}
table{border-collapse:collapse;margin:8px 0;font-size:13px;width:100%}
th,td{border:1px solid #d6d6d6;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f0f3f7}td.num,th.num{text-align:right}
tr.scored td:first-child{border-left:3px solid #1f5fa8}
.pass{background:#e3f4e6}.fail{background:#fbe9e7}.warn{background:#fff4d6}
.flag{display:inline-block;background:#fbe5e3;color:#8e1c1c;border-radius:3px;padding:0 4px;margin:1px;font-size:12px}
.refused{text-decoration:line-through;color:#8e1c1c}
ul.sentences li{margin:4px 0}
dl{margin:4px 0 4px 0;display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}
dt{font-weight:600;color:#333}dd{margin:0;overflow-wrap:anywhere}
dl dl{border-left:2px solid #e2e2e2;padding-left:8px}
svg{max-width:100%;height:auto;display:block;margin:8px 0}
figure{margin:12px 0}figcaption{font-size:13px;color:#444}
nav a{margin-right:12px;font-size:13px}
details{margin:6px 0}summary{cursor:pointer;color:#1f5fa8}
"""


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
    out = [f'<section id="decision"><h2>Decision</h2>'
           f'<div class="verdict {"ok" if pub else "no"}">Headline: {"PUBLISHABLE" if pub else "NOT PUBLISHABLE"}'
           '</div>']
    if decision.get("comparison_summary"):
        out.append(f'<div class="verdict {"ok" if decision["comparison_summary"].startswith("winner") else "no"}">'
                   f'Comparison: {esc(decision["comparison_summary"])}</div>')
    head = decision.get("headline")
    metric = decision.get("headline_metric", "")
    if head is None:
        why = ("the gate refused a headline" if not pub else
               "publishable per stratum only: no pooled number (see the notes)")
        out.append(f"<p><strong>Headline:</strong> none — {why}. <span class=\"sub\">"
                   f"({esc(metric)})</span></p>")
    else:
        out.append(f"<p><strong>Headline:</strong> {esc(_pct(head))} ({esc(_num(head, 6))}) — {esc(metric)}</p>")
    facts = []
    for key, lab in (("n", "scored tasks"), ("passes", "passes"), ("timeouts", "timeouts"),
                     ("exclusions", "exclusions")):
        if key in decision:
            facts.append(f"{lab}: {_num(decision[key], 3)}")
    if facts:
        out.append(f'<p class="sub">{esc("; ".join(facts))}</p>')
    reasons = decision.get("reasons") or []
    out.append("<h3>Reasons (blocking refusals)</h3>")
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
    out.append("</dl></section>")
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


def _outcome_cell(g: pd.DataFrame) -> tuple[str, str]:
    if g is None or not len(g):
        return "", ""
    st = g.status.astype(str).tolist()
    if len(st) == 1:
        s = st[0]
        return s, "pass" if s == "pass" else "fail" if s == "fail" else "warn"
    k = st.count("pass")
    others = sorted({s for s in st if s not in ("pass", "fail")})
    txt = f"{k}/{len(st)} pass" + (f" ({', '.join(others)})" if others else "")
    return txt, "pass" if k == len(st) else "fail" if k == 0 and not others else "warn"


def section_tasks(tasks: pd.DataFrame, runs: pd.DataFrame, decision: Mapping) -> str:
    comp = decision.get("comparison") or {}
    scored = comp.get("split")
    workers = [s for s, r in solver_order(decision, runs, pd.DataFrame()) if r != "control"]
    out = ['<section id="tasks"><h2>Tasks</h2><p class="sub">One row per task, the scored split first (its rows '
           "marked with a blue left edge). Outcome columns: status of each agent or human run on the task (several epochs: "
           "passes / runs).</p>"]
    head = ["task", "stratum", "split", "title", "clock s", "oracle", "flags"] + list(workers) + ["digest"]
    out.append("<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")
    groups = {}
    if len(runs) and workers:
        for (sv, tid), g in runs[runs.solver.isin(workers)].groupby(["solver", "task_id"], sort=True):
            groups[(str(sv), str(tid))] = g
    sp_rank = {s: i + 1 for i, s in enumerate(split_order(tasks))}
    st_rank = {s: i for i, s in enumerate(strata_order(decision, {}, tasks))}

    def sort_key(t: Mapping) -> tuple:
        sp, st = str(t.get("split")), str(t.get("stratum"))
        return (0 if sp == scored else sp_rank.get(sp, 99), st_rank.get(st, 99), str(t.get("task_id")))

    for t in sorted(tasks.to_dict("records"), key=sort_key):
        flags = [lab for col, lab in (("leak_suspect", "leak"), ("weak_test", "weak test"),
                                      ("stub_passes", "stub passes"), ("flaky", "flaky"),
                                      ("control_infra_fail", "control infra_fail")) if t.get(col) is True
                 or (not _isnull(t.get(col)) and bool(t.get(col)))]
        orc = "" if _isnull(t.get("oracle_runs")) else f"{_num(t.get('oracle_passes'))}/{_num(t.get('oracle_runs'))}"
        if not _isnull(t.get("oracle_ok")) and not bool(t.get("oracle_ok")):
            orc += " FAILED"
        cls = ' class="scored"' if scored is not None and t.get("split") == scored else ""
        cells = [f"<td class=\"mono\">{esc(t.get('task_id'))}</td>", f"<td>{esc(t.get('stratum'))}</td>",
                 f"<td>{esc(t.get('split'))}</td>", f"<td>{esc(t.get('title', ''))}</td>",
                 f"<td class=\"num\">{esc(_num(t.get('time_box_sec')))}</td>",
                 f"<td class=\"{'fail' if 'FAILED' in orc else ''}\">{esc(orc)}</td>",
                 "<td>" + "".join(f'<span class="flag">{esc(f)}</span>' for f in flags) + "</td>"]
        for w in workers:
            txt, c = _outcome_cell(groups.get((w, str(t.get("task_id")))))
            cells.append(f'<td class="{c}">{esc(txt)}</td>')
        cells.append(f"<td class=\"mono\">{esc(str(t.get('task_digest') or '')[:12])}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</table></section>")
    return "".join(out)


# ----------------------------------------------------------------------------- page


def render_html(decision: dict, card: dict, tasks: pd.DataFrame, runs: pd.DataFrame, strata: pd.DataFrame) -> str:
    """The whole report page as one self-contained HTML string (deterministic for the same inputs)."""
    tasks = tasks.reset_index(drop=True)
    runs = runs.reset_index(drop=True)
    strata = strata.reset_index(drop=True)
    if len(runs) and "epoch" not in runs.columns:
        runs = runs.assign(epoch=1)
    strata_names = strata_order(decision, card, strata, tasks, runs)
    splits = split_order(strata, tasks, runs)
    exp = decision.get("experiment", "")
    name = card.get("name") or f"sealbench-{exp}"
    pub = bool(decision.get("publishable"))
    comp = decision.get("comparison") or {}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc('sealbench report — ' + str(exp) + ' — ' + ('PUBLISHABLE' if pub else 'NOT PUBLISHABLE'))}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<header><h1>sealbench report — experiment <span class=\"mono\">{esc(exp)}</span></h1>",
        f'<p class="sub">{esc(name)}; candidate <strong>{esc(comp.get("candidate", "?"))}</strong>, baseline '
        f'<strong>{esc(comp.get("baseline", "?"))}</strong>, scored split <strong>{esc(comp.get("split", "?"))}'
        f"</strong>. Generated from decision.json, card.json and tables/*.parquet.</p>",
        '<nav><a href="#decision">Decision</a><a href="#rates">Pass rates</a><a href="#paired">Paired</a>'
        '<a href="#ttg">Time to green</a><a href="#card">Card</a><a href="#tasks">Tasks</a></nav></header>',
        section_decision(decision),
        '<section id="rates"><h2>Plot 1 — pass rate per stratum, every solver</h2><figure>',
        plot_pass_rates(decision, strata, runs, strata_names, splits),
        "<figcaption>From strata.parquet: hidden-test pass rate of every solver — the candidate, the baseline, "
        "other agents, humans and the controls (empty_diff and stub must be 0%, oracle must be 100%) — per stratum "
        "and split, with the Wilson 95% interval and the number of tasks n.</figcaption></figure></section>",
        section_comparison(decision, runs, strata_names),
        '<section id="ttg"><h2>Plot 3 — time to green, agents and humans</h2><figure>',
        plot_time_to_green(decision, card, runs, splits),
        "<figcaption>time_to_green_s from runs.parquet: seconds from the start of the clock to the first green "
        "visible-test run, for runs whose final state is green. A green visible run is not a hidden pass. Runs "
        "with no value are counted as “no green” (k / rows of that solver and split).</figcaption></figure></section>",
        section_card(card, decision),
        section_tasks(tasks, runs, decision),
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
    page = render_html(decision, card, tables["tasks"], tables["runs"], tables["strata"])
    out = exp_dir / "report.html"
    atomic_write_text(out, page)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.report", description=__doc__.splitlines()[0])
    ap.add_argument("exp_dir", type=Path, metavar="EXP_DIR", help="experiment folder (with decision.json, card.json, "
                                                                  "tables/)")
    args = ap.parse_args(argv)
    missing = [p for p in ("decision.json", "card.json", "tables/tasks.parquet", "tables/runs.parquet",
                           "tables/strata.parquet") if not (args.exp_dir / p).is_file()]
    if missing:
        print(f"report: {args.exp_dir} lacks {', '.join(missing)}", file=sys.stderr)
        return 1
    out = write_report(args.exp_dir)
    print(f"report: wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
