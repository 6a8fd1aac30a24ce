"""Interrupt a run, then type the same command again (issue 27, point 5).

One pack, one sequence of runs of the very same command (no --rerun-incomplete, no --unlock):

A. Ctrl-C (SIGINT to the run's process group, twice, as a terminal sends) while agents run: the
   console says in one sentence that the run was interrupted and that the same command continues
   it; no traceback, no "failed job"; no job of it is left running.
B. The same command continues (the interrupted jobs' incomplete outputs rerun); while its agents
   run, ``kill -9`` of the snakemake process alone: no job process outlives it for long.
C. The same command again: it finishes (exit 0), keeps every job that had finished, and says in
   one line that it removed the lock the killed run left.

And, without a pipeline: the job launcher (sealbench.isolation.job_launch) ends the job's whole process tree
when the run that started it dies or when it is interrupted; the stop sentence of the console.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_resume import finished, smk_cmd  # noqa: E402

from packgen import FIX_AGENT, make_pack, write_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable


def processes_mentioning(text: str) -> dict[int, str]:
    """Live processes (not zombies) whose command line contains ``text`` (from /proc)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        if text in cmd and stat[stat.rindex(b")") + 2:][:1] != b"Z":
            out[int(entry)] = cmd.strip()
    return out


def wait_for(cond, timeout: float, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(cond())
        time.sleep(0.1)
    return False


def no_survivors(token: str, timeout: float = 8.0) -> dict[int, str]:
    """What still runs of the test's jobs after ``timeout`` s (empty: nothing)."""
    wait_for(lambda: not processes_mentioning(token), timeout)
    return processes_mentioning(token)


def run_bg(wd: Path, name: str) -> tuple[subprocess.Popen, Path]:
    err = wd / f"{name}.stderr"
    proc = subprocess.Popen(smk_cmd(wd, "--cores", "2", "gate"), stdout=subprocess.DEVNULL,
                            stderr=err.open("w"), start_new_session=True)
    return proc, err


def agents_running(token: str) -> bool:
    """An agent command of this test runs now (its shell: `: TOKEN; sleep ...`)."""
    return any(cmd.startswith("bash -c : ") for cmd in processes_mentioning(token).values())


@pytest.fixture(scope="module")
def story(tmp_path_factory) -> dict:
    """Runs A, B and C (see the module docstring) and keeps what each showed; the tests read it."""
    wd = tmp_path_factory.mktemp("interrupt") / "w"
    token = str(wd)
    make_pack(wd / "pack")  # 12 tasks: the fewest a holdout split takes
    # an agent waits (up to 30 s) while the file `hold` exists: long enough that one left running
    # after its run ended is seen; once it is removed, the run goes quickly
    hold = wd / "hold"
    slow = f": {token}; n=0; while [ -e {hold} ] && [ $n -lt 60 ]; do sleep 0.5; n=$((n+1)); done; "
    write_config(wd / "cfg.yaml", wd / "pack", sandbox="off",  # no sandbox: nothing ends an agent but the harness
                 agents={"fixer": {"command": slow + FIX_AGENT},
                         "idle": {"command": slow + FIX_AGENT.split(";", 1)[1]}})
    out: dict = {"wd": wd, "token": token}
    hold.touch()
    # A: Ctrl-C while agents run (and a second one, as an impatient person does)
    proc, err = run_bg(wd, "a")
    out["a_reached_agents"] = wait_for(lambda: agents_running(token), 240, proc)
    for pause in (0.7, 0):
        try:
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(pause)
    try:
        out["a_rc"] = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out["a_rc"] = "hung"
    out["a_stderr"] = err.read_text()
    out["a_survivors"] = no_survivors(token)
    for pid in out["a_survivors"]:  # do not let a survivor disturb the next run
        os.kill(pid, signal.SIGKILL)
    out["a_finished"] = finished(wd)
    # B: the same command; kill -9 of the snakemake process alone while its agents run
    proc, err = run_bg(wd, "b")
    out["b_reached_agents"] = wait_for(lambda: agents_running(token), 240, proc)
    out["b_rc_before_kill"] = proc.poll()
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    out["b_stderr"] = err.read_text()
    out["b_survivors"] = no_survivors(token)
    for pid in out["b_survivors"]:
        os.kill(pid, signal.SIGKILL)
    out["b_finished"] = finished(wd)
    # C: the same command finishes the run
    hold.unlink()
    proc, err = run_bg(wd, "c")
    try:
        out["c_rc"] = proc.wait(timeout=400)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out["c_rc"] = "hung"
    out["c_stderr"] = err.read_text()
    out["c_finished"] = finished(wd)
    return out


def _lines(text: str, word: str) -> list[str]:
    return [ln for ln in text.splitlines() if word in ln]


@pytest.mark.pipeline
def test_ctrl_c_says_interrupted_and_how_to_continue(story: dict) -> None:
    assert story["a_reached_agents"], story["a_stderr"][-2000:]
    assert story["a_rc"] not in (0, "hung"), story["a_stderr"][-2000:]
    text = story["a_stderr"]
    assert "Traceback" not in text, text[-3000:]
    assert "failed job" not in text, text[-3000:]
    said = _lines(text, "interrupted")
    assert len(said) == 1 and "same command" in said[0], text[-3000:]
    assert not _lines(text, "removed the lock"), "a first run here has no lock of an earlier run to speak of"


@pytest.mark.pipeline
def test_ctrl_c_leaves_no_job_running(story: dict) -> None:
    assert story["a_survivors"] == {}, story["a_survivors"]


@pytest.mark.pipeline
def test_the_same_command_continues_after_ctrl_c(story: dict) -> None:
    assert story["b_reached_agents"] and story["b_rc_before_kill"] is None, story["b_stderr"][-3000:]
    assert "IncompleteFiles" not in story["b_stderr"]
    # Ctrl-C let Snakemake unlock: no stale lock is spoken of
    assert not _lines(story["b_stderr"], "removed the lock"), story["b_stderr"][-3000:]
    kept = {k: v for k, v in story["a_finished"].items() if story["b_finished"].get(k) == v}
    assert kept == story["a_finished"], "jobs finished before Ctrl-C were redone"


@pytest.mark.pipeline
def test_kill_9_of_snakemake_leaves_no_job_running(story: dict) -> None:
    assert story["b_reached_agents"], story["b_stderr"][-3000:]
    assert story["b_survivors"] == {}, story["b_survivors"]


@pytest.mark.pipeline
def test_the_same_command_finishes_after_kill_9_and_says_the_lock_was_stale(story: dict) -> None:
    assert story["c_rc"] == 0, story["c_stderr"][-3000:]
    said = _lines(story["c_stderr"], "lock")
    assert len(said) == 1, story["c_stderr"][-3000:]
    assert "removed the lock" in said[0] and "no longer runs" in said[0] and "pid " in said[0], said
    for before in ("a_finished", "b_finished"):
        redone = [k for k, v in story[before].items() if story["c_finished"].get(k) != v]
        assert redone == [], f"finished jobs were redone: {redone}"
    assert (story["wd"] / "results" / "latest" / "decision.json").is_file()



@pytest.mark.pipeline
def test_the_unsandboxed_run_refuses_a_headline(story: dict) -> None:
    """The story's runs are unsandboxed (``sandbox: off``): its decision refuses a headline,
    ``UNSANDBOXED``, and the card says no run was isolated."""
    import json

    latest = story["wd"] / "results" / "latest"
    decision = json.loads((latest / "decision.json").read_text())
    assert decision["publishable"] is False and "UNSANDBOXED" in [r["code"] for r in decision["reasons"]]
    assert json.loads((latest / "card.json").read_text())["isolation"]["levels"] == ["none"]

# ------------------------------------------------------------------ the job launcher on its own (fast)

#: A stage that starts a command in a session of its own (as run_process starts an agent), says
#: so, then waits: what a job's tree looks like while an agent runs.
STAGE = textwrap.dedent("""
    import subprocess, sys, time
    from pathlib import Path
    p = subprocess.Popen(["bash", "-c", "sleep 47; :", sys.argv[1]], start_new_session=True)
    Path(sys.argv[2]).write_text(str(p.pid))
    if sys.argv[3:] == ["exit"]:
        p.kill(); p.wait()
        print("stage done")
        raise SystemExit(3)
    time.sleep(60)
""")


def _launch(tmp_path: Path, run_pid: int, *extra: str) -> tuple[subprocess.Popen, Path, Path]:
    (tmp_path / "fake_stage.py").write_text(STAGE)
    marker, log = tmp_path / "agent.pid", tmp_path / "job.log"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'scripts'}:{tmp_path}")
    proc = subprocess.Popen([PY, "-m", "sealbench.isolation.job_launch", str(run_pid), "fake_stage", str(tmp_path),
                             str(marker), *extra], env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    assert wait_for(lambda: marker.is_file() and marker.read_text().strip(), 20, proc), log.read_text()
    return proc, marker, log


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] != b"Z"


