"""Client presets (sealbench.agent.clients): an agent entry that names its client expands to the
ordinary entry it stands for; its identity is the installed client's bits, nothing else.

Unit tier: installs are stand-ins (a folder with the marker a finished install writes), no
registry is reached. The real installs and runs are the clients tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sealbench.agent import clients
from sealbench.agent.clients import expand_config
from sealbench.core.configuration import validate_config
from sealbench.core.core import ConfigError
from sealbench.provenance.identity import agent_identity

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def _fake_install(root: Path, name: str, version: str, payload: bytes = b"\x7fELF client") -> Path:
    """What :func:`clients.install` leaves: the client's files and the marker, last."""
    client = clients.CLIENTS[name]
    folder = clients.install_dir(client, version, root)
    exe = folder / client.bin
    exe.parent.mkdir(parents=True)
    exe.write_bytes(payload + version.encode())
    exe.chmod(0o755)
    (folder / clients.MARKER).write_text(json.dumps({"client": name, "version": version}))
    return folder


@pytest.fixture
def cfg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv(clients.CLIENTS_ENV, str(tmp_path / "clients"))
    monkeypatch.chdir(ROOT)
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def _valid(cfg: dict) -> dict:
    """As the workflow and the CLI read a config: validated, then presets expanded."""
    return expand_config(validate_config(cfg))


def _with(cfg: dict, **entry) -> dict:
    return {**cfg, "agents": {**cfg["agents"], "cand": entry}, "candidate": "cand"}


@pytest.mark.parametrize("name", sorted(clients.CLIENTS))
def test_two_lines_are_a_whole_agent_and_expanding_again_changes_nothing(cfg, tmp_path, name) -> None:
    folder = _fake_install(tmp_path / "clients", name, clients.CLIENTS[name].version)
    out = _valid(_with(cfg, client=name, model="m-1", endpoint="127.0.0.1:4000"))
    spec = out["agents"]["cand"]
    assert spec["version"] == clients.CLIENTS[name].version and spec["model"] == "m-1"
    assert str(folder) in spec["readonly_paths"] and str(folder) in spec["code_paths"]
    # the task reaches the client (mini's adapter reads $SEALBENCH_PROMPT itself)
    assert "m-1" in spec["command"] and ("SEALBENCH_PROMPT" in spec["command"] or name == "mini-swe-agent")
    # the config written with the results validates to the same entry
    assert _valid(out)["agents"]["cand"] == spec
    # no real key is ever part of the preset: only the dummy credential
    assert all("sk-" not in str(v) for v in spec["env"].values())
    if name == "mini-swe-agent":  # rich wraps at 80 columns without a terminal: its error split in two lines
        assert int(spec["env"]["COLUMNS"]) >= 1000, spec["env"]


