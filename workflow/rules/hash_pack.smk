# hash_pack: a verified, read-only copy of each task at the digest planned at parse time, and
# the pack's digest table. The pack itself is never an input (its mtimes mean nothing); the
# digest in the path is the dependency.


rule hash_pack:
    output:
        sealed=directory(f"{RESULTS}/tasks/{{task}}/{{tdigest}}/sealed"),
        record=f"{RESULTS}/tasks/{{task}}/{{tdigest}}/sealed.json",
    params:
        src=lambda w: str(Path(CFG["pack"]) / "tasks" / w.task),
        code=code_digest("hash_pack"),
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/hash_pack.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "{PY} -m sealbench.hash_pack seal --task-dir {params.src:q} --digest {wildcards.tdigest}"
        " --out {output.sealed:q} --record {output.record:q} " + ON_FAIL


rule pack_hash:
    input:
        records=lambda w: [] if BATCHED else all_sealed_records(),
        batches=lambda w: all_batches(),
    output:
        txt=f"{RESULTS}/packs/{{pdigest}}/PACK_HASH.txt",
        tsv=f"{RESULTS}/packs/{{pdigest}}/task_digests.tsv",
    params:
        denylist=lambda w: plan()[0].denylist_digest,
        code=code_digest("hash_pack"),
    log:
        f"{RESULTS}/packs/{{pdigest}}/pack_hash.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "{PY} -m sealbench.hash_pack aggregate --denylist-digest {params.denylist}"
        " --out-txt {output.txt:q} --out-tsv {output.tsv:q} --batches {input.batches:q} -- {input.records:q} " + ON_FAIL
