"""The bridge reads the requests too: which model is asked for is the agent's choice.

The agent controls its requests. Before the bridge read them, the server identity was the
``model`` of each reply, so an agent that asked for ``gpt-a`` and then ``gpt-b`` on a failing run
(an OpenAI-compatible server answers each with the model asked for) made the harness "observe"
two servers, a route change, and the failing run left the denominator; asking for another model
than ``health.required_server_id`` did the same. Now each reply is matched with the model its
request asked for (:class:`bridge.RequestMeter`): a route change is one requested model answered
under two names (the server's doing), ``server_id`` is the endpoint the harness forwarded to,
and the required server is the endpoint or the model every request for it was answered as.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_observed_exclusions import GOOD_STAMP, HEALTH, rows_of, score  # noqa: E402

from sealbench.agent import bridge  # noqa: E402

pytestmark = pytest.mark.unit

#: (requested model or None, the request's index) -> (status, reply model or None, event stream?)
Answer = Callable[[Any, int], tuple]


def echo(model: Any, n: int) -> tuple:
    """An OpenAI-compatible server with several models: each request answered as asked."""
    return 200, model, False


class _Server:
    """A fake model server on raw sockets: reads HTTP/1.1 requests (Content-Length or chunked
    bodies, pipelined ones in order) and answers each as ``answer`` says."""

    def __init__(self, answer: Answer) -> None:
        self.answer, self.seen, self.n = answer, [], 0
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        f = conn.makefile("rb")
        try:
            while True:
                line = f.readline()
                if not line:
                    return
                if line == b"\r\n":
                    continue
                headers = {}
                while True:
                    h = f.readline()
                    if h in (b"\r\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                if "chunked" in headers.get("transfer-encoding", ""):
                    body = b""
                    while True:
                        size = int(f.readline().split(b";")[0].strip(), 16)
                        if size == 0:
                            f.readline()
                            break
                        body += f.read(size)
                        f.readline()
                else:
                    body = f.read(int(headers.get("content-length") or 0))
                try:
                    model = json.loads(body).get("model")
                except (ValueError, AttributeError):
                    model = None
                with self.lock:
                    n, self.n = self.n, self.n + 1
                    self.seen.append(model)
                status, named, stream = self.answer(model, n)
                obj: dict = {"id": f"r{n}", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
                if named is not None:
                    obj["model"] = named
                if stream:
                    first = {"id": f"r{n}", "model": named, "choices": [{"delta": {"content": "hi"}}]}
                    out = (f"data: {json.dumps(first)}\n\ndata: {json.dumps(obj)}\n\ndata: [DONE]\n\n").encode()
                    ctype = "text/event-stream"
                else:
                    out, ctype = json.dumps(obj).encode(), "application/json"
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
                             % (status, ctype.encode(), len(out)) + out)
        except (OSError, ValueError):
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.sock.close()


def request(body: bytes | dict, chunked: bool = False) -> bytes:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if not chunked:
        return head + b"Content-Length: %d\r\n\r\n" % len(data) + data
    cut = max(1, len(data) // 3)
    parts = [data[:cut], data[cut:2 * cut], data[2 * cut:]]
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"%x;ext=1\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"


def _read_reply(f: Any) -> tuple[int, bytes]:
    status = int(f.readline().split()[1])
    length = 0
    while True:
        line = f.readline()
        if line in (b"\r\n", b""):
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return status, f.read(length)


def session(tmp_path: Path, answer: Answer, requests: list[bytes], *, pipelined: bool = False,
            bytewise: bool = False) -> tuple[dict, list]:
    """Send ``requests`` on one connection through a real bridge to a :class:`_Server`; the
    observed session (``as_dict``) and the models the server read."""
    up = _Server(answer)
    sock = str(tmp_path / "endpoint.sock")
    b = bridge.UnixToTcp(sock, "127.0.0.1", up.port)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)
        s.settimeout(10)
        f = s.makefile("rb")
        if pipelined:
            s.sendall(b"".join(requests))
            replies = [_read_reply(f) for _ in requests]
        else:
            replies = []
            for r in requests:
                if bytewise:   # the tap must parse a request split at any byte
                    for i in range(0, len(r), 7):
                        s.sendall(r[i:i + 7])
                else:
                    s.sendall(r)
                replies.append(_read_reply(f))
        assert all(st == 200 for st, _ in replies), replies
        f.close()
        s.close()
    finally:
        b.close()
        up.close()
    return b.observed().as_dict(), up.seen


def row_of(obs: dict, status: str, **health: Any) -> dict:
    [row] = rows_of([score("t1", status, GOOD_STAMP, session=obs)], dict(HEALTH, **health))
    return row


# ------------------------------------------------------------------ 1. the attack

def test_attack_two_requested_models_on_a_failing_run_do_not_exclude_it(tmp_path: Path) -> None:
    """The agent asks for gpt-a, then gpt-b, on a run it is failing; the server answers each as
    asked. Before: two server identities, ``route_changed``, the failure excluded. Now: the
    agent's choice, recorded; no route change; the run counts as a failure."""
    obs, seen = session(tmp_path, echo, [request({"model": "gpt-a"}), request({"model": "gpt-b"}),
                                         request({"model": "gpt-a"})])
    assert seen == ["gpt-a", "gpt-b", "gpt-a"]
    assert obs["route_changed"] is False, obs
    assert obs.get("models_requested") == ["gpt-a", "gpt-b"]
    assert obs["answers"] == {"gpt-a": ["gpt-a"], "gpt-b": ["gpt-b"]} and obs["substitutions"] == 0
    row = row_of(obs, "fail")
    assert row["status"] == "fail" and row["excluded_reason"] is None, row


