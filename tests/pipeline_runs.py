"""Pipeline runs for the tests: the one way to start Snakemake on a test's working directory, and
finished runs that several tests share (fixtures, imported by tests/conftest.py).

A finished run costs a minute or more on a 2-core machine; a test that only reads one (its
tables, decision, console, or a dry run `-n`, which writes nothing) takes the shared run. A test
that changes it (edits a byte of the pack, reruns, deletes results) works on its own copy:
``copy_run(run, dest)``, so that no test depends on the order the tests run in.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from packgen import make_pack, write_config

ROOT = Path(__file__).resolve().parents[1]
SNAKEFILE = ROOT / "Snakefile"


def smk_cmd(workdir: Path, *args: str, configfile: Path | None = None, snakefile: Path | None = None) -> list[str]:
    """``python -m snakemake`` on ``workdir`` with its ``cfg.yaml`` (or ``configfile``)."""
    return [sys.executable, "-m", "snakemake", "-s", str(snakefile or SNAKEFILE), "-d", str(workdir),
            "--configfile", str(configfile or workdir / "cfg.yaml"), *args]


def smk(workdir: Path, *args: str, configfile: Path | None = None, snakefile: Path | None = None,
        env: dict | None = None, console: bool = False, timeout: float | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run snakemake to the end, output captured. ``console=True``: stdout and stderr as one
    console, in order (``.stdout``; ``.stderr`` is None), as a user sees it."""
    cmd = smk_cmd(workdir, *args, configfile=configfile, snakefile=snakefile)
    streams = ({"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT} if console
               else {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE})
    return subprocess.run(cmd, text=True, cwd=cwd or workdir, env=env, timeout=timeout, **streams)


@dataclass(frozen=True)
class FinishedRun:
    """A working directory where ``snakemake --cores 2 gate`` finished, and its console."""

    wd: Path
    console: str


def copy_run(run: FinishedRun | Path, dest: Path) -> Path:
    """A copy of a finished run's working directory (pack, results, .snakemake) to change freely;
    its cfg.yaml names the copied pack. ``results/latest`` is a relative link: it stays valid."""
    src = run.wd if isinstance(run, FinishedRun) else run
    shutil.copytree(src, dest, symlinks=True)
    cfg = dest / "cfg.yaml"
    if cfg.is_file():
        cfg.write_text(cfg.read_text().replace(str(src / "pack"), str(dest / "pack")))
    return dest


def finished_run(wd: Path, **cfg) -> FinishedRun:
    """A fresh 12-task pack (tests/packgen.py) and config in ``wd``, run to the end."""
    make_pack(wd / "pack")
    write_config(wd / "cfg.yaml", wd / "pack", **cfg)
    res = smk(wd, "--cores", "2", "gate", console=True)
    assert res.returncode == 0, res.stdout[-4000:]
    return FinishedRun(wd, res.stdout)


def shared_run(tmp_path_factory: pytest.TempPathFactory, name: str, **cfg) -> FinishedRun:
    """``finished_run`` once per test session, also when pytest-xdist runs the tests in several
    worker processes: the first worker that needs it builds it in the folder all workers share
    (the parent of each worker's temporary folder), under a lock; the others wait and read it.
    A run whose build failed is built again by the next test that asks."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    wd, done = shared / name, shared / f"{name}.console"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.is_file():
            return FinishedRun(wd, done.read_text())
        if wd.exists():
            shutil.rmtree(wd)
        wd.mkdir()
        run = finished_run(wd, **cfg)
        done.write_text(run.console)
        return run


@pytest.fixture(scope="session")
def default_run(tmp_path_factory) -> FinishedRun:
    """The default small run, shared by every test that only reads it: 12 tasks of
    tests/packgen.py, its default config (agents fixer and idle, sandbox auto), ``--cores 2 gate``.
    Do not change it; ``copy_run`` it."""
    return shared_run(tmp_path_factory, "default_run")
