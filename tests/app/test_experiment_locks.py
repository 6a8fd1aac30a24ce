"""What workflow/rules/common.smk plans and guards, called directly: the experiment identity
(sealbench.app.experiment), the run lock, the stale Snakemake lock, the disk probe and results/latest
(sealbench.app.run_guard), the batches, and the shell prefix of every job (sealbench.isolation.job_launch).
No Snakemake run: each function takes the config and the paths it needs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, make_pack, write_config  # noqa: E402
from sealbench.app import experiment, run_guard  # noqa: E402
from sealbench.core import paths  # noqa: E402
from sealbench.core.configuration import load_config_file  # noqa: E402
from sealbench.core.core import ConfigError, HashCache, SealbenchError  # noqa: E402
from sealbench.isolation.job_launch import shell_prefix  # noqa: E402
from sealbench.isolation.toolchain import ToolchainCache  # noqa: E402
from sealbench.stages import steps  # noqa: E402

# ---------------------------------------------------------------------------- experiment identity

@pytest.fixture(scope="module")
def tc_cache(tmp_path_factory: pytest.TempPathFactory) -> ToolchainCache:
    """One toolchain cache for the module: resolving the installed packages takes seconds."""
    return ToolchainCache(tmp_path_factory.mktemp("tc") / "toolchain-cache.json")


def _exp(root: Path, tc_cache: ToolchainCache, pack: Path | None = None, **over) -> dict:
    """The experiment record of a generated pack (``root/pack``) with config overrides, planned
    in ``root`` as common.smk plans it."""
    pack = pack or root / "pack"
    if not pack.exists():
        make_pack(pack)
    cfg = load_config_file(write_config(root / "cfg.yaml", pack, **over))
    planned = experiment.plan_pack(cfg, root / "state")
    identities = experiment.agent_identities(cfg, root, HashCache(None))
    sessions = experiment.human_sessions(planned.pack.task_digests, cfg["humans"], str(root / "results"))
    return experiment.experiment_record(cfg, planned, identities, tc_cache, sessions)


@pytest.mark.unit
def test_experiment_id_is_stable_and_ignores_what_only_schedules(tmp_path: Path, tc_cache: ToolchainCache) -> None:
    base = _exp(tmp_path, tc_cache)
    assert len(base["exp_id"]) == 16 and all(c in "0123456789abcdef" for c in base["exp_id"])
    assert _exp(tmp_path, tc_cache)["exp_id"] == base["exp_id"], "planned twice: the same experiment"
    assert _exp(tmp_path, tc_cache, batch_size=3)["exp_id"] == base["exp_id"], "batch_size only schedules"
    moved = tmp_path / "elsewhere" / "pack"
    shutil.copytree(tmp_path / "pack", moved)
    copy = _exp(tmp_path, tc_cache, pack=moved)
    assert copy["exp_id"] == base["exp_id"], "a copied pack with the same content is the same experiment"
    assert copy["pack"] == str(moved) and "pack" not in copy["config"]
    # an agent defined but not scheduled is not this experiment
    agents = {"fixer": {"command": FIX_AGENT}, "idle": {"command": "true"}, "spare": {"command": "echo spare"}}
    with_spare = _exp(tmp_path, tc_cache, agents={**agents, "idle": base["config"]["agents"]["idle"]})
    assert with_spare["exp_id"] == base["exp_id"]
    assert set(with_spare["agent_fingerprints"]) == {"fixer", "idle"}
    assert set(with_spare["config_full"]["agents"]) == {"fixer", "idle"}


@pytest.mark.unit
@pytest.mark.parametrize("change", ["seed", "epochs", "agent command", "task file", "extra agent"])
def test_experiment_id_changes_with_what_is_measured(tmp_path: Path, tc_cache: ToolchainCache, change: str) -> None:
    base = _exp(tmp_path, tc_cache)
    over: dict = {}
    if change == "seed":
        over = {"seed": 8}
    elif change == "epochs":
        over = {"epochs": 2}
    elif change == "agent command":
        over = {"agents": {"fixer": {"command": FIX_AGENT + "; true"}, "idle": base["config"]["agents"]["idle"]}}
    elif change == "extra agent":
        over = {"agents": {**base["config"]["agents"], "spare": {"command": "true"}}, "extra_agents": ["spare"]}
    else:
        (tmp_path / "pack" / "tasks" / "t01" / "prompt.md").write_text("Fix add (one byte more).\n")
    changed = _exp(tmp_path, tc_cache, **over)
    assert changed["exp_id"] != base["exp_id"], f"a changed {change} names another experiment"
    if change == "task file":
        assert changed["task_digests"]["t01"] != base["task_digests"]["t01"]
        assert {t: d for t, d in changed["task_digests"].items() if t != "t01"} == \
               {t: d for t, d in base["task_digests"].items() if t != "t01"}


@pytest.mark.unit
def test_config_for_id_drops_execution_keys_and_unscheduled_agents() -> None:
    cfg = {"pack": "p", "batch_size": 4, "seed": 1, "candidate": "a", "baseline": "empty_diff", "extra_agents": [],
           "agents": {"a": {"command": "x"}, "b": {"command": "y"}}}
    assert experiment.config_for_id(cfg) == {"seed": 1, "candidate": "a", "baseline": "empty_diff",
                                             "extra_agents": [], "agents": {"a": {"command": "x"}}}
    assert cfg["agents"] == {"a": {"command": "x"}, "b": {"command": "y"}}, "the config itself is unchanged"


@pytest.mark.unit
def test_human_sessions_only_complete_ones_in_task_order(tmp_path: Path) -> None:
    results = str(tmp_path / "results")
    digests = {"t2": "b" * 64, "t1": "a" * 64}
    for task, epoch, files in (("t2", "1", ("run.json", "patch.diff")), ("t1", "2", ("run.json", "patch.diff")),
                               ("t1", "1", ("run.json",)), ("t1", "x", ("run.json", "patch.diff"))):
        d = Path(paths.session_dir(task, digests[task], "ann", epoch, results))
        d.mkdir(parents=True)
        for f in files:
            (d / f).write_text("{}")
    assert experiment.human_sessions(digests, ["ann", "bob"], results) == [("t1", "a" * 64, "ann", "2"),
                                                                          ("t2", "b" * 64, "ann", "1")]


@pytest.mark.unit
def test_written_files_refuse_a_key_that_is_not_the_plans(tmp_path: Path) -> None:
    digests = {"t2": "b" * 64, "t1": "a" * 64}
    key = experiment.task_list_key(digests)
    with pytest.raises(ValueError, match="not the current plan's"):
        experiment.write_task_list("0" * 16, digests, tmp_path / "x.tsv", tmp_path / "x.log")
    experiment.write_task_list(key, digests, tmp_path / "list.tsv", tmp_path / "list.log")
    assert paths.read_task_list(tmp_path / "list.tsv") == [("t1", "a" * 64), ("t2", "b" * 64)]
    assert (tmp_path / "list.log").read_text() == f"task list {key}: 2 tasks\n"
    with pytest.raises(ValueError, match="experiment 0000000000000000 is not the current one"):
        experiment.write_experiment_record({"exp_id": "1" * 16, "task_digests": digests}, "0" * 16,
                                           SimpleNamespace(tasks={}, pack=tmp_path), tmp_path / "e.json",
                                           tmp_path / "e.log")
    assert not (tmp_path / "e.json").exists()


# ---------------------------------------------------------------------------- batches

def _batches(root: Path, size: int) -> tuple[dict, dict]:
    pack = root / "pack"
    if not pack.exists():
        make_pack(pack)
    cfg = load_config_file(write_config(root / "cfg.yaml", pack, batch_size=size))
    planned = experiment.plan_pack(cfg, root / "state")
    agents = experiment.scheduled_agents(cfg, experiment.agent_identities(cfg, root, HashCache(None)))
    c = steps.StepConfig.from_config(cfg, toolchain_digest="t" * 16, denylist_digest=planned.pack.denylist_digest,
                                     corpus_sha="none")
    digests = planned.pack.task_digests
    return steps.batch_specs(c, digests, agents, [1], size, {t: experiment.task_env(planned.pack, t)
                                                              for t in digests}), digests


@pytest.mark.unit
def test_batches_are_deterministic_and_cover_every_task_once(tmp_path: Path) -> None:
    first, digests = _batches(tmp_path, 5)
    again, _ = _batches(tmp_path, 5)
    assert list(first) == list(again) and first == again, "the same plan: the same batches, keys and order"
    of = experiment.batch_of_task(first)
    assert sorted(of) == sorted(digests)
    assert [len(s["tasks"]) for s in first.values()] == [5, 5, 2]
    assert [m["task"] for s in first.values() for m in s["tasks"]] == sorted(digests), "tasks in id order"
    (tmp_path / "pack" / "tasks" / "t11" / "prompt.md").write_text("Fix add (changed).\n")
    changed, _ = _batches(tmp_path, 5)
    assert [k for k in changed if k not in first] == [list(changed)[-1]], "only the changed task's batch is new"


@pytest.mark.unit
def test_batch_threads_and_spec_file(tmp_path: Path) -> None:
    assert experiment.batch_threads(14, 1, 4) == 4
    assert experiment.batch_threads(14, 2, 4) == 2
    assert experiment.batch_threads(14, 10, 4) == 1
    assert experiment.batch_threads(2, 1, 8) == 2, "never more than its members"
    assert experiment.batch_threads(14, 1, None) == 1, "cores unknown (a cluster executor): 1"
    spec = {"tasks": [{"task": "t1"}, {"task": "t2"}]}
    experiment.write_batch_spec("k" * 16, spec, tmp_path / "spec.json", tmp_path / "spec.log")
    assert yaml.safe_load((tmp_path / "spec.json").read_text()) == spec
    assert (tmp_path / "spec.log").read_text() == f"batch {'k' * 16}: 2 tasks\n"


# ---------------------------------------------------------------------------- the run lock

@pytest.mark.sandbox
def test_run_lock_checked_taken_and_refused_naming_the_holder(tmp_path: Path) -> None:
    lock = tmp_path / "results" / ".sealbench" / "run.lock"
    assert run_guard.run_lock(lock, take=False) == run_guard.RunLock(None, ""), "no lock file: no pipeline ran here"
    assert not lock.exists(), "checking writes nothing"
    held = run_guard.run_lock(lock, take=True)
    try:
        assert held.fd is not None and held.previous == "" and held.removed == ""
        assert lock.read_text().startswith(f"pid {os.getpid()} on {os.uname().nodename}, since ")
        # flock is per open file: a second open of the file (another pipeline) is refused
        for take in (False, True):
            with pytest.raises(run_guard.RunLockHeld) as err:
                run_guard.run_lock(lock, take=take)
            assert f"another sealbench pipeline is running in this working directory (pid {os.getpid()} on " \
                   in str(err.value)
            assert isinstance(err.value, SealbenchError)
    finally:
        os.close(held.fd)
    # released (its holder ended): the next one takes it and is told who held it before
    again = run_guard.run_lock(lock, take=True)
    os.close(again.fd)
    assert again.previous.startswith(f"pid {os.getpid()} ")


def _dead_run(lock: Path) -> str:
    """A run that took the lock and ended (its process is gone): what it wrote in the file."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); "
            "from sealbench.app.run_guard import run_lock; run_lock(Path(sys.argv[2]), take=True)")
    subprocess.run([sys.executable, "-c", code, str(ROOT / "scripts"), str(lock)], check=True)
    return lock.read_text()


