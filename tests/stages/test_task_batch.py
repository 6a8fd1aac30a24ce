"""batch_size > 1: the per-task stages of K tasks in one task_batch job.

Unit tests call ``sealbench.stages.task_batch`` directly on steps built by hand; the snakemake tests
check that the decision does not depend on the batch size, that a one-byte change reruns one
batch job which redoes only that task's steps, and that a leak suspect still stops the run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import FIX_AGENT, make_pack, write_config, write_task  # noqa: E402
from pipeline_runs import FinishedRun, smk, smk_cmd  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.core.core import HashCache, task_digest  # noqa: E402
from sealbench.stages import task_batch  # noqa: E402


def _seal_step(pack: Path, tid: str, out: Path, digest: str | None = None) -> dict:
    d = task_digest(pack / "tasks" / tid, HashCache())
    base = out / "tasks" / tid / d
    return {"module": "hash_pack", "argv": ["seal", "--task-dir", str(pack / "tasks" / tid), "--digest", digest or d,
                                             "--out", str(base / "sealed"), "--record", str(base / "sealed.json")],
            "outputs": [str(base / "sealed"), str(base / "sealed.json")], "log": str(base / "logs" / "hash_pack.log"),
            "code": "c1", "toolchain": None, "done_dir": str(base / ".done")}


@pytest.mark.unit
def test_step_runs_once_then_is_reused_and_reruns_when_its_key_changes(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "pack")
    step = _seal_step(pack, "t00", tmp_path / "res")
    assert task_batch.run_step(step) == "ran"
    assert "sealed t00" in Path(step["log"]).read_text()
    assert task_batch.run_step(step) == "reused"
    # the sealed copy is read-only; a changed code digest removes it and seals again
    assert task_batch.run_step(dict(step, code="c2")) == "ran"
    # an output gone: the step runs again even with its marker present
    Path(step["outputs"][1]).unlink()
    assert task_batch.run_step(dict(step, code="c2")) == "ran"


@pytest.mark.unit
def test_failed_step_leaves_no_output_and_no_marker(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "pack")
    step = _seal_step(pack, "t00", tmp_path / "res", digest="0" * 64)  # the pack "changed since planning"
    assert task_batch.run_step(step) == "failed"
    assert not any(Path(o).exists() for o in step["outputs"])
    assert not Path(step["done_dir"]).exists() or not any(Path(step["done_dir"]).iterdir())
    assert "hash_pack" in Path(step["log"]).read_text()


@pytest.mark.unit
def test_batch_stops_before_work_when_a_member_fails_to_seal(tmp_path: Path, capsys) -> None:
    pack = make_pack(tmp_path / "pack")
    out = tmp_path / "res"
    good, bad = _seal_step(pack, "t00", out), _seal_step(pack, "t01", out, digest="0" * 64)
    marker = tmp_path / "work-ran"
    work = {"module": "hash_pack", "argv": ["aggregate", "--denylist-digest", "d", "--out-txt", str(marker),
                                            "--out-tsv", str(tmp_path / "x.tsv"), good["outputs"][1]],
            "outputs": [str(marker)], "log": str(tmp_path / "work.log"), "code": "c", "toolchain": None,
            "done_dir": str(tmp_path / ".done")}
    spec = {"tasks": [{"task": "t00", "digest": "x", "prepare": [good], "work": [work]},
                      {"task": "t01", "digest": "y", "prepare": [bad], "work": []}],
            "summary": {"sealed": [], "leaks": [], "controls": [], "scores": []}}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    rc = task_batch.main(["--spec", str(tmp_path / "spec.json"), "--out", str(tmp_path / "done.json")])
    assert rc == 1
    assert not marker.exists(), "no work step runs while a member failed its preparation"
    assert not (tmp_path / "done.json").exists()
    err = capsys.readouterr().err
    assert "FAILED steps: t01 hash_pack" in err and "changed" in err


def _seal_spec(pack: Path, out: Path, tids: list[str], bad: str | None = None) -> dict:
    """A spec whose members seal their task (prepare) and digest the sealed record (work)."""
    members = []
    for tid in tids:
        seal = _seal_step(pack, tid, out, digest="0" * 64 if tid == bad else None)
        txt = out / "work" / f"{tid}.txt"
        work = {"module": "hash_pack", "argv": ["aggregate", "--denylist-digest", "d", "--out-txt", str(txt),
                                                "--out-tsv", str(out / "work" / f"{tid}.tsv"), seal["outputs"][1]],
                "outputs": [str(txt), str(out / "work" / f"{tid}.tsv")], "log": str(out / "work" / f"{tid}.log"),
                "code": "c", "toolchain": None, "done_dir": str(out / "work" / ".done" / tid)}
        members.append({"task": tid, "digest": "x", "prepare": [seal], "work": [work]})
    return {"tasks": members, "summary": {"sealed": [], "leaks": [], "controls": [], "scores": []}}


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.sandbox
def test_workers_run_the_same_steps_and_write_the_same_files(tmp_path: Path, capsys) -> None:
    pack = make_pack(tmp_path / "pack")
    tids = sorted(p.name for p in (pack / "tasks").iterdir())[:5]
    trees, summaries = {}, {}
    for workers in (1, 3):
        out = tmp_path / f"w{workers}"
        (out / "spec.json").parent.mkdir(parents=True)
        spec = _seal_spec(pack, out, tids)
        (out / "spec.json").write_text(json.dumps(spec))
        rc = task_batch.main(["--spec", str(out / "spec.json"), "--out", str(out / "done.json"),
                              "--workers", str(workers)])
        assert rc == 0, capsys.readouterr().err
        printed = capsys.readouterr().out
        # every step's line, each whole (a worker's lines come back to the batch process)
        ran = [line for line in printed.splitlines() if " ran (" in line]
        assert all(re.fullmatch(rf"task_batch ({'|'.join(tids)}): hash_pack ran \(\d+\.\d\d s\)", line)
                   for line in ran), ran
        assert sum(" ran (" in line for line in printed.splitlines()) == 2 * len(tids)
        summaries[workers] = json.loads((out / "done.json").read_text())
        trees[workers] = {k: v for k, v in _tree(out).items() if k != "spec.json" and k != "done.json"}
        # the work outputs name the sealed records of this run's folder: compare them relative to it
        trees[workers] = {k: v.replace(str(out).encode(), b"OUT") for k, v in trees[workers].items()}
        # a step's marker is named by its key, which digests its arguments (this run's folder)
        markers = [k for k in trees[workers] if "/.done/" in k]
        assert len(markers) == 2 * len(tids)
        trees[workers] = {k: v for k, v in trees[workers].items() if k not in markers}
    assert summaries[3]["workers"] == 3 and summaries[1]["workers"] == 1
    assert {k: v for k, v in summaries[3].items() if k != "workers"} == \
        {k: v for k, v in summaries[1].items() if k != "workers"}
    assert trees[3] == trees[1]
    # run again with workers: every step is reused
    out = tmp_path / "w3"
    assert task_batch.main(["--spec", str(out / "spec.json"), "--out", str(out / "done.json"), "--workers", "3"]) == 0
    again = json.loads((out / "done.json").read_text())
    assert (again["ran"], again["reused"]) == (0, 2 * len(tids))


@pytest.mark.unit
def test_workers_stop_before_work_when_a_member_fails_to_seal(tmp_path: Path, capsys) -> None:
    pack = make_pack(tmp_path / "pack")
    tids = sorted(p.name for p in (pack / "tasks").iterdir())[:4]
    out = tmp_path / "res"
    out.mkdir()
    (out / "spec.json").write_text(json.dumps(_seal_spec(pack, out, tids, bad=tids[2])))
    rc = task_batch.main(["--spec", str(out / "spec.json"), "--out", str(out / "done.json"), "--workers", "2"])
    assert rc == 1
    assert not (out / "done.json").exists()
    assert not list((out / "work").glob("*.txt")), "no work step runs while a member failed its preparation"
    err = capsys.readouterr().err
    assert f"FAILED steps: {tids[2]} hash_pack" in err and "changed" in err


@pytest.mark.unit
def test_batch_threads_share_the_cores_between_batches() -> None:
    from sealbench.stages.steps import batch_threads

    assert batch_threads(14, 1, 2) == 2      # one batch smaller than batch_size x cores: both cores
    assert batch_threads(14, 1, 4) == 4
    assert batch_threads(3, 1, 8) == 3       # never more than its members
    assert batch_threads(20, 2, 4) == 2
    assert batch_threads(20, 10, 2) == 1     # more batches than cores: one member at a time each
    assert batch_threads(20, 3, 2) == 1


@pytest.mark.unit
def test_unknown_stage_module_is_refused(tmp_path: Path) -> None:
    step = {"module": "os", "argv": [], "outputs": [], "log": str(tmp_path / "l"), "code": "", "toolchain": None,
            "done_dir": str(tmp_path)}
    with pytest.raises(Exception, match="unknown stage module"):
        task_batch.run_step(step)


# ------------------------------------------------------------------------------ snakemake

def _done(wd: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in (wd / "results" / "batches").glob("*/done.json")}


@pytest.mark.pipeline
def test_batched_run_killed_midway_resumes_decides_like_per_task_jobs_and_reruns_only_changed_steps(
        tmp_path: Path, default_run: FinishedRun) -> None:
    """Batches of 5, ``kill -9`` of the run in the middle of the batches, the same command again:
    no finished step is redone, every step ran once, and the decision is the per-task jobs' (the
    session's default run: batch_size 1, an execution-only key) but for the disclosure of the
    slots the kill made draw again. Then one byte of one task reruns one batch, that task's steps
    only, and the revert plans nothing."""
    import os
    import signal
    import time

    sys.path.insert(0, str(ROOT / "tests" / "pipeline"))
    from test_resume import assert_same_but_interrupted_redraws

    wd = tmp_path / "bs5"
    make_pack(wd / "pack")
    write_config(wd / "cfg.yaml", wd / "pack", batch_size=5)
    # batches of 5: three batches sharing 6 cores, so each runs 2 members at a time
    cmd = smk_cmd(wd, "--cores", "6", "--rerun-incomplete", "gate")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=wd)
    markers = wd / "results" / "tasks"
    # 12 x 2 sealing and leak steps (the prepare batch), then some of the batches' work
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(markers.glob("*/*/.done/*"))) < 34 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_steps = {p: p.stat().st_mtime_ns for p in markers.glob("*/*/.done/*")}
    assert 34 <= len(done_steps) < 12 * 7, "killed in the middle of the batches"
    subprocess.run(cmd[:-4] + ["--unlock"], check=True, capture_output=True, cwd=wd)
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=wd)
    assert res.returncode == 0, res.stderr[-3000:]
    # a step is redone only by deleting its marker and writing it anew: every marker of the kill is untouched
    redone = [str(p) for p, t in done_steps.items() if not p.exists() or p.stat().st_mtime_ns != t]
    assert redone == [], f"finished steps were redone: {redone}"
    batches = _done(wd)
    assert sorted(len(b["tasks"]) for b in batches.values()) == [2, 5, 5]
    assert [b["workers"] for b in batches.values()] == [2, 2, 2]
    # every step, once: each batch's record counts its members' 7 steps, ran or reused; the sealing
    # and leak steps were all run by the prepare batch, and the work steps finished before the kill
    # were reused by the resumed batches
    assert sum(b["ran"] + b["reused"] for b in batches.values()) == 12 * 7
    assert sum(b["ran"] for b in batches.values()) < 12 * 5, "the resumed batches reused the steps finished before the kill"
    assert list((wd / "results" / "tasks").glob("*/*/logs/run_dummy.log"))  # per-task logs, as with per-task jobs
    one, five = default_run.wd / "results" / "latest", wd / "results" / "latest"
    assert assert_same_but_interrupted_redraws(five, one)["publishable"] is True
    assert "Nothing to be done" in smk(wd, "-n", "gate").stdout

    hidden = wd / "pack" / "tasks" / "t07" / "hidden_tests" / "check_hidden.py"
    original = hidden.read_bytes()
    hidden.write_bytes(original + b"\n")
    plan = smk(wd, "-n", "gate")
    assert re.search(r"^task_batch +1$", plan.stdout, re.M), plan.stdout[-2000:]
    assert re.search(r"^batch_prepare +1$", plan.stdout, re.M), plan.stdout[-2000:]
    # the new batch's spec and the prepare batch's are jobs (planning writes nothing)
    assert re.search(r"^batch_spec +2$", plan.stdout, re.M), plan.stdout[-2000:]
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-4000:]
    new = {k: v for k, v in _done(wd).items() if k not in batches}
    assert len(new) == 1
    (b,) = new.values()
    # 2 agents x 1 epoch: controls, 2 runs, 2 scores of t07 ran; its seal and leak steps (run by the
    # prepare batch) and the other four members' 7 steps each were reused
    assert (b["ran"], b["reused"]) == (5, 30) and "t07" in b["tasks"]
    hidden.write_bytes(original)
    # reverted: every result is current again; only the pack's prepare batch (one path, not
    # content-addressed, as the per-task rules' leak verdict) is planned again, and the target
    plan = smk(wd, "-n", "gate").stdout
    assert re.findall(r"^(\w+) +(\d+)$", plan.split("Job stats:")[1].split("total")[0], re.M) == \
        [("batch_prepare", "1"), ("gate", "1")], plan[-2000:]


@pytest.mark.pipeline
def test_attack_a_leak_suspect_in_one_batch_stops_every_batch_before_any_control(tmp_path: Path) -> None:
    """A suspect anywhere stops the run before any control or agent, as the per-task rules'
    leak verdict does: not only its own batch (before: the other batches ran their controls,
    agents and scores on a pack with a leak suspect). Two suspects in two batches: both named."""
    wd = tmp_path / "w"
    make_pack(wd / "pack")
    for tid in ("t04", "t09"):   # batches of 4: t04 in the second, t09 in the third
        shutil.rmtree(wd / "pack" / "tasks" / tid)
        write_task(wd / "pack" / "tasks", tid, "s",
                   title="Modeling's separability_matrix does not compute separability correctly for nested models")
    write_config(wd / "cfg.yaml", wd / "pack", batch_size=4,
                 agents={"fixer": {"command": FIX_AGENT}, "idle": {"command": FIX_AGENT.split(";", 1)[1]}})
    res = smk(wd, "--cores", "1", "gate")
    assert res.returncode != 0
    err = res.stdout + res.stderr
    assert "LEAK SUSPECT: task 't04'" in err and "LEAK SUSPECT: task 't09'" in err and "denylist.txt:2" in err, \
        err[-4000:]
    assert not (wd / "results" / "latest").exists()
    for tid in (f"t{i:02d}" for i in range(12)):   # no batch ran a control or an agent
        assert not list((wd / "results" / "tasks" / tid).glob("*/controls/controls.json")), tid
        assert not list((wd / "results" / "tasks" / tid).glob("*/runs/*/*/*/run.json")), tid
    assert not list((wd / "results" / "batches").glob("*/done.json"))
