"""The clients tier (issue 34): each named client installed from its registry at the version the
preset pins, its documented two-line config copied as written, run by ``sealbench try`` on a
bundled task against a scripted model server that drives the client's own shell tool to apply the
task's gold patch (aider, which has none, through its own edit format: the files the patch
leaves): PASS, tokens metered equal to the server's own totals, and a misconfigured client
stopped with its own error line.

Run by ``.ci/run`` after the other tiers (``pytest -m clients``); installs go to
``$SEALBENCH_CLIENTS`` (default ``~/.cache/sealbench/clients``) and are kept between runs.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from sealbench.agent import clients
from sealbench.app import cli
from sealbench.testing.fake_llm import FakeLLM
from sealbench.testing.scripted_anthropic import ScriptedAnthropic
from sealbench.testing.scripted_gemini import ScriptedGemini

pytestmark = pytest.mark.clients

ROOT = Path(__file__).resolve().parents[2]
TASK = "xs03-cargo-amount-whitespace"          # a tune task of the bundled suite
MODEL = "scripted-model"
NEEDS = {"aider": None, "claude-code": None, "codex": None, "gemini-cli": None, "mini-swe-agent": None}


def _apply_gold(task: Path) -> str:
    """A shell command that applies the task's gold patch (what the scripted model asks for)."""
    patch = (task / "oracle.patch").read_text()
    tag = "SEALBENCH_GOLD_PATCH_END"
    assert tag not in patch
    return f"git apply --whitespace=nowarn <<'{tag}'\n{patch}{'' if patch.endswith(chr(10)) else chr(10)}{tag}"


def _server(name: str, commands: list[str]):
    if name == "aider":     # no shell tool: the gold patch's result as one edit in aider's own format
        from sealbench.testing.scripted_aider import ScriptedAider, edits_from_patch

        task = ROOT / "suite" / "tasks" / TASK
        return ScriptedAider([edits_from_patch(task / "repo", (task / "oracle.patch").read_text())])
    if name == "claude-code":
        return ScriptedAnthropic(commands)
    if name == "gemini-cli":
        return ScriptedGemini(commands)
    if name == "mini-swe-agent":
        return FakeLLM(commands, mode="tool")
    from sealbench.testing.scripted_openai_responses import ScriptedResponses

    return ScriptedResponses(commands)


def _server_totals(name: str, srv) -> tuple[int, int]:
    """(tokens in, tokens out) the server reported, all calls, in the meter's terms: every input
    token the server counted (cache creation and cache reads included) and every output token."""
    t = srv.totals()
    if name == "claude-code":
        return (t["input_tokens"] + t["cache_creation_input_tokens"] + t["cache_read_input_tokens"],
                t["output_tokens"])
    if name == "gemini-cli":
        return t["promptTokenCount"], t["candidatesTokenCount"] + t.get("thoughtsTokenCount", 0)
    if name in ("mini-swe-agent", "aider"):
        return t["prompt_tokens"], t["completion_tokens"]
    return t["input_tokens"], t["output_tokens"]


