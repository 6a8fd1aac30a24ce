"""Issue 35.2: when something invalidates earlier results, the console says what moved before the
first job (which packages, old → new and why each counts; which files; which settings) and
``sealbench progress`` counts only outputs still current, naming the stale ones
(sealbench.app.staleness). Unit tests on fabricated records; the pipeline check is in
tests/pipeline/test_pipeline.py (test_attack_a_moved_package_is_named_before_any_job)."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.app import staleness as st  # noqa: E402
from sealbench.isolation import toolchain as tcm  # noqa: E402
from sealbench.stages import steps  # noqa: E402

pytestmark = pytest.mark.unit

OLD_TC, NEW_TC = "a" * 64, "b" * 64
AGENTS = {"fixer": {"command": "python fix.py", "fingerprint": "0123456789abcdef"}}


def config(results: Path, toolchain: str = NEW_TC, oracle_runs: int = 2) -> steps.StepConfig:
    cfg = {"oracle_runs": oracle_runs, "decoys_per_task": 2, "score_timeout_s": 60, "sandbox": "auto",
           "limits": {"max_memory_mb": 1024}, "envelope": {"max_wall_s": 120, "max_steps": 10},
           "stop_on_green": False, "log_cap_bytes": 1 << 20}
    return steps.StepConfig.from_config(cfg, toolchain_digest=toolchain, denylist_digest="dd" * 32, corpus_sha="cs",
                                        results=str(results))


def toolchain(iniconfig: str) -> dict:
    return {"python": "3.11.7", "implementation": "cpython", "startup_files": {},
            "packages": [f"iniconfig=={iniconfig}", "pytest==9.2.0"],
            "why": {"pytest": tcm.BY_TASKS, "iniconfig": "required by pytest"}}


def store_with(*tcs: tuple[str, dict]) -> dict:
    store = {"toolchains": {}, "step_toolchains": {}, "code": {}}
    for digest, tc in tcs:
        store["toolchains"][digest] = tc
    return store


def make_outputs(planned: list[st.Planned]) -> None:
    for p in planned:
        for o in p.step.outputs:
            Path(o).parent.mkdir(parents=True, exist_ok=True)
            Path(o).write_text("{}")


def recorded(step: steps.Step, **old: str) -> list[str]:
    """Snakemake's record of a job's params (repr of each, sorted), with ``old`` values."""
    return sorted(repr(v) for v in {**st.step_params(step), **old}.values())


def test_params_moved_names_each_kind_and_its_old_value(tmp_path: Path) -> None:
    c = config(tmp_path / "results")
    step = steps.run_dummy(c, "t00", "ab" * 32)
    now = st.step_params(step)
    assert now == {"argv": step.shell_args, "code": step.code, "toolchain": NEW_TC}
    assert st.params_moved(now, recorded(step)) == {}
    assert st.params_moved(now, None) == {}  # no record: Snakemake reruns nothing for params either
    assert st.params_moved(now, recorded(step, toolchain=OLD_TC)) == {"toolchain": (OLD_TC, NEW_TC)}
    assert st.params_moved(now, recorded(step, code="0" * 16)) == {"code": ("0" * 16, step.code)}
    older = steps.run_dummy(config(tmp_path / "results", oracle_runs=5), "t00", "ab" * 32)
    moved = st.params_moved(now, recorded(step, argv=older.shell_args))
    assert moved == {"argv": (older.shell_args, step.shell_args)}
    assert st.what_moved("argv", *moved["argv"], store_with()) == ["--oracle-runs 5 → 2"]
    # a task environment: the built environment's digest follows the toolchain (common.smk step_toolchain)
    assert st.step_params(step, "e" * 64)["toolchain"] == f"{NEW_TC}:{'e' * 64}"


def test_progress_counts_a_result_made_with_another_toolchain_as_stale_and_names_the_package(tmp_path: Path) -> None:
    """The issue's case: after `pip install` moved a covered package, the outputs of the first run
    are not done; what moved is named with versions and why it counts."""
    c = config(tmp_path / "results")
    planned = st.planned_steps(c, {"t00": "ab" * 32, "t01": "cd" * 32}, AGENTS, [1])
    assert [p.stage for p in planned[:5]] == ["hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score"]
    make_outputs(planned[:5])  # t00 done, t01 not started
    made = {p.step.outputs[0]: recorded(p.step, **({"toolchain": OLD_TC} if p.step.toolchain else {}))
            for p in planned[:5]}
    s = st.survey(planned, made.get)
    assert dict(s.current) == {"hash_pack": 1, "leak_check": 1}
    assert dict(s.stale) == {"run_dummy": 1, "run_agent": 1, "hidden_score": 1}
    assert sum(s.missing.values()) == 5 and s.n_stale == 3
    store = store_with((OLD_TC, toolchain("2.3.1")), (NEW_TC, toolchain("2.1.0")))
    lines = st.moved_lines(s, store)
    assert lines[0].startswith("sealbench: 3 earlier results are out of date and are made again "
                               "(jobs run_dummy 1, run_agent 1, hidden_score 1)"), lines
    assert lines[1:] == ["  the toolchain the tests and agents run (run_dummy 1, run_agent 1, hidden_score 1):",
                         "    iniconfig 2.3.1 → 2.1.0 (required by pytest, imported by the tasks' code or tests)"], lines
    # the same outputs made with the current toolchain: all current, nothing said
    made = {p.step.outputs[0]: recorded(p.step) for p in planned[:5]}
    s = st.survey(planned, made.get)
    assert s.n_stale == 0 and sum(s.current.values()) == 5 and st.moved_lines(s, store) == []


def test_an_unrecorded_toolchain_and_changed_code_are_said_as_such(tmp_path: Path) -> None:
    c = config(tmp_path / "results")
    planned = st.planned_steps(c, {"t00": "ab" * 32}, AGENTS, [1])
    make_outputs(planned)
    score = next(p for p in planned if p.stage == "hidden_score")
    store = store_with((NEW_TC, toolchain("2.1.0")))
    store["code"]["1" * 16] = {"files": {"scoring/sealed_command.py": "x", "stages/hidden_score.py": "y"}}
    store["code"][score.step.code] = {"files": {"scoring/sealed_command.py": "z", "stages/hidden_score.py": "y",
                                               "scoring/new.py": "n"}}
    made = {p.step.outputs[0]: recorded(p.step) for p in planned}
    made[score.step.outputs[0]] = recorded(score.step, code="1" * 16, toolchain="c" * 64)
    lines = st.moved_lines(st.survey(planned, made.get), store)
    at = lines.index("  the toolchain the tests and agents run (hidden_score 1):")
    assert lines[at + 1] == "    a toolchain that was not recorded (made before sealbench kept them)", lines
    at = lines.index("  sealbench's code (hidden_score 1):")
    assert lines[at + 1:at + 3] == ["    scoring/new.py (added)", "    scoring/sealed_command.py"], lines


def test_the_store_keeps_what_names_a_digest(tmp_path: Path) -> None:
    record = {"toolchain_digest": NEW_TC, "toolchain": toolchain("2.1.0"), "analysis_toolchain_digest": "f" * 64,
              "analysis_toolchain": toolchain("9"), "code": "2" * 16}
    c = config(tmp_path / "results")
    st.remember(tmp_path, record, st.step_toolchains(c, ["s" * 64]), ["stages.hidden_score"])
    store = st.load_store(tmp_path)
    assert store["toolchains"][NEW_TC]["packages"] == ["iniconfig==2.1.0", "pytest==9.2.0"]
    assert "f" * 64 in store["toolchains"]
    env_value = steps.step_toolchain(c, "s" * 64)
    assert store["step_toolchains"][env_value] == {"toolchain": None, "environment": "s" * 64}
    code = steps.hidden_score(c, "t", "ab" * 32, "a", "0123456789abcdef", 1).code
    assert "scoring/sealed_command.py" in store["code"][code]["files"]
    # an unreadable store is an empty one (it only names what moved)
    (tmp_path / st.STORE).write_text("{")
    assert st.load_store(tmp_path)["toolchains"] == {}


def test_snakemake_metadata_is_read_where_snakemake_writes_it(tmp_path: Path) -> None:
    """File backend, record format 6: one file per output named by its path in url-safe base64,
    long names cut into folders (``@`` prefixes) at the file system's name limit."""
    meta = tmp_path / ".snakemake" / "metadata"
    meta.mkdir(parents=True)
    short = "results/tasks/t00/x.json"
    (meta / base64.urlsafe_b64encode(short.encode()).decode()).write_text(
        json.dumps({"params": ["'abc'"], "record_format_version": 6}))
    long = "results/tasks/" + "t" * 300 + "/score.json"
    b64 = base64.urlsafe_b64encode(long.encode()).decode()
    first, rest = b64[:254], b64[254:]
    (meta / f"@{first}").mkdir()
    (meta / f"@{first}" / rest).write_text(json.dumps({"params": ["'long'"], "record_format_version": 6}))
    read = st.metadata_reader(tmp_path)
    assert read(short) == ["'abc'"] and read(str(tmp_path / short)) == ["'abc'"]
    assert read(long) == ["'long'"]
    assert read("results/none.json") is None


