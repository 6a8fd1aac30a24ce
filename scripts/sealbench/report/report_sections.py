"""The HTML sections of the report (``report_html.py``) other than the page frame.

``section_decision`` (the verdict, each solver's most common failure, reasons, notes, allowed
and refused sentences),
``section_comparison`` (plot 2 with its table, the comparison numbers, report.md's comparison
tables and the tasks won and lost), ``section_card`` (the card and the digests) and
``section_tasks`` (report.md's task table with the clock and every flag). Each returns
one ``<section>`` string; every piece of text from the inputs is escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from .plots_svg import plot_paired
from .report_common import PAIR_LABELS, _isnull, _num, _pct, esc, paired_counts
from .report_md import banner_headline, headline_value_line, tasks_table
from .report_outcomes import task_order, won_lost_of
from .report_tables import comparison_twins, html_table


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
           f'<div class="verdict {"ok" if pub else "no"}">{esc(banner_headline(decision))}</div>']
    if decision.get("comparison_summary"):
        out.append(f'<div class="verdict {"ok" if decision["comparison_summary"].startswith("winner") else "no"}">'
                   f'Comparison: {esc(decision["comparison_summary"])}.</div>')
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
        bad = (col == "oracle_ok" and c == "False") or (col in ("weak_test", "flaky", "leak") and c == "True")
        return "fail" if bad else ""

    rows = ["scored" if scored is not None and t.get("split") == scored else "" for t in records]
    body = html_table(table, [(3, "clock s", clocks), (4, "oracle passes", oracle), (7, "other flags", other)],
                      flag, rows)
    return ('<section id="tasks"><h2>Tasks</h2><p class="sub">One row per task, the scored split first (its rows '
            "marked with a blue left edge): its checks (oracle_ok: the gold patch passed every run; weak_test: "
            "the empty diff passes; flaky; leak: a leak suspect), clock and the other flags. Each task's title "
            "and each solver's outcome are under Per-task outcomes.</p>" + body + "</section>")
