"""Human sessions (`sealbench session ...`): same workspace, visible command, clock and run record
as an agent run, driven through the session functions and once through `cli.main`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIXED, make_pack, write_config  # noqa: E402
from sealbench.agent import session  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

#: The keys of a run_agent record, read from a real agent run in `agent_record_keys`.
EXTRA_KEYS = {"who", "session_id"}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A generated pack + config, results in tmp, scratch folders in tmp."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("SEALBENCH_TMPDIR", str(scratch))
    pack = make_pack(tmp_path / "pack", n=3)
    cfg = write_config(tmp_path / "config.yaml", pack)
    return {"pack": pack, "config": cfg, "results": tmp_path / "results", "scratch": scratch, "tmp": tmp_path}


def start(env: dict, task: str = "t00", who: str = "ana", **kw) -> session.Session:
    return session.start_session(task, who, "human", env["config"], env["results"], **kw)


def git_apply(patch: Path, ws: Path) -> None:
    subprocess.run(["git", "apply", str(patch)], cwd=ws, check=True)


@pytest.fixture(scope="module")
def agent_record_keys(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The key set of a real run_agent record (on a sealed copy, as test_run_agent does)."""
    tmp = tmp_path_factory.mktemp("agent")
    pack = make_pack(tmp / "p", n=1)
    t = pack / "tasks" / "t00"
    sealed = tmp / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, tmp / "sealed.json")
    rec = run_agent.run_agent(sealed, tmp / "run", "a", "0" * 16, "true", {}, 1,
                              {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100})
    return set(rec)


@pytest.mark.sandbox
def test_full_session_writes_an_agent_shaped_run_record(env: dict, agent_record_keys: set[str]) -> None:
    s = start(env)
    d = s.data
    ws = Path(d["workspace"])
    assert d["status"] == "open" and d["role"] == "human" and d["who"] == "ana"
    assert d["session_id"] == "t00-ana-1" and d["task_digest"] == core.task_digest(env["pack"] / "tasks" / "t00")
    assert d["time_box_s"] == 60.0 and d["pack"] == str(env["pack"].absolute())
    assert ws.is_relative_to(env["scratch"]) and (ws / "visible_tests" / "check_visible.py").exists()
    assert not (ws / "hidden_tests").exists() and not (ws / "oracle.patch").exists()
    prompt = s.dir / "prompt.md"
    assert prompt.read_text().startswith("Task t00") and not prompt.stat().st_mode & 0o222
    assert (env["results"] / "sessions" / "current").read_text().strip() == "t00-ana-1"

    rc, first = session.check(results=env["results"])
    assert rc == 1 and first["exit"] == 1 and first["end_s"] >= first["start_s"] >= 0
    git_apply(env["pack"] / "tasks" / "t00" / "oracle.patch", ws)
    rc, _ = session.check(results=env["results"])
    assert rc == 0
    line = session.steer("pointed at calc.add", results=env["results"])
    assert line["text"] == "pointed at calc.add" and line["t_s"] >= 0
    st = session.status(results=env["results"])
    assert [a["exit"] for a in st.attempts] == [1, 0] and st.steer_count == 1 and st.remaining_s > 0

    rec = session.submit(results=env["results"])
    run_dir = Path(rec["run_dir"])
    assert run_dir == env["results"].absolute() / "tasks" / "t00" / d["task_digest"] / "sessions" / "ana" / "1"
    run = json.loads((run_dir / "run.json").read_text())
    assert set(run) == agent_record_keys | EXTRA_KEYS
    assert run["role"] == "human" and run["solver"] == "ana" and run["who"] == "ana"
    assert run["session_id"] == "t00-ana-1" and run["epoch"] == 1 and run["command"] == "human session"
    assert run["fingerprint"] == core.sha256_text("human:ana")[:16]
    assert [a["exit"] for a in run["attempts"]] == [1, 0]
    assert run["steer_count"] == 1 and run["exit_code"] == 0
    assert run["end_reason"] == "submit" and run["timed_out"] is False
    assert run["usage"] == {"tokens_in": None, "tokens_out": None, "cost_usd": None, "steps": None}
    assert run["stamp"] == {"server_id": "human", "queue_ms": 0, "retries": 0, "quota_state": "n/a",
                            "route_changed": False}
    assert run["envelope"] == {"max_wall_s": 60, "max_steps": 10, "max_output_tokens": 1000}
    assert run["time_box_s"] == 60.0 and run["task_time_box_s"] == 60 and run["base_commit"] == d["base_commit"]
    patch = (run_dir / "patch.diff").read_text()
    assert "+    return a + b" in patch and run["patch_bytes"] == len(patch.encode())
    assert not ws.exists() and not Path(d["scratch"]).exists()
    closed = json.loads((s.dir / "session.json").read_text())
    assert closed["status"] == "submitted" and closed["run_dir"] == str(run_dir) and closed["submitted_at"]

    with pytest.raises(session.SessionError, match="already submitted"):
        session.submit(results=env["results"])
    with pytest.raises(session.SessionError, match="already submitted"):
        session.check(results=env["results"])

    # The pipeline's scorer takes the human record as it takes an agent's.
    t = env["pack"] / "tasks" / "t00"
    sealed = env["tmp"] / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, env["tmp"] / "sealed.json")
    score = hidden_score.score_run(sealed, run_dir, env["tmp"] / "score.json", 30)
    assert score["status"] == "pass" and score["time_to_green_s"] == run["attempts"][1]["end_s"]