def test_a_batch_step_is_current_by_its_marker_and_stale_with_what_moved(tmp_path: Path) -> None:
    old_c, c = config(tmp_path / "results", toolchain=OLD_TC), config(tmp_path / "results")
    planned = st.planned_steps(c, {"t00": "ab" * 32}, AGENTS, [1], batched=True)
    assert "--record" not in planned[1].step.argv  # a batch's leak check fails the batch instead
    make_outputs(planned)
    for p in st.planned_steps(old_c, {"t00": "ab" * 32}, AGENTS, [1], batched=True):
        keyed = p.step.as_batch_step()
        Path(p.step.done_dir).mkdir(parents=True, exist_ok=True)
        (Path(p.step.done_dir) / steps.step_key(keyed)).write_text(steps.marker_text(keyed))
    s = st.survey(planned, None, batched=True)
    assert dict(s.current) == {"hash_pack": 1, "leak_check": 1} and s.n_stale == 3
    assert {k for _stage, moved in s.moved for k in moved} == {"toolchain"}
    store = store_with((OLD_TC, toolchain("2.3.1")), (NEW_TC, toolchain("2.1.0")))
    assert "steps of the batches" in st.moved_lines(s, store, batched=True)[0]
    assert "iniconfig 2.3.1 → 2.1.0" in st.moved_lines(s, store, batched=True)[2]
    # a marker written before markers held their step (empty): stale, what moved unknown
    done = Path(planned[2].step.done_dir)
    for f in done.iterdir():
        f.write_text("")
    s = st.survey(planned, None, batched=True)
    assert s.n_stale == 3 and st.moved_lines(s, store, batched=True)[1:] == [
        "  what made them (run_dummy 1, run_agent 1, hidden_score 1):", "    not recorded (made before sealbench kept it)"]


