"""report.md: the decision as Markdown (the HTML report is ``report_html.py``)."""

from __future__ import annotations

from typing import Any, Mapping

from .core import canonical_json

def _table(rows: list[list[Any]], header: list[str]) -> str:
    def cell(x: Any) -> str:
        if x is None or (isinstance(x, float) and x != x):
            return "—"
        if isinstance(x, float):
            return f"{x:.3f}"
        return str(x).replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def banner_headline(decision: Mapping) -> str:
    """The headline half of the banner: publishable or not, and in which form."""
    if not decision["publishable"]:
        return "Headline: not publishable (" + ", ".join(r["code"] for r in decision["reasons"]) + ")."
    if decision["headline"] is None:
        return "Headline: publishable per stratum only (no pooled number: " + ", ".join(
            n["code"] for n in decision["notes"] if n["code"] in ("UNBALANCED_STRATA", "DUMMY_BEATEN_ONLY_ON_EASY")) + ")."
    return f"Headline: publishable ({decision['headline']:.3f})."


def render_report(decision: Mapping, card: Mapping, strata, tasks) -> str:
    lines = [f"# sealbench report — experiment {decision['experiment']}", ""]
    lines += [f"**{banner_headline(decision)}**", "", f"**Comparison: {decision['comparison_summary']}.**",
              "", f"Headline value: {decision['headline'] if decision['headline'] is not None else 'none'} "
              f"({decision['headline_metric']}).", ""]
    if decision["reasons"]:
        lines += ["## Why not", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["reasons"]] + [""]
    if decision["notes"]:
        lines += ["## Notes", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["notes"]] + [""]
    lines += ["## Sentences you may publish", ""]
    lines += [f"- {s}" for s in decision["allowed_sentences"]] or ["- none"]
    lines += ["", "## Sentences you may not publish", ""]
    lines += [f"- ~~{r['sentence']}~~ — {r['why']}" for r in decision["refused_sentences"]]
    lines += ["", "## Pass rate per stratum (every solver, controls included)", ""]
    lines.append(_table([[r.solver, r.role, r.split, r.stratum, r.n, r.passes, r.pass_rate, r.ci_low, r.ci_high,
                          r.timeout_rate, r.infra_rate, r.excluded_rate] for r in strata.itertuples()],
                        ["solver", "role", "split", "stratum", "n", "passes", "rate", "ci_low", "ci_high",
                         "timeouts", "infra", "excluded"]))
    c = decision["comparison"]
    lines += ["", f"## Paired comparison: {c['candidate']} vs {c['baseline']} ({c['split']})", ""]
    if "delta" in c:
        lines.append(_table([[c["matched_tasks"], c["delta"], c["ci_low"], c["ci_high"], c["method"],
                              c["bootstrap_ci"][0], c["bootstrap_ci"][1], c["mcnemar_p"], c["wins"], c["losses"],
                              c["verdict_label"]]],
                            ["n", "delta", "ci_low", "ci_high", "method", "boot_low", "boot_high", "mcnemar_p",
                             "wins", "losses", "verdict"]))
    else:
        lines.append(c.get("note", ""))
    if c.get("interval_note"):
        lines += ["", f"Note: {c['interval_note']}."]
    if c.get("stratum_deltas"):
        lines += ["", "Per stratum (matched tasks):", ""]
        lines.append(_table([[x["stratum"], x["n"], x["candidate_rate"], x["baseline_rate"], x["delta"]]
                             for x in c["stratum_deltas"]], ["stratum", "n", "candidate", "baseline", "delta"]))
    if c.get("exclusion_note"):
        lines += ["", c["exclusion_note"]]
    lines += ["", f"Power: the pre-registered MDE {c['power']['mde']} needs {c['power']['required_n_miller']} tasks "
                  f"(Miller Eq. 9; Connor: {c['power']['required_n_connor']}).", ""]
    if decision.get("dummy_deltas"):
        lines += ["## The candidate against the do-nothing controls", ""]
        lines.append(_table([[x["stratum"], x["n"], x["candidate_rate"], x["empty_diff_rate"], x["delta_vs_empty_diff"],
                              x["stub_rate"], x["delta_vs_stub"]] for x in decision["dummy_deltas"]],
                            ["stratum", "n", "candidate", "empty diff", "delta", "stub", "delta"]))
        lines.append("")
    lines += ["## Humans beside agents", ""]
    lines.append(_table([[r["solver"], r["role"], r["tasks"], r["hidden_pass_rate"], r["median_time_to_green_s"],
                          r["steers"], r["timeouts"]] for r in decision.get("roles", [])],
                        ["solver", "role", "tasks", "hidden pass rate", "median time-to-green (s)", "steers",
                         "timeouts"]))
    lines += ["", "## Tokens and cost per passing task", ""]
    lines.append(_table([[r["solver"], r["stratum"], r["passes"],
                          r["tokens_per_pass"] if r["tokens_per_pass"] is not None else
                          ("incomplete" if r.get("tokens_status", "complete") != "complete" else None),
                          r["cost_per_pass_usd"], r.get("tokens_status")]
                         for r in decision.get("cost_per_pass", [])],
                        ["solver", "stratum", "passes", "tokens / pass", "cost / pass (USD)", "tokens"]))
    if decision.get("pass_at_k"):
        lines += ["", "## pass@k and pass^k", ""]
        lines.append(_table([[solver, k, a, h] for solver, t in decision["pass_at_k"].items()
                             for k, a, h in zip(t["k"], t["pass_at_k"], t["pass_hat_k"])],
                            ["solver", "k", "pass@k", "pass^k"]))
    if decision.get("public_minus_holdout"):
        p = decision["public_minus_holdout"]
        lines += ["", f"Public minus holdout: {p['delta']} (public {p['public_rate']}, holdout {p['holdout_rate']}).", ""]
    lines.append("")
    lines += ["## Tasks", ""]
    lines.append(_table([[t.task_id, t.stratum, t.split, t.oracle_ok, t.weak_test, t.flaky, t.leak_suspect,
                          t.task_digest[:12]] for t in tasks.itertuples()],
                        ["task", "stratum", "split", "oracle_ok", "weak_test", "flaky", "leak", "digest"]))
    lines += ["", "## Card", "", "```json", canonical_json(card), "```", ""]
    return "\n".join(lines)
