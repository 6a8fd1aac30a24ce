"""Real snakemake runs on a small generated pack: the DAG end to end, content addressing,
and refusals before any job runs."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import make_pack, write_config, write_task  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.isolation.sandbox import bwrap_problem  # noqa: E402
from sealbench.testing.snakemake_output import job_counts  # noqa: E402

BWRAP_PROBLEM = bwrap_problem()
pytestmark = pytest.mark.pipeline


@pytest.fixture()
def done(default_run: FinishedRun) -> Path:
    """One complete run of the pipeline on a 12-task pack (the session's shared run: read it,
    or ``copy_run`` it to change it)."""
    return default_run.wd


def test_full_run_writes_decision_tables_and_card(done: Path) -> None:
    import pandas as pd

    latest = done / "results" / "latest"
    decision = json.loads((latest / "decision.json").read_text())
    if BWRAP_PROBLEM:  # without bubblewrap the runs are unsandboxed and the gate says so
        assert [r["code"] for r in decision["reasons"]] == ["UNSANDBOXED"]
    else:
        assert decision["publishable"] is True, decision["reasons"]
        assert decision["headline"] == 1.0
    assert decision["digests"]["pack"] and decision["digests"]["split_manifest"]
    html = (latest / "report.html").read_text()
    assert html.count("<svg") == 3 and "http://" not in html.replace("http://www.w3.org", "")
    card = json.loads((latest / "card.json").read_text())
    assert set(card) >= {"dataset", "oracle", "metric_family", "envelope", "contamination", "toolchain"}
    assert any(p.lower().startswith("pytest==") for p in card["toolchain"]["packages"])
    assert not any(p.lower().startswith("snakemake") for p in card["toolchain"]["packages"])  # imported by no stage
    tasks = pd.read_parquet(latest / "tables" / "tasks.parquet")
    assert len(tasks) == 12 and tasks.oracle_ok.all() and not tasks.weak_test.any() and not tasks.flaky.any()
    runs = pd.read_parquet(latest / "tables" / "runs.parquet")
    ctl = runs[runs.role == "control"]
    assert (ctl[ctl.solver == "oracle"].status == "pass").all()
    assert (ctl[ctl.solver.isin(["empty_diff", "stub"])].status == "fail").all()
    agents = runs[runs.role == "agent"]
    assert set(agents[agents.solver == "fixer"].status) == {"pass"}
    assert set(agents[agents.solver == "idle"].status) == {"fail"}
    assert agents.steer_count.eq(0).all()
    # the server is the one the harness observed, not the agents' stamps ("local"): sandboxed
    # without an endpoint they provably reached none; unsandboxed it is unknown (issue 26 point 3)
    if BWRAP_PROBLEM:
        assert agents.server_id.isna().all() and agents.stamp_notes.isna().all()
    else:
        assert agents.server_id.eq("offline").all()
    strata = pd.read_parquet(latest / "tables" / "strata.parquet")
    assert {"solver", "split", "stratum", "n", "ci_low", "ci_high", "timeout_rate"} <= set(strata.columns)
    manifest = json.loads((done / "pack" / "split_manifest.json").read_text())
    assert len(manifest["holdout"]) >= 5 and not set(manifest["holdout"]) & set(manifest["tune"])


def test_dry_run_after_is_up_to_date(done: Path) -> None:
    res = smk(done, "-n", "gate")
    assert res.returncode == 0
    assert "Nothing to be done" in res.stdout + res.stderr


def test_one_byte_reruns_only_that_task_and_revert_reuses(done: Path, tmp_path: Path) -> None:
    done = copy_run(done, tmp_path / "copy")
    hidden = done / "pack" / "tasks" / "t03" / "hidden_tests" / "check_hidden.py"
    original = hidden.read_bytes()
    old_latest = (done / "results" / "latest").resolve()
    hidden.write_bytes(original.replace(b"add(3, 4) == 7", b"add(3, 5) == 8"))
    try:
        res = smk(done, "-n", "gate")
        out = res.stdout + res.stderr
        counts = job_counts(out)
        # leak_verdict reads every task's leak report again (the other tasks' jobs wait for it but,
        # their inputs unchanged, do not rerun); the plan's task list (rule task_list: the tasks and
        # digests the pack-level jobs read) is a new one, since t03's digest changed
        assert counts == {"hash_pack": 1, "leak_check": 1, "leak_verdict": 1, "run_dummy": 1, "run_agent": 2,
                          "task_list": 1,
                          "hidden_score": 2, "pack_digests": 1, "experiment_record": 1, "stratify": 1, "decide": 1,
                          "gate": 1}, out[-3000:]
        tasks_in_plan = set(re.findall(r"wildcards: task=([^,\s]+)", out))
        assert tasks_in_plan == {"t03"}
        # t03 is a holdout task: its edit is DENOMINATOR_MOVED, which the run's start foresees
        # and stops on (issue 35.4); run it anyway: the reruns are what this test counts
        res = smk(done, "--cores", "2", "gate", "--config", "run_anyway=true")
        assert res.returncode == 0, res.stderr[-3000:]
        assert (done / "results" / "latest").resolve() != old_latest
    finally:
        hidden.write_bytes(original)
    res = smk(done, "-n", "gate")
    # reverted: every result is current again; only the pack's leak verdict (one path, not
    # content-addressed) reads the restored task's leak report once more
    assert job_counts(res.stdout + res.stderr) == {"leak_verdict": 1}, (res.stdout + res.stderr)[-3000:]
    # planning writes nothing: results/latest moves back when a run starts, not on `-n`
    assert (done / "results" / "latest").resolve() != old_latest
    res = smk(done, "--cores", "1", "gate", "--forcerun", "gate")
    assert res.returncode == 0, res.stderr[-3000:]
    assert (done / "results" / "latest").resolve() == old_latest


def test_attack_a_copied_pack_reruns_nothing(done: Path, tmp_path: Path) -> None:
    """Where the pack is is not a parameter of any job: a copy with the same bytes reuses every result."""
    copy = tmp_path / "pack_copy"
    shutil.copytree(done / "pack", copy)
    try:
        res = smk(done, "-n", "gate", "--config", f"pack={copy}")
        out = res.stdout + res.stderr
        assert res.returncode == 0, out[-3000:]
        assert "Nothing to be done" in out, job_counts(out)
    finally:
        shutil.rmtree(copy)


def _fake_distribution(site: Path, dist: str, module: str) -> None:
    """An installed distribution (dist-info with a RECORD) providing top-level ``module``."""
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text("")
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{info.name}/METADATA,,\n{info.name}/RECORD,,\n")


def test_attack_installing_an_unrelated_package_reruns_nothing(done: Path, tmp_path: Path) -> None:
    """The toolchain digest covers what can change a score, not every distribution: a package
    nothing imports (duckdb, an executor plugin) plans no job; one that provides a module a task
    imports reruns every job that runs tests."""
    import os

    unrelated = tmp_path / "unrelated"
    _fake_distribution(unrelated, "sealbench-unrelated-tool", "sealbench_unrelated_tool")
    res = smk(done, "-n", "gate", env=dict(os.environ, PYTHONPATH=str(unrelated)))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "Nothing to be done" in out, job_counts(out)
    imported = tmp_path / "imported"  # the tasks' tests import calc (a module of repo/): now installed too
    _fake_distribution(imported, "calc-dist", "calc")
    res = smk(done, "-n", "gate", env=dict(os.environ, PYTHONPATH=str(imported)))
    counts = job_counts(res.stdout + res.stderr)
    assert counts.get("run_dummy") == 12 and counts.get("hidden_score") == 24, counts


def test_attack_a_comment_in_scoring_reruns_only_the_jobs_that_score(done: Path, tmp_path: Path) -> None:
    """A copy of the workflow with one comment added to scoring.py: the plan has the jobs that
    score — controls, agent attempts (each green visible run is sealed by scoring it, which is
    the time to green) and scores — and the experiment-level ones; nothing that seals, checks
    or splits."""
    proj = tmp_path / "proj"
    proj.mkdir()
    for name in ("Snakefile", "workflow", "scripts", "config"):
        src = ROOT / name
        (shutil.copytree(src, proj / name, ignore=shutil.ignore_patterns("__pycache__")) if src.is_dir()
         else shutil.copy2(src, proj / name))
    res = smk(done, "-n", "gate", snakefile=proj / "Snakefile")
    assert "Nothing to be done" in res.stdout + res.stderr, job_counts(res.stdout + res.stderr)
    scoring = proj / "scripts" / "sealbench" / "scoring" / "scoring.py"
    scoring.write_text(scoring.read_text() + "\n# a comment\n")
    res = smk(done, "-n", "gate", snakefile=proj / "Snakefile")
    counts = job_counts(res.stdout + res.stderr)
    assert counts == {"run_dummy": 12, "run_agent": 24, "hidden_score": 24, "experiment_record": 1, "stratify": 1,
                      "decide": 1, "gate": 1}, counts


def test_touch_without_change_reruns_nothing(done: Path, tmp_path: Path) -> None:
    done = copy_run(done, tmp_path / "copy")
    f = done / "pack" / "tasks" / "t05" / "repo" / "calc.py"
    f.write_bytes(f.read_bytes())
    res = smk(done, "-n", "gate")
    assert "Nothing to be done" in res.stdout + res.stderr


def _fresh(tmp_path: Path, n: int = 12, **cfg) -> Path:
    make_pack(tmp_path / "pack", n=n)
    write_config(tmp_path / "cfg.yaml", tmp_path / "pack", **cfg)
    return tmp_path


def test_leak_suspect_stops_the_run_naming_task_and_line(tmp_path: Path) -> None:
    wd = _fresh(tmp_path)
    shutil.rmtree(wd / "pack" / "tasks" / "t04")
    write_task(wd / "pack" / "tasks", "t04", "s",
               title="Modeling's separability_matrix does not compute separability correctly for nested models")
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode != 0
    err = res.stdout + res.stderr
    assert "LEAK SUSPECT: task 't04'" in err
    assert "separability_matrix" in err and "denylist.txt:2" in err
    assert not (wd / "results" / "latest").exists()
    assert not list((wd / "results" / "tasks" / "t04").glob("*/controls/controls.json"))
    assert not list((wd / "results" / "tasks" / "t04").glob("*/runs/*/*/*/run.json"))


def test_eleven_tasks_stop_at_split_before_any_job(tmp_path: Path) -> None:
    wd = _fresh(tmp_path, n=11)
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode != 0
    assert "the pack has 11 tasks; a holdout needs at least 12" in res.stderr
    assert not (wd / "results" / "tasks").exists()


def test_second_split_with_another_seed_is_refused(tmp_path: Path) -> None:
    wd = _fresh(tmp_path)
    sys.path.insert(0, str(ROOT / "scripts"))
    from sealbench.stages import split

    strata_of = {f"t{i:02d}": ("xs", "s", "m")[i % 3] for i in range(12)}
    split.ensure(wd / "pack", strata_of, 7, 0.5)
    before = (wd / "pack" / "split_manifest.json").read_bytes()
    res = smk(wd, "-n", "gate", "--config", "seed=8")
    assert res.returncode != 0
    assert "refusing to resplit" in res.stderr and "seed=7" in res.stderr
    assert (wd / "pack" / "split_manifest.json").read_bytes() == before


def test_unknown_config_key_and_missing_pack_fail_before_any_job(tmp_path: Path) -> None:
    wd = _fresh(tmp_path)
    res = smk(wd, "--cores", "2", "gate", "--config", "holdut_frac=0.3")
    assert res.returncode != 0
    assert "unknown key 'holdut_frac'" in res.stderr and "did you mean 'holdout_frac'" in res.stderr
    assert not (wd / "results" / "tasks").exists()
    res = smk(wd, "--cores", "2", "gate", "--config", "pack=nowhere")
    assert res.returncode != 0
    assert "field 'pack': 'nowhere' does not exist" in res.stderr


def test_bad_meta_fails_before_any_job_and_keeps_results(done: Path, tmp_path: Path) -> None:
    wd = copy_run(done, tmp_path / "copy")
    write_config(wd / "cfg.yaml", wd / "pack")
    before = sorted(p.relative_to(wd) for p in (wd / "results").rglob("*"))
    meta = wd / "pack" / "tasks" / "t01" / "meta.json"
    data = json.loads(meta.read_text())
    data["time_box_sec"] = -5
    meta.write_text(json.dumps(data))
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode != 0
    assert "t01/meta.json: field 'time_box_sec'" in res.stderr
    assert sorted(p.relative_to(wd) for p in (wd / "results").rglob("*")) == before


def test_one_broken_task_is_infra_fail_and_the_others_finish(done: Path, tmp_path: Path) -> None:
    wd = copy_run(done, tmp_path / "copy")  # only the broken task's jobs run again
    git_dir = wd / "pack" / "tasks" / "t07" / "repo" / ".git"
    git_dir.mkdir()
    (git_dir / "HEAD").write_text("ref: refs/heads/main\n")  # a snapshot with history: the harness refuses it
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-3000:]
    import pandas as pd

    latest = wd / "results" / "latest"
    runs = pd.read_parquet(latest / "tables" / "runs.parquet")
    broken = runs[(runs.task_id == "t07") & (runs.role == "agent")]
    assert set(broken.status) == {"infra_fail"} and broken.reason.str.contains("harness").all()
    others = runs[(runs.task_id != "t07") & (runs.solver == "fixer")]
    assert set(others.status) == {"pass"}
    decision = json.loads((latest / "decision.json").read_text())
    assert "CONTROL_INFRA_FAIL" in [r["code"] for r in decision["reasons"]]


def _delete_runs(wd: Path, solver: str) -> list[str]:
    """The re-roll: delete the run and score folders of ``solver``'s holdout runs, the tables
    and the decision (so that the same command draws those runs anew)."""
    import pandas as pd

    latest = (wd / "results" / "latest").resolve()
    runs = pd.read_parquet(latest / "tables" / "runs.parquet")
    rows = runs[(runs.solver == solver) & (runs.split == "holdout")]
    gone = []
    for r in rows.itertuples():
        for part in ("runs", "scores"):
            shutil.rmtree(wd / "results" / "tasks" / r.task_id / r.task_digest / part / solver)
        gone.append(f"{solver}:{r.task_id}#{r.epoch}")
    shutil.rmtree(latest / "tables")
    (latest / "decision.json").unlink()
    return gone


def test_attack_a_reroll_of_deleted_runs_gets_the_first_draws_back(done: Path, tmp_path: Path) -> None:
    """Issues 26 and 35.1: deleting the folders of failed runs (and the decision) and running the
    same command again draws no slot anew: each slot's first draw is restored from the draw record
    (the agent is not run again) and scored as it was — also with the pack copied without its
    draw record and ledger into the same results folder (the results' copy of the record keeps it)."""
    import pandas as pd

    wd = copy_run(done, tmp_path / "copy")
    write_config(wd / "cfg.yaml", wd / "pack")
    assert (wd / "pack" / "draws.jsonl").is_file() and (wd / "results" / "draws.jsonl").is_file()
    latest = wd / "results" / "latest"

    def idle_holdout() -> dict[str, tuple]:
        runs = pd.read_parquet(latest / "tables" / "runs.parquet")
        rows = runs[(runs.solver == "idle") & (runs.split == "holdout")]
        return {f"{r.solver}:{r.task_id}#{r.epoch}": (r.draw_id, r.status) for r in rows.itertuples()}

    first = idle_holdout()
    gone = _delete_runs(wd, "idle")
    assert sorted(gone) == sorted(first)
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-3000:]
    decision = json.loads((latest / "decision.json").read_text())
    notes = {n["code"]: n["sentence"] for n in decision["notes"]}
    assert "REDRAWN_SLOTS" not in notes and decision["draw_record"]["redrawn"] == [], notes
    assert idle_holdout() == first, "each slot is its first draw, scored as it was"
    for slot in gone:  # idle:t02#1
        task, epoch = slot.split(":", 1)[1].split("#")
        (run,) = (wd / "results" / "tasks" / task).glob(f"*/runs/idle/*/{epoch}/run.json")
        restored = json.loads(run.read_text()).get("restored") or {}
        assert "scored before" in restored.get("why", ""), (slot, restored)
    # the pack copied without draws.jsonl and ledger.jsonl, into the same results folder
    pack2 = wd / "pack2"
    shutil.copytree(wd / "pack", pack2, ignore=shutil.ignore_patterns("draws.jsonl", "ledger.jsonl"))
    write_config(wd / "cfg.yaml", pack2)
    _delete_runs(wd, "idle")
    res = smk(wd, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-3000:]
    decision = json.loads((latest / "decision.json").read_text())
    notes = {n["code"]: n["sentence"] for n in decision["notes"]}
    assert "REDRAWN_SLOTS" not in notes and "RECORD_COPY_DIFFERS" in notes, notes
    assert idle_holdout() == first
