"""The REAL Claude Code client against the scripted Anthropic server
(:mod:`sealbench.testing.scripted_anthropic`), run with the recipe of
:mod:`sealbench.agent.client_recipes_claude`: no network, no model.

The client is the claude-code preset's install (``SEALBENCH_CLAUDE_BIN`` overrides it): the
clients tier. Each run takes ~3 s and a few hundred MB.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from sealbench.agent.client_recipes_claude import DUMMY_KEY, claude_code_recipe
from sealbench.testing.scripted_anthropic import ScriptedAnthropic


def claude_bin() -> str:
    """The client: ``$SEALBENCH_CLAUDE_BIN``, else the claude-code preset's install (made once)."""
    from sealbench.agent import clients

    client = clients.CLIENTS["claude-code"]
    return os.environ.get("SEALBENCH_CLAUDE_BIN") or str(clients.install(client, client.version) / client.bin)


pytestmark = pytest.mark.clients

MODEL = "scripted-model"
PY = shlex.quote(sys.executable)
BUGGY = "def add(a, b):\n    return a - b\n"
VISIBLE = f"{PY} -B -c 'import calc; assert calc.add(2, 3) == 5, calc.add(2, 3); print(\"visible ok\")'"
#: the model's turns: fix the bug with a heredoc'd python, look at the diff, run the visible tests
SCRIPT = [
    f"{PY} - <<'EOF'\nimport pathlib\np = pathlib.Path('calc.py')\n"
    f"p.write_text(p.read_text().replace('a - b', 'a + b'))\nEOF",
    "git diff --stat",
    'sh -c "$SEALBENCH_VISIBLE_CMD"',
]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def workspace(tmp_path: Path) -> dict[str, Path]:
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    (repo / "calc.py").write_text(BUGGY)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "buggy add")
    prompt = tmp_path / "prompt.md"
    prompt.write_text("calc.add subtracts instead of adding. Fix it.\n")
    return {"repo": repo, "home": home, "prompt": prompt}


def run_client(ws: dict[str, Path], base_url: str, model: str = MODEL) -> tuple[subprocess.CompletedProcess, float]:
    command, env, files = claude_code_recipe(model, base_url, binary=claude_bin())
    for rel, text in files.items():
        (ws["home"] / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws["home"] / rel).write_text(text)
    full_env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(ws["home"]),
                "LANG": "C.UTF-8", "SEALBENCH_PROMPT": str(ws["prompt"]), "SEALBENCH_VISIBLE_CMD": VISIBLE, **env}
    print("recipe command:", command)
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", command], cwd=ws["repo"], env=full_env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - start


def test_claude_code_plays_the_script_and_lands_the_fix(workspace: dict[str, Path]) -> None:
    with ScriptedAnthropic(SCRIPT, models=[MODEL]) as server:
        proc, secs = run_client(workspace, server.base_url)
    print(f"exit {proc.returncode} after {secs:.1f} s\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    for r in server.requests:
        print("request:", json.dumps({k: v for k, v in r.items() if k != "tools"}), "tools:", len(r.get("tools") or []))
    for c in server.calls:
        print("call:", json.dumps({k: v for k, v in c.items() if k != "task"}))
    main, side = server.totals("main"), server.totals("side")
    print("server reported main:", json.dumps(main))
    print("server reported side:", json.dumps(side))

    assert proc.returncode == 0, proc.stdout + proc.stderr
    repo = workspace["repo"]
    assert (repo / "calc.py").read_text() == BUGGY.replace("a - b", "a + b")
    # the client wrote nothing else into the workspace
    assert _git(repo, "status", "--porcelain", "--ignored").splitlines() == [" M calc.py"]

    # the main conversation went through the whole script and got its end_turn reply
    assert server.finished()
    assert [c["turn"] for c in server.calls if c["kind"] == "main"] == list(range(len(SCRIPT) + 1))
    assert main["calls"] == len(SCRIPT) + 1
    assert all(c["stream"] for c in server.calls if c["kind"] == "main")
    # cache tokens are metered: created from turn 0, read from turn 1
    assert main["cache_creation_input_tokens"] > 0 and main["cache_read_input_tokens"] > 0

    # the client's own account (--output-format json) matches what the server reported
    result = json.loads(proc.stdout)
    print("client result:", result["result"], "| turns:", result["num_turns"], "| usage:",
          json.dumps({k: result["usage"][k] for k in ("input_tokens", "cache_creation_input_tokens",
                                                      "cache_read_input_tokens", "output_tokens")}))
    assert result["is_error"] is False and result["result"] == "Done: the scripted work is complete."
    whole = server.totals()
    for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"):
        assert result["usage"][k] == whole[k], k

    # the visible tests ran through the Bash tool (env reached the tool) and the output went back
    mains = [c for c in server.calls if c["kind"] == "main"]
    assert "calc.py | 2 +-" in mains[2]["observation"]          # git diff --stat after the fix
    assert "visible ok" in mains[3]["observation"] and mains[3]["command"] is None
    # only the endpoint, with the dummy key as x-api-key (never Authorization)
    posts = [r for r in server.requests if r["method"] == "POST"]
    assert posts and all(r["auth"] == ["x-api-key"] for r in posts)
    assert all(r["path"].startswith("/v1/messages") for r in posts)
    assert all(r["model"] == MODEL for r in posts)
    # HOME got the transcript (and the client's own state)
    home = workspace["home"]
    print("written in HOME:", sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file()))
    assert list((home / ".claude" / "projects").glob("*/*.jsonl"))


