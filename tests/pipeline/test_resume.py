"""kill -9 in the middle of a run, then resume: finished jobs are not redone, nothing is left
half-written, and the decision equals an uninterrupted run's."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import make_pack, write_config  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.pipeline


def incomplete(wd: Path) -> set[str]:
    """Outputs snakemake has marked incomplete (job started, not finished): a kill may land after a
    job wrote one output and before snakemake recorded the job as done; such a job is rightly redone."""
    root = wd / ".snakemake" / "incomplete"
    out = set()
    for rec in root.rglob("*") if root.is_dir() else ():
        if rec.is_file() and rec.name != "migration_underway":
            parts = rec.relative_to(root).parts
            b64 = "".join(part.removeprefix("@") for part in parts)
            out.add(base64.urlsafe_b64decode(b64).decode())
    return out


def finished(wd: Path) -> dict[str, int]:
    """Per-task outputs that are complete now (their mtimes)."""
    out = {}
    pending = incomplete(wd)
    for pattern in ("tasks/*/*/controls/controls.json", "tasks/*/*/runs/*/*/*/run.json", "tasks/*/*/scores/*/*/*.json"):
        for p in (wd / "results").glob(pattern):
            rel = str(p.relative_to(wd))
            if rel not in pending:
                out[rel] = p.stat().st_mtime_ns
    return out


def test_kill_and_resume(tmp_path: Path, default_run: FinishedRun) -> None:
    # the killed run has the default config, so the session's default run is its uninterrupted twin
    killed = tmp_path / "killed"
    make_pack(killed / "pack")
    write_config(killed / "cfg.yaml", killed / "pack")
    # kill -9 at two points of the run (early: controls; later: agents and scores), resuming each time
    snapshots = []
    for stop_at in (8, 30):
        proc = subprocess.Popen(smk_cmd(killed, "--cores", "2", "--rerun-incomplete", "gate"),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 600  # a guard only: the run reaches stop_at long before, even loaded
        while time.monotonic() < deadline and len(finished(killed)) < stop_at and proc.poll() is None:
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        before = finished(killed)
        snapshots.append(before)
        assert stop_at <= len(before) < 12 * 5, "killed in the middle of the run"
        for p in (killed / "results").rglob("*.json"):
            json.loads(p.read_text())  # every JSON present is whole (atomic writes)
        subprocess.run(smk_cmd(killed, "--unlock"), check=True, capture_output=True)
    res = subprocess.run(smk_cmd(killed, "--cores", "2", "--rerun-incomplete", "gate"), capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    after = finished(killed)
    redone = [k for snap in snapshots for k, v in snap.items() if after.get(k) != v]
    assert redone == [], f"finished jobs were redone: {redone}"
    straight = default_run.wd
    la, lb = killed / "results" / "latest", straight / "results" / "latest"
    # the killed run's agents that were stopped mid-run were drawn again: the decision says so
    # (issue 26: every draw on the record); apart from that disclosure it is the straight run's
    da = assert_same_but_interrupted_redraws(la, lb)
    assert "REDRAWN" not in [r["code"] for r in da["reasons"]]
    import pandas as pd

    # documented in docs/scale.md (Reliability); draw ids are fresh per draw, and a redrawn slot says so
    run_specific = ["wall_s", "time_to_green_s", "draw_id", "redraw"]
    ra = pd.read_parquet(la / "tables" / "runs.parquet").drop(columns=run_specific)
    rb = pd.read_parquet(lb / "tables" / "runs.parquet").drop(columns=run_specific)
    pd.testing.assert_frame_equal(ra, rb)


def assert_same_but_interrupted_redraws(resumed: Path, straight: Path) -> dict:
    """A resumed run's results/latest (``resumed``) against its uninterrupted twin's: the slots
    it drew again were all interrupted ones, and apart from disclosing them its decision and card
    are the twin's, its tasks and strata tables byte for byte. Returns the resumed decision."""
    da, db = (json.loads((x / "decision.json").read_text()) for x in (resumed, straight))
    redrawn = da["draw_record"]["redrawn"]
    assert all("interrupted" in r for r in redrawn), redrawn
    # a kill -9 between a draw's two appends (the pack's copy, then results/') leaves that draw in
    # one copy only: disclosed (RECORD_COPY_DIFFERS), and only for draws the kill interrupted
    for note in [n for n in da["notes"] if n["code"] == "RECORD_COPY_DIFFERS"]:
        lacking = [int(m) for m in re.findall(r"lacks (\d+) of", note["sentence"])]
        assert redrawn and sum(lacking) <= len(redrawn), (note, redrawn)
    assert _without_redraws(da) == _without_redraws(db)
    ca, cb = (json.loads((x / "card.json").read_text()) for x in (resumed, straight))
    ca["draw_record"]["redrawn_slots"] = cb["draw_record"]["redrawn_slots"]
    ca["draw_record"]["draws"] = cb["draw_record"]["draws"]
    assert ca == cb
    for table in ("tasks", "strata"):
        assert (resumed / "tables" / f"{table}.parquet").read_bytes() == \
            (straight / "tables" / f"{table}.parquet").read_bytes()
    return da


def _without_redraws(decision: dict) -> dict:
    """A decision without what only a redraw changes: the draw counts, the REDRAWN_SLOTS note
    (and RECORD_COPY_DIFFERS, checked by the caller), and the headline sentence's count of
    redrawn slots."""
    d = json.loads(json.dumps(decision))
    d.pop("draw_record")
    d["notes"] = [n for n in d["notes"] if n["code"] not in ("REDRAWN_SLOTS", "RECORD_COPY_DIFFERS")]
    d["allowed_sentences"] = [re.sub(r" \d+ run slot\(s\) were drawn again.*?\.(?= |$)", "", x)
                              for x in d["allowed_sentences"]]
    return d


def test_second_pipeline_on_the_same_results_is_refused(tmp_path: Path, default_run: FinishedRun) -> None:
    # a copy of the session's default run with its scores and decision deleted: the first
    # pipeline scores every run again (a minute of work), the second starts meanwhile
    wd = copy_run(default_run, tmp_path / "w")
    for scores in (wd / "results" / "tasks").glob("*/*/scores"):
        shutil.rmtree(scores)
    (wd / "results" / "latest" / "decision.json").unlink()
    lock = wd / "results" / ".sealbench" / "run.lock"
    lock.unlink()  # the copied run's record of its own (ended) lock: wait for the first pipeline's
    first = subprocess.Popen(smk_cmd(wd, "--cores", "2", "gate"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (lock.exists() and lock.read_text().startswith("pid")):
        time.sleep(0.2)
    second = subprocess.run(smk_cmd(wd, "--cores", "1", "gate"), capture_output=True, text=True)
    assert second.returncode != 0
    assert "another sealbench pipeline is running in this working directory" in second.stderr
    assert first.wait(timeout=300) == 0, "the first pipeline is not disturbed"
    assert json.loads((wd / "results" / "latest" / "decision.json").read_text())["publishable"] is True