@pytest.mark.sandbox
def test_stale_snakemake_lock_removed_only_when_its_run_is_dead(tmp_path: Path) -> None:
    lock = tmp_path / "results" / ".sealbench" / "run.lock"
    sm_locks = tmp_path / ".snakemake" / "locks"
    sm_locks.mkdir(parents=True)
    (sm_locks / "0.input.lock").write_text("x")
    dead = _dead_run(lock)
    assert dead.startswith("pid ") and str(os.getpid()) not in dead.split()[1]
    # a live pipeline holds the run lock: refused, its Snakemake lock left alone
    live = run_guard.run_lock(lock, take=True)
    try:
        with pytest.raises(run_guard.RunLockHeld):
            run_guard.run_lock(lock, take=True, snakemake_locks=sm_locks)
        assert (sm_locks / "0.input.lock").exists()
    finally:
        os.close(live.fd)
    # the holder is gone (its process ended, the kernel released the lock): removed, with one line
    (lock).write_text(dead)
    taken = run_guard.run_lock(lock, take=True, snakemake_locks=sm_locks)
    os.close(taken.fd)
    assert not sm_locks.exists()
    assert taken.removed == (f"sealbench: removed the lock {sm_locks}/ of an earlier run that no longer runs ({dead}): "
                             "it ended (killed, or its machine stopped) before it could unlock.")
    # nothing to remove: nothing said; without the Snakemake folder given, nothing looked at
    sm_locks.mkdir()
    quiet = run_guard.run_lock(lock, take=True, snakemake_locks=sm_locks)
    os.close(quiet.fd)
    assert quiet.removed == "" and sm_locks.is_dir()
    (sm_locks / "0.input.lock").write_text("x")
    lock.write_text("")
    untouched = run_guard.run_lock(lock, take=True)
    os.close(untouched.fd)
    assert untouched.removed == "" and (sm_locks / "0.input.lock").exists()
    # a previous holder not recorded: said so
    lock.write_text("")
    unknown = run_guard.run_lock(lock, take=True, snakemake_locks=sm_locks)
    os.close(unknown.fd)
    assert "(which one is not recorded)" in unknown.removed