@pytest.mark.parametrize("required", ["gpt-a", "endpoint"])
def test_attack_asking_for_another_model_does_not_leave_the_required_server(tmp_path: Path, required: str) -> None:
    """The operator pinned gpt-a (or the endpoint); on a failing run the agent asks only for
    gpt-b. Before: server ``gpt-b`` is not the required one, the failure excluded. Now: the
    endpoint is the server, and no request for gpt-a was answered otherwise: it counts."""
    obs, _ = session(tmp_path, echo, [request({"model": "gpt-b"})])
    req = obs["endpoint"] if required == "endpoint" else required
    row = row_of(obs, "fail", required_server_id=req)
    assert row["status"] == "fail" and row["excluded_reason"] is None, row
    # the runs table's server (and so the holdout's server pin) is the endpoint, whatever is asked
    assert row["server_id"] == obs["endpoint"]


def test_attack_the_same_model_on_two_paths_is_not_a_route_change(tmp_path: Path) -> None:
    """A server that takes the model from the path (``/models/<name>``): the body says gpt-a on
    both, the server answers per path. The route key is the requested model *and* the request
    target, so a differential between the body and the path does not fake a route change."""
    def by_path(model: Any, n: int) -> tuple:
        return 200, ["gpt-a", "gpt-b"][n], False
    reqs = [request({"model": "gpt-a"}).replace(b"/v1/chat/completions", p.encode())
            for p in ("/models/gpt-a", "/models/gpt-b")]
    obs, _ = session(tmp_path, by_path, reqs)
    assert obs["route_changed"] is False, obs


def test_attack_a_model_given_twice_infers_nothing(tmp_path: Path) -> None:
    """``{"model": "gpt-a", "model": "gpt-b"}``: a server may read either one; the bridge reads
    neither (ambiguous), so a reply under the other name is no substitution or route change."""
    body = b'{"model": "gpt-a", "model": "gpt-b"}'
    obs, _ = session(tmp_path, lambda m, n: (200, ["gpt-a", "gpt-b"][n], False), [request(body), request(body)])
    assert obs["models_requested"] == [] and obs["answers"] == {} and obs["route_changed"] is False, obs


