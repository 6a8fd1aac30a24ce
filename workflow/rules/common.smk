# Shared set-up: validate the config and the pack before any job, digest every task, and
# name the experiment. Nothing here runs tests; it only reads and hashes. Only functions live
# here; the rules are in one file per stage (and experiment.smk).

import functools
import json
import shlex
import os
import sys
import time
from pathlib import Path

from snakemake.exceptions import WorkflowError

SCRIPTS = str(Path(workflow.basedir) / "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from sealbench.core import (  # noqa: E402
    HashCache,
    SealbenchError,
    atomic_write_text,
    canonical_json,
    sha256_text,
    write_json,
)
from sealbench.code_digests import code_digest  # noqa: E402
from sealbench.configuration import agents_to_run, validate_config  # noqa: E402
from sealbench.identity import AGENT_CACHE_NAME, agent_identity  # noqa: E402
from sealbench import hash_pack as _hash_pack  # noqa: E402
from sealbench import paths  # noqa: E402
from sealbench import run_console  # noqa: E402
from sealbench import split as _split  # noqa: E402
from sealbench import steps  # noqa: E402
from sealbench.toolchain import ToolchainCache, toolchain, toolchain_digest  # noqa: E402
from sealbench.environments import load_env, pack_requirements  # noqa: E402
from sealbench import leak_check as _leak_check  # noqa: E402

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
    sys.stderr.write(f"\nsealbench: {exc}\n\nNothing was run; no result was changed.\n")
    sys.exit(1)


try:
    _files = ", ".join(str(f) for f in getattr(workflow, "configfiles", [])) or "config/config.yaml"
    CFG = validate_config(config, where=f"config ({_files} + --config overrides)")
except SealbenchError as exc:
    _fail(exc)


def _job_shell_prefix():
    """What every job's shell starts with: where the code, the pack and results/ are (as
    environment variables, never as job parameters: a copied pack reruns nothing), the
    interpreter, and `sealbench_job LOG MODULE ARGS...`, which runs `python -m MODULE ARGS` with
    its output in LOG and, on failure, shows the log (the compact console of the sealbench logger
    plugin shows an excerpt instead) — or, when the log could not be written (a full disk), a
    sentence saying so. The module runs under sealbench.job_launch, bound to this Snakemake
    process: when it ends (also on `kill -9`) or on Ctrl-C, the job ends with everything it
    started (agents, test runs, batch workers), so no job outlives the run."""
    from snakemake.settings.types import DeploymentMethod

    with_conda = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
    env = {paths.PACK_ENV: str(Path(CFG["pack"]).absolute()), paths.RESULTS_ENV: str(Path(RESULTS).absolute()),
           "SEALBENCH_PY": "python" if with_conda else sys.executable}
    exports = f"export PYTHONPATH={shlex.quote(SCRIPTS)}${{PYTHONPATH:+:$PYTHONPATH}}; "
    exports += "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
    # the compact console (the sealbench logger plugin) shows an excerpt of the log itself
    show = ":" if run_console.compact_console(workflow.output_settings) else 'cat "$log" >&2'
    job = ('sealbench_job() { log="$1"; shift; '
           f'"$SEALBENCH_PY" -m sealbench.job_launch {os.getpid()} "$@" > "$log" 2>&1 || '
           '{ rc=$?; '
           f'if [ -s "$log" ]; then {show}; else echo "sealbench: the job failed (exit $rc) and its log is '
           'empty or could not be written: check the free space and permissions of results/ (df -h results)" >&2; '
           'fi; exit 1; }; }; ')
    return (exports + job).replace("{", "{{").replace("}", "}}")  # the prefix is formatted like a command


shell.prefix(_job_shell_prefix())


#: What each task's code imports and which packages that covers (for the toolchain): saved at onstart.
_TOOLCHAIN_CACHE = ToolchainCache(Path(paths.state_dir()) / "toolchain-cache.json")

#: The stat cache of agent code: read while planning, written at onstart (planning writes nothing).
_AGENT_CACHE = HashCache(Path(paths.state_dir()) / AGENT_CACHE_NAME)


def _agent_identities():
    """Each agent's identity: its fingerprint and the files it covers (stat-cached, so a re-plan
    reads only what changed)."""
    return {name: agent_identity(name, CFG["agents"][name], Path.cwd(), _AGENT_CACHE) for name in RUN_AGENTS}