# ---------------------------------------------------------------------------- the disk probe

@pytest.mark.unit
def test_writability_probe_names_the_folder(tmp_path: Path) -> None:
    results = tmp_path / "results"
    run_guard.check_results_writable(results, results / ".sealbench", 0)
    assert (results / ".sealbench").is_dir() and not list((results / ".sealbench").iterdir()), "the probe is removed"
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where results/ should be")
    with pytest.raises(run_guard.ResultsNotWritable) as err:
        run_guard.check_results_writable(blocked, blocked / ".sealbench", 0)
    assert str(err.value).startswith(f"{blocked.absolute()}/ is not writable (")
    assert "-d DIR" in str(err.value) and "no result was changed" in str(err.value)
    with pytest.raises(run_guard.ResultsNotWritable) as err:
        run_guard.check_results_writable(results, results / ".sealbench", 10**12)
    assert str(err.value).startswith(f"{results.absolute()}/ has only ")
    assert f"a run needs at least {10**12} MB" in str(err.value)


@pytest.mark.unit
def test_min_free_mb_from_the_environment() -> None:
    var = "SEALBENCH_MIN_FREE_MB"
    assert run_guard.min_free_mb({}, var) == 64
    assert run_guard.min_free_mb({var: "0"}, var) == 0
    with pytest.raises(ConfigError, match=f"environment variable {var}: 'lots' is not a whole number of MB"):
        run_guard.min_free_mb({var: "lots"}, var)