# ------------------------------------------------------------------ 2. what the server did (honest)

def test_a_server_that_substitutes_on_some_replies_is_a_route_change(tmp_path: Path) -> None:
    """The provider answers requests for gpt-x as gpt-x-mini on some replies: the server's
    doing, a route change; an honest passing run is excluded."""
    obs, _ = session(tmp_path, lambda m, n: (200, "gpt-x-mini" if n % 2 else m, False),
                     [request({"model": "gpt-x"}) for _ in range(4)])
    assert obs["route_changed"] is True and obs["answers"] == {"gpt-x": ["gpt-x", "gpt-x-mini"]}, obs
    assert obs["substitutions"] == 2
    row = row_of(obs, "pass")
    assert row["status"] == "excluded" and "route change" in row["excluded_reason"], row


def test_a_consistent_substitution_is_caught_by_the_required_model(tmp_path: Path) -> None:
    """Every request for gpt-x answered as gpt-x-mini: recorded as substitutions (within the
    run nothing changed); against ``required_server_id: gpt-x`` it is another server."""
    obs, _ = session(tmp_path, lambda m, n: (200, "gpt-x-mini", False), [request({"model": "gpt-x"})] * 3)
    assert obs["route_changed"] is False and obs["substitutions"] == 3, obs
    assert row_of(obs, "pass")["status"] == "pass"
    row = row_of(obs, "pass", required_server_id="gpt-x")
    assert row["status"] == "excluded" and "'gpt-x-mini'" in row["excluded_reason"], row


def test_the_same_model_answered_consistently_is_healthy(tmp_path: Path) -> None:
    """Requests for gpt-x answered as gpt-x (or as its dated snapshot, an alias resolved):
    healthy under the pin of the model or of the endpoint."""
    for named in ("gpt-x", "gpt-x-2024-08-06"):
        obs, _ = session(tmp_path, lambda m, n: (200, named, False), [request({"model": "gpt-x"})] * 3)
        assert obs["route_changed"] is False and obs["servers"] == [named], obs
        for req in (None, "gpt-x", obs["endpoint"]):
            for status in ("pass", "fail"):
                row = row_of(obs, status, required_server_id=req)
                assert row["status"] == status and row["excluded_reason"] is None, (named, req, row)


def test_a_single_model_server_that_names_itself_is_healthy(tmp_path: Path) -> None:
    """A server that answers whatever is asked under its own name (llama.cpp): consistent per
    requested model, so no route change, whichever names the agent asks for."""
    obs, _ = session(tmp_path, lambda m, n: (200, "srv-1", False),
                     [request({"model": "a"}), request({"model": "b"}), request({"model": "a"})])
    assert obs["route_changed"] is False and obs["servers"] == ["srv-1"], obs
    assert row_of(obs, "fail", required_server_id="srv-1")["status"] == "fail"


# ------------------------------------------------------------------ 3. the wire

def test_streaming_replies_are_matched_with_their_requests(tmp_path: Path) -> None:
    reqs = [request({"model": m, "stream": True}) for m in ("gpt-a", "gpt-b", "gpt-a")]
    obs, _ = session(tmp_path, lambda m, n: (200, m, True), reqs)
    assert obs["route_changed"] is False and obs["answers"] == {"gpt-a": ["gpt-a"], "gpt-b": ["gpt-b"]}, obs
    obs, _ = session(tmp_path, lambda m, n: (200, "gpt-a-mini" if n == 2 else m, True), reqs)
    assert obs["route_changed"] is True and obs["answers"]["gpt-a"] == ["gpt-a", "gpt-a-mini"], obs


