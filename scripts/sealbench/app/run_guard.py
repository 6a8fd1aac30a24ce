"""What a real run (not ``-n``) holds and checks around its jobs, for ``workflow/rules/common.smk``.

* One pipeline per working directory (:func:`run_lock`): the run lock
  (``results/.sealbench/run.lock``) is a kernel ``flock``, held from the start of the run (the
  wrapped ``workflow.execute``, :func:`wrap_execute`, before Snakemake takes its own locks)
  until the process ends, even on ``kill -9``; the file records who holds it (pid, host, since
  when). A second pipeline is refused, naming the holder, before it touches anything. Holding
  the run lock, a run removes the lock Snakemake left in ``.snakemake/locks/`` when an earlier
  run was killed: every pipeline here takes the run lock before Snakemake's, so a Snakemake lock
  present then belongs to no live pipeline (without this, Snakemake refuses until ``--unlock``).
* ``results/`` writable and with room (:func:`check_results_writable`), or nothing starts.
* ``results/latest`` pointed at this config's experiment once it is decided
  (:func:`point_latest_if_decided`), also after a run with nothing to be done.
* First of all, what the holdout's ledger already decides (``preflight.start_check``, called by
  the workflow through :func:`wrap_execute`'s ``at_start``): a real run whose refusal is
  certain stops before the run lock and the first job unless ``run_anyway``.

No stage imports this module.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import os
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import run_console
from ..core.core import ConfigError, SealbenchError

#: The free space a run needs in results/ (MB) unless the operator's variable says otherwise.
DEFAULT_MIN_FREE_MB = 64


class RunLockHeld(SealbenchError):
    """Another pipeline holds the run lock of this working directory."""


class ResultsNotWritable(SealbenchError):
    """results/ cannot be written, or has too little room for a run."""


@dataclass(frozen=True)
class RunLock:
    """The run lock as found (and, when taken, held).

    ``fd``: the open, locked file, released by the kernel when this process ends (None: only
    checked); ``previous``: what the file said of the previous holder ("" if nothing);
    ``removed``: the sentence saying which stale Snakemake lock folder was removed ("" if none)."""

    fd: int | None
    previous: str
    removed: str = ""


def run_lock(lock: Path, take: bool, snakemake_locks: Path | None = None) -> RunLock:
    """The run lock ``lock``: raise :class:`RunLockHeld` (naming the holder) when another
    pipeline holds it.

    Without ``take``, only check, writing nothing (planning: no lock file yet means no pipeline
    has run here). With ``take``, take it for this process's life, record this process in the
    file, and then — holding it, and only then — remove ``snakemake_locks`` (Snakemake's lock
    folder, when given and not empty): the lock of a run that no longer runs. Raises OSError when
    the file cannot be created or written (``results/`` not writable)."""
    if take:
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    else:
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return RunLock(None, "")
    previous = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunLockHeld(f"another sealbench pipeline is running in this working directory ({previous or 'unknown'}); "
                          "results/ is left as it is. Wait for it (`sealbench progress` shows how far it is) or use "
                          "another working directory.") from None
    if not take:
        os.close(fd)
        return RunLock(None, previous)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
    # not inherited by jobs (os.open: close-on-exec); released by the kernel when this process ends, even on kill -9
    removed = ""
    if snakemake_locks is not None and snakemake_locks.is_dir() and any(snakemake_locks.iterdir()):
        try:
            shutil.rmtree(snakemake_locks)
        except OSError as exc:
            raise SealbenchError(f"{snakemake_locks}/: the lock of an earlier run that no longer runs could not be "
                                 f"removed ({exc.strerror}); remove that folder, then run again.") from exc
        who = previous if previous.startswith("pid ") else "which one is not recorded"
        removed = (f"sealbench: removed the lock {snakemake_locks}/ of an earlier run that no longer runs ({who}): "
                   "it ended (killed, or its machine stopped) before it could unlock.")
    return RunLock(fd, previous, removed)


def min_free_mb(environ: Mapping[str, str], variable: str) -> int:
    """The free space a run needs in results/, in MB: the environment ``variable`` (the
    workflow's: SEALBENCH_MIN_FREE_MB) or 64. Raises :class:`~sealbench.core.core.ConfigError` naming
    the variable when it is not a whole number."""
    text = environ.get(variable, str(DEFAULT_MIN_FREE_MB))
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"environment variable {variable}: '{text}' is not a whole number of MB") from None


def check_results_writable(results: Path, state_dir: Path, min_free: int) -> None:
    """``results`` must be writable (a file is written and removed in ``state_dir``, created if
    needed) and have ``min_free`` MB free; else raise :class:`ResultsNotWritable` naming the
    folder, why, and what to do (nothing else is written)."""
    base = Path(results)
    try:
        Path(state_dir).mkdir(parents=True, exist_ok=True)
        probe = Path(state_dir) / f".probe-{os.getpid()}"
        probe.write_bytes(b"x")
        probe.unlink()
    except OSError as exc:
        why = {errno.EROFS: "it is on a read-only file system", errno.EACCES: "permission denied",
               errno.ENOSPC: "the disk is full"}.get(exc.errno or 0, exc.strerror)
        raise ResultsNotWritable(f"{base.absolute()}/ is not writable ({why}). Point snakemake at a writable working "
                                 "directory (-d DIR) or free the disk; no result was changed.") from exc
    free_mb = shutil.disk_usage(base).free // (1 << 20)
    if free_mb < min_free:
        raise ResultsNotWritable(f"{base.absolute()}/ has only {free_mb} MB free; a run needs at least {min_free} MB "
                                 "for workspaces, logs and tables. Free some space first; no result was changed.")


def check_agents_start(cfg: Mapping[str, Any], agents: Mapping[str, Mapping[str, Any]], base: Path,
                       results: Path) -> None:
    """Every agent the run schedules must be able to start: its first command checked in the
    sandbox, the agent not run (agent_probe.start_check, as ``sealbench validate``; ``base``: the
    working directory). A new run also forgets the earlier runs' start failures
    (results/.sealbench/agent-health/): call it holding the run lock. Raises SealbenchError naming
    each agent that cannot start."""
    from ..agent.agent_probe import start_check
    from ..agent.gateway import GatewayError, upstream_key

    for name, spec in agents.items():   # a provider's key must be in the harness's environment first
        try:
            upstream_key((spec or {}).get("key_env"))
        except GatewayError as exc:
            raise SealbenchError(f"agent {name}: {exc}") from None
    cannot_start = start_check(agents, cfg["sandbox"], base, Path(cfg["pack"]), Path(results), cfg["limits"])
    if cannot_start:
        raise SealbenchError(cannot_start)


def sandbox_refusal(cfg: Mapping[str, Any]) -> str:
    """Why the run is refused for its sandbox: config field 'sandbox' is 'required' and bubblewrap
    cannot run here; "" when nothing stops it."""
    from ..isolation.sandbox import bwrap_problem

    if cfg["sandbox"] != "required" or not bwrap_problem():
        return ""
    return (f"config field 'sandbox' is 'required', but {bwrap_problem()}. Install bubblewrap, "
            "or set sandbox: auto to run unsandboxed (the gate then refuses a headline).")


def point_latest_if_decided(exp_dir: Path, latest: Path, results: Path) -> bool:
    """``latest`` pointed at ``exp_dir`` when that experiment is decided (its decision.json
    exists), and ``results``/index.html rewritten to mark it; returns whether it was. Raises
    OSError when either cannot be written."""
    if not (Path(exp_dir) / "decision.json").exists():
        return False
    from ..core.results_index import point_latest, write_index

    point_latest(Path(latest), Path(exp_dir))
    write_index(Path(results))  # results/index.html marks the experiment latest points at
    return True


def is_dry_run(args: tuple, kwargs: Mapping[str, Any], workflow: Any) -> bool:
    """Whether ``workflow.execute(*args, **kwargs)`` is a dry run (``-n``). Before execute,
    ``workflow.dryrun`` is False even for ``-n`` (it reads the executor plugin that execute
    sets): ask the plugin execute is given."""
    plugin = kwargs.get("executor_plugin", args[0] if args else None)
    return bool(getattr(getattr(plugin, "common_settings", None), "dryrun_exec", False)) or bool(workflow.dryrun)


def wrap_execute(execute: Callable[..., Any], workflow: Any, before_run: Callable[[], None],
                 after_run: Callable[[], None], at_start: Callable[[bool], None] | None = None) -> Callable[..., Any]:
    """Snakemake's ``workflow.execute``, with ``at_start(dry)`` first, dry run or not (the
    refusals the holdout's ledger decides: a real run may stop there, before anything is
    written), then ``before_run`` (a real run: the run
    lock, taken before Snakemake takes its own) and a watch for Ctrl-C (run_console: the
    console then says the run was interrupted, not failed), and ``after_run`` after it (results/latest).

    A run with nothing to be done returns before ``onstart`` and ``onsuccess`` (Snakemake's
    hooks run only when there are jobs), so without ``after_run`` an up-to-date rerun of another
    config would leave latest on the previous one. Only a real run runs either: not ``-n`` (the
    dry-run executor) nor ``--nohooks``; a failed run raises before ``after_run``; a Ctrl-C
    between two steps of Snakemake's scheduler ends the process with one sentence, no traceback."""

    @functools.wraps(execute)
    def run(*args: Any, **kwargs: Any) -> Any:
        dry = is_dry_run(args, kwargs, workflow)
        if at_start is not None:
            at_start(dry)
        if not dry:
            before_run()
            run_console.watch_interrupt()
        try:
            result = execute(*args, **kwargs)
        except KeyboardInterrupt:
            raise SystemExit(run_console.interrupted_outside_snakemake()) from None
        if not dry and not workflow.dryrun and not workflow.execution_settings.no_hooks:
            after_run()
        return result

    return run
