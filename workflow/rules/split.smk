# split: the seeded, stratified tune/holdout split, frozen once in PACK/split_manifest.json.
# It reruns only when the task set, the strata, the seed or the fraction change; another seed
# against an existing manifest is refused (already at parse time).


rule split:
    output:
        f"{RESULTS}/split/{{key}}/split_manifest.json",
    params:
        pack=CFG["pack"],
        seed=CFG["seed"],
        frac=CFG["holdout_frac"],
        strata=" ".join(CFG["strata"]),
        code=code_digest("split"),
    log:
        f"{RESULTS}/split/{{key}}/split.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "{PY} -m sealbench.split --pack {params.pack:q} --seed {params.seed} --holdout-frac {params.frac}"
        " --strata {params.strata} --out {output:q} " + ON_FAIL
