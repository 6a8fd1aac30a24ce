"""SEALBENCH_VISIBLE_CMD: the worker asks, the harness runs the visible suite and keeps the log.

The worker's ``SEALBENCH_VISIBLE_CMD`` is a tiny client (this file run as a script, standard
library only, so it works inside the sandbox) that connects to a unix socket served by the
harness *outside* the sandbox. For each request the harness runs the task's visible command
itself (in the same sandbox, on the same workspace), records ``(start, end, exit code)`` in
``attempts.jsonl`` — a file the worker cannot see or edit — and streams the output back. The
client prints it and exits with the command's exit code. So time-to-green cannot be forged:
the harness ran the tests and read the clock.

A green run in the worker's workspace proves little by itself (the worker may have planted a
``conftest.py`` that forces passes, then deleted it). So each green run is *sealed*
(``seal_check``): the workspace's patch at that moment is scored like a final patch — applied
to a pristine snapshot under the tamper rules, the visible tests restored from the sealed
pack — and the attempt counts as green (``sealed_green``) only if that passes.

Frames on the socket: 1 byte kind (``o`` output, ``x`` exit code) + 4 bytes big-endian
length + payload.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

try:
    from ..core.unix_rpc import NO_ANSWER, UnixServer, frame, relay
except ImportError:  # run as a script inside the sandbox (write_client_script): no package
    # no package: unix_rpc is read from the core layer's folder, beside this one
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from unix_rpc import NO_ANSWER, UnixServer, frame, relay  # type: ignore[no-redef]


def client(sock_path: str) -> int:
    """Ask the harness to run the visible suite; print its output; return its exit code."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError as exc:
        print(f"sealbench: the visible-test service is not reachable ({exc})", file=sys.stderr)
        return NO_ANSWER
    s.sendall(b"run\n")
    return relay(s, sys.stdout.buffer)


class _Run:
    """One visible run asked for: what may cancel it, and why it was."""

    def __init__(self) -> None:
        self.cancel = threading.Event()
        self.reason: str | None = None

    def cancel_with(self, reason: str) -> None:
        if not self.cancel.is_set():
            self.reason = reason
            self.cancel.set()


#: Why an abandoned visible run is cancelled (``cancel_reason`` in ``attempts.jsonl``).
CANCEL_NEW_RUN = "a new visible run started"
CANCEL_CLIENT_GONE = "its client went away (the worker stopped waiting for it)"
CANCEL_SESSION_END = "the session ended"


