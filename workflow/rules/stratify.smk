# stratify: the three tables every reader opens (tasks, runs, strata) for one experiment.


rule stratify:
    input:
        experiment=paths.experiment_record("{exp}"),
        split=lambda w: split_file(),
        sealed=lambda w: [] if BATCHED else all_sealed_records(),
        leaks=lambda w: [] if BATCHED else all_leak_files(),
        controls=lambda w: [] if BATCHED else all_controls(),
        scores=lambda w: [] if BATCHED else all_scores(),
        sessions=lambda w: all_session_scores(),
        batches=lambda w: all_batches(),
    output:
        tasks=paths.table("{exp}", "tasks"),
        runs=paths.table("{exp}", "runs"),
        strata=paths.table("{exp}", "strata"),
    log:
        paths.experiment_log("{exp}", "stratify"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        code=code_digest("stages.stratify"),
        out_dir=lambda w, output: str(Path(output.tasks).parent),
        # per-task files are found from experiment.json (a command line cannot hold them all)
        per_task="" if BATCHED else f"--results {paths.RESULTS}",
    shell:
        "sealbench_job {log:q} sealbench.stages.stratify --experiment {input.experiment:q} --split {input.split:q}"
        " --out-dir {params.out_dir:q} {params.per_task} --scores {input.sessions:q} --batches {input.batches:q}"
