# task_batch: with `batch_size: K` (K > 1) the per-task stages of K tasks run as one job —
# the same steps, arguments, outputs and logs as the per-task rules above, without a process
# start and Snakemake's bookkeeping per step. See scripts/sealbench/task_batch.py.

from sealbench import task_batch as _task_batch  # noqa: E402

BATCH_SIZE = int(CFG["batch_size"])
BATCHED = BATCH_SIZE > 1
_CORPUS_SHA = str((_leak_check.corpus_info() or {}).get("sha256")) if BATCHED else ""


def _steps_of(t, d):
    """The per-task rules' commands for task ``t`` at digest ``d``, as (prepare, work) steps."""
    p = plan()[0]
    base = f"{RESULTS}/tasks/{t}/{d}"
    sealed_dir, done = f"{base}/sealed", f"{base}/.done"
    tc = experiment()["toolchain_digest"]
    ddig = p.denylist_digest

    def step(module, argv, outputs, log, code, toolchain=None):
        return {"module": module, "argv": [str(a) for a in argv], "outputs": outputs, "log": log, "code": code,
                "toolchain": toolchain, "done_dir": done}

    prepare = [
        step("hash_pack", ["seal", "--task-dir", Path(CFG["pack"]) / "tasks" / t, "--digest", d, "--out", sealed_dir,
                           "--record", f"{base}/sealed.json"],
             [sealed_dir, f"{base}/sealed.json"], f"{base}/logs/hash_pack.log", code_digest("hash_pack")),
        step("leak_check", ["--task", sealed_dir, "--denylist", Path(CFG["pack"]) / "denylist.txt",
                            "--expect-denylist-digest", ddig, "--out", f"{base}/leak-{ddig}.json"],
             [f"{base}/leak-{ddig}.json"], f"{base}/logs/leak-{ddig}.log",
             code_digest("leak_check") + ":" + _CORPUS_SHA),
    ]
    controls = f"{base}/controls/controls.json"
    work = [step("run_dummy", ["--sealed", sealed_dir, "--out-dir", f"{base}/controls", "--oracle-runs",
                               CFG["oracle_runs"], "--timeout", CFG["score_timeout_s"], "--sandbox", CFG["sandbox"],
                               "--limits", LIMITS],
                 [controls], f"{base}/logs/run_dummy.log", code_digest("run_dummy", "sandbox"), tc)]
    hide = ["--hide", str(Path(CFG["pack"]).absolute()), "--hide", str(Path(RESULTS).absolute())]
    scores = []
    for a, s in sorted(AGENTS.items()):
        spec = json.dumps({k: v for k, v in s.items() if k != "fingerprint"})
        for e in EPOCHS:
            rundir = f"{base}/runs/{a}/{s['fingerprint']}/{e}"
            work.append(step(
                "run_agent",
                ["--sealed", sealed_dir, "--run-dir", rundir, "--agent", a, "--fingerprint", s["fingerprint"],
                 "--spec", spec, "--epoch", e, "--envelope", json.dumps(CFG["envelope"]), "--sandbox", CFG["sandbox"],
                 *(["--stop-on-green"] if CFG["stop_on_green"] else []), "--log-cap-bytes", CFG["log_cap_bytes"],
                 "--limits", LIMITS, *hide],
                [f"{rundir}/run.json", f"{rundir}/patch.diff"], f"{base}/logs/run_agent-{a}-{s['fingerprint']}-{e}.log",
                code_digest("run_agent", "sandbox", "visible", "bridge"), tc))
            score = f"{base}/scores/{a}/{s['fingerprint']}/{e}.json"
            scores.append(score)
            work.append(step(
                "hidden_score",
                ["--sealed", sealed_dir, "--run-dir", rundir, "--out", score, "--timeout", CFG["score_timeout_s"],
                 "--sandbox", CFG["sandbox"], "--controls", controls, "--limits", LIMITS],
                [score], f"{base}/logs/hidden_score-{a}-{s['fingerprint']}-{e}.log",
                code_digest("hidden_score", "sandbox"), tc))
    files = {"sealed": [f"{base}/sealed.json"], "leaks": [f"{base}/leak-{ddig}.json"], "controls": [controls],
             "scores": scores}
    return prepare, work, files


@functools.cache
def batches():
    """{batch key: spec}: the tasks in id order, cut into runs of batch_size."""
    if not BATCHED:
        return {}
    p = plan()[0]
    ids = sorted(p.tasks)
    out = {}
    for i in range(0, len(ids), BATCH_SIZE):
        members, summary = [], {"sealed": [], "leaks": [], "controls": [], "scores": []}
        for t in ids[i:i + BATCH_SIZE]:
            prepare, work, files = _steps_of(t, p.task_digests[t])
            members.append({"task": t, "digest": p.task_digests[t], "prepare": prepare, "work": work})
            for k, v in files.items():
                summary[k] += v
        spec = {"tasks": members, "summary": summary}
        out[_task_batch.spec_key(spec)] = spec
    return out


@functools.cache
def batch_of_task():
    return {m["task"]: key for key, spec in batches().items() for m in spec["tasks"]}


def all_batches():
    return [f"{RESULTS}/batches/{key}/done.json" for key in batches()]  # in task order


if workflow.is_main_process and BATCHED:
    try:
        batches()  # planning checks the batches; the batch_spec jobs write them
    except SealbenchError as exc:
        _fail(exc)


rule batch_spec:
    """One batch's spec (content-addressed by its key: an existing one is never rewritten)."""
    output:
        f"{RESULTS}/batches/{{key}}/spec.json",
    localrule: True
    run:
        write_json(Path(output[0]), batches()[wildcards.key])


def batch_runtime_min(w):
    """Cluster runtime request of a batch: the sum of its members' per-task requests."""
    per_task = (10 + CFG["score_timeout_s"] * (2 + CFG["oracle_runs"]) * 2 // 60
                + len(AGENTS) * len(EPOCHS) * (agent_runtime_min(w) + 5 + 2 * CFG["score_timeout_s"] // 60))
    return 5 + per_task * len(batches()[w.key]["tasks"])


rule task_batch:
    input:
        spec=f"{RESULTS}/batches/{{key}}/spec.json",
    output:
        f"{RESULTS}/batches/{{key}}/done.json",
    params:
        code=code_digest("task_batch"),
    log:
        f"{RESULTS}/batches/{{key}}/batch.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=batch_runtime_min,
    shell:
        "{PY} -m sealbench.task_batch --spec {input.spec:q} --out {output:q} " + ON_FAIL
