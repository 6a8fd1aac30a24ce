"""The refusal rules a scored slice is checked for, one function per refusal, listed in
``RULES`` in the order they are reported, and the TAMPER, TOKENS_INCOMPLETE and STAMP_CLAIMS notes. The codes and their meanings
are in ``refusals.py``; the ledger's refusals come from ``holdout_memory.py`` and
EXCLUSIONS_DECIDE from ``sensitivity.py``. A refusal about too few scored or clean tasks names
the candidate's dominant failure with its counts (``summaries.dominant_failure``): what took
the tasks out is the first thing a reader needs, and it is otherwise only in runs.parquet.
"""

from __future__ import annotations

from collections.abc import Callable

from ..core.contract import ABSTAINED, PASS, TAMPER
from ..core.refusals import note_for, refusal
from ..report.scored_slice import Slice
from ..report.summaries import dominant_failure


def _failure_words(s: Slice, strata: list[str] | None = None) -> str:
    """The words that end such a refusal, ``Most common failure: flip: 24/24 infra_fail: …``,
    for the candidate on the scored split (its rows in ``strata`` only, when given); empty
    when it has no row other than a pass."""
    d = dominant_failure(s.split_runs, s.cand, s.split, strata)
    if d is None or d["status"] is None:
        return ""
    return f" Most common failure: {d['sentence']}" + ("" if d["sentence"].endswith((".", "…")) else ".")


def _leak_suspect(s: Slice) -> dict | None:
    leak = s.tasks[s.tasks.leak_suspect]
    if len(leak):
        return refusal("LEAK_SUSPECT", f"{len(leak)} task(s) match the denylist or public text, or quote "
                                       f"their hidden tests: {', '.join(leak.task_id)}.", list(leak.task_id))
    return None


def _oracle_failed(s: Slice) -> dict | None:
    bad = s.tasks[~s.tasks.oracle_ok]
    if len(bad):
        return refusal("ORACLE_FAILED", f"The gold patch failed on {len(bad)} task(s) ({', '.join(bad.task_id)}); "
                                        "the grader is broken there, so no score from this pack is published.",
                       list(bad.task_id))
    return None


def _dummy_passed(s: Slice) -> dict | None:
    runs = s.runs
    ctl = runs.loc[runs.solver.isin(["empty_diff", "stub"]), ["role", "solver", "task_id", "status"]]
    ctl = ctl[(ctl.role == "control") & (ctl.status == PASS)]
    if len(ctl):
        ev = sorted(f"{r.solver}:{r.task_id}" for r in ctl.itertuples())
        return refusal("DUMMY_PASSED", f"A do-nothing control passed {len(ctl)} time(s) ({', '.join(ev)}); "
                                       "those tests do not test the bug.", ev)
    return None


def import_outside_refusal(tasks) -> dict | None:
    """TASK_IMPORTS_OUTSIDE for the tasks (a tasks table) whose controls imported the package
    under test from outside the workspace, each named with where it came from."""
    if "import_outside" not in tasks:
        return None
    bad = tasks[tasks.import_outside.notna() & (tasks.import_outside.astype("string") != "")]
    if len(bad):
        ev = [f"{r.task_id}: {r.import_outside}" for r in bad.itertuples()]
        return refusal("TASK_IMPORTS_OUTSIDE",
                       f"The tests of {len(bad)} task(s) import the package under test from outside the workspace "
                       f"({'; '.join(ev)}): the environment has it installed, or meta.json import_paths is wrong; "
                       "fix the task's environment or its import_paths/packages.", sorted(bad.task_id))
    return None


def _task_imports_outside(s: Slice) -> dict | None:
    return import_outside_refusal(s.tasks)


def _control_infra_fail(s: Slice) -> dict | None:
    bad = s.tasks[s.tasks.control_infra_fail]
    if len(bad):
        return refusal("CONTROL_INFRA_FAIL", f"Controls could not be scored on {', '.join(bad.task_id)}; "
                                             "fix the harness (see the run_dummy logs).", list(bad.task_id))
    return None


def _slice_flag(code: str, col: str, words: str) -> Callable[[Slice], dict | None]:
    """The rule refusing with ``code`` when a task of the scored split has the flag ``col``."""
    def rule(s: Slice) -> dict | None:
        bad = s.slice_tasks[s.slice_tasks[col]]
        if len(bad):
            return refusal(code, f"{len(bad)} {s.split} task(s) {words}: {', '.join(bad.task_id)}.",
                           list(bad.task_id))
        return None
    return rule


def _tune_split(s: Slice) -> dict | None:
    if s.split == "tune":
        return refusal("TUNE_SPLIT", "The score is on the tune split; only the frozen holdout is a measurement. "
                                     "Set score_split: holdout.", s.split)
    return None