@pytest.mark.sandbox
def test_a_job_ends_with_everything_it_started_when_its_run_is_killed(tmp_path: Path) -> None:
    run = subprocess.Popen(["sleep", "120"])  # stands for the Snakemake process that started the job
    job, marker, log = _launch(tmp_path, run.pid)
    agent = int(marker.read_text())
    assert _alive(agent) and job.poll() is None
    run.kill()
    run.wait()
    assert job.wait(timeout=10) == 1
    assert wait_for(lambda: not _alive(agent), 5), "the agent's command outlived the run"
    assert processes_mentioning(str(tmp_path)) == {}
    assert "sealbench: job stopped: the run that started this job" in log.read_text()


@pytest.mark.sandbox
def test_ctrl_c_ends_a_job_with_everything_it_started_and_no_traceback(tmp_path: Path) -> None:
    run = subprocess.Popen(["sleep", "120"])
    try:
        job, marker, log = _launch(tmp_path, run.pid)
        agent = int(marker.read_text())
        job.send_signal(signal.SIGINT)
        assert job.wait(timeout=10) == -signal.SIGINT  # ends by the signal: its shell stops too
        assert wait_for(lambda: not _alive(agent), 5), "the agent's command outlived Ctrl-C"
        text = log.read_text()
        assert "Traceback" not in text and "sealbench: job stopped: interrupted (SIGINT)" in text, text
    finally:
        run.kill()
        run.wait()


