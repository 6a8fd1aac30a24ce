# Shared set-up: validate the config and the pack before any job, digest every task, and
# name the experiment. Nothing here runs tests; it only reads and hashes.

import functools
import json
import shlex
import os
import sys
import time
from pathlib import Path

SCRIPTS = str(Path(workflow.basedir) / "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from sealbench.core import (  # noqa: E402
    AGENT_CACHE_NAME,
    CONTROLS,
    HashCache,
    SealbenchError,
    agent_identity,
    canonical_json,
    code_digest,
    control_fingerprint,
    sha256_text,
    toolchain,
    toolchain_digest,
    validate_config,
    write_json,
)
from sealbench import hash_pack as _hash_pack  # noqa: E402
from sealbench import split as _split  # noqa: E402
from sealbench import leak_check as _leak_check  # noqa: E402

PY = sys.executable
RESULTS = "results"
shell.prefix(f"export PYTHONPATH={SCRIPTS}${{{{PYTHONPATH:+:$PYTHONPATH}}}}; ")

#: How every job ends: its output goes to its log; on failure the log is shown — or, when the
#: log itself could not be written (a full disk), a sentence saying so.
ON_FAIL = (
    " > {log:q} 2>&1 || {{ rc=$?; if [ -s {log:q} ]; then cat {log:q} >&2; else echo \"sealbench: the job failed"
    " (exit $rc) and its log is empty or could not be written: check the free space and permissions of"
    " results/ (df -h results)\" >&2; fi; exit 1; }}"
)

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



#: The stat cache of agent code: read while planning, written at onstart (planning writes nothing).
_AGENT_CACHE = HashCache(Path(RESULTS) / ".sealbench" / AGENT_CACHE_NAME)


def _agent_identities():
    """Each agent's identity: its fingerprint and the files it covers (stat-cached, so a re-plan
    reads only what changed)."""
    return {name: agent_identity(name, spec, Path.cwd(), _AGENT_CACHE) for name, spec in CFG["agents"].items()}


try:
    AGENT_IDENTITY = _agent_identities()
except SealbenchError as exc:
    _fail(exc)
AGENTS = {name: dict(spec, fingerprint=AGENT_IDENTITY[name]["fingerprint"]) for name, spec in CFG["agents"].items()}
EPOCHS = list(range(1, int(CFG["epochs"]) + 1))
#: The resource limits every sandboxed command runs under (a param of each rule that runs one).
LIMITS = json.dumps(CFG["limits"], sort_keys=True)
#: Config keys that change how the work is scheduled, not what is measured: not in the experiment id.
EXECUTION_ONLY_KEYS = ("pack", "batch_size")


@functools.cache
def plan():
    """Validate and digest the pack; check the split. Raises SealbenchError."""
    p = _hash_pack.plan_pack(Path(CFG["pack"]), CFG["strata"], Path(RESULTS) / ".sealbench" / "hashcache.json",
                             write_caches=False)
    strata_of = {tid: t.stratum for tid, t in p.tasks.items()}
    manifest = _split.check(p.pack, strata_of, CFG["seed"], CFG["holdout_frac"])
    return p, strata_of, manifest


@functools.cache
def experiment():
    """The experiment record: everything that makes this result this result."""
    p, strata_of, manifest = plan()
    tc = toolchain()
    cfg_for_id = {k: v for k, v in CFG.items() if k not in EXECUTION_ONLY_KEYS}
    ident = {
        "pack_digest": p.pack_digest,
        "split_manifest_digest": _split.manifest_digest(manifest),
        "config": cfg_for_id,
        "code": code_digest("hash_pack", "leak_check", "split", "run_dummy", "run_agent", "hidden_score",
                            "stratify", "gate", "stats", "report", "sandbox", "visible", "bridge", "session"),
        "toolchain_digest": toolchain_digest(tc),
        "agent_fingerprints": {a: s["fingerprint"] for a, s in AGENTS.items()},
        "human_sessions": [list(x) for x in human_sessions()],
    }
    exp_id = sha256_text(canonical_json(ident))[:16]
    commands = {}
    for tid, t in sorted(p.tasks.items()):
        key = f"visible: {t.meta['visible_command']} | hidden: {t.meta['hidden_command']}"
        commands.setdefault(key, []).append(tid)
    deny = _leak_check.read_denylist(Path(CFG["pack"]) / "denylist.txt")
    return dict(ident, exp_id=exp_id, pack=str(CFG["pack"]), task_digests=p.task_digests,
                oracle_commands=[{"commands": k, "tasks": v} for k, v in commands.items()],
                denylist_lines=len(deny),
                denylist_digest=p.denylist_digest, strata_of=strata_of, toolchain=tc, config_full=CFG,
                agent_identity=AGENT_IDENTITY)


def task_dir(task):
    return f"{RESULTS}/tasks/{task}/{{tdigest}}".replace("{tdigest}", plan()[0].task_digests[task])


def sealed(w):
    return f"{RESULTS}/tasks/{w.task}/{w.tdigest}/sealed"


def leak_file(w):
    return f"{RESULTS}/tasks/{w.task}/{w.tdigest}/leak-{plan()[0].denylist_digest}.json"


