"""A scripted Gemini API server for offline tests of Gemini CLI (and other ``@google/genai`` clients).

Standard library only (``http.server`` + ``threading``); binds 127.0.0.1 only (port 0 picks a
free port). Point the client at it with ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>``.
Serves, for any API version prefix (``/v1beta``, ``/v1``, ...) and any model name:

- ``POST /<ver>/models/<model>:streamGenerateContent?alt=sse``: SSE, one ``data: <json>`` event per
  chunk (each a ``GenerateContentResponse``, JSON on one line), no ``[DONE]`` marker; every chunk
  carries ``usageMetadata`` (cumulative), the last one is final and has ``finishReason``;
- ``POST /<ver>/models/<model>:generateContent``: the same reply as one ``GenerateContentResponse``;
- ``POST /<ver>/models/<model>:countTokens``: ``{"totalTokens": n}``;
- anything else: a Gemini-style JSON error (404), recorded in ``unknown``.

Main calls vs side calls. A request whose ``tools`` declare a shell-like function (the name
``run_shell_command``, else a name containing ``shell``/``bash``/``exec``/``command``/``terminal``
with a string parameter for the command) is a *main* turn of the agent loop: the server plays a
fixed list of shell commands, one per turn, each as a ``functionCall`` of that function with the
arguments its schema wants (the command, plus a short ``description`` and any other *required*
parameter filled sensibly). After the last command every later main turn gets a final text reply
(``finishReason: STOP``) and no function call, which ends a non-interactive run.

Every other request is a *side* call (Gemini CLI's model router / classifier, next-speaker check,
loop detection, edit correction, summaries, ...). It never advances the script. If it asks for
JSON (``generationConfig.responseJsonSchema`` / ``responseSchema`` / ``responseMimeType``) the
reply is an object built from the schema, with answers that let the loop proceed: ``next_speaker``
= ``"user"``, loop confidence 0, a low complexity score, ``model_choice`` = the first enum value,
strings ``"scripted"``; otherwise a short text.

The turn is derived from the request itself, not from a global counter, so several clients can
share one server: turn = number of ``functionResponse`` parts in ``contents`` (each scripted turn
makes exactly one call, answered by exactly one response). A conversation is keyed by a digest of
its first ``user`` content's text.

Usage (deterministic, a function of the request): ``promptTokenCount`` = characters of
``systemInstruction`` + ``contents`` + ``tools`` (as JSON) // 4; ``cachedContentTokenCount`` = on
main turns after the first, the same measure without the last content (the prefix a real server's
implicit cache would have seen), else 0; ``candidatesTokenCount`` = characters of the reply's
parts (as JSON) // 4; ``thoughtsTokenCount`` = 8 on main turns, 0 on side calls;
``totalTokenCount`` = prompt + candidates + thoughts (all at least 1 where nonzero makes sense).
Streamed replies carry cumulative ``usageMetadata`` on every chunk; the last is the final count
(the one that is recorded). ``totals()`` sums what was reported, ``totals("main")`` /
``totals("side")`` split it, ``split()`` gives all three.

Standalone::

    python -m sealbench.testing.scripted_gemini --port 8765 --script cmds.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from .loopback import JSONHandler, LoopbackServer

MODEL_VERSION = "gemini-scripted-001"
FINAL_TEXT = "All scripted commands have been run. The task is complete."
THOUGHTS_TOKENS = 8
SHELL_NAMES = ("run_shell_command",)
SHELL_HINTS = ("shell", "bash", "exec", "command", "terminal", "run")
COMMAND_PARAMS = ("command", "cmd", "script", "commandline", "command_line")
USAGE_KEYS = ("promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount",
              "thoughtsTokenCount", "totalTokenCount")
_ROUTE = re.compile(r"^/(?P<ver>[^/]+)/(?:(?:projects|tunedModels)/.*/)?models/(?P<model>[^/:]+):(?P<method>\w+)$")


def _chars(obj: Any) -> int:
    return len(json.dumps(obj, sort_keys=True, ensure_ascii=False)) if obj else 0


def _schema_of(decl: dict) -> dict:
    """A function declaration's parameter schema, whichever field carries it."""
    for key in ("parametersJsonSchema", "parameters", "parameters_json_schema"):
        if isinstance(decl.get(key), dict):
            return decl[key]
    return {}


