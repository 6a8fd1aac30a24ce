"""The toolchain a score depends on: the interpreter and the installed distributions that the
tests, the tasks' code and sealbench's own stages can load — not every distribution in the venv.

A run's scores depend on the toolchain; its digest is a parameter of every job that runs tests
(run_dummy, run_agent, hidden_score), so a change in it reruns them. Installing a package that
nothing imports (duckdb to read the tables, an executor plugin to run on a cluster) must not
rerun anything; upgrading pytest, or a library a task imports, must. What is covered:

1. the Python version and implementation;
2. every distribution that provides a top-level module imported by sealbench's stage code (the
   modules each stage runs, :func:`sealbench.core.code_digests.code_closure`), by the agents' code, or by any
   ``.py`` file of any task (``repo/``, ``visible_tests/``, ``hidden_tests/``), or named by a task
   command (``python -m pytest``, ``pytest``);
3. the distributions those require, transitively (their ``Requires-Dist`` for this platform);
4. the ``.pth`` files on the interpreter's path: they run code at every interpreter start.

The card lists the covered packages (``toolchain.packages``) and start-up files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.code_digests import _imports_of, code_closure
from ..core.core import canonical_json, sha256_text

#: The stage modules whose imports the toolchain covers (every stage; a change in what any of
#: them imports is a change of how results are made).
STAGE_MODULES = ("stages.hash_pack", "stages.leak_check", "stages.split", "stages.run_dummy", "stages.run_agent", "stages.hidden_score", "stages.stratify", "gate.gate",
                 "stages.task_batch")

_PY_WORD = re.compile(r"^(?:.*/)?python[0-9.]*$")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def top_level_imports(files: Iterable[str | Path]) -> set[str]:
    """The top-level names of the absolute imports in ``files`` (relative imports are local)."""
    out: set[str] = set()
    for f in files:
        for level, module, _names in _imports_of(str(f)):
            if level == 0 and module:
                out.add(module.split(".")[0])
    return out


def command_modules(command: str) -> set[str]:
    """Modules a task command runs: ``python -m X`` gives X; a bare ``pytest`` gives pytest."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    out: set[str] = set()
    for i, w in enumerate(words):
        if _PY_WORD.match(w) and i + 2 < len(words) and words[i + 1] == "-m":
            out.add(words[i + 2].split(".")[0])
        elif w in ("pytest", "py.test"):
            out.add("pytest")
    return out


def task_imports(task_dir: Path) -> list[str]:
    """What one task's code and commands import (sorted top-level names)."""
    files = [p for sub in ("repo", "visible_tests", "hidden_tests") for p in sorted((task_dir / sub).rglob("*.py"))
             if p.is_file()]
    names = top_level_imports(files)
    try:
        meta = json.loads((task_dir / "meta.json").read_text(encoding="utf-8"))
        for key in ("visible_command", "hidden_command"):
            if isinstance(meta.get(key), str):
                names |= command_modules(meta[key])
    except (OSError, ValueError):
        pass
    return sorted(names)


class ToolchainCache:
    """Read while planning, saved at onstart (planning writes nothing): each task's imports by
    task digest (a task with the same digest imports the same, so a re-plan reads only new
    tasks), and the covered packages for the last set of installed distributions and modules
    (resolving modules to distributions reads every installed RECORD: seconds)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.tasks: dict[str, list[str]] = {}
        self.packages: dict[str, Any] = {}
        self.dirty = False
        if path is not None:
            try:
                loaded = json.loads(path.read_text())
                self.tasks = {k: v for k, v in loaded.get("tasks", {}).items() if isinstance(v, list)}
                self.packages = loaded.get("packages") or {}
            except (OSError, ValueError, AttributeError):
                pass

    def task(self, task_dir: Path, digest: str) -> list[str]:
        if digest not in self.tasks:
            self.tasks[digest] = task_imports(task_dir)
            self.dirty = True
        return self.tasks[digest]

    def save(self) -> None:
        if self.path is not None and self.dirty:
            from ..core.core import atomic_write_text

            atomic_write_text(self.path, json.dumps({"tasks": self.tasks, "packages": self.packages}, sort_keys=True))
            self.dirty = False


@cache
def stage_imports() -> frozenset[str]:
    """Top-level third-party names imported by sealbench's stage code (and what it loads)."""
    here = Path(__file__).resolve().parents[1]
    names = top_level_imports(here / rel for rel in code_closure(*STAGE_MODULES))
    return frozenset(n for n in names if n != "sealbench" and n not in sys.stdlib_module_names)


