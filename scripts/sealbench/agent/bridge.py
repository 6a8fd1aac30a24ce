"""A bridge that lets a sandboxed agent reach exactly one loopback endpoint (an LLM server).

The sandbox has no network of its own but a private loopback. Outside, the harness serves a
unix socket that forwards to the allowed ``host:port`` (:class:`UnixToTcp`). Inside, this file
run as a script (standard library only) listens on the same ``host:port`` of the sandbox's
loopback, forwards every connection to the unix socket, and runs the agent command:

    python -S bridge.py HOST PORT SOCKET -- bash -c COMMAND

Nothing else is reachable: any other address or port is refused by the empty network.

The harness side also *meters* the traffic (:class:`ResponseMeter`): every HTTP response the
server sends back is parsed (``Content-Length``, chunked or read-to-close bodies; JSON, a JSON
array of chunks, or ``text/event-stream``) and its usage summed, in every wire format the
clients speak (:func:`_usage_of`): OpenAI Chat Completions (``usage.prompt_tokens``/
``completion_tokens``, ``prompt_tokens_details.cached_tokens``), OpenAI Responses (``usage``, or
``response.usage`` of the ``response.completed`` event), Anthropic Messages (``usage``, or
``message.usage`` of ``message_start`` then the final ``usage.output_tokens`` of
``message_delta``; the prompt-cache tokens ``cache_creation_input_tokens`` and
``cache_read_input_tokens``) and Gemini (``usageMetadata``, cumulative on every chunk of
``streamGenerateContent``, ``?alt=sse`` or not). A stream's usages are cumulative, so they are
combined into the final count, never summed (:meth:`Usage.latest`). ``tokens_in`` is every
input token the server counted (uncached + cache creation + cache read; the cache parts are
kept beside it), ``tokens_out`` every output token (reasoning/thoughts included): the totals
equal the server's own counts. So the token counts of a sandboxed agent come from what the
server said, not from the agent. A reply that carries no usage, or that the connection cut
short (the client hung up before its end, where a stream says its usage), is counted as a reply
without usage: the run's metered tokens are then incomplete (``run_agent.choose_tokens``), never
replaced by the agent's word. Replies to *side calls* (:func:`side_call`: any method but POST —
model listings, ``HEAD``/``GET`` probes, a stored response fetched again — and POSTs that only
count tokens, e.g. Anthropic's ``/v1/messages/count_tokens``) are counted apart
(``responses_side``): never added to the totals, never a reply without usage.

It also *observes the session* (:class:`ObservedSession`, run.json ``session_observed``): per
reply its HTTP status, the time on the harness's clock from the request's first byte to the
reply's first byte, and the model the reply names (``model``, Gemini's ``modelVersion``, in
Anthropic's ``message_start``, in a Responses event's ``response``); and every upstream
connect that failed (the harness's own fault reaching the server). The client→server direction
is read too (:class:`RequestMeter`: ``Content-Length`` and chunked bodies, pipelined requests
matched with their replies in order), so each reply is paired with the ``model`` its request
asked for (its body's ``model``, or the model in a Gemini path ``/models/<model>:<method>``). Which model is asked for is the agent's choice and never a session problem; what the
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
from urllib.parse import unquote

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


@dataclass(frozen=True)
class Usage:
    """One reply's usage as the server counted it, in one shape whatever its wire format.

    ``tokens_in`` is every input token the server counted: the uncached ones plus those written
    to and read from its prompt cache (``cache_creation`` and ``cache_read`` are parts of it);
    ``tokens_out`` every output token, reasoning ("thoughts") included (``reasoning`` is a part
    of it). So ``tokens_in + tokens_out`` is the server's own total where it gives one."""

    tokens_in: int = 0
    tokens_out: int = 0
    cache_creation: int = 0
    cache_read: int = 0
    reasoning: int = 0

    def latest(self, other: Usage) -> Usage:
        """Two usages of one streamed reply: each field's larger value. The fields a stream
        repeats are cumulative (Anthropic ``message_start`` then ``message_delta``, Gemini's
        ``usageMetadata`` on every chunk, an OpenAI chat total in the last chunk), so this is
        the final count, never a sum."""
        return Usage(*(max(a, b) for a, b in zip(vars(self).values(), vars(other).values())))


