"""The compact console of a pipeline run: what `LogHandler` prints once the workflow executes.

From Snakemake's log records (snakemake-interface-logger-plugins' `LogEvent`s) it keeps a little
state and prints, in order:

* one header line when the plan arrives (the `sealbench_plan` record the Snakefile logs at
  onstart: jobs to run, tasks, the file that keeps the full log);
* one line per finished task (all of the task's jobs done) and per pack-level job, each
  prefixed with the overall progress `[done/total]`; a task line ends with each agent's
  hidden-test result when its scores are readable;
* one line per failed job: rule, task, its log file, then a short excerpt of that log (a failed
  group job on a cluster: the group's log, its excerpt and the jobs left unfinished, at most 5);
  nothing for a job stopped by a Ctrl-C (its log ends with :data:`STOPPED`: the Snakefile's
  onerror then says in one sentence that the run was interrupted);
* messages it does not know (warnings, errors, the decision summary the Snakefile logs at
  onsuccess) as they are; Snakemake's routine chatter not at all (it is in the full log);
* at the end: how long the run took and the full log's path.

On a terminal a transient progress bar (rich) sits below the lines: jobs done, running jobs,
elapsed time. Nothing here knows sealbench's stages except two names: the `task` wildcard and
the `hidden_score` rule (whose JSON output has `solver` and `status`)."""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from snakemake_interface_logger_plugins.common import LogEvent

#: The record attribute that carries the plan (sealbench.core.run_console.log_plan; the same name there).
PLAN_ATTR = "sealbench_plan"
#: The rule whose output is one agent's hidden-test score on one task.
SCORE_RULE = "hidden_score"
#: Snakemake's routine lines: in the full log, not on the compact console.
CHATTER = re.compile(
    r"^(Building DAG of jobs|Using shell: |Provided (cores|remote nodes|resources)|Rules claiming more threads|"
    r"Conda environments: ignored|Singularity containers: ignored|Group jobs: inactive|"
    r"Assuming unrestricted shared filesystem|Select jobs to execute|Execute \d+ jobs|Removing temporary output|"
    r"Shutting down, this might take some time|Exiting because a job execution failed|"
    r"Workflow has started|Job stats:|Waiting for more resources|Terminating processes on user request)")
#: Snakemake's line when a Ctrl-C stops the run.
INTERRUPTED = re.compile(r"^Terminating processes on user request")
#: How the log of a job stopped as a whole (Ctrl-C, its run ended) ends: sealbench.isolation.job_launch.STOPPED.
STOPPED = "sealbench: job stopped: "
#: The widest line printed (a longer one is cut; the full log file has it whole), the width of
#: a log excerpt's lines and how many lines of a failed job's log are shown.
LINE_MAX, WIDTH, EXCERPT = 200, 160, 20
#: An error that only repeats the failed job's shell command (the FAILED line and the log's
#: excerpt say more).
#: Unfinished jobs named after a failed group job.
GROUP_MEMBERS = 5
FAILED_COMMAND = re.compile(r"CalledProcessError in (file|line)|returned non-zero exit status")


def short(text: str, width: int = WIDTH) -> str:
    text = " ".join(str(text).split()) if "\n" in str(text) else str(text).rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def rel(path: str) -> str:
    """A path relative to the working directory when it lies under it."""
    try:
        return os.path.relpath(path) if os.path.isabs(path) and not os.path.relpath(path).startswith("..") else path
    except ValueError:
        return path


