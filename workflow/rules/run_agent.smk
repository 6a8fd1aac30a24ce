# run_agent: each configured agent, `epochs` times, on every task: a fresh workspace with only
# the visible tests, the task's clock, the whole process group killed at the time box.


rule run_agent:
    input:
        sealed=sealed,
        leak=leak_file,
    output:
        run=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/runs/{{agent}}/{{fp}}/{{epoch}}/run.json",
        patch=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/runs/{{agent}}/{{fp}}/{{epoch}}/patch.diff",
    params:
        rundir=lambda w, output: str(Path(output.run).parent),
        spec=lambda w: json.dumps({k: v for k, v in AGENTS[w.agent].items() if k != "fingerprint"}),
        envelope=json.dumps(CFG["envelope"]),
        sandbox=CFG["sandbox"],
        limits=LIMITS,
        stop=" --stop-on-green" if CFG["stop_on_green"] else "",
        cap=CFG["log_cap_bytes"],
        hide=lambda w: f"--hide {shlex.quote(str(Path(CFG['pack']).absolute()))} --hide {shlex.quote(str(Path(RESULTS).absolute()))}",
        code=code_digest("run_agent", "sandbox", "visible", "bridge"),
        toolchain=lambda w: experiment()["toolchain_digest"],
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/run_agent-{{agent}}-{{fp}}-{{epoch}}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=agent_runtime_min,
    shell:
        "{PY} -m sealbench.run_agent --sealed {input.sealed:q} --run-dir {params.rundir:q}"
        " --agent {wildcards.agent} --fingerprint {wildcards.fp} --spec {params.spec:q} --epoch {wildcards.epoch}"
        " --envelope {params.envelope:q} --sandbox {params.sandbox}{params.stop} --log-cap-bytes {params.cap}"
        " --limits {params.limits:q} {params.hide} " + ON_FAIL