@pytest.mark.sandbox
def test_second_session_is_epoch_two_and_steers_default_to_zero(env: dict) -> None:
    for n in (1, 2):
        s = start(env)
        assert s.id == f"t00-ana-{n}"
        (Path(s.data["workspace"]) / "calc.py").write_text(FIXED)
        rec = session.submit(results=env["results"])
        assert rec["epoch"] == n and rec["steer_count"] == 0 and rec["attempts"] == []
    # another person's session on the same task is its own solver, epoch 1
    s = start(env, who="ben_2")
    (s.dir / "out" / "steers.jsonl").unlink()  # absent file: none recorded
    rec = session.submit(session_id=s.id, results=env["results"])
    assert rec["epoch"] == 1 and rec["solver"] == "ben_2" and rec["steer_count"] == 0 and rec["patch_bytes"] == 0


@pytest.mark.sandbox
def test_over_the_time_box_is_a_timeout(env: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(session, "_now", lambda: clock[0])
    s = start(env)
    clock[0] += 30
    assert session.status(results=env["results"]).remaining_s == 30
    clock[0] += 31  # 61 s > the 60 s box
    assert "OVER" in session.clock_line(session.resolve(env["results"]))
    rec = session.submit(results=env["results"])
    assert rec["wall_s"] == 61.0 and rec["timed_out"] is True and rec["end_reason"] == "time_box"
    assert s.data["time_box_s"] == rec["time_box_s"] == 60.0


@pytest.mark.sandbox
def test_time_box_is_capped_by_the_envelope(env: dict) -> None:
    cfg = write_config(env["tmp"] / "short.yaml", env["pack"],
                       envelope={"max_wall_s": 15, "max_steps": 10, "max_output_tokens": 1000})
    s = session.start_session("t01", "ana", "human", cfg, env["results"])
    assert s.data["time_box_s"] == 15.0 and s.data["task_time_box_s"] == 60


@pytest.mark.unit
@pytest.mark.parametrize("task,who,role,message", [
    ("nope", "ana", "human", "task 'nope' is not in pack"),
    ("t00", "ana", "agent", "role 'agent' is not supported"),
    ("t00", "1ana", "human", "must match"),
    ("t00", "ana-b", "human", "must match"),
    ("t00", "", "human", "must match"),
])
def test_start_refusals(env: dict, task: str, who: str, role: str, message: str) -> None:
    with pytest.raises(session.SessionError, match=message):
        session.start_session(task, who, role, env["config"], env["results"])
    assert not list(env["scratch"].iterdir())  # nothing built


@pytest.mark.sandbox
def test_one_open_session_per_person_and_task(env: dict) -> None:
    s = start(env)
    with pytest.raises(session.SessionError, match="already has an open session on t00: t00-ana-1"):
        start(env)
    other = start(env, task="t01")  # another task is fine, and becomes current
    assert session.resolve(env["results"]).id == other.id
    assert session.status(session_id=s.id, results=env["results"]).session.id == s.id


@pytest.mark.unit
def test_no_session_says_how_to_start(env: dict) -> None:
    for call in (lambda: session.check(results=env["results"]), lambda: session.submit(results=env["results"]),
                 lambda: session.steer("x", results=env["results"]), lambda: session.status(results=env["results"])):
        with pytest.raises(session.SessionError, match="sealbench session start TASK --role human --who NAME"):
            call()
    with pytest.raises(session.SessionError, match="not a session id"):
        session.status(session_id="../etc", results=env["results"])


@pytest.mark.sandbox
def test_cli_round_trip(env: dict, capsys: pytest.CaptureFixture) -> None:
    res = str(env["results"])
    assert cli.main(["session", "start", "t02", "--role", "human", "--who", "cli", "--config", str(env["config"]),
                     "--results", res]) == 0
    out = capsys.readouterr().out
    s = session.resolve(env["results"])
    assert s.data["workspace"] in out and "Task t02" in out and "1m00s" in out
    assert "run `sealbench session check` to run the visible tests" in out
    assert cli.main(["session", "check", "--results", res]) == 1
    assert "remaining" in capsys.readouterr().out
    (Path(s.data["workspace"]) / "calc.py").write_text(FIXED)
    assert cli.main(["session", "check", "--results", res]) == 0
    assert cli.main(["session", "steer", "said: look at the sign", "--results", res]) == 0
    assert cli.main(["session", "status", "--results", res]) == 0
    assert "visible attempts (2)" in capsys.readouterr().out
    assert cli.main(["session", "submit", "--results", res]) == 0
    out = capsys.readouterr().out
    assert "within the time box" in out and "run.json" in out
    assert cli.main(["session", "submit", "--results", res]) == 2
    assert "already submitted" in capsys.readouterr().err
    assert cli.main(["session", "start", "t02", "--role", "robot", "--who", "cli", "--config",
                     str(env["config"]), "--results", res]) == 2


@pytest.mark.sandbox
def test_bundled_suite_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the shipped config names the pack relatively (`suite`)
    monkeypatch.setenv("SEALBENCH_TMPDIR", str(tmp_path))
    results = tmp_path / "results"
    s = session.start_session("xs01-band-boundary", "dev", "human", Path("config/config.yaml"), results)
    assert s.data["pack"] == str(ROOT / "suite") and s.data["time_box_s"] == 1200.0
    rc, _ = session.check(results=results)
    assert rc != 0
    git_apply(ROOT / "suite" / "tasks" / "xs01-band-boundary" / "oracle.patch", Path(s.data["workspace"]))
    rc, _ = session.check(results=results)
    assert rc == 0
    rec = session.submit(results=results)
    assert rec["end_reason"] == "submit" and [a["exit"] for a in rec["attempts"]][1:] == [0]
    assert rec["patch_bytes"] > 0 and not Path(s.data["workspace"]).exists()
