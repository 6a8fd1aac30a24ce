"""scoring: Tamper-proof scoring: a patch applied to a pristine snapshot, the sealed pytest report and
its seal (the pytest plugin and seal_site/, the interpreter's entry point in a scoring command),
tamper rules, the overlay a score runs in, similarity, collection and the visible-test service.

Modules:

- ``collection``: tests that cannot be collected for a missing module: every control `infra_fail`,
  named
- ``patch_apply``: applying a patch to a scoring copy (`git apply` semantics)
- ``pytest_seal``: the pytest plugin that streams a sealed report with canaries from every scoring
  run
- ``scoring``: a patch on a pristine snapshot with the sealed tests (`score_patch`), in a copy or
  as an overlay (the patched files as a layer, the sealed tests mounted read-only over it)
- ``seal_site/``:
- ``sealed_command``: running one scoring command with the seal plugin, and judging how it ended
- ``sealed_report``: the sealed report: the stream, its canaries, JUnit
- ``similarity``: how close a patch is to the gold patch
- ``tamper_rules``: what a patch may not touch or add: the test folders, shadowing modules, runner
  configuration
- ``visible``: `SEALBENCH_VISIBLE_CMD`: the harness runs the visible suite, logs the attempt, seals
  greens
"""
