"""report: What the gate writes for a reader: sentences and summaries, the scored slice, the Markdown
and HTML reports with their tables, sections and plots, and the card.

Modules:

- ``card``: `card.json`: the fields that make a score citeable
- ``plots_svg``: the report's three inline SVG plots: pass rates, paired outcomes, time to green
- ``report_common``: the HTML report's shared parts: escaping, number formats, the order and colours
  of strata, splits and solvers, per-task scores and the paired counts
- ``report_html``: `report.html`, the reviewer's page: its frame, the order of its sections,
  `write_report` and `python -m sealbench.report_html EXP_DIR`
- ``report_md``: `report.md`, and each of its tables (`Table`) and lines, which report.html renders
  too
- ``report_outcomes``: the per-task outcomes (each solver's result with links to its patch and logs)
  and the tasks won and lost
- ``report_sections``: the report's sections: decision, paired comparison, card, tasks
- ``report_tables``: report.md's tables and lines in report.html, rendered from the same
  `report_md.Table`s
- ``scored_slice``: the runs the decision is about (split, kept tasks, exclusions)
- ``sentences``: which sentences may be published, which may not and why
- ``summaries``: per-task scores, abstentions, cost per pass, pass@k, stratum and dummy deltas
"""
