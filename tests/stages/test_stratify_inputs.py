"""stratify finds every task's files from experiment.json (a command line cannot hold the
paths of 10,000 tasks x agents x epochs), at the paths the per-task rules write."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.stages.stratify import per_task_files  # noqa: E402


@pytest.mark.unit
def test_per_task_files_are_the_rule_paths_in_task_agent_epoch_order() -> None:
    exp = {"task_digests": {"t2": "b" * 64, "t1": "a" * 64}, "denylist_digest": "d" * 64,
           "agent_fingerprints": {"zed": "f" * 16, "amy": "e" * 16}, "config_full": {"epochs": 2}}
    files = per_task_files(exp, Path("results"))
    t1 = Path("results/tasks/t1") / ("a" * 64)
    assert files["sealed"][0] == t1 / "sealed.json"
    assert files["leaks"][0] == t1 / f"leak-{'d' * 64}.json"
    assert files["controls"] == [t1 / "controls/controls.json", Path("results/tasks/t2") / ("b" * 64) / "controls/controls.json"]
    assert files["scores"][:4] == [t1 / "scores/amy" / ("e" * 16) / "1.json", t1 / "scores/amy" / ("e" * 16) / "2.json",
                                   t1 / "scores/zed" / ("f" * 16) / "1.json", t1 / "scores/zed" / ("f" * 16) / "2.json"]
    assert len(files["scores"]) == 2 * 2 * 2


@pytest.mark.sandbox
def test_ten_thousand_tasks_need_no_paths_on_the_command_line() -> None:
    exp = {"task_digests": {f"t{i:05d}": f"{i:064x}" for i in range(10_000)}, "denylist_digest": "d" * 64,
           "agent_fingerprints": {f"a{k}": f"{k:016x}" for k in range(4)}, "config_full": {"epochs": 5}}
    files = per_task_files(exp, Path("results"))
    assert len(files["scores"]) == 200_000
    assert sum(len(str(p)) + 1 for p in files["scores"]) > 2 * 1024 * 1024  # more than ARG_MAX would take
