"""report.md's tables and lines in report.html: each :class:`~sealbench.report.report_md.Table` rendered
as an HTML table under the same heading, and the sentences report.md prints between them, built
by the same functions (``report_md.py``), so the two reports cannot disagree.

``html_table`` renders one table; ``strata_twin`` (under plot 1), ``comparison_twins`` (in the
paired section) and ``section_side_tables`` (the controls, humans, cost and pass@k sections)
place them. Every piece of text is escaped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from .report_common import esc
from .report_md import (
    WON_LOST_HEADING,
    Table,
    cost_table,
    dummy_table,
    humans_table,
    interval_note_line,
    paired_heading,
    paired_table,
    pass_at_k_table,
    power_line,
    public_line,
    strata_table,
    stratum_delta_table,
    won_lost_lines,
)

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
