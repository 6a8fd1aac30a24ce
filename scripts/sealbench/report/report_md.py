"""report.md: the decision as Markdown (the HTML report is ``report_html.py``).

Every table of report.md is built once here as a :class:`Table` (its heading, its columns and
its rows, each cell formatted by :func:`cell`), and so is every sentence outside a table
(``*_line``/``*_lines``). report.html renders the same objects (``report_html.py``), so the
two reports cannot disagree; tests/app/test_browsing.py derives the headings, tables and lines of
report.md and finds each in report.html. Builders read the decision leniently (``.get``): the
HTML report is also rendered for decisions written by older versions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from ..core.core import canonical_json
from ..core.refusals import note_codes, pooled_withheld_by, stratum_counts


class Table(NamedTuple):
    """One table of the reports: its heading, its columns and its rows of formatted cells."""

    heading: str
    header: list[str]
    rows: list[list[str]]


def cell(x: Any) -> str:
    """A value as the reports print it: "—" for unknown, three decimals for a float."""
    if type(x) is str:
        return x
    if type(x) is bool:
        return "True" if x else "False"
    if x is None or type(x).__name__ == "NAType" or (isinstance(x, float) and x != x):
        return "—"
    if isinstance(x, float):
        return f"{x:.3f}"
    return str(x)


def _table(rows: Sequence[Sequence[Any]], header: list[str], heading: str) -> Table:
    return Table(heading, header, [[cell(c) for c in r] for r in rows])


def _markdown(t: Table) -> str:
    out = ["| " + " | ".join(t.header) + " |", "|" + "---|" * len(t.header)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" if "|" in "".join(r)
            else "| " + " | ".join(r) + " |" for r in t.rows]  # a row without a pipe needs no escape
    return "\n".join(out)


# ------------------------------------------------------------------------------- the tables


def strata_table(strata) -> Table:
    cols = ("solver", "role", "split", "stratum", "n", "passes", "pass_rate", "ci_low", "ci_high", "timeout_rate",
            "infra_rate", "excluded_rate")
    return _table([[getattr(r, c, None) for c in cols] for r in strata.itertuples()],
                  ["solver", "role", "split", "stratum", "n", "passes", "rate", "ci_low", "ci_high", "timeouts",
                   "infra", "excluded"], "Pass rate per stratum (every solver, controls included)")


def paired_heading(c: Mapping) -> str:
    return f"Paired comparison: {c.get('candidate', '?')} vs {c.get('baseline', '?')} ({c.get('split', '?')})"


def paired_table(c: Mapping) -> Table | None:
    if "delta" not in c:
        return None
    boot = c.get("bootstrap_ci") or [None, None]
    return _table([[c.get("matched_tasks"), c["delta"], c.get("ci_low"), c.get("ci_high"), c.get("method"), boot[0],
                    boot[1], c.get("mcnemar_p"), c.get("wins"), c.get("losses"), c.get("verdict_label")]],
                  ["n", "delta", "ci_low", "ci_high", "method", "boot_low", "boot_high", "mcnemar_p", "wins",
                   "losses", "verdict"], paired_heading(c))


def stratum_delta_table(c: Mapping) -> Table | None:
    if not c.get("stratum_deltas"):
        return None
    return _table([[x["stratum"], x["n"], x["candidate_rate"], x["baseline_rate"], x["delta"]]
                   for x in c["stratum_deltas"]], ["stratum", "n", "candidate", "baseline", "delta"],
                  "Per stratum (matched tasks)")


def dummy_table(decision: Mapping) -> Table | None:
    if not decision.get("dummy_deltas"):
        return None
    return _table([[x["stratum"], x["n"], x["candidate_rate"], x["empty_diff_rate"], x["delta_vs_empty_diff"],
                    x["stub_rate"], x["delta_vs_stub"], "yes" if x.get("beats_dummies") else "no"]
                   for x in decision["dummy_deltas"]],
                  ["stratum", "n", "candidate", "empty diff", "delta", "stub", "delta", "beats the controls"],
                  "The candidate against the do-nothing controls")


def humans_table(decision: Mapping) -> Table:
    return _table([[r["solver"], r["role"], r["tasks"], r["hidden_pass_rate"], r["median_time_to_green_s"],
                    r["steers"], r["timeouts"]] for r in decision.get("roles") or []],
                  ["solver", "role", "tasks", "hidden pass rate", "median time-to-green (s)", "steers", "timeouts"],
                  "Humans beside agents")


def cost_table(decision: Mapping) -> Table:
    return _table([[r["solver"], r["stratum"], r["passes"],
                    r["tokens_per_pass"] if r["tokens_per_pass"] is not None else
                    ("incomplete" if r.get("tokens_status", "complete") != "complete" else None),
                    r["cost_per_pass_usd"], r.get("tokens_status")] for r in decision.get("cost_per_pass") or []],
                  ["solver", "stratum", "passes", "tokens / pass", "cost / pass (USD)", "tokens"],
                  "Tokens and cost per passing task")


def pass_at_k_table(decision: Mapping) -> Table | None:
    if not decision.get("pass_at_k"):
        return None
    return _table([[solver, k, a, h] for solver, t in decision["pass_at_k"].items()
                   for k, a, h in zip(t["k"], t["pass_at_k"], t["pass_hat_k"])],
                  ["solver", "k", "pass@k", "pass^k"], "pass@k and pass^k")


def tasks_table(tasks) -> Table:
    cols = ("task_id", "stratum", "split", "oracle_ok", "weak_test", "flaky", "decoys", "leak_suspect", "task_digest")
    values = [tasks[c].tolist() if c in tasks.columns else [None] * len(tasks) for c in cols]  # column by column
    return _table([[*t[:-1], str(t[-1] or "")[:12]] for t in zip(*values)],
                  ["task", "stratum", "split", "oracle_ok", "weak_test", "flaky", "decoys", "leak", "digest"], "Tasks")


# ---------------------------------------------------------------------- the lines between


def banner_headline(decision: Mapping) -> str:
    """The headline half of the banner: publishable or not, and in which form."""
    if not decision.get("publishable"):
        return "Headline: not publishable (" + ", ".join(r["code"] for r in decision.get("reasons") or []) + ")."
    counts = stratum_counts(decision)
    if decision.get("headline") is None:
        return ("Headline: publishable per stratum only (no pooled number: " + ", ".join(pooled_withheld_by(decision))
                + ")" + (f": {counts}." if counts else "."))
    n, passes = decision.get("n"), decision.get("passes")
    of = f", {passes:g}/{n} tasks" if isinstance(n, int) and isinstance(passes, (int, float)) else ""
    nowhere = "DUMMY_BEATEN_NOWHERE" in note_codes(decision)
    return (f"Headline: publishable ({decision['headline']:.3f}{of})" + (f"; per stratum {counts}" if counts else "")
            + ("; no better than doing nothing on any stratum (DUMMY_BEATEN_NOWHERE)." if nowhere else "."))


def comparison_numbers(decision: Mapping) -> str:
    """The paired comparison's numbers, to stand beside its verdict: "delta +0.000 [+0.000,
    +0.000] on 9 matched holdout tasks: " ("" when no comparison was computed)."""
    c = decision.get("comparison") or {}
    if not isinstance(c.get("delta"), (int, float)):
        return ""
    ci = (f" [{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]" if isinstance(c.get("ci_low"), (int, float))
          and isinstance(c.get("ci_high"), (int, float)) else "")
    return f"delta {c['delta']:+.3f}{ci} on {c.get('matched_tasks', '?')} matched {c.get('split', '')} tasks: "