def _config(tmp: Path, name: str, endpoint: str) -> Path:
    """The bundled config with one agent: the documented preset, two lines and the server."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["pack"] = str(ROOT / "suite")
    cfg["agents"]["cand"] = {"client": name, "model": MODEL, "endpoint": endpoint}
    out = tmp / "cfg.yaml"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


@pytest.fixture(scope="module", autouse=True)
def _installed() -> None:
    """Each client installed once (kept between runs in the clients folder)."""
    for name in NEEDS:
        client = clients.CLIENTS[name]
        clients.install(client, client.version)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_the_documented_preset_passes_a_bundled_task_metered_exactly(name: str, tmp_path: Path, capsys,
                                                                     monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    task = ROOT / "suite" / "tasks" / TASK
    with _server(name, [_apply_gold(task), "git diff --stat"]) as srv:
        cfg = _config(tmp_path, name, f"127.0.0.1:{srv.port}")
        rc = cli.main(["try", "cand", TASK, "--config", str(cfg), "--results", str(tmp_path / "results")])
        out = capsys.readouterr()
        want_in, want_out = _server_totals(name, srv)
    assert rc == 0 and "→ PASS" in out.out, out.out[-4000:] + out.err[-2000:]
    [run_json] = list((tmp_path / "results").rglob("run.json"))
    run = json.loads(run_json.read_text())
    assert run["tokens_source"] == "metered", run["usage_metered"]
    assert (run["usage"]["tokens_in"], run["usage"]["tokens_out"]) == (want_in, want_out), \
        (run["usage"], run["usage_metered"], srv.totals())
    # the client's own working files stayed out of the workspace: the patch is the gold patch's files
    touched = {ln.split(" b/", 1)[1] for ln in (run_json.parent / "patch.diff").read_text().splitlines()
               if ln.startswith("diff --git ")}
    gold = {ln.split(" b/", 1)[1] for ln in (task / "oracle.patch").read_text().splitlines()
            if ln.startswith("diff --git ")}
    assert touched == gold, touched
    # the conversation is kept beside the run (issue 34 point 5), one line per reply the bridge relayed
    lines = (run_json.parent / "transcript.jsonl").read_text().splitlines()
    assert len(lines) == run["usage_metered"]["responses"] and json.loads(lines[0])["reply"]["status"] == 200


@pytest.mark.parametrize("name", ["claude-code"])  # every client's own words at a dead port: the stop test below
def test_a_misconfigured_client_fails_in_its_own_words(name: str, tmp_path: Path, capsys, monkeypatch) -> None:
    """The endpoint names a port nothing listens on: the client gives up on its own (its retries
    bounded by the preset) and the try shows the client's own error, not a runtime's banner."""
    monkeypatch.chdir(tmp_path)
    srv = _server(name, [])
    port = srv.port
    srv.httpd.server_close()    # the port is free again: nothing answers there
    cfg = _config(tmp_path, name, f"127.0.0.1:{port}")
    rc = cli.main(["try", "cand", TASK, "--config", str(cfg), "--results", str(tmp_path / "results")])
    out = capsys.readouterr().out
    assert rc == 0 and "→ FAIL" in out, out[-3000:]
    assert "Node.js v" not in out.splitlines()[-1]
    said = {"claude-code": "Unable to connect to API", "gemini-cli": "fetch failed"}[name]
    assert said in out, out[-3000:]


def test_an_upgrade_changes_the_fingerprint_and_an_unrelated_package_does_not(tmp_path: Path) -> None:
    from sealbench.provenance.identity import agent_identity

    root = tmp_path / "clients"
    client = clients.CLIENTS["gemini-cli"]
    fingerprints = {}
    for version in ("0.60.0", client.version):
        shutil.copytree(clients.install(client, version), clients.install_dir(client, version, root), symlinks=True)
        spec = clients.expand_agent("g", {"client": "gemini-cli", "version": version, "model": MODEL,
                                          "endpoint": "127.0.0.1:4000"}, root=root)
        fingerprints[version] = agent_identity("g", spec, base=tmp_path, cache=tmp_path / "hc.json")["fingerprint"]
    assert fingerprints["0.60.0"] != fingerprints[client.version]
    # another npm package installed globally, or another client beside it: the same fingerprint
    shutil.copytree(clients.install(clients.CLIENTS["claude-code"], clients.CLIENTS["claude-code"].version),
                    clients.install_dir(clients.CLIENTS["claude-code"], clients.CLIENTS["claude-code"].version, root),
                    symlinks=True)
    spec = clients.expand_agent("g", {"client": "gemini-cli", "model": MODEL, "endpoint": "127.0.0.1:4000"}, root=root)
    assert agent_identity("g", spec, base=tmp_path, cache=tmp_path / "hc.json")["fingerprint"] == \
        fingerprints[client.version]


@pytest.mark.first  # the tier's longest test: a worker starts on it at once (tests/conftest.py)
def test_a_pipeline_run_with_a_client_as_candidate_against_repair_gives_a_decision(tmp_path: Path) -> None:
    """Codex as the candidate of a whole pipeline run on a small pack, the built-in repair agent
    as its baseline: a decision, the client's tokens metered on every row, its transcript linked
    from report.html."""
    import subprocess

    from packgen import make_pack, write_config
    from pipeline_runs import smk_cmd

    wd = tmp_path / "wd"
    pack = make_pack(wd / "pack")
    with _server("codex", ["sed -i 's/a - b/a + b/' calc.py", "git diff --stat"]) as srv:
        write_config(wd / "cfg.yaml", pack, candidate="codex", baseline="repair",
                     agents={"codex": {"client": "codex", "model": MODEL, "endpoint": f"127.0.0.1:{srv.port}"},
                             "repair": {"command": "python -m sealbench.agents.repair --max-candidates 20",
                                        "offline": True}})
        res = subprocess.run(smk_cmd(wd, "--cores", "2", "gate"), capture_output=True, text=True)
        conversations = srv.conversations()
    assert res.returncode == 0, res.stderr[-3000:]
    latest = wd / "results" / "latest"
    decision = json.loads((latest / "decision.json").read_text())
    assert decision["publishable"] and decision["headline"] == 1.0, decision["reasons"]
    import pandas as pd

    runs = pd.read_parquet(latest / "tables" / "runs.parquet")
    mine = runs[runs.solver == "codex"]
    assert len(mine) and (mine.status == "pass").all(), mine[["task_id", "status", "reason"]]
    assert (mine.tokens_source == "metered").all() and (mine.tokens_in > 0).all()
    # each row's tokens are its own conversation's, as the server counted them
    for row in mine.itertuples():
        [served] = [c for c in conversations.values() if f"Task {row.task_id}:" in c["task"]]
        assert (row.tokens_in, row.tokens_out) == (served["input_tokens"], served["output_tokens"]), row.task_id
    card = json.loads((latest / "card.json").read_text())
    assert card["candidate"]["name"] == "codex" and card["candidate"]["client"] == {"name": "codex", "version": clients.CLIENTS["codex"].version,
                                           "model": MODEL}
    report = (latest / "report.html").read_text()
    assert report.count("transcript.jsonl") >= len(mine), "every codex run's transcript is linked"


def _last_words(rd: Path) -> str:
    text = "".join((rd / n).read_text(errors="replace") for n in ("agent.stdout", "agent.stderr") if (rd / n).exists())
    return text[-600:]


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_a_misconfigured_client_stops_after_its_first_runs_in_its_own_words(name: str, tmp_path: Path) -> None:
    """The endpoint names a port nothing listens on. As the pipeline runs them (run_agent jobs,
    the first three in parallel): the first three runs end with the client's own error, and the
    fourth does not start the client — its record says in one sentence that the first three all
    ended that way, quoting the client's own last line (not a runtime's banner)."""
    import os
    import subprocess
    import sys

    from packgen import make_pack
    from sealbench.core import core, paths
    from sealbench.stages import hash_pack

    proj = tmp_path / "proj"
    pack = make_pack(proj / "pack", n=4)
    results = proj / "results"
    srv = _server(name, [])
    port = srv.port
    srv.httpd.server_close()    # the port is free again: nothing answers there
    spec = clients.expand_agent("cand", {"client": name, "model": MODEL, "endpoint": f"127.0.0.1:{port}"})
    fp = "c" * 16
    env = dict(os.environ, **{paths.PACK_ENV: str(pack), paths.RESULTS_ENV: str(results)})

    def start(task: Path) -> tuple[subprocess.Popen, Path]:
        digest = core.task_digest(task)
        sealed = Path(paths.sealed_dir(task.name, digest, str(results)))
        hash_pack.seal_task(task, digest, sealed, Path(paths.sealed_record(task.name, digest, str(results))))
        rd = Path(paths.run_dir(task.name, digest, "cand", fp, 1, str(results)))
        argv = [sys.executable, "-m", "sealbench.stages.run_agent", "--sealed", str(sealed), "--run-dir", str(rd),
                "--agent", "cand", "--fingerprint", fp, "--spec", json.dumps(spec), "--epoch", "1",
                "--envelope", json.dumps({"max_wall_s": 120, "max_steps": 10, "max_output_tokens": 1000}),
                "--sandbox", "required"]
        return subprocess.Popen(argv, cwd=proj, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True), rd

    tasks = sorted((pack / "tasks").iterdir())
    first = [start(t) for t in tasks[:3]]
    records = []
    for proc, rd in first:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        records.append(json.loads((rd / "run.json").read_text()))
    # each ended on its own (not 0) or at the time box, with nothing done and no reply from the server
    assert all((r["exit_code"] not in (0, None) or r["end_reason"] == "time_box") and not r.get("patch_bytes")
               and r["usage_metered"]["responses"] == 0 for r in records), \
        [(r["exit_code"], r["wall_s"], r["end_reason"], _last_words(rd)) for r, (_p, rd) in zip(records, first)]
    proc, rd = start(tasks[3])
    out, _ = proc.communicate(timeout=300)
    fourth = json.loads((rd / "run.json").read_text())
    said = str(fourth.get("error"))
    assert said.startswith("stopped: the first 3 runs of cand all ended"), \
        (said, [(r["exit_code"], r["wall_s"], r["end_reason"], _last_words(rd)) for r, (_p, rd) in zip(records, first)])
    assert fourth["wall_s"] == 0 and not (rd / "agent.stderr").exists(), fourth  # the client was not started
    assert "Node.js v" not in said and " at " not in said.split("ended", 1)[1], said
    # the client's own last words (Gemini CLI's own are not more telling than this)
    words = {"claude-code": "API Error: Unable to connect to API", "codex": "stream disconnected before completion",
             "gemini-cli": "An unexpected critical error occurred", "aider": "The API provider's servers are down",
             "mini-swe-agent": "Connection error"}[name]
    assert words in said, said
    print(f"{name}: {said}")
