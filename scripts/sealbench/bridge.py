"""A bridge that lets a sandboxed agent reach exactly one loopback endpoint (an LLM server).

The sandbox has no network of its own but a private loopback. Outside, the harness serves a
unix socket that forwards to the allowed ``host:port`` (:class:`UnixToTcp`). Inside, this file
run as a script (standard library only) listens on the same ``host:port`` of the sandbox's
loopback, forwards every connection to the unix socket, and runs the agent command:

    python -S bridge.py HOST PORT SOCKET -- bash -c COMMAND

Nothing else is reachable: any other address or port is refused by the empty network.

The harness side also *meters* the traffic (:class:`ResponseMeter`): every HTTP response the
server sends back is parsed (``Content-Length``, chunked or read-to-close bodies; JSON or
``text/event-stream``) and the ``usage`` object of OpenAI-compatible replies
(``prompt_tokens``/``completion_tokens``; ``input_tokens``/``output_tokens`` too) is summed.
So the token counts of a sandboxed agent come from what the server said, not from the agent.
A reply that carries no usage, or that the connection cut short (the client hung up before its
end, where a stream says its usage), is counted as a reply without usage: the run's metered
tokens are then incomplete (``run_agent.choose_tokens``), never replaced by the agent's word.
"""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

try:
    from .unix_rpc import UnixServer
except ImportError:  # run as a script inside the sandbox (the TCP side): no package
    from unix_rpc import UnixServer  # type: ignore[no-redef]


def _pipe(a: socket.socket, b: socket.socket, tap=None) -> None:
    try:
        while True:
            data = a.recv(1 << 16)
            if not data:
                break
            b.sendall(data)
            if tap is not None:
                tap.feed(data)
    except OSError:
        pass
    finally:
        if tap is not None:
            tap.close()
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _splice(a: socket.socket, b: socket.socket, tap_b_to_a=None) -> list[threading.Thread]:
    pipes = [threading.Thread(target=_pipe, args=(a, b), daemon=True),
             threading.Thread(target=_pipe, args=(b, a, tap_b_to_a), daemon=True)]
    for t in pipes:
        t.start()
    return pipes


# --------------------------------------------------------------------------------------------
# Metering the server's replies

#: A response body larger than this is not parsed for usage (it is still forwarded whole).
METER_BODY_CAP = 32 << 20


@dataclass
class MeteredUsage:
    """What the server's replies said, summed over a session."""

    tokens_in: int = 0
    tokens_out: int = 0
    responses: int = 0            #: HTTP responses seen (1xx excluded)
    with_usage: int = 0           #: responses that carried a usage object
    unparsed: int = 0             #: responses whose body could not be read for usage

    def as_dict(self) -> dict:
        return {"tokens_in": self.tokens_in, "tokens_out": self.tokens_out, "responses": self.responses,
                "responses_with_usage": self.with_usage, "responses_unparsed": self.unparsed}


def _usage_of(obj: object) -> tuple[int, int] | None:
    """(tokens in, tokens out) of one reply object, or None when it carries no usage."""
    if not isinstance(obj, dict):
        return None
    u = obj.get("usage")
    if not isinstance(u, dict) and isinstance(obj.get("message"), dict):   # anthropic stream start
        u = obj["message"].get("usage")
    if not isinstance(u, dict):
        return None

    def num(*keys: str) -> int:
        for k in keys:
            v = u.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
        return 0

    return num("prompt_tokens", "input_tokens"), num("completion_tokens", "output_tokens")


def usage_in_body(body: bytes, content_type: str) -> tuple[int, int] | None:
    """Usage of one response body: a JSON reply, or an event stream whose events carry usage
    (OpenAI: the last chunk holds the total; Anthropic: ``message_start`` + ``message_delta``)."""
    text = body.decode("utf-8", "replace")
    if "event-stream" in content_type or text.lstrip().startswith(("data:", "event:")):
        found, tin, tout, openai_last = False, 0, 0, None
        for line in text.splitlines():
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if not data or data == "[DONE]":
                continue
            try:
                obj = json.loads(data)
            except ValueError:
                continue
            got = _usage_of(obj)
            if got is None:
                continue
            found = True
            if isinstance(obj, dict) and obj.get("type") in ("message_start", "message_delta"):
                tin, tout = max(tin, got[0]), max(tout, got[1])     # anthropic: cumulative fields
            else:
                openai_last = got                                   # openai: the final chunk's total
        if not found:
            return None
        return openai_last if openai_last is not None else (tin, tout)
    try:
        return _usage_of(json.loads(text))
    except ValueError:
        return None


