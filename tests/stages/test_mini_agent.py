"""mini-swe-agent as a sealbench agent, offline: the scripted OpenAI-compatible server
(``sealbench.testing.fake_llm``), one real ``mini`` run per mode through ``run_agent`` on a sealed
task (the clients tier: a pipeline run with a client as candidate is tests/clients/test_presets_live.py's).

The real-client tests are the clients tier: ``mini`` is the mini-swe-agent preset's own install
(``sealbench.agent.clients``), made from the registry on first use.
"""

from __future__ import annotations

import json
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.agents import mini as adapter  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402
from sealbench.testing.fake_llm import SUBMIT, FakeLLM  # noqa: E402


def mini_bin() -> str:
    """The real ``mini``: the mini-swe-agent preset's own install (agent.clients; made once, from the
    registry: these tests are the clients tier)."""
    from sealbench.agent import clients

    client = clients.CLIENTS["mini-swe-agent"]
    return str(clients.install(client, client.version) / client.bin)

FIX = "sed -i 's/a - b/a + b/' calc.py"
SCRIPT = ["cat calc.py", FIX, "$SEALBENCH_VISIBLE_CMD", SUBMIT]
ENVELOPE = {"max_wall_s": 60, "max_steps": 10, "max_output_tokens": 2000}


def post(fake: FakeLLM, body: dict, path: str = "/v1/chat/completions") -> bytes:
    req = urllib.request.Request(f"http://127.0.0.1:{fake.port}{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.read()


def sse(raw: bytes) -> list:
    lines = [ln[len("data: "):] for ln in raw.decode().split("\n\n") if ln.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(x) for x in lines[:-1]]


def convo(*turns: str) -> list[dict]:
    """system, task, then one (assistant, tool) pair per earlier turn."""
    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Task t00: fix add"}]
    for i, _ in enumerate(turns):
        msgs += [{"role": "assistant", "content": "ok", "tool_calls": [
            {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "output"}]
    return msgs


# ---------------------------------------------------------------------------------------------
# 1. the fake server alone


@pytest.mark.unit
def test_fake_server_tool_mode_plain_and_streaming() -> None:
    with FakeLLM(["ls", "cat calc.py"], mode="tool") as fake:
        r0 = json.loads(post(fake, {"model": "fake", "messages": convo()}))
        call = r0["choices"][0]["message"]["tool_calls"][0]
        assert call["type"] == "function" and call["function"]["name"] == "bash"
        assert json.loads(call["function"]["arguments"]) == {"command": "ls"}
        assert r0["choices"][0]["finish_reason"] == "tool_calls"
        assert r0["usage"]["prompt_tokens"] > 0 and r0["usage"]["completion_tokens"] > 0
        # the turn comes from the conversation: one earlier turn -> the second command
        events = sse(post(fake, {"model": "fake", "messages": convo("ls"), "stream": True,
                                 "stream_options": {"include_usage": True}}, path="/chat/completions"))
        calls = [tc for e in events for ch in e["choices"] for tc in ch["delta"].get("tool_calls", [])]
        assert json.loads(calls[0]["function"]["arguments"]) == {"command": "cat calc.py"}
        assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0
        # past the script: the finish command
        r2 = json.loads(post(fake, {"model": "fake", "messages": convo("ls", "cat")}))
        assert json.loads(r2["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]) == {"command": SUBMIT}
        reported = [r0["usage"], events[-1]["usage"], r2["usage"]]
        assert fake.totals() == {"prompt_tokens": sum(u["prompt_tokens"] for u in reported),
                                 "completion_tokens": sum(u["completion_tokens"] for u in reported), "calls": 3}
        [conv] = fake.conversations().values()
        assert conv["task"] == "Task t00: fix add" and conv["calls"] == 3


@pytest.mark.unit
def test_fake_server_text_mode_and_malformed_turn() -> None:
    with FakeLLM([None, "cat calc.py"], mode="text") as fake:
        bad = json.loads(post(fake, {"model": "fake", "messages": convo()}))["choices"][0]["message"]
        assert "```" not in bad["content"] and not bad.get("tool_calls")
        events = sse(post(fake, {"model": "fake", "messages": convo("x"), "stream": True}))  # no include_usage
        text = "".join(ch["delta"].get("content") or "" for e in events for ch in e["choices"])
        assert text.startswith("THOUGHT:") and "```mswea_bash_command\ncat calc.py\n```" in text
        assert "usage" in events[-1]
        assert fake.totals()["calls"] == 2


@pytest.mark.unit
def test_usage_from_trajectory_counts_format_errors_and_never_invents_cost() -> None:
    traj = {"info": {"model_stats": {"instance_cost": 0.0, "api_calls": 2}},
            "messages": [{"role": "system", "content": "s"},
                         {"role": "assistant", "extra": {"response": {"usage": {"prompt_tokens": 10, "completion_tokens": 3}}}},
                         {"role": "user", "extra": {"interrupt_type": "FormatError",
                                                    "response": {"usage": {"prompt_tokens": 12, "completion_tokens": 2}}}}]}
    assert adapter.usage_from_trajectory(traj) == {"tokens_in": 22, "tokens_out": 5, "cost_usd": None, "steps": 2}
    traj["info"]["model_stats"]["instance_cost"] = 0.25
    assert adapter.usage_from_trajectory(traj)["cost_usd"] == 0.25
    assert adapter.usage_from_trajectory({"messages": []})["steps"] is None


@pytest.mark.unit
def test_missing_mini_is_a_clear_error(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(adapter, "find_mini", lambda given=None: None)
    monkeypatch.setenv("SEALBENCH_OUT", str(tmp_path))
    assert adapter.main(["--model", "m", "--api-base", "http://127.0.0.1:1/v1"]) == 2
    assert "pip install mini-swe-agent" in capsys.readouterr().err
    assert not (tmp_path / "usage.json").exists()  # unknown, not invented
    assert json.loads((tmp_path / "mini_exit.json").read_text())["returncode"] == 2


# ---------------------------------------------------------------------------------------------
# 2. a real mini run on a sealed task, through run_agent and hidden_score


@pytest.mark.clients
@pytest.mark.parametrize("mode", ["tool", "text"])
def test_mini_fixes_a_sealed_task_and_reports_the_server_usage(tmp_path: Path, mode: str) -> None:
    base = tmp_path / f"secret-{uuid.uuid4().hex[:8]}"
    pack = make_pack(base / "pack")
    t = pack / "tasks" / "t00"
    sealed = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, base / "results" / "sealed.json")
    # text mode also plays one malformed turn: its usage must be counted too
    script = SCRIPT if mode == "tool" else [SCRIPT[0], None, *SCRIPT[1:]]
    rd = base / "results" / "run"
    with FakeLLM(script, mode=mode) as fake:
        command = f"python -m sealbench.agents.mini --model fake --api-base {fake.api_base} --mini {mini_bin()}"
        command += " --text-mode" if mode == "text" else ""
        options = run_agent.RunOptions(sandbox_mode="auto", endpoint=fake.endpoint,
                                       hide=(pack, base / "results"),
                                       readonly_paths=(Path(mini_bin()).parents[2],))
        rec = run_agent.run_agent(sealed, rd, "mini", "0" * 16, command, {}, 1, ENVELOPE, options)
        served = fake.totals()
    score = hidden_score.score_run(sealed, rd, base / "results" / "score.json", 30)
    log = (rd / "agent.stderr").read_text()[-3000:] + (rd / "agent.stdout").read_text()[-3000:]
    assert rec["exit_code"] == 0, log
    assert rec["isolation"] == ("none" if sandbox.bwrap_problem() else "bwrap")  # through the bridge
    assert score["status"] == "pass", (score, log)
    assert served["calls"] == len(script)
    assert rec["usage"] == {"tokens_in": served["prompt_tokens"], "tokens_out": served["completion_tokens"],
                            "cost_usd": None, "steps": served["calls"]}
    assert rec["stamp"] == {"server_id": fake.api_base, "queue_ms": 0, "retries": 0, "quota_state": "ok",
                            "route_changed": False}
    assert rec["steer_count"] == 0 and rec["report_problems"] == []
    assert json.loads((rd / "out" / "mini_exit.json").read_text())["exit_status"] == "Submitted"
    assert [a["exit"] for a in rec["attempts"]] == [0]  # mini ran $SEALBENCH_VISIBLE_CMD once, green
