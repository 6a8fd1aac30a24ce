"""The leak check reports every suspect of the pack in one run (issue 13, point 8d).

A pack with two leaky tasks — t03 whose title reruns a denylisted public issue, t07 whose prompt
shows a line of its hidden tests — must name both, each with the field that matched and what it
matched, through `sealbench leak-check` and through one real snakemake run; and that run must
stop before any control or agent job of any task.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import make_pack, write_config, write_task  # noqa: E402
from pipeline_runs import smk  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.stages import leak_check  # noqa: E402

TITLE = "Modeling's separability_matrix does not compute separability correctly for nested models"
HIDDEN_LINE = "assert add(3, 4) == 7 and add(-1, 1) == 0"


def two_leaky_tasks(pack: Path) -> Path:
    """A 12-task pack whose t03 (title) and t07 (prompt.md) are leak suspects."""
    make_pack(pack)
    tasks = pack / "tasks"
    shutil.rmtree(tasks / "t03")
    write_task(tasks, "t03", "xs", title=TITLE)
    (tasks / "t07" / "prompt.md").write_text(f"Task t07: the total is wrong. Make this hold: {HIDDEN_LINE}\n")
    return pack


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))


@pytest.mark.sandbox
def test_cli_names_every_suspect_with_field_and_match(tmp_path: Path) -> None:
    pack = two_leaky_tasks(tmp_path / "pack")
    res = subprocess.run([sys.executable, "-m", "sealbench.app.cli", "leak-check", str(pack)], capture_output=True,
                         text=True, env=_env(), cwd=tmp_path)
    out = res.stdout + res.stderr
    assert res.returncode == 1, out
    assert "Traceback" not in out
    assert "LEAK SUSPECT: task 't03'" in out and "LEAK SUSPECT: task 't07'" in out
    # the summary, all suspects together: task id, field, what matched
    assert "2 of 12 tasks are leak suspects (t03, t07)" in out, out
    assert "t03: title: " in out and "denylist.txt:2" in out and "token_overlap" in out
    assert "t07: prompt.md: hidden test line" in out and "add(3, 4) == 7" in out


@pytest.mark.unit
def test_per_task_jobs_record_and_the_verdict_names_every_suspect(tmp_path: Path, capsys) -> None:
    pack = two_leaky_tasks(tmp_path / "pack")
    reports = []
    for t in sorted(p.name for p in (pack / "tasks").iterdir()):
        out = tmp_path / "leaks" / f"{t}.json"
        rc = leak_check.main(["--task", str(pack / "tasks" / t), "--denylist", str(pack / "denylist.txt"),
                              "--out", str(out), "--no-public-corpus", "--record"])
        assert rc == 0  # a suspect is recorded; the job succeeds
        reports.append(out)
    assert [json.loads(p.read_text())["suspect"] for p in reports].count(True) == 2
    capsys.readouterr()
    verdict = tmp_path / "verdict.json"
    rc = leak_check.main(["verdict", "--out", str(verdict), *map(str, reports)])
    err = capsys.readouterr().err
    assert rc == 1 and not verdict.exists()
    assert "2 of 12 tasks are leak suspects (t03, t07)" in err
    assert "t03: title: denylist.txt:2" in err and "t07: prompt.md: hidden test line" in err
    # without the suspects the verdict is written
    clean = [p for p in reports if p.stem not in ("t03", "t07")]
    assert leak_check.main(["verdict", "--out", str(verdict), *map(str, clean)]) == 0
    assert json.loads(verdict.read_text())["suspects"] == [] and json.loads(verdict.read_text())["checked"] == 10


@pytest.mark.pipeline
def test_one_pipeline_run_names_both_suspects_before_any_control_or_agent(tmp_path: Path) -> None:
    two_leaky_tasks(tmp_path / "pack")
    write_config(tmp_path / "cfg.yaml", tmp_path / "pack")
    # one core: jobs run one at a time, so a run that stops at its first failed job shows one suspect
    res = smk(tmp_path, "--cores", "1", "gate")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert "LEAK SUSPECT: task 't03'" in out and "LEAK SUSPECT: task 't07'" in out, out[-4000:]
    assert "2 of 12 tasks are leak suspects (t03, t07)" in out, out[-4000:]
    assert "t03: title: " in out and "t07: prompt.md: hidden test line" in out
    results = tmp_path / "results"
    assert len(list(results.glob("tasks/*/*/leak-*.json"))) == 12  # every task was checked
    # nothing after the leak check ran, for any task: no control, no agent run, no decision
    assert not list(results.glob("tasks/*/*/controls/controls.json"))
    assert not list(results.glob("tasks/*/*/runs/*/*/*/run.json"))
    assert not (results / "latest").exists()