def comparison_banner(decision: Mapping) -> str:
    """The comparison half of the banner, its numbers before its verdict."""
    return f"Comparison: {comparison_numbers(decision)}{decision.get('comparison_summary')}."


def headline_value_line(decision: Mapping) -> str:
    head = decision.get("headline")
    return f"Headline value: {head if head is not None else 'none'} ({decision.get('headline_metric', '?')})."


def interval_note_line(c: Mapping) -> str | None:
    return f"Note: {c['interval_note']}." if c.get("interval_note") else None


def power_line(c: Mapping) -> str | None:
    p = c.get("power")
    if not p:
        return None
    return (f"Power: the pre-registered MDE {p['mde']} needs {p['required_n_miller']} tasks "
            f"(Miller Eq. 9; Connor: {p['required_n_connor']}).")


def public_line(decision: Mapping) -> str | None:
    p = decision.get("public_minus_holdout")
    if not p:
        return None
    return f"Public minus holdout: {p['delta']} (public {p['public_rate']}, holdout {p['holdout_rate']})."


WON_LOST_HEADING = "Tasks won and lost"


def won_lost_lines(c: Mapping, won: Sequence[str] | None, lost: Sequence[str] | None) -> list[str]:
    """Which matched tasks the candidate won and lost against the baseline (``None``: unknown)."""
    cand, base, split = c.get("candidate", "?"), c.get("baseline", "?"), c.get("split", "?")

    def ids(xs: Sequence[str] | None) -> str:
        return "unknown" if xs is None else f"({len(xs)}): " + (", ".join(xs) or "none")

    return [f"Per matched {split} task, {cand}'s pass share (epochs averaged) against {base}'s: higher is a win, "
            "lower a loss (the McNemar counts).",
            f"Tasks won by {cand} over {base} {ids(won)}", f"Tasks lost by {cand} to {base} {ids(lost)}"]


