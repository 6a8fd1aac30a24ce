"""A unix-socket service between the harness (outside the sandbox) and a tiny client inside it.

Its server (:class:`UnixServer`) serves the visible-test service (``visible.py``:
``SEALBENCH_VISIBLE_CMD``), a session's sealed shell (``session_shell.py``: ``sealbench session …``
from inside) and an agent's loopback bridge (``bridge.py``). For the first two, the client sends
one request line; the server streams frames back — 1 byte kind (``o`` output, ``x`` exit code) +
4 bytes big-endian length + payload (:func:`frame`, :func:`relay`) — and closes.

Standard library only, and importable both as ``sealbench.core.unix_rpc`` and as a top-level module:
the clients run their own file as a script (``python -S …/visible.py SOCKET``) inside the
sandbox, where the package is not imported.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

#: The exit code a client returns when the service never answered with one.
NO_ANSWER = 125


def frame(kind: bytes, payload: bytes) -> bytes:
    """One frame: ``kind`` (``b"o"`` output, ``b"x"`` exit code) and its payload."""
    return kind + struct.pack(">I", len(payload)) + payload


def relay(sock: socket.socket, out: BinaryIO) -> int:
    """Client side: copy the output frames from ``sock`` to ``out`` until the server closes;
    the exit code it sent (:data:`NO_ANSWER` when it sent none)."""
    buf, rc = b"", NO_ANSWER
    while True:
        chunk = sock.recv(1 << 16)
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
    sock.close()
    return rc


class UnixServer:
    """Server side: listen on ``sock_path`` (mode 0777: the sandbox's unprivileged uid connects)
    and hand each connection to ``handle`` on its own thread until :meth:`close`."""

    def __init__(self, sock_path: Path, handle: Callable[[socket.socket], None], backlog: int = 8) -> None:
        self.sock_path, self.handle = Path(sock_path), handle
        self.stop = threading.Event()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.sock_path))
        os.chmod(self.sock_path, 0o777)
        self.sock.listen(backlog)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self.handle, args=(conn,), daemon=True).start()

    def close(self) -> None:
        """Stop accepting, close the socket and remove its file (connections being served go on)."""
        self.stop.set()
        try:  # wake the accept() at once (closing alone leaves it waiting out its 0.2 s timeout)
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(timeout=5)
        self.sock_path.unlink(missing_ok=True)
