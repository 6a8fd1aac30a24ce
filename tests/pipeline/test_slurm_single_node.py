"""The slurm profile on a real one-node SLURM cluster reaches the local decision.

Runs bench/slurm_single_node.py (it starts munged, a private MariaDB, slurmdbd, slurmctld and
slurmd, runs a 12-task pack's `gate` locally and through snakemake-executor-plugin-slurm, and
compares the two decision.json files), with --no-install: it never installs anything here.
Skipped where SLURM is not installed (CI has none), when not root (the daemons and
/etc/slurm need it), and unless SEALBENCH_SLURM_BENCH=1: it takes about 25 minutes on two busy
cores and starts system daemons, so it is never part of an ordinary test run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "slurm_single_node.py"

pytestmark = [
    pytest.mark.pipeline,
    pytest.mark.skipif(shutil.which("sbatch") is None,
                       reason="SLURM is not installed (no sbatch): apt-get install slurm-wlm munge slurmdbd mariadb-server"),
    pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() != 0,
                       reason="bench/slurm_single_node.py starts the SLURM daemons and needs root"),
    pytest.mark.skipif(os.environ.get("SEALBENCH_SLURM_BENCH") != "1",
                       reason="opt-in: set SEALBENCH_SLURM_BENCH=1 (about 25 minutes on 2 cores; starts munged, MariaDB and SLURM)"),
]


def test_slurm_profile_reaches_the_local_decision() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    res = subprocess.run([sys.executable, str(SCRIPT), "--no-install"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=3600)
    assert res.returncode == 0, f"exit {res.returncode}\n{res.stdout[-6000:]}\n{res.stderr[-3000:]}"
    assert "same decision: yes" in res.stdout, res.stdout
    assert "COMPLETED" in res.stdout and "FAILED" not in res.stdout, res.stdout