# ------------------------------------------------------------------------------- the page


def environment_lines(card: Mapping) -> list[str]:
    """One line per task test environment the scores ran in (none: nothing, as before)."""
    envs = card.get("environments") or []
    if not envs:
        return []
    out = ["", "## Test environments", ""]
    for e in envs:
        tasks = e.get("tasks") or []
        shown = ", ".join(tasks[:5]) + (f", … ({len(tasks)} tasks)" if len(tasks) > 5 else "")
        out.append(f"- `{e['name']}` ({e.get('requirements')}): digest `{str(e['digest'])[:12]}`, "
                   f"{e.get('installer')}, Python {e.get('python')}, {len(e.get('lock') or [])} packages "
                   f"(the lock is in the card){'; built UNSANDBOXED' if e.get('sandbox') == 'none' else ''}; "
                   f"tasks: {shown}")
    return out


def render_report(decision: Mapping, card: Mapping, strata, tasks) -> str:
    lines = [f"# sealbench report — experiment {decision['experiment']}", ""]
    lines += [f"**{banner_headline(decision)}**", "", f"**{comparison_banner(decision)}**",
              "", headline_value_line(decision), ""]
    if decision["reasons"]:
        lines += ["## Why not", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["reasons"]] + [""]
    if decision["notes"]:
        lines += ["## Notes", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["notes"]] + [""]
    lines += ["## Sentences you may publish", ""]
    lines += [f"- {s}" for s in decision["allowed_sentences"]] or ["- none"]
    lines += ["", "## Sentences you may not publish", ""]
    lines += [f"- ~~{r['sentence']}~~ — {r['why']}" for r in decision["refused_sentences"]]

    def section(t: Table | None, level: str = "##") -> list[str]:
        return [] if t is None else ["", f"{level} {t.heading}", "", _markdown(t)]

    lines += section(strata_table(strata))
    c = decision["comparison"]
    lines += ["", f"## {paired_heading(c)}", ""]
    paired = paired_table(c)
    lines.append(_markdown(paired) if paired is not None else c.get("note", ""))
    lines += [x for line in (interval_note_line(c), c.get("exclusion_note"), power_line(c)) if line
              for x in ("", line)]
    lines += section(stratum_delta_table(c), "###")
    if "won_task_ids" in c:
        won_lost = won_lost_lines(c, c["won_task_ids"], c["lost_task_ids"])
        lines += ["", f"### {WON_LOST_HEADING}", "", won_lost[0], ""] + [f"- {x}" for x in won_lost[1:]]
    for t in (dummy_table(decision), humans_table(decision), cost_table(decision), pass_at_k_table(decision)):
        lines += section(t)
    if public_line(decision):
        lines += ["", public_line(decision)]
    lines += section(tasks_table(tasks))
    lines += environment_lines(card)
    lines += ["", "## Card", "", "```json", canonical_json(card), "```", ""]
    return "\n".join(lines)
