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
reply's first byte, and the reply's ``model`` field (JSON or event stream); and every upstream
connect that failed (the harness's own fault reaching the server). The client→server direction
is read too (:class:`RequestMeter`: ``Content-Length`` and chunked bodies, pipelined requests
matched with their replies in order), so each reply is paired with the ``model`` its request
asked for. Which model is asked for is the agent's choice and never a session problem; what the
server answered to it is the server's. From these, not from the agent's ``stamp.json``, come the
session facts that can exclude a run (``stratify``): the server (``server_id``: the endpoint the
harness forwarded to, which no request can change; ``answers``: requested model -> reply
models), a route change (one requested model answered under two model names in one run, or the
server unreachable after it had answered), retries (429 and 5xx replies plus failed connects —
an agent that floods its server can provoke these: the gate's ``EXCLUSIONS_DECIDE`` is the
backstop), the longest wait for a first reply byte and the quota state (``exhausted`` once a 429
came).
"""

from __future__ import annotations

import gzip
import json
import re
import socket
import subprocess
import sys
import threading
import time
import zlib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

try:
    from ..core.unix_rpc import UnixServer
except ImportError:  # run as a script inside the sandbox (the TCP side): no package
    # no package: unix_rpc is read from the core layer's folder, beside this one
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
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


#: Parts a server appends to a requested model name when it resolves an alias to a snapshot
#: (``gpt-4o`` -> ``gpt-4o-2024-08-06``, ``claude-x`` -> ``claude-x-20241022``, ``llama3`` ->
#: ``llama3:latest``): the same model, not a substitution.
_SNAPSHOT_SUFFIX = re.compile(r"[-:@](?:latest|v?[0-9][0-9._-]*)")


def same_model(asked: str, named: str) -> bool:
    """Whether a reply naming ``named`` answered a request for ``asked`` with the model asked
    for: the same name (case aside), or the name plus a snapshot suffix (:data:`_SNAPSHOT_SUFFIX`).
    ``gpt-x`` answered as ``gpt-x-mini`` is not the same model."""
    a, n = asked.lower(), named.lower()
    return a == n or (n.startswith(a) and _SNAPSHOT_SUFFIX.fullmatch(n[len(a):]) is not None)


@dataclass
class ObservedSession:
    """What the harness itself saw of one run's session at the bridge (never the agent's word).

    The requests are read too (:class:`RequestMeter`), so each reply is matched with the model
    its request asked for: which model is used is the agent's choice; what the server answered
    to a given request is the server's. A route change is the server's doing only: one
    requested model answered under two model names in one run (on one request path), or the
    server unreachable after it had answered. Requests for two models answered as asked are
    not a route change (``models_requested`` records them)."""

    endpoint: str | None = None   #: the one host:port the bridge connects to
    models: list = field(default_factory=list)       #: distinct reply ``model`` values, first seen first
    models_requested: list = field(default_factory=list)  #: distinct request ``model`` values, first seen first
    #: requested model -> distinct reply models that answered it (requests and replies naming one)
    answers: dict = field(default_factory=dict)
    #: "<requested model> <request target>" -> distinct reply models (the route-change key)
    routes: dict = field(default_factory=dict)
    substitutions: int = 0        #: replies naming another model than their request asked for (same_model)
    unmatched: int = 0            #: replies whose request the bridge could not read (nothing inferred)
    replies: int = 0              #: final replies (1xx excluded), whole or cut short
    statuses: dict = field(default_factory=dict)     #: HTTP status (as a string) -> replies
    retry_replies: int = 0        #: 429 and 5xx replies
    quota_replies: int = 0        #: 429 replies
    failed_connects: int = 0      #: upstream connects that failed
    lost_after_reply: bool = False  #: an upstream connect failed after the server had answered
    max_queue_ms: int | None = None  #: longest time from a request's first byte to its reply's first byte

    def copy(self) -> ObservedSession:
        return ObservedSession(**{**vars(self), "models": list(self.models),
                                  "models_requested": list(self.models_requested),
                                  "answers": {k: list(v) for k, v in self.answers.items()},
                                  "routes": {k: list(v) for k, v in self.routes.items()},
                                  "statuses": dict(self.statuses)})

    def observe_reply(self, request: _Request | None, model: str | None) -> None:
        """One whole reply naming ``model`` (or none), answering ``request`` (None: a reply the
        bridge could not match with a request it read). Call with the lock held."""
        if request is None or not request.read:
            self.unmatched += 1
        elif request.model is not None and request.model not in self.models_requested:
            self.models_requested.append(request.model)
        if model is None:
            return
        if model not in self.models:
            self.models.append(model)
        if request is None or not request.read or request.model is None:
            return   # no model asked for (or the request unread): nothing inferred
        seen = self.answers.setdefault(request.model, [])
        if model not in seen:
            seen.append(model)
        route = self.routes.setdefault(f"{request.model} {request.target}", [])
        if model not in route:
            route.append(model)
        if not same_model(request.model, model):
            self.substitutions += 1

    def route_changed(self) -> bool:
        return self.lost_after_reply or any(len(v) > 1 for v in self.routes.values())

    def as_dict(self) -> dict:
        """run.json ``session_observed``: the facts ``stratify`` checks against ``health``.

        ``server_id`` is the endpoint the harness forwarded to (once the server answered): the
        harness's fact, which no request can change. ``servers`` are the model names the replies
        gave (the agent chooses which models it asks for, so they identify the server only
        together with ``answers``: requested model -> the reply models that answered it)."""
        return {"endpoint": self.endpoint, "servers": sorted(set(self.models)),
                "server_id": self.endpoint if self.replies else None,
                "models_requested": list(self.models_requested),
                "answers": {k: sorted(v) for k, v in sorted(self.answers.items())},
                "substitutions": self.substitutions,
                "route_changed": self.route_changed(),
                "retries": self.retry_replies + self.failed_connects,
                "max_queue_ms": self.max_queue_ms,
                "quota_state": "exhausted" if self.quota_replies else ("ok" if self.replies else None),
                "replies": self.replies, "statuses": dict(sorted(self.statuses.items())),
                "replies_unmatched": self.unmatched,
                "failed_connects": self.failed_connects, "unreachable_after_reply": self.lost_after_reply}


@dataclass
class _Request:
    """One request on a connection, as the client→server tap read it."""

    start: float                  #: time.monotonic() of its first byte
    method: str = ""
    target: str = ""
    model: str | None = None      #: its body's ``model`` (None: none, or not read)
    read: bool = False            #: the whole request was parsed (head and body under the cap)
    timed: bool = False           #: its reply's first byte has been timed


class _Exchange:
    """One connection's requests, in order, waiting for their replies (HTTP/1.x answers
    pipelined requests in order)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queue: deque[_Request] = deque()
        self.lost = False         #: the tap lost track of the requests: no later reply is matched

    def add(self, req: _Request) -> None:
        with self.lock:
            self.queue.append(req)

    def first_untimed(self) -> _Request | None:
        with self.lock:
            return self.queue[0] if self.queue and not self.queue[0].timed else None

    def answered(self) -> _Request | None:
        """The request a final reply answers (the oldest waiting), or None."""
        with self.lock:
            if self.lost:
                self.queue.clear()
                return None
            return self.queue.popleft() if self.queue else None


