# run_dummy: the controls (empty diff, stub, gold patch x oracle_runs) on every task. The
# empty diff must fail, the stub must fail, the gold patch must pass every time.


rule run_dummy:
    input:
        sealed=sealed,
        leak=leak_file,
    output:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/controls/controls.json",
    params:
        outdir=lambda w, output: str(Path(output[0]).parent),
        runs=CFG["oracle_runs"],
        timeout=CFG["score_timeout_s"],
        sandbox=CFG["sandbox"],
        limits=LIMITS,
        code=code_digest("run_dummy", "sandbox"),
        toolchain=lambda w: experiment()["toolchain_digest"],
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/run_dummy.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=lambda w: 10 + CFG["score_timeout_s"] * (2 + CFG["oracle_runs"]) * 2 // 60,
    shell:
        "{PY} -m sealbench.run_dummy --sealed {input.sealed:q} --out-dir {params.outdir:q}"
        " --oracle-runs {params.runs} --timeout {params.timeout} --sandbox {params.sandbox}"
        " --limits {params.limits:q} " + ON_FAIL
