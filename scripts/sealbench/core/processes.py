"""The process runner: a shell command under a wall clock, its whole process tree killed at the
time box, its output captured up to a cap (the first and the last half of it).

- :func:`run_process` runs a command in its own process group with a deadline (and an optional
  stop event and resource guard) and returns a :class:`ProcessResult`; ``end_reason`` says how
  it ended (``exit``, ``time_box``, ``stopped``, ``limit``). A command the harness ended has no
  exit code (``returncode`` None, never 0) and names the signal that ended it (``signal``).
- :func:`ended_in_error`: whether a run ended on its own in an error (a crash), never at the
  harness's doing.
- :func:`become_subreaper`, :func:`descendants`, :func:`kill_descendants`: a worker's
  double-forked daemons are adopted and killed too. A command in the bwrap sandbox needs no
  such sweep (no scan of ``/proc``): it has its own PID namespace, which the kernel empties when
  bwrap ends; only the sandbox's own init, adopted, is reaped (:func:`_reap_adopted_inits`).
- :func:`tail_text`: the end of a log, for error messages.

Used by every stage that runs untrusted commands (run_agent, the controls, scoring, visible
runs, sessions); workspaces themselves are :mod:`sealbench.pack.workspace`.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass
class ProcessResult:
    """How a command ended. ``end_reason`` is data: ``exit``, ``time_box``, ``stopped``
    (ended by the harness, e.g. at the first green visible run under ``stop_on_green``) or
    ``limit`` (stopped by the harness past a resource limit; see ``limit_hit``).

    ``returncode`` is the command's exit status when it ended on its own (``exit``; negative:
    killed by that signal, as in :mod:`subprocess`), and None when the harness ended it — even
    if it answered the harness's SIGTERM with ``exit 0``. ``signal`` names the signal that ended
    it (``SIGKILL``...): one it died of by itself (a negative ``returncode``), or the one the
    harness sent that it ended on; None for a plain exit. (A sandboxed command that dies of a
    signal inside bubblewrap shows as exit 128+n, like a shell's: that is an exit status.)
    ``stdout_bytes``/``stderr_bytes`` count the bytes kept (at most ``cap_bytes``: the first
    half and the last half of the stream), ``*_truncated_bytes`` the bytes dropped between."""

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
    #: the signal that ended the command (see above), e.g. ``SIGTERM``; None for a plain exit
    signal: str | None = None


def ended_in_error(end_reason: str | None, exit_code: int | None, signal_name: str | None) -> bool:
    """Whether a run ended *on its own* in an error — a non-zero exit, or a signal it died of —
    as opposed to being ended by the harness (``time_box``, ``stopped``/``green``, ``limit``),
    by the harness's own failure (``harness_error``) or by a person (``submit``). The values
    are a run record's ``end_reason``, ``exit_code`` and ``signal``."""
    return end_reason == "exit" and (exit_code not in (0, None) or signal_name is not None)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


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
    """SIGKILL every descendant of ``root`` (default: this process) but ``keep`` until none is
    left; reap the ones killed that became zombies of this process (the orphans it adopted as
    subreaper). Returns how many processes were killed.

    Only those are reaped, never ``waitpid(-1)``: that would also take the exit status of a
    child somebody else started and waits for (a command another thread runs, a ``git`` run),
    and :class:`subprocess.Popen` reports a stolen status as exit 0."""
    root = os.getpid() if root is None else root
    keep = keep or set()
    killed = 0
    ours: set[int] = set()
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
        ours.update(pids)
        _reap(ours)
        time.sleep(0.02)
    _reap(ours)
    return killed


def _reap(pids: set[int]) -> None:
    """Reap those of ``pids`` that are zombie children of this process (never a command
    :func:`run_process` is running: its status is read by its own ``wait``)."""
    with _ACTIVE_LOCK:
        active = set(_ACTIVE)
    for pid in list(pids):
        if pid in active:
            continue
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not (or no longer) a child of this process
            continue
        if done:
            pids.discard(pid)


def registered_run(argv: list[str], timeout: float, text: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run`` (output captured) for a short harness command such as a bwrap probe,
    registered while it runs so that no reaping in another thread takes its exit status."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text)
    with _ACTIVE_LOCK:
        _ACTIVE.add(proc.pid)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.discard(proc.pid)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _adopted_inits() -> list[int]:
    """Children of this process named ``bwrap`` that no command of :func:`run_process` is
    waiting for: the PID-1 processes of finished sandboxes, adopted (this process is a
    subreaper) when their outer bwrap exited first. Read from ``/proc/self/task/*/children``
    (this process's own children only, not all of ``/proc``)."""
    kids: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as fh:
                kids.update(int(x) for x in fh.read().split())
        except OSError:
            continue
    with _ACTIVE_LOCK:
        kids -= _ACTIVE
    out = []
    for pid in kids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        end = data.rindex(b")")
        if data[data.index(b"(") + 1:end] == b"bwrap":
            out.append(pid)
    return out


def _reap_adopted_inits(wait_s: float = 2.0) -> None:
    """Reap the adopted sandbox inits (:func:`_adopted_inits`), waiting up to ``wait_s`` for
    those still ending (the kernel kills what is left in their PID namespace first)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = []
        for pid in _adopted_inits():
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if not done:
                left.append(pid)
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.005)


def _kill_group(pgid: int) -> list[str]:
    """SIGTERM the process group, then 0.2 s later SIGKILL it; returns the signals sent (none
    when the group was already gone)."""
    sent = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        sent.append(sig.name)
        if sig == signal.SIGTERM:
            time.sleep(0.2)
    return sent


def drop_marker(dropped: int) -> bytes:
    """The line written between the kept head and tail of a capped stream."""
    return f"\n… {dropped} bytes dropped …\n".encode()


def _pump(src, dest_path: Path, cap: int | None, counts: dict, key: str) -> None:
    """Copy a pipe to a file, keeping at most ``cap`` bytes: the first half as it comes, the last
    half (held in memory until the pipe closes: the crash reason is at the end) after a
    :func:`drop_marker` line when bytes were dropped between them. ``counts[key]`` is (bytes
    kept, bytes dropped); the marker is counted in neither."""
    head_cap = None if cap is None else cap // 2
    tail_cap = None if cap is None else cap - head_cap
    head = after = tail_len = 0
    tail: deque[bytes] = deque()
    with open(dest_path, "wb") as out:
        while True:
            chunk = src.read1(1 << 16) if hasattr(src, "read1") else src.read(1 << 16)
            if not chunk:
                break
            if head_cap is None or head < head_cap:
                take = chunk if head_cap is None else chunk[:head_cap - head]
                out.write(take)
                head += len(take)
                chunk = chunk[len(take):]
                if not chunk:
                    continue
            after += len(chunk)
            tail.append(chunk)
            tail_len += len(chunk)
            while tail and tail_len - len(tail[0]) >= tail_cap:  # drop whole chunks no longer needed
                tail_len -= len(tail.popleft())
        rest = b"".join(tail)
        rest = rest[len(rest) - tail_cap:] if tail_cap is not None and len(rest) > tail_cap else rest
        if after > len(rest):
            out.write(drop_marker(after - len(rest)))
        out.write(rest)
    counts[key] = (head + len(rest), after - len(rest))


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
    (its first and last half kept, the rest counted, not stored: see :func:`_pump`);
    ``pass_fds`` are inherited by the command (the report plugin's pipe, see ``sealed_command``).
    Nothing the command started survives: its process group is killed, and (this process being
    a subreaper) so is every orphan it left behind. A command ended by the harness has
    ``returncode`` None and the ``signal`` it ended on (see :class:`ProcessResult`).
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
    # In the bwrap sandbox the command has its own PID namespace: when it ends, bwrap (its
    # pid 1) ends and the kernel kills whatever is left in it, so no /proc scan is needed.
    contained = isolation == "bwrap" and "--unshare-pid" in argv
    before = set() if contained else set(descendants(os.getpid()))
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
    sent = _kill_group(proc.pid)
    # the command's own status, read before anything reaps: it is in _ACTIVE until here, so no
    # other thread's kill_descendants takes it (a stolen status reads as exit 0)
    try:
        status = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # the group signal missed it: kill the process itself
        proc.kill()
        sent = sent or ["SIGKILL"]
        status = proc.wait()
    if why == "exit":
        rc, sig = status, (_signal_name(-status) if status < 0 else None)
    else:  # ended by the harness: no exit code, whatever it exited with after the SIGTERM
        rc, sig = None, (_signal_name(-status) if status < 0 else (sent[0] if sent else None))
    with _ACTIVE_LOCK:
        _ACTIVE.discard(proc.pid)
        others = set(_ACTIVE)
    if contained:
        _reap_adopted_inits()
    else:
        keep = set(before)
        for other in others:  # commands other threads are running are not ours to kill
            keep |= {other, *descendants(other)}
        kill_descendants(keep=keep)
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
        signal=sig,
    )


def tail_text(path: Path, limit: int = 4000) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