#: The agents this run schedules: the candidate, the baseline and extra_agents (configuration.agents_to_run);
#: other entries under 'agents' (e.g. merged in from config/config.yaml under a --configfile) do not run.
RUN_AGENTS = agents_to_run(CFG)

try:
    AGENT_IDENTITY = _agent_identities()
except SealbenchError as exc:
    _fail(exc)
AGENTS = {name: dict(CFG["agents"][name], fingerprint=AGENT_IDENTITY[name]["fingerprint"]) for name in RUN_AGENTS}
EPOCHS = list(range(1, int(CFG["epochs"]) + 1))
#: Config keys that change how the work is scheduled, not what is measured: not in the experiment id.
EXECUTION_ONLY_KEYS = ("pack", "batch_size")


@functools.cache
def plan():
    """Validate and digest the pack; check the split. Raises SealbenchError."""
    p = _hash_pack.plan_pack(Path(CFG["pack"]), CFG["strata"], Path(paths.state_dir()) / "hashcache.json",
                             write_caches=False)
    strata_of = {tid: t.stratum for tid, t in p.tasks.items()}
    manifest = _split.check(p.pack, strata_of, CFG["seed"], CFG["holdout_frac"])
    return p, strata_of, manifest


@functools.cache
def experiment():
    """The experiment record: everything that makes this result this result."""
    p, strata_of, manifest = plan()
    agent_files = [f for ident in AGENT_IDENTITY.values() for f in ident["files"] if f.endswith(".py")]
    # a task with its own test environment imports from it, not from sealbench's venv
    tc = toolchain(task_modules=sorted({m for tid, t in p.tasks.items() if t.env is None
                                        for m in _TOOLCHAIN_CACHE.task(t.dir, p.task_digests[tid])}),
                   agent_files=agent_files, cache=_TOOLCHAIN_CACHE)
    cfg_for_id = {k: v for k, v in CFG.items() if k not in EXECUTION_ONLY_KEYS}
    cfg_for_id["agents"] = {a: CFG["agents"][a] for a in RUN_AGENTS}  # defined but not run: not this experiment
    ident = {
        "pack_digest": p.pack_digest,
        "split_manifest_digest": _split.manifest_digest(manifest),
        "config": cfg_for_id,
        # the code of every stage and of human sessions, with all they import (derived: core.code_closure)
        "code": code_digest("hash_pack", "leak_check", "split", "run_dummy", "run_agent", "hidden_score",
                            "stratify", "gate", "session"),
        "toolchain_digest": toolchain_digest(tc),
        "agent_fingerprints": {a: s["fingerprint"] for a, s in AGENTS.items()},
        "human_sessions": [list(x) for x in human_sessions()],
    }
    if env_specs():  # only a pack with test environments: the bundled suite's id is as before
        ident["environments"] = {sd: name for sd, (_req, name) in sorted(env_specs().items())}
        ident["harness_toolchain_digest"] = harness_toolchain_digest()
    exp_id = sha256_text(canonical_json(ident))[:16]
    commands = {}
    for tid, t in sorted(p.tasks.items()):
        key = f"visible: {t.meta['visible_command']} | hidden: {t.meta['hidden_command']}"
        commands.setdefault(key, []).append(tid)
    deny = _leak_check.read_denylist(Path(CFG["pack"]) / "denylist.txt")
    return dict(ident, exp_id=exp_id, pack=str(CFG["pack"]), task_digests=p.task_digests,
                oracle_commands=[{"commands": k, "tasks": v} for k, v in commands.items()],
                denylist_lines=len(deny),
                denylist_digest=p.denylist_digest, strata_of=strata_of, toolchain=tc, config_full=dict(CFG, agents=cfg_for_id["agents"]),
                agent_identity=AGENT_IDENTITY)


def task_dir(task):
    return paths.task_base(task, plan()[0].task_digests[task])


def sealed(w):
    return paths.sealed_dir(w.task, w.tdigest)


def leak_file(w):
    return paths.leak_report(w.task, w.tdigest, plan()[0].denylist_digest)


def exp_dir():
    return paths.experiment_dir(experiment()["exp_id"])


def _tasks():
    return sorted(plan()[0].task_digests.items())


@functools.cache
def _task_list_text():
    return "task_id\ttask_digest\n" + "".join(f"{t}\t{d}\n" for t, d in _tasks())


def task_list_file():
    """The plan's (task, digest) list as a file (paths.task_list, rule task_list), content-addressed."""
    return paths.task_list(sha256_text(_task_list_text())[:16])