def model_requested(body: bytes, headers: dict[str, str]) -> str | None:
    """The ``model`` a request body asks for: a JSON object's one top-level ``model`` string
    (gzip/deflate bodies decoded). None when there is none, the body is not JSON, or it is
    ambiguous (``model`` given twice: a server may read another one than this parser)."""
    enc = headers.get("content-encoding", "").lower()
    try:
        if enc == "gzip":
            body = gzip.decompress(body)
        elif enc == "deflate":
            body = zlib.decompress(body)
        elif enc not in ("", "identity"):
            return None
    except (OSError, zlib.error, EOFError):
        return None
    dup = []

    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        if keys.count("model") > 1:
            dup.append(True)
        return dict(items)

    try:
        obj = json.loads(body.decode("utf-8"), object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if dup or not isinstance(obj, dict):
        return None
    m = obj.get("model")
    return m if isinstance(m, str) and m else None


def _keep_body(m, data: bytes) -> None:
    """A meter keeps a body up to ``METER_BODY_CAP`` bytes; past it, none of it (``too_big``)."""
    if m.too_big or len(m.body) + len(data) > METER_BODY_CAP:
        m.too_big, m.body = True, bytearray()
    else:
        m.body += data


def _head_step(m, too_long: str) -> str | None:
    """Take one HTTP head (request or status line and headers) off ``m.buf`` for a meter: its
    first line, with the headers (lower-case names) in ``m.headers``; None while the head is
    still incomplete. A head over 1 MiB raises ``ValueError(too_long)``."""
    end = m.buf.find(b"\r\n\r\n")
    if end < 0:
        if len(m.buf) > 1 << 20:
            raise ValueError(too_long)
        return None
    head, m.buf = m.buf[:end].decode("latin-1"), m.buf[end + 4:]
    lines = head.split("\r\n")
    m.headers = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        m.headers[k.strip().lower()] = v.strip()
    return lines[0]


def _body_step(m) -> bool:
    """One step through an HTTP body for a meter (the request's or the reply's) holding
    ``state`` (``length`` or ``chunked``), ``buf``, ``need``, ``_keep`` and ``_finish``."""
    if m.state == "length":
        take = min(m.need, len(m.buf))
        m._keep(m.buf[:take])
        m.buf, m.need = m.buf[take:], m.need - take
        if m.need == 0:
            m._finish()
            return True
        return False
    return _chunked_step(m)


def _chunked_step(m) -> bool:
    """One step through a chunked HTTP body (RFC 9112 §7.1) for a meter (the request's or the
    reply's) holding ``buf``, ``need``, ``_keep`` and ``_finish``: ``need`` -1 = at a chunk-size
    line, -2 = trailers up to the empty line, n = n bytes of data and their CRLF. False: more
    bytes are needed."""
    if m.need == -1:                    # at a chunk-size line
        end = m.buf.find(b"\r\n")
        if end < 0:
            return False
        size = int(m.buf[:end].split(b";")[0].strip() or b"0", 16)
        m.buf = m.buf[end + 2:]
        m.need = -2 if size == 0 else size
        return True
    if m.need == -2:                    # trailers up to the empty line
        end = m.buf.find(b"\r\n")
        if end < 0:
            return False
        line, m.buf = m.buf[:end], m.buf[end + 2:]
        if not line:
            m._finish()
        return True
    if len(m.buf) < m.need + 2:
        return False
    m._keep(m.buf[:m.need])
    m.buf, m.need = m.buf[m.need + 2:], -1
    return True


class RequestMeter:
    """Incremental parser of the client→server byte stream of one connection (HTTP/1.x
    requests: ``Content-Length`` or chunked bodies, pipelined ones too). Each request is queued
    on the connection's :class:`_Exchange` at its first byte (the clock of its reply's wait) and
    gets the ``model`` its body asks for once the body is whole (bodies over
    :data:`METER_BODY_CAP` are forwarded, not read). Bytes it cannot parse stop the matching for
    the rest of the connection (its replies are ``unmatched``: nothing inferred from them)."""

    def __init__(self, exchange: _Exchange) -> None:
        self.exchange = exchange
        self.buf = b""
        self.state = "head"           # head | length | chunked | skip
        self.need = 0
        self.body = bytearray()
        self.headers: dict[str, str] = {}
        self.too_big = False
        self.req: _Request | None = None

    def feed(self, data: bytes) -> None:
        if not data or self.state == "skip":
            return
        self.buf += data
        try:
            while self._step():
                pass
        except (ValueError, IndexError):
            with self.exchange.lock:
                self.exchange.lost = True
            self.state, self.buf = "skip", b""

    def close(self) -> None:
        self.state = "skip"

    def _step(self) -> bool:
        if self.state == "head":
            if self.req is None:
                if not self.buf.lstrip(b"\r\n"):
                    self.buf = b""
                    return False
                self.req = _Request(start=time.monotonic())
                self.exchange.add(self.req)
            self.buf = self.buf.lstrip(b"\r\n")
            first = _head_step(self, "request head too long")
            if first is None:
                return False
            method, target, version = first.split(" ")
            if not version.startswith("HTTP/1."):
                raise ValueError("not HTTP/1.x")
            self.req.method, self.req.target = method, target
            self.body, self.too_big = bytearray(), False
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                self.state, self.need = "chunked", -1
            elif int(self.headers.get("content-length", "0") or 0) > 0:
                self.state, self.need = "length", int(self.headers["content-length"])
            else:
                self._finish()
            return True
        if self.state in ("length", "chunked"):
            return _body_step(self)
        return False

    def _keep(self, data: bytes) -> None:
        _keep_body(self, data)

    def _finish(self) -> None:
        req = self.req
        if req is not None:
            model = None if self.too_big or not self.body else model_requested(bytes(self.body), self.headers)
            with self.exchange.lock:
                req.model, req.read = model, not self.too_big
        self.req, self.state, self.body = None, "head", bytearray()


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
        self.request: _Request | None = None   #: the request the reply being read answers

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
            first = _head_step(self, "header too long")
            if first is None:
                return False
            status = int(first.split()[1])
            self._observe_status(status)
            self.body, self.too_big = bytearray(), False
            if 100 <= status < 200:
                return True
            self.request = self.exchange.answered() if self.exchange is not None else None
            if status in (204, 304) or (self.request is not None and self.request.method == "HEAD"):
                self._observe_model(None)
                return True
            if "chunked" in self.headers.get("transfer-encoding", "").lower():
                self.state, self.need = "chunked", -1
            elif "content-length" in self.headers:
                self.state, self.need = "length", int(self.headers["content-length"])
            else:
                self.state = "close"
            return True
        if self.state in ("length", "chunked"):
            return _body_step(self)
        if self.state == "close":
            self._keep(self.buf)
            self.buf = b""
            return False
        return False

    def _keep(self, data: bytes) -> None:
        _keep_body(self, data)

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
        self._observe_model(None if self.too_big or not body else model_in_body(body, ctype))
        self._count(got, parsed=not self.too_big)
        self.state, self.body = "head", bytearray()

    def _observe_model(self, model: str | None) -> None:
        """A whole reply naming ``model``, matched with the request it answers."""
        request, self.request = self.request, None
        if self.session is None:
            return
        if self.exchange is not None and request is not None:
            with self.exchange.lock:      # the request's body may still have been in flight
                request = _Request(**vars(request))
        with self.lock:
            self.session.observe_reply(request, model)

    def _reply_starts(self) -> None:
        """The first byte of a reply arrived: the wait since its request's first byte, on the
        harness's clock."""
        if self.session is None or self.exchange is None:
            return
        req = self.exchange.first_untimed()
        if req is None:
            return
        req.timed = True
        waited = int(round((time.monotonic() - req.start) * 1000))
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
                        RequestMeter(exchange))
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
