"""The three SVG plots of the HTML report (``report_html.py``).

Plot 1 (``plot_pass_rates``): pass rate per stratum with Wilson 95% intervals for every solver,
controls included, one panel per split. Plot 2 (``plot_paired``): the paired outcomes of
candidate vs baseline per stratum, from ``report_common.paired_counts``. Plot 3
(``plot_time_to_green``): time to green of agents and humans. Each returns one inline
``<svg>`` string with a title and a description; coordinates are printed with a fixed precision,
so the same inputs give the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from .report_common import PAIR_LABELS, _col, _f, _isnull, _label, _pct, _secs, esc, solver_colours, solver_order

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