@pytest.mark.sandbox
def test_a_job_that_ends_on_its_own_keeps_its_status_and_output(tmp_path: Path) -> None:
    """The honest case: the launcher changes nothing of a job that ends by itself."""
    run = subprocess.Popen(["sleep", "120"])
    try:
        job, _, log = _launch(tmp_path, run.pid, "exit")
        assert job.wait(timeout=20) == 3
        assert log.read_text() == "stage done\n"
        assert run.poll() is None
    finally:
        run.kill()
        run.wait()


@pytest.mark.sandbox
def test_a_job_whose_run_is_gone_runs_nothing(tmp_path: Path) -> None:
    run = subprocess.Popen(["true"])
    run.wait()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    res = subprocess.run([PY, "-m", "sealbench.isolation.job_launch", str(run.pid), "sealbench.no_such_module"],
                         env=env, capture_output=True, text=True, timeout=20)
    assert res.returncode == 1 and "has already ended; nothing was run" in res.stderr


# ------------------------------------------------------------------ the console's words (fast)


@pytest.mark.unit
def test_the_console_says_interrupted_or_failed_as_it_was(monkeypatch, tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    from sealbench.core import run_console
    from sealbench.isolation import job_launch
    from snakemake_logger_plugin_sealbench import compact

    assert compact.STOPPED == job_launch.STOPPED  # the plugin does not import sealbench
    said = run_console.stop_sentence(interrupted=True)
    assert "interrupted" in said and "same command" in said and "failed" not in said
    assert "failed job" in run_console.stop_sentence(interrupted=False)
    stopped_log, failed_log = tmp_path / "a.log", tmp_path / "b.log"
    stopped_log.write_text("started\n" + job_launch.STOPPED + "interrupted (SIGINT); the job reruns\n")
    failed_log.write_text("started\nTraceback (most recent call last):\nValueError: x\n")
    out = __import__("io").StringIO()
    console = compact.CompactConsole(out)
    for jobid, log in ((1, stopped_log), (2, failed_log)):
        console.jobs[jobid] = compact.Job("run_agent", f"t{jobid}", [str(log)], [])
        console.on_error(SimpleNamespace(jobid=jobid, rule_name="run_agent", log=[str(log)], indent=False))
    lines = out.getvalue().splitlines()
    assert [ln for ln in lines if ln.startswith("FAILED")] == [f"FAILED run_agent t2; its log: {failed_log}"]
    assert console.failed == 1
