"""A scripted Anthropic Messages API server for offline tests of Claude Code (and other clients
of the Anthropic API).

Standard library only (``http.server`` + ``threading``); binds 127.0.0.1 only (port 0 picks a
free port). Serves:

- ``POST /v1/messages`` (any query, e.g. Claude Code's ``?beta=true``), non-streaming (one JSON
  ``message``) and streaming (SSE: ``message_start`` whose ``message.usage`` holds
  ``input_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and
  ``output_tokens`` = 1 as the real API does; ``content_block_start`` / ``content_block_delta``
  (``text_delta``, or ``input_json_delta`` for a ``tool_use`` block, its JSON in two pieces) /
  ``content_block_stop``; ``message_delta`` with ``stop_reason`` and the final
  ``usage.output_tokens``; ``message_stop``);
- ``POST /v1/messages/count_tokens``: ``{"input_tokens": N}`` (N as a reply would report it);
- ``GET /v1/models`` and ``GET /v1/models/{id}``; ``GET``/``HEAD`` of ``/`` (reachability probes);
  anything else: 404 with an Anthropic error object. Every request is logged (``requests``).

A request for a model not in ``models`` (when given) gets the API's 404 ``not_found_error``.

It plays a fixed list of shell commands, one per model turn of the MAIN conversation, then an
``end_turn`` text reply (``FINAL_TEXT``) for every later turn. A request is the main
conversation when its ``tools`` hold a shell tool: the tool named ``Bash`` (or ``bash``), else
the first whose name contains "bash" or "shell", else the first whose input schema has a
``command`` property. The reply calls that tool with ``{"command": ...}``. A ``None`` entry is a
turn with text and no tool call: the client takes it as the final answer.

Any other request (no tools, no shell tool: titles, summaries, topic checks, quota probes sent
to the small fast model) is a SIDE call: a short text reply, ``end_turn``, and the script does
not advance.

The turn is derived from the request itself, not from a global counter, so several clients can
run against one server at once: turn = number of ``tool_result`` blocks in the request's
messages (each scripted turn adds one ``tool_use`` and the client answers it with one
``tool_result``). A conversation is keyed by the text of its first user message.

Usage is deterministic. Token counts are characters // 4: S = the request's ``system`` and
``tools``, m_i = message i (its content as JSON; at least 1). A reply reports, with n messages:

- side call: ``input_tokens`` = S + all messages, no cache tokens;
- main call: ``cache_read_input_tokens`` = S + m_0..m_{n-3} (the prefix the previous turn cached;
  0 on turn 0), ``cache_creation_input_tokens`` = (S + m_0..m_{n-2}) - cache read (what this turn
  newly caches: on turn 0 the system prompt and tools), ``input_tokens`` = m_{n-1} (the uncached
  tail). So input + creation + read = S + all messages, creation > 0 on every main call and
  read > 0 from turn 1 on;
- ``output_tokens`` = characters of the reply (text + tool input JSON) // 4, at least 1.

What was reported is recorded per call (``calls``: kind main/side, model, turn, command,
observation = the client's last ``tool_result`` text, stream, the four numbers) and summed
(``totals()``, ``totals("main")``, ``totals("side")``, ``conversations()``) so a test can compare it with what the client or a meter reports.

Standalone::

    python -m sealbench.testing.scripted_anthropic --port 8766 --script cmds.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

from .loopback import JSONHandler, LoopbackServer

FINAL_TEXT = "Done: the scripted work is complete."
SIDE_TEXT = "Scripted side reply"
USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
SHELL_NAMES = ("Bash", "bash")
#: request headers the log keeps (values of secrets are reduced to whether they were sent)
LOGGED_HEADERS = ("anthropic-version", "anthropic-beta", "user-agent", "x-app", "content-type",
                  "anthropic-dangerous-direct-browser-access", "x-stainless-retry-count")
SECRET_HEADERS = ("x-api-key", "authorization")


def _text_of(content: Any) -> str:
    """The text of a message's content (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _tokens(obj: Any) -> int:
    return len(obj if isinstance(obj, str) else json.dumps(obj, sort_keys=True)) // 4


def shell_tool(tools: Any) -> str | None:
    """The name of the shell tool among a request's ``tools``, or None."""
    if not isinstance(tools, list):
        return None
    named = [t for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)]
    for t in named:
        if t["name"] in SHELL_NAMES:
            return t["name"]
    for t in named:
        if "bash" in t["name"].lower() or "shell" in t["name"].lower():
            return t["name"]
    for t in named:
        props = (t.get("input_schema") or {}).get("properties") or {}
        if isinstance(props, dict) and "command" in props:
            return t["name"]
    return None


