"""The scripted Responses API server (sealbench.testing.scripted_openai_responses) on its own:
the shell tool found in whatever form the client declares it, the SSE stream, the turn taken
from the request, usage. The real Codex CLI against it: tests/clients/test_codex_scripted.py."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.testing.scripted_openai_responses import (  # noqa: E402
    ScriptedResponses,
    find_shell_tool,
    shell_arguments,
)

pytestmark = pytest.mark.unit

EXEC_COMMAND = {"type": "function", "name": "exec_command", "parameters": {
    "type": "object", "required": ["cmd"],
    "properties": {"cmd": {"type": "string"}, "yield_time_ms": {"type": "number"}, "workdir": {"type": "string"}}}}
SHELL = {"type": "function", "name": "shell", "parameters": {
    "type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}},
                                     "timeout_ms": {"type": "number"}}}}
SHELL_COMMAND = {"type": "function", "name": "shell_command",
                 "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}
OTHER = {"type": "function", "name": "view_image", "parameters": {"type": "object", "properties": {"path": {}}}}
NAMESPACE = {"type": "namespace", "name": "agents", "tools": [{**SHELL_COMMAND, "name": "spawn"}]}


def test_the_shell_tool_is_found_by_name_and_called_as_its_schema_says() -> None:
    assert find_shell_tool([OTHER, NAMESPACE, EXEC_COMMAND, {"type": "web_search"}])["name"] == "exec_command"
    assert shell_arguments(EXEC_COMMAND, "ls") == {"cmd": "ls", "yield_time_ms": 30000}
    assert find_shell_tool([OTHER, SHELL])["name"] == "shell"
    assert shell_arguments(SHELL, "ls") == {"command": ["bash", "-lc", "ls"], "timeout_ms": 120000}
    assert shell_arguments(SHELL_COMMAND, "ls") == {"command": "ls"}
    unknown = {**SHELL_COMMAND, "name": "run_in_terminal"}
    assert find_shell_tool([OTHER, unknown]) is unknown  # any function with a command parameter
    assert find_shell_tool([{"type": "local_shell"}])["type"] == "local_shell"
    assert find_shell_tool([OTHER, NAMESPACE]) is None  # a namespaced tool is not the shell


def _post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _sse(raw: bytes) -> list[tuple[str, dict]]:
    events = []
    for block in raw.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def _request(outputs: int, tools: list[dict], stream: bool = True) -> dict:
    items: list[dict] = [{"type": "message", "role": "user",
                          "content": [{"type": "input_text", "text": "<environment_context>x</environment_context>"}]},
                         {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}]
    for i in range(outputs):
        items += [{"type": "function_call", "call_id": f"c{i}", "name": "exec_command", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{i}", "output": f"out {i}"}]
    return {"model": "m", "stream": stream, "input": items, "tools": tools}


def test_a_conversation_streams_the_script_then_a_final_message() -> None:
    with ScriptedResponses(["echo one", "echo two"]) as srv:
        url = srv.api_base + "/responses"
        code, raw = _post(url, _request(0, [OTHER, EXEC_COMMAND]))
        assert code == 200
        events = _sse(raw)
        names = [n for n, _ in events]
        assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
        assert "response.function_call_arguments.delta" in names and "response.output_text.delta" in names
        assert [d["sequence_number"] for _, d in events] == list(range(len(events)))
        done = [d["item"] for n, d in events if n == "response.output_item.done"]
        assert [i["type"] for i in done] == ["message", "function_call"]
        assert done[1]["name"] == "exec_command" and json.loads(done[1]["arguments"])["cmd"] == "echo one"
        usage = events[-1][1]["response"]["usage"]
        assert usage["input_tokens_details"]["cached_tokens"] == 0
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
        # the turn comes from the request: one tool output in it → the second command
        code, raw = _post(url, _request(1, [EXEC_COMMAND]))
        assert json.loads(_sse(raw)[-1][1]["response"]["output"][1]["arguments"])["cmd"] == "echo two"
        # two outputs → the final message, not streamed this time (under /responses too)
        code, raw = _post(f"http://127.0.0.1:{srv.port}/responses", _request(2, [EXEC_COMMAND], stream=False))
        resp = json.loads(raw)
        assert resp["status"] == "completed" and [i["type"] for i in resp["output"]] == ["message"]
        assert resp["output"][0]["content"][0]["text"] == srv.final_text
        assert resp["usage"]["input_tokens_details"]["cached_tokens"] > 0
        with urllib.request.urlopen(srv.api_base + "/models", timeout=10) as r:
            assert json.loads(r.read())["data"][0]["id"] == "m"
        assert _post(srv.api_base + "/chat/completions", {})[0] == 404
    assert srv.played()
    assert [c["turn"] for c in srv.calls] == [0, 1, 2]
    assert srv.calls[1]["observation"] == "out 0"
    (conv,) = srv.conversations().values()
    assert conv["task"] == "fix it" and conv["finished"] and conv["calls"] == 3
    assert srv.totals()["total_tokens"] == sum(c["total_tokens"] for c in srv.calls)
    assert [r["path"] for r in srv.requests][-2:] == ["/v1/models", "/v1/chat/completions"]
    assert srv.requests[0]["body_keys"] == ["input", "model", "stream", "tools"]


def test_the_other_tool_forms_get_their_own_calls() -> None:
    with ScriptedResponses(["ls"]) as srv:
        url = srv.api_base + "/responses"
        out = json.loads(_post(url, _request(0, [SHELL], stream=False))[1])["output"]
        assert json.loads(out[1]["arguments"]) == {"command": ["bash", "-lc", "ls"], "timeout_ms": 120000}
        out = json.loads(_post(url, _request(0, [{"type": "local_shell"}], stream=False))[1])["output"]
        assert out[1]["type"] == "local_shell_call" and out[1]["action"]["command"] == ["bash", "-lc", "ls"]
        out = json.loads(_post(url, _request(0, [OTHER], stream=False))[1])["output"]
        assert out[0]["type"] == "message" and "no shell tool" in out[0]["content"][0]["text"]