# a wrong port: tests/clients/test_presets_live.py's misconfigured-client tests, for every client
def test_claude_code_with_a_wrong_model_exits_nonzero_quickly(workspace: dict[str, Path]) -> None:
    with ScriptedAnthropic(SCRIPT, models=[MODEL]) as server:
        proc, secs = run_client(workspace, server.base_url, model="no-such-model")
    print(f"exit {proc.returncode} after {secs:.1f} s\nstdout: {proc.stdout}\nstderr: {proc.stderr}")
    print("requests:", [(r["method"], r["path"], r.get("model")) for r in server.requests])
    assert proc.returncode != 0
    assert secs < 60
    result = json.loads(proc.stdout)
    print(f"the client's error line: {result['result']}")
    assert result["is_error"] is True
    assert "issue with the selected model (no-such-model)" in result["result"]
    assert server.calls == []   # the 404 is not a played turn
    assert (workspace["repo"] / "calc.py").read_text() == BUGGY


def _post(url: str, body: dict) -> tuple[int, str]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json",
                                                                  "x-api-key": DUMMY_KEY})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read().decode()


def test_scripted_server_side_calls_count_tokens_and_non_streaming() -> None:
    """What the real client did not exercise in print mode: side calls (no tools) get text and do
    not advance the script, count_tokens, non-streamed replies, the SSE event order."""
    tools = [{"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {}}}},
             {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {}}}}]
    user = {"role": "user", "content": "task"}
    with ScriptedAnthropic(["echo one"]) as s:
        url = s.base_url + "/v1/messages"
        code, text = _post(url, {"model": "small", "max_tokens": 50, "messages": [user]})
        side = json.loads(text)
        assert code == 200 and side["content"][0]["type"] == "text" and side["stop_reason"] == "end_turn"
        code, text = _post(url + "/count_tokens", {"model": "m", "messages": [user], "tools": tools})
        assert json.loads(text)["input_tokens"] > 0
        code, text = _post(url, {"model": "m", "max_tokens": 50, "messages": [user], "tools": tools})
        msg = json.loads(text)
        assert msg["stop_reason"] == "tool_use" and msg["content"][1]["input"] == {"command": "echo one"}
        turn1 = [user, {"role": "assistant", "content": msg["content"]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": msg["content"][1]["id"],
                                               "content": "one"}]}]
        code, text = _post(url + "?beta=true", {"model": "m", "max_tokens": 50, "messages": turn1, "tools": tools,
                                                "stream": True})
        events = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
        assert [e["type"] for e in events] == ["message_start", "content_block_start", "content_block_delta",
                                               "content_block_stop", "message_delta", "message_stop"]
        assert events[4]["delta"]["stop_reason"] == "end_turn"
        u = events[0]["message"]["usage"]
        assert u["cache_read_input_tokens"] > 0 and u["cache_creation_input_tokens"] > 0
    assert [c["kind"] for c in s.calls] == ["side", "main", "main"]
    assert [c["turn"] for c in s.calls if c["kind"] == "main"] == [0, 1]
    assert s.finished() and s.totals("side")["calls"] == 1 and s.totals("main")["calls"] == 2
    print("main:", s.totals("main"), "side:", s.totals("side"))
