# hidden_score: each agent attempt's patch on a pristine snapshot with the sealed tests.


rule hidden_score:
    input:
        sealed=sealed,
        controls=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/controls/controls.json",
        run=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/runs/{{agent}}/{{fp}}/{{epoch}}/run.json",
        patch=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/runs/{{agent}}/{{fp}}/{{epoch}}/patch.diff",
    output:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/scores/{{agent}}/{{fp}}/{{epoch}}.json",
    params:
        rundir=lambda w, input: str(Path(input.run).parent),
        timeout=CFG["score_timeout_s"],
        sandbox=CFG["sandbox"],
        limits=LIMITS,
        code=code_digest("hidden_score", "sandbox"),
        toolchain=lambda w: experiment()["toolchain_digest"],
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/hidden_score-{{agent}}-{{fp}}-{{epoch}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=lambda w: 5 + 2 * CFG["score_timeout_s"] // 60,
    shell:
        "{PY} -m sealbench.hidden_score --sealed {input.sealed:q} --run-dir {params.rundir:q}"
        " --out {output:q} --timeout {params.timeout} --sandbox {params.sandbox} --limits {params.limits:q}"
        " --controls {input.controls:q}"
        " " + ON_FAIL


def session_inputs(w):
    """A human session's inputs: the sealed task and its controls come from the per-task rules,
    or (batch_size > 1) from the task's batch, which writes them at the same paths."""
    base = f"{RESULTS}/tasks/{w.task}/{w.tdigest}"
    ins = {"run": f"{base}/sessions/{w.who}/{w.epoch}/run.json", "patch": f"{base}/sessions/{w.who}/{w.epoch}/patch.diff"}
    if BATCHED:
        ins["batch"] = f"{RESULTS}/batches/{batch_of_task()[w.task]}/done.json"
    else:
        ins.update(sealed=sealed(w), controls=f"{base}/controls/controls.json")
    return ins


rule hidden_score_session:
    input:
        unpack(session_inputs),
    output:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/scores/human_{{who}}/{{epoch}}.json",
    params:
        rundir=lambda w, input: str(Path(input.run).parent),
        sealed=sealed,
        controls=lambda w: f"{RESULTS}/tasks/{w.task}/{w.tdigest}/controls/controls.json",
        timeout=CFG["score_timeout_s"],
        sandbox=CFG["sandbox"],
        limits=LIMITS,
        code=code_digest("hidden_score", "sandbox"),
        toolchain=lambda w: experiment()["toolchain_digest"],
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/hidden_score-human-{{who}}-{{epoch}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=lambda w: 5 + 2 * CFG["score_timeout_s"] // 60,
    shell:
        "{PY} -m sealbench.hidden_score --sealed {params.sealed:q} --run-dir {params.rundir:q}"
        " --out {output:q} --timeout {params.timeout} --sandbox {params.sandbox} --limits {params.limits:q}"
        " --controls {params.controls:q}"
        " " + ON_FAIL
