"""A scripted OpenAI Responses API server for offline tests of the Codex CLI (and alike).

Standard library only (``http.server`` + ``threading``); binds 127.0.0.1 only (port 0 picks a
free port). The sibling of :mod:`sealbench.testing.fake_llm` (which speaks Chat Completions).

Routes:

- ``POST /v1/responses`` and ``POST /responses``: streamed (SSE, ``event:`` + ``data:`` lines:
  ``response.created``, ``response.in_progress``, per output item ``response.output_item.added``
  ... ``response.output_item.done`` with ``response.output_text.delta`` / ``.done`` for message
  text and ``response.function_call_arguments.delta`` / ``.done`` for tool calls, then
  ``response.completed`` carrying ``response.usage``) or, with ``"stream": false``, one JSON
  response object.
- ``GET /v1/models`` and ``GET /models``: one model (the one asked for last, else ``scripted``).
- ``POST /v1/responses/compact``: 404 (Codex then compacts locally); anything else: 404 JSON.
  Every request, answered or not, is recorded in ``requests`` (method, path, headers, body keys).

It plays a fixed list of shell commands, one per model turn, through the client's shell tool,
then one final assistant message (``final_text``) for every later turn. The shell tool is looked
up in the request's ``tools`` (namespaces flattened) by name, in the order of ``SHELL_TOOLS``
(Codex 0.171 sends ``exec_command``; older ones ``shell`` / ``shell_command`` / ``local_shell``),
falling back to any function tool with a ``cmd`` / ``command`` parameter; the arguments follow
that tool's schema: a string, or ``["bash", "-lc", cmd]`` when the property is an array;
``yield_time_ms`` / ``timeout_ms`` are set high when the schema has them, so a command finishes
before the tool returns. ``local_shell`` (a built-in tool type) gets a ``local_shell_call`` item.

The turn is derived from the request itself, not from a global counter, so several clients can
run against one server at once: turn = number of tool outputs (``function_call_output``,
``custom_tool_call_output``, ``local_shell_call_output``) in ``input``. A conversation is keyed
by its task: the first user message that is not client boilerplate (``<environment_context>``,
``# AGENTS.md instructions``, ``<user_instructions>`` ...).

Usage is deterministic and independent of the request's bytes (which hold temp paths, dates and
session ids): with ``t`` the turn, ``input_tokens = input_base + input_step * t``,
``cached_tokens = 0`` on turn 0 and the previous turn's ``input_tokens`` after (the prompt
prefix a real server would have cached), ``reasoning_tokens = reasoning``,
``output_tokens = max(1, characters of the reply's text + tool arguments // 4) + reasoning``,
``total_tokens = input + output``. What was reported is recorded per call (``calls``) and summed
(``totals()``, ``conversations()``) so a test can compare it with what the client reports.

Standalone::

    python -m sealbench.testing.scripted_openai_responses --port 8765 --script cmds.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections.abc import Sequence
from typing import Any

from .fake_llm import _Handler as _JSONHandler
from .loopback import LoopbackServer

PATHS = ("/v1/responses", "/responses")
MODEL_PATHS = ("/v1/models", "/models")
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "local_shell", "container.exec", "bash")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
BOILERPLATE = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<INSTRUCTIONS>",
               "<permissions instructions>", "<skills_instructions>", "<turn_aborted>")
FINAL_TEXT = "Done: the scripted commands have run."


def _text_of(content: Any) -> str:
    """The text of an item's content (a string or a list of parts with ``text``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _input_items(body: dict) -> list[dict]:
    items = body.get("input")
    if isinstance(items, str):
        return [{"type": "message", "role": "user", "content": items}]
    return [i for i in items or [] if isinstance(i, dict)]


def task_of(items: Sequence[dict]) -> str:
    """The first user message that is not client boilerplate (else the last user message)."""
    users = [_text_of(i.get("content")) for i in items
             if i.get("role") == "user" and i.get("type", "message") == "message"]
    for text in users:
        if not text.lstrip().startswith(BOILERPLATE):
            return text
    return users[-1] if users else ""


