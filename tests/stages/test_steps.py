"""The results layout (sealbench.core.paths) and the per-task steps (sealbench.stages.steps): one definition
shared by the per-task rules and task_batch, with no pack location in any job's parameters."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.core import paths  # noqa: E402
from sealbench.core.core import HashCache, SealbenchError, denylist_digest, task_digest  # noqa: E402
from sealbench.stages import hash_pack, leak_check, split, steps, task_batch  # noqa: E402

pytestmark = pytest.mark.unit

D = "ab" * 32


def config(**over) -> steps.StepConfig:
    cfg = {"oracle_runs": 2, "decoys_per_task": 2, "score_timeout_s": 60, "sandbox": "auto", "limits": {"memory_mb": 1024},
           "envelope": {"max_wall_s": 120, "max_steps": 10}, "stop_on_green": False, "log_cap_bytes": 1 << 20}
    cfg.update(over)
    return steps.StepConfig.from_config(cfg, toolchain_digest="tc", denylist_digest="dd" * 32, corpus_sha="cs")


AGENTS = {"fixer": {"command": "python fix.py", "fingerprint": "0123456789abcdef"}}


def test_paths_give_snakemake_patterns_from_wildcard_names() -> None:
    assert paths.score("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}") == \
        "results/tasks/{task}/{tdigest}/scores/{agent}/{fp}/{epoch}.json"
    assert paths.run_record("t1", D, "a", "f", 2) == f"results/tasks/t1/{D}/runs/a/f/2/run.json"
    assert paths.leak_report("t1", D, "d") == f"results/tasks/t1/{D}/leak-d.json"
    assert paths.session_score("t1", D, "ann", 1) == f"results/tasks/t1/{D}/scores/human_ann/1.json"
    assert paths.table("e", "runs") == "results/experiments/e/tables/runs.parquet"


def test_every_rules_file_takes_its_layout_from_paths() -> None:
    """No per-task path is spelled out in a rules file: outputs and logs come from sealbench.core.paths."""
    for smk in (ROOT / "workflow" / "rules").glob("*.smk"):
        text = smk.read_text()
        assert not re.search(r"tasks/\{\{?task", text), smk.name
        assert "{PY}" not in text and "ON_FAIL" not in text, smk.name


def test_each_step_writes_under_its_task_and_logs_there() -> None:
    c = config()
    prepare, work, files = steps.task_steps(c, "t1", D, AGENTS, [1, 2])
    assert [s.stage for s in prepare + work] == ["hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score",
                                                 "run_agent", "hidden_score"]
    base = paths.task_base("t1", D)
    for s in prepare + work:
        assert s.log.startswith(f"{base}/logs/") and all(o.startswith(base) for o in s.outputs), s
        assert s.done_dir == paths.done_markers("t1", D)
    assert files["scores"] == [paths.score("t1", D, "fixer", "0123456789abcdef", e) for e in (1, 2)]
    assert files["leaks"] == [paths.leak_report("t1", D, "dd" * 32)]
    assert work[1].runtime_min == 5 + 120 // 60 and work[0].toolchain == "tc" and prepare[0].toolchain is None


def test_attack_no_step_names_where_the_pack_or_results_are(tmp_path: Path, monkeypatch) -> None:
    """A copied pack must reuse every result: no argument may hold an absolute path or the pack's name."""
    for pack in (tmp_path / "suite", tmp_path / "copy" / "suite2"):
        monkeypatch.setenv(paths.PACK_ENV, str(pack))
        prepare, work, _ = steps.task_steps(config(), "t1", D, AGENTS, [1])
        for s in prepare + work:
            assert not any(a.startswith("/") or "suite" in a for a in s.argv), s.argv
    keys = set()
    for pack in ("a", "b"):
        monkeypatch.setenv(paths.PACK_ENV, pack)
        keys.add(tuple(steps.batch_specs(config(), {"t1": D, "t2": D}, AGENTS, [1], 2)))
    assert len(keys) == 1


def test_a_config_value_changes_the_arguments_of_exactly_the_steps_that_use_it() -> None:
    before = steps.task_steps(config(), "t1", D, AGENTS, [1])
    after = steps.task_steps(config(score_timeout_s=61), "t1", D, AGENTS, [1])
    changed = [a.stage for a, b in zip(before[0] + before[1], after[0] + after[1]) if a.argv != b.argv]
    # run_agent: the clock of each of the agent's visible runs is capped by score_timeout_s too
    assert changed == ["run_dummy", "run_agent", "hidden_score"]


def test_batch_specs_hold_the_per_task_steps_and_a_runtime_that_sums_them() -> None:
    c = config()
    specs = steps.batch_specs(c, {"t1": D, "t2": D, "t3": D}, AGENTS, [1], 2)
    assert [[m["task"] for m in s["tasks"]] for s in specs.values()] == [["t1", "t2"], ["t3"]]
    first = next(iter(specs.values()))
    prepare, work, _ = steps.task_steps(c, "t1", D, AGENTS, [1])
    assert first["tasks"][0]["work"] == [s.as_batch_step() for s in work]
    assert first["tasks"][0]["prepare"] == [s.as_batch_step() for s in prepare]
    assert list(specs) == [steps.batch_key(s) for s in specs.values()]
    per_task = work[0].runtime_min + work[1].runtime_min + work[2].runtime_min
    assert steps.batch_runtime_min(c, first, 1, 1) == 5 + 2 * per_task


def test_the_steps_run_as_task_batch_runs_them(tmp_path: Path, monkeypatch) -> None:
    """hash_pack and leak_check from their step (the pack found through $SEALBENCH_PACK), then reused."""
    pack = make_pack(tmp_path / "pack", n=3)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(paths.PACK_ENV, str(pack))
    d = task_digest(pack / "tasks" / "t00", HashCache())
    c = steps.StepConfig.from_config(
        {"oracle_runs": 1, "decoys_per_task": 2, "score_timeout_s": 30, "sandbox": "off", "limits": {}, "envelope": {}, "stop_on_green": False,
         "log_cap_bytes": 1000}, toolchain_digest="tc", denylist_digest=denylist_digest(pack), corpus_sha="")
    for s in (steps.hash_pack(c, "t00", d), steps.leak_check(c, "t00", d)):
        assert task_batch.run_step(s.as_batch_step()) == "ran", Path(s.log).read_text()
        assert task_batch.run_step(s.as_batch_step()) == "reused"
    assert json.loads(Path(paths.sealed_record("t00", d)).read_text())["task_digest"] == d


def test_a_job_without_the_pack_location_says_which_variable(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.delenv(paths.PACK_ENV, raising=False)
    assert hash_pack.main(["seal", "--task", "t00", "--digest", D, "--out", str(tmp_path / "s"),
                           "--record", str(tmp_path / "r.json")]) == 1
    assert paths.PACK_ENV in capsys.readouterr().err
    assert split.main(["--seed", "1"]) == 1
    assert paths.PACK_ENV in capsys.readouterr().err
    assert leak_check.main(["--task", str(tmp_path)]) == 1
    assert paths.PACK_ENV in capsys.readouterr().err
    with pytest.raises(SealbenchError, match=paths.PACK_ENV):
        paths.pack_root()


def test_agents_never_see_where_the_pack_and_results_are(monkeypatch) -> None:
    from sealbench.core.core import harness_env

    monkeypatch.setenv(paths.PACK_ENV, "/p")
    monkeypatch.setenv(paths.RESULTS_ENV, "/r")
    env = harness_env()
    assert paths.PACK_ENV not in env and paths.RESULTS_ENV not in env
    assert paths.locations_to_hide() == (Path("/p"), Path("/r"))
