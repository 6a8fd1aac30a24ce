"""A read-only or full results/ gives a clear error before any job, and nothing is written."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_config  # noqa: E402
from sealbench.isolation.bwrap import bwrap_executable  # noqa: E402
from sealbench.isolation.sandbox import bwrap_problem  # noqa: E402

PROBLEM = bwrap_problem()
BWRAP = bwrap_executable()[0] or "bwrap"
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"these tests mount a read-only / tiny results/ with bubblewrap: {PROBLEM}", allow_module_level=True)
pytestmark = pytest.mark.pipeline


def run_in(mount: list[str], wd: Path) -> subprocess.CompletedProcess:
    cmd = [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *mount, "--",
           sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(wd),
           "--configfile", str(wd / "cfg.yaml"), "--cores", "2", "gate"]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.fixture()
def wd(tmp_path: Path) -> Path:
    make_pack(tmp_path / "pack")
    write_config(tmp_path / "cfg.yaml", (tmp_path / "pack").resolve(), sandbox="off")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "earlier.txt").write_text("an earlier result\n")
    return tmp_path


def test_read_only_results_is_refused_before_any_job(wd: Path) -> None:
    res = run_in(["--ro-bind", str(wd / "results"), str(wd / "results")], wd)
    assert res.returncode != 0
    assert "results/ is not writable (it is on a read-only file system)" in res.stderr
    assert sorted(p.name for p in (wd / "results").iterdir()) == ["earlier.txt"]


def test_full_disk_is_refused_before_any_job(wd: Path) -> None:
    res = run_in(["--size", str(1 << 20), "--tmpfs", str(wd / "results")], wd)
    assert res.returncode != 0
    assert "MB free; a run needs at least" in res.stderr
    assert (wd / "results" / "earlier.txt").read_text() == "an earlier result\n"


CHECK = """
import json, sys
from pathlib import Path
bad = [str(p) for p in Path(sys.argv[1]).rglob("*.json") if p.stat().st_size and not p.name.startswith(".")
       and not (lambda t: (json.loads(t), True)[1])(p.read_text())]
tmp = [str(p) for p in Path(sys.argv[1]).rglob(".*.tmp")]
print("HALF", bad, tmp)
"""


def test_disk_full_mid_run_says_so_and_leaves_nothing_half_written(wd: Path) -> None:
    smk = " ".join([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(wd),
                    "--configfile", str(wd / "cfg.yaml"), "--cores", "2", "gate"])
    check = f"{sys.executable} -c '{CHECK}' {wd / 'results'}"
    cmd = [BWRAP, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--setenv", "SEALBENCH_MIN_FREE_MB", "0",
           "--size", str(300 << 10), "--tmpfs", str(wd / "results"), "--",
           "bash", "-c", f"{smk}; rc=$?; {check} >&2; exit $rc"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode != 0
    err = res.stderr
    assert "No space left on device" in err or "its log is empty or could not be written" in err, err[-2000:]
    assert "HALF [] []" in err, "a JSON file is half-written or a temporary file was left behind"
