# build_env: each distinct task test environment (PACK/environment/, PACK/environments/<name>/)
# built once, content-addressed by its spec digest (python, platform, requirements, pytest pin):
# results/envs/<spec digest>/ with env.json and lock.txt (sealbench.isolation.environments). A checkpoint:
# the jobs of a task with an environment take its env.json as input, and their toolchain param
# holds the built environment's own digest (its lock), read once it is built.


wildcard_constraints:
    sdigest=r"[0-9a-f]{64}",


checkpoint build_env:
    output:
        paths.env_record("{sdigest}"),
    log:
        paths.env_log("{sdigest}"),
    conda:
        CONDA_ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        requirements=lambda w: env_specs()[w.sdigest][0],
        name=lambda w: env_specs()[w.sdigest][1],
        # where environments live (results/envs): the folder above the output's <sdigest>/ folder
        root=lambda w, output: str(Path(output[0]).parent.parent),
        # the install runs pack-supplied code: sandboxed as the config says (env.json records it)
        sandbox=CFG["sandbox"],
        code=code_digest("isolation.environments"),
    shell:
        "sealbench_job {log:q} sealbench.isolation.environments --requirements {params.requirements:q} --name {params.name:q}"
        " --expect {wildcards.sdigest} --root {params.root:q} --sandbox {params.sandbox:q}"
