"""task_batch: the per-task stages for a batch of tasks, in one process (config ``batch_size`` > 1).

Snakemake costs a process start and some bookkeeping per job; on a pack of many small tasks
that costs more than the tests themselves. With ``batch_size: K`` the workflow runs one
``task_batch`` job per K tasks (sorted by id) instead of seven jobs per task. The job runs
exactly the steps the per-task rules would run — ``hash_pack seal``, ``leak_check``,
``run_dummy``, ``run_agent`` and ``hidden_score`` — by calling each stage module's ``main``
with the same arguments, and writes the same files at the same content-addressed paths, each
step's output to the same per-task log. The decision does not depend on the batch size.

Reads:  results/batches/<key>/spec.json (:func:`sealbench.steps.batch_specs`; ``key`` digests the whole spec)
Writes: every step's outputs and log; results/batches/<key>/done.json (what ran, what was
        reused, and the per-task files stratify reads)

Only the work that changed is redone: a step's key digests its stage, its arguments, its
code and toolchain digests; when the step succeeds, an empty marker
``results/tasks/<id>/<digest>/.done/<step key>`` is written after its outputs. A batch that
reruns (one member changed, code changed, the job was killed) reuses every step whose marker
and outputs are present and runs the rest, removing a step's stale outputs first as Snakemake
would.

Order: first every member is sealed and leak-checked; a leak suspect (or a task that changed
since planning) fails the batch before any control or agent runs. Then each task's controls,
agent attempts and scores. A step that fails (exit code not 0, or a missing output) skips the
rest of its task; the others go on; the job then fails, naming each failed step and its log.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Iterator

from .core import SealbenchError, make_writable, read_json, write_json
from .steps import STAGES, step_key


def remove_outputs(outputs: list[str]) -> None:
    """Delete a step's outputs (files or sealed, read-only folders) before it runs again."""
    for out in outputs:
        p = Path(out)
        if p.is_dir() and not p.is_symlink():
            make_writable(p)
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


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
    from .environments import load_env

    return {**step, "toolchain": f"{step['toolchain']}:{load_env(Path(argv[argv.index('--env') + 1])).digest}"}


def run_step(step: dict[str, Any]) -> str:
    """Run one step unless its marker says it is done. Returns ``reused``, ``ran`` or ``failed``."""
    if step["module"] not in STAGES:
        raise SealbenchError(f"batch spec: unknown stage module {step['module']!r}")
    marker = Path(step["done_dir"]) / step_key(_with_env_identity(step))
    outputs = [Path(o) for o in step["outputs"]]
    if marker.exists() and all(o.exists() for o in outputs):
        return "reused"
    remove_outputs(step["outputs"])
    if marker.exists():
        marker.unlink()
    log = Path(step["log"])
    with output_to(log):
        try:
            rc = importlib.import_module(f"sealbench.{step['module']}").main(list(step["argv"]))
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
    marker.write_bytes(b"")
    return "ran"


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return Path(path).read_bytes()[-limit:].decode("utf-8", "replace")
    except OSError as exc:
        return f"(log unreadable: {exc})"


def run_batch(spec_path: Path, out: Path) -> dict[str, Any]:
    """Run one batch spec; write ``out`` when every step succeeded. Returns the summary, whose
    ``failed`` list is empty on success."""
    spec = read_json(spec_path)
    counts = {"ran": 0, "reused": 0}
    failed: list[dict[str, str]] = []

    def run_all(steps: list[dict], task: str) -> bool:
        for step in steps:
            t0 = time.perf_counter()
            result = run_step(step)
            if result == "failed":
                failed.append({"task": task, "module": step["module"], "log": step["log"]})
                print(f"task_batch {task}: {step['module']} FAILED ({time.perf_counter() - t0:.2f} s); log {step['log']}")
                print(f"--- {step['log']} (end)\n{_tail(Path(step['log']))}\n---", file=sys.stderr)
                return False
            counts[result] += 1
            if result == "ran":
                print(f"task_batch {task}: {step['module']} ran ({time.perf_counter() - t0:.2f} s)")
        return True

    # 1. seal and leak-check every member before any control or agent runs
    for member in spec["tasks"]:
        run_all(member["prepare"], member["task"])
    if not failed:
        # 2. controls, agent attempts and their scores, task by task
        for member in spec["tasks"]:
            run_all(member["work"], member["task"])
    summary = dict(spec["summary"], ran=counts["ran"], reused=counts["reused"], failed=failed,
                   tasks=[m["task"] for m in spec["tasks"]])
    if not failed:
        write_json(out, summary)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.task_batch", description=__doc__.splitlines()[0])
    ap.add_argument("--spec", type=Path, required=True, help="the batch's spec.json")
    ap.add_argument("--out", type=Path, required=True, help="done.json, written when every step succeeded")
    args = ap.parse_args(argv)
    try:
        summary = run_batch(args.spec, args.out)
    except SealbenchError as exc:
        print(f"task_batch: {exc}", file=sys.stderr)
        return 1
    print(f"task_batch: {len(summary['tasks'])} tasks; steps ran={summary['ran']} reused={summary['reused']} "
          f"failed={len(summary['failed'])}")
    if summary["failed"]:
        where = "; ".join(f"{f['task']} {f['module']} (log {f['log']})" for f in summary["failed"])
        print(f"task_batch: FAILED steps: {where}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