@dataclass
class MeteredUsage:
    """What the server's replies said, summed over a session (fields as in :class:`Usage`).

    ``responses`` counts every reply (1xx excluded); ``side`` those that answered a side call
    (:func:`side_call`: token counting, model listings, probes), which generate nothing: never
    added to the totals, never a reply without usage. ``with_usage`` and ``unparsed`` count the
    other replies (generation requests), so :meth:`without_usage` of them carried none."""

    tokens_in: int = 0            #: every input token counted: uncached + cache creation + cache read
    tokens_out: int = 0           #: every output token, reasoning included
    cache_creation: int = 0       #: of tokens_in: written to the prompt cache
    cache_read: int = 0           #: of tokens_in: read from the prompt cache
    reasoning: int = 0            #: of tokens_out: reasoning / thinking, where the server says so
    responses: int = 0            #: HTTP responses seen (1xx excluded)
    with_usage: int = 0           #: generation replies that carried a usage object
    unparsed: int = 0             #: generation replies whose body could not be read for usage
    side: int = 0                 #: replies to side calls (:func:`side_call`), usage or not

    def without_usage(self) -> int:
        """Generation replies that carried no usage (or were cut short): >0 makes the count a
        lower bound."""
        return max(0, self.responses - self.side - self.with_usage)

    def add(self, got: Usage) -> None:
        self.with_usage += 1
        self.tokens_in += got.tokens_in
        self.tokens_out += got.tokens_out
        self.cache_creation += got.cache_creation
        self.cache_read += got.cache_read
        self.reasoning += got.reasoning

    def as_dict(self) -> dict:
        """run.json ``usage_metered``."""
        return {"tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "tokens_cache_creation": self.cache_creation, "tokens_cache_read": self.cache_read,
                "tokens_reasoning": self.reasoning, "responses": self.responses,
                "responses_with_usage": self.with_usage, "responses_unparsed": self.unparsed,
                "responses_side": self.side}


#: Request paths that count or list but never generate (a POST to one is a side call):
#: Anthropic ``/v1/messages/count_tokens``, Gemini ``…/models/<m>:countTokens``, OpenAI
#: ``/v1/responses/input_tokens``, the ``/tokenize`` and ``/detokenize`` of local servers.
_SIDE_PATH = re.compile(r"(?:/count_tokens|:countTokens|/input_tokens|/tokenize|/detokenize)/?$")


def side_call(method: str, target: str) -> bool:
    """Whether a request is a side call, which generates nothing: any method but POST (model
    listings, ``HEAD``/``GET`` probes, a stored response fetched again) or a POST to a counting
    path (:data:`_SIDE_PATH`). An unknown method (the request not read) is not one."""
    if not method:
        return False
    path = target.split("?", 1)[0].split("#", 1)[0]
    return method.upper() != "POST" or _SIDE_PATH.search(path) is not None


#: A Gemini request names its model in the path: ``/v1beta/models/<model>:streamGenerateContent``
#: (Vertex: ``…/publishers/google/models/<model>:generateContent``).
_PATH_MODEL = re.compile(r"/models/([^/:?#]+):[A-Za-z]+$")


def model_in_path(target: str) -> str | None:
    """The model a request's path names (Gemini's ``/models/<model>:<method>``), or None."""
    m = _PATH_MODEL.search(target.split("?", 1)[0])
    return unquote(m.group(1)) if m else None


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
    headers: dict | None = None   #: its headers, credentials redacted (the transcript)
    body: bytes | None = None     #: its body, when read whole (the transcript)


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


def _decoded(body: bytes, headers: dict[str, str]) -> bytes:
    """A body as sent, its gzip/deflate content encoding undone (b"" when it does not decode)."""
    enc = headers.get("content-encoding", "").lower()
    try:
        if enc == "gzip":
            return gzip.decompress(body)
        if enc == "deflate":
            return zlib.decompress(body)
    except (OSError, zlib.error, EOFError):
        return b""
    return body


#: Request headers that carry a credential: never written to a transcript.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie",
                            "proxy-authorization"})


