"""sealbench runs unchanged under a Snakemake executor plugin.

The 12-task pack and config of the session's `default_run` (`snakemake --cores 2 gate`, run
locally), and a copy of that run with four tasks' work, the tables and the decision deleted, made
again through snakemake-executor-plugin-cluster-generic with the profile
profiles/cluster-generic-local (every job "submitted" to this machine by its submit.sh,
re-parsing the Snakefile in its own `python -m snakemake`, grouped: the tasks' sealing and leak
check, then 4 tasks per group job, then the tables and the decision), must reach the same
decision.json, digests included (decision.json has no run-specific field), but for the server
pin a decision made again finds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import yaml

from pipeline_runs import FinishedRun, copy_run

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.testing.json_diff import json_diff  # noqa: E402

PROFILE = ROOT / "profiles" / "cluster-generic-local"
HAVE_PLUGIN = importlib.util.find_spec("snakemake_executor_plugin_cluster_generic") is not None

pytestmark = [
    pytest.mark.pipeline,
    # CI installs '.[test]', which pins the plugin: there a missing plugin is a failure.
    pytest.mark.skipif(not HAVE_PLUGIN and not os.environ.get("CI"),
                       reason="snakemake-executor-plugin-cluster-generic is not installed (pip install -e '.[test]')"),
]


def _start(workdir: Path, *args: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(workdir),
           "--configfile", str(workdir / "cfg.yaml"), *args, "gate"]
    env = {k: v for k, v in os.environ.items() if k != "SNAKEMAKE_PROFILE"}
    with open(workdir / "snakemake.out", "w") as log:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def _finish(proc: subprocess.Popen, workdir: Path, timeout: float = 600) -> tuple[int, str]:
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return proc.returncode, (workdir / "snakemake.out").read_text()


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_cluster_generic_run_reaches_the_local_decision(tmp_path: Path, default_run: FinishedRun) -> None:
    # The local run is the session's default run (tests/pipeline_runs.py: `--cores 2 gate` on the
    # default 12-task pack and config). The cluster run is a copy of it (pack, results/) with a
    # third of its tasks' work and the tables and the decision deleted: sealing, leak checks,
    # controls, the agent jobs (the slots' first draws, restored from the pack's draw record: a
    # slot is drawn once), scores, tables and decision are made again, every job through the
    # plugin as group jobs; the decision must be the local run's, byte for byte.
    runs = {"local": default_run.wd, "cluster": copy_run(default_run, tmp_path / "cluster")}
    latest = (runs["cluster"] / "results" / "latest").resolve()
    for tid in ("t00", "t01", "t02", "t03"):
        shutil.rmtree(runs["cluster"] / "results" / "tasks" / tid)
    for name in ("tables", "decision.json", "card.json"):
        target = latest / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()
    shutil.rmtree(runs["cluster"] / ".snakemake", ignore_errors=True)
    cfgs = {name: yaml.safe_load((wd / "cfg.yaml").read_text()) for name, wd in runs.items()}
    assert {**cfgs["local"], "pack": None} == {**cfgs["cluster"], "pack": None}
    assert cfgs["local"]["pack"] != cfgs["cluster"]["pack"]

    rc, text = _finish(_start(runs["cluster"], "--profile", str(PROFILE), "--jobs", "4"), runs["cluster"])
    assert rc == 0, f"the cluster run failed:\n{text[-4000:]}"
    out = {"local": default_run.console, "cluster": text}

    # The cluster run really went through the plugin, as group jobs: one to seal and leak-check
    # the pack, 12 tasks / 4 per group job, one for the pack-level rules; each exited 0.
    assert "Group jobs: inactive (local execution)" not in out["cluster"]
    # one group job seals and leak-checks the four tasks (and the pack's verdict), one runs their
    # controls, agent jobs and scores (4 tasks per group job), one makes the tables and the decision
    assert out["cluster"].count("Submitted group job") == 3, out["cluster"][-4000:]
    assert "Submitted job" not in out["cluster"]
    exits = sorted((runs["cluster"] / ".snakemake" / "cluster-generic-local").glob("*.exit"))
    assert len(exits) == 3 and all(f.read_text().strip() == "0" for f in exits)
    assert "Submitted" not in out["local"]

    local = json.loads((runs["local"] / "results" / "latest" / "decision.json").read_text())
    cluster = json.loads((runs["cluster"] / "results" / "latest" / "decision.json").read_text())
    # the decision made again for the same experiment finds the holdout's servers pinned by its own
    # first decision (the ledger's line; the first found none before it): nothing is excluded
    pin = cluster.pop("server_pin")
    assert local.pop("server_pin") is None and pin["excluded"] == [], pin
    assert pin["pinned_at"] == os.readlink(runs["local"] / "results" / "latest").rsplit("/", 1)[-1], pin
    assert local == cluster, "decision.json differs:\n" + "\n".join(json_diff(local, cluster, ("local", "cluster"))[:40])
    assert local["digests"]["pack"] and local["digests"]["split_manifest"]
    # Same experiment id (the folder results/latest points at).
    assert os.readlink(runs["local"] / "results" / "latest") == os.readlink(runs["cluster"] / "results" / "latest")