def exp_dir():
    return f"{RESULTS}/experiments/{experiment()['exp_id']}"


def all_sealed_records():
    return [f"{task_dir(t)}/sealed.json" for t in sorted(plan()[0].tasks)]


def all_leak_files():
    d = plan()[0].denylist_digest
    return [f"{task_dir(t)}/leak-{d}.json" for t in sorted(plan()[0].tasks)]


def all_controls():
    return [f"{task_dir(t)}/controls/controls.json" for t in sorted(plan()[0].tasks)]


def all_scores():
    return [
        f"{task_dir(t)}/scores/{a}/{s['fingerprint']}/{e}.json"
        for t in sorted(plan()[0].tasks)
        for a, s in sorted(AGENTS.items())
        for e in EPOCHS
    ]


def human_sessions():
    """Submitted human sessions (sealbench session submit) for the configured people, on the
    current task digests: (task, digest, who, epoch)."""
    out = []
    p = plan()[0]
    for t in sorted(p.tasks):
        for who in CFG["humans"]:
            base = Path(RESULTS) / "tasks" / t / p.task_digests[t] / "sessions" / who
            if base.is_dir():
                for e in sorted(base.iterdir(), key=lambda d: d.name):
                    if e.name.isdigit() and (e / "run.json").exists() and (e / "patch.diff").exists():
                        out.append((t, p.task_digests[t], who, e.name))
    return out


def all_session_scores():
    return [f"{RESULTS}/tasks/{t}/{d}/scores/human_{who}/{e}.json" for t, d, who, e in human_sessions()]


def split_file():
    p, strata_of, _ = plan()
    return f"{RESULTS}/split/{_split.ids_key(strata_of)}/split_manifest.json"


def pack_hash_file():
    return f"{RESULTS}/packs/{plan()[0].pack_digest}/PACK_HASH.txt"


def agent_runtime_min(w):
    """Cluster runtime request of one agent attempt: its clock plus set-up and scoring."""
    box = CFG["envelope"].get("max_wall_s") or 3600
    return 5 + int(box) // 60


# One pipeline per working directory: a second one is refused before it touches anything.
_RUN_LOCK = Path(RESULTS) / ".sealbench" / "run.lock"
_RUN_LOCK_FD = None


def _refuse_if_locked():
    """While planning: refuse when another pipeline holds the run lock, without writing anything
    (no lock file yet means no pipeline has run here)."""
    import fcntl

    try:
        fd = os.open(_RUN_LOCK, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        _fail(f"another sealbench pipeline is running in this working directory ({holder}); results/ is "
              "left as it is. Wait for it (`sealbench progress` shows how far it is) or use another "
              "working directory.")
    finally:
        os.close(fd)


def _try_run_lock(hold):
    """Take (and, with hold, keep for this process's life) the exclusive run lock, or refuse."""
    import fcntl

    global _RUN_LOCK_FD
    _RUN_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(_RUN_LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        os.close(fd)
        _fail(f"another sealbench pipeline is running in this working directory ({holder}); results/ is "
              "left as it is. Wait for it (`sealbench progress` shows how far it is) or use another "
              "working directory.")
    if hold:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {os.uname().nodename}, since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
        _RUN_LOCK_FD = fd  # released by the kernel when this process ends, even on kill -9
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


onstart:
    # Only a run writes (never `-n`, `--lint` or `--summary`): the disk probe, the lock, the caches.
    _check_results_writable()
    _try_run_lock(hold=True)
    for _save in (plan()[0].save_caches, _AGENT_CACHE.save):
        try:
            _save()
        except OSError:
            pass  # the caches only save time
    if (Path(exp_dir()) / "decision.json").exists():  # results/latest: the current, finished experiment
        from sealbench.gate import point_latest

        point_latest(Path(RESULTS) / "latest", Path(exp_dir()))


MIN_FREE_MB = int(os.environ.get("SEALBENCH_MIN_FREE_MB", "64"))


def _check_results_writable():
    """results/ must be writable and have room, or nothing starts (clear error, nothing written)."""
    import errno
    import shutil as _shutil

    base = Path(RESULTS)
    try:
        (base / ".sealbench").mkdir(parents=True, exist_ok=True)
        probe = base / ".sealbench" / f".probe-{os.getpid()}"
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
    _refuse_if_locked()
    from sealbench.sandbox import bwrap_problem as _bwrap_problem

    if CFG["sandbox"] == "required" and _bwrap_problem():
        _fail(f"config field 'sandbox' is 'required', but {_bwrap_problem()}. Install bubblewrap, "
              "or set sandbox: auto to run unsandboxed (the gate then refuses a headline).")
    try:
        plan()
        EXP = experiment()
    except SealbenchError as exc:
        _fail(exc)


rule experiment_record:
    """The experiment record (everything that makes this result this result); content-addressed
    by its id, so an existing one is never rewritten."""
    output:
        f"{RESULTS}/experiments/{{exp}}/experiment.json",
    localrule: True
    run:
        if wildcards.exp != experiment()["exp_id"]:
            raise ValueError(f"experiment {wildcards.exp} is not the current one ({experiment()['exp_id']})")
        write_json(Path(output[0]), experiment())