@pytest.mark.parametrize("bytewise", [False, True], ids=["whole", "split"])
def test_chunked_request_bodies_are_read(tmp_path: Path, bytewise: bool) -> None:
    reqs = [request({"model": "gpt-a", "messages": [{"role": "user", "content": "x" * 50}]}, chunked=True),
            request({"model": "gpt-b"}, chunked=True), request({"model": "gpt-a"})]
    obs, seen = session(tmp_path, echo, reqs, bytewise=bytewise)
    assert seen == ["gpt-a", "gpt-b", "gpt-a"]
    assert obs["models_requested"] == ["gpt-a", "gpt-b"] and obs["route_changed"] is False, obs
    obs, _ = session(tmp_path, lambda m, n: (200, "gpt-a-mini" if n == 2 else m, False), reqs, bytewise=bytewise)
    assert obs["route_changed"] is True, obs


def test_pipelined_requests_are_matched_in_order(tmp_path: Path) -> None:
    reqs = [request({"model": "gpt-a"}), request({"model": "gpt-b"}, chunked=True), request({"model": "gpt-a"}),
            request({"model": "gpt-c"})]
    obs, seen = session(tmp_path, echo, reqs, pipelined=True)
    assert seen == ["gpt-a", "gpt-b", "gpt-a", "gpt-c"]
    assert obs["replies"] == 4 and obs["replies_unmatched"] == 0
    assert obs["route_changed"] is False and obs["substitutions"] == 0, obs
    assert obs["answers"] == {"gpt-a": ["gpt-a"], "gpt-b": ["gpt-b"], "gpt-c": ["gpt-c"]}
    obs, _ = session(tmp_path, lambda m, n: (200, "gpt-a-mini" if n == 2 else m, False), reqs, pipelined=True)
    assert obs["route_changed"] is True and obs["answers"]["gpt-a"] == ["gpt-a", "gpt-a-mini"], obs


def test_a_request_body_that_is_not_json_infers_nothing(tmp_path: Path) -> None:
    """No model asked for: the replies are counted, no substitution or route change is
    inferred from them, nothing crashes; a later JSON request on the connection is read."""
    obs, _ = session(tmp_path, lambda m, n: (200, ["srv-1", "srv-2", "gpt-a"][n], False),
                     [request(b"\xff\x00not json"), request(b"[1, 2"), request({"model": "gpt-a"})])
    assert obs["replies"] == 3 and obs["models_requested"] == ["gpt-a"], obs
    assert obs["answers"] == {"gpt-a": ["gpt-a"]} and obs["route_changed"] is False and obs["substitutions"] == 0
    assert obs["servers"] == ["gpt-a", "srv-1", "srv-2"]


def test_a_request_body_over_the_cap_is_forwarded_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A body over METER_BODY_CAP (as Content-Length or chunked) reaches the server whole; its
    model is not read (nothing inferred from its reply), and the next request is read again."""
    monkeypatch.setattr(bridge, "METER_BODY_CAP", 200)
    big = {"model": "gpt-a", "messages": [{"role": "user", "content": "x" * 1000}]}
    obs, seen = session(tmp_path, lambda m, n: (200, ["other", "other-2", "gpt-a", "gpt-a"][n], False),
                        [request(big), request(big, chunked=True), request({"model": "gpt-a"}),
                         request({"model": "gpt-a"})])
    assert seen == ["gpt-a"] * 4
    assert obs["replies"] == 4 and obs["replies_unmatched"] == 2, obs
    assert obs["answers"] == {"gpt-a": ["gpt-a"]} and obs["route_changed"] is False and obs["substitutions"] == 0


def test_same_model_rule() -> None:
    assert bridge.same_model("gpt-4o", "gpt-4o-2024-08-06") and bridge.same_model("claude-x", "claude-x-20241022")
    assert bridge.same_model("llama3", "llama3:latest") and bridge.same_model("GPT-X", "gpt-x")
    assert not bridge.same_model("gpt-x", "gpt-x-mini") and not bridge.same_model("gpt-x", "gpt-y")