def _props(schema: dict) -> dict[str, dict]:
    props = schema.get("properties")
    return props if isinstance(props, dict) else {}


def _type(schema: dict) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    return str(t or "").lower()


def _command_param(decl: dict) -> str | None:
    """The name of the string parameter that takes the shell command, if any."""
    props = _props(_schema_of(decl))
    for name in COMMAND_PARAMS:
        if name in props and _type(props[name]) in ("string", ""):
            return name
    for name, p in props.items():
        if _type(p) == "string" and "command" in name.lower():
            return name
    return None


def find_shell_tool(tools: Any) -> tuple[dict, str] | None:
    """(declaration, command parameter) of the shell tool among a request's ``tools``, or None.

    ``run_shell_command`` (Gemini CLI) wins; else the first declaration whose name hints at a
    shell and which has a string command parameter."""
    decls = [d for t in (tools or []) if isinstance(t, dict)
             for d in (t.get("functionDeclarations") or t.get("function_declarations") or [])
             if isinstance(d, dict) and d.get("name")]
    ranked = [d for d in decls if d["name"] in SHELL_NAMES]
    ranked += [d for d in decls if d["name"] not in SHELL_NAMES
               and any(h in d["name"].lower() for h in SHELL_HINTS)]
    for d in ranked:
        param = _command_param(d)
        if param:
            return d, param
    return None


def _fill(schema: dict, name: str = "") -> Any:
    """A value that satisfies ``schema`` and keeps Gemini CLI's side checks out of the way."""
    known = {"next_speaker": "user", "unproductive_state_confidence": 0.0, "complexity_score": 10}
    if name in known:
        return known[name]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    t = _type(schema)
    if t == "object" or (not t and _props(schema)):
        return {k: _fill(v, k) for k, v in _props(schema).items() if isinstance(v, dict)}
    if t == "array":
        return []
    if t == "boolean":
        return False
    if t in ("integer", "number"):
        lo = schema.get("minimum", 0)
        return int(lo) if t == "integer" else float(lo)
    if name == "description":
        return "scripted command"
    return "scripted"


def shell_args(decl: dict, param: str, command: str, turn: int) -> dict:
    """Arguments for one call of the shell tool: the command, a description, required others."""
    schema = _schema_of(decl)
    props, required = _props(schema), set(schema.get("required") or [])
    args: dict[str, Any] = {param: command}
    if "description" in props:
        args["description"] = f"Scripted turn {turn}."
    for name in required - set(args):
        args[name] = _fill(props.get(name) or {}, name)
    return args


def _first_user_text(contents: Sequence[dict]) -> str:
    for c in contents:
        if isinstance(c, dict) and c.get("role", "user") == "user":
            return "".join(p.get("text", "") for p in c.get("parts") or [] if isinstance(p, dict))
    return ""


def _count_function_responses(contents: Sequence[dict]) -> int:
    return sum(1 for c in contents if isinstance(c, dict)
               for p in c.get("parts") or [] if isinstance(p, dict) and "functionResponse" in p)


def _json_schema_of(body: dict) -> dict | None:
    gc = body.get("generationConfig") or body.get("generation_config") or {}
    for key in ("responseJsonSchema", "responseSchema", "response_json_schema", "response_schema"):
        if isinstance(gc.get(key), dict):
            return gc[key]
    if str(gc.get("responseMimeType", "")).endswith("json"):
        return {}
    return None


