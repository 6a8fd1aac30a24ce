# leak_check: each task's title, notes, prompt and identifiers against the pack's denylist and public
# benchmark text, and prompt.md and repo/ against the task's own hidden tests. Each task's job
# records its verdict (a suspect too); leak_verdict then reads them all and fails naming every
# suspect, its field and what matched, so one run shows them all. Every control and agent run
# waits for leak_verdict: a suspect anywhere stops the run before any of them.


rule leak_check:
    input:
        sealed=sealed,
    output:
        paths.leak_report("{task}", "{tdigest}", "{ddigest}"),
    log:
        paths.task_log("{task}", "{tdigest}", "leak-{ddigest}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("leak_check"),
        runtime=step_runtime("leak_check"),
    params:
        argv=step_argv("leak_check"),
        code=step_code("leak_check"),
    shell:
        "sealbench_job {log:q} sealbench.stages.leak_check {params.argv}"


rule leak_verdict:
    input:
        leaks=lambda w: all_leak_files(),
        # the reports are found from the pack's task list (a command line cannot hold thousands)
        tasks=lambda w: task_list_file(),
    output:
        paths.leak_verdict(),
    log:
        paths.leak_verdict_log(),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    params:
        code=code_digest("stages.leak_check"),
        ddigest=lambda w: plan()[0].denylist_digest,
    shell:
        "sealbench_job {log:q} sealbench.stages.leak_check verdict --out {output:q} --task-list {input.tasks:q}"
        " --denylist-digest {params.ddigest}"