# ---------------------------------------------------------------------------- results/latest and execute

@pytest.mark.unit
def test_latest_pointed_only_at_a_decided_experiment(tmp_path: Path) -> None:
    results = tmp_path / "results"
    exp = Path(paths.experiment_dir("a" * 16, str(results)))
    exp.mkdir(parents=True)
    latest = Path(paths.latest(str(results)))
    assert run_guard.point_latest_if_decided(exp, latest, results) is False
    assert not latest.is_symlink() and not (results / "index.html").exists()
    (exp / "decision.json").write_text("{}")
    assert run_guard.point_latest_if_decided(exp, latest, results) is True
    assert latest.resolve() == exp.resolve() and os.readlink(latest) == "experiments/" + "a" * 16
    assert (results / "index.html").is_file()


def _workflow(dryrun: bool = False, no_hooks: bool = False) -> SimpleNamespace:
    return SimpleNamespace(dryrun=dryrun, execution_settings=SimpleNamespace(no_hooks=no_hooks))


@pytest.mark.unit
@pytest.mark.parametrize("case, expected", [
    ("run", ["before", "execute", "after"]),
    ("dry plugin", ["execute"]),
    ("dry workflow", ["execute"]),
    ("no hooks", ["before", "execute"]),
])
def test_wrapped_execute_locks_before_and_points_latest_after_a_real_run(case: str, expected: list[str]) -> None:
    calls: list[str] = []
    wf = _workflow(dryrun=case == "dry workflow", no_hooks=case == "no hooks")
    plugin = SimpleNamespace(common_settings=SimpleNamespace(dryrun_exec=case == "dry plugin"))

    def execute(executor_plugin: object) -> str:
        calls.append("execute")
        return "done"

    run = run_guard.wrap_execute(execute, wf, lambda: calls.append("before"), lambda: calls.append("after"))
    import signal

    handler = signal.getsignal(signal.SIGINT)
    try:
        assert run(executor_plugin=plugin) == "done"
    finally:
        signal.signal(signal.SIGINT, handler)
    assert calls == expected


