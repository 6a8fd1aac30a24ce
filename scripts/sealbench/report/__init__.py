"""report: What the gate writes for a reader: sentences and summaries, the scored slice, the Markdown
and HTML reports and the card.

Modules:

- ``card``: `card.json`: the fields that make a score citeable
- ``report_html``: `report.html`, the reviewer's page, whole: its shared parts (escaping, number
  formats, the order and colours of strata, splits and solvers, the paired counts), its three inline
  SVG plots (pass rates, paired outcomes, time to green), report.md's tables and lines rendered from
  the same `report_md.Table`s, the per-task outcomes (each solver's result with links to its patch
  and logs, the tasks won and lost; `show_lines` for `sealbench show`), the sections (decision,
  paired comparison, card, tasks), the page frame, `render_html`, `write_report` and
  `python -m sealbench.report.report_html EXP_DIR`
- ``report_md``: `report.md`, and each of its tables (`Table`) and lines, which report.html renders
  too
- ``scored_slice``: the runs the decision is about (split, kept tasks, exclusions)
- ``sentences``: which sentences may be published, which may not and why
- ``summaries``: per-task scores, abstentions, cost per pass, pass@k, stratum and dummy deltas
"""
