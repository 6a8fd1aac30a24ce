# split: the seeded, stratified tune/holdout split, frozen once in PACK/split_manifest.json.
# It reruns only when the task set, the strata, the seed or the fraction change; another seed
# against an existing manifest is refused (already at parse time). The job finds the pack
# through $SEALBENCH_PACK (a copied pack reruns nothing).


rule split:
    output:
        paths.split_manifest("{key}"),
    log:
        paths.split_log("{key}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    params:
        seed=CFG["seed"],
        frac=CFG["holdout_frac"],
        strata=" ".join(CFG["strata"]),
        code=code_digest("stages.split"),
    shell:
        "sealbench_job {log:q} sealbench.stages.split --seed {params.seed} --holdout-frac {params.frac}"
        " --strata {params.strata} --out {output:q}"
