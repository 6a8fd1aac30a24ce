# leak_check: each task's title, notes, prompt and identifiers against the pack's denylist and public
# benchmark text, and prompt.md and repo/ against the task's own hidden tests.
# A suspect fails the job with a message naming the task and the line; nothing downstream runs.


rule leak_check:
    input:
        sealed=sealed,
    output:
        paths.leak_report("{task}", "{tdigest}", "{ddigest}"),
    params:
        argv=step_argv("leak_check"),
        code=step_code("leak_check"),
    log:
        paths.task_log("{task}", "{tdigest}", "leak-{ddigest}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("leak_check"),
        runtime=step_runtime("leak_check"),
    shell:
        "sealbench_job {log:q} sealbench.leak_check {params.argv}"
