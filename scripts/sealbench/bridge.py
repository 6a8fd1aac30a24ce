"""A bridge that lets a sandboxed agent reach exactly one loopback endpoint (an LLM server).

The sandbox has no network of its own but a private loopback. Outside, the harness serves a
unix socket that forwards to the allowed ``host:port`` (:class:`UnixToTcp`). Inside, this file
run as a script (standard library only) listens on the same ``host:port`` of the sandbox's
loopback, forwards every connection to the unix socket, and runs the agent command:

    python -S bridge.py HOST PORT SOCKET -- bash -c COMMAND

Nothing else is reachable: any other address or port is refused by the empty network.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading


def _pipe(a: socket.socket, b: socket.socket) -> None:
    try:
        while True:
            data = a.recv(1 << 16)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _splice(a: socket.socket, b: socket.socket) -> None:
    threading.Thread(target=_pipe, args=(a, b), daemon=True).start()
    threading.Thread(target=_pipe, args=(b, a), daemon=True).start()


class UnixToTcp:
    """Outside the sandbox: accept on a unix socket, connect to ``host:port``."""

    def __init__(self, sock_path: str, host: str, port: int) -> None:
        self.sock_path, self.host, self.port = sock_path, host, port
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(sock_path)
        os.chmod(sock_path, 0o777)
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                up = socket.create_connection((self.host, self.port), timeout=10)
                up.settimeout(None)
            except OSError:
                conn.close()
                continue
            _splice(conn, up)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()
        try:
            os.unlink(self.sock_path)
        except FileNotFoundError:
            pass


def inside(host: str, port: int, sock_path: str, argv: list[str]) -> int:
    """Inside the sandbox: listen on ``host:port``, forward to the unix socket, run ``argv``."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port))
    srv.listen(16)

    def serve() -> None:
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                out.connect(sock_path)
            except OSError:
                conn.close()
                continue
            _splice(conn, out)

    threading.Thread(target=serve, daemon=True).start()
    return subprocess.call(argv)


def parse_endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if host not in ("127.0.0.1", "localhost", "::1") or not port.isdigit():
        raise ValueError(f"endpoint {text!r}: only a loopback host:port is allowed (e.g. 127.0.0.1:8000)")
    return ("127.0.0.1" if host == "localhost" else host), int(port)


if __name__ == "__main__":
    h, p, s = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rest = sys.argv[4:]
    if rest[:1] == ["--"]:
        rest = rest[1:]
    raise SystemExit(inside(h, p, s, rest))
