# Shared set-up: validate the config (workflow/schemas/config.schema.yaml), then plan — the pack
# validated and digested, the experiment named — and the input functions the rules call. Nothing
# here runs tests or holds logic: it calls sealbench.experiment (the plan, the experiment, the
# batches), sealbench.run_guard (run lock, disk probe, results/latest), sealbench.steps (each
# per-task step) and sealbench.job_launch (every job's shell). Rules: one file per stage.

import functools
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

SCRIPTS = str(Path(workflow.basedir) / "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from sealbench.core import HashCache, SealbenchError  # noqa: E402
from sealbench.code_digests import code_digest  # noqa: E402
from sealbench.configuration import validate_config  # noqa: E402
from sealbench.identity import AGENT_CACHE_NAME  # noqa: E402
from sealbench import experiment as _experiment  # noqa: E402
from sealbench import job_launch, paths, run_console, run_guard, steps  # noqa: E402
from sealbench import split as _split  # noqa: E402
from sealbench.toolchain import ToolchainCache  # noqa: E402
from sealbench.environments import load_env  # noqa: E402

RESULTS = paths.RESULTS

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
    """A refused config, pack or run: one message, exit 1, before any job."""
    sys.stderr.write(f"\nsealbench: {exc}\n\nNothing was run; no result was changed.\n")
    sys.exit(1)


try:
    _files = ", ".join(str(f) for f in getattr(workflow, "configfiles", [])) or "config/config.yaml"
    CFG = validate_config(config, where=f"config ({_files} + --config overrides)")
except SealbenchError as exc:
    _fail(exc)


def _with_conda():
    from snakemake.settings.types import DeploymentMethod

    return DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


shell.prefix(job_launch.shell_prefix(
    SCRIPTS, {paths.PACK_ENV: str(Path(CFG["pack"]).absolute()), paths.RESULTS_ENV: str(Path(RESULTS).absolute()),
              "SEALBENCH_PY": "python" if _with_conda() else sys.executable},
    os.getpid(), show_log=not run_console.compact_console(workflow.output_settings)))

STATE = Path(paths.state_dir())
#: What each task's code imports and which packages that covers (for the toolchain): saved at onstart.
_TOOLCHAIN_CACHE = ToolchainCache(STATE / "toolchain-cache.json")
#: The stat cache of agent code: read while planning, written at onstart (planning writes nothing).
_AGENT_CACHE = HashCache(STATE / AGENT_CACHE_NAME)

try:  # the agents this run schedules (configuration.agents_to_run), with their fingerprints
    AGENT_IDENTITY = _experiment.agent_identities(CFG, Path.cwd(), _AGENT_CACHE)
except SealbenchError as exc:
    _fail(exc)
AGENTS = _experiment.scheduled_agents(CFG, AGENT_IDENTITY)
EPOCHS = list(range(1, int(CFG["epochs"]) + 1))
BATCHED = int(CFG["batch_size"]) > 1  # the per-task steps of batch_size tasks as one task_batch job


@functools.cache
def plan():
    """(pack plan, strata, split manifest): experiment.plan_pack. Raises SealbenchError."""
    return _experiment.plan_pack(CFG, STATE)


def human_sessions():
    return _experiment.human_sessions(plan()[0].task_digests, CFG["humans"])


@functools.cache
def experiment():
    """The experiment record (experiment.experiment_record), with its id."""
    return _experiment.experiment_record(CFG, plan(), AGENT_IDENTITY, _TOOLCHAIN_CACHE, human_sessions())


@functools.cache
def env_specs():
    return _experiment.env_specs(plan()[0])


def task_env(task):
    return _experiment.task_env(plan()[0], task)


@functools.cache
def harness_toolchain_digest():
    return _experiment.harness_toolchain_digest(AGENT_IDENTITY, _TOOLCHAIN_CACHE)


@functools.cache
def step_config():
    from sealbench.leak_corpus import corpus_info
    corpus = (corpus_info() or {}).get("sha256")
    return steps.StepConfig.from_config(CFG, toolchain_digest=experiment()["toolchain_digest"],
                                        denylist_digest=plan()[0].denylist_digest, corpus_sha=str(corpus),
                                        harness_toolchain_digest=harness_toolchain_digest() if env_specs() else "")


@functools.cache
def batches():
    """{batch key: spec} (steps.batch_specs): the tasks in id order, cut into runs of batch_size."""
    if not BATCHED:
        return {}
    return steps.batch_specs(step_config(), plan()[0].task_digests, AGENTS, EPOCHS, int(CFG["batch_size"]),
                             {t: task_env(t) for t in plan()[0].task_digests})


@functools.cache
def batch_of_task():
    return _experiment.batch_of_task(batches())


# -- input functions (the rules' inputs, params and resources)

def _tasks():
    return sorted(plan()[0].task_digests.items())


def sealed(w):
    return paths.sealed_dir(w.task, w.tdigest)


def leak_file(w):
    return paths.leak_report(w.task, w.tdigest, plan()[0].denylist_digest)


def task_list_file():
    """The plan's (task, digest) list as a file (paths.task_list, rule task_list), content-addressed."""
    return paths.task_list(_experiment.task_list_key(plan()[0].task_digests))


def all_sealed_records():
    return [paths.sealed_record(t, d) for t, d in _tasks()]


def all_leak_files():
    return [paths.leak_report(t, d, plan()[0].denylist_digest) for t, d in _tasks()]


def all_controls():
    return [paths.controls(t, d) for t, d in _tasks()]


def all_scores():
    return [paths.score(t, d, a, s["fingerprint"], e) for t, d in _tasks() for a, s in sorted(AGENTS.items())
            for e in EPOCHS]


def all_session_scores():
    return [paths.session_score(t, d, who, e) for t, d, who, e in human_sessions()]


def split_file():
    return paths.split_manifest(_split.ids_key(plan()[1]))


def pack_hash_file():
    return paths.pack_hash(plan()[0].pack_digest)


def env_input(w):
    """A job's task environment (its env.json, built by the build_env checkpoint), or nothing. A
    plain path, not ``checkpoints.build_env.get``: Snakemake defers a job whose input waits on an
    unfinished checkpoint while its outputs exist, so an edited requirements file would rerun
    nothing; as a plain input, a new or rebuilt environment reruns the job."""
    sd = task_env(w.task)
    return [] if sd is None else paths.env_record(sd)


def env_records():
    """Every environment's env.json (the experiment record names them in the card)."""
    return [paths.env_record(sd) for sd in sorted(env_specs())]


def _agent_of(w):
    spec = AGENTS[w.agent]
    if spec["fingerprint"] != w.fp:
        raise ValueError(f"{w.agent}: fingerprint {w.fp} is not the current one ({spec['fingerprint']})")
    return spec


#: For each per-task rule: its step (sealbench.steps, the one definition task_batch runs too).
STEP_OF = {
    "hash_pack": lambda w: steps.hash_pack(step_config(), w.task, w.tdigest),
    "leak_check": lambda w: steps.leak_check(step_config(), w.task, w.tdigest, w.ddigest, record=True),
    "run_dummy": lambda w: steps.run_dummy(step_config(), w.task, w.tdigest, task_env(w.task)),
    "run_agent": lambda w: steps.run_agent(step_config(), w.task, w.tdigest, w.agent, _agent_of(w), w.epoch,
                                           task_env(w.task)),
    "hidden_score": lambda w: steps.hidden_score(step_config(), w.task, w.tdigest, w.agent, w.fp, w.epoch,
                                                 task_env(w.task)),
    "hidden_score_session": lambda w: steps.hidden_score_session(step_config(), w.task, w.tdigest, w.who, w.epoch,
                                                                 task_env(w.task)),
}


def step_argv(stage):
    """The rule's command-line arguments (shell-quoted) — a param, so a change reruns the job."""
    return lambda w: STEP_OF[stage](w).shell_args


def step_code(stage):
    return lambda w: STEP_OF[stage](w).code


def step_toolchain(stage):
    """The step's toolchain digest; for a task with an environment, with the built environment's
    own digest (its lock), so a rebuilt environment that installed other versions reruns the job."""
    def param(w):
        tc, sd = STEP_OF[stage](w).toolchain, task_env(w.task)
        if sd is None:
            return tc
        return tc + ":" + load_env(Path(checkpoints.build_env.get(sdigest=sd).output[0]).parent).digest
    return param


def step_mem(stage):
    return lambda w: STEP_OF[stage](w).mem_mb


def step_runtime(stage):
    return lambda w: STEP_OF[stage](w).runtime_min


def all_batches():
    return [paths.batch_file(key, "done.json") for key in batches()]  # in task order


def batch_threads(w):
    """A batch job's threads (experiment.batch_threads): the run's cores are known only to the
    main process of a local run; elsewhere 1."""
    cores = None
    if workflow.local_exec and workflow.is_main_process:
        try:
            cores = int(workflow.cores)
        except (TypeError, ValueError, WorkflowError):
            cores = None
    return _experiment.batch_threads(len(batches()[w.key]["tasks"]), len(batches()), cores)


def batch_runtime_min(w):
    """Cluster runtime request of a batch: the sum of its members' per-task requests."""
    return steps.batch_runtime_min(step_config(), batches()[w.key], len(AGENTS), len(EPOCHS))


def session_inputs(w):
    """A human session's inputs: the sealed task and its controls come from the per-task rules,
    or (batch_size > 1) from the task's batch, which writes them at the same paths."""
    ins = {"run": f"{paths.session_dir(w.task, w.tdigest, w.who, w.epoch)}/run.json",
           "patch": f"{paths.session_dir(w.task, w.tdigest, w.who, w.epoch)}/patch.diff"}
    if BATCHED:
        ins["batch"] = paths.batch_file(batch_of_task()[w.task], "done.json")
    else:
        ins.update(sealed=sealed(w), controls=paths.controls(w.task, w.tdigest))
        if task_env(w.task) is not None:
            ins["env"] = env_input(w)
    return ins


# -- the run: files written by `run:` rules, and the run lock and results/latest around the jobs

def exp_dir():
    return paths.experiment_dir(experiment()["exp_id"])


def write_experiment_record(exp, out, log):
    _experiment.write_experiment_record(experiment(), exp, plan()[0], out, log)


def write_task_list(key, out, log):
    _experiment.write_task_list(key, plan()[0].task_digests, out, log)


def write_batch_spec(key, out, log):
    _experiment.write_batch_spec(key, batches()[key], out, log)


_RUN_LOCK = STATE / "run.lock"
_HELD = []  # the run lock once taken (run_guard.RunLock): held until this process ends


def _take_run_lock(snakemake_locks=None):
    try:
        held = run_guard.run_lock(_RUN_LOCK, take=True, snakemake_locks=snakemake_locks)
    except SealbenchError as exc:
        _fail(exc)
    _HELD.append(held)
    if held.removed:
        from snakemake.logging import logger

        logger.warning(held.removed)


def _before_run():
    """The run lock, before Snakemake takes its own; with the file backend, Snakemake's lock of a
    dead run removed (another backend keeps its locks elsewhere: Snakemake says what to do)."""
    from snakemake.settings.enums import PersistenceBackend

    file_backend = workflow.workflow_settings.persistence_backend == PersistenceBackend.FILE
    try:
        _take_run_lock(Path(".snakemake") / "locks" if file_backend else None)
    except OSError:
        pass  # results/ cannot be written: onstart says so before any job


def _point_latest():
    """results/latest: the current, finished experiment — this config's, once it is decided."""
    try:
        run_guard.point_latest_if_decided(Path(exp_dir()), Path(paths.latest()), Path(RESULTS))
    except OSError as exc:
        raise WorkflowError(f"{paths.latest()} could not be pointed at {exp_dir()}: {exc}") from exc


if workflow.is_main_process:
    workflow.execute = run_guard.wrap_execute(workflow.execute, workflow, _before_run, _point_latest)


onstart:
    # Only a run writes (never `-n`, `--lint` or `--summary`): the disk probe, the lock, the caches.
    try:
        run_guard.check_results_writable(Path(RESULTS), STATE, run_guard.min_free_mb(os.environ))
    except SealbenchError as exc:
        _fail(exc)
    if not _HELD:  # not taken before the run (results/ was not writable then)
        _take_run_lock()
    # Every agent this run schedules must be able to start: its first command checked in the
    # sandbox, the agent not run (agent_probe.start_check, as `sealbench validate`); a new run also
    # forgets the earlier runs' start failures (results/.sealbench/agent-health/).
    from sealbench.agent_probe import start_check as _start_check

    _cannot_start = _start_check(AGENTS, CFG["sandbox"], Path.cwd(), Path(CFG["pack"]), Path(RESULTS), CFG["limits"])
    if _cannot_start:
        _fail(_cannot_start)
    for _save in (plan()[0].save_caches, _AGENT_CACHE.save, _TOOLCHAIN_CACHE.save):
        try:
            _save()
        except OSError:
            pass  # the caches only save time
    run_guard.point_latest_if_decided(Path(exp_dir()), Path(paths.latest()), Path(RESULTS))
    # The plan as one log record: its line on the console, its numbers for the sealbench logger plugin.
    run_console.log_plan(workflow, log)


# Before any job: validate and digest the pack, name the experiment (main process only).
# Planning reads and never writes: the experiment record, the batch specs and results/latest are
# written by jobs (rules experiment_record, batch_spec, gate), the lock and caches at onstart.
if workflow.is_main_process:
    try:
        run_guard.run_lock(_RUN_LOCK, take=False)
    except SealbenchError as exc:
        _fail(exc)
    from sealbench.sandbox import bwrap_problem as _bwrap_problem

    if CFG["sandbox"] == "required" and _bwrap_problem():
        _fail(f"config field 'sandbox' is 'required', but {_bwrap_problem()}. Install bubblewrap, "
              "or set sandbox: auto to run unsandboxed (the gate then refuses a headline).")
    try:
        plan()
        experiment()
        batches()  # planning checks the batches; the batch_spec jobs write them
    except SealbenchError as exc:
        _fail(exc)