def redacted(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` with every credential's value replaced by ``[redacted]``."""
    return {k: ("[redacted]" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


class Transcript:
    """The model traffic of one run, one JSON line per reply (``transcript.jsonl`` in the run
    folder): the request (method, target with any ``key=`` redacted, headers with credentials
    redacted, body) and the reply (status, headers, body), bodies as text. A body over
    :data:`METER_BODY_CAP` is left out (``body_omitted``). Written outside the sandbox, by the
    harness: what the agent said to its model and what it was told, for a reviewer."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def write(self, request: _Request | None, status: int, headers: dict[str, str], body: bytes | None) -> None:
        def text(b: bytes | None) -> str | None:
            return None if b is None else b.decode("utf-8", "replace")

        target = re.sub(r"([?&]key=)[^&]*", r"\1[redacted]", request.target) if request is not None else None
        line = {"time": round(time.time(), 3),
                "request": None if request is None else {
                    "method": request.method, "target": target, "headers": request.headers or {},
                    "body": text(request.body), "body_omitted": request.body is None and request.read is False},
                "reply": {"status": status, "headers": redacted(headers), "body": text(body),
                          "body_omitted": body is None}}
        data = (json.dumps(line, ensure_ascii=False) + "\n").encode()
        with self._lock:
            with open(self.path, "ab") as fh:
                fh.write(data)


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
            # Gemini names the model in the path (the server reads it there); others in the body
            model = model_in_path(req.target) or (
                None if self.too_big or not self.body else model_requested(bytes(self.body), self.headers))
            with self.exchange.lock:
                req.model, req.read = model, not self.too_big
                req.headers = redacted(self.headers)
                req.body = None if self.too_big else _decoded(bytes(self.body), self.headers)
        self.req, self.state, self.body = None, "head", bytearray()


def _valid(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _count_of(u: dict, key: str, part: str | None = None) -> int:
    """``u[key]`` (or ``u[key][part]``) when it is a whole number >= 0, else 0."""
    v = u.get(key)
    if part is not None:
        v = v.get(part) if isinstance(v, dict) else None
    return v if _valid(v) else 0  # type: ignore[return-value]


def _holders(obj: dict) -> tuple[object, ...]:
    """Where a reply object keeps its ``usage`` and ``model``: itself, ``message`` (Anthropic
    ``message_start``), ``response`` (OpenAI Responses stream events)."""
    return obj, obj.get("message"), obj.get("response")


def _usage_of(obj: object) -> Usage | None:
    """The usage of one reply object (a whole reply, a stream event or chunk), or None when it
    carries none. Each wire format in one shape (:class:`Usage`):

    - OpenAI Chat Completions ``usage``: ``prompt_tokens`` (cached ones included:
      ``prompt_tokens_details.cached_tokens``), ``completion_tokens`` (reasoning included:
      ``completion_tokens_details.reasoning_tokens``);
    - OpenAI Responses ``usage`` (top level, or ``response.usage`` of ``response.completed``):
      ``input_tokens`` (cached ones included: ``input_tokens_details.cached_tokens``),
      ``output_tokens`` (``output_tokens_details.reasoning_tokens``);
    - Anthropic Messages ``usage`` (top level, ``message.usage`` of ``message_start``):
      ``input_tokens`` is the uncached part only, ``cache_creation_input_tokens`` and
      ``cache_read_input_tokens`` are added to it; ``output_tokens``;
    - Gemini ``usageMetadata``: ``promptTokenCount`` (+ ``toolUsePromptTokenCount``; cached ones
      included: ``cachedContentTokenCount``), ``candidatesTokenCount`` + ``thoughtsTokenCount``
      out, so in + out = ``totalTokenCount``."""
    if not isinstance(obj, dict):
        return None
    meta = obj.get("usageMetadata")
    if isinstance(meta, dict):
        thoughts = _count_of(meta, "thoughtsTokenCount")
        return Usage(tokens_in=_count_of(meta, "promptTokenCount") + _count_of(meta, "toolUsePromptTokenCount"),
                     tokens_out=_count_of(meta, "candidatesTokenCount") + thoughts,
                     cache_read=_count_of(meta, "cachedContentTokenCount"), reasoning=thoughts)
    u = next((h["usage"] for h in _holders(obj) if isinstance(h, dict) and isinstance(h.get("usage"), dict)), None)
    if u is None:
        return None
    out = _count_of(u, "completion_tokens") if _valid(u.get("completion_tokens")) else _count_of(u, "output_tokens")
    if _valid(u.get("prompt_tokens")):                              # chat completions
        return Usage(tokens_in=_count_of(u, "prompt_tokens"), tokens_out=out,
                     cache_read=_count_of(u, "prompt_tokens_details", "cached_tokens"),
                     reasoning=_count_of(u, "completion_tokens_details", "reasoning_tokens"))
    created, read = _count_of(u, "cache_creation_input_tokens"), _count_of(u, "cache_read_input_tokens")
    return Usage(tokens_in=_count_of(u, "input_tokens") + created + read,         # anthropic: beside it
                 tokens_out=out, cache_creation=created,
                 cache_read=read + _count_of(u, "input_tokens_details", "cached_tokens"),   # responses: inside it
                 reasoning=_count_of(u, "output_tokens_details", "reasoning_tokens"))


def _model_of(obj: object) -> str | None:
    """The model one reply object names: ``model`` (OpenAI), ``modelVersion`` (Gemini), in
    ``message`` (Anthropic ``message_start``) or ``response`` (OpenAI Responses events)."""
    if not isinstance(obj, dict):
        return None
    for h in _holders(obj):
        if isinstance(h, dict):
            for key in ("model", "modelVersion"):
                m = h.get(key)
                if isinstance(m, str) and m:
                    return m
    return None


def _sse_data(text: str) -> list[str]:
    """The data of each event of an event stream (its ``data:`` lines joined by newlines; an
    event ends at an empty line)."""
    out: list[str] = []
    lines: list[str] = []
    for line in text.splitlines():
        if not line:
            if lines:
                out.append("\n".join(lines))
            lines = []
        elif line.startswith("data:"):
            lines.append(line[6:] if line.startswith("data: ") else line[5:])
    if lines:
        out.append("\n".join(lines))
    return out


def _json_value(data: str) -> object | None:
    """One event's data as JSON, or None (empty, ``[DONE]``, not JSON, or JSON ``null``)."""
    data = data.strip()
    if not data or data == "[DONE]":
        return None
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def reply_objects(body: bytes, content_type: str) -> list[object]:
    """The JSON values one reply body holds, in order: an event stream's events (``[DONE]`` and
    unreadable ones left out; Gemini's ``?alt=sse`` too), the elements of a JSON array (Gemini's
    ``streamGenerateContent`` without ``alt=sse``), or the one JSON value of a plain reply."""
    text = body.decode("utf-8", "replace")
    if "event-stream" in content_type or text.lstrip().startswith(("data:", "event:")):
        out = []
        for data in _sse_data(text):
            # the event's data lines joined; failing that, each line alone (a server that wrote
            # two events without the empty line between them)
            whole = _json_value(data)
            out += [whole] if whole is not None else [v for v in map(_json_value, data.split("\n")) if v is not None]
        return out
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return []
    return list(obj) if isinstance(obj, list) else [obj]


def model_in_body(body: bytes, content_type: str) -> str | None:
    """The server identity one reply names (the first of its objects that names a model:
    :func:`_model_of`), or None."""
    return next((m for m in map(_model_of, reply_objects(body, content_type)) if m is not None), None)


def usage_in_body(body: bytes, content_type: str) -> Usage | None:
    """Usage of one response body (:func:`_usage_of` of each of its objects), or None when none
    carries any. A stream's usages are cumulative (OpenAI chat: the last chunk holds the total;
    Anthropic: ``message_start`` + ``message_delta``; Responses: ``response.completed``; Gemini:
    every chunk), so they are combined field by field into the final count, never summed."""
    found: Usage | None = None
    for obj in reply_objects(body, content_type):
        got = _usage_of(obj)
        if got is not None:
            found = got if found is None else found.latest(got)
    return found


class ResponseMeter:
    """Incremental parser of the server→client byte stream of one connection (HTTP/1.x)."""

    def __init__(self, total: MeteredUsage, lock: threading.Lock, session: ObservedSession | None = None,
                 exchange: _Exchange | None = None, transcript: Transcript | None = None) -> None:
        self.total, self.lock = total, lock
        self.transcript = transcript
        self.status = 0
        self.session, self.exchange = session, exchange
        self.buf = b""
        self.state = "head"           # head | length | chunked | close | skip
        self.need = 0
        self.body = bytearray()
        self.headers: dict[str, str] = {}
        self.too_big = False
        self.request: _Request | None = None   #: the request the reply being read answers
        self.side = False             #: the reply being read answers a side call (:func:`side_call`)

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
            # stream says its usage): a reply without usage, so the count is incomplete (unless
            # it answered a side call, which says no usage anyway)
            if self.transcript is not None and self.state != "head":   # on the transcript, its body left out
                self.transcript.write(self.request, self.status, self.headers, None)
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
            self.status = status
            self._observe_status(status)
            self.body, self.too_big = bytearray(), False
            if 100 <= status < 200:
                return True
            self.request = self.exchange.answered() if self.exchange is not None else None
            if self.request is not None and self.exchange is not None:
                with self.exchange.lock:
                    self.side = side_call(self.request.method, self.request.target)
            if status in (204, 304) or (self.request is not None and self.request.method == "HEAD"):
                if self.transcript is not None:      # a reply without a body: on the transcript too
                    self.transcript.write(self.request, status, self.headers, b"")
                self._observe_model(None)
                if self.side:         # a probe: counted as a side call (no body to read)
                    self._count(None, parsed=True)
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
        body = _decoded(bytes(self.body), self.headers)
        ctype = self.headers.get("content-type", "")
        if self.transcript is not None:
            self.transcript.write(self.request, self.status, self.headers, None if self.too_big else body)
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

    def _count(self, got: Usage | None, parsed: bool) -> None:
        """One reply counted: a side call's apart (its usage, if any, never added: a count or a
        stored response fetched again generated nothing), a generation reply's with its usage."""
        side, self.side = self.side, False
        with self.lock:
            self.total.responses += 1
            if side:
                self.total.side += 1
                return
            if not parsed:
                self.total.unparsed += 1
            if got is not None:
                self.total.add(got)


class UnixToTcp:
    """Outside the sandbox: accept on a unix socket, connect to ``host:port``."""

    def __init__(self, sock_path: str, host: str, port: int, transcript: Path | None = None) -> None:
        self.sock_path, self.host, self.port = sock_path, host, port
        self.transcript = Transcript(transcript) if transcript is not None else None
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
        pipes = _splice(conn, up, ResponseMeter(self.usage, self._lock, self.session, exchange, self.transcript),
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
