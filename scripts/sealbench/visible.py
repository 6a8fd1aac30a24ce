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
pack, canaries added — and the attempt counts as green (``sealed_green``) only if that passes.

Frames on the socket: 1 byte kind (``o`` output, ``x`` exit code) + 4 bytes big-endian
length + payload.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys
import threading
import time
from pathlib import Path


def _frame(kind: bytes, payload: bytes) -> bytes:
    return kind + struct.pack(">I", len(payload)) + payload


def client(sock_path: str) -> int:
    """Ask the harness to run the visible suite; print its output; return its exit code."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError as exc:
        print(f"sealbench: the visible-test service is not reachable ({exc})", file=sys.stderr)
        return 125
    s.sendall(b"run\n")
    buf = b""
    rc = 125
    out = sys.stdout.buffer
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 5:
            kind, n = buf[:1], struct.unpack(">I", buf[1:5])[0]
            if len(buf) < 5 + n:
                break
            payload, buf = buf[5:5 + n], buf[5 + n:]
            if kind == b"o":
                out.write(payload)
                out.flush()
            elif kind == b"x":
                rc = int(payload.decode())
    s.close()
    return rc


class VisibleServer:
    """Serve visible-suite runs for one worker session (see module docstring)."""

    def __init__(self, sock_path: Path, command: str, workspace: Path, clock_start: float, deadline: float,
                 log_path: Path, logdir: Path, sandbox=None, cap_bytes: int | None = None,
                 on_green=None, seal_check=None) -> None:
        self.sock_path, self.command, self.workspace = Path(sock_path), command, Path(workspace)
        self.clock_start, self.deadline = clock_start, deadline
        self.log_path, self.logdir = Path(log_path), Path(logdir)
        self.sandbox, self.cap_bytes, self.on_green = sandbox, cap_bytes, on_green
        #: callable(n) -> (green: bool, reason: str | None): the sealed re-check of a green run
        self.seal_check = seal_check
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.count = 0
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.sock_path))
        os.chmod(self.sock_path, 0o777)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        from .core import harness_env
        from .processes import run_process

        try:
            conn.settimeout(10)
            conn.recv(64)
            with self.lock:
                if self.stop.is_set():
                    conn.sendall(_frame(b"o", b"sealbench: the session has ended\n") + _frame(b"x", b"125"))
                    return
                self.count += 1
                n = self.count
                out, err = self.logdir / f"visible-{n}.stdout", self.logdir / f"visible-{n}.stderr"
                t0 = time.time()
                res = run_process(self.command, self.workspace, harness_env(), max(1.0, self.deadline - time.time()),
                                  out, err, sandbox=self.sandbox, cap_bytes=self.cap_bytes, stop_event=self.stop)
                t1 = time.time()
                rc = res.returncode if res.end_reason == "exit" and res.returncode is not None else 124
                entry = {"start_s": round(t0 - self.clock_start, 3), "end_s": round(t1 - self.clock_start, 3),
                         "exit": rc}
                sealed = None
                if rc == 0 and self.seal_check is not None and not self.stop.is_set():
                    try:
                        sealed, why = self.seal_check(n)
                    except Exception as exc:  # noqa: BLE001 - a check that broke is not a green
                        sealed, why = False, f"the sealed check could not run: {type(exc).__name__}: {exc}"
                    entry.update(sealed_green=bool(sealed), sealed_reason=why)
                with open(self.log_path, "a") as fh:
                    fh.write(json.dumps(entry) + "\n")
            conn.settimeout(60)
            for path in (out, err):
                conn.sendall(_frame(b"o", path.read_bytes()))
            conn.sendall(_frame(b"x", str(rc).encode()))
            if rc == 0 and self.on_green is not None and (self.seal_check is None or sealed):
                self.on_green()
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        with self.lock:  # wait for a run in progress to be stopped and logged
            pass
        try:  # wake the accept() at once (closing alone leaves it waiting out its 0.2 s timeout)
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=5)
        try:
            self.sock_path.unlink()
        except FileNotFoundError:
            pass


def sealed_green(sealed_task: Path, meta: dict, ws, logdir: Path, timeout_s: float,
                 sandbox=None) -> tuple[bool, str | None]:
    """Whether the workspace ``ws`` (a :class:`~sealbench.workspace.Workspace`) *as it stands
    now* passes the visible suite when scored like a final patch: its diff applied to a pristine
    snapshot under the tamper rules, ``visible_tests/`` restored from the sealed pack, canaries
    added. Returns (green, why not)."""
    from .scoring import score_patch
    from .workspace import workspace_patch

    patch = workspace_patch(ws)
    res = score_patch(sealed_task, meta, patch, logdir, timeout_s, sandbox=sandbox, commands=("visible",))
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
