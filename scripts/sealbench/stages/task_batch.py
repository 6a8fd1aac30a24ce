"""task_batch: the per-task stages for a batch of tasks, in one process (config ``batch_size`` > 1).

Snakemake costs a process start and some bookkeeping per job; on a pack of many small tasks
that costs more than the tests themselves. With ``batch_size: K`` the workflow runs one
``task_batch`` job per K tasks (sorted by id) instead of seven jobs per task. The job runs
exactly the steps the per-task rules would run — ``hash_pack seal``, ``leak_check``,
``run_dummy``, ``run_agent`` and ``hidden_score`` — by calling each stage module's ``main``
with the same arguments, and writes the same files at the same content-addressed paths, each
step's output to the same per-task log. The decision does not depend on the batch size.

Reads:  results/batches/<key>/spec.json (:func:`sealbench.stages.steps.batch_specs`; ``key`` digests the whole spec)
Writes: every step's outputs and log; results/batches/<key>/done.json (what ran, what was
        reused, and the per-task files stratify reads)

Only the work that changed is redone: a step's key digests its stage, its arguments, its
code and toolchain digests; when the step succeeds, a marker
``results/tasks/<id>/<digest>/.done/<step key>`` holding those fields is written after its
outputs (so a later plan can say what moved when the step is no longer current). A batch that
reruns (one member changed, code changed, the job was killed) reuses every step whose marker
and outputs are present and runs the rest, removing a step's stale outputs first as Snakemake
would.

Order: first every member is sealed and leak-checked; a leak suspect (or a task that changed
since planning) fails the batch before any control or agent runs. The workflow runs one batch of
every task's sealing and leak check first (rule ``batch_prepare``, ``steps.prepare_spec``: no work
steps), so a suspect anywhere stops the run before any batch's work; the batches reuse those steps. Then each task's controls,
agent attempts and scores. A step that fails (exit code not 0, or a missing output) skips the
rest of its task; the others go on; the job then fails, naming each failed step and its log.

Cores: ``--workers N`` (the job's ``threads``: the workflow gives a batch the cores the other
batches leave, so a pack smaller than ``batch_size`` × cores still uses them all) runs N members
at a time, each in a worker process of its own; both phases keep their order (every member
sealed and leak-checked before any control runs). The steps and every file they write are the
same for any N.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import importlib
import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..core.core import SealbenchError, read_json, write_json
from ..core.untrusted import remove_tree
from .steps import STAGES, marker_text, step_key


def remove_outputs(outputs: list[str]) -> None:
    """Delete a step's outputs (files or sealed, read-only folders) before it runs again: a
    run folder holds what an agent left, so the removal is ``untrusted.remove_tree`` (iterative,
    permission given back as it goes, no link followed)."""
    for out in outputs:
        left = remove_tree(out)
        if left:
            raise SealbenchError(f"{out}: could not be removed before its step runs again: {'; '.join(left)}")


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Send this process's output to ``log`` for the duration: ``sys.stdout``/``sys.stderr`` and
    file descriptors 1 and 2 (so subprocesses too), all sharing one file offset."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log, "w", buffering=1) as fh:
        try:
            os.dup2(fh.fileno(), 1)
            os.dup2(fh.fileno(), 2)
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
                yield
        finally:
            fh.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for f in saved:
                os.close(f)


def _with_env_identity(step: dict[str, Any]) -> dict[str, Any]:
    """A step of a task with a test environment (``--env DIR``) keyed with the built
    environment's own digest too (its lock), as the per-task rules' toolchain param is."""
    argv = list(step["argv"])
    if "--env" not in argv[:-1]:
        return step
    from ..isolation.environments import load_env

    return {**step, "toolchain": f"{step['toolchain']}:{load_env(Path(argv[argv.index('--env') + 1])).digest}"}


def run_step(step: dict[str, Any]) -> str:
    """Run one step unless its marker says it is done. Returns ``reused``, ``ran`` or ``failed``."""
    if step["module"] not in STAGES:
        raise SealbenchError(f"batch spec: unknown stage module {step['module']!r}")
    keyed = _with_env_identity(step)
    marker = Path(step["done_dir"]) / step_key(keyed)
    outputs = [Path(o) for o in step["outputs"]]
    if marker.exists() and all(o.exists() for o in outputs):
        return "reused"
    remove_outputs(step["outputs"])
    if marker.exists():
        marker.unlink()
    log = Path(step["log"])
    with output_to(log):
        try:
            rc = importlib.import_module(f"sealbench.stages.{step['module']}").main(list(step["argv"]))
        except SystemExit as exc:  # argparse and friends
            rc = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - reported as this step's failure, in its log
            traceback.print_exc()
            rc = 1
    missing = [str(o) for o in outputs if not o.exists()]
    if rc != 0 or missing:
        if missing and rc == 0:
            with open(log, "a") as fh:
                fh.write(f"task_batch: the step exited 0 but did not write {', '.join(missing)}\n")
        remove_outputs(step["outputs"])
        return "failed"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(marker_text(keyed))  # what made the outputs (sealbench.app.staleness reads it)
    return "ran"


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return Path(path).read_bytes()[-limit:].decode("utf-8", "replace")
    except OSError as exc:
        return f"(log unreadable: {exc})"


def run_member(steps: list[dict], task: str) -> dict[str, Any]:
    """Run one member's steps in order until one fails (the rest of that task is skipped).
    Returns ``{"ran", "reused", "failed", "lines", "errors"}``: the counts, the failed step (or
    None), and what to print on stdout and stderr, so that a worker's lines reach the batch log
    whole and in one piece."""
    out: dict[str, Any] = {"ran": 0, "reused": 0, "failed": None, "lines": [], "errors": []}
    for step in steps:
        t0 = time.perf_counter()
        result = run_step(step)
        if result == "failed":
            out["failed"] = {"task": task, "module": step["module"], "log": step["log"]}
            out["lines"].append(f"task_batch {task}: {step['module']} FAILED ({time.perf_counter() - t0:.2f} s); "
                                f"log {step['log']}")
            out["errors"].append(f"--- {step['log']} (end)\n{_tail(Path(step['log']))}\n---")
            return out
        out[result] += 1
        if result == "ran":
            out["lines"].append(f"task_batch {task}: {step['module']} ran ({time.perf_counter() - t0:.2f} s)")
    return out


def _worker_init() -> None:
    """A batch worker dies with the batch process (Linux ``PR_SET_PDEATHSIG``): a killed job
    leaves no worker running steps behind it (their commands die with them: bwrap
    ``--die-with-parent``, the limits' process group)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:  # the batch process is already gone
        os._exit(1)


def _phase(members: list[dict], which: str, pool: cf.ProcessPoolExecutor | None) -> list[dict[str, Any]]:
    """Run ``which`` (``prepare`` or ``work``) of every member: in this process one member after
    the other, or over ``pool``'s workers, one member per worker at a time. Each member's lines are
    printed when it ends (a failed step's log tail at the end of the batch: :func:`run_batch`);
    the results come back in member order."""
    def show(res: dict[str, Any]) -> None:
        for line in res["lines"]:
            print(line, flush=True)

    if pool is None:
        results = []
        for m in members:
            results.append(run_member(m[which], m["task"]))
            show(results[-1])
        return results
    futures = {pool.submit(run_member, m[which], m["task"]): i for i, m in enumerate(members)}
    results: list[dict[str, Any] | None] = [None] * len(members)
    for fut in cf.as_completed(futures):
        try:
            results[futures[fut]] = fut.result()
        except cf.process.BrokenProcessPool as exc:
            task = members[futures[fut]]["task"]
            raise SealbenchError(f"a worker process of this batch died while it ran {task}'s {which} steps "
                                 f"({exc}): out of memory, or killed; the steps that finished are kept, "
                                 "rerun the batch to do the rest") from exc
        show(results[futures[fut]])
    return results  # type: ignore[return-value]


def run_batch(spec_path: Path, out: Path, workers: int = 1) -> dict[str, Any]:
    """Run one batch spec; write ``out`` when every step succeeded. Returns the summary, whose
    ``failed`` list is empty on success.

    ``workers`` > 1 runs that many members at a time, each in a worker process of its own (the
    job's ``threads``: a pack smaller than ``batch_size`` × cores still uses every core). The
    steps, their files and logs, and so the outputs, are the same whatever ``workers`` is; only
    the order of the lines in the batch log may differ."""
    spec = read_json(spec_path)
    members = spec["tasks"]
    workers = max(1, min(int(workers), len(members)))
    with contextlib.ExitStack() as stack:
        pool = None
        if workers > 1:
            pool = stack.enter_context(cf.ProcessPoolExecutor(
                workers, mp_context=multiprocessing.get_context("spawn"), initializer=_worker_init))
        # 1. seal and leak-check every member before any control or agent runs
        results = _phase(members, "prepare", pool)
        if not any(r["failed"] for r in results):
            # 2. controls, agent attempts and their scores, task by task
            results += _phase(members, "work", pool)
    failed = [r["failed"] for r in results if r["failed"]]
    # the failed steps' log tails last, together (a console shows a failed job's last lines)
    for r in results:
        for err in r["errors"]:
            print(err, file=sys.stderr, flush=True)
    summary = dict(spec["summary"], ran=sum(r["ran"] for r in results), reused=sum(r["reused"] for r in results),
                   failed=failed, tasks=[m["task"] for m in members], workers=workers)
    if not failed:
        write_json(out, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.stages.task_batch", description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, required=True, help="the batch's spec.json")
    ap.add_argument("--out", type=Path, required=True, help="done.json, written when every step succeeded")
    ap.add_argument("--workers", type=int, default=1,
                    help="members run at a time, each in its own worker process (the job's threads; default 1)")
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    try:
        summary = run_batch(args.spec, args.out, args.workers)
    except SealbenchError as exc:
        print(f"task_batch: {exc}", file=sys.stderr)
        return 1
    print(f"task_batch: {len(summary['tasks'])} tasks; steps ran={summary['ran']} reused={summary['reused']} "
          f"failed={len(summary['failed'])}; {summary['workers']} at a time")
    if summary["failed"]:
        where = ", ".join(f"{f['task']} {f['module']}" for f in summary["failed"])
        print(f"task_batch: FAILED steps: {where} (their logs' ends above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
