"""The gate's vocabulary: every refusal code and note with what it means, and how one is made.

One place defines them (the tables of docs/results.md are checked against ``REFUSALS`` and ``NOTES``).
A refusal blocks the headline (``publishable: false``); a note is stated beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Every refusal code with what it means (documented in docs/results.md).
REFUSALS: dict[str, str] = {
    "LEAK_SUSPECT": "a task matches the denylist or public benchmark text, or its prompt or repo quotes its hidden "
                    "tests; the pack is not private",
    "ORACLE_FAILED": "the gold patch did not pass every run on some task: the grader is broken",
    "DUMMY_PASSED": "a control (empty diff or stub) passed some task: the grader rewards doing nothing",
    "TASK_IMPORTS_OUTSIDE": "a task's tests import the package under test from outside the workspace (an installed "
                            "copy, or wrong import_paths): they do not test the code a patch changes",
    "CONTROL_INFRA_FAIL": "a control could not be scored: the grader's health is unknown",
    "WEAK_TEST_IN_SLICE": "a scored task passes without any change",
    "FLAKY_IN_SLICE": "a scored task's gold patch gave different results on reruns",
    "TUNE_SPLIT": "the score is on the tune split, where prompts and tools were fitted",
    "STRATUM_TOO_SMALL": "a stratum has fewer than 2 scored tasks",
    "ENVELOPE_INCOMPLETE": "the pre-registered envelope (clock, steps, output tokens) has a blank",
    "TOO_FEW_CLEAN_TASKS": "fewer clean tasks than min_kept_tasks remain after exclusions",
    "NO_CANDIDATE_ROWS": "the candidate has no scored rows in the slice",
    "UNSANDBOXED": "agent runs in the slice were not sandboxed: they could have read the hidden tests",
    "OVER_ENVELOPE": "the candidate reported more steps or output tokens than the pre-registered envelope",
    "HOLDOUT_TUNED": "an agent (by name, declared lineage or code file) reached the holdout with more than one "
                     "fingerprint (tuned on the holdout)",
    "DENOMINATOR_MOVED": "the holdout's task set or task digests changed after a scored run",
    "CARD_ON_EARLIER_SLICE": "the card was pre-registered (first scored) on an earlier slice of the pack; the pack "
                             "has grown since (split --extend), and numbers from two slices are not comparable",
    "ENVELOPE_CHANGED": "the envelope changed under the same card name after a scored run",
    "LEDGER_UNREADABLE": "the pack's ledger.jsonl is damaged, so the holdout's history cannot be checked",
    "PREREGISTRATION_CHANGED": "a knob that decides the result (MDE, discordance, min_kept_tasks, interval, strata, "
                               "epochs, baseline, limits...) changed under the same card name after a scored run",
    "CANDIDATE_TAMPERED": "the candidate was scored tamper on some run (touched tests or test configuration, "
                          "shadowed a module, or passed a decoy test: forged the test report or the values the "
                          "tests compare): none of its numbers is trusted",
    "DECOYS_NONE": "no scored task carries a decoy test: a forged pass cannot be told from a fix",
    "REDRAWN": "a slot (agent version, task, epoch) was drawn again after its first draw ran to its end, and the "
               "first draw's outcome is not on the draw record: the first draw cannot be scored",
    "DRAW_RECORD_UNREADABLE": "the draw record (draws.jsonl) is damaged, does not hold the draws of scored runs, or "
                              "no longer holds a line an earlier decision cited: which draws were made is unknown",
    "HOLDOUT_EXHAUSTED": "more agent versions reached this holdout than its pre-registered budget "
                         "(holdout_budget): it can no longer give a fresh number",
    "EXCLUSIONS_DECIDE": "with excluded and infra_fail runs counted as failures the verdict changes or the "
                         "headline moves by more than its interval's half-width: abstaining decides the result",
}


#: Non-blocking observations (the decision may still be publishable).
NOTES: dict[str, str] = {
    "UNDERPOWERED": "the slice is smaller than the pre-registered MDE needs: no winner is named",
    "UNBALANCED_STRATA": "one stratum (whichever, easy or hard) holds more than half the tasks: no pooled headline, "
                         "per-stratum rates only",
    "TAMPER": "some runs touched tests or test configuration and were scored tamper",
    "HOLDOUT_REUSED": "other agent versions reached this holdout before: multiple comparisons favour the best by chance",
    "REDRAWN_SLOTS": "some slots were drawn more than once: the first draw's outcome is scored (or the first "
                     "draw was interrupted before its agent ended), and the count is stated",
    "RECORD_COPY_DIFFERS": "one copy of the draw record or the ledger (the pack's, or the one in results/) lacks "
                           "lines the other holds: both were read",
    "SERVER_PINNED": "rows from a server other than the card's pinned servers were excluded",
    "BELOW_MDE": "the interval excludes 0 but |delta| is smaller than the pre-registered MDE: no winner is named",
    "EXACT_TEST_NOT_SIGNIFICANT": "the interval excludes 0 but the exact McNemar test on the discordant tasks "
                                  "does not (p >= 0.05): no winner is named",
    "ZERO_WIDTH_INTERVAL": "the decision interval has zero width (every task in each stratum had the same paired "
                           "outcome): it shows no spread, not certainty",
    "TOKENS_INCOMPLETE": "some runs reached their server through the bridge and a reply carried no usage: their "
                         "metered tokens are a lower bound, and one not over max_output_tokens is not confirmed "
                         "within it",
    "STAMP_CLAIMS": "some runs' own stamp.json reported a session problem (missing, route changed, quota, "
                    "server...): the agent's claim, not the harness's observation, so they are counted as scored",
    "DECOYS_PARTIAL": "some scored tasks carry no decoy test: a pass there rests on the task's tests alone, and a "
                      "forged one is not caught on those tasks",
    "DUMMY_BEATEN_ON_SOME_STRATA": "the candidate beats the do-nothing controls on some strata (named, whichever "
                                   "they are) but not on others: no pooled headline, per-stratum rates and dummy "
                                   "deltas only",
    "DUMMY_BEATEN_NOWHERE": "the candidate beats the do-nothing controls on no stratum: its rate is no better than "
                            "submitting nothing",
}

#: Codes of notes that decisions written by earlier versions carry, and the code each is now
#: (read, never written: an older decision.json still says why its pooled headline was withheld).
RENAMED_NOTES: dict[str, str] = {
    # before issue 35: named "easy" whichever strata the candidate beat the controls on
    "DUMMY_BEATEN_ONLY_ON_EASY": "DUMMY_BEATEN_ON_SOME_STRATA",
}

#: The notes that withhold the pooled headline of a publishable decision (per-stratum rates only),
#: the renamed ones included.
POOLED_WITHHELD_BY: tuple[str, ...] = ("UNBALANCED_STRATA", "DUMMY_BEATEN_ON_SOME_STRATA",
                                       *(old for old, new in RENAMED_NOTES.items()
                                         if new in ("UNBALANCED_STRATA", "DUMMY_BEATEN_ON_SOME_STRATA")))


#: The significance level of every decision (interval confidence 1 - ALPHA, exact test p < ALPHA).
ALPHA = 0.05


def refusal(code: str, sentence: str, evidence: Any = None) -> dict:
    return {"code": code, "meaning": REFUSALS[code], "sentence": sentence, "evidence": evidence}


def note_for(code: str, sentence: str, **fields: Any) -> dict:
    """A note: its code, what the code means, the sentence, and any ``fields`` that name what
    happened (e.g. which strata)."""
    return {"code": code, "meaning": NOTES[code], "sentence": sentence, **fields}


# ------------------------------------------------------------------ a decision's verdict in words
# One place for the words every surface puts on a decision (the console's summary, `sealbench
# show` and `check`, report.md and report.html, results/index.html and `sealbench list`): what
# may be published, always with its numbers beside it, and the tone a page gives it.


def note_codes(decision: Mapping) -> list[str]:
    """The codes of a decision's notes, a renamed one under its current code."""
    return [RENAMED_NOTES.get(str(n.get("code")), str(n.get("code"))) for n in decision.get("notes") or []
            if isinstance(n, Mapping)]


