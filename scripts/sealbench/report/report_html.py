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
card. Every table and line of report.md is here, built by the same functions.

This module is the page frame (CSS, header, navigation, the order of the sections) and the
entry points; the plots are in ``plots_svg.py``, the sections in ``report_sections.py``,
``report_tables.py`` (report.md's tables) and ``report_outcomes.py`` (per-task outcomes), the
shared helpers in ``report_common.py``. ``report.md`` is written by ``report_md.py``.

    python -m sealbench.report.report_html EXP_DIR
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from ..core.core import atomic_write_text, read_json
from .plots_svg import plot_pass_rates, plot_time_to_green
from .report_common import esc, split_order, strata_order
from .report_outcomes import section_outcomes
from .report_sections import section_card, section_comparison, section_decision, section_tasks
from .report_tables import section_side_tables, strata_twin

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
#outcomes table,#tasks table{font-size:12px}td.task{width:30%}td.task .mono{font-size:12px}
.ttl{color:#444;font-size:11px}.st{font-weight:600}.links{font-size:11px}.links a{margin-right:3px;white-space:nowrap}
.ep-pass{color:#1b5e20;font-weight:600}.ep-fail{color:#8e1c1c;font-weight:600}.ep-warn{color:#8a5a00;font-weight:600}
#tasks td:first-child{white-space:nowrap}
details.twin summary h3{display:inline;color:#1d1d1f}
"""


# ----------------------------------------------------------------------------- page


def render_html(decision: dict, card: dict, tasks: pd.DataFrame, runs: pd.DataFrame, strata: pd.DataFrame,
                exp_dir: Path | None = None) -> str:
    """The whole report page as one self-contained HTML string (deterministic for the same inputs
    and the same files under results/). With ``exp_dir`` (``results/experiments/<id>``), the
    per-task outcomes link to each run's files that exist."""
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
    page = render_html(decision, card, tables["tasks"], tables["runs"], tables["strata"], exp_dir)
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