def _envelope_incomplete(s: Slice) -> dict | None:
    missing = [k for k in ("max_wall_s", "max_steps", "max_output_tokens") if s.cfg["envelope"].get(k) is None]
    if missing:
        return refusal("ENVELOPE_INCOMPLETE", f"The envelope leaves {', '.join(missing)} blank; "
                                              "write the caps down before the run.", missing)
    return None


def _stratum_too_small(s: Slice) -> dict | None:
    small, names = [], []
    for st in s.cfg["strata"]:
        n = int(s.cand_strata.loc[st, "n"]) if st in s.cand_strata.index else 0
        if n < 2:
            small.append(f"{st} (n={n})")
            names.append(st)
    if small:
        return refusal("STRATUM_TOO_SMALL", f"Stratum {', '.join(small)} has fewer than 2 scored {s.split} tasks; "
                                            "a rate on it is not a measurement." + _failure_words(s, names), small)
    return None


def _no_candidate_rows(s: Slice) -> dict | None:
    if len(s.cand_rows) == 0:
        return refusal("NO_CANDIDATE_ROWS", f"{s.cand} has no rows on the {s.split} split.", s.cand)
    return None


def _too_few_clean_tasks(s: Slice) -> dict | None:
    if len(s.clean) < s.cfg["min_kept_tasks"]:
        return refusal("TOO_FEW_CLEAN_TASKS", f"Only {len(s.clean)} clean {s.split} task(s) remain for {s.cand}; "
                                              f"min_kept_tasks is {s.cfg['min_kept_tasks']}." + _failure_words(s),
                       len(s.clean))
    return None


def _unsandboxed(s: Slice) -> dict | None:
    runs = s.split_runs
    compared = runs.loc[(runs.split == s.split) & (runs.role == "agent") & (runs.solver.isin([s.cand, s.base])),
                        ["solver", "isolation"]]
    loose = compared[compared.isolation != "bwrap"]
    if len(loose):
        ev = sorted({f"{r.solver}:{r.isolation}" for r in loose.itertuples()})
        return refusal("UNSANDBOXED", f"{len(loose)} agent run(s) on the {s.split} split ran without the "
                                      f"sandbox ({', '.join(ev)}); the sandbox needs unprivileged user "
                                      "namespaces: with sandbox: required the run stops and names the "
                                      "setting to enable.", ev)
    return None


def _over_envelope(s: Slice) -> dict | None:
    over = s.cand_rows[s.cand_rows.over_envelope.eq(True)]
    if len(over):
        return refusal("OVER_ENVELOPE", f"{len(over)} {s.cand} run(s) exceeded the envelope "
                                        f"({', '.join(sorted(over.task_id))}).", sorted(over.task_id))
    return None


def _decoys_none(s: Slice) -> dict | None:
    """DECOYS_NONE: no task of the scored slice carries a decoy."""
    t = s.slice_tasks
    t = t[t.decoys.notna()] if "decoys" in t else t.iloc[0:0]     # null: not known (not stratify's table)
    if not len(t) or (t.decoys > 0).any():
        return None
    why = sorted({str(w) for w in t.decoys_why_none.dropna()})
    return refusal("DECOYS_NONE", f"None of the {len(t)} scored tasks carries a decoy test (decoys_per_task "
                                  f"{s.cfg.get('decoys_per_task')}; {'; '.join(why[:2]) or 'none made'}): a forged "
                                  "report would pass as a fix, so no rate is published.", sorted(t.task_id))


def _candidate_tampered(s: Slice) -> dict | None:
    bad = s.cand_rows[s.cand_rows.status == TAMPER]
    if len(bad):
        ev = sorted(f"{r.task_id}#{r.epoch}" for r in bad.itertuples())
        return refusal("CANDIDATE_TAMPERED", f"{s.cand} was scored tamper on {len(bad)} {s.split} run(s) "
                                             f"({', '.join(ev)}): its patches touched tests or test configuration, "
                                             "shadowed a module, or passed a decoy test (a copy of a real test "
                                             "that the gold patch fails: the report or the values were forged; "
                                             "see the reasons in runs.parquet). A rate for an agent caught "
                                             "tampering is not published.",
                       ev)
    return None