class VisibleServer:
    """Serve visible-suite runs for one worker session (see module docstring).

    One run at a time, each under its own clock: ``min(time left on the session's clock,
    run_timeout_s)`` (``timeout_s`` in its attempt line; past it the run is killed and logged
    with exit 124, ``end_reason`` ``time_box``). A run the worker abandons is cancelled — its
    whole process group killed — when the worker asks for a new run (which then starts at
    once), when its client goes away, or when the session ends (:meth:`close`). A cancelled run
    is logged ``cancelled: true`` with ``exit`` null and its ``cancel_reason``; it is never
    sealed, never green."""

    def __init__(self, sock_path: Path, command: str, workspace: Path, clock_start: float, deadline: float,
                 log_path: Path, logdir: Path, sandbox=None, cap_bytes: int | None = None,
                 on_green=None, seal_check=None, run_timeout_s: float | None = None,
                 task_env: dict[str, str] | None = None) -> None:
        self.sock_path, self.command, self.workspace = Path(sock_path), command, Path(workspace)
        self.clock_start, self.deadline = clock_start, deadline
        self.log_path, self.logdir = Path(log_path), Path(logdir)
        self.sandbox, self.cap_bytes, self.on_green = sandbox, cap_bytes, on_green
        #: callable(n) -> (green: bool, reason: str | None): the sealed re-check of a green run
        self.seal_check = seal_check
        #: each run's own cap in seconds (None: the time left on the session's clock only)
        self.run_timeout_s = run_timeout_s
        #: the task's environment for its command: its test environment (environments.BuiltEnv.command_env)
        #: and its import paths (``task_layout.pythonpath_env``); empty: sealbench's interpreter
        self.task_env = dict(task_env or {})
        self.lock = threading.Lock()        # one run at a time
        self.pending_lock = threading.Lock()
        self.pending: list[_Run] = []       # runs asked for and not yet logged
        self.count = 0
        self.server = UnixServer(self.sock_path, self._handle, backlog=8)
        self.stop = self.server.stop

    def _cancel_all(self, reason: str, keep: _Run | None = None) -> None:
        with self.pending_lock:
            for run in self.pending:
                if run is not keep:
                    run.cancel_with(reason)

    def run_timeout(self) -> float:
        """The clock of a run starting now (see class docstring)."""
        left = max(1.0, self.deadline - time.time())
        return left if self.run_timeout_s is None else max(0.1, min(left, float(self.run_timeout_s)))

    def _handle(self, conn: socket.socket) -> None:
        from ..core.core import harness_env, pytest_options
        from ..core.processes import run_process

        run = _Run()
        try:
            conn.settimeout(10)
            conn.recv(64)
            with self.pending_lock:
                self.pending.append(run)
            self._cancel_all(CANCEL_NEW_RUN, keep=run)  # an abandoned run gives way at once
            watcher = threading.Thread(target=_watch_client, args=(conn, run), daemon=True)
            watcher.start()
            with self.lock:
                if self.stop.is_set():
                    conn.sendall(frame(b"o", b"sealbench: the session has ended\n") + frame(b"x", b"125"))
                    return
                self.count += 1
                n = self.count
                out, err = self.logdir / f"visible-{n}.stdout", self.logdir / f"visible-{n}.stderr"
                out.parent.mkdir(parents=True, exist_ok=True)
                t0, timeout = time.time(), self.run_timeout()
                if run.cancel.is_set():  # superseded while it waited for the run before it
                    out.write_bytes(b"")
                    err.write_bytes(b"")
                    end = None
                else:
                    env = harness_env({**pytest_options(), **self.task_env})
                    res = run_process(self.command, self.workspace, env, timeout, out, err,
                                      sandbox=self.sandbox, cap_bytes=self.cap_bytes, stop_event=run.cancel)
                    end = res.end_reason
                t1 = time.time()
                cancelled = run.cancel.is_set()  # abandoned before its result was logged: never green
                rc = None if cancelled else (res.returncode if end == "exit" and res.returncode is not None else 124)
                entry = {"start_s": round(t0 - self.clock_start, 3), "end_s": round(t1 - self.clock_start, 3),
                         "exit": rc, "end_reason": "cancelled" if cancelled else end,
                         "timeout_s": round(timeout, 3), "cancelled": cancelled}
                if cancelled:
                    entry["cancel_reason"] = run.reason
                sealed = None
                if rc == 0 and self.seal_check is not None and not self.stop.is_set():
                    try:
                        sealed, why = self.seal_check(n)
                    except Exception as exc:  # noqa: BLE001 - a check that broke is not a green
                        sealed, why = False, f"the sealed check could not run: {type(exc).__name__}: {exc}"
                    entry.update(sealed_green=bool(sealed), sealed_reason=why)
                with open(self.log_path, "a") as fh:
                    fh.write(json.dumps(entry) + "\n")
                with self.pending_lock:
                    self.pending.remove(run)
            conn.settimeout(60)
            if cancelled:
                note = f"sealbench: visible run {n} cancelled: {run.reason}\n".encode()
                conn.sendall(frame(b"o", note) + frame(b"x", b"124"))
                return
            for path in (out, err):
                conn.sendall(frame(b"o", path.read_bytes()))
            conn.sendall(frame(b"x", str(rc).encode()))
            if rc == 0 and self.on_green is not None and (self.seal_check is None or sealed):
                self.on_green()
        except OSError:
            pass
        finally:
            run.cancel_with("done")  # ends the watcher (a no-op for a run already logged)
            with self.pending_lock:
                if run in self.pending:
                    self.pending.remove(run)
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self._cancel_all(CANCEL_SESSION_END)
        with self.lock:  # wait for a run in progress to be stopped and logged
            pass
        self.server.close()


def _watch_client(conn: socket.socket, run: _Run) -> None:
    """Cancel ``run`` when its client goes away (end of stream or a broken socket): nobody is
    waiting for its result. Bytes a client sends after its request are ignored."""
    import select

    while not run.cancel.is_set():
        try:
            ready, _, _ = select.select([conn], [], [], 0.1)
            if ready and not conn.recv(64, socket.MSG_DONTWAIT):
                run.cancel_with(CANCEL_CLIENT_GONE)
        except BlockingIOError:
            continue
        except (OSError, ValueError):
            run.cancel_with(CANCEL_CLIENT_GONE)


def sealed_green(sealed_task: Path, meta: dict, ws, logdir: Path, timeout_s: float,
                 sandbox=None, task_env: dict[str, str] | None = None) -> tuple[bool, str | None]:
    """Whether the workspace ``ws`` (a :class:`~sealbench.pack.workspace.Workspace`) *as it stands
    now* passes the visible suite when scored like a final patch: its diff applied to a pristine
    snapshot under the tamper rules, ``visible_tests/`` restored from the sealed pack.
    Returns (green, why not)."""
    from ..pack.workspace import workspace_patch
    from .scoring import score_patch

    patch = workspace_patch(ws)
    res = score_patch(sealed_task, meta, patch, logdir, timeout_s, sandbox=sandbox, commands=("visible",),
                      task_env=task_env)
    return res.status == "pass", res.reason


def write_client_script(path: Path, sock_path: Path) -> Path:
    """The script the worker gets as SEALBENCH_VISIBLE_CMD."""
    path.write_text(
        "#!/bin/sh\n# sealbench: asks the harness to run the visible tests (the harness keeps the log)\n"
        f"exec {sys.executable} -S {Path(__file__).resolve()} {sock_path}\n"
    )
    path.chmod(0o755)
    return path


if __name__ == "__main__":
    raise SystemExit(client(sys.argv[1]))