def write_task_list(key, out, log):
    if paths.task_list(key) != task_list_file():
        raise ValueError(f"task list {key} is not the current plan's ({task_list_file()})")
    atomic_write_text(Path(out), _task_list_text())
    Path(log).write_text(f"task list {key}: {len(_tasks())} tasks\n")


def all_sealed_records():
    return [paths.sealed_record(t, d) for t, d in _tasks()]


def all_leak_files():
    return [paths.leak_report(t, d, plan()[0].denylist_digest) for t, d in _tasks()]


def all_controls():
    return [paths.controls(t, d) for t, d in _tasks()]


def all_scores():
    return [paths.score(t, d, a, s["fingerprint"], e) for t, d in _tasks() for a, s in sorted(AGENTS.items())
            for e in EPOCHS]


def human_sessions():
    """Submitted human sessions (sealbench session submit) for the configured people, on the
    current task digests: (task, digest, who, epoch)."""
    out = []
    for t, d in _tasks():
        for who in CFG["humans"]:
            base = Path(paths.sessions_of(t, d, who))
            if base.is_dir():
                for e in sorted(base.iterdir(), key=lambda d: d.name):
                    if e.name.isdigit() and (e / "run.json").exists() and (e / "patch.diff").exists():
                        out.append((t, d, who, e.name))
    return out


def all_session_scores():
    return [paths.session_score(t, d, who, e) for t, d, who, e in human_sessions()]


def split_file():
    return paths.split_manifest(_split.ids_key(plan()[1]))


def pack_hash_file():
    return paths.pack_hash(plan()[0].pack_digest)


# --------------------------------------------------------------------------------------------
# The per-task steps: argv, code and toolchain digests and resources of each per-task rule come
# from sealbench.steps, the one definition task_batch runs too.


@functools.cache
def step_config():
    from sealbench.leak_corpus import corpus_info
    corpus = (corpus_info() or {}).get("sha256")
    return steps.StepConfig.from_config(CFG, toolchain_digest=experiment()["toolchain_digest"],
                                        denylist_digest=plan()[0].denylist_digest, corpus_sha=str(corpus),
                                        harness_toolchain_digest=harness_toolchain_digest() if env_specs() else "")


# --------------------------------------------------------------------------------------------
# Task test environments (PACK/environment/, PACK/environments/<name>/; environment.smk builds them)


@functools.cache
def env_specs():
    """{spec digest: (requirements file relative to the pack, name)} of every environment a task uses."""
    p = plan()[0]
    return {t.env.digest: (pack_requirements(t.env, p.pack), t.env.name) for t in p.tasks.values() if t.env}


def task_env(task):
    """The spec digest of the task's environment, or None (sealbench's own interpreter)."""
    env = plan()[0].tasks[task].env
    return env.digest if env is not None else None


@functools.cache
def harness_toolchain_digest():
    """The toolchain without the tasks' imports: what a task with its own environment depends on
    in sealbench's venv (the stages and the agents)."""
    agent_files = [f for ident in AGENT_IDENTITY.values() for f in ident["files"] if f.endswith(".py")]
    return toolchain_digest(toolchain(agent_files=agent_files, cache=_TOOLCHAIN_CACHE))


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


#: For each per-task rule: its step for the job's wildcards.
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


# --------------------------------------------------------------------------------------------
# Batches (batch_size > 1): the per-task steps of K tasks as one task_batch job.

BATCH_SIZE = int(CFG["batch_size"])
BATCHED = BATCH_SIZE > 1


@functools.cache
def batches():
    """{batch key: spec}: the tasks in id order, cut into runs of batch_size."""
    if not BATCHED:
        return {}
    return steps.batch_specs(step_config(), plan()[0].task_digests, AGENTS, EPOCHS, BATCH_SIZE,
                             {t: task_env(t) for t in plan()[0].task_digests})


@functools.cache
def batch_of_task():
    return {m["task"]: key for key, spec in batches().items() for m in spec["tasks"]}


def all_batches():
    return [paths.batch_file(key, "done.json") for key in batches()]  # in task order


def batch_threads(w):
    """Members a batch runs at a time (its job's threads): on this machine, the cores left over
    when every batch runs at once — ``--cores 4`` and one batch of 14 tasks: 4; two batches: 2
    each; ten batches: 1 — never more than its members. On a cluster executor, 1 (as before:
    each batch is a job of one CPU; and so in the job's own Snakemake there, which knows neither
    the main process's cores nor the allocation). Not part of any output: the files are the same
    for any value."""
    if not workflow.local_exec or not workflow.is_main_process:
        return 1
    try:
        cores = int(workflow.cores)
    except (TypeError, ValueError, WorkflowError):
        return 1
    return steps.batch_threads(len(batches()[w.key]["tasks"]), len(batches()), cores)


