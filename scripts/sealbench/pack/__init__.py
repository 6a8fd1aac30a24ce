"""pack: A pack and its tasks on disk: reading a pack and its tasks, where a task's tests and support
files sit in a repository, the workspaces an attempt runs in, and patches.

Modules:

- ``packs``: reading a pack: its tasks, each `meta.json` validated
- ``patches``: reading a unified diff into per-file patches; unsafe paths
- ``task_layout``: Where a task's tests and imports live (docs/contract.md §1: ``tests_layout``,
  ``support_files``, ``import_paths``, ``packages``).
- ``workspace``: workspaces (the worker's view of a task: an overlay over the sealed copy, or a
  copy) and the patch taken from one
"""
