"""Issue 34 point 4: a real provider without the key inside the sandbox.

An agent with ``upstream`` and ``key_env`` reaches a local upstream standing in for the provider
through the bridge and the gateway (sealbench.agent.gateway). The attack: an agent that prints
its environment and searches every file it can read for the key finds nothing; the key reaches
the upstream, in the provider's header, and the client's dummy key does not.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_untrusted import NEEDS_BWRAP, _attempt, sealed  # noqa: F401  (the fixture)

from sealbench.agent.gateway import Gateway, GatewayError, upstream_key

KEY = "sk-live-7f3a9c0e5d1b4a2f-provider-key"
KEY_ENV = "FAKE_PROVIDER_KEY"


class _Upstream(BaseHTTPRequestHandler):
    """The provider: records each request's path and headers; answers an Anthropic-style reply."""

    seen: list[dict] = []

    def log_message(self, *_a) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                "body": body.decode()})
        data = json.dumps({"type": "message", "model": "m-1", "content": [{"type": "text", "text": "ok"}],
                           "usage": {"input_tokens": 12, "output_tokens": 3}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture()
def upstream():
    _Upstream.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", _Upstream.seen
    srv.shutdown()


#: The agent: sends one request with the preset's dummy key, then looks for the key everywhere it can.
SEEKER = r'''
import json, os, sys, urllib.request as u
r = u.urlopen(u.Request("http://127.0.0.1:4917/v1/messages", data=b'{"model": "m-1"}',
              headers={"Content-Type": "application/json", "x-api-key": "dummy"}))
reply = r.read().decode()
found = [k for k, v in os.environ.items() if KEY in v or "FAKE_PROVIDER" in k]
# every file it can read, but the system's and the interpreter's trees (the host's installation)
system = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/proc", "/sys", "/dev", "/opt", sys.prefix, sys.base_prefix}
for root, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(root, d) not in system]
    for f in files:
        p = os.path.join(root, f)
        try:
            with open(p, "rb") as fh:
                if KEY.encode() in fh.read(1 << 20):
                    found.append(p)
        except OSError:
            pass
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            if KEY.encode() in open(f"/proc/{pid}/environ", "rb").read() + open(f"/proc/{pid}/cmdline", "rb").read():
                found.append(f"/proc/{pid}")
        except OSError:
            pass
print(json.dumps({"found": found, "reply": reply}))
'''


@pytest.mark.sandbox
@NEEDS_BWRAP
def test_the_sandbox_holds_no_key_and_the_key_reaches_the_upstream(sealed, upstream, monkeypatch) -> None:  # noqa: F811
    url, seen = upstream
    monkeypatch.setenv(KEY_ENV, KEY)
    script = sealed["base"] / "seeker.py"
    script.write_text(f"KEY = {KEY!r}\n" + SEEKER)
    rec, rd = _attempt(sealed, f"python {script}", endpoint="127.0.0.1:4917", upstream=url, key_env=KEY_ENV,
                       api="anthropic-messages", readonly_paths=(script,))
    out = (rd / "agent.stdout").read_text()
    said = json.loads(out.strip().splitlines()[-1])
    # the seeker's own source names the key (it must know what to look for): that file aside, none
    assert [p for p in said["found"] if p != str(script)] == [], said["found"]
    assert '"usage"' in said["reply"]
    [req] = seen
    assert req["headers"]["x-api-key"] == KEY and "authorization" not in req["headers"], req["headers"]
    assert req["path"] == "/v1/messages"
    # metered through the bridge as any server's reply; the session's server is the provider
    assert (rec["usage"]["tokens_in"], rec["usage"]["tokens_out"]) == (12, 3), rec["usage"]
    assert rec["session_observed"]["endpoint"] == url
    # the conversation is kept beside the run, credentials redacted (issue 34 point 5)
    [line] = [json.loads(x) for x in (rd / "transcript.jsonl").read_text().splitlines()]
    assert line["request"]["target"] == "/v1/messages" and line["request"]["body"] == '{"model": "m-1"}'
    assert line["request"]["headers"]["x-api-key"] == "[redacted]" and '"usage"' in line["reply"]["body"]
    assert line["reply"]["status"] == 200 and KEY not in (rd / "transcript.jsonl").read_text()
    # the seeker finds a key that is inside: the same agent given the key in its env:, as a recipe
    # that sends it from the sandbox would
    from sealbench.stages import run_agent

    options = run_agent.RunOptions(sandbox_mode="auto", hide=(sealed["pack"], sealed["base"] / "results"),
                                   endpoint="127.0.0.1:4917", upstream=url, readonly_paths=(script,))
    run_agent.run_agent(sealed["sealed"], rd.with_name("naive"), "planter", "0" * 16, f"python {script}",
                        {"ANTHROPIC_API_KEY": KEY}, 1, {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 1000},
                        options)
    naive = json.loads((rd.with_name("naive") / "agent.stdout").read_text().strip().splitlines()[-1])
    assert [p for p in naive["found"] if p != str(script)], naive


@pytest.mark.unit
def test_the_gateway_puts_the_key_in_each_providers_header_and_drops_the_clients() -> None:
    for api, (name, value) in {"anthropic-messages": ("x-api-key", KEY), "gemini": ("x-goog-api-key", KEY),
                               "openai-responses": ("authorization", f"Bearer {KEY}")}.items():
        gw = Gateway("https://api.example.com/base", KEY, api)
        try:
            headers = gw._headers({"Authorization": "Bearer dummy", "x-api-key": "dummy", "Host": "127.0.0.1:4000",
                                   "Content-Type": "application/json"})
            assert headers == {"Content-Type": "application/json", name: value}, headers
            assert gw._path("/v1beta/models/m:streamGenerateContent?alt=sse&key=dummy") == \
                "/base/v1beta/models/m:streamGenerateContent?alt=sse"
        finally:
            gw.close()


@pytest.mark.unit
def test_a_missing_key_stops_the_run_naming_the_variable(monkeypatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(GatewayError, match=f"export {KEY_ENV}="):
        upstream_key(KEY_ENV)
    assert upstream_key(None) is None


@pytest.mark.unit
def test_every_reply_the_bridge_counts_is_on_the_transcript(tmp_path) -> None:
    """Found by the clients tier: Claude Code's startup ``HEAD /`` was counted as a reply (a side
    call) but never written: a transcript line per counted reply, a bodiless one too."""
    import threading

    from sealbench.agent import bridge

    ex, lock, total = bridge._Exchange(), threading.Lock(), bridge.MeteredUsage()
    tr = bridge.Transcript(tmp_path / "t.jsonl")
    req, rep = bridge.RequestMeter(ex), bridge.ResponseMeter(total, lock, bridge.ObservedSession(), ex, tr)
    body = b'{"model": "m", "usage": {"input_tokens": 3, "output_tokens": 2}}'
    req.feed(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
    rep.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    req.feed(b'POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: dummy\r\nContent-Length: 2\r\n\r\n{}')
    rep.feed(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    lines = [json.loads(x) for x in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert total.responses == len(lines) == 2, (total, lines)
    assert [ln["request"]["method"] for ln in lines] == ["HEAD", "POST"]
    assert lines[1]["request"]["headers"]["x-api-key"] == "[redacted]" and lines[1]["reply"]["body"] == body.decode()