def flat_tools(tools: Sequence[dict] | None) -> list[dict]:
    """The request's tools with ``namespace`` groups flattened (nested ones marked)."""
    out: list[dict] = []
    for t in tools or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "namespace":
            out.extend({**sub, "_namespace": t.get("name")} for sub in t.get("tools") or [] if isinstance(sub, dict))
        else:
            out.append(t)
    return out


def _tool_name(t: dict) -> str:
    return t.get("name") or (t.get("function") or {}).get("name") or t.get("type") or ""


def _params(t: dict) -> dict:
    return t.get("parameters") or (t.get("function") or {}).get("parameters") or {}


def _command_key(t: dict) -> str | None:
    props = _params(t).get("properties") or {}
    for key in ("cmd", "command", "script"):
        if key in props:
            return key
    return None


def find_shell_tool(tools: Sequence[dict] | None) -> dict | None:
    """The client's shell tool: by name (``SHELL_TOOLS`` order), else any function with a command parameter."""
    flat = [t for t in flat_tools(tools) if not t.get("_namespace")]
    by_name = {_tool_name(t): t for t in flat}
    for name in SHELL_TOOLS:
        t = by_name.get(name)
        if t is not None and (t.get("type") == "local_shell" or _command_key(t)):
            return t
    return next((t for t in flat if t.get("type") == "function" and _command_key(t)), None)


def shell_arguments(tool: dict, cmd: str) -> dict:
    """Arguments for ``tool`` running ``cmd``, in the form its JSON schema asks for."""
    props = _params(tool).get("properties") or {}
    key = _command_key(tool) or "command"
    value: Any = ["bash", "-lc", cmd] if (props.get(key) or {}).get("type") == "array" else cmd
    args: dict[str, Any] = {key: value}
    if "yield_time_ms" in props:  # exec_command: wait for the command rather than hand back a session
        args["yield_time_ms"] = 30000
    if "timeout_ms" in props:
        args["timeout_ms"] = 120000
    return args