class ScriptedGemini(LoopbackServer):
    """The server. Use as a context manager, or ``start()`` / ``close()``."""

    def __init__(self, commands: Sequence[str], port: int = 0, final_text: str = FINAL_TEXT,
                 model_version: str = MODEL_VERSION, keep_bodies: bool = False) -> None:
        self.commands, self.final_text, self.model_version = list(commands), final_text, model_version
        self.keep_bodies = keep_bodies  # record each request body too (``calls[i]["body"]``)
        self.calls: list[dict] = []      # one per generateContent / streamGenerateContent call
        self.token_counts: list[dict] = []  # countTokens calls
        self.unknown: list[dict] = []    # requests no route matched
        super().__init__(_Handler, port)

    @property
    def base_url(self) -> str:
        """What to put in ``GOOGLE_GEMINI_BASE_URL`` (no API version: the client appends it)."""
        return f"http://127.0.0.1:{self.port}"

    # -- what was reported -----------------------------------------------------------------
    def totals(self, kind: str | None = None, calls: Sequence[dict] | None = None) -> dict[str, int]:
        """Summed final ``usageMetadata`` of the recorded calls (``kind``: "main", "side", None = all)."""
        calls = self.calls if calls is None else calls
        calls = [c for c in calls if kind is None or c["kind"] == kind]
        out = {k: sum(c["usage"][k] for c in calls) for k in USAGE_KEYS}
        out["calls"] = len(calls)
        return out

    def split(self) -> dict[str, dict[str, int]]:
        return {"main": self.totals("main"), "side": self.totals("side"), "all": self.totals()}

    def main_turns(self) -> list[int]:
        return [c["turn"] for c in self.calls if c["kind"] == "main"]

    @property
    def finished(self) -> bool:
        """Some conversation got past the whole script (was sent the final text reply)."""
        return any(c["kind"] == "main" and c["turn"] >= len(self.commands) for c in self.calls)

    # -- the script ------------------------------------------------------------------------
    def reply(self, body: dict, model: str, method: str, headers: dict[str, str]) -> tuple[list[dict], dict]:
        """(parts of each streamed chunk, final usage) for one request; records the call."""
        contents = [c for c in body.get("contents") or [] if isinstance(c, dict)]
        system, tools = body.get("systemInstruction"), body.get("tools")
        prompt = max(1, (_chars(system) + _chars(contents) + _chars(tools)) // 4)
        shell = find_shell_tool(tools)
        record: dict[str, Any] = {"model": model, "method": method, "headers": headers,
                                  "conversation": hashlib.sha256(_first_user_text(contents).encode()).hexdigest()[:16]}
        cached = 0
        if shell:
            decl, param = shell
            turn = _count_function_responses(contents)
            if turn > 0:
                cached = max(1, (_chars(system) + _chars(contents[:-1]) + _chars(tools)) // 4)
            if turn < len(self.commands):
                cmd = self.commands[turn]
                call = {"name": decl["name"], "args": shell_args(decl, param, cmd, turn)}
                chunks = [[{"text": f"Turn {turn} of the script: running a shell command."}],
                          [{"functionCall": call}]]
            else:
                cmd = None
                chunks = [[{"text": self.final_text}]]
            record.update(kind="main", turn=turn, command=cmd, tool=decl["name"])
            thoughts = THOUGHTS_TOKENS
        else:
            schema = _json_schema_of(body)
            text = json.dumps(_fill(schema)) if schema is not None else "OK."
            chunks = [[{"text": text}]]
            record.update(kind="side", turn=None, command=None, tool=None, json=schema is not None,
                          ask=(_first_user_text(contents[-1:]) or "")[:200])
            thoughts = 0
        candidates = max(1, sum(_chars(parts) for parts in chunks) // 4)
        usage = {"promptTokenCount": prompt, "cachedContentTokenCount": cached,
                 "candidatesTokenCount": candidates, "thoughtsTokenCount": thoughts,
                 "totalTokenCount": prompt + candidates + thoughts}
        record["usage"] = usage
        if self.keep_bodies:
            record["body"] = body
        with self.lock:
            self.calls.append(record)
        return chunks, usage

    def response(self, parts: list[dict], usage: dict, final: bool) -> dict:
        """One ``GenerateContentResponse``."""
        cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if final:
            cand["finishReason"] = "STOP"
        meta = {k: v for k, v in usage.items() if v or k in ("promptTokenCount", "totalTokenCount")}
        return {"candidates": [cand], "usageMetadata": meta, "modelVersion": self.model_version,
                "responseId": f"scripted-{len(self.calls)}"}


def _partial_usage(final: dict, done: int, total: int) -> dict:
    """Cumulative usage after ``done`` of ``total`` chunks (the last one equals ``final``)."""
    if done >= total:
        return dict(final)
    cands = max(1, final["candidatesTokenCount"] * done // total)
    u = dict(final, candidatesTokenCount=cands)
    u["totalTokenCount"] = u["promptTokenCount"] + cands + u["thoughtsTokenCount"]
    return u


class _Handler(JSONHandler):
    content_type = "application/json; charset=UTF-8"

    def _error(self, code: int, status: str, message: str) -> None:
        self._json(code, {"error": {"code": code, "message": message, "status": status}})

    def _seen_headers(self) -> dict[str, str]:
        keep = ("user-agent", "x-goog-api-client", "x-goog-api-key", "authorization", "content-type")
        return {k.lower(): v for k, v in self.headers.items() if k.lower() in keep}

    def do_GET(self) -> None:
        srv: ScriptedGemini = self.server.owner  # type: ignore[attr-defined]
        with srv.lock:
            srv.unknown.append({"method": "GET", "path": self.path, "headers": self._seen_headers()})
        self._error(404, "NOT_FOUND", f"no route GET {self.path}")

    def do_POST(self) -> None:
        srv: ScriptedGemini = self.server.owner  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path, _, query = self.path.partition("?")
        m = _ROUTE.match(path)
        method = m.group("method") if m else ""
        if method not in ("streamGenerateContent", "generateContent", "countTokens"):
            with srv.lock:
                srv.unknown.append({"method": "POST", "path": self.path, "headers": self._seen_headers()})
            self._error(404, "NOT_FOUND", f"no route POST {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "INVALID_ARGUMENT", "body is not JSON")
            return
        model = m.group("model")  # type: ignore[union-attr]
        if method == "countTokens":
            req = body.get("generateContentRequest") or body
            n = max(1, (_chars(req.get("systemInstruction")) + _chars(req.get("contents"))
                        + _chars(req.get("tools"))) // 4)
            with srv.lock:
                srv.token_counts.append({"model": model, "totalTokens": n})
            self._json(200, {"totalTokens": n})
            return
        chunks, usage = srv.reply(body, model, method, self._seen_headers())
        if method == "generateContent":
            parts = [p for c in chunks for p in c]
            self._json(200, srv.response(parts, usage, final=True))
            return
        sse = "alt=sse" in query
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        events = [srv.response(parts, _partial_usage(usage, i + 1, len(chunks)), final=i == len(chunks) - 1)
                  for i, parts in enumerate(chunks)]
        if sse:
            for ev in events:
                self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\r\n\r\n")
        else:  # without alt=sse the API streams one JSON array
            self.wfile.write(json.dumps(events).encode())
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.testing.scripted_gemini", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0, help="0 = a free port")
    ap.add_argument("--script", required=True, help="JSON file: a list of shell commands")
    ap.add_argument("--log", help="write every recorded call as JSON lines here on exit")
    args = ap.parse_args(argv)
    with open(args.script, encoding="utf-8") as f:
        commands = json.load(f)
    if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
        ap.error("--script must hold a JSON list of strings")
    srv = ScriptedGemini(commands, args.port)
    print(f"scripted_gemini: {len(commands)} commands, serving {srv.base_url}", flush=True)

    def report() -> None:
        if args.log:
            with open(args.log, "w", encoding="utf-8") as f:
                for c in srv.calls + srv.unknown:
                    f.write(json.dumps(c) + "\n")
        print("scripted_gemini: reported", json.dumps(srv.split()), flush=True)

    srv.serve_until_stopped(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
