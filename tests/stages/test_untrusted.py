"""What the sandbox writes is read as data, never followed: planted symlinks, special files and
huge files in the agent's output folder; and tokens metered from the server's replies, not
taken from the agent's word."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.agent import bridge  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.untrusted import UntrustedFile, copy_untrusted_tree, read_untrusted  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hash_pack, run_agent  # noqa: E402

ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 1000}
NEEDS_BWRAP = pytest.mark.skipif(bool(sandbox.bwrap_problem()) and not os.environ.get("CI"),
                                 reason="the bridge (and its meter) needs the sandbox")


# ---------------------------------------------------------------------------------------------
# unit


@pytest.mark.unit
def test_read_untrusted_refuses_links_special_files_and_big_files(tmp_path: Path) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text('{"tokens_in": 1}')
    (tmp_path / "link").symlink_to(secret)
    (tmp_path / "zero").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_bytes(b"x" * 2048)
    (tmp_path / "ok").write_bytes(b"{}")
    for name, why in (("link", "symbolic link"), ("zero", "symbolic link"), ("fifo", "not a regular file"),
                      ("big", "over the 1024-byte cap")):
        with pytest.raises(UntrustedFile, match=why):
            read_untrusted(tmp_path / name, cap=1024)
    assert read_untrusted(tmp_path / "ok") == b"{}"
    with pytest.raises(FileNotFoundError):
        read_untrusted(tmp_path / "absent")


@pytest.mark.unit
def test_copy_untrusted_tree_keeps_regular_files_only(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "traj.json").write_text("{}")
    (src / "sub" / "a.txt").write_text("a")
    (src / "passwd").symlink_to("/etc/passwd")
    (src / "dirlink").symlink_to("/etc")
    (src / "huge").write_bytes(b"y" * 5000)
    skipped = copy_untrusted_tree(src, tmp_path / "dst", file_cap=4096)
    dst = tmp_path / "dst"
    assert sorted(str(p.relative_to(dst)) for p in dst.rglob("*")) == ["sub", "sub/a.txt", "traj.json"]
    assert any(s.startswith("passwd: a symbolic link") or s.startswith("passwd: is a symbolic link") for s in skipped)
    assert any(s.startswith("dirlink:") for s in skipped) and any(s.startswith("huge:") for s in skipped)


@pytest.mark.unit
def test_meter_reads_json_chunked_and_event_stream_replies() -> None:
    total, lock = bridge.MeteredUsage(), threading.Lock()
    meter = bridge.ResponseMeter(total, lock)
    body = json.dumps({"usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode()
    r1 = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    ev = (b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'
          b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":2}}\n\ndata: [DONE]\n\n')
    chunks = b"".join(b"%x\r\n" % len(ev[i:i + 20]) + ev[i:i + 20] + b"\r\n" for i in range(0, len(ev), 20))
    r2 = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
    r3 = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
    data = r1 + r2 + r3
    for i in range(0, len(data), 7):           # arrives in small pieces
        meter.feed(data[i:i + 7])
    assert (total.tokens_in, total.tokens_out, total.responses, total.with_usage) == (17, 5, 3, 2)


@pytest.mark.unit
def test_a_reply_cut_short_counts_as_a_reply_without_usage() -> None:
    """A client that hangs up inside a streamed reply (before the last chunk, which carries the
    usage) leaves a reply the meter counts without usage; a reply read to its end does not."""
    total, lock = bridge.MeteredUsage(), threading.Lock()
    meter = bridge.ResponseMeter(total, lock)
    body = json.dumps({"usage": {"prompt_tokens": 10, "completion_tokens": 3}}).encode()
    meter.feed(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    meter.feed(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"20\r\ndata: {\"choices\":[{\"delta\":{}}]}\n\n\r\n")
    meter.close()
    assert (total.responses, total.with_usage, total.unparsed, total.tokens_out) == (2, 1, 1, 3)
    done = bridge.MeteredUsage()
    whole = bridge.ResponseMeter(done, lock)
    whole.feed(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    whole.close()  # a keep-alive connection closed between replies: nothing cut short
    assert (done.responses, done.with_usage) == (1, 1)


# ---------------------------------------------------------------------------------------------
# through run_agent


@pytest.fixture()
def sealed(tmp_path: Path) -> dict:
    base = tmp_path / f"secret-{uuid.uuid4().hex[:8]}"
    pack = make_pack(base / "pack", n=1)
    t = pack / "tasks" / "t00"
    s = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), s, base / "results" / "sealed.json")
    return {"base": base, "pack": pack, "sealed": s}


def _attempt(w: dict, command: str, **opts) -> tuple[dict, Path]:
    rd = w["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="auto", hide=(w["pack"], w["base"] / "results"), **opts)
    return run_agent.run_agent(w["sealed"], rd, "planter", "0" * 16, command, {}, 1, ENVELOPE, options), rd


@pytest.mark.sandbox
def test_planted_symlinks_in_the_output_folder_are_not_followed(sealed, tmp_path: Path) -> None:
    host = tmp_path / "host-only.json"
    host.write_text(json.dumps({"tokens_in": 4242, "tokens_out": 1, "steps": 1}))
    steers = tmp_path / "host-steers.jsonl"
    steers.write_text("{}\n" * 7)
    cmd = (f'ln -s {host} "$SEALBENCH_OUT/usage.json"; ln -s /dev/zero "$SEALBENCH_OUT/stamp.json"; '
           f'ln -s {steers} "$SEALBENCH_OUT/steers.jsonl"; ln -s /etc "$SEALBENCH_OUT/etc"; '
           f'mkfifo "$SEALBENCH_OUT/pipe"; echo kept > "$SEALBENCH_OUT/note.txt"')
    rec, rd = _attempt(sealed, cmd)
    assert rec["usage"]["tokens_in"] is None, "a host file was read through the agent's symlink"
    assert rec["stamp"]["server_id"] is None and rec["steer_count"] is None
    problems = " | ".join(rec["report_problems"])
    assert "usage.json" in problems and "symbolic link" in problems
    kept = sorted(p.name for p in (rd / "out").iterdir())
    assert kept == ["note.txt"], kept
    assert not any(p.is_symlink() for p in (rd / "out").rglob("*"))


@pytest.mark.sandbox
def test_a_huge_report_is_not_read(sealed) -> None:
    cmd = 'head -c 3000000 /dev/zero | tr "\\0" " " > "$SEALBENCH_OUT/usage.json"; echo "{}" >> "$SEALBENCH_OUT/usage.json"'
    rec, rd = _attempt(sealed, cmd)
    assert rec["usage"]["tokens_in"] is None
    assert any("usage.json" in p and "cap" in p for p in rec["report_problems"])


class _Server(BaseHTTPRequestHandler):
    def log_message(self, *a) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("slowstream"):  # a long generation: usage only in the last chunk
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for _ in range(60):
                    part = f"data: {json.dumps({'choices': [{'delta': {'content': 'x' * 50}}]})}\n\n".encode()
                    self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
                    self.wfile.flush()
                    time.sleep(0.05)
                last = f"data: {json.dumps({'choices': [], 'usage': {'prompt_tokens': 5, 'completion_tokens': 3000}})}\n\n"
                self.wfile.write(b"%x\r\n" % len(last) + last.encode() + b"\r\n0\r\n\r\n")
            except OSError:  # the client hung up
                pass
            return
        if self.path.endswith("stream"):
            events = [{"choices": [{"delta": {"content": "x"}}]},
                      {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 700}}]
            body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            data = body.encode()
            for i in range(0, len(data), 33):
                part = data[i:i + 33]
                self.wfile.write(b"%x\r\n" % len(part) + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path.endswith("nousage"):   # a reply that says nothing of its usage
            data = json.dumps({"choices": [{"message": {"content": "y" * 4000}}]}).encode()
        else:
            data = json.dumps({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 800}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _through_the_bridge(sealed: dict, paths: tuple[str, ...]) -> dict:
    """An attempt whose agent asks the server for ``paths`` through the bridge, then claims 10
    output tokens in its usage.json."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    client = ("import json, sys, urllib.request as u\n"
              f"for path in {paths!r}:\n"
              f"    r = u.urlopen(u.Request('http://127.0.0.1:{port}' + path, data=b'{{}}',"
              " headers={'Content-Type': 'application/json'}))\n"
              "    r.read()\n")
    (sealed["base"] / "client.py").write_text(client)
    cmd = (f'python {sealed["base"] / "client.py"} && echo \'{{"tokens_in": 1, "tokens_out": 10, "steps": 2}}\''
           ' > "$SEALBENCH_OUT/usage.json"')
    try:
        rec, _ = _attempt(sealed, cmd, endpoint=f"127.0.0.1:{port}",
                          readonly_paths=(sealed["base"] / "client.py",))
    finally:
        srv.shutdown()
    return rec


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_tokens_are_metered_from_the_server_not_taken_from_the_agent(sealed) -> None:
    # the agent claims 10 output tokens; the server's replies say 800 + 700
    rec = _through_the_bridge(sealed, ("/v1/chat/completions", "/v1/chat/completions?stream"))
    assert rec["exit_code"] == 0
    assert rec["tokens_source"] == "metered"
    assert (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (150, 1500)
    assert rec["usage_agent"]["tokens_out"] == 10 and rec["usage"]["steps"] == 2
    assert rec["usage_metered"]["responses"] == 2
    assert rec["over_envelope"] == ["tokens_out 1500 > max_output_tokens 1000"]


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_one_reply_without_usage_does_not_hand_the_count_back_to_the_agent(sealed) -> None:
    """Attack (issue 25 point 6): the agent spends 1500 metered output tokens, adds one reply
    that carries no usage and claims 10. The count stays the bridge's (flagged incomplete, a
    lower bound), so the run is still over the envelope; the claim is kept only as usage_agent."""
    rec = _through_the_bridge(sealed, ("/v1/chat/completions", "/v1/chat/completions?stream", "/v1/nousage"))
    assert rec["exit_code"] == 0
    assert rec["usage_metered"]["responses"] == 3 and rec["usage_metered"]["responses_with_usage"] == 2
    assert rec["tokens_source"] == "metered_incomplete"
    assert (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (150, 1500)
    assert rec["usage_agent"]["tokens_out"] == 10 and rec["usage"]["steps"] == 2
    assert rec["over_envelope"] == ["tokens_out 1500 > max_output_tokens 1000"]


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_incomplete_metered_tokens_under_the_cap_are_flagged_not_within(sealed) -> None:
    """800 metered output tokens and one reply without usage: under the cap as far as the
    bridge can tell, so not over the envelope, but the record says within cannot be confirmed."""
    rec = _through_the_bridge(sealed, ("/v1/nousage", "/v1/chat/completions"))
    assert rec["tokens_source"] == "metered_incomplete"
    assert (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (100, 800)
    assert rec["over_envelope"] == []
    [why] = rec["envelope_unconfirmed"]
    assert "1 of 2 server replies carried no usage" in why and "max_output_tokens 1000" in why, why


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_hanging_up_before_the_usage_chunk_does_not_hide_the_reply(sealed) -> None:
    """Attack: the agent reads a streamed reply's text and hangs up before its last chunk (the
    one that says its usage), so that reply's tokens are never metered. The reply still counts:
    the run's metered tokens are incomplete, and its claim of 10 is not used."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    client = ("import socket\n"
              f"s = socket.create_connection(('127.0.0.1', {port}))\n"
              "s.sendall(b'POST /v1/slowstream HTTP/1.1\\r\\nHost: x\\r\\nContent-Length: 2\\r\\n\\r\\n{}')\n"
              "got = b''\n"
              "while got.count(b'data:') < 5:\n"
              "    got += s.recv(4096)\n"
              "s.close()\n")
    (sealed["base"] / "client.py").write_text(client)
    cmd = (f'python {sealed["base"] / "client.py"} && echo \'{{"tokens_in": 1, "tokens_out": 10}}\''
           ' > "$SEALBENCH_OUT/usage.json"')
    try:
        rec, _ = _attempt(sealed, cmd, endpoint=f"127.0.0.1:{port}", readonly_paths=(sealed["base"] / "client.py",))
    finally:
        srv.shutdown()
    assert rec["exit_code"] == 0
    assert rec["usage_metered"]["responses"] == 1 and rec["usage_metered"]["responses_with_usage"] == 0
    assert rec["tokens_source"] == "metered_incomplete" and rec["usage"]["tokens_out"] == 0
    assert rec["usage_agent"]["tokens_out"] == 10
    assert rec["over_envelope"] == [] and "lower bound" in rec["envelope_unconfirmed"][0]


@pytest.mark.sandbox
def test_without_a_bridge_the_tokens_are_the_agents(sealed) -> None:
    rec, _ = _attempt(sealed, 'echo \'{"tokens_in": 3, "tokens_out": 4}\' > "$SEALBENCH_OUT/usage.json"')
    assert rec["tokens_source"] == "agent" and rec["usage_metered"] is None
    assert rec["usage"]["tokens_out"] == 4


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_an_anthropic_client_is_metered_exactly_cache_tokens_and_side_calls_included(sealed) -> None:
    """Issue 34 point 3, through a real bridge: a client of the Anthropic Messages API (as Claude
    Code talks: a reachability probe, a model listing, ``count_tokens``, two streamed main turns
    with prompt caching, a non-streamed side call). The metered totals are the server's own
    counts exactly: tokens_in = input + cache creation + cache read; the side calls are counted
    apart and do not make the run incomplete."""
    from sealbench.testing.scripted_anthropic import ScriptedAnthropic

    model = "claude-sonnet-4-20250514"
    with ScriptedAnthropic(["pytest -q"], models=[model]) as srv:
        tools = [{"name": "Bash", "description": "run", "input_schema": {
            "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
        first = [{"role": "user", "content": "Fix the bug in calc.py, please."}]
        client = ("import json, urllib.request as u\n"
                  f"base = 'http://127.0.0.1:{srv.port}'\n"
                  "def call(path, body=None, method='POST'):\n"
                  "    data = None if body is None else json.dumps(body).encode()\n"
                  "    r = u.urlopen(u.Request(base + path, data=data, method=method,\n"
                  "                            headers={'Content-Type': 'application/json'}))\n"
                  "    return r.read().decode()\n"
                  "call('/', method='HEAD')\n"
                  "call('/v1/models', method='GET')\n"
                  f"m, tools, first = {model!r}, {tools!r}, {first!r}\n"
                  "call('/v1/messages/count_tokens?beta=true', {'model': m, 'messages': first, 'tools': tools})\n"
                  "out = call('/v1/messages?beta=true', {'model': m, 'stream': True, 'system': 'You fix bugs.',\n"
                  "                                       'tools': tools, 'messages': first, 'max_tokens': 100})\n"
                  "start = json.loads([ln for ln in out.splitlines() if ln.startswith('data:')][0][5:])\n"
                  "use = [json.loads(ln[5:]) for ln in out.splitlines() if 'toolu_' in ln and ln.startswith('data:')]\n"
                  "tid = use[0]['content_block']['id']\n"
                  "turn2 = first + [{'role': 'assistant', 'content': [{'type': 'tool_use', 'id': tid, 'name': 'Bash',\n"
                  "                                                     'input': {'command': 'pytest -q'}}]},\n"
                  "                 {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': tid,\n"
                  "                                               'content': '1 failed'}]}]\n"
                  "call('/v1/messages?beta=true', {'model': m, 'stream': True, 'system': 'You fix bugs.',\n"
                  "                                'tools': tools, 'messages': turn2, 'max_tokens': 100})\n"
                  "call('/v1/messages', {'model': m, 'messages': [{'role': 'user', 'content': 'A title?'}]})\n")
        (sealed["base"] / "client.py").write_text(client)
        cmd = f'python {sealed["base"] / "client.py"}'
        rec, _ = _attempt(sealed, cmd, endpoint=srv.endpoint, readonly_paths=(sealed["base"] / "client.py",))
        server = srv.totals()
    assert rec["exit_code"] == 0, rec
    m = rec["usage_metered"]
    assert server["calls"] == 3 and server["cache_read_input_tokens"] > 0 and server["cache_creation_input_tokens"] > 0
    assert m["tokens_in"] == (server["input_tokens"] + server["cache_creation_input_tokens"]
                              + server["cache_read_input_tokens"])
    assert (m["tokens_out"], m["tokens_cache_creation"], m["tokens_cache_read"]) == (
        server["output_tokens"], server["cache_creation_input_tokens"], server["cache_read_input_tokens"])
    assert (m["responses"], m["responses_side"], m["responses_with_usage"]) == (6, 3, 3)
    assert rec["tokens_source"] == "metered" and rec["usage"]["tokens_in"] == m["tokens_in"]
    assert rec["session_observed"]["answers"] == {model: [model]}


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_a_gemini_client_is_metered_exactly_every_stream_shape(sealed) -> None:
    """Issue 34 point 3, through a real bridge: a client of the Gemini API (as Gemini CLI talks:
    the model in the path, ``streamGenerateContent`` with ``?alt=sse`` and as a JSON array,
    ``generateContent``, ``countTokens``). Each stream chunk carries cumulative ``usageMetadata``:
    the metered totals are the server's final counts exactly (in + out = ``totalTokenCount``)."""
    from sealbench.testing.scripted_gemini import MODEL_VERSION, ScriptedGemini

    with ScriptedGemini(["pytest -q", "ls"]) as srv:
        tools = [{"functionDeclarations": [{"name": "run_shell_command", "parameters": {
            "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]}]
        task = [{"role": "user", "parts": [{"text": "Fix the bug in calc.py, please."}]}]
        client = ("import json, urllib.request as u\n"
                  f"base = 'http://127.0.0.1:{srv.port}/v1beta/models/{MODEL_VERSION}'\n"
                  "def call(verb, body):\n"
                  "    r = u.urlopen(u.Request(base + verb, data=json.dumps(body).encode(),\n"
                  "                            headers={'Content-Type': 'application/json'}))\n"
                  "    return r.read().decode()\n"
                  f"tools, task = {tools!r}, {task!r}\n"
                  "call(':countTokens', {'contents': task})\n"
                  "call(':streamGenerateContent?alt=sse', {'contents': task, 'tools': tools})\n"
                  "done = [{'role': 'model', 'parts': [{'functionCall': {'name': 'run_shell_command',\n"
                  "                                                      'args': {'command': 'pytest -q'}}}]},\n"
                  "        {'role': 'user', 'parts': [{'functionResponse': {'name': 'run_shell_command',\n"
                  "                                                         'response': {'output': '1 failed'}}}]}]\n"
                  "call(':streamGenerateContent', {'contents': task + done, 'tools': tools})\n"
                  "call(':generateContent', {'contents': [{'role': 'user', 'parts': [{'text': 'A title?'}]}]})\n")
        (sealed["base"] / "client.py").write_text(client)
        cmd = f'python {sealed["base"] / "client.py"}'
        rec, _ = _attempt(sealed, cmd, endpoint=f"127.0.0.1:{srv.port}", readonly_paths=(sealed["base"] / "client.py",))
        server = srv.totals()
    assert rec["exit_code"] == 0, rec
    m = rec["usage_metered"]
    assert server["calls"] == 3 and server["cachedContentTokenCount"] > 0 and server["thoughtsTokenCount"] > 0
    assert (m["tokens_in"], m["tokens_out"], m["tokens_cache_read"], m["tokens_reasoning"]) == (
        server["promptTokenCount"], server["candidatesTokenCount"] + server["thoughtsTokenCount"],
        server["cachedContentTokenCount"], server["thoughtsTokenCount"])
    assert m["tokens_in"] + m["tokens_out"] == server["totalTokenCount"]
    assert (m["responses"], m["responses_side"], m["responses_with_usage"]) == (4, 1, 3)
    assert rec["tokens_source"] == "metered"
    assert rec["session_observed"]["answers"] == {MODEL_VERSION: [MODEL_VERSION]}
