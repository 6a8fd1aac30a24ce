# gate: the decision (publishable or not, and why), the card and the report. `gate` is the
# target users type; `decide` writes the files of one experiment.


rule decide:
    input:
        experiment=f"{RESULTS}/experiments/{{exp}}/experiment.json",
        split=lambda w: split_file(),
        pack_hash=lambda w: pack_hash_file(),
        tasks=f"{RESULTS}/experiments/{{exp}}/tables/tasks.parquet",
        runs=f"{RESULTS}/experiments/{{exp}}/tables/runs.parquet",
        strata=f"{RESULTS}/experiments/{{exp}}/tables/strata.parquet",
        public=lambda w: [f"{CFG['public_results']}/decision.json"] if CFG.get("public_results") else [],
    output:
        decision=report(
            f"{RESULTS}/experiments/{{exp}}/decision.json", caption="../report/decision.rst", category="Decision"
        ),
        card=f"{RESULTS}/experiments/{{exp}}/card.json",
        markdown=report(
            f"{RESULTS}/experiments/{{exp}}/report.md", caption="../report/report_md.rst", category="Decision"
        ),
        report=report(
            f"{RESULTS}/experiments/{{exp}}/report.html", caption="../report/report_html.rst", category="Decision"
        ),
    params:
        code=code_digest("gate"),
        ledger=str(Path(CFG["pack"]) / "ledger.jsonl"),
    log:
        f"{RESULTS}/experiments/{{exp}}/logs/gate.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "{PY} -m sealbench.gate --experiment-dir {RESULTS}/experiments/{wildcards.exp}"
        " --split {input.split:q} --pack-hash {input.pack_hash:q} --latest {RESULTS}/latest"
        " --ledger {params.ledger:q} " + ON_FAIL


rule gate:
    """The target users type. results/latest is pointed by the decide job, and at the start of
    any run whose experiment is already decided (never while planning: `snakemake -n` writes
    nothing, so after switching back to a finished experiment it points there at the next run)."""
    default_target: True
    input:
        lambda w: f"{exp_dir()}/decision.json",
    localrule: True
