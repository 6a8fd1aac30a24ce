"""The code digests of the stages: which sealbench source files a stage runs, derived from its
imports, and their digest.

:func:`code_closure` follows a module's sealbench imports statically (ast: at any depth, so lazy
imports count) and transitively, plus what is loaded by name at run time
(:data:`RUNTIME_LOADS`); :func:`code_digest` digests those files. A rule's ``code`` param is the
digest of its stage, so a code change reruns exactly the jobs of the stages that run the changed
code. The identity of built-in agents (:mod:`sealbench.provenance.identity`) follows the same imports.

Reading every module's imports (ast) costs about half a second, in every process that plans a run
or runs a batch. The closures are therefore kept between processes, beside the package's
bytecode (``sealbench/__pycache__/code-closures.json``, :func:`package_facts`), under a signature of
every ``.py`` file of the package (path, size, mtime, ctime, inode: any edit, added or removed
module gives another signature, and the closures are derived again). The digests themselves are
always made from the files' bytes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

_IMPORTS: dict[str, tuple[tuple, list]] = {}
#: (package folder, dotted name) -> the files importing it runs; memoised per process (a
#: workflow's code does not change under it; the 12 stage closures share most modules).
_FILES_OF: dict[tuple[str, str], list[Path]] = {}


def _imports_of(path: str) -> list[tuple[int, str, list[str]]]:
    """(level, module, names) of every import statement in a module, at any depth (lazy imports
    in functions count); memoised per process by the file's stat signature."""
    import ast

    try:
        st = os.stat(path)
    except OSError:
        return []
    sig = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    hit = _IMPORTS.get(path)
    if hit and hit[0] == sig:
        return hit[1]
    try:
        tree = ast.parse(Path(path).read_bytes(), path)
    except (SyntaxError, ValueError, OSError):
        return []
    out: list[tuple[int, str, list[str]]] = []
    todo: list[Any] = list(tree.body)
    while todo:  # statements only: an import is a statement, so expressions need no visit
        node = todo.pop()
        if isinstance(node, ast.Import):
            out += [(0, a.name, []) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            out.append((node.level, node.module or "", [a.name for a in node.names]))
        else:
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                todo.extend(getattr(node, field, ()) or ())
    _IMPORTS[path] = (sig, out)
    return out


def _module_files(pkg_dir: Path, dotted: str) -> list[Path]:
    """The files that importing ``dotted`` (a module of the package at ``pkg_dir``) runs: each
    package's ``__init__.py`` on the way and the module; [] when there is no such module."""
    parts = dotted.split(".")[1:]
    out = [pkg_dir / "__init__.py"]
    d = pkg_dir
    for i, part in enumerate(parts):
        if (d / part / "__init__.py").is_file():
            d = d / part
            out.append(d / "__init__.py")
        elif i == len(parts) - 1 and (d / f"{part}.py").is_file():
            out.append(d / f"{part}.py")
        else:
            return []
    return out


def _sealbench_closure(files: list[str], pkg_dir: Path) -> list[str]:
    """``files`` plus every module of the ``sealbench`` package at ``pkg_dir`` they import,
    transitively, read statically (ast): ``from .x import``, ``from sealbench.x import``,
    ``import sealbench.x`` (anywhere in the module, so lazy imports count)."""
    pkg_dir = pkg_dir.resolve()
    while pkg_dir.name != "sealbench" and pkg_dir.parent != pkg_dir:
        pkg_dir = pkg_dir.parent

    def module_of(path: Path) -> tuple[str, bool]:
        rel = path.resolve().relative_to(pkg_dir.parent).with_suffix("")
        parts = list(rel.parts)
        is_pkg = parts[-1] == "__init__"
        return ".".join(parts[:-1] if is_pkg else parts), is_pkg

    def files_of(dotted: str) -> list[Path]:
        key = (str(pkg_dir), dotted)
        if key not in _FILES_OF:
            _FILES_OF[key] = _module_files(pkg_dir, dotted)
        return _FILES_OF[key]

    result = {str(Path(f).resolve()): None for f in files}
    todo = [Path(f).resolve() for f in files if f.endswith(".py")]
    done: set[Path] = set()
    while todo:
        path = todo.pop()
        if path in done or not path.is_relative_to(pkg_dir):
            continue
        done.add(path)
        mod, is_pkg = module_of(path)
        package = mod if is_pkg else mod.rpartition(".")[0]
        names: list[str] = []
        for level, module, imported in _imports_of(str(path)):
            if level:
                up = package.split(".")
                up = up[: len(up) - (level - 1)] if level > 1 else up
                target = ".".join(up + ([module] if module else []))
            else:
                target = module
            names += [target] + [f"{target}.{a}" for a in imported if a != "*"]
        for name in names:
            if name == "sealbench" or name.startswith("sealbench."):
                for f in files_of(name):
                    if str(f) not in result:
                        result[str(f)] = None
                        todo.append(f)
    return list(result)


#: Modules loaded by name at run time, not imported: pytest loads the report plugin in every
#: scoring command with ``-p sealbench_report`` (``scoring/report_site/``).
RUNTIME_LOADS: dict[str, tuple[str, ...]] = {"scoring.sealed_command": ("scoring/report_site/sealbench_report",)}


#: The file, in the package's ``__pycache__``, that keeps facts derived from the package's code
#: between processes (:func:`package_facts`).
FACTS_FILE = "code-closures.json"


@functools.cache
def package_signature(pkg_dir: Path) -> str:
    """A digest of every ``.py`` file under ``pkg_dir`` by path and stat (size, mtime, ctime,
    inode): changed by any edit (a write moves ctime), by an added, removed or moved module."""
    h = hashlib.sha256()
    for folder, subs, names in os.walk(pkg_dir):
        subs[:] = sorted(d for d in subs if d != "__pycache__")
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                rel = os.path.relpath(path, pkg_dir)
                h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\n".encode())
    return h.hexdigest()


_FACTS: dict[str, Any] = {}


def package_facts(key: str, derive: Callable[[], list[str]]) -> list[str]:
    """``derive()`` (a list of strings derived from the package's code alone), kept between
    processes in ``__pycache__/FACTS_FILE`` under :func:`package_signature`: another process
    with the same code reads it instead of deriving it again. Where the cache cannot be read or
    written (a read-only install) every process derives it: the result is the same."""
    here = Path(__file__).resolve().parents[1]
    sig = package_signature(here)
    path = here / "__pycache__" / FACTS_FILE
    if _FACTS.get("signature") != sig:
        _FACTS.clear()
        _FACTS.update(signature=sig, facts={})
        try:
            loaded = json.loads(path.read_text())
            if isinstance(loaded, dict) and loaded.get("signature") == sig and isinstance(loaded.get("facts"), dict):
                _FACTS["facts"] = {k: v for k, v in loaded["facts"].items()
                                   if isinstance(v, list) and all(isinstance(x, str) for x in v)}
        except (OSError, ValueError):
            pass
    facts = _FACTS["facts"]
    if key not in facts:
        facts[key] = list(derive())
        from .core import atomic_write_text

        try:
            atomic_write_text(path, json.dumps({"signature": sig, "facts": facts}, sort_keys=True))
        except OSError:
            pass
    return facts[key]


@functools.cache
def code_closure(*modules: str) -> tuple[str, ...]:
    """The sealbench source files the given modules run: the modules, every sealbench module
    they import (statically, transitively, lazy imports included) and what those load by name
    (``RUNTIME_LOADS``), as paths relative to the package folder. Derived, not listed by hand;
    kept between processes by :func:`package_facts`."""
    return tuple(package_facts("closure:" + ",".join(modules), lambda: _derive_closure(modules)))


def _derive_closure(modules: tuple[str, ...]) -> tuple[str, ...]:
    here = Path(__file__).resolve().parents[1]
    files = [str(here / (m.replace(".", "/") + ".py")) for m in modules]
    closure: list[str] = []
    while True:
        closure = _sealbench_closure(files, here)
        names = {Path(f).resolve().relative_to(here).with_suffix("").as_posix().replace("/", ".") for f in closure}
        extra = [str(here / (x + ".py")) for n in names for x in RUNTIME_LOADS.get(n, ())
                 if x.replace("/", ".") not in names and (here / (x + ".py")).is_file()]
        if not extra:
            break
        files += extra
    return tuple(sorted(Path(f).resolve().relative_to(here).as_posix() for f in closure if Path(f).is_file()))


@functools.cache
def code_digest(*modules: str) -> str:
    """Digest of the sealbench source the given stage modules run (:func:`code_closure`).

    Used as a Snakemake ``params`` value so that a code change reruns exactly the jobs of the
    stages whose code changed — a comment in ``scoring.py`` reruns the jobs that score, not
    ``hash_pack`` or ``split``. Read once per process (a workflow's code does not change under it).
    """
    here = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in code_closure(*modules):
        h.update(rel.encode() + b"\0")
        h.update((here / rel).read_bytes())
    return h.hexdigest()[:16]
