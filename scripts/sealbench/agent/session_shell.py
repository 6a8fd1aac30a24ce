"""A human session's sealed shell: ``sealbench session shell [-c COMMAND]``.

The person works in the sandbox an agent's run gets (``sandbox.py``: bubblewrap, unprivileged,
no network): the workspace writable; the system folders, the interpreter and sealbench's
``scripts/`` read-only; a private ``/tmp``; the pack, ``results/``, the rest of the project and
the home folder not mounted at all; the config's ``limits``. The shell starts in the workspace
with ``$SEALBENCH_TASK_ID``, ``$SEALBENCH_PROMPT`` (a read-only copy of the prompt),
``$SEALBENCH_WORKSPACE`` and ``$SEALBENCH_TIME_BOX_S``.

``sealbench session check|steer|status|submit`` work inside it: ``sealbench`` there is a
client (this file run as a script, standard library only, like ``visible.py``'s) that sends
the command over a unix socket in a read-only control folder to this process, outside the
sandbox, which runs it for the shell's session with the real CLI (so ``check`` runs the visible
tests in a sandbox of its own and records the attempt in the session's state, which the shell
cannot see) and streams its output back. Nothing else is forwarded. A submit ends the shell.

The clock is the session's (``session start``); as for every human session it is not enforced
by killing (over the box is a timeout). The interactive shell keeps the terminal (no
``--new-session``) so that job control and Ctrl-C work; ``-c`` runs one command and returns its
exit status. Frames on the socket are ``visible.py``'s: 1 byte kind (``o`` output, ``x`` exit
code) + 4 bytes big-endian length + payload.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

try:
    from ..core.unix_rpc import NO_ANSWER, UnixServer, frame, relay
except ImportError:  # run as a script inside the sandbox (write_client): no package
    # no package: unix_rpc is read from the core layer's folder, beside this one
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
    from unix_rpc import NO_ANSWER, UnixServer, frame, relay  # type: ignore[no-redef]

#: Set inside the sealed shell: the control socket ``sealbench session …`` talks to.
SOCKET_ENV = "SEALBENCH_SESSION_SOCKET"
#: The session commands the shell forwards (and how many words each takes).
FORWARDED = {"check": 0, "steer": 1, "status": 0, "submit": 0}
ONLY = ("inside the sealed session shell `sealbench` runs only `sealbench session check`, "
        '`sealbench session steer "TEXT"`, `sealbench session status` and `sealbench session submit` '
        "(the project, the pack and results/ are not here)")


def client(sock_path: str, argv: list[str]) -> int:
    """Inside the shell: ask for ``sealbench <argv>``; print what comes back; its exit code."""
    if argv[:1] != ["session"] or len(argv) < 2 or argv[1] not in FORWARDED:
        print(f"sealbench: {ONLY}", file=sys.stderr)
        return 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(sock_path)
    except OSError as exc:
        print(f"sealbench: the session's control socket is not reachable ({exc}); the shell that served it "
              "has ended", file=sys.stderr)
        return NO_ANSWER
    s.sendall(json.dumps(argv[1:]).encode() + b"\n")
    return relay(s, sys.stdout.buffer)


def request_argv(line: bytes, session_id: str, results: Path) -> list[str] | str:
    """The CLI words for one request from the shell, or why it is refused (the session and the
    results folder are always the shell's own: nothing from inside names another)."""
    try:
        words = json.loads(line.decode("utf-8"))
    except ValueError:
        return ONLY
    if not (isinstance(words, list) and words and all(isinstance(w, str) for w in words)):
        return ONLY
    cmd, rest = words[0], words[1:]
    if cmd not in FORWARDED:
        return ONLY
    if len(rest) != FORWARDED[cmd]:
        return (f'`sealbench session {cmd}` takes {"one quoted text" if FORWARDED[cmd] else "no argument"} in the '
                f"sealed shell (it always acts on this shell's session, {session_id})")
    return ["session", cmd, "--session", session_id, "--results", str(results), *(["--", *rest] if rest else [])]


class ControlServer:
    """Outside the sandbox: serve the shell's session commands on ``sock_path``."""

    def __init__(self, sock_path: Path, session_id: str, results: Path, on_submit) -> None:
        self.sock_path, self.session_id, self.results = Path(sock_path), session_id, Path(results).absolute()
        self.on_submit = on_submit
        self.lock = threading.Lock()  # one command at a time, as in a terminal
        self.server = UnixServer(self.sock_path, self._handle, backlog=4)

    def _handle(self, conn: socket.socket) -> None:
        submitted = False
        try:
            conn.settimeout(10)
            line = b""
            while not line.endswith(b"\n") and len(line) < 1 << 16:
                chunk = conn.recv(1 << 12)
                if not chunk:
                    break
                line += chunk
            conn.settimeout(None)
            argv = request_argv(line, self.session_id, self.results)
            if isinstance(argv, str):
                conn.sendall(frame(b"o", f"sealbench: {argv}\n".encode()) + frame(b"x", b"2"))
                return
            with self.lock:
                rc = self._run(conn, argv)
            submitted = argv[1] == "submit" and rc == 0
            if submitted:
                conn.sendall(frame(b"o", b"the session is submitted: this shell closes\n"))
            conn.sendall(frame(b"x", str(rc).encode()))
        except OSError:
            pass
        finally:
            conn.close()
        if submitted:
            self.on_submit()

    def _run(self, conn: socket.socket, argv: list[str]) -> int:
        """The real CLI on the command, outside the sandbox; its output streamed back."""
        from ..isolation.sandbox import SCRIPTS_DIR

        env = {k: v for k, v in os.environ.items() if k != SOCKET_ENV}
        env["PYTHONPATH"] = str(SCRIPTS_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        proc = subprocess.Popen([sys.executable, "-m", "sealbench.app.cli", *argv], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read1(1 << 16), b""):
            conn.sendall(frame(b"o", chunk))
        return proc.wait()

    def close(self) -> None:
        self.server.close()


def write_client(bin_dir: Path, sock_path: Path) -> Path:
    """``sealbench`` for the shell's PATH: the client above."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "sealbench"
    path.write_text("#!/bin/sh\n# sealbench in a sealed session shell: asks the harness outside (session commands only)\n"
                    f"exec {shlex.quote(sys.executable)} -S {shlex.quote(str(Path(__file__).resolve()))} "
                    f"{shlex.quote(str(sock_path))} \"$@\"\n")
    path.chmod(0o755)
    return path


def _reclaim_terminal() -> None:
    """Take the terminal's foreground back after an interactive shell that job-controlled it."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            try:
                os.tcsetpgrp(fd, os.getpgrp())
            finally:
                signal.signal(signal.SIGTTOU, old)
    except (OSError, ValueError, AttributeError):
        pass


def _control_dir(scratch: Path) -> Path:
    """A fresh control folder (client, socket, prompt): in the session's scratch folder, or in a
    shorter temp folder when a socket path there would be too long for a unix socket (108 bytes)."""
    for base in (scratch, Path(tempfile.gettempdir()), Path("/tmp")):
        if len(str(base)) + len("/sealbench-shell-xxxxxxxx/session.sock") < 100:
            return Path(tempfile.mkdtemp(prefix="sealbench-shell-", dir=base))
    raise OSError(f"no temp folder with a path short enough for a unix socket (tried {scratch}, /tmp)")


def open_shell(results: Path, session_id: str | None = None, command: str | None = None) -> int:
    """Run the sealed shell of an open session (interactive, or ``bash -c command``); its exit status."""
    from ..core.core import harness_env
    from ..core.untrusted import remove_tree
    from ..isolation.sandbox import bwrap_problem, make_sandbox, resolve_level
    from . import session

    s = session.resolve(results, session_id)
    session._require_open(s)
    d = s.data
    if resolve_level(d.get("sandbox", "auto")) != "bwrap":
        raise session.SessionError(f"the sealed shell needs bubblewrap, and here {bwrap_problem() or 'sandbox is off'}; "
                                   f"the session goes on without it (its workspace: {d['workspace']})")
    ws = Path(d["workspace"])
    ctl = _control_dir(Path(d["scratch"]))
    stop = threading.Event()
    server = ControlServer(ctl / "session.sock", s.id, Path(d["results"]), stop.set)
    try:
        prompt = ctl / "prompt.md"
        prompt.write_bytes(Path(d["prompt"]).read_bytes())
        prompt.chmod(0o444)
        bin_dir = ctl / "bin"
        write_client(bin_dir, ctl / "session.sock")
        box = make_sandbox("bwrap", writable=[ws], hide=[Path(d["pack"]), Path(d["results"])],
                           readable=[ctl], limits=d.get("limits"))
        interactive = command is None
        if interactive:
            box = box.keeping_terminal()
        # the person's terminal type for an interactive shell (line editing); nothing else of theirs
        term = {"TERM": os.environ.get("TERM") or "dumb"} if interactive else {}
        env = harness_env({"TMPDIR": "/tmp", **term, SOCKET_ENV: str(ctl / "session.sock"),
                           "SEALBENCH_TASK_ID": d["task_id"], "SEALBENCH_PROMPT": str(prompt),
                           "SEALBENCH_WORKSPACE": str(ws), "SEALBENCH_TIME_BOX_S": str(int(d["time_box_s"]))})
        env["PATH"] = str(bin_dir) + os.pathsep + env["PATH"]
        (ctl / "bashrc").write_text(f"PS1={shlex.quote(f'[sealbench {s.id}] ')}'\\w\\$ '\n")  # the prompt names the session
        argv = (["bash", "--noprofile", "--rcfile", str(ctl / "bashrc"), "-i"] if interactive
                else ["bash", "-c", command])
        guard = box.guard()
        handlers = {sig: signal.signal(sig, lambda *_: None) for sig in (signal.SIGINT, signal.SIGQUIT)}
        try:
            proc = subprocess.Popen(guard.argv(box.wrap(argv, ws)), cwd=ws, env=env)
            while proc.poll() is None:
                if stop.wait(0.2):  # submitted: the shell ends (after the client has printed)
                    time.sleep(0.5)
                    proc.terminate()
                    try:
                        proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        proc.kill()
            rc = proc.wait()
        finally:
            for sig, h in handlers.items():
                signal.signal(sig, h)
            if interactive:
                _reclaim_terminal()
        guard.finish(rc)
        return 0 if stop.is_set() else rc
    finally:
        server.close()
        remove_tree(ctl)


if __name__ == "__main__":
    raise SystemExit(client(sys.argv[1], sys.argv[2:]))
