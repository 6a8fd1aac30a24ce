# hidden_score: each agent attempt's patch on a pristine snapshot with the sealed tests, and
# each submitted human session the same way.


rule hidden_score:
    input:
        sealed=sealed,
        controls=paths.controls("{task}", "{tdigest}"),
        run=paths.run_record("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}"),
        patch=paths.run_patch("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}"),
        # the task's test environment, when it has one (environment.smk)
        env=env_input,
    output:
        paths.score("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}"),
    log:
        paths.task_log("{task}", "{tdigest}", "hidden_score-{agent}-{fp}-{epoch}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("hidden_score"),
        runtime=step_runtime("hidden_score"),
    params:
        argv=step_argv("hidden_score"),
        code=step_code("hidden_score"),
        toolchain=step_toolchain("hidden_score"),
    shell:
        "sealbench_job {log:q} sealbench.stages.hidden_score {params.argv}"


rule hidden_score_session:
    input:
        unpack(session_inputs),
    output:
        paths.session_score("{task}", "{tdigest}", "{who}", "{epoch}"),
    log:
        paths.task_log("{task}", "{tdigest}", "hidden_score-human-{who}-{epoch}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("hidden_score_session"),
        runtime=step_runtime("hidden_score_session"),
    params:
        argv=step_argv("hidden_score_session"),
        code=step_code("hidden_score_session"),
        toolchain=step_toolchain("hidden_score_session"),
    shell:
        "sealbench_job {log:q} sealbench.stages.hidden_score {params.argv}"
