"""The toolchain a score depends on: the interpreter and the installed distributions that the
tests, the tasks' code, the agents and sealbench's scoring can load — not every distribution in
the venv. It moves only when a verdict could.

A run's scores depend on the toolchain; its digest is a parameter of every job that runs tests
(run_dummy, run_agent, hidden_score), so a change in it reruns them. Installing a package that
nothing imports (duckdb to read the tables, an executor plugin to run on a cluster, the test
extra's formatters) must not rerun anything; upgrading pytest, or a library a task imports, must.
What is covered:

1. the Python version and implementation;
2. every distribution that provides a top-level module imported by the code of sealbench's
   per-task stages (:data:`SCORING_STAGES`: the modules each runs,
   :func:`sealbench.core.code_digests.code_closure`), by the agents' code, or by any ``.py``
   file of any task (``repo/``, ``visible_tests/``, ``hidden_tests/``), named by a task command
   (``python -m pytest``, ``pytest``, a plugin loaded with ``-p NAME``) or by a task's
   ``pytest_plugins``;
3. the distributions those require, transitively (their ``Requires-Dist`` for this platform);
4. the ``.pth`` files on the interpreter's path: they run code at every interpreter start.

The tables and the decision (stratify, gate) are made with other libraries (pandas, numpy,
scipy, pyarrow): they are the *analysis* toolchain (:func:`analysis_toolchain`), part of the
experiment id but of no per-task job, so upgrading pandas — or python-dateutil under it — makes
the tables and the decision again (seconds) and reruns no task.

Each covered package carries why it is covered (``why``: imported by the tasks, required by
pytest, ...), so a change can be named with its reason (:func:`toolchain_changes`). The card
lists the covered packages (``toolchain.packages``) and start-up files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import sys
from collections import deque
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from ..core.code_digests import _imports_of, code_closure, package_facts
from ..core.core import canonical_json, sha256_text

#: The stage modules whose imports the toolchain of the per-task jobs covers: the stages that seal,
#: check, run and score a task (and task_batch, which runs them in one process).
SCORING_STAGES = ("stages.hash_pack", "stages.leak_check", "stages.run_dummy", "stages.run_agent",
                  "stages.hidden_score", "stages.task_batch")
#: The stages that make the tables and the decision from the scores: their imports are the
#: analysis toolchain (part of the experiment id, of no per-task job).
ANALYSIS_STAGES = ("stages.split", "stages.stratify", "gate.gate")

#: Why a covered distribution is covered, for a root module (its requirements say "required by").
BY_TASKS = "imported by the tasks' code or tests"
BY_AGENTS = "imported by an agent's code"
BY_SCORING = "imported by sealbench's scoring"
BY_ANALYSIS = "imported by sealbench's tables and gate"
BY_PLUGIN = "a pytest plugin a task loads"

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


#: The prefix of a name that is a pytest plugin loaded by its entry-point name (``-p xdist``):
#: resolved to its distribution through the ``pytest11`` entry points (:func:`covered_distributions`).
PLUGIN = "pytest11:"


def command_modules(command: str) -> set[str]:
    """Modules a task command runs: ``python -m X`` gives X; a bare ``pytest`` gives pytest; a
    plugin it loads, ``-p NAME`` (``-pNAME``), gives NAME both as a module and as a pytest11
    entry-point name (``pytest11:NAME``; ``-p no:NAME`` loads nothing)."""
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
        plugin = words[i + 1] if w == "-p" and i + 1 < len(words) else w[2:] if w.startswith("-p") and len(w) > 2 else ""
        if plugin and not plugin.startswith("no:") and re.fullmatch(r"[A-Za-z_][\w.-]*", plugin):
            out |= {plugin.split(".")[0], PLUGIN + plugin}
    return out


def pytest_plugins(files: Iterable[str | Path]) -> set[str]:
    """Top-level names of the modules listed by ``pytest_plugins = ...`` (a string, or a list or
    tuple of strings) at the top of ``files``: pytest imports them as plugins."""
    import ast

    out: set[str] = set()
    for f in files:
        try:
            text = Path(f).read_bytes()
            if b"pytest_plugins" not in text:
                continue
            tree = ast.parse(text)
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            if not any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets) or node.value is None:
                continue
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            out |= {v.value.split(".")[0] for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                    and v.value}
    return out


def task_imports(task_dir: Path) -> list[str]:
    """What one task's code and commands import (sorted top-level names)."""
    files = [p for sub in ("repo", "visible_tests", "hidden_tests") for p in sorted((task_dir / sub).rglob("*.py"))
             if p.is_file()]
    names = top_level_imports(files) | pytest_plugins(files)
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
    tasks), and the covered packages for the last sets of installed distributions and modules
    (resolving modules to distributions reads every installed RECORD: seconds). A cache of
    another :data:`VERSION` (what a task's imports are, what is kept of the packages) is not read."""

    #: What the cache holds: 2 adds ``-p`` plugins and ``pytest_plugins`` to a task's imports and
    #: each covered package's reason.
    VERSION = 2

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.tasks: dict[str, list[str]] = {}
        self.packages: dict[str, Any] = {}
        self.dirty = False
        if path is not None:
            try:
                loaded = json.loads(path.read_text())
                if loaded.get("version") == self.VERSION:
                    self.tasks = {k: v for k, v in loaded.get("tasks", {}).items() if isinstance(v, list)}
                    self.packages = {k: v for k, v in (loaded.get("packages") or {}).items()
                                     if isinstance(v, dict) and isinstance(v.get("packages"), list)}
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

            atomic_write_text(self.path, json.dumps({"version": self.VERSION, "tasks": self.tasks,
                                                     "packages": self.packages}, sort_keys=True))
            self.dirty = False


@cache
def stage_imports(stages: tuple[str, ...] = SCORING_STAGES) -> frozenset[str]:
    """Top-level third-party names imported by the code of sealbench's ``stages`` (and what it
    loads): by default the per-task stages (:data:`SCORING_STAGES`)."""
    def derive() -> list[str]:
        here = Path(__file__).resolve().parents[1]
        return sorted(top_level_imports(here / rel for rel in code_closure(*stages)))

    names = package_facts("imports:" + ",".join(stages), derive)
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


def _plugin_distributions(names: Iterable[str]) -> dict[str, list[str]]:
    """{``pytest11:NAME``: [distribution]} for the pytest plugins loaded by entry-point name."""
    wanted = {n[len(PLUGIN):] for n in names if n.startswith(PLUGIN)}
    out: dict[str, list[str]] = {}
    if wanted:
        for ep in metadata.entry_points(group="pytest11"):
            if ep.name in wanted and ep.dist is not None:
                out.setdefault(PLUGIN + ep.name, []).append(ep.dist.metadata["Name"])
    return out


_INDEX: dict[tuple[str, ...], tuple[dict[str, list[str]], dict[str, metadata.Distribution]]] = {}


def _distribution_index(folders: tuple[str, ...]) -> tuple[dict[str, list[str]], dict[str, metadata.Distribution]]:
    """({top-level module: [distribution]}, {normalised name: distribution}) of what is installed,
    read once per process for the same distribution ``folders`` (:func:`installed_distributions`):
    reading every distribution's files is most of the cost of a toolchain, which planning
    computes twice (the scoring and the analysis toolchain)."""
    if folders not in _INDEX:
        installed: dict[str, metadata.Distribution] = {}
        for d in metadata.distributions():
            name = d.metadata["Name"]
            if name and _norm(name) not in installed:
                installed[_norm(name)] = d
        _INDEX.clear()
        _INDEX[folders] = (metadata.packages_distributions(), installed)
    return _INDEX[folders]


def covered_distributions(modules: Iterable[str] | Mapping[str, str], why: dict[str, str] | None = None) -> list[str]:
    """``name==version`` of the distributions providing ``modules`` and what they require.
    ``modules`` may map each module to why it is covered; ``why`` (when given) is filled with
    each covered distribution's reason: its module's, or ``required by NAME``."""
    roots = dict(modules) if isinstance(modules, Mapping) else {m: "" for m in modules}
    index, installed = _distribution_index(tuple(installed_distributions()))
    by_module = {**index, **_plugin_distributions(roots)}
    # breadth first: a distribution both imported and required is covered for being imported
    todo = deque((_norm(n), roots[m]) for m in sorted(roots) for n in by_module.get(m, []))
    seen: dict[str, str] = {}
    while todo:
        n, reason = todo.popleft()
        if n in seen or n not in installed:
            continue
        seen[n] = reason
        todo.extend((r, f"required by {installed[n].metadata['Name']}") for r in _requires(installed[n]))
    if why is not None:
        why.update({installed[n].metadata["Name"]: reason for n, reason in seen.items()})
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


#: The covered packages by toolchain key (what :func:`toolchain` hashes: the interpreter, every
#: installed distribution folder by name and version, the root modules), kept between processes
#: and results folders beside the package's bytecode: resolving modules to distributions reads
#: every installed RECORD (about 0.4 s a toolchain), and a new results folder has no cache yet.
SHARED_FILE = "toolchain-packages.json"
#: How many toolchain keys the shared file keeps (the newest).
SHARED_KEEP = 16


def _shared_path() -> Path:
    return Path(__file__).resolve().parents[1] / "__pycache__" / SHARED_FILE


def _shared_packages(key: str, value: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """The shared cache of covered packages (:data:`SHARED_FILE`): with ``value``, store it under
    ``key``; without, the value stored under ``key`` or None. A file that cannot be read or
    written is no cache (every process resolves the packages itself: the same result)."""
    path = _shared_path()
    try:
        held = json.loads(path.read_text())
        held = held if isinstance(held, dict) else {}
    except (OSError, ValueError):
        held = {}
    if value is None:
        hit = held.get(key)
        ok = (isinstance(hit, dict) and isinstance(hit.get("packages"), list) and isinstance(hit.get("why"), dict)
              and all(isinstance(p, str) for p in hit["packages"]))
        return {"packages": list(hit["packages"]), "why": dict(hit["why"])} if ok else None
    held.pop(key, None)
    held = {**dict(list(held.items())[-(SHARED_KEEP - 1):]), key: value}
    from ..core.core import atomic_write_text

    try:
        atomic_write_text(path, json.dumps(held))
    except OSError:
        pass
    return value


def toolchain(task_modules: Iterable[str] = (), agent_files: Iterable[str | Path] = (),
              cache: ToolchainCache | None = None, stages: tuple[str, ...] = SCORING_STAGES) -> dict[str, Any]:
    """The bill of materials a score depends on (see the module docstring): the imports of
    ``stages``' code (by default the per-task ones), of the tasks (``task_modules``) and of the
    agents' files."""
    stage_reason = BY_ANALYSIS if stages == ANALYSIS_STAGES else BY_SCORING
    # one reason per module, the most telling first: the tasks', the agents', then sealbench's
    roots: dict[str, str] = {}
    for names, reason in ((task_modules, BY_TASKS), (top_level_imports(agent_files), BY_AGENTS),
                          (stage_imports(tuple(stages)), stage_reason)):
        for m in names:
            roots.setdefault(m, BY_PLUGIN if m.startswith(PLUGIN) else reason)
    # the standard library is the Python version; sealbench's own code is the code digests (its
    # distribution would only add what it requires to run the workflow, e.g. snakemake)
    for m in set(sys.stdlib_module_names) | {"sealbench"}:
        roots.pop(m, None)
    key = sha256_text(canonical_json({"python": sys.version, "executable": sys.executable,
                                      "installed": installed_distributions(), "modules": roots}))
    hit = cache.packages.get(key) if cache is not None else None
    if hit is None:
        hit = _shared_packages(key)
        if hit is not None and cache is not None:
            cache.packages, cache.dirty = {**dict(list(cache.packages.items())[-2:]), key: hit}, True
    if hit is not None:
        packages, why = list(hit["packages"]), dict(hit.get("why") or {})
    else:
        why = {}
        packages = covered_distributions(roots, why)
        _shared_packages(key, {"packages": packages, "why": why})
        if cache is not None:
            # the last three module sets: the tasks', with task environments the harness's own, the analysis'
            kept = dict(list(cache.packages.items())[-2:])
            kept.pop(key, None)
            cache.packages, cache.dirty = {**kept, key: {"packages": packages, "why": why}}, True
    return {
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "packages": packages,
        "why": why,
        "startup_files": startup_files(),
        "covers": (("the distributions imported by sealbench's per-task stages, the agents' code and the tasks' code "
                    "and commands (pytest plugins too), what they require")
                   if stage_reason == BY_SCORING else
                   "the distributions imported by sealbench's tables and gate (stratify, gate), what they require")
                  + ", and the .pth files run at interpreter start",
    }


def analysis_toolchain(cache: ToolchainCache | None = None) -> dict[str, Any]:
    """What the tables and the decision are made with (:data:`ANALYSIS_STAGES`' imports: pandas,
    numpy, scipy, pyarrow, ... and what they require): part of the experiment id, of no per-task job."""
    return toolchain(cache=cache, stages=ANALYSIS_STAGES)


def toolchain_digest(tc: Mapping[str, Any]) -> str:
    """What a score depends on: the version, the covered packages and the start-up files."""
    return sha256_text(canonical_json({"python": tc["python"], "implementation": tc.get("implementation"),
                                       "packages": tc["packages"], "startup_files": tc.get("startup_files", {})}))


def _split(packages: Iterable[str]) -> dict[str, tuple[str, str]]:
    """{normalised name: (name, version)} of ``name==version`` lines."""
    out = {}
    for p in packages:
        name, _, version = str(p).partition("==")
        out[_norm(name)] = (name, version)
    return out


def why_text(name: str, why: Mapping[str, str], limit: int = 4) -> str:
    """Why ``name`` is covered, the chain followed to what imports it: ``required by pytest,
    imported by the tasks' code or tests``."""
    by_norm = {_norm(k): v for k, v in why.items()}
    chain, seen, n = [], set(), _norm(name)
    while n in by_norm and n not in seen and len(chain) < limit:
        seen.add(n)
        reason = by_norm[n]
        if not reason:
            break
        chain.append(reason)
        if not reason.startswith("required by "):
            break
        n = _norm(reason[len("required by "):])
    return ", ".join(chain)


def package_changes(old: Iterable[str], new: Iterable[str]) -> list[tuple[str, str | None, str | None]]:
    """(name, old version, new version) of every covered package that moved, was added (old
    None) or is no longer covered (new None), by name."""
    a, b = _split(old), _split(new)
    out = []
    for n in sorted(set(a) | set(b)):
        va, vb = a.get(n, (None, None))[1], b.get(n, (None, None))[1]
        if va != vb:
            out.append(((b.get(n) or a.get(n))[0], va, vb))
    return out


def toolchain_changes(old: Mapping[str, Any] | None, new: Mapping[str, Any], limit: int = 6) -> list[str]:
    """What moved between two toolchains (:func:`toolchain`), one phrase each, the packages with
    why they count: ``iniconfig 2.3.1 → 2.1.0 (required by pytest, imported by the tasks' code or
    tests)``. ``old`` None: not known (the toolchain it was made with was not recorded)."""
    if old is None:
        return ["a toolchain that was not recorded (made before sealbench kept them)"]
    out = []
    if (old.get("python"), old.get("implementation")) != (new.get("python"), new.get("implementation")):
        out.append(f"Python {old.get('implementation', '')} {old.get('python')} → "
                   f"{new.get('implementation', '')} {new.get('python')}".replace("  ", " "))
    why = {**(old.get("why") or {}), **(new.get("why") or {})}
    moved = package_changes(old.get("packages") or [], new.get("packages") or [])
    for name, va, vb in moved[:limit]:
        what = f"{name} {va} → {vb}" if va and vb else f"{name} {vb}, newly covered" if vb else \
            f"{name} {va}, no longer covered"
        reason = why_text(name, why)
        out.append(f"{what} ({reason})" if reason else what)
    if len(moved) > limit:
        out.append(f"… and {len(moved) - limit} more package{'s' if len(moved) - limit > 1 else ''}")
    a, b = old.get("startup_files") or {}, new.get("startup_files") or {}
    for f in sorted(set(a) | set(b)):
        if a.get(f) != b.get(f):
            out.append(f"start-up file {f} {'changed' if f in a and f in b else 'added' if f in b else 'removed'}")
    return out
