"""A human session on a bundled task, driven like a person would (start, a failing check, a fix,
a green check, submit), then the real pipeline scores it beside the agents."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import NOOP_AGENT, write_config  # noqa: E402
from pipeline_runs import smk  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402

pytestmark = pytest.mark.pipeline
TASK = "xs01-band-boundary"


# batch_size 1, the default: the batched path runs the same steps (tests/stages/test_task_batch.py shows
# batched and per-task runs decide alike); one run of the whole bundled suite is enough CI time
@pytest.mark.parametrize("batch_size", [1])
def test_human_session_is_scored_beside_agents(tmp_path: Path, capsys, batch_size: int) -> None:
    import pandas as pd

    # four bundled tasks of each stratum (12: the fewest a split takes), the human's among them (the
    # whole suite scores the same steps 24 times over); without the suite's frozen split of all 24
    pack = tmp_path / "suite"
    keep = {f"{s}{i:02d}" for s in ("xs", "s", "m") for i in (1, 2, 3, 4)}  # xs01 is TASK
    shutil.copytree(ROOT / "suite", pack, ignore=lambda d, names: (
        [n for n in names if n.split("-", 1)[0] not in keep] if Path(d).name == "tasks"
        else ["split_manifest.json"] if Path(d) == ROOT / "suite" else []))
    assert len(list((pack / "tasks").iterdir())) == 12 and not (pack / "split_manifest.json").exists()
    cfg = write_config(tmp_path / "cfg.yaml", pack.resolve(), seed=20261129, holdout_frac=0.4,
                       agents={"idle": {"command": NOOP_AGENT}}, candidate="idle", baseline="empty_diff",
                       humans=["ana"], oracle_runs=2, batch_size=batch_size, envelope={"max_wall_s": 600, "max_steps": 10,
                                                                "max_output_tokens": 1000})
    results = tmp_path / "results"
    common = ["--config", str(cfg), "--results", str(results)]
    assert cli.main(["session", "start", TASK, "--role", "human", "--who", "ana", *common]) == 0
    ws = Path(next(line.split(":", 1)[1].strip() for line in capsys.readouterr().out.splitlines()
                   if line.lower().startswith("workspace")))
    assert cli.main(["session", "check", "--results", str(results)]) == 1
    subprocess.run(["git", "apply", str(pack / "tasks" / TASK / "oracle.patch")], cwd=ws, check=True)
    assert cli.main(["session", "check", "--results", str(results)]) == 0
    assert cli.main(["session", "submit", "--results", str(results)]) == 0

    res = smk(tmp_path, "--cores", "2", "gate", configfile=cfg)
    assert res.returncode == 0, res.stderr[-3000:]
    runs = pd.read_parquet(results / "latest" / "tables" / "runs.parquet")
    human = runs[runs.role == "human"]
    assert len(human) == 1
    row = human.iloc[0]
    assert row.task_id == TASK and row.solver == "ana" and row.status == "pass" and row.isolation == "human"
    assert row.time_to_green_s is not None and row.time_to_green_s > 0
    agents = runs[runs.role == "agent"]
    assert set(agents.isolation) == {"none" if sandbox.bwrap_problem() else "bwrap"}
