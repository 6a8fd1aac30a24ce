"""Issue 35.2, end to end: a covered package moves after a finished run; `sealbench progress` then
counts the runs and scores as stale, naming the package, and the next run names it, old → new
and why it counts, before its first job.

The package "moves" without touching the environment the tests run in: a distribution folder
(``iniconfig-99.0.dist-info``, no code) first on the path of the commands shadows the installed
iniconfig's metadata, which is all the toolchain reads (the code imported stays the installed one).
The run is asked for one file (one task's controls), so one job runs; what the console says
before it covers the whole plan."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from pipeline_runs import FinishedRun, copy_run, smk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from sealbench.core import paths  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.pipeline


def shadow(folder: Path, name: str, version: str) -> Path:
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "top_level.txt").write_text(f"{name}\n")
    return folder


def test_attack_a_moved_package_is_named_before_any_job(tmp_path: Path, default_run: FinishedRun) -> None:
    wd = copy_run(default_run, tmp_path / "w")
    was = metadata.version("iniconfig")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(shadow(tmp_path / "shadow", "iniconfig", "99.0")),
                                                      str(ROOT / "scripts")]))
    progress = subprocess.run([sys.executable, "-m", "sealbench.app.cli", "progress", "--configfile", "cfg.yaml",
                               "--replace-workflow-config", "--results", "results"], capture_output=True, text=True,
                              cwd=wd, env=env, timeout=600)
    assert progress.returncode == 0, progress.stderr[-3000:]
    out = progress.stdout
    # 12 tasks, agents fixer and idle, one epoch: every control, attempt and score is stale
    assert "stale: 60 outputs (run_dummy 12, run_agent 24, hidden_score 24)" in out, out
    assert f"iniconfig {was} → 99.0 (" in out, out
    assert "the next run decides again" in out, out
    rows = {ln.split("│")[1].strip(): ln.split("│")[2].strip() for ln in out.splitlines() if ln.count("│") > 3}
    assert rows["run_dummy"] == "0" and rows["hash_pack"] == "12", rows

    t00 = next((wd / "results" / "tasks" / "t00").iterdir())
    target = paths.controls("t00", t00.name)
    res = smk(wd, "--cores", "1", target, env=env, console=True)
    assert res.returncode == 0, res.stdout[-4000:]
    lines = res.stdout.splitlines()
    said = next(i for i, ln in enumerate(lines) if "earlier results are out of date" in ln)
    first_job = next(i for i, ln in enumerate(lines) if "jobs to run" in ln or ln.startswith("["))
    assert said < first_job, res.stdout[-4000:]
    assert "60 earlier results are out of date and are made again (jobs run_dummy 12, run_agent 24, " \
           "hidden_score 24)" in lines[said], lines[said]
    assert lines[said + 1].strip() == "the toolchain the tests and agents run (run_dummy 12, run_agent 24, " \
                                      "hidden_score 24):", lines[said + 1]
    assert lines[said + 2].strip().startswith(f"iniconfig {was} → 99.0 ("), lines[said + 2]