def last_observation(messages: Sequence[dict]) -> str | None:
    """The text of the last ``tool_result`` block (what the client sent back for the last
    command), or None."""
    for m in reversed(messages):
        for b in reversed(m.get("content") if isinstance(m.get("content"), list) else []):
            if isinstance(b, dict) and b.get("type") == "tool_result":
                c = b.get("content")
                return c if isinstance(c, str) else _text_of(c)
    return None


def tool_results(messages: Sequence[dict]) -> int:
    """How many ``tool_result`` blocks the messages hold (the turn of a scripted conversation)."""
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")


class ScriptedAnthropic(LoopbackServer):
    """The server. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, commands: Sequence[str | None], port: int = 0, models: Sequence[str] | None = None,
                 final_text: str = FINAL_TEXT) -> None:
        self.commands, self.final_text = list(commands), final_text
        self.models = list(models) if models else None
        self.calls: list[dict] = []
        self.requests: list[dict] = []
        super().__init__(_Handler, port)

    @property
    def base_url(self) -> str:
        """What ``ANTHROPIC_BASE_URL`` should be (the client appends ``/v1/messages``)."""
        return f"http://127.0.0.1:{self.port}"

    # -- what was reported -----------------------------------------------------------------
    def totals(self, kind: str | None = None, calls: Sequence[dict] | None = None) -> dict[str, int]:
        """Sums of the reported usage over ``calls`` (default: all), of one ``kind`` ("main",
        "side") when given."""
        calls = [c for c in (self.calls if calls is None else calls) if kind is None or c["kind"] == kind]
        out = {k: sum(c[k] for c in calls) for k in USAGE_KEYS}
        out["calls"] = len(calls)
        return out

    def conversations(self) -> dict[str, dict]:
        """Per main conversation (key: digest of its first user message): the task text, the
        last turn served, whether the script was played to its end, and totals."""
        groups: dict[str, list[dict]] = {}
        for c in self.calls:
            if c["kind"] == "main":
                groups.setdefault(c["conversation"], []).append(c)
        return {k: {"task": calls[0]["task"], "last_turn": max(c["turn"] for c in calls),
                    "finished": any(c["command"] is None and c["turn"] >= len(self.commands) for c in calls),
                    **self.totals(calls=calls)} for k, calls in groups.items()}

    def finished(self) -> bool:
        """Whether some main conversation got its final ``end_turn`` reply after the whole script."""
        return any(v["finished"] for v in self.conversations().values())

    # -- the script ------------------------------------------------------------------------
    def usage(self, body: dict, main: bool) -> dict[str, int]:
        """Input-side usage of a request (``output_tokens`` left out), see the module doc."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        s = _tokens(body.get("system") or "") + _tokens(body.get("tools") or [])
        parts = [max(1, _tokens(m.get("content") or "")) for m in messages]
        if not main:
            return {"input_tokens": s + sum(parts), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        n = len(parts)
        read = s + sum(parts[:n - 2]) if tool_results(messages) else 0
        created = s + sum(parts[:n - 1]) - read
        return {"input_tokens": parts[-1] if parts else 0, "cache_creation_input_tokens": created,
                "cache_read_input_tokens": read}

    def reply(self, body: dict) -> tuple[list[dict], str, dict[str, int]]:
        """(content blocks, stop reason, usage) for one request; records the call."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        users = [m for m in messages if m.get("role") == "user"]
        task = _text_of(users[0].get("content")) if users else ""
        tool = shell_tool(body.get("tools"))
        main = tool is not None
        turn = tool_results(messages) if main else 0
        cmd = self.commands[turn] if main and turn < len(self.commands) else None
        if not main:
            blocks: list[dict] = [{"type": "text", "text": SIDE_TEXT}]
        elif cmd is None:
            blocks = [{"type": "text", "text": self.final_text if turn >= len(self.commands)
                       else f"Turn {turn}: no command this turn."}]
        else:
            blocks = [{"type": "text", "text": f"Turn {turn} of the script."},
                      {"type": "tool_use", "id": f"toolu_{turn:02d}_{uuid.uuid4().hex[:12]}", "name": tool,
                       "input": {"command": cmd}}]
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        out_chars = sum(len(b.get("text", "")) + (len(json.dumps(b["input"])) if "input" in b else 0) for b in blocks)
        usage = {**self.usage(body, main), "output_tokens": max(1, out_chars // 4)}
        with self.lock:
            self.calls.append({"kind": "main" if main else "side", "model": body.get("model"),
                               "conversation": hashlib.sha256(task.encode()).hexdigest()[:16], "task": task,
                               "turn": turn, "command": cmd,
                               "observation": last_observation(messages) if main else None,
                               "stream": bool(body.get("stream")),
                               "tools": len(body.get("tools") or []), **usage})
        return blocks, stop, usage


def _error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Handler(JSONHandler):

    @property
    def fake(self) -> ScriptedAnthropic:
        return self.server.owner  # type: ignore[attr-defined]

    def _log(self, body: Any = None) -> None:
        entry: dict[str, Any] = {"method": self.command, "path": self.path}
        entry["headers"] = {h: self.headers[h] for h in LOGGED_HEADERS if self.headers.get(h) is not None}
        entry["auth"] = sorted(h for h in SECRET_HEADERS if self.headers.get(h))
        if isinstance(body, dict):
            entry["model"] = body.get("model")
            entry["stream"] = bool(body.get("stream"))
            entry["tools"] = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
            entry["messages"] = len(body.get("messages") or [])
            entry["max_tokens"] = body.get("max_tokens")
        with self.fake.lock:
            self.fake.requests.append(entry)

    def _json(self, code: int, obj: dict | None, head: bool = False) -> None:
        data = json.dumps(obj).encode() if obj is not None else b""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_scripted_{uuid.uuid4().hex[:16]}")
        self.end_headers()
        if not head:
            self.wfile.write(data)

    def _model_info(self, model: str) -> dict:
        return {"type": "model", "id": model, "display_name": model, "created_at": "2025-01-01T00:00:00Z"}

    def do_HEAD(self) -> None:
        self._log()
        self._json(200, {}, head=True)

    def do_GET(self) -> None:
        self._log()
        path = self.path.split("?")[0].rstrip("/")
        known = self.fake.models or ["scripted-model"]
        if path == "/v1/models":
            data = [self._model_info(m) for m in known]
            self._json(200, {"data": data, "has_more": False, "first_id": known[0], "last_id": known[-1]})
        elif path.startswith("/v1/models/"):
            model = path[len("/v1/models/"):]
            if self.fake.models is None or model in self.fake.models:
                self._json(200, self._model_info(model))
            else:
                self._json(404, _error("not_found_error", f"model: {model}"))
        elif path == "":
            self._json(200, {})
        else:
            self._json(404, _error("not_found_error", f"no route {self.path}"))

    def do_POST(self) -> None:
        body = self._body()
        self._log(body)
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            self._json(404, _error("not_found_error", f"no route {self.path}"))
            return
        if not isinstance(body, dict):
            self._json(400, _error("invalid_request_error", "body is not a JSON object"))
            return
        model = body.get("model")
        if self.fake.models is not None and model not in self.fake.models:
            self._json(404, _error("not_found_error", f"model: {model}"))
            return
        if path.endswith("/count_tokens"):
            u = self.fake.usage(body, main=False)
            self._json(200, {"input_tokens": u["input_tokens"]})
            return
        blocks, stop, usage = self.fake.reply(body)
        msg_id = f"msg_scripted_{uuid.uuid4().hex[:20]}"
        message = {"id": msg_id, "type": "message", "role": "assistant", "model": model or "scripted-model",
                   "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        if not body.get("stream"):
            self._json(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", f"req_scripted_{uuid.uuid4().hex[:16]}")
        self.end_headers()
        self.close_connection = True
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events: list[tuple[str, dict]] = [("message_start", {"type": "message_start", "message": start})]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                delta = {"type": "text_delta", "text": b["text"]}
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
                js = json.dumps(b["input"])
                for piece in (js[:len(js) // 2], js[len(js) // 2:]):
                    delta = {"type": "input_json_delta", "partial_json": piece}
                    events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                           "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        for name, ev in events:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode())
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.testing.scripted_anthropic", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--script", required=True, help="JSON file: a list of shell commands (null = a turn without one)")
    ap.add_argument("--model", action="append", help="accept only these models (repeatable; default: any)")
    ap.add_argument("--log", action="store_true", help="print every request (method, path, headers, model, tools)")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        commands = json.load(f)
    if not isinstance(commands, list) or not all(c is None or isinstance(c, str) for c in commands):
        ap.error("--script must hold a JSON list of strings (or null)")
    fake = ScriptedAnthropic(commands, args.port, args.model)
    print(f"scripted_anthropic: {len(commands)} commands, serving {fake.base_url}", flush=True)

    def report() -> None:
        if args.log:
            for r in fake.requests:
                print("scripted_anthropic: request", json.dumps(r), flush=True)
        print("scripted_anthropic: reported main", json.dumps(fake.totals("main")),
              "side", json.dumps(fake.totals("side")), flush=True)

    fake.serve_until_stopped(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
