"""The process runner: a shell command under a wall clock, its whole process tree killed at the
time box, its output captured up to a cap.

- :func:`run_process` runs a command in its own process group with a deadline (and an optional
  stop event and resource guard) and returns a :class:`ProcessResult`; ``end_reason`` says how
  it ended (``exit``, ``time_box``, ``stopped``, ``limit``).
- :func:`become_subreaper`, :func:`descendants`, :func:`kill_descendants`: a worker's
  double-forked daemons are adopted and killed too.
- :func:`tail_text`: the end of a log, for error messages.

Used by every stage that runs untrusted commands (run_agent, the controls, scoring, visible
runs, sessions); workspaces themselves are :mod:`sealbench.workspace`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping


@dataclass
class ProcessResult:
    """How a command ended. ``end_reason`` is data: ``exit``, ``time_box``, ``stopped``
    (ended by the harness, e.g. at the first green visible run under ``stop_on_green``) or
    ``limit`` (stopped by the harness past a resource limit; see ``limit_hit``)."""

    returncode: int | None
    wall_s: float
    timed_out: bool
    end_reason: str
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_truncated_bytes: int = 0
    stderr_truncated_bytes: int = 0
    cap_bytes: int | None = None
    isolation: str = "none"
    #: the resource limit the command hit, in words (e.g. "hit the file-size limit
    #: (max_file_mb=2048)"); None when it hit none (see ``limits.Guard``)
    limit_hit: str | None = None


_SUBREAPER_SET = False
#: Process ids of commands run_process is running now (several threads may run commands).
_ACTIVE: set[int] = set()
_ACTIVE_LOCK = threading.Lock()


def become_subreaper() -> bool:
    """Make this process adopt orphans of its descendants (Linux PR_SET_CHILD_SUBREAPER), so a
    worker's double-forked daemons can still be found and killed. Returns whether it worked."""
    global _SUBREAPER_SET
    if _SUBREAPER_SET:
        return True
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        _SUBREAPER_SET = libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        _SUBREAPER_SET = False
    return _SUBREAPER_SET


def descendants(root: int) -> list[int]:
    """All live descendants of ``root`` (from /proc), deepest last."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        ppid = int(data[data.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_descendants(root: int | None = None, keep: set[int] | None = None) -> int:
    """SIGKILL every descendant of ``root`` (default: this process) until none is left; reap
    zombies. Returns how many processes were killed."""
    root = os.getpid() if root is None else root
    keep = keep or set()
    killed = 0
    for _ in range(50):
        pids = [p for p in descendants(root) if p not in keep]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                pass
        _reap()
        time.sleep(0.02)
    _reap()
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        if sig == signal.SIGTERM:
            time.sleep(0.2)


def _pump(src, dest_path: Path, cap: int | None, counts: dict, key: str) -> None:
    """Copy a pipe to a file, keeping at most ``cap`` bytes and counting the rest."""
    kept = dropped = 0
    with open(dest_path, "wb") as out:
        while True:
            chunk = src.read1(1 << 16) if hasattr(src, "read1") else src.read(1 << 16)
            if not chunk:
                break
            if cap is None or kept + len(chunk) <= cap:
                out.write(chunk)
                kept += len(chunk)
            else:
                room = max(0, cap - kept)
                out.write(chunk[:room])
                kept += room
                dropped += len(chunk) - room
    counts[key] = (kept, dropped)


def _wait(proc: subprocess.Popen, deadline: float, stop_event: threading.Event | None,
          limit_event: threading.Event | None = None) -> tuple[int | None, str]:
    """Wait for ``proc`` until it exits (``exit``), ``deadline`` passes (``time_box``),
    ``stop_event`` is set (``stopped``) or ``limit_event`` is (``limit``). Wakes the moment the
    process exits (a pidfd), rather than polling with sleeps, which would add up to tens of ms
    to every short test run."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (old kernel): Popen.wait's own polling
        pidfd = None
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "time_box"
            step = remaining if stop_event is None and limit_event is None else min(remaining, 0.05)
            if pidfd is not None:
                select.select([pidfd], [], [], step)
                rc = proc.poll()
            else:
                try:
                    rc = proc.wait(timeout=step)
                except subprocess.TimeoutExpired:
                    rc = None
            if rc is not None:
                return rc, "exit"
            if limit_event is not None and limit_event.is_set():
                return None, "limit"
            if stop_event is not None and stop_event.is_set():
                return None, "stopped"
    finally:
        if pidfd is not None:
            os.close(pidfd)


def run_process(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float,
                stdout_path: Path, stderr_path: Path, *, sandbox=None, cap_bytes: int | None = None,
                stop_event: threading.Event | None = None, pass_fds: tuple[int, ...] = ()) -> ProcessResult:
    """Run ``command`` with bash in its own session (and ``sandbox`` if given); at
    ``timeout_s`` — or when ``stop_event`` is set — kill its whole process tree.

    Standard input is ``/dev/null``; stdout/stderr go to files, each capped at ``cap_bytes``
    (the rest is counted, not stored); ``pass_fds`` are inherited by the command (the sealed
    report's pipes, see ``pytest_seal``). Nothing the command started survives: its process
    group is killed, and (this process being a subreaper) so is every orphan it left behind.
    """
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    become_subreaper()
    argv = ["bash", "-c", command]
    isolation = "none"
    guard = None
    env = dict(env)
    if sandbox is not None:
        argv = sandbox.wrap(argv, Path(cwd))
        isolation = sandbox.level
        if hasattr(sandbox, "guard"):
            guard = sandbox.guard()
            argv = guard.argv(argv)
            env = sandbox.adjust_env(env)
    limit_event = threading.Event() if guard is not None else None
    before = set(descendants(os.getpid()))
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            pass_fds=tuple(pass_fds))
    with _ACTIVE_LOCK:
        _ACTIVE.add(proc.pid)
    counts: dict[str, tuple[int, int]] = {}
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, stdout_path, cap_bytes, counts, "out"), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, stderr_path, cap_bytes, counts, "err"), daemon=True)]
    for t in pumps:
        t.start()
    if guard is not None:
        guard.start_watch(limit_event.set)
    rc, why = _wait(proc, start + timeout_s, stop_event, limit_event)
    timed_out, stopped = why == "time_box", why == "stopped"
    wall = time.monotonic() - start
    _kill_group(proc.pid)
    with _ACTIVE_LOCK:
        _ACTIVE.discard(proc.pid)
        others = set(_ACTIVE)
    keep = set(before)
    for other in others:  # commands other threads are running are not ours to kill
        keep |= {other, *descendants(other)}
    kill_descendants(keep=keep)
    if rc is None:
        rc = proc.wait()
    for t in pumps:
        t.join(timeout=30)
    limit_hit = guard.finish(rc, stderr_path) if guard is not None else None
    out_kept, out_dropped = counts.get("out", (0, 0))
    err_kept, err_dropped = counts.get("err", (0, 0))
    return ProcessResult(
        returncode=rc, wall_s=round(wall, 3), timed_out=timed_out,
        end_reason="time_box" if timed_out else ("stopped" if stopped else ("limit" if why == "limit" else "exit")),
        stdout_bytes=out_kept, stderr_bytes=err_kept, stdout_truncated_bytes=out_dropped,
        stderr_truncated_bytes=err_dropped, cap_bytes=cap_bytes, isolation=isolation, limit_hit=limit_hit,
    )


def tail_text(path: Path, limit: int = 4000) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


