# gate: the decision (publishable or not, and why), the card and the report. `gate` is the
# target users type; `decide` writes the files of one experiment.


rule decide:
    input:
        experiment=paths.experiment_record("{exp}"),
        split=lambda w: split_file(),
        pack_hash=lambda w: pack_hash_file(),
        tasks=paths.table("{exp}", "tasks"),
        runs=paths.table("{exp}", "runs"),
        strata=paths.table("{exp}", "strata"),
        public=lambda w: [f"{CFG['public_results']}/decision.json"] if CFG.get("public_results") else [],
    output:
        decision=report(
            paths.experiment_file("{exp}", "decision.json"), caption="../report/decision.rst", category="Decision"
        ),
        card=paths.experiment_file("{exp}", "card.json"),
        markdown=report(
            paths.experiment_file("{exp}", "report.md"), caption="../report/report_md.rst", category="Decision"
        ),
        report=report(
            paths.experiment_file("{exp}", "report.html"), caption="../report/report_html.rst", category="Decision"
        ),
    log:
        paths.experiment_log("{exp}", "gate"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        code=code_digest("gate.gate"),
        exp_dir=lambda w, output: str(Path(output.decision).parent),
        latest=paths.latest(),
    shell:
        # the pack's ledger is found through $SEALBENCH_PACK: where the pack is is not a parameter
        "sealbench_job {log:q} sealbench.gate.gate --experiment-dir {params.exp_dir:q} --split {input.split:q}"
        ' --pack-hash {input.pack_hash:q} --latest {params.latest:q} --ledger "$SEALBENCH_PACK/ledger.jsonl"'


rule gate:
    """The target users type. results/latest is pointed by the decide job, and at the start and
    the end of any real run whose experiment is already decided — one with nothing to be done
    too (common.smk wraps workflow.execute with run_guard.wrap_execute: Snakemake's onstart does not run without jobs) —
    never while planning: `snakemake -n` writes nothing, so after switching back to a finished
    experiment it points there at the next run."""
    default_target: True
    input:
        lambda w: f"{exp_dir()}/decision.json",
        # batch_size > 1: the pack's prepare batch as a plain input. The batches wait for it as an
        # ancient one, and Snakemake does not plan past a rerun job reached through ancient inputs
        # alone (snakemake/snakemake#4166: only the prepare batch would run, the rest on the next
        # run); a rerun of it makes Snakemake look again at what the decision needs
        lambda w: [paths.batch_prepared()] if BATCHED else [],
    localrule: True
