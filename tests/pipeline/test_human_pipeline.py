"""A human session on a task, driven like a person would (start, a failing check, a fix,
a green check, submit), then the real pipeline scores it beside the agents."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import write_config  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402

pytestmark = pytest.mark.pipeline
TASK = "t00"


def test_human_session_is_scored_beside_agents(tmp_path: Path, capsys, default_run: FinishedRun) -> None:
    import pandas as pd

    # the session's default run, copied, with a human added to its config: the agents' and the
    # controls' jobs are reused, the human's session is the new work
    wd = copy_run(default_run, tmp_path / "w")
    pack = wd / "pack"
    cfg = write_config(wd / "cfg.yaml", pack, humans=["ana"])
    results = wd / "results"
    common = ["--config", str(cfg), "--results", str(results)]
    assert cli.main(["session", "start", TASK, "--role", "human", "--who", "ana", *common]) == 0
    ws = Path(next(line.split(":", 1)[1].strip() for line in capsys.readouterr().out.splitlines()
                   if line.lower().startswith("workspace")))
    assert cli.main(["session", "check", "--results", str(results)]) == 1
    subprocess.run(["git", "apply", str(pack / "tasks" / TASK / "oracle.patch")], cwd=ws, check=True)
    assert cli.main(["session", "check", "--results", str(results)]) == 0
    assert cli.main(["session", "submit", "--results", str(results)]) == 0

    # the copied run's holdout was pre-registered without humans: adding one is
    # PREREGISTRATION_CHANGED, which the run's start foresees and stops on; run it anyway, the
    # human's score beside the agents' is what this test reads
    res = smk(wd, "--cores", "2", "gate", "--config", "run_anyway=true", configfile=cfg)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = pd.read_parquet(results / "latest" / "tables" / "runs.parquet")
    human = runs[runs.role == "human"]
    assert len(human) == 1
    row = human.iloc[0]
    assert row.task_id == TASK and row.solver == "ana" and row.status == "pass" and row.isolation == "human"
    assert row.time_to_green_s is not None and row.time_to_green_s > 0
    agents = runs[runs.role == "agent"]
    assert set(agents.isolation) == {"none" if sandbox.bwrap_problem() else "bwrap"}
