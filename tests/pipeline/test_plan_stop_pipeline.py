"""Issue 35 (4), end to end: a run whose refusal the holdout's ledger already decides stops at
its start, before any job, in the words ``sealbench validate`` prints; ``-n`` is not stopped;
``--config run_anyway=true`` runs. Only planning-time Snakemake calls on a copy of the session's
shared finished run (tests/pipeline_runs.py): no agent runs here (the unit tests are
tests/app/test_plan_stop.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from packgen import FIX_AGENT, NOOP_AGENT, write_config  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk  # noqa: E402

pytestmark = pytest.mark.pipeline


def _tree(results: Path) -> dict[str, int]:
    """Every file under ``results`` (links not followed) with its mtime: what a run wrote."""
    return {str(p.relative_to(results)): p.lstat().st_mtime_ns for p in sorted(results.rglob("*"))}


def test_a_retuned_agent_stops_the_gate_before_its_first_job_in_validates_words(tmp_path: Path,
                                                                                default_run: FinishedRun) -> None:
    wd = copy_run(default_run, tmp_path / "w")
    ledger = wd / "pack" / "ledger.jsonl"
    assert ledger.is_file(), "the shared run scored the holdout"
    # the same candidate, retuned after it saw the holdout: HOLDOUT_TUNED is certain before any job
    retuned = write_config(wd / "retuned.yaml", wd / "pack",
                           agents={"fixer": {"command": "true tuned; " + FIX_AGENT}, "idle": {"command": NOOP_AGENT}})
    env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    validate = subprocess.run([sys.executable, "-m", "sealbench.app.cli", "validate", "--configfile", str(retuned)],
                              capture_output=True, text=True, cwd=wd, env=env, timeout=600)
    assert validate.returncode == 0, validate.stderr
    (said,) = [ln for ln in validate.stdout.splitlines() if ln.startswith("  HOLDOUT_TUNED: ")]
    assert "fixer" in said, said
    before, ledger_bytes = _tree(wd / "results"), ledger.read_bytes()

    res = smk(wd, "--cores", "1", "gate", configfile=retuned)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-3000:]
    assert said in res.stderr.splitlines(), res.stderr[-3000:]  # validate's line, word for word
    assert "Stopped before the first job" in res.stderr and "run_anyway=true" in res.stderr, res.stderr[-3000:]
    assert "Nothing was run; no result was changed." in res.stderr
    assert ledger.read_bytes() == ledger_bytes and _tree(wd / "results") == before  # nothing written

    # a dry run is not stopped: it says what a real run would do
    dry = smk(wd, "-n", "gate", configfile=retuned)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "a real run of this config stops before its first job" in dry.stdout + dry.stderr

    # the override runs (here a target already built: no job, so no agent time is spent on it)
    pack_hash = next((wd / "results" / "packs").glob("*/PACK_HASH.txt")).relative_to(wd)
    anyway = smk(wd, "--cores", "1", str(pack_hash), "--config", "run_anyway=true", configfile=retuned)
    out = anyway.stdout + anyway.stderr
    assert anyway.returncode == 0, out[-3000:]
    assert "running anyway (run_anyway: true)" in out and said in out.splitlines(), out[-3000:]
    assert ledger.read_bytes() == ledger_bytes
    # (the honest cases, a first agent of one's own and an experiment already decided, are not
    # stopped: tests/app/test_plan_stop.py; a decided config rerun: test_latest_and_try.py)