def batch_runtime_min(w):
    """Cluster runtime request of a batch: the sum of its members' per-task requests."""
    return steps.batch_runtime_min(step_config(), batches()[w.key], len(AGENTS), len(EPOCHS))


def write_batch_spec(key, out, log):
    write_json(Path(out), batches()[key])
    Path(log).write_text(f"batch {key}: {len(batches()[key]['tasks'])} tasks\n")


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


def write_experiment_record(exp, out, log):
    if exp != experiment()["exp_id"]:
        raise ValueError(f"experiment {exp} is not the current one ({experiment()['exp_id']})")
    record = dict(experiment())
    if env_specs():  # what each task environment is, as built (the card names them, locks included)
        tasks_of = {}
        for tid in sorted(plan()[0].tasks):
            if task_env(tid) is not None:
                tasks_of.setdefault(task_env(tid), []).append(tid)
        record["environments"] = [dict(load_env(Path(paths.env_dir(sd))).card(), spec_digest=sd,
                                       requirements=env_specs()[sd][0], tasks=tasks_of[sd])
                                  for sd in sorted(env_specs())]
    write_json(Path(out), record)
    Path(log).write_text(f"experiment {exp}: {len(experiment()['task_digests'])} tasks\n")


# One pipeline per working directory: a second one is refused before it touches anything. The
# run lock (results/.sealbench/run.lock) is a kernel flock, held from the start of the run (the
# wrapped workflow.execute, before Snakemake takes its own locks) until the process ends, even on
# kill -9; the file records who holds it (pid, host, since when).
_RUN_LOCK = Path(paths.state_dir()) / "run.lock"
_RUN_LOCK_FD = None