def _usage(turn: int, out_chars: int, input_base: int, input_step: int, reasoning: int) -> dict:
    inp = input_base + input_step * turn
    cached = 0 if turn == 0 else input_base + input_step * (turn - 1)
    out = max(1, out_chars // 4) + reasoning
    return {"input_tokens": inp, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": out, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": inp + out}


class ScriptedResponses(LoopbackServer):
    """The server. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, commands: Sequence[str], port: int = 0, final_text: str = FINAL_TEXT, *,
                 input_base: int = 1200, input_step: int = 300, reasoning: int = 16) -> None:
        self.commands, self.final_text = list(commands), final_text
        self.input_base, self.input_step, self.reasoning = input_base, input_step, reasoning
        self.calls: list[dict] = []
        self.requests: list[dict] = []
        self.model = "scripted"
        self._seq = 0
        super().__init__(_Handler, port)

    @property
    def api_base(self) -> str:
        """The base URL a client is given (it posts to ``{api_base}/responses``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- what was reported -----------------------------------------------------------------
    def totals(self, calls: Sequence[dict] | None = None) -> dict[str, int]:
        calls = self.calls if calls is None else calls
        keys = ("input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens", "total_tokens")
        return {**{k: sum(c[k] for c in calls) for k in keys}, "calls": len(calls)}

    def conversations(self) -> dict[str, dict]:
        """Per conversation (key: digest of its task text): the task text, whether it finished, totals."""
        groups: dict[str, list[dict]] = {}
        for c in self.calls:
            groups.setdefault(c["conversation"], []).append(c)
        return {k: {"task": cs[0]["task"], "finished": any(c["final"] for c in cs), **self.totals(cs)}
                for k, cs in groups.items()}

    def played(self, conversation: str | None = None) -> bool:
        """Whether every command was issued, its output came back, and the final message was sent."""
        return any(c["final"] and c["turn"] >= len(self.commands) for c in self.calls
                   if conversation is None or c["conversation"] == conversation)

    # -- the script ------------------------------------------------------------------------
    def _next_id(self) -> int:
        with self.lock:
            self._seq += 1
            return self._seq

    def reply(self, body: dict) -> tuple[list[dict], dict, dict]:
        """(output items, usage, record) for one request; records the call."""
        items = _input_items(body)
        task = task_of(items)
        conv = hashlib.sha256(task.encode()).hexdigest()[:16]
        turn = sum(1 for i in items if i.get("type") in OUTPUT_TYPES)
        last_obs = next((i.get("output") for i in reversed(items) if i.get("type") in OUTPUT_TYPES), None)
        n = self._next_id()
        tool = find_shell_tool(body.get("tools"))
        cmd = self.commands[turn] if turn < len(self.commands) else None
        output: list[dict] = []
        if cmd is not None and tool is not None:
            name, call_id = _tool_name(tool), f"call_sb_{conv[:8]}_{turn}"
            output.append({"type": "message", "id": f"msg_sb_{n}_0", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": f"Turn {turn} of the script.",
                                        "annotations": []}]})
            if tool.get("type") == "local_shell":
                output.append({"type": "local_shell_call", "id": f"lsh_sb_{n}", "call_id": call_id,
                               "status": "completed",
                               "action": {"type": "exec", "command": ["bash", "-lc", cmd], "timeout_ms": 120000,
                                          "working_directory": None, "env": None, "user": None}})
                out_chars = len(cmd)
            else:
                args = json.dumps(shell_arguments(tool, cmd))
                output.append({"type": "function_call", "id": f"fc_sb_{n}", "call_id": call_id, "name": name,
                               "arguments": args, "status": "completed"})
                out_chars = len(args)
            out_chars += len(output[0]["content"][0]["text"])
            final = False
        else:
            name = None
            text = self.final_text if tool is not None else f"{self.final_text} (no shell tool in the request)"
            output.append({"type": "message", "id": f"msg_sb_{n}_0", "role": "assistant", "status": "completed",
                           "content": [{"type": "output_text", "text": text, "annotations": []}]})
            out_chars, final = len(text), True
        usage = _usage(turn, out_chars, self.input_base, self.input_step, self.reasoning)
        record = {"n": n, "conversation": conv, "task": task, "turn": turn, "command": cmd, "tool": name,
                  "final": final, "stream": body.get("stream", False) is not False,
                  "prompt_cache_key": body.get("prompt_cache_key"), "observation": last_obs,
                  "input_items": len(items), "tools": [_tool_name(t) for t in flat_tools(body.get("tools"))],
                  "input_tokens": usage["input_tokens"], "cached_tokens": usage["input_tokens_details"]["cached_tokens"],
                  "output_tokens": usage["output_tokens"],
                  "reasoning_tokens": usage["output_tokens_details"]["reasoning_tokens"],
                  "total_tokens": usage["total_tokens"]}
        with self.lock:
            self.calls.append(record)
            if body.get("model"):
                self.model = body["model"]
        return output, usage, record


