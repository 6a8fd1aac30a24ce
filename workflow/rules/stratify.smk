# stratify: the three tables every reader opens (tasks, runs, strata) for one experiment.


rule stratify:
    input:
        experiment=f"{RESULTS}/experiments/{{exp}}/experiment.json",
        split=lambda w: split_file(),
        sealed=lambda w: [] if BATCHED else all_sealed_records(),
        leaks=lambda w: [] if BATCHED else all_leak_files(),
        controls=lambda w: [] if BATCHED else all_controls(),
        scores=lambda w: [] if BATCHED else all_scores(),
        sessions=lambda w: all_session_scores(),
        batches=lambda w: all_batches(),
    output:
        tasks=f"{RESULTS}/experiments/{{exp}}/tables/tasks.parquet",
        runs=f"{RESULTS}/experiments/{{exp}}/tables/runs.parquet",
        strata=f"{RESULTS}/experiments/{{exp}}/tables/strata.parquet",
    params:
        code=code_digest("stratify", "stats"),
        # per-task files are found from experiment.json (a command line cannot hold them all)
        per_task="" if BATCHED else f"--results {RESULTS}",
    log:
        f"{RESULTS}/experiments/{{exp}}/logs/stratify.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "{PY} -m sealbench.stratify --experiment {input.experiment:q} --split {input.split:q}"
        " --out-dir {RESULTS}/experiments/{wildcards.exp}/tables"
        " {params.per_task} --scores {input.sessions:q} --batches {input.batches:q}"
        " " + ON_FAIL