def pooled_withheld_by(decision: Mapping) -> list[str]:
    """The notes (codes, as written) that withheld a publishable decision's pooled headline."""
    return [str(n.get("code")) for n in decision.get("notes") or []
            if isinstance(n, Mapping) and n.get("code") in POOLED_WITHHELD_BY]


def _count(x: Any) -> str:
    return f"{x:g}" if isinstance(x, (int, float)) else "?"


def stratum_counts(decision: Mapping, sep: str = ", ") -> str:
    """The candidate's passes over its scored tasks per stratum, e.g. "xs 2/3, s 0/3, m 0/3"
    ("" when the decision records none)."""
    rows = [p for p in decision.get("per_stratum") or [] if isinstance(p, Mapping)]
    return sep.join(f"{p.get('stratum')} {_count(p.get('passes'))}/{_count(p.get('n'))}" for p in rows)


def verdict_words(decision: Mapping, metric: bool = False) -> str:
    """What a decision allows, with its numbers: "PUBLISHABLE: headline 0.333 (3/9 tasks)",
    "PUBLISHABLE per stratum only, no pooled number (CODES): xs 2/3, s 0/3, m 0/3", or
    "NOT PUBLISHABLE: no headline number". Never "publishable" beside "no headline". With
    ``metric``, the headline metric is named before the numbers it counts."""
    what = str(decision.get("headline_metric") or "") if metric else ""
    if not decision.get("publishable"):
        return "NOT PUBLISHABLE: no headline number" + (f", {what}" if what else "")
    head = decision.get("headline")
    if head is None:
        codes = ", ".join(pooled_withheld_by(decision))
        counts = stratum_counts(decision)
        return ("PUBLISHABLE per stratum only, no pooled number" + (f" ({codes})" if codes else "")
                + (f": {what}" if what else "") + (f": {counts}" if counts else ""))
    n, passes = decision.get("n"), decision.get("passes")
    of = f" ({_count(passes)}/{_count(n)} tasks)" if isinstance(n, int) and passes is not None else ""
    value = f"{head:.3f}" if isinstance(head, (int, float)) else str(head)
    return f"PUBLISHABLE: headline {value}{of}" + (f", {what}" if what else "")


#: The tone a page gives a decision: ``ok`` (green) publishable and better than doing nothing
#: somewhere, ``neutral`` (grey) publishable but no better than doing nothing anywhere, ``no``
#: (red) refused.
TONES = ("ok", "neutral", "no")


def decision_tone(decision: Mapping) -> str:
    if not decision.get("publishable"):
        return "no"
    return "neutral" if "DUMMY_BEATEN_NOWHERE" in note_codes(decision) else "ok"


def comparison_tone(decision: Mapping) -> str:
    """``ok`` when the candidate is named the winner; ``neutral`` otherwise (no winner, or the
    baseline: a finding, not a failure of the gate)."""
    summary = str(decision.get("comparison_summary") or "")
    comp = decision.get("comparison") or {}
    return "ok" if summary.startswith(f"winner: {comp.get('candidate')} ") else "neutral"
