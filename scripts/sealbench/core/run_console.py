"""What the pipeline says on the console at its start and end (the Snakefile's onstart,
onsuccess and onerror; workflow/rules/console.smk).

* At onstart, the plan as one log record: the jobs to run, the jobs of each task and the file
  that keeps the full log. Snakemake's console prints its one line; the `sealbench` logger
  plugin (scripts/snakemake_logger_plugin_sealbench/) also reads the numbers from it, to print
  a line when a task's last job finishes.
* At onsuccess, the decision in short (what `sealbench show` prints at length): publishable or
  not, the headline, each refusal code with its sentence, the notes' codes, the comparison, the
  first sentence that may be published, and where to read on.
* At onerror, one sentence: no decision was made, and what to do — after a Ctrl-C
  (:func:`watch_interrupt`), that the run was interrupted and the same command continues it.

Everything goes through Snakemake's logger, so the full log file keeps it too. No stage
imports this module (its toolchain does not include the workflow engine)."""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .core import read_json
from .refusals import verdict_words

#: The logger plugin that prints the compact console (its package: snakemake_logger_plugin_sealbench).
PLUGIN = "sealbench"
#: The log record attribute that carries the plan (read by the plugin).
PLAN_ATTR = "sealbench_plan"
#: Summary lines are wrapped to this width (the plugin's limit for a line is wider).
WIDTH = 110
#: The console line of a finished pack-level job (None: no line; a rule not named here: its name).
#: The plugin prints one line per task, so only these jobs have lines of their own.
PACK_JOB_LINES = {"split": "split: tune and holdout", "leak_verdict": "leak_check: no task is a leak suspect",
                  "stratify": "stratify: the tables",
                  "decide": "gate: the decision, the card and the reports",
                  "experiment_record": None, "pack_digests": None, "batch_spec": None, "gate": None}


def compact_console(output_settings: Any) -> bool:
    """Whether this process prints the plugin's compact console: the plugin is selected and
    Snakemake runs plugins here (not in a job's own process, not on a cluster node)."""
    handlers = getattr(output_settings, "log_handler_settings", None) or {}
    return PLUGIN in handlers and not getattr(output_settings, "skip_plugin_handlers", False)


def plan(jobs: Iterable[Any], logs: list[str]) -> tuple[str, dict]:
    """The plan record: its message and its payload ({jobs, tasks: {task: jobs}, log, job_lines}).
    ``jobs`` are the DAG's jobs to run (each with ``wildcards_dict``)."""
    tasks: Counter = Counter()
    total = 0
    for job in jobs:
        total += 1
        task = (getattr(job, "wildcards_dict", None) or {}).get("task")
        if task:
            tasks[task] += 1
    logs = [str(p) for p in logs or []]
    msg = f"sealbench: {total} jobs to run" + (f", {len(tasks)} tasks" if tasks else "")
    if logs:
        msg += f"; the full log: {logs[0]}"
    return msg, {"jobs": total, "tasks": dict(tasks), "log": logs, "job_lines": PACK_JOB_LINES}


def log_plan(workflow: Any, logs: list[str]) -> None:
    """At onstart: the plan record, from the jobs Snakemake is about to run (its DAG). Without
    them (another Snakemake version) nothing is logged and the plugin prints progress in tenths."""
    from snakemake.logging import logger

    try:
        jobs = list(workflow.dag.needrun_jobs())
    except Exception:  # noqa: BLE001 - the console only, never a reason to stop a run
        return
    msg, payload = plan(jobs, logs)
    logger.info(msg, extra={PLAN_ATTR: payload})


def _wrap(text: str, first: str, rest: str = "      ") -> list[str]:
    return textwrap.wrap(str(text), WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=True, break_on_hyphens=False) or [first.rstrip()]


