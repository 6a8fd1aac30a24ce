"""builders: Pack builders (``sealbench pack``): a source read safely and a task written and verified,
what a project's tests need, mutants and ``pack mutate``, SWE-bench instances and ``pack import-
swebench``, and SWE-bench predictions in and out.

Modules:

- ``mutant_tasks``: One kept mutant as a task of the pack contract (docs/packs.md): its test trees,
  oracle, prompt, title, id, and the strata over the kept tasks.
- ``mutants``: Single-site mutants of Python source, made from the ``ast`` (docs/packs.md).
- ``pack_common``: What the pack builders share (``sealbench pack mutate``, ``sealbench pack
  import-swebench``; docs/packs.md): a project read from a folder or an sdist, its layout, the
  requirements its tests need, its test suite run with a JUnit report, a task folder written, a task verified.
- ``pack_mutate``: ``sealbench pack mutate SOURCE``: a private pack of single-site mutants of real
  code (docs/packs.md "Building packs from real code").
- ``pack_requirements``: The requirements a project's tests need, read from its own files
  (docs/packs.md).
- ``pack_swebench``: ``sealbench pack import-swebench INSTANCES.jsonl --repos DIR``: a pack from
  SWE-bench-style instances and local clones, every task verified by sealbench's own scoring
  (docs/packs.md, "From SWE-bench-style instances").
- ``predictions``: SWE-bench predictions in and out ([cli.md](cli.md#swe-bench-predictions))
- ``swebench_git``: Local git work for importing SWE-bench-style instances (``pack_swebench``):
  never the network.
- ``swebench_instances``: SWE-bench-style instances read and checked (``sealbench pack
  import-swebench``, docs/packs.md).
"""
