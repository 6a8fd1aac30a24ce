"""The pack-level jobs' command lines do not grow with the pack.

A shell command is one argument to ``bash -c``, and Linux caps one argument at 128 KiB
(MAX_ARG_STRLEN): listing every task's leak report (leak_verdict) or sealed record
(pack_digests) on it, about 130 bytes each, broke the run of a pack of about a thousand tasks
with "Argument list too long". Both now read the plan's task list (``paths.task_list``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1]))
from packgen import make_pack, write_config  # noqa: E402
from pipeline_runs import smk  # noqa: E402
from sealbench.core import paths  # noqa: E402
from sealbench.stages import leak_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.pipeline
def test_the_pack_level_commands_name_no_task_file(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "pack", n=12)
    cfg = write_config(tmp_path / "cfg.yaml", pack)
    res = smk(tmp_path, "--workflow-profile", "none", "-n", "-p", "gate", configfile=cfg, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    (cmd,) = [ln for ln in out.splitlines() if "leak_check verdict" in ln]
    assert "leak-" not in cmd, cmd          # no report path on the line
    assert len(cmd) < 2000, len(cmd)
    (cmd,) = [ln for ln in out.splitlines() if "hash_pack aggregate" in ln]
    assert "sealed.json" not in cmd, cmd
    assert len(cmd) < 2000, len(cmd)


@pytest.mark.unit
def test_the_verdict_reads_the_reports_the_task_list_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    tsv = tmp_path / "task_list.tsv"
    tsv.write_text("task_id\ttask_digest\tfiles\tbytes\n" + "".join(f"t{i}\t{i:064x}\t3\t10\n" for i in range(3)))
    for i in range(3):
        rep = Path(paths.leak_report(f"t{i}", f"{i:064x}", "d" * 64))
        rep.parent.mkdir(parents=True)
        rep.write_text(json.dumps({"task_id": f"t{i}", "suspect": False, "hits": []}))
    assert leak_check.reports_of(tsv, "d" * 64) == [Path(paths.leak_report(f"t{i}", f"{i:064x}", "d" * 64))
                                                    for i in range(3)]