def summary_lines(decision: dict, where: str) -> list[str]:
    """The decision in about ten lines (``where``: the folder that holds it, e.g. results/latest): the
    first sentence that may be published (the headline's); `sealbench show` prints them all."""
    # what may be published, with its numbers (never "PUBLISHABLE: no headline number")
    out = _wrap(verdict_words(decision, metric=True), "", "  ")
    for r in decision.get("reasons") or []:  # why not: each refusal with its sentence
        out += _wrap(f"{r.get('code')}: {r.get('sentence', '')}", "  refused ", "      ")
    notes = [str(r.get("code")) for r in decision.get("notes") or []]
    if notes:  # the codes only: `sealbench show` gives each its sentence
        out += _wrap(f"notes: {', '.join(notes)}", "  ", "      ")
    c = decision.get("comparison") or {}
    if "delta" in c:
        out += _wrap(f"{c.get('candidate')} - {c.get('baseline')}: delta {c['delta']:+.3f} "
                     f"[{c.get('ci_low', 0):+.3f}, {c.get('ci_high', 0):+.3f}] on {c.get('matched_tasks')} "
                     f"{c.get('split', '')} tasks: {c.get('verdict_label', c.get('verdict', ''))}", "  ")
    allowed = decision.get("allowed_sentences") or []
    out += _wrap(f"may publish: {allowed[0] if allowed else 'nothing'}", "  ")
    more = f" ({len(allowed) - 1} more sentence{'s' if len(allowed) > 2 else ''})" if len(allowed) > 1 else ""
    out += _wrap(f"More: `sealbench show`{more}; {where}/report.html (experiment {decision.get('experiment', '?')})",
                 "  ")
    return out


def log_decision(exp_dir: str, latest: str) -> None:
    """At onsuccess: the decision in short, when this experiment has one."""
    from snakemake.logging import logger

    f = Path(exp_dir) / "decision.json"
    if not f.is_file():
        return
    try:
        d = read_json(f)
    except (OSError, ValueError):
        return
    where = latest if Path(latest).resolve() == Path(exp_dir).resolve() else exp_dir
    logger.info("\n".join(summary_lines(d, where.rstrip("/"))))


#: Whether this run was interrupted (Ctrl-C): set by :func:`watch_interrupt`'s handler.
INTERRUPTED = False
#: What the console says at the end of an interrupted run (one sentence).
INTERRUPTED_SENTENCE = ("sealbench: the run was interrupted before a decision; run the same command again "
                        "to continue it (every job that finished is kept, the interrupted ones run again).")
#: ... and at the end of a run that stopped at a failed job.
FAILED_SENTENCE = ("sealbench: no decision; the run stopped at the failed job named above. Jobs that "
                   "finished are kept: fix the cause and run the same command again.")


def _on_sigint(signum: int, frame: Any) -> None:
    """The first Ctrl-C stops the run (Snakemake's own handling of KeyboardInterrupt: it cancels
    the jobs, which end with everything they started, sealbench.isolation.job_launch); later ones while it
    stops change nothing (no traceback from an interpreter interrupted in its shutdown)."""
    global INTERRUPTED
    if INTERRUPTED:
        return
    INTERRUPTED = True
    raise KeyboardInterrupt


def watch_interrupt() -> None:
    """Before the run: note a Ctrl-C (SIGINT) for :func:`log_stopped`. Only in the main thread
    (elsewhere Python cannot set a handler, and nothing is changed)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def stop_sentence(interrupted: bool) -> str:
    return INTERRUPTED_SENTENCE if interrupted else FAILED_SENTENCE


#: Whether the stop sentence was said (it is said once, by onerror or by the run's wrapper).
SAID = False


def log_stopped() -> None:
    """At onerror."""
    global SAID
    from snakemake.logging import logger

    SAID = True
    logger.error(stop_sentence(INTERRUPTED))


def interrupted_outside_snakemake() -> int:
    """A Ctrl-C that reached the run outside Snakemake's own handling (between two steps of its
    scheduler): the one sentence, unless onerror said it already, and the exit status 130 — never
    a traceback. The jobs end with the run (sealbench.isolation.job_launch watches it)."""
    import sys

    global SAID
    if not SAID:
        SAID = True
        print(INTERRUPTED_SENTENCE, file=sys.stderr, flush=True)
    return 130
