"""Where a task's tests and imports live (docs/contract.md §1: ``tests_layout``,
``support_files``, ``import_paths``, ``packages``).

- :func:`layout_errors`: the checks of those meta.json keys against the task folder (run with
  the pack's validation, before any job), each naming meta.json and the field.
- :func:`test_trees`: the test folders a command gets and where they go in the workspace
  (``folders``: ``visible_tests/``/``hidden_tests/`` as folders; ``repo``: their files at their
  repository paths, the hidden tree over the visible one).
- :func:`protected_paths`: the task's own protected paths (support files; with ``repo`` every
  test file's path and the ``__init__.py`` of each folder holding one) with the reason, for
  the tamper rules.
- :func:`import_paths` / :func:`packages`: the folders put first on ``PYTHONPATH`` and the
  import names of the code under test (declared, or found in ``repo/``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

#: Test folders of the contract: a patch's changes to them never reach the scoring workspace.
TEST_DIRS = ("visible_tests", "hidden_tests")

LAYOUTS = ("folders", "repo")
#: Folder names that never hold the code under test (package discovery skips them).
NOT_PACKAGE_DIRS = {"tests", "test", "testing", "docs"}
NOT_MODULE_FILES = {"setup.py", "conftest.py", "sitecustomize.py", "usercustomize.py", "noxfile.py"}


def tests_layout(meta: Mapping) -> str:
    return str(meta.get("tests_layout") or "folders")


def _is_test_file(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name[:-3].endswith("_test"))


def _files(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", ".pyo")))


def test_trees(meta: Mapping, which: tuple[str, ...]) -> list[tuple[str, str]]:
    """(pack folder, workspace folder relative to the root) for each of ``which`` (test folder
    names, in the order they are copied: a later one wins on a shared path)."""
    if tests_layout(meta) == "repo":
        return [(d, ".") for d in which]
    return [(d, d) for d in which]


def test_paths(task_dir: Path, meta: Mapping, which: tuple[str, ...] = TEST_DIRS) -> list[str]:
    """Workspace paths of the test files of ``which`` (with ``folders``, under the folder names)."""
    out: set[str] = set()
    for src, dst in test_trees(meta, which):
        for rel in _files(Path(task_dir) / src):
            out.add(rel if dst == "." else f"{dst}/{rel}")
    return sorted(out)


def protected_paths(task_dir: Path, meta: Mapping) -> dict[str, str]:
    """The task's own protected paths (workspace-relative) and why: its ``support_files``, and
    with ``tests_layout: "repo"`` every file of ``visible_tests/``/``hidden_tests/`` at its
    repository path and the ``__init__.py`` of each folder holding one of them."""
    out = {str(p).strip("/"): "support file of the tests (meta.json support_files)"
           for p in meta.get("support_files") or ()}
    if tests_layout(meta) == "repo":
        for d in TEST_DIRS:
            for rel in _files(Path(task_dir) / d):
                out[rel] = f"test file at its repository path ({d}/{rel})"
                parent = PurePosixPath(rel).parent
                if str(parent) != ".":
                    out.setdefault(f"{parent}/__init__.py", "__init__.py of a folder holding tests")
    return out


def _package_dirs(root: Path) -> list[str]:
    """Top-level packages of ``root`` that are not tests or docs (by name or by content)."""
    return [c.name for c in (sorted(root.iterdir()) if root.is_dir() else [])
            if c.is_dir() and (c / "__init__.py").is_file() and c.name.lower() not in NOT_PACKAGE_DIRS
            and not any(_is_test_file(f.name) for f in c.iterdir())]


def import_paths(repo: Path, meta: Mapping) -> list[str]:
    """Workspace-relative folders first on ``PYTHONPATH``: ``meta["import_paths"]``; by default
    ``["src"]`` when ``repo/src/`` holds a package and ``repo/`` has no top-level one, else none."""
    if "import_paths" in meta:
        return [str(p).strip("/") or "." for p in meta["import_paths"]]
    repo = Path(repo)
    return ["src"] if _package_dirs(repo / "src") and not _package_dirs(repo) else []


def task_pythonpath(ws: Path, paths: list[str] | tuple[str, ...] = ()) -> list[str]:
    """The task's import folders (:func:`import_paths`) under the workspace ``ws``, in order."""
    return [str(Path(ws) / p) if p != "." else str(ws) for p in paths]