@pytest.mark.unit
@pytest.mark.parametrize("dry", [False, True])
def test_wrapped_execute_asks_at_start_first_and_a_stop_there_runs_nothing(dry: bool) -> None:
    """Issue 35.4: ``at_start(dry)`` comes before the run lock and the jobs; when it stops the run
    (a SystemExit, as common.smk's refusal does), neither the lock nor execute is reached."""
    calls: list[object] = []
    plugin = SimpleNamespace(common_settings=SimpleNamespace(dryrun_exec=dry))

    def stop(is_dry: bool) -> None:
        calls.append(("at_start", is_dry))
        raise SystemExit(1)

    run = run_guard.wrap_execute(lambda **_: calls.append("execute"), _workflow(), lambda: calls.append("before"),
                                 lambda: calls.append("after"), at_start=stop)
    with pytest.raises(SystemExit):
        run(executor_plugin=plugin)
    assert calls == [("at_start", dry)]


@pytest.mark.unit
def test_wrapped_execute_turns_a_ctrl_c_between_jobs_into_one_exit() -> None:
    def execute(*args: object) -> None:
        raise KeyboardInterrupt

    run = run_guard.wrap_execute(execute, _workflow(dryrun=True), lambda: None, lambda: None)
    with pytest.raises(SystemExit) as stop:
        run()
    assert stop.value.code == 130


# ---------------------------------------------------------------------------- the job shell prefix

@pytest.mark.sandbox
def test_shell_prefix_exports_quoted_and_binds_jobs_to_the_run() -> None:
    prefix = shell_prefix("/x y/scripts", {"SEALBENCH_PACK": "/p q", "SEALBENCH_PY": "python"}, 4242, show_log=True)
    text = prefix.replace("{{", "{").replace("}}", "}")  # as Snakemake formats it
    assert text.startswith("export PYTHONPATH='/x y/scripts'${PYTHONPATH:+:$PYTHONPATH}; "
                           "export SEALBENCH_PACK='/p q'; export SEALBENCH_PY=python; sealbench_job() {")
    assert '"$SEALBENCH_PY" -m sealbench.isolation.job_launch 4242 "$@" > "$log" 2>&1' in text
    assert 'then cat "$log" >&2; else' in text
    assert "then :; else" in shell_prefix("/s", {}, 1, show_log=False).replace("{{", "{").replace("}}", "}")
    assert "{" not in prefix.replace("{{", "").replace("}}", "") and "}" not in prefix.replace("{{", "").replace("}}", "")
    # the function it defines runs: a failing job with an empty log says so
    script = text + 'sealbench_job /dev/null false_module'
    out = subprocess.run(["bash", "-c", script.replace('"$SEALBENCH_PY"', "false")], capture_output=True, text=True)
    assert out.returncode == 1 and "the job failed (exit 1) and its log is empty" in out.stderr


# ---------------------------------------------------------------------------- per-task steps

@pytest.mark.unit
def test_step_for_each_per_task_rule_and_a_stale_fingerprint(tmp_path: Path) -> None:
    c = steps.StepConfig.from_config(load_config_file(write_config(tmp_path / "cfg.yaml", make_pack(tmp_path / "p"))),
                                     toolchain_digest="t" * 16, denylist_digest="d" * 64, corpus_sha="none")
    agents = {"fixer": {"command": FIX_AGENT, "fingerprint": "f" * 16}}
    w = SimpleNamespace(task="t01", tdigest="a" * 64, ddigest="d" * 64, agent="fixer", fp="f" * 16, epoch="1",
                        who="ann")
    for stage in ("hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score", "hidden_score_session"):
        step = experiment.step_for(stage, c, w, agents, None)
        assert step.stage == stage.replace("_session", "")
        assert "t01" in step.shell_args and step.mem_mb > 0 and step.runtime_min > 0
    assert experiment.step_for("run_agent", c, w, agents, None) == steps.run_agent(c, "t01", "a" * 64, "fixer",
                                                                                  agents["fixer"], "1", None)
    with pytest.raises(ValueError, match="fixer: fingerprint 0000000000000000 is not the current one"):
        experiment.step_for("run_agent", c, SimpleNamespace(**{**vars(w), "fp": "0" * 16}), agents, None)
    with pytest.raises(ValueError, match="no per-task step is named 'gate'"):
        experiment.step_for("gate", c, w, agents, None)


@pytest.mark.unit
def test_sandbox_refusal_only_when_required() -> None:
    from sealbench.isolation.sandbox import bwrap_problem

    assert run_guard.sandbox_refusal({"sandbox": "auto"}) == ""
    refusal = run_guard.sandbox_refusal({"sandbox": "required"})
    assert (refusal != "") == bool(bwrap_problem())
    if refusal:
        assert refusal.startswith("config field 'sandbox' is 'required', but ")