class ResponseMeter:
    """Incremental parser of the server→client byte stream of one connection (HTTP/1.x)."""

    def __init__(self, total: MeteredUsage, lock: threading.Lock) -> None:
        self.total, self.lock = total, lock
        self.buf = b""
        self.state = "head"           # head | length | chunked | close | skip
        self.need = 0
        self.body = bytearray()
        self.headers: dict[str, str] = {}
        self.too_big = False

    def feed(self, data: bytes) -> None:
        self.buf += data
        try:
            while self._step():
                pass
        except (ValueError, IndexError):
            self._count(None, parsed=False)
            self.state, self.buf = "skip", b""

    def close(self) -> None:
        if self.state == "close":
            self._finish()
        elif self.state in ("length", "chunked") or (self.state == "head" and self.buf):
            # the connection ended inside a reply (the client hung up before its end, where a
            # stream says its usage): a reply without usage, so the count is incomplete
            self._count(None, parsed=False)
        self.state = "skip"

    def _step(self) -> bool:
        if self.state == "skip":
            self.buf = b""
            return False
        if self.state == "head":
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > 1 << 20:
                    raise ValueError("header too long")
                return False
            head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4:]
            lines = head.split("\r\n")
            status = int(lines[0].split()[1])
            self.headers = {}
            for ln in lines[1:]:
                k, _, v = ln.partition(":")
                self.headers[k.strip().lower()] = v.strip()
            self.body, self.too_big = bytearray(), False
            if 100 <= status < 200 or status in (204, 304):
                return True
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                self.state, self.need = "chunked", -1
            elif "content-length" in self.headers:
                self.state, self.need = "length", int(self.headers["content-length"])
            else:
                self.state = "close"
            return True
        if self.state == "length":
            take = min(self.need, len(self.buf))
            self._keep(self.buf[:take])
            self.buf, self.need = self.buf[take:], self.need - take
            if self.need == 0:
                self._finish()
                return True
            return False
        if self.state == "chunked":
            if self.need == -1:                    # at a chunk-size line
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return False
                size = int(self.buf[:end].split(b";")[0].strip() or b"0", 16)
                self.buf = self.buf[end + 2:]
                if size == 0:
                    self.need = -2
                    return True
                self.need = size
                return True
            if self.need == -2:                    # trailers up to the empty line
                end = self.buf.find(b"\r\n")
                if end < 0:
                    return False
                line, self.buf = self.buf[:end], self.buf[end + 2:]
                if not line:
                    self._finish()
                return True
            if len(self.buf) < self.need + 2:
                return False
            self._keep(self.buf[:self.need])
            self.buf, self.need = self.buf[self.need + 2:], -1
            return True
        if self.state == "close":
            self._keep(self.buf)
            self.buf = b""
            return False
        return False

    def _keep(self, data: bytes) -> None:
        if self.too_big or len(self.body) + len(data) > METER_BODY_CAP:
            self.too_big, self.body = True, bytearray()
        else:
            self.body += data

    def _finish(self) -> None:
        body = bytes(self.body)
        enc = self.headers.get("content-encoding", "").lower()
        try:
            if enc == "gzip":
                body = gzip.decompress(body)
            elif enc == "deflate":
                body = zlib.decompress(body)
        except (OSError, zlib.error):
            body = b""
        got = None if self.too_big or not body else usage_in_body(body, self.headers.get("content-type", ""))
        self._count(got, parsed=not self.too_big)
        self.state, self.body = "head", bytearray()

    def _count(self, got: tuple[int, int] | None, parsed: bool) -> None:
        with self.lock:
            self.total.responses += 1
            if not parsed:
                self.total.unparsed += 1
            if got is not None:
                self.total.with_usage += 1
                self.total.tokens_in += got[0]
                self.total.tokens_out += got[1]


class UnixToTcp:
    """Outside the sandbox: accept on a unix socket, connect to ``host:port``."""

    def __init__(self, sock_path: str, host: str, port: int) -> None:
        self.sock_path, self.host, self.port = sock_path, host, port
        self.usage = MeteredUsage()
        self._lock = threading.Lock()
        self._pipes: list[threading.Thread] = []
        self.server = UnixServer(Path(sock_path), self._connect, backlog=16)

    def metered(self) -> MeteredUsage:
        """A copy of the usage the server's replies carried so far."""
        with self._lock:
            return MeteredUsage(**vars(self.usage))

    def _connect(self, conn: socket.socket) -> None:
        try:
            up = socket.create_connection((self.host, self.port), timeout=10)
            up.settimeout(None)
        except OSError:
            conn.close()
            return
        pipes = _splice(conn, up, ResponseMeter(self.usage, self._lock))
        with self._lock:
            self._pipes += pipes

    def close(self, wait_s: float = 5.0) -> None:
        """Stop accepting, then wait (at most ``wait_s``) for the open connections to end, so
        that a reply cut short when the agent's processes died is counted before
        :meth:`metered` is read (with the sandbox gone, they end at once)."""
        self.server.close()
        deadline = time.monotonic() + wait_s
        with self._lock:
            pipes = list(self._pipes)
        for t in pipes:
            t.join(timeout=max(0.0, deadline - time.monotonic()))


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
