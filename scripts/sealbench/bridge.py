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

It also *observes the session* (:class:`ObservedSession`, run.json ``session_observed``): per
reply its HTTP status, the time on the harness's clock from the request's first byte to the
reply's first byte, and the reply's ``model`` field (JSON or event stream) as the server's
identity; and every upstream connect that failed (the harness's own fault reaching the server).
From these, not from the agent's ``stamp.json``, come the session facts that can exclude a run
(``stratify``): the servers seen, a route change (two server identities in one run, or the
server unreachable after it had answered), retries (429 and 5xx replies plus failed connects),
the longest wait for a first reply byte and the quota state (``exhausted`` once a 429 came).
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
from dataclasses import dataclass, field
from pathlib import Path

try:
    from .unix_rpc import UnixServer
except ImportError:  # run as a script inside the sandbox (the TCP side): no package
    from unix_rpc import UnixServer  # type: ignore[no-redef]


def _pipe(a: socket.socket, b: socket.socket, tap=None) -> None:
    """Copy ``a`` to ``b`` until either end closes; ``tap`` sees each piece just before it is sent
    on (so a request's first byte is timed before the server can answer it)."""
    try:
        while True:
            data = a.recv(1 << 16)
            if not data:
                break
            if tap is not None:
                tap.feed(data)
            b.sendall(data)
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


def _splice(a: socket.socket, b: socket.socket, tap_b_to_a=None, tap_a_to_b=None) -> list[threading.Thread]:
    pipes = [threading.Thread(target=_pipe, args=(a, b, tap_a_to_b), daemon=True),
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


@dataclass
class ObservedSession:
    """What the harness itself saw of one run's session at the bridge (never the agent's word)."""

    endpoint: str | None = None   #: the one host:port the bridge connects to
    models: list = field(default_factory=list)       #: distinct reply ``model`` values, first seen first
    replies: int = 0              #: final replies (1xx excluded), whole or cut short
    statuses: dict = field(default_factory=dict)     #: HTTP status (as a string) -> replies
    retry_replies: int = 0        #: 429 and 5xx replies
    quota_replies: int = 0        #: 429 replies
    failed_connects: int = 0      #: upstream connects that failed
    lost_after_reply: bool = False  #: an upstream connect failed after the server had answered
    max_queue_ms: int | None = None  #: longest time from a request's first byte to its reply's first byte

    def copy(self) -> "ObservedSession":
        return ObservedSession(**{**vars(self), "models": list(self.models), "statuses": dict(self.statuses)})

    def as_dict(self) -> dict:
        """run.json ``session_observed``: the facts ``stratify`` checks against ``health``."""
        servers = sorted(set(self.models))
        if servers:
            server_id = ",".join(servers)
        else:  # replies without a model field: the endpoint is all the harness knows of the server
            server_id = self.endpoint if self.replies else None
        return {"endpoint": self.endpoint, "servers": servers, "server_id": server_id,
                "route_changed": len(servers) > 1 or self.lost_after_reply,
                "retries": self.retry_replies + self.failed_connects,
                "max_queue_ms": self.max_queue_ms,
                "quota_state": "exhausted" if self.quota_replies else ("ok" if self.replies else None),
                "replies": self.replies, "statuses": dict(sorted(self.statuses.items())),
                "failed_connects": self.failed_connects, "unreachable_after_reply": self.lost_after_reply}


class _Exchange:
    """One connection's clock: when the request now waiting for its reply sent its first byte."""

    def __init__(self) -> None:
        self.pending: float | None = None


class RequestClock:
    """Client→server tap: notes the time of a request's first byte (the first byte sent while no
    request waits for its reply)."""

    def __init__(self, exchange: _Exchange) -> None:
        self.exchange = exchange

    def feed(self, data: bytes) -> None:
        if data and self.exchange.pending is None:
            self.exchange.pending = time.monotonic()

    def close(self) -> None:
        pass


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


def _model_of(obj: object) -> str | None:
    if not isinstance(obj, dict):
        return None
    m = obj.get("model")
    if not isinstance(m, str) and isinstance(obj.get("message"), dict):   # anthropic stream start
        m = obj["message"].get("model")
    return m if isinstance(m, str) and m else None


def model_in_body(body: bytes, content_type: str) -> str | None:
    """The server identity one reply names (its ``model`` field; in an event stream, the first
    event that names one), or None."""
    text = body.decode("utf-8", "replace")
    if "event-stream" in content_type or text.lstrip().startswith(("data:", "event:")):
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    m = _model_of(json.loads(line[5:].strip()))
                except ValueError:
                    continue
                if m is not None:
                    return m
        return None
    try:
        return _model_of(json.loads(text))
    except ValueError:
        return None


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

    def __init__(self, total: MeteredUsage, lock: threading.Lock, session: ObservedSession | None = None,
                 exchange: _Exchange | None = None) -> None:
        self.total, self.lock = total, lock
        self.session, self.exchange = session, exchange
        self.buf = b""
        self.state = "head"           # head | length | chunked | close | skip
        self.need = 0
        self.body = bytearray()
        self.headers: dict[str, str] = {}
        self.too_big = False

    def feed(self, data: bytes) -> None:
        if data and self.state == "head" and not self.buf:
            self._reply_starts()
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
            self._observe_status(status)
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
        ctype = self.headers.get("content-type", "")
        got = None if self.too_big or not body else usage_in_body(body, ctype)
        if self.session is not None and not self.too_big and body:
            model = model_in_body(body, ctype)
            if model is not None:
                with self.lock:
                    if model not in self.session.models:
                        self.session.models.append(model)
        self._count(got, parsed=not self.too_big)
        self.state, self.body = "head", bytearray()

    def _reply_starts(self) -> None:
        """The first byte of a reply arrived: the wait since its request's first byte, on the
        harness's clock."""
        if self.session is None or self.exchange is None or self.exchange.pending is None:
            return
        waited = int(round((time.monotonic() - self.exchange.pending) * 1000))
        self.exchange.pending = None
        with self.lock:
            prev = self.session.max_queue_ms
            self.session.max_queue_ms = waited if prev is None else max(prev, waited)

    def _observe_status(self, status: int) -> None:
        if self.session is None or 100 <= status < 200:
            return
        with self.lock:
            s = self.session
            s.replies += 1
            s.statuses[str(status)] = s.statuses.get(str(status), 0) + 1
            if status == 429 or status >= 500:
                s.retry_replies += 1
            if status == 429:
                s.quota_replies += 1

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
        self.session = ObservedSession(endpoint=f"{host}:{port}")
        self._lock = threading.Lock()
        self._pipes: list[threading.Thread] = []
        self.server = UnixServer(Path(sock_path), self._connect, backlog=16)

    def metered(self) -> MeteredUsage:
        """A copy of the usage the server's replies carried so far."""
        with self._lock:
            return MeteredUsage(**vars(self.usage))

    def observed(self) -> ObservedSession:
        """A copy of what the bridge saw of the session so far (``as_dict``: run.json
        ``session_observed``)."""
        with self._lock:
            return self.session.copy()

    def _connect(self, conn: socket.socket) -> None:
        try:
            up = socket.create_connection((self.host, self.port), timeout=10)
            up.settimeout(None)
        except OSError:
            with self._lock:   # the harness could not reach the server: its fault, observed
                self.session.failed_connects += 1
                if self.session.replies:
                    self.session.lost_after_reply = True
            conn.close()
            return
        exchange = _Exchange()
        pipes = _splice(conn, up, ResponseMeter(self.usage, self._lock, self.session, exchange),
                        RequestClock(exchange))
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