def _requires(dist: metadata.Distribution) -> list[str]:
    """Names of what ``dist`` requires on this platform (no extras)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for text in dist.requires or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            out.append(_norm(req.name))
    return out


def covered_distributions(modules: Iterable[str]) -> list[str]:
    """``name==version`` of the distributions providing ``modules`` and what they require."""
    by_module = metadata.packages_distributions()
    installed: dict[str, metadata.Distribution] = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and _norm(name) not in installed:
            installed[_norm(name)] = d
    todo = [_norm(n) for m in modules for n in by_module.get(m, [])]
    seen: set[str] = set()
    while todo:
        n = todo.pop()
        if n in seen or n not in installed:
            continue
        seen.add(n)
        todo += _requires(installed[n])
    return sorted((f"{installed[n].metadata['Name']}=={installed[n].version}" for n in seen), key=str.lower)


def startup_files() -> dict[str, str]:
    """``.pth`` files on the interpreter's path (they run at every start): name -> sha256."""
    out: dict[str, str] = {}
    for entry in sys.path:
        folder = Path(entry or ".")
        if not folder.is_dir():
            continue
        for pth in sorted(folder.glob("*.pth")):
            try:
                out[f"{folder.name}/{pth.name}"] = hashlib.sha256(pth.read_bytes()).hexdigest()
            except OSError:
                continue
    return out


def installed_distributions() -> list[str]:
    """The distribution folders (``*.dist-info``, ``*.egg-info``) on the path: name and version."""
    out = []
    for entry in sys.path:
        try:
            out += [f"{entry}/{n}" for n in os.listdir(entry or ".") if n.endswith((".dist-info", ".egg-info"))]
        except OSError:
            continue
    return sorted(out)


def toolchain(task_modules: Iterable[str] = (), agent_files: Iterable[str | Path] = (),
              cache: ToolchainCache | None = None) -> dict[str, Any]:
    """The bill of materials a score depends on (see the module docstring)."""
    modules = set(stage_imports()) | set(task_modules) | top_level_imports(agent_files)
    # the standard library is the Python version; sealbench's own code is the code digests (its
    # distribution would only add what it requires to run the workflow, e.g. snakemake)
    modules -= set(sys.stdlib_module_names) | {"sealbench"}
    key = sha256_text(canonical_json({"python": sys.version, "executable": sys.executable,
                                      "installed": installed_distributions(), "modules": sorted(modules)}))
    if cache is not None and isinstance(cache.packages.get(key), list):
        packages = list(cache.packages[key])
    else:
        packages = covered_distributions(modules)
        if cache is not None:
            # the last two module sets (the tasks' and, with task environments, the harness's own)
            kept = {k: v for k, v in cache.packages.items() if isinstance(v, list)}
            cache.packages, cache.dirty = {**dict(list(kept.items())[-1:]), key: packages}, True
    return {
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "packages": packages,
        "startup_files": startup_files(),
        "covers": "the distributions imported by sealbench's stages, the agents' code and the tasks' code and "
                  "commands, what they require, and the .pth files run at interpreter start",
    }


def toolchain_digest(tc: Mapping[str, Any]) -> str:
    """What a score depends on: the version, the covered packages and the start-up files."""
    return sha256_text(canonical_json({"python": tc["python"], "implementation": tc.get("implementation"),
                                       "packages": tc["packages"], "startup_files": tc.get("startup_files", {})}))
