# run_dummy: the controls (empty diff, stub, gold patch x oracle_runs) on every task. The
# empty diff must fail, the stub must fail, the gold patch must pass every time.


rule run_dummy:
    input:
        sealed=sealed,
        leak=leak_file,
        # the whole pack's leak verdict: waited for, but (ancient) never a reason to rerun
        verdict=ancient(paths.leak_verdict()),
        # the task's test environment, when it has one (environment.smk)
        env=env_input,
    output:
        paths.controls("{task}", "{tdigest}"),
    log:
        paths.task_log("{task}", "{tdigest}", "run_dummy"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("run_dummy"),
        runtime=step_runtime("run_dummy"),
    params:
        argv=step_argv("run_dummy"),
        code=step_code("run_dummy"),
        toolchain=step_toolchain("run_dummy"),
    shell:
        "sealbench_job {log:q} sealbench.stages.run_dummy {params.argv}"
