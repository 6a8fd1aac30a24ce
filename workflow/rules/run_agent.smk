# run_agent: each configured agent, `epochs` times, on every task: a fresh workspace with only
# the visible tests, the task's clock, the whole process group killed at the time box. The pack
# and results/ are hidden from the agent ($SEALBENCH_PACK, $SEALBENCH_RESULTS).


rule run_agent:
    input:
        sealed=sealed,
        leak=leak_file,
        # the whole pack's leak verdict: waited for, but (ancient) never a reason to rerun
        verdict=ancient(paths.leak_verdict()),
        # the task's test environment, when it has one (environment.smk)
        env=env_input,
    output:
        run=paths.run_record("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}"),
        patch=paths.run_patch("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}"),
    log:
        paths.task_log("{task}", "{tdigest}", "run_agent-{agent}-{fp}-{epoch}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("run_agent"),
        runtime=step_runtime("run_agent"),
    params:
        argv=step_argv("run_agent"),
        code=step_code("run_agent"),
        toolchain=step_toolchain("run_agent"),
    shell:
        "sealbench_job {log:q} sealbench.stages.run_agent {params.argv}"
