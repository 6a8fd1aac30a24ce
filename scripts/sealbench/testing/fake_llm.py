"""A scripted OpenAI-compatible chat server for offline tests of LLM agent clients.

Standard library only (``http.server`` + ``threading``); binds 127.0.0.1 only (port 0 picks a
free port). Serves ``POST /v1/chat/completions`` and ``POST /chat/completions``, non-streaming
and streaming (SSE ``data:`` chunks ending with ``data: [DONE]``; the last chunk before it
carries ``usage`` whether or not ``stream_options.include_usage`` was asked for).

It plays a fixed list of shell commands, one per model turn, then the finish command of
mini-swe-agent (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``) for every later turn:

- ``tool`` mode: each reply calls the ``bash`` tool, ``{"command": ...}`` (mini's ``mini.yaml``
  with the default ``litellm`` model class);
- ``text`` mode: each reply is a THOUGHT line and one fenced block ```` ```mswea_bash_command ````
  (mini's ``mini_textbased.yaml`` with ``--model-class litellm_textbased``; its action regex is
  ```` ```mswea_bash_command\\s*\\n(.*?)\\n``` ````). ``fence="bash"`` gives plain ```` ```bash ````.

A ``None`` entry in the script is a malformed turn (no tool call, no fenced block): the client
should answer with a format error and carry on.

The turn is derived from the request itself, not from a global counter, so several clients can
run against one server at once: turn = number of ``user``/``tool`` messages after the first user
message (each turn of a one-action agent adds exactly one observation or one format-error
message). A conversation is keyed by its first user message (the task text).

Every reply carries ``usage``: ``prompt_tokens`` = characters of the request's messages // 4,
``completion_tokens`` = characters of the reply (content + tool arguments) // 4 (each at least 1).
What was reported is recorded per call (``calls``) and summed (``totals()``, ``conversations()``)
so a test can compare it with what the client reports.

Standalone::

    python -m sealbench.testing.fake_llm --port 8765 --mode tool --script cmds.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from .loopback import JSONHandler, LoopbackServer

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
MODES = ("tool", "text")
PATHS = ("/v1/chat/completions", "/chat/completions")


def _text_of(content: Any) -> str:
    """The text of a message's content (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def prompt_tokens(messages: Sequence[dict]) -> int:
    chars = 0
    for m in messages:
        chars += len(_text_of(m.get("content")))
        if m.get("tool_calls"):
            chars += len(json.dumps(m["tool_calls"], sort_keys=True))
    return max(1, chars // 4)


class FakeLLM(LoopbackServer):
    """The server. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, commands: Sequence[str | None], mode: str = "tool", port: int = 0,
                 fence: str = "mswea_bash_command") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.commands, self.mode, self.fence = list(commands), mode, fence
        self.calls: list[dict] = []
        super().__init__(_Handler, port)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- what was reported -----------------------------------------------------------------
    def totals(self, calls: Sequence[dict] | None = None) -> dict[str, int]:
        calls = self.calls if calls is None else calls
        return {"prompt_tokens": sum(c["prompt_tokens"] for c in calls),
                "completion_tokens": sum(c["completion_tokens"] for c in calls), "calls": len(calls)}

    def conversations(self) -> dict[str, dict]:
        """Per conversation (key: digest of its first user message): the task text and totals."""
        groups: dict[str, list[dict]] = {}
        for c in self.calls:
            groups.setdefault(c["conversation"], []).append(c)
        return {k: {"task": calls[0]["task"], **self.totals(calls)} for k, calls in groups.items()}

    # -- the script ------------------------------------------------------------------------
    def reply(self, body: dict) -> tuple[dict, dict]:
        """(assistant message, usage) for one request; records the call."""
        messages = body.get("messages") or []
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        first = users[0] if users else len(messages)
        task = _text_of(messages[first].get("content")) if users else ""
        turn = sum(1 for m in messages[first + 1:] if m.get("role") in ("user", "tool"))
        cmd = self.commands[turn] if turn < len(self.commands) else SUBMIT
        if cmd is None:
            msg: dict = {"role": "assistant", "content": f"THOUGHT: turn {turn}; I forgot to give a command."}
        elif self.mode == "tool":
            msg = {"role": "assistant", "content": f"THOUGHT: turn {turn} of the script.",
                   "tool_calls": [{"id": f"call_{turn}", "type": "function",
                                   "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}]}
        else:
            msg = {"role": "assistant",
                   "content": f"THOUGHT: turn {turn} of the script.\n\n```{self.fence}\n{cmd}\n```"}
        out_chars = len(msg["content"]) + sum(len(t["function"]["arguments"]) for t in msg.get("tool_calls", []))
        usage = {"prompt_tokens": prompt_tokens(messages), "completion_tokens": max(1, out_chars // 4)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        with self.lock:
            self.calls.append({"conversation": hashlib.sha256(task.encode()).hexdigest()[:16], "task": task,
                               "turn": turn, "command": cmd, "stream": bool(body.get("stream")), **usage})
        return msg, usage


class _Handler(JSONHandler):

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "sealbench"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        fake: FakeLLM = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.split("?")[0] not in PATHS:
            self._json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"message": "body is not JSON"}})
            return
        msg, usage = fake.reply(body)
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        base = {"id": f"chatcmpl-fake-{len(fake.calls)}", "created": int(time.time()),
                "model": body.get("model") or "fake"}
        if not body.get("stream"):
            self._json(200, {**base, "object": "chat.completion", "usage": usage,
                             "choices": [{"index": 0, "message": msg, "finish_reason": finish}]})
            return
        # streaming: role+content, the tool call (whole), the finish, then usage, then [DONE]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas = [{"role": "assistant", "content": msg["content"]}]
        if msg.get("tool_calls"):
            deltas.append({"tool_calls": [{"index": i, **t} for i, t in enumerate(msg["tool_calls"])]})
        events = [{**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        events.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        events.append({**chunk, "choices": [], "usage": usage})
        for ev in events:
            self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.testing.fake_llm", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--mode", choices=MODES, default="tool")
    ap.add_argument("--script", required=True, help="JSON file: a list of shell commands (null = malformed turn)")
    ap.add_argument("--fence", default="mswea_bash_command", help="info string of the fenced block in text mode")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        commands = json.load(f)
    if not isinstance(commands, list) or not all(c is None or isinstance(c, str) for c in commands):
        ap.error("--script must hold a JSON list of strings (or null)")
    fake = FakeLLM(commands, args.mode, args.port, args.fence)
    print(f"fake_llm: {args.mode} mode, {len(commands)} commands, serving {fake.api_base}", flush=True)

    def report() -> None:
        print("fake_llm: reported", json.dumps(fake.totals()), flush=True)

    fake.serve_until_stopped(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