def _run_lock(take):
    """Refuse when another pipeline holds the run lock (its holder named). With ``take``, take it
    for this process's life and return what the file said of the previous holder ("" if
    nothing); without, only check, writing nothing (planning: no lock file yet means no
    pipeline has run here)."""
    import fcntl

    global _RUN_LOCK_FD
    if take:
        _RUN_LOCK.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(_RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    else:
        try:
            fd = os.open(_RUN_LOCK, os.O_RDONLY)
        except OSError:
            return ""
    previous = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        _fail(f"another sealbench pipeline is running in this working directory ({previous or 'unknown'}); "
              "results/ is left as it is. Wait for it (`sealbench progress` shows how far it is) or use another "
              "working directory.")
    if not take:
        os.close(fd)
        return previous
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
    _RUN_LOCK_FD = fd  # not inherited by jobs; released by the kernel when this process ends, even on kill -9
    return previous


def _remove_stale_snakemake_locks(previous):
    """Snakemake's own lock (.snakemake/locks/) left by a run that was killed (kill -9, a crash, a
    lost node): this run holds the run lock, which every pipeline here takes before Snakemake
    locks and keeps until it ends, so a Snakemake lock present now belongs to no live pipeline.
    Removed, with one line that says so (``previous``: the dead run, as the run lock named it);
    without this, Snakemake would refuse until `snakemake --unlock`."""
    from snakemake.logging import logger
    from snakemake.settings.enums import PersistenceBackend

    if workflow.workflow_settings.persistence_backend != PersistenceBackend.FILE:
        return  # another backend keeps its locks elsewhere: Snakemake says what to do
    locks = Path(".snakemake") / "locks"
    if not (locks.is_dir() and any(locks.iterdir())):
        return
    import shutil as _shutil

    _shutil.rmtree(locks)
    who = previous if previous.startswith("pid ") else "which one is not recorded"
    logger.warning(f"sealbench: removed the lock {locks}/ of an earlier run that no longer runs ({who}): "
                   "it ended (killed, or its machine stopped) before it could unlock.")


def _point_latest_if_decided():
    """results/latest: the current, finished experiment — this config's, once it is decided."""
    if (Path(exp_dir()) / "decision.json").exists():
        from sealbench.latest_link import point_latest
        from sealbench.results_index import write_index

        point_latest(Path(paths.latest()), Path(exp_dir()))
        write_index(Path(RESULTS))  # results/index.html marks the experiment latest points at


def _execute_then_point_latest(execute):
    """Snakemake's ``workflow.execute``, then results/latest pointed at this config's experiment
    when it is decided. A run with nothing to be done returns before ``onstart`` and
    ``onsuccess`` (Snakemake's hooks run only when there are jobs), so without this an
    up-to-date rerun of another config would leave latest on the previous one. Only a real run
    writes: not ``-n`` (the dry-run executor), and a failed run raises before this point.

    Before it, a real run takes the run lock (before Snakemake takes its own:
    :func:`_remove_stale_snakemake_locks` relies on that), and watches for Ctrl-C
    (run_console.watch_interrupt: the console then says the run was interrupted, not failed)."""

    @functools.wraps(execute)
    def run(*args, **kwargs):
        # before execute, workflow.dryrun is False even for `-n` (it reads the executor plugin that
        # execute sets): ask the plugin execute is given
        plugin = kwargs.get("executor_plugin", args[0] if args else None)
        dry = bool(getattr(getattr(plugin, "common_settings", None), "dryrun_exec", False)) or workflow.dryrun
        if not dry:
            try:  # the run lock, before Snakemake takes its own
                previous = _run_lock(take=True)
            except OSError:
                previous = None  # results/ cannot be written: onstart says so before any job
            if previous is not None:
                _remove_stale_snakemake_locks(previous)
            run_console.watch_interrupt()
        try:
            result = execute(*args, **kwargs)
        except KeyboardInterrupt:  # a Ctrl-C between two steps of Snakemake's scheduler: no traceback
            raise SystemExit(run_console.interrupted_outside_snakemake())
        if not dry and not workflow.dryrun and not workflow.execution_settings.no_hooks:
            try:
                _point_latest_if_decided()
            except OSError as exc:
                raise WorkflowError(f"{paths.latest()} could not be pointed at {exp_dir()}: {exc}") from exc
        return result

    return run


if workflow.is_main_process:
    workflow.execute = _execute_then_point_latest(workflow.execute)


onstart:
    # Only a run writes (never `-n`, `--lint` or `--summary`): the disk probe, the lock, the caches.
    _check_results_writable()
    if _RUN_LOCK_FD is None:  # not taken before the run (results/ was not writable then)
        _run_lock(take=True)
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
    _point_latest_if_decided()
    # The plan as one log record: its line on the console, its numbers for the sealbench logger plugin.
    run_console.log_plan(workflow, log)


MIN_FREE_MB = int(os.environ.get("SEALBENCH_MIN_FREE_MB", "64"))


def _check_results_writable():
    """results/ must be writable and have room, or nothing starts (clear error, nothing written)."""
    import errno
    import shutil as _shutil

    base = Path(RESULTS)
    try:
        Path(paths.state_dir()).mkdir(parents=True, exist_ok=True)
        probe = Path(paths.state_dir()) / f".probe-{os.getpid()}"
        probe.write_bytes(b"x")
        probe.unlink()
    except OSError as exc:
        why = {errno.EROFS: "it is on a read-only file system", errno.EACCES: "permission denied",
               errno.ENOSPC: "the disk is full"}.get(exc.errno, exc.strerror)
        _fail(f"{base.absolute()}/ is not writable ({why}). Point snakemake at a writable working directory "
              "(-d DIR) or free the disk; no result was changed.")
    free_mb = _shutil.disk_usage(base).free // (1 << 20)
    if free_mb < MIN_FREE_MB:
        _fail(f"{base.absolute()}/ has only {free_mb} MB free; a run needs at least {MIN_FREE_MB} MB for "
              "workspaces, logs and tables. Free some space first; no result was changed.")


# Before any job: validate and digest the pack, name the experiment (main process only).
# Planning reads and never writes: the experiment record, the batch specs and results/latest are
# written by jobs (rules experiment_record, batch_spec, gate), the lock and caches at onstart.
if workflow.is_main_process:
    _run_lock(take=False)
    from sealbench.sandbox import bwrap_problem as _bwrap_problem

    if CFG["sandbox"] == "required" and _bwrap_problem():
        _fail(f"config field 'sandbox' is 'required', but {_bwrap_problem()}. Install bubblewrap, "
              "or set sandbox: auto to run unsandboxed (the gate then refuses a headline).")
    try:
        plan()
        EXP = experiment()
        batches()  # planning checks the batches; the batch_spec jobs write them
    except SealbenchError as exc:
        _fail(exc)