#: The refusals a slice is checked for, in the order they are reported (the ledger's come
#: before them, EXCLUSIONS_DECIDE after: it needs the comparison).
RULES: list[tuple[str, Callable[[Slice], dict | None]]] = [
    ("LEAK_SUSPECT", _leak_suspect),
    ("ORACLE_FAILED", _oracle_failed),
    ("DUMMY_PASSED", _dummy_passed),
    ("TASK_IMPORTS_OUTSIDE", _task_imports_outside),
    ("CONTROL_INFRA_FAIL", _control_infra_fail),
    ("WEAK_TEST_IN_SLICE", _slice_flag("WEAK_TEST_IN_SLICE", "weak_test", "pass with the empty diff")),
    ("FLAKY_IN_SLICE", _slice_flag("FLAKY_IN_SLICE", "flaky", "gave different gold-patch results on reruns")),
    ("TUNE_SPLIT", _tune_split),
    ("ENVELOPE_INCOMPLETE", _envelope_incomplete),
    ("STRATUM_TOO_SMALL", _stratum_too_small),
    ("NO_CANDIDATE_ROWS", _no_candidate_rows),
    ("TOO_FEW_CLEAN_TASKS", _too_few_clean_tasks),
    ("UNSANDBOXED", _unsandboxed),
    ("OVER_ENVELOPE", _over_envelope),
    ("DECOYS_NONE", _decoys_none),
    ("CANDIDATE_TAMPERED", _candidate_tampered),
]


def decoys_note(s: Slice) -> dict | None:
    """The DECOYS_PARTIAL note: the scored tasks that carry no decoy, named (a pass there rests on
    the tests alone); nothing when every one carries some, or none does (DECOYS_NONE)."""
    t = s.slice_tasks
    t = t[t.decoys.notna()] if "decoys" in t else t.iloc[0:0]     # null: not known (not stratify's table)
    if not len(t):
        return None
    bare = t[t.decoys == 0]
    if not len(bare) or len(bare) == len(t):
        return None
    covered = t[t.decoys > 0]
    return note_for("DECOYS_PARTIAL",
                    f"{len(covered)} of the {len(t)} scored tasks carry decoy tests ({int(covered.decoys.min())}"
                    f"–{int(covered.decoys.max())} each); on the other {len(bare)} ({', '.join(sorted(bare.task_id))}) "
                    "a pass rests on the task's tests alone, so a forged one is not caught there.")


def tokens_incomplete_note(s: Slice) -> dict | None:
    """The TOKENS_INCOMPLETE note: runs on the scored split, whoever the solver, whose metered
    tokens are incomplete (``tokens_source`` ``metered_incomplete``); those over the envelope
    refuse the headline anyway (OVER_ENVELOPE), the others have ``over_envelope`` null."""
    if "tokens_source" not in s.split_runs:
        return None
    rows = s.split_runs[s.split_runs.tokens_source.eq("metered_incomplete")]
    if not len(rows):
        return None
    unconfirmed = int(rows.over_envelope.isna().sum())
    return note_for("TOKENS_INCOMPLETE",
                    f"{len(rows)} run(s) had server replies without usage, so their metered tokens are a lower "
                    f"bound; {unconfirmed} of them not over the envelope cannot be confirmed within "
                    "max_output_tokens (over_envelope null): "
                    + ", ".join(sorted(f"{r.solver}:{r.task_id}#{r.epoch}" for r in rows.itertuples())))


def tamper_note(s: Slice) -> dict | None:
    """The TAMPER note: every run on the scored split scored tamper, whoever the solver (the
    candidate's own also refuse the headline: CANDIDATE_TAMPERED)."""
    tampered = s.split_runs.loc[s.split_runs.status == TAMPER, ["solver", "task_id"]]
    if len(tampered):
        return {"code": "TAMPER", "sentence": f"{len(tampered)} run(s) touched tests or test configuration and "
                                              "were scored tamper (not pass): "
                + ", ".join(sorted(f"{r.solver}:{r.task_id}" for r in tampered.itertuples()))}
    return None


def stamp_claims_note(s: Slice) -> dict | None:
    """The STAMP_CLAIMS note: scored runs on the scored split, whoever the solver, whose own
    ``stamp.json`` reported a problem (runs.parquet ``stamp_notes``). The stamp is the agent's
    claim, so they stay scored; only what the harness observed excludes a run."""
    if "stamp_notes" not in s.split_runs:
        return None
    rows = s.split_runs[s.split_runs.stamp_notes.notna() & ~s.split_runs.status.isin(list(ABSTAINED))]
    if not len(rows):
        return None
    runs = sorted(f"{r.solver}:{r.task_id}#{r.epoch}" for r in rows.itertuples())
    claims: dict[str, int] = {}
    for text in rows.stamp_notes:
        for claim in str(text).split("; "):
            claims[claim] = claims.get(claim, 0) + 1
    top = sorted(claims.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    return note_for("STAMP_CLAIMS",
                    f"{len(rows)} runs' own stamps reported a problem ("
                    + "; ".join(f"{n}x {c}" for c, n in top) + ": " + ", ".join(runs[:5])
                    + (", …" if len(runs) > 5 else "") + "); they are counted as scored: only what the "
                    "harness observed (the bridge's session, an offline agent's server use) excludes a run.")
