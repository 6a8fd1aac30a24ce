# Shared set-up: the config validated (workflow/schemas/config.schema.yaml), the pack planned and
# the experiment named, and the input functions the rules call. No logic lives here: it calls
# sealbench.app.experiment (the plan, the experiment, the batches, each per-task step),
# sealbench.app.run_guard (the run lock, the disk probe, results/latest around the jobs),
# sealbench.app.preflight (a refusal the holdout's ledger already decides stops a run at its start),
# sealbench.app.staleness (what moved since earlier results, named before the first job) and
# sealbench.isolation.job_launch (every job's shell). The rules are in one file per stage.

import functools
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

SCRIPTS = str(Path(workflow.basedir) / "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from sealbench.core.core import HashCache, SealbenchError  # noqa: E402
from sealbench.core.code_digests import code_digest  # noqa: E402
from sealbench.agent.clients import expand_config  # noqa: E402
from sealbench.core.configuration import validate_config  # noqa: E402
from sealbench.isolation.environments import load_env  # noqa: E402
from sealbench.provenance.identity import AGENT_CACHE_NAME  # noqa: E402
from sealbench.app import experiment as _experiment, preflight, run_guard, staleness  # noqa: E402
from sealbench.isolation import job_launch  # noqa: E402
from sealbench.core import paths, run_console  # noqa: E402
from sealbench.stages import steps  # noqa: E402
from sealbench.stages import split as _split  # noqa: E402
from sealbench.isolation.toolchain import ToolchainCache  # noqa: E402

RESULTS = paths.RESULTS
STATE = Path(paths.state_dir())
#: The conda environment of each job (`--sw-deployment-method conda`): the project's one
#: environment.yml, relative to the rules files.
CONDA_ENV = "../../environment.yml"


wildcard_constraints:
    task=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    tdigest=r"[0-9a-f]{64}",
    ddigest=r"[0-9a-f]{64}",
    pdigest=r"[0-9a-f]{64}",
    agent=r"[A-Za-z][A-Za-z0-9_]*",
    who=r"[A-Za-z][A-Za-z0-9_]*",
    fp=r"[0-9a-f]{16}",
    epoch=r"[0-9]+",
    exp=r"[0-9a-f]{16}",
    key=r"[0-9a-f]{16}",


def _fail(exc):
    """A refused config, pack or run: one message and exit 1, before any job."""
    sys.stderr.write(f"\nsealbench: {exc}\n\nNothing was run; no result was changed.\n")
    sys.exit(1)


def _or_fail(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except SealbenchError as exc:
        _fail(exc)


_files = ", ".join(str(f) for f in getattr(workflow, "configfiles", [])) or "config/config.yaml"
# client presets (agents with `client:`) expanded to the commands they stand for, installed once
CFG = _or_fail(
    expand_config,
    _or_fail(validate_config, config, where=f"config ({_files} + --config overrides)"),
    f"config ({_files})",
)


def _python():
    from snakemake.settings.types import DeploymentMethod

    return "python" if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method else sys.executable


shell.prefix(
    job_launch.shell_prefix(
        SCRIPTS,
        {
            paths.PACK_ENV: str(Path(CFG["pack"]).absolute()),
            paths.RESULTS_ENV: str(Path(RESULTS).absolute()),
            "SEALBENCH_PY": _python(),
        },
        os.getpid(),
        show_log=not run_console.compact_console(workflow.output_settings),
    )
)

# Read while planning, saved at onstart (planning writes nothing): what each task's code imports
# (for the toolchain), and the stat cache of agent code.
_TOOLCHAIN_CACHE = ToolchainCache(STATE / "toolchain-cache.json")
_AGENT_CACHE = HashCache(STATE / AGENT_CACHE_NAME)
#: The agents this run schedules (configuration.agents_to_run), each with its fingerprint.
AGENT_IDENTITY = _or_fail(_experiment.agent_identities, CFG, Path.cwd(), _AGENT_CACHE)
AGENTS = _experiment.scheduled_agents(CFG, AGENT_IDENTITY)
EPOCHS = list(range(1, int(CFG["epochs"]) + 1))
BATCHED = int(CFG["batch_size"]) > 1  # the per-task steps of batch_size tasks as one task_batch job


@functools.cache
def plan():
    """(pack plan, strata, split manifest). Raises SealbenchError."""
    return _experiment.plan_pack(CFG, STATE)


def human_sessions():
    return _experiment.human_sessions(plan()[0].task_digests, CFG["humans"])


@functools.cache
def experiment():
    """The experiment record, with its id (exp_id)."""
    return _experiment.experiment_record(CFG, plan(), AGENT_IDENTITY, _TOOLCHAIN_CACHE, human_sessions())


@functools.cache
def env_specs():
    return _experiment.env_specs(plan()[0])


def task_env(task):
    return _experiment.task_env(plan()[0], task)


@functools.cache
def step_config():
    return _experiment.step_config(CFG, experiment())


@functools.cache
def batches():
    """{batch key: spec} (steps.batch_specs): the tasks in id order, cut into runs of batch_size."""
    if not BATCHED:
        return {}
    return steps.batch_specs(
        step_config(),
        plan()[0].task_digests,
        AGENTS,
        EPOCHS,
        int(CFG["batch_size"]),
        {t: task_env(t) for t in plan()[0].task_digests},
    )


@functools.cache
def prepare_batch():
    """(key, spec) of the batch that seals and leak-checks every task before any batch runs a
    control or an agent (steps.prepare_spec; batch_size > 1 only)."""
    return steps.prepare_spec(step_config(), plan()[0].task_digests)


def batch_spec_of(key):
    """The spec of batch ``key``: a task batch, or the pack's prepare batch."""
    return batches()[key] if key in batches() else dict([prepare_batch()])[key]


# -- input functions: the rules' inputs, params and resources


def _tasks():
    return sorted(plan()[0].task_digests.items())


def exp_dir():
    return paths.experiment_dir(experiment()["exp_id"])


def sealed(w):
    return paths.sealed_dir(w.task, w.tdigest)


def leak_file(w):
    return paths.leak_report(w.task, w.tdigest, plan()[0].denylist_digest)


def task_list_file():
    return paths.task_list(_experiment.task_list_key(plan()[0].task_digests))


def split_file():
    return paths.split_manifest(_split.ids_key(plan()[1]))


def pack_hash_file():
    return paths.pack_hash(plan()[0].pack_digest)


def all_sealed_records():
    return [paths.sealed_record(t, d) for t, d in _tasks()]


def all_leak_files():
    return [paths.leak_report(t, d, plan()[0].denylist_digest) for t, d in _tasks()]


def all_controls():
    return [paths.controls(t, d) for t, d in _tasks()]


def all_scores():
    return [
        paths.score(t, d, a, s["fingerprint"], e)
        for t, d in _tasks()
        for a, s in sorted(AGENTS.items())
        for e in EPOCHS
    ]


def all_session_scores():
    return [paths.session_score(t, d, who, e) for t, d, who, e in human_sessions()]


def all_batches():
    return [paths.batch_file(key, "done.json") for key in batches()]  # in task order


def env_input(w):
    """The task's environment (its env.json, built by the build_env checkpoint), or nothing. A
    plain path, not ``checkpoints.build_env.get``: Snakemake defers a job whose input waits on an
    unfinished checkpoint while its outputs exist, so an edited requirements file would rerun
    nothing; as a plain input, a new or rebuilt environment reruns the job."""
    sd = task_env(w.task)
    return [] if sd is None else paths.env_record(sd)


def env_records():
    return [paths.env_record(sd) for sd in sorted(env_specs())]


def session_inputs(w):
    """A human session's files, and the sealed task and its controls: from the per-task rules,
    or (batch_size > 1) from the task's batch, which writes them at the same paths."""
    where = paths.session_dir(w.task, w.tdigest, w.who, w.epoch)
    ins = {"run": f"{where}/run.json", "patch": f"{where}/patch.diff"}
    if BATCHED:
        ins["batch"] = paths.batch_file(_experiment.batch_of_task(batches())[w.task], "done.json")
    else:
        ins.update(sealed=sealed(w), controls=paths.controls(w.task, w.tdigest))
        if task_env(w.task) is not None:
            ins["env"] = env_input(w)
    return ins


def _step(stage, w):
    return _experiment.step_for(stage, step_config(), w, AGENTS, task_env(w.task))


def step_argv(stage):
    """The rule's command-line arguments (shell-quoted) — a param, so a change reruns the job."""
    return lambda w: _step(stage, w).shell_args


def step_code(stage):
    return lambda w: _step(stage, w).code


def step_toolchain(stage):
    """The step's toolchain digest; for a task with an environment, with the built environment's
    own digest (its lock), so a rebuilt environment that installed other versions reruns the job."""

    def param(w):
        tc, sd = _step(stage, w).toolchain, task_env(w.task)
        if sd is None:
            return tc
        env_digest = load_env(Path(checkpoints.build_env.get(sdigest=sd).output[0]).parent).digest
        return ":".join((tc, env_digest))

    return param


def step_mem(stage):
    return lambda w: _step(stage, w).mem_mb


def step_runtime(stage):
    return lambda w: _step(stage, w).runtime_min


def batch_threads(w):
    """A batch's threads (experiment.batch_threads): the run's cores are known to the main process
    of a local run only (on a cluster executor, and in a job's own Snakemake, 1)."""
    cores = None
    if workflow.local_exec and workflow.is_main_process:
        try:
            cores = int(workflow.cores)
        except (TypeError, ValueError, WorkflowError):
            pass
    return _experiment.batch_threads(len(batches()[w.key]["tasks"]), len(batches()), cores)


def prepare_threads(w):
    """The prepare batch's threads: every core of a local run (it runs alone, before the batches)."""
    cores = None
    if workflow.local_exec and workflow.is_main_process:
        try:
            cores = int(workflow.cores)
        except (TypeError, ValueError, WorkflowError):
            pass
    return _experiment.batch_threads(len(prepare_batch()[1]["tasks"]), 1, cores)


def batch_runtime_min(w):
    """Cluster runtime request of a batch: the sum of its members' per-task requests."""
    return steps.batch_runtime_min(step_config(), batches()[w.key], len(AGENTS), len(EPOCHS))


# -- the `run:` rules' files


def write_experiment_record(exp, out, log):
    _experiment.write_experiment_record(experiment(), exp, plan()[0], out, log)


def write_task_list(key, out, log):
    _experiment.write_task_list(key, plan()[0].task_digests, out, log)


def write_batch_spec(key, out, log):
    _experiment.write_batch_spec(key, batch_spec_of(key), out, log)


# -- a real run: the run lock from before Snakemake's own until the process ends, the start
# checks, and results/latest pointed at this config's experiment once decided (run_guard)

_RUN_LOCK = STATE / "run.lock"
_HELD = []  # the run lock once taken (run_guard.RunLock)


def _take_run_lock(snakemake_locks=None):
    _HELD.append(_or_fail(run_guard.run_lock, _RUN_LOCK, take=True, snakemake_locks=snakemake_locks))
    if _HELD[-1].removed:
        from snakemake.logging import logger

        logger.warning(_HELD[-1].removed)


def _before_run():
    """Only Snakemake's file backend keeps its locks in .snakemake/locks/ (another: Snakemake says
    what to do); a results/ that cannot be written: onstart says so before any job."""
    from snakemake.settings.enums import PersistenceBackend

    file_backend = workflow.workflow_settings.persistence_backend == PersistenceBackend.FILE
    try:
        _take_run_lock(Path(".snakemake") / "locks" if file_backend else None)
    except OSError:
        pass


def _point_latest():
    try:
        run_guard.point_latest_if_decided(Path(exp_dir()), Path(paths.latest()), Path(RESULTS))
    except OSError as exc:
        raise WorkflowError(f"{paths.latest()} could not be pointed at {exp_dir()}: {exc}") from exc


def _holdout_foreseen(dry):
    """A refusal the holdout's ledger already decides (preflight.start_check, in validate's words):
    a real run stops here, before the run lock and the first job, unless run_anyway; a dry run
    says so and goes on; an experiment already decided is left to say its decision."""
    from snakemake.logging import logger

    check = preflight.start_check(
        _or_fail(preflight.start_refusals, CFG, plan(), AGENT_IDENTITY, Path(RESULTS)),
        dry=dry,
        run_anyway=bool(CFG["run_anyway"]),
        decided=(Path(exp_dir()) / "decision.json").exists(),
    )
    if check.stop:
        _fail(check.message)
    if check.message:
        logger.warning(check.message)


def _recorded_params(path):
    """Snakemake's record of the params an output was made with (None: no record)."""
    from snakemake.io import IOFile

    return workflow.persistence.params(IOFile(path))


def _moved():
    """The console's lines on earlier results made again (sealbench.app.staleness), as a warning."""
    from snakemake.logging import logger

    lines = staleness.start_lines(
        experiment(),
        step_config(),
        staleness.planned_steps(
            step_config(),
            plan()[0].task_digests,
            AGENTS,
            EPOCHS,
            {t: task_env(t) for t in plan()[0].task_digests},
            BATCHED,
        ),
        _recorded_params,
        BATCHED,
        STATE,
        paths.latest(),
        env_specs(),
    )
    if lines:
        logger.warning("\n".join(lines))


if workflow.is_main_process:
    workflow.execute = run_guard.wrap_execute(
        workflow.execute, workflow, _before_run, _point_latest, at_start=_holdout_foreseen
    )


onstart:
    # Only a run writes (never `-n`, `--lint` or `--summary`): the disk probe, the lock, the caches.
    _or_fail(
        lambda: run_guard.check_results_writable(
            Path(RESULTS), STATE, run_guard.min_free_mb(os.environ, "SEALBENCH_MIN_FREE_MB")
        )
    )
    if not _HELD:  # not taken before the run (results/ was not writable then)
        _take_run_lock()
    _or_fail(run_guard.check_agents_start, CFG, AGENTS, Path.cwd(), Path(RESULTS))
    _experiment.save_caches(plan()[0], _AGENT_CACHE, _TOOLCHAIN_CACHE)
    # before any job and before results/latest moves: what earlier results are made again, and why
    _moved()
    run_guard.point_latest_if_decided(Path(exp_dir()), Path(paths.latest()), Path(RESULTS))
    # The plan as one log record: its line on the console, its numbers for the sealbench logger plugin.
    run_console.log_plan(workflow, log)


# Before any job (main process only): refuse a second pipeline and an impossible sandbox, digest
# the pack, name the experiment, check the batches. Planning reads and never writes: the
# experiment record, the batch specs and results/latest are written by jobs (rules
# experiment_record, batch_spec, gate), the lock and the caches at onstart.
if workflow.is_main_process:
    _or_fail(run_guard.run_lock, _RUN_LOCK, take=False)
    if run_guard.sandbox_refusal(CFG):
        _fail(run_guard.sandbox_refusal(CFG))
    _or_fail(lambda: (plan(), experiment(), batches()))
