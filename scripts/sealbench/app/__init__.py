"""app: The top: the workflow's plan and the experiment id, the run lock and start checks around a run,
what ``validate`` foresees, ``sealbench try``, the session commands and the ``sealbench`` command
line itself. Nothing in the package imports it.

Modules:

- ``cli``: the `sealbench` command ([cli.md](cli.md))
- ``experiment``: what the workflow plans before any job: the pack digested, the agents'
  fingerprints, the experiment record and its id (`EXECUTION_ONLY_KEYS` aside), the task
  environments, the batches, each rule's step; imported by no stage
- ``preflight``: The refusals a config and a pack's split decide before any job runs (``sealbench
  validate``).
- ``run_guard``: around a real run: the run lock (a second pipeline refused, a dead run's Snakemake
  lock removed), `results/` writable with room, the agents able to start, `results/latest` pointed
  after the run; imported by no stage
- ``staleness``: which earlier results are still current, and what moved since the others were
  made (packages old → new and why each counts, files, settings): said by a run before its first
  job and by `sealbench progress`; imported by no stage
- ``session_cli``: the `sealbench session …` commands, and the forwarding of them from inside the
  sealed shell
- ``try_task``: `sealbench try AGENT TASK`: one sealed, scored attempt outside the DAG
  ([cli.md](cli.md#trying-one-task))
"""
