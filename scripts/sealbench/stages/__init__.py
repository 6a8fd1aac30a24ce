"""stages: The pipeline's stages: one module per rule file (workflow/rules/<stage>.smk), run as
``python -m sealbench.stages.<stage>``, plus the per-task steps they share and the batch runner.
Stages never import each other (tests/repo/test_layout.py); the gate stage lives in gate/ as it
builds on the reports.

Modules:

- ``hash_pack``: digests every task and the pack; seals a verified read-only copy of each task
- ``hidden_score``: the patch on a pristine snapshot with the sealed visible and hidden tests
- ``leak_check``: the task against the pack's denylist, public benchmark text and its own hidden
  tests; a suspect stops the run
- ``run_agent``: each agent × task × epoch in a fresh sandboxed workspace under the task's clock
- ``run_dummy``: the controls: empty diff and stub (must fail), gold patch (must pass every time)
- ``sandboxed``: what the stages that run a task's code share (not a stage): their isolation
  flags, their ``main``'s error handling, the scoring sandbox
- ``split``: the seeded, stratified tune/holdout split, frozen once in the pack; `--extend` grows it
  by a slice
- ``steps``: each per-task step (arguments, outputs, log, code and toolchain digests, resources),
  and the batches
- ``stratify``: the tables: `tasks.parquet`, `runs.parquet`, `strata.parquet`
- ``task_batch``: with `batch_size` > 1: the five per-task stages for K tasks in one job
"""