def pythonpath_env(ws: Path, paths: list[str] | tuple[str, ...] = ()) -> dict[str, str]:
    """``{"PYTHONPATH": …}`` for a task command run by hand in ``ws`` (the agent's and a
    person's visible runs); empty when the task has no import paths."""
    entries = task_pythonpath(ws, paths)
    return {"PYTHONPATH": os.pathsep.join(entries)} if entries else {}


def _found_packages(root: Path) -> list[str]:
    names = _package_dirs(root)
    for c in sorted(root.iterdir()) if root.is_dir() else []:
        if (c.is_file() and c.suffix == ".py" and c.name not in NOT_MODULE_FILES
              and not _is_test_file(c.name) and c.stem.isidentifier() and not c.stem.startswith("__")):
            names.append(c.stem)
    return names


def packages(repo: Path, meta: Mapping) -> list[str]:
    """The import names of the code under test: ``meta["packages"]``, or the top-level packages
    and modules of the import roots (:func:`import_paths`, else the repo root; and ``src/`` when
    it holds a package), tests, docs and build scripts excluded."""
    if meta.get("packages"):
        return [str(p) for p in meta["packages"]]
    repo = Path(repo)
    roots = [repo / p for p in import_paths(repo, meta)] or [repo]
    if _package_dirs(repo / "src") and repo / "src" not in roots:
        roots.append(repo / "src")     # a src/ layout's packages are the code under test, whatever the paths
    return sorted({n for r in roots for n in _found_packages(r)})


def _bad_relpath(p: str) -> str | None:
    if not p or p.startswith("/") or "\\" in p:
        return "must be a relative path with '/' separators"
    if ".." in PurePosixPath(p).parts:
        return "must not contain '..'"
    return None


def layout_errors(meta_path: Path, meta: Mapping) -> list[str]:
    """Problems of the layout keys of a schema-valid ``meta`` against its task folder."""
    task_dir = Path(meta_path).parent
    repo = task_dir / "repo"
    errs: list[str] = []
    for field in ("support_files", "import_paths"):
        for p in meta.get(field) or ():
            why = _bad_relpath(str(p))
            if why:
                errs.append(f"{meta_path}: field '{field}': {p!r} {why}")
            elif field == "support_files" and not (repo / p).is_file():
                errs.append(f"{meta_path}: field 'support_files': {p!r} is not a file in repo/ "
                            f"({repo / p} missing); list only files the repo ships")
            elif field == "import_paths" and p != "." and not (repo / p).is_dir():
                errs.append(f"{meta_path}: field 'import_paths': {p!r} is not a folder in repo/ ({repo / p} missing)")
    for d in TEST_DIRS:
        for rel in _files(task_dir / d):
            why = _bad_relpath(rel)
            if why:
                errs.append(f"{task_dir / d / rel}: test path {why}")
            elif tests_layout(meta) == "repo" and (repo / rel).exists():
                errs.append(f"{meta_path}: field 'tests_layout': \"repo\" puts {d}/{rel} at {rel}, which repo/ "
                            f"already holds ({repo / rel}); remove one of them")
    if not errs and repo.is_dir() and not packages(repo, meta):
        roots = ", ".join(f"repo/{p}" for p in import_paths(repo, meta)) or "repo/"
        errs.append(f"{meta_path}: field 'packages': no package or module of the code under test found in "
                    f"{roots}; declare its import names, e.g. \"packages\": [\"mylib\"]")
    return errs
