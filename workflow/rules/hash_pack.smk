# hash_pack: a verified, read-only copy of each task at the digest planned at parse time, and
# the pack's digest table. The pack itself is never an input (its mtimes mean nothing, and its
# location is not a parameter); the digest in the path is the dependency.


rule hash_pack:
    output:
        sealed=directory(paths.sealed_dir("{task}", "{tdigest}")),
        record=paths.sealed_record("{task}", "{tdigest}"),
    log:
        paths.task_log("{task}", "{tdigest}", "hash_pack"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=step_mem("hash_pack"),
        runtime=step_runtime("hash_pack"),
    params:
        argv=step_argv("hash_pack"),
        code=step_code("hash_pack"),
    shell:
        "sealbench_job {log:q} sealbench.stages.hash_pack {params.argv}"


rule pack_digests:
    input:
        records=lambda w: [] if BATCHED else all_sealed_records(),
        batches=lambda w: all_batches(),
        # the records are read from the plan's task list (a command line cannot hold thousands)
        tasks=lambda w: task_list_file(),
    output:
        txt=paths.pack_hash("{pdigest}"),
        tsv=paths.task_digests_tsv("{pdigest}"),
    log:
        paths.pack_log("{pdigest}", "pack_digests"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    params:
        denylist=lambda w: plan()[0].denylist_digest,
        code=code_digest("stages.hash_pack"),
    shell:
        "sealbench_job {log:q} sealbench.stages.hash_pack aggregate --denylist-digest {params.denylist}"
        " --out-txt {output.txt:q} --out-tsv {output.tsv:q} --task-list {input.tasks:q}"


# The plan's tasks and digests as one file: the pack-level jobs (pack_digests, leak_verdict) read
# it instead of thousands of paths on their command line.
rule task_list:
    output:
        paths.task_list("{key}"),
    log:
        paths.task_list_log("{key}"),
    localrule: True
    run:
        write_task_list(wildcards.key, output[0], log[0])