def test_a_new_experiment_of_the_same_config_names_what_moved_once(tmp_path: Path) -> None:
    """Only the analysis toolchain moved (pandas, python-dateutil under it): no task job reruns,
    the decision is made again, and the console says why; what the per-task lines named already
    is not said twice."""
    analysis = {"python": "3.11.7", "implementation": "cpython", "startup_files": {},
                "packages": ["pandas==2.3.3", "python-dateutil==4.0.0"],
                "why": {"pandas": tcm.BY_ANALYSIS, "python-dateutil": "required by pandas"}}
    prev = {"exp_id": "1" * 16, "pack_digest": "p", "agent_fingerprints": {"a": "f"}, "config": {"seed": 1},
            "toolchain_digest": NEW_TC, "toolchain": toolchain("2.1.0"), "code": "c",
            "analysis_toolchain_digest": "x", "analysis_toolchain": analysis}
    exp = dict(prev, exp_id="2" * 16, analysis_toolchain_digest="y",
               analysis_toolchain=dict(analysis, packages=["pandas==2.3.3", "python-dateutil==2.9.0.post0"]))
    lines = st.experiment_lines(prev, exp, store_with())
    assert lines == [f"sealbench: experiment {'2' * 16} replaces {'1' * 16} for this pack, agents and settings "
                     "(the tables and the decision are made again); moved since:",
                     "  the toolchain of the tables and the gate:",
                     "    python-dateutil 4.0.0 → 2.9.0.post0 (required by pandas, imported by sealbench's tables and gate)"]
    assert st.experiment_lines(prev, dict(exp, config={"seed": 2}), store_with()) == []  # another config
    assert st.experiment_lines(prev, prev, store_with()) == []
    moved_tc = dict(prev, exp_id="3" * 16, toolchain_digest=OLD_TC, toolchain=toolchain("2.3.1"))
    assert st.experiment_lines(prev, moved_tc, store_with(), named={"toolchain"}) == []


def test_a_toolchain_the_store_lacks_is_read_from_the_experiments(tmp_path: Path) -> None:
    """Results made before the store was kept (an upgrade): the experiment records name it."""
    exp = tmp_path / "results" / "experiments" / ("1" * 16)
    exp.mkdir(parents=True)
    (exp / "experiment.json").write_text(json.dumps({"toolchain_digest": OLD_TC, "toolchain": toolchain("2.3.1")}))
    store = st.with_experiments(store_with((NEW_TC, toolchain("2.1.0"))), tmp_path / "results")
    assert st.what_moved("toolchain", OLD_TC, NEW_TC, store) == [
        "iniconfig 2.3.1 → 2.1.0 (required by pytest, imported by the tasks' code or tests)"]
    assert st.with_experiments(store_with(), tmp_path / "nowhere")["toolchains"] == {}
