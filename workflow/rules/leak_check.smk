# leak_check: each task's title, notes, prompt and identifiers against the pack's denylist and public
# benchmark text, and prompt.md and repo/ against the task's own hidden tests.
# A suspect fails the job with a message naming the task and the line; nothing downstream runs.


rule leak_check:
    input:
        sealed=sealed,
    output:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/leak-{{ddigest}}.json",
    params:
        denylist=lambda w: str(Path(CFG["pack"]) / "denylist.txt"),
        code=code_digest("leak_check"),
        corpus=(_leak_check.corpus_info() or {}).get("sha256"),
    log:
        f"{RESULTS}/tasks/{{task}}/{{tdigest}}/logs/leak-{{ddigest}}.log",
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "{PY} -m sealbench.leak_check --task {input.sealed:q} --denylist {params.denylist:q}"
        " --expect-denylist-digest {wildcards.ddigest} --out {output:q} " + ON_FAIL
