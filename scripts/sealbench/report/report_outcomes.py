"""Per-task outcomes: each solver's result on each task, with links to the run's files, and the
tasks the candidate won and lost against the baseline.

``won_lost_of`` reads the won and lost task ids from decision.json (``comparison.won_task_ids``,
``lost_task_ids``) or, for a decision written before those fields, computes them from runs.parquet
with the gate's own per-task scores (``summaries.per_task_scores`` and ``summaries.won_lost``).
``section_outcomes`` is report.html's outcome table; ``show_lines`` is what ``sealbench show``
prints. Links are relative to the experiment folder (``results/experiments/<id>/``), built with
the results layout (``paths.py``) and written only for files that exist: a report opened through
``results/latest/`` resolves ``..`` textually, so open it from its experiment folder (the index,
``results/index.html``, links there).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import paths
from .report_common import _col, _isnull, esc, solver_order, split_order, strata_order
from .report_md import won_lost_lines
from .report_tables import won_lost_block
from .summaries import per_task_scores, won_lost

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
    return [("patch", f"{run}/patch.diff"), ("logs", run), ("scoring", score[: -len(".json")] + ".logs")]


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

