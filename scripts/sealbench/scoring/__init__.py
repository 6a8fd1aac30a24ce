"""scoring: a patch applied to a pristine snapshot and scored by the task's own pytest suite, as plain
pytest judges it, against decoy tests a forger cannot tell from the real ones; the report plugin
(report_site/), tamper rules, the overlay a score runs in, similarity, collection and the
visible-test service.

Modules:

- ``decoys``: decoy tests: twins of hidden tests that find the bug, with one expectation changed
  (correct code must fail them); made and verified by the controls
- ``collection``: tests that cannot be collected for a missing module: every control `infra_fail`,
  named
- ``patch_apply``: applying a patch to a scoring copy (`git apply` semantics)
- ``scoring``: a patch on a pristine snapshot with the sealed tests (`score_patch`), in a copy or
  as an overlay (the patched files as a layer, the sealed tests mounted read-only over it)
- ``report_site/``: the report plugin (``sealbench_report``) a scoring command loads by name
- ``sealed_command``: running one scoring command with the report plugin, and judging how it ended
- ``sealed_report``: the report stream and the facts it shows (``StreamFacts``)
- ``verdict``: the one table of rules that decides an attempt's status (the stream's rules, decoys
  included, the patch's, the attempt's and the runs table row's), over typed records
- ``similarity``: how close a patch is to the gold patch
- ``tamper_rules``: what a patch may not touch or add: the test folders, shadowing modules, runner
  configuration
- ``visible``: `SEALBENCH_VISIBLE_CMD`: the harness runs the visible suite, logs the attempt, seals
  greens
"""