def test_an_upgrade_is_a_new_agent_and_an_unrelated_install_is_not(cfg, tmp_path) -> None:
    root = tmp_path / "clients"
    _fake_install(root, "codex", "0.170.0")
    _fake_install(root, "codex", "0.171.0")

    def fingerprint(**kw) -> str:
        spec = _valid(_with(cfg, client="codex", model="m", endpoint="127.0.0.1:4000", **kw))["agents"]["cand"]
        return agent_identity("cand", spec, base=ROOT, cache=tmp_path / "hc.json")["fingerprint"]

    old, new = fingerprint(version="0.170.0"), fingerprint(version="0.171.0")
    assert old != new
    # another client installed beside it, or another package in a global node_modules: not covered
    _fake_install(root, "gemini-cli", "0.61.0")
    (tmp_path / "global" / "node_modules" / "left-pad").mkdir(parents=True)
    (tmp_path / "global" / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    assert fingerprint(version="0.171.0") == new
    # a byte of the installed client (its native binary, say) is the client: covered
    exe = root / "codex-0.171.0" / clients.CLIENTS["codex"].bin
    exe.write_bytes(exe.read_bytes() + b"!")
    assert fingerprint(version="0.171.0") != new


@pytest.mark.parametrize("entry, says", [
    ({"client": "cursor", "model": "m", "endpoint": "127.0.0.1:1"}, "not one of"),
    ({"client": "codex", "model": "m"}, "endpoint"),
    ({"client": "codex", "model": "m", "endpoint": "127.0.0.1:1", "version": "latest"}, "version"),
    ({"client": "codex", "model": "m", "endpoint": "127.0.0.1:1", "command": "codex exec hi"},
     "runs the preset's command"),
    ({"client": "codex", "model": "m", "endpoint": "127.0.0.1:1", "env": {"DUMMY_LLM_API_KEY": "sk-real"}},
     "set by the codex preset"),
])
def test_a_wrong_preset_is_refused_naming_the_field(cfg, tmp_path, entry, says) -> None:
    _fake_install(tmp_path / "clients", "codex", clients.CLIENTS["codex"].version)
    with pytest.raises(ConfigError) as err:
        _valid(_with(cfg, **entry))
    assert "agents.cand" in str(err.value) and says in str(err.value), str(err.value)


def test_an_install_that_fails_says_the_installers_own_line(tmp_path, monkeypatch) -> None:
    """npm refusing a client that needs a newer Node is the install's error, not a silent older release."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"
    npm.write_text("#!/bin/sh\necho 'npm error notsup Required: {\"node\":\">=22.0.0\"}' >&2\nexit 1\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(ConfigError, match=r'installing client claude-code 2\.1\.332 failed.*node.*>=22'):
        clients.install(clients.CLIENTS["claude-code"], "2.1.332", tmp_path / "root")
    assert not clients.installed(tmp_path / "root" / "claude-code-2.1.332")


def test_an_install_that_gives_another_version_is_refused(tmp_path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npm = bin_dir / "npm"   # a registry answering an older release than the one asked for
    npm.write_text("#!/bin/sh\nwhile [ \"$1\" != --prefix ]; do shift; done\n"
                   "d=\"$2/node_modules/@openai/codex\"; mkdir -p \"$d\" \"$2/node_modules/.bin\"\n"
                   "echo '{\"version\": \"0.169.0\"}' > \"$d/package.json\"; touch \"$2/node_modules/.bin/codex\"\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(ConfigError, match="installed 0.169.0 instead"):
        clients.install(clients.CLIENTS["codex"], "0.171.0", tmp_path / "root")


def _failed_at_start(run_dir: Path, stderr: str, **record) -> str | None:
    from sealbench.agent.agent_health import start_failure

    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "agent.stderr").write_text(stderr)
    base = {"exit_code": 1, "wall_s": 1.5, "patch_bytes": 0, "timed_out": False,
            "usage": {"tokens_in": 0, "tokens_out": 0, "steps": None, "cost_usd": None},
            "usage_agent": {"tokens_in": None, "tokens_out": None, "steps": None, "cost_usd": None},
            "tokens_source": "metered", "usage_metered": {"responses": 0, "tokens_in": 0, "tokens_out": 0}}
    return start_failure({**base, **record}, run_dir)


NODE_CRASH = ("file:///opt/clients/codex/bin/codex.js:100\n    throw new Error(msg);\n    ^\n\n"
              "Error: Missing optional dependency @openai/codex-linux-x64. Reinstall Codex: npm install -g @openai/codex\n"
              "    at file:///opt/clients/codex/bin/codex.js:100:11\n    at ModuleJob.run (node:internal:1:1)\n\n"
              "Node.js v20.20.2\n")


def test_a_client_with_an_endpoint_that_fails_at_start_is_a_start_failure_in_its_own_words(tmp_path) -> None:
    """The bridge's zeros (no reply metered) are no sign the client started; the quoted line is the
    client's error, not Node's banner after it."""
    said = _failed_at_start(tmp_path / "r", NODE_CRASH)
    assert said is not None and said.startswith("Error: Missing optional dependency @openai/codex-linux-x64"), said


def test_a_client_whose_server_answered_or_that_reported_usage_did_start(tmp_path) -> None:
    answered = {"usage_metered": {"responses": 2, "tokens_in": 40, "tokens_out": 9}}
    assert _failed_at_start(tmp_path / "a", NODE_CRASH, **answered) is None
    reported = {"usage_agent": {"tokens_in": 10, "tokens_out": 3, "steps": 1, "cost_usd": None}}
    assert _failed_at_start(tmp_path / "b", NODE_CRASH, **reported) is None
    # without a bridge, the agent's own usage is its usage (as before)
    plain = {"tokens_source": "agent", "usage": {"tokens_in": 5, "tokens_out": 1, "steps": 1, "cost_usd": None}}
    assert _failed_at_start(tmp_path / "c", "boom\n", **plain) is None
    assert _failed_at_start(tmp_path / "d", "python: can't open file 'x.py'\n", tokens_source="agent",
                            usage={"tokens_in": None, "tokens_out": None, "steps": None, "cost_usd": None}) \
        == "python: can't open file 'x.py'"


#: What the clients printed, pointed at a port nothing listens on (the clients tier's
#: test_a_misconfigured_client_stops_after_its_first_runs_in_its_own_words, 2026-12-06)
CLAUDE_RESULT = ('{"type":"result","subtype":"success","is_error":true,"duration_ms":9568,"num_turns":1,'
                 '"result":"API Error: Unable to connect to API (ECONNRESET)","session_id":"79682d25-2106",'
                 '"uuid":"e52700f0-4692"}\n')
CODEX_EVENTS = ('{"type":"thread.started","thread_id":"01a24c3d"}\n'
                '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata not found."}}\n'
                '{"type":"turn.started"}\n'
                '{"type":"error","message":"Reconnecting... 1/2 (stream disconnected before completion: error sending request)"}\n'
                '{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request"}}\n')
CODEX_WARNING = ('WARNING: proceeding, even though we could not create PATH aliases: Refusing to create helper binaries '
                 'under temporary dir "/tmp"\n')
AIDER_RETRIES = ("litellm.InternalServerError: OpenAIException - Connection error.\n"
                 "The API provider's servers are down or overloaded.\nRetrying in 16.0 seconds...\n")


def test_a_client_whose_model_server_never_answered_failed_at_start_however_long_it_retried(tmp_path) -> None:
    """Attack (the clients tier found it): a client pointed at a dead port retries before it
    gives up — past the 5 s window (Claude Code 16 s, Gemini CLI 25 s, Codex 6 s) or to the time
    box (aider) — so its first runs never counted as failures at start and it ran every task. With
    the bridge and no reply at all, they do, quoting the client's own error: its JSON error event
    where it prints one (not the session ids around it, not a warning after it), else its last line
    before a retry's progress."""
    claude = tmp_path / "claude"
    claude.mkdir()
    (claude / "agent.stdout").write_text(CLAUDE_RESULT)
    assert _failed_at_start(claude, "", wall_s=15.8) == "API Error: Unable to connect to API (ECONNRESET)"
    codex = tmp_path / "codex"
    codex.mkdir()
    (codex / "agent.stdout").write_text(CODEX_EVENTS)
    assert _failed_at_start(codex, CODEX_WARNING, wall_s=5.6) == \
        "stream disconnected before completion: error sending request"
    aider = tmp_path / "aider"
    assert _failed_at_start(aider, AIDER_RETRIES, exit_code=None, timed_out=True, wall_s=60.0) == \
        "The API provider's servers are down or overloaded."


def test_a_late_failure_after_a_reply_or_without_a_bridge_is_not_a_failure_at_start(tmp_path) -> None:
    """Beside it, unchanged: a client whose server answered once started; a run without a bridge
    that failed after the 5 s window, or timed out, did not fail at start."""
    answered = {"usage_metered": {"responses": 1, "tokens_in": 40, "tokens_out": 9}}
    assert _failed_at_start(tmp_path / "a", AIDER_RETRIES, wall_s=30.0, **answered) is None
    assert _failed_at_start(tmp_path / "b", AIDER_RETRIES, exit_code=None, timed_out=True, wall_s=60.0,
                            **answered) is None
    plain = {"tokens_source": "agent", "usage_metered": None,
             "usage": {"tokens_in": None, "tokens_out": None, "steps": None, "cost_usd": None}}
    assert _failed_at_start(tmp_path / "c", "Traceback...\nValueError: late\n", wall_s=30.0, **plain) is None
    assert _failed_at_start(tmp_path / "d", "still working\n", exit_code=None, timed_out=True, wall_s=60.0,
                            **plain) is None


def test_a_client_counting_its_failed_call_as_a_step_and_ending_either_way_is_stopped(tmp_path) -> None:
    """mini-swe-agent against a dead port counts the failed call as a step (usage.json: 1 step,
    0 tokens) and ends after ~60 s, some runs by their own exit 1, some at the time box: with no
    reply at the bridge these are one way of failing at start, and the third run stops the agent."""
    from sealbench.agent.agent_health import note_health

    own = {"usage_agent": {"tokens_in": 0, "tokens_out": 0, "steps": 1, "cost_usd": None}}
    err = "InternalServerError: litellm.InternalServerError: InternalServerError:\nOpenAIException - Connection error.\n"
    health = tmp_path / "health.json"
    for i, end in enumerate([{"exit_code": 1, "wall_s": 58.7}, {"exit_code": None, "timed_out": True, "wall_s": 60.0},
                             {"exit_code": 1, "wall_s": 59.3}]):
        failure = _failed_at_start(tmp_path / f"r{i}", err, **own, **end)
        assert failure == "OpenAIException - Connection error.", failure
        state = note_health(health, {"solver": "mini", "fingerprint": "f" * 16, "task_id": f"t{i}", "epoch": 1,
                                     "usage_metered": {"responses": 0}, **end}, failure)
    assert state["stopped"] == ("stopped: the first 3 runs of mini all ended 'OpenAIException - Connection error.' "
                                "(no reply from its model server); fix the endpoint or the command and rerun")