def excerpt(path: str, first: int = 5, last: int = EXCERPT - 6) -> list[str]:
    """The lines of a job's log worth seeing: all when short, else the first and the last few."""
    try:
        lines = [ln.rstrip() for ln in Path(path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return []
    if len(lines) <= first + last + 1:
        return lines
    return lines[:first] + [f"… {len(lines) - first - last} more lines …"] + lines[-last:]


def duration(text: str) -> str:
    """Snakemake's `0:08:24.123456` as `8 min 24 s`."""
    m = re.match(r"(?:(\d+) days?, )?(\d+):(\d+):(\d+)", text.strip())
    if not m:
        return text.strip()
    d, h, mi, s = (int(x or 0) for x in m.groups())
    h += 24 * d
    return f"{h} h {mi} min" if h else f"{mi} min {s} s" if mi else f"{s} s"


@dataclass
class Job:
    rule: str
    task: str | None
    log: list[str]
    output: list[str]


@dataclass
class CompactConsole:
    stream: TextIO
    color: bool = False
    progress_lines: bool = True  # off with --quiet progress
    total: int = 0
    done: int = 0
    plan: dict | None = None
    jobs: dict[int, Job] = field(default_factory=dict)
    task_done: Counter = field(default_factory=Counter)
    scores: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    running: dict[int, str] = field(default_factory=dict)
    failed: int = 0
    interrupted: bool = False
    logfile: str | None = None
    header_printed: bool = False
    group_members: int = 0
    bar: object = None

    # ------------------------------------------------------------------ output

    def line(self, text: str = "", style: str | None = None) -> None:
        text = short(text, LINE_MAX)
        if self.bar is not None:
            from rich.text import Text

            self.bar.console.print(Text(text, style=style or ""), soft_wrap=True, highlight=False)
            return
        self.stream.write(text + "\n")
        self.stream.flush()

    def start_bar(self) -> None:
        if self.bar is not None or not self.progress_lines:
            return
        isatty = getattr(self.stream, "isatty", None)
        if not (isatty and isatty()) or os.environ.get("TERM") == "dumb":
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(file=self.stream, no_color=not self.color, highlight=False)
        self.bar = Progress(TextColumn("jobs"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.description}"), console=console, transient=True,
                            redirect_stdout=False, redirect_stderr=False)
        self.bar_id = self.bar.add_task("", total=self.total or None, completed=self.done)
        self.bar.start()

    def update_bar(self) -> None:
        if self.bar is None:
            return
        running = Counter(self.running.values())
        desc = ", ".join(f"{r} ×{n}" if n > 1 else r for r, n in sorted(running.items()))
        self.bar.update(self.bar_id, total=self.total or None, completed=self.done,
                        description=short(f"running: {desc}", 60) if desc else "")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def prefix(self) -> str:
        width = len(str(self.total or self.done))
        return f"[{self.done:>{width}}/{self.total or '?'}]"

    # ------------------------------------------------------------------ events

    def handle(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        plan = getattr(record, PLAN_ATTR, None)
        if plan is not None:
            self.on_plan(plan)
        elif event == LogEvent.RUN_INFO:
            self.total = int((getattr(record, "stats", None) or {}).get("total", 0)) or self.total
        elif event == LogEvent.JOB_INFO:
            self.on_job_info(record)
        elif event == LogEvent.JOB_FINISHED:
            self.on_finished(int(record.job_id))
        elif event == LogEvent.PROGRESS:
            self.total = int(getattr(record, "total", 0) or self.total)
            self.update_bar()
        elif event == LogEvent.JOB_ERROR:
            self.on_error(record)
        elif event == LogEvent.GROUP_ERROR:
            self.on_group_error(record)  # each job of the group follows as its own JOB_ERROR
        elif event in (LogEvent.SHELLCMD, LogEvent.JOB_STARTED, LogEvent.GROUP_INFO, LogEvent.RESOURCES_INFO,
                       LogEvent.WORKFLOW_STARTED, LogEvent.DEBUG_DAG, LogEvent.RULEGRAPH):
            pass
        else:
            self.on_message(record)

    def on_plan(self, plan: dict) -> None:
        self.plan = plan
        self.total = int(plan.get("jobs") or self.total)
        logs = plan.get("log") or []
        self.logfile = logs[0] if logs else self.logfile
        tasks = plan.get("tasks") or {}
        what = f"sealbench: {self.total} jobs to run" + (f", {len(tasks)} tasks" if tasks else "")
        self.line(what + (f"; the full log: {rel(self.logfile)}" if self.logfile else ""))
        self.header_printed = True
        self.start_bar()

    def on_job_info(self, record: logging.LogRecord) -> None:
        if not self.header_printed:  # no plan record (e.g. --no-hooks)
            self.line(f"sealbench: {self.total} jobs to run")
            self.header_printed = True
            self.start_bar()
        wc = getattr(record, "wildcards", None) or {}
        job = Job(record.rule_name, wc.get("task"), list(getattr(record, "log", None) or []),
                  list(getattr(record, "output", None) or []))
        self.jobs[int(record.jobid)] = job
        self.running[int(record.jobid)] = job.rule
        self.update_bar()

    def on_finished(self, jobid: int) -> None:
        self.done += 1
        self.running.pop(jobid, None)
        job = self.jobs.get(jobid)
        self.update_bar()
        if job is None or not self.progress_lines:
            return
        if job.rule == SCORE_RULE and job.task:
            self.scores.setdefault(job.task, []).extend(read_score(job.output))
        if job.task is None:
            label = ((self.plan or {}).get("job_lines") or {}).get(job.rule, job.rule)
            if label:
                self.line(f"{self.prefix()} {label}")
            return
        self.task_done[job.task] += 1
        expected = ((self.plan or {}).get("tasks") or {}).get(job.task)
        if expected is None:
            if self.plan is None and self.total and self.done * 10 // self.total != (self.done - 1) * 10 // self.total:
                self.line(f"{self.prefix()} {100 * self.done // self.total}% done")
            return
        if self.task_done[job.task] == expected:
            results = outcome(self.scores.get(job.task, []))
            self.line(f"{self.prefix()} {job.task} done ({expected} job{'s' if expected > 1 else ''})"
                      + (f": {results}" if results else ""))

    def on_error(self, record: logging.LogRecord) -> None:
        jobid = getattr(record, "jobid", None)
        self.running.pop(jobid, None)
        job = self.jobs.get(jobid)
        rule = getattr(record, "rule_name", None) or (job.rule if job else "?")
        where = f" {job.task}" if job and job.task else ""
        logs = list(getattr(record, "log", None) or [])
        said = f"; its log: {', '.join(rel(p) for p in logs)}" if logs else " (the rule keeps no log)"
        if getattr(record, "indent", False):  # a job of a failed group job (cluster): which one failed is in the
            outputs = list(getattr(record, "output", None) or [])  # group's log; name the jobs it left unfinished
            if outputs and all(os.path.exists(p) for p in outputs):
                return
            self.group_members += 1
            if self.group_members <= GROUP_MEMBERS:
                self.line(f"  unfinished in the group: {rule}{where}{said}")
            elif self.group_members == GROUP_MEMBERS + 1:
                self.line("  … (every job of the group: the full log)")
            return
        if stopped(logs):  # not a failure: the job was stopped with the run
            self.update_bar()
            return
        self.failed += 1
        self.line(f"FAILED {rule}{where}{said}", style="bold red")
        self.show_excerpt(logs)
        self.update_bar()

    def on_group_error(self, record: logging.LogRecord) -> None:
        """A group job (on a cluster) failed: its own log (the node's Snakemake) says which job and why."""
        self.failed += 1
        self.group_members = 0
        logs = list(getattr(record, "aux_logs", None) or [])
        said = f"; its log: {', '.join(rel(p) for p in logs)}" if logs else ""
        self.line(f"FAILED group job {getattr(record, 'groupid', '?')}{said}", style="bold red")
        self.show_excerpt(logs)

    def show_excerpt(self, logs: list[str]) -> None:
        for path in logs[:1]:
            for text in excerpt(path):
                self.line("    " + short(text, WIDTH - 4))

    def on_message(self, record: logging.LogRecord) -> None:
        msg = record.getMessage() if record.args else str(record.msg)
        if msg in ("None", ""):
            return
        if msg.startswith("Complete log(s): "):
            self.logfile = msg.split(": ", 1)[1].split(", ")[0]
            return
        if msg.startswith("Elapsed time: "):
            self.stop()
            state = "stopped" if self.failed or self.interrupted else "finished"
            log = f"; the full log: {rel(self.logfile)}" if self.logfile else ""
            self.line(f"Run {state} after {duration(msg.split(': ', 1)[1])}{log}")
            self.logfile = None
            return
        if msg.startswith("Nothing to be done"):
            self.line(msg)
            return
        if INTERRUPTED.match(msg):
            self.interrupted = True
        if CHATTER.match(msg):
            return
        if record.levelno >= logging.ERROR and getattr(record, "exception", None) == "WorkflowError" \
                and "did not complete successfully" in msg:
            return  # the failed jobs were named above; the summary line follows
        if getattr(record, "event", None) == LogEvent.ERROR and FAILED_COMMAND.search(msg):
            return
        style = "red" if record.levelno >= logging.ERROR else "yellow" if record.levelno >= logging.WARNING else None
        for text in msg.splitlines() or [""]:
            self.line(text, style=style)

    def close(self) -> None:
        self.stop()
        if self.logfile:  # a run that ended without its "Elapsed time" line
            self.line(f"The full log: {rel(self.logfile)}")
            self.logfile = None


def stopped(logs: list[str]) -> bool:
    """Whether a job's log says it was stopped as a whole (its last line; sealbench.isolation.job_launch)."""
    for path in logs[:1]:
        try:
            with open(path, "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
                tail = fh.read().decode("utf-8", "replace").rstrip().splitlines()
        except OSError:
            return False
        return bool(tail) and tail[-1].startswith(STOPPED)
    return False


def read_score(outputs: list[str]) -> list[tuple[str, str]]:
    out = []
    for path in outputs:
        if path.endswith(".json"):
            try:
                d = json.loads(Path(path).read_text())
                out.append((str(d["solver"]), str(d["status"])))
            except (OSError, ValueError, KeyError, TypeError):
                pass
    return out


def outcome(scores: list[tuple[str, str]]) -> str:
    """`repair pass, repair_lite fail` (one epoch) or `repair 2/3 pass` (several)."""
    by: dict[str, list[str]] = {}
    for solver, status in scores:
        by.setdefault(solver, []).append(status)
    parts = []
    for solver, sts in sorted(by.items()):
        parts.append(f"{solver} {sts[0]}" if len(sts) == 1 else f"{solver} {sts.count('pass')}/{len(sts)} pass")
    return ", ".join(parts)
