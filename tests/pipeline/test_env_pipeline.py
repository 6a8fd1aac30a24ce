"""One real pipeline run on a pack with a test environment (issue 14, point 1): build_env builds it
once, offline; the controls and a scored attempt run their commands in it, sandboxed; a second
plan reruns nothing; an edited requirements file rebuilds it and reruns the task's jobs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from envgen import offline_env_vars, offline_index  # noqa: E402
from packgen import make_pack, write_config  # noqa: E402

pytestmark = pytest.mark.pipeline


def snakemake(wd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **offline_env_vars(wd / "wheels"), "PYTHONPATH": str(ROOT / "scripts")}
    return subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(wd),
                           "--workflow-profile", "none", *args], cwd=wd, env=env, capture_output=True, text=True)


def test_a_pack_environment_is_built_once_and_its_tasks_run_in_it(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "pack")
    (pack / "environment").mkdir()
    (pack / "environment" / "requirements.txt").write_text("tinypkg==1.0\n")
    for t in (pack / "tasks").iterdir():  # every task's hidden test needs tinypkg
        h = t / "hidden_tests" / "check_hidden.py"
        h.write_text(h.read_text().replace("from calc import add", "import tinypkg\nfrom calc import add"))
    (tmp_path / "config").mkdir()
    write_config(tmp_path / "config" / "config.yaml", pack)
    offline_index(tmp_path / "wheels", {"tinypkg==1.0": {"tinypkg/__init__.py": "VALUE = 42\n"}})
    plan = snakemake(tmp_path, "-n", "gate")
    assert plan.returncode == 0, plan.stderr[-3000:]
    target = re.search(r"results/tasks/t00/[0-9a-f]{64}/scores/fixer/[0-9a-f]{16}/1\.json", plan.stdout).group(0)
    run = snakemake(tmp_path, "--cores", "2", target)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    envs = [p for p in (tmp_path / "results" / "envs").iterdir() if re.fullmatch(r"[0-9a-f]{64}", p.name)]
    assert len(envs) == 1
    record = json.loads((envs[0] / "env.json").read_text())
    assert "tinypkg==1.0" in record["lock"]
    # the build_env job passes the config's sandbox mode: sandboxed where bwrap works (issue 25.7)
    from sealbench.isolation.sandbox import bwrap_problem

    assert record["sandbox"] == ("bwrap" if bwrap_problem() is None else "none"), record
    base = Path(target).parents[3]
    controls = json.loads((tmp_path / base / "controls" / "controls.json").read_text())
    assert [r["status"] for r in controls["results"]] == ["fail", "fail", "pass", "pass"], controls["results"]
    assert controls["environment"]["digest"] == record["digest"]
    score = json.loads((tmp_path / target).read_text())
    assert score["status"] == "pass" and score["environment"]["digest"] == record["digest"], score["reason"]
    assert score["run"]["environment"]["digest"] == record["digest"]
    # planned again: nothing reruns (the environment's lock digest is stable once built)
    again = snakemake(tmp_path, "-n", target)
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
    # another requirements text: another environment, and the task's jobs rerun in it
    (pack / "environment" / "requirements.txt").write_text("tinypkg==1.0  # the test dependency\n")
    edited = snakemake(tmp_path, "-n", target)
    jobs = edited.stdout + edited.stderr
    assert edited.returncode == 0, jobs[-3000:]
    for rule in ("build_env", "run_dummy", "run_agent", "hidden_score"):
        assert re.search(rf"^{rule}\s+1$", jobs, re.M), (rule, jobs[-3000:])
