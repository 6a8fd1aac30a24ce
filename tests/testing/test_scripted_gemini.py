"""The scripted Gemini API server (sealbench.testing.scripted_gemini) spoken to over HTTP as the
``@google/genai`` SDK speaks to it: routes, SSE chunks, turns from functionResponse parts, side
calls answered from their JSON schema, usage recorded and split."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.testing.scripted_gemini import ScriptedGemini, find_shell_tool  # noqa: E402

pytestmark = pytest.mark.unit

SHELL = {"name": "run_shell_command", "parametersJsonSchema": {
    "type": "object", "required": ["command"],
    "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                   "dir_path": {"type": "string"}, "is_background": {"type": "boolean"}}}}
TOOLS = [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": {"type": "object"}}, SHELL]}]
TASK = {"role": "user", "parts": [{"text": "fix it"}]}


def post(srv: ScriptedGemini, path: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(srv.base_url + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json", "x-goog-api-key": "k"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sse(text: str) -> list[dict]:
    return [json.loads(ev[len("data: "):]) for ev in text.split("\r\n\r\n") if ev.startswith("data: ")]


def answered(contents: list, turn: int) -> list:
    """contents after the model's call of ``turn`` got its functionResponse."""
    return contents + [{"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
                       {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                                                                        "response": {"output": str(turn)}}}]}]


def test_the_script_is_played_one_call_per_turn_then_a_final_text() -> None:
    with ScriptedGemini(["ls", "echo hi"]) as srv:
        contents, seen = [TASK], []
        for turn in range(3):
            code, text = post(srv, "/v1beta/models/m:streamGenerateContent?alt=sse",
                              {"contents": contents, "tools": TOOLS})
            assert code == 200
            chunks = sse(text)
            assert len(chunks) >= 1 and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
            assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
            usage = [c["usageMetadata"] for c in chunks]
            assert usage[-1]["candidatesTokenCount"] >= usage[0]["candidatesTokenCount"]  # cumulative
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
            seen.append([p["functionCall"] for p in parts if "functionCall" in p])
            contents = answered(contents, turn)
        assert seen[0] == [{"name": "run_shell_command", "args": {"command": "ls", "description": "Scripted turn 0."}}]
        assert seen[1][0]["args"]["command"] == "echo hi" and seen[2] == []
        assert srv.main_turns() == [0, 1, 2] and srv.finished
        assert [c["usage"]["cachedContentTokenCount"] > 0 for c in srv.calls] == [False, True, True]
        assert chunks[-1]["modelVersion"] and srv.calls[0]["headers"]["x-goog-api-key"] == "k"


def test_side_calls_get_schema_answers_and_do_not_advance_the_script() -> None:
    schema = {"type": "OBJECT", "required": ["reasoning", "next_speaker"],
              "properties": {"reasoning": {"type": "STRING"}, "next_speaker": {"type": "STRING", "enum": ["model", "user"]}}}
    with ScriptedGemini(["ls"]) as srv:
        code, text = post(srv, "/v1beta/models/gemini-flash:generateContent",
                          {"contents": [TASK], "generationConfig": {"responseMimeType": "application/json",
                                                                    "responseJsonSchema": schema}})
        assert code == 200
        answer = json.loads(json.loads(text)["candidates"][0]["content"]["parts"][0]["text"])
        assert answer == {"reasoning": "scripted", "next_speaker": "user"}
        code, text = post(srv, "/v1beta/models/m:generateContent", {"contents": [TASK], "tools": TOOLS})
        assert json.loads(text)["candidates"][0]["content"]["parts"][1]["functionCall"]["args"]["command"] == "ls"
        assert post(srv, "/v1beta/models/m:countTokens", {"contents": [TASK]})[0] == 200
        assert post(srv, "/v1beta/files", {})[0] == 404 and srv.unknown[0]["path"] == "/v1beta/files"
        split = srv.split()
        assert (split["main"]["calls"], split["side"]["calls"], split["all"]["calls"]) == (1, 1, 2)
        assert split["all"]["totalTokenCount"] == split["main"]["totalTokenCount"] + split["side"]["totalTokenCount"]
        assert srv.main_turns() == [0] and not srv.finished


def test_the_shell_tool_is_found_by_name_or_by_its_command_parameter() -> None:
    assert find_shell_tool(TOOLS)[1] == "command"
    other = [{"functionDeclarations": [{"name": "bash", "parameters": {"type": "object",
                                                                       "properties": {"cmd": {"type": "string"}}}}]}]
    assert find_shell_tool(other)[0]["name"] == "bash" and find_shell_tool(other)[1] == "cmd"
    assert find_shell_tool([{"functionDeclarations": [{"name": "read_file", "parameters": {}}]}]) is None
