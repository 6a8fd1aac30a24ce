# task_batch: with `batch_size: K` (K > 1) the per-task stages of K tasks run as one job —
# the same steps (sealbench.stages.steps: arguments, outputs, logs) as the per-task rules, without a
# process start and Snakemake's bookkeeping per step. See scripts/sealbench/stages/task_batch.py.
# batch_prepare seals and leak-checks every task of the pack first, in one job: a leak suspect
# anywhere stops the run before any batch runs a control or an agent (as leak_verdict does for
# the per-task rules); each batch then reuses those steps.


rule batch_spec:
    """One batch's spec (content-addressed by its key: an existing one is never rewritten)."""
    output:
        paths.batch_file("{key}", "spec.json"),
    log:
        paths.batch_file("{key}", "spec.log"),
    localrule: True
    run:
        write_batch_spec(wildcards.key, output[0], log[0])


rule batch_prepare:
    input:
        spec=lambda w: paths.batch_file(prepare_batch()[0], "spec.json"),
    output:
        paths.batch_prepared(),
    log:
        paths.batch_prepared_log(),
    conda:
        CONDA_ENV
    threads: prepare_threads
    resources:
        mem_mb=2000,
        runtime=lambda w: 10 + len(prepare_batch()[1]["tasks"]) // 60,
    params:
        code=code_digest("stages.task_batch"),
    shell:
        "sealbench_job {log:q} sealbench.stages.task_batch --spec {input.spec:q} --out {output:q} --workers {threads}"


rule task_batch:
    input:
        spec=paths.batch_file("{key}", "spec.json"),
        # every task of the pack sealed and leak-checked: waited for, but (ancient) never a reason to rerun
        prepared=ancient(paths.batch_prepared()),
        # the test environments of its members (environment.smk)
        envs=lambda w: sorted({paths.env_record(m["env"]) for m in batches()[w.key]["tasks"] if m.get("env")}),
    output:
        paths.batch_file("{key}", "done.json"),
    log:
        paths.batch_file("{key}", "batch.log"),
    conda:
        CONDA_ENV
    # the cores the other batches leave (a pack smaller than batch_size x cores uses them all);
    # 1 on a cluster executor (batch_threads)
    threads: batch_threads
    resources:
        mem_mb=2000,
        runtime=batch_runtime_min,
    params:
        code=code_digest("stages.task_batch"),
    shell:
        "sealbench_job {log:q} sealbench.stages.task_batch --spec {input.spec:q} --out {output:q} --workers {threads}"