def _sse_events(resp_id: str, model: str, output: list[dict], usage: dict) -> list[tuple[str, dict]]:
    """The event sequence of one streamed response, in the order the OpenAI API sends it."""
    created = int(time.time())
    base = {"id": resp_id, "object": "response", "created_at": created, "model": model, "output": [],
            "status": "in_progress", "usage": None, "error": None, "incomplete_details": None}
    evs: list[tuple[str, dict]] = [("response.created", {"response": base}),
                                   ("response.in_progress", {"response": base})]
    for idx, item in enumerate(output):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            evs.append(("response.output_item.added", {"output_index": idx,
                                                       "item": {**item, "status": "in_progress", "content": []}}))
            part = {"type": "output_text", "text": "", "annotations": []}
            evs.append(("response.content_part.added", {"item_id": item["id"], "output_index": idx,
                                                        "content_index": 0, "part": part}))
            half = len(text) // 2
            for chunk in (text[:half], text[half:]):
                if chunk:
                    evs.append(("response.output_text.delta", {"item_id": item["id"], "output_index": idx,
                                                               "content_index": 0, "delta": chunk}))
            evs.append(("response.output_text.done", {"item_id": item["id"], "output_index": idx,
                                                      "content_index": 0, "text": text}))
            evs.append(("response.content_part.done", {"item_id": item["id"], "output_index": idx,
                                                       "content_index": 0, "part": {**part, "text": text}}))
        elif item["type"] == "function_call":
            args = item["arguments"]
            evs.append(("response.output_item.added", {"output_index": idx,
                                                       "item": {**item, "status": "in_progress", "arguments": ""}}))
            half = len(args) // 2
            for chunk in (args[:half], args[half:]):
                if chunk:
                    evs.append(("response.function_call_arguments.delta", {"item_id": item["id"],
                                                                           "output_index": idx, "delta": chunk}))
            evs.append(("response.function_call_arguments.done", {"item_id": item["id"], "output_index": idx,
                                                                  "arguments": args}))
        else:
            evs.append(("response.output_item.added", {"output_index": idx, "item": item}))
        evs.append(("response.output_item.done", {"output_index": idx, "item": item}))
    evs.append(("response.completed", {"response": {**base, "status": "completed", "output": output,
                                                    "usage": usage}}))
    return [(name, {"type": name, "sequence_number": i, **data}) for i, (name, data) in enumerate(evs)]


class _Handler(_JSONHandler):
    """``fake_llm``'s handler (quiet, ``_json``) with the Responses routes."""

    def _record(self, body: Any) -> None:
        srv: ScriptedResponses = self.server.owner  # type: ignore[attr-defined]
        with srv.lock:
            srv.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                 "body_keys": sorted(body) if isinstance(body, dict) else None})

    def do_GET(self) -> None:
        srv: ScriptedResponses = self.server.owner  # type: ignore[attr-defined]
        self._record(None)
        if self.path.split("?")[0].rstrip("/") in MODEL_PATHS:
            self._json(200, {"object": "list", "data": [{"id": srv.model, "object": "model", "created": 0,
                                                         "owned_by": "sealbench"}]})
        else:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        srv: ScriptedResponses = self.server.owner  # type: ignore[attr-defined]
        body = self._body()
        self._record(body)
        if self.path.split("?")[0].rstrip("/") not in PATHS:
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        if not isinstance(body, dict):
            self._json(400, {"error": {"message": "body is not a JSON object (zstd-compressed?)",
                                       "type": "invalid_request_error"}})
            return
        output, usage, rec = srv.reply(body)
        resp_id, model = f"resp_sb_{rec['n']}", body.get("model") or srv.model
        if not rec["stream"]:
            self._json(200, {"id": resp_id, "object": "response", "created_at": int(time.time()), "model": model,
                             "status": "completed", "output": output, "usage": usage, "error": None,
                             "incomplete_details": None})
            return
        self.send_response(200)
        for header, value in (("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                              ("Connection", "close")):
            self.send_header(header, value)
        self.end_headers()
        self.close_connection = True
        for name, data in _sse_events(resp_id, model, output, usage):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.testing.scripted_openai_responses",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--script", required=True, help="JSON file: a list of shell commands")
    ap.add_argument("--final-text", default=FINAL_TEXT, help="the assistant's last message")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        commands = json.load(f)
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        ap.error("--script must hold a JSON list of strings")
    srv = ScriptedResponses(commands, args.port, args.final_text)
    print(f"scripted_openai_responses: {len(commands)} commands, serving {srv.api_base}", flush=True)

    def report() -> None:
        print("scripted_openai_responses: reported", json.dumps(srv.totals()), flush=True)

    srv.serve_until_stopped(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
