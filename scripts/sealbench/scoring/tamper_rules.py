"""Tamper rules: the changes of a patch the scoring workspace never takes (docs/contract.md §1).

- Protected paths (:func:`protected_reason`): the test folders (:func:`touches_tests`), the
  task's own (support files, tests at their repository paths: ``task_layout.protected_paths``), pytest
  configuration (its own files at any depth; ``setup.cfg``/``pyproject.toml`` holding or gaining a
  pytest section), ``conftest.py``, interpreter start-up hooks, ``*.pth`` files; and
  :func:`_post_apply_reason`, the second look at ``setup.cfg``/``pyproject.toml`` once applied.
- Refused content: by a file's name (:func:`path_rule`: compiled extension modules, bytecode, new
  top-level modules that shadow :func:`shadowed_names`) and by what a section does
  (:func:`section_rule`: symlinks; binary files unless the task allows them).

Applying a patch under these rules is ``patch_apply.py``.
"""

from __future__ import annotations

import functools
import re
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path

from ..pack.patches import FilePatch
from ..pack.task_layout import TEST_DIRS

# --------------------------------------------------------------------------------------------
# Protected paths (tamper)

#: pytest reads these files as configuration wherever they sit on its rootdir search.
PYTEST_CONFIG_FILES = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini")
#: Modules the interpreter imports by itself at start-up.
STARTUP_HOOKS = ("sitecustomize.py", "usercustomize.py")

_CFG_PYTEST = re.compile(r"^\s*\[\s*(?:tool:)?pytest\s*\]", re.MULTILINE)
_TOML_PYTEST = re.compile(r"""\[\s*["']?tool["']?\s*\.\s*["']?pytest\b|\btool\s*\.\s*["']?pytest\b""")


def touches_tests(relpath: str) -> bool:
    first = relpath.split("/", 1)[0]
    return first in TEST_DIRS


def _as_text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def _changed_lines(section: bytes | str | None) -> str:
    """The added/removed lines of a patch section (file headers excluded)."""
    out = []
    for line in _as_text(section).splitlines():
        if line.startswith(("+++ ", "--- ")):
            continue
        if line.startswith(("+", "-")):
            out.append(line[1:])
    return "\n".join(out)


def _has_pytest_section(name: str, text: str) -> bool:
    if name == "setup.cfg":
        return "[tool:pytest]" in text or bool(_CFG_PYTEST.search(text))
    if name == "pyproject.toml":
        return "[tool.pytest" in text or bool(_TOML_PYTEST.search(text))
    return False


def protected_reason(relpath: str, original_text: str | bytes | None = None,
                     patch_section: str | bytes | None = None,
                     task_paths: Mapping[str, str] | None = None) -> str | None:
    """Why the scoring workspace must not take a patch's change to ``relpath`` (None: it may).

    Protected: the test folders; ``conftest.py`` at any depth; pytest's own configuration
    files (``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml``, ``tox.ini``) at
    any depth; the task's own paths ``task_paths`` (path -> why:
    ``task_layout.protected_paths``, its support files and tests at repository paths);
    ``setup.cfg`` when the original file or the patch's added/removed lines hold a
    ``[tool:pytest]`` (or the rejected ``[pytest]``) section; ``pyproject.toml`` when they hold
    a ``[tool.pytest…]`` table; ``sitecustomize.py``/``usercustomize.py`` anywhere; any
    ``*.pth`` file. Names are compared case-insensitively (case-insensitive file systems).
    """
    p = relpath.strip().strip("/")
    if not p or p == "/dev/null":
        return None
    if touches_tests(p):
        return "test folder"
    if task_paths:
        mine = {k.lower(): v for k, v in task_paths.items()}.get(p.lower())
        if mine:
            return mine
    name = p.rsplit("/", 1)[-1].lower()
    if name == "conftest.py":
        return "pytest conftest.py"
    if name in PYTEST_CONFIG_FILES:
        return "pytest configuration file"
    if name in ("setup.cfg", "pyproject.toml"):
        if _has_pytest_section(name, _as_text(original_text)):
            return f"{name} holding pytest configuration"
        if _has_pytest_section(name, _changed_lines(patch_section)):
            return f"{name} change to pytest configuration"
        return None
    if name in STARTUP_HOOKS:
        return "interpreter start-up hook"
    if name.endswith(".pth"):
        return ".pth start-up file"
    return None


def _post_apply_reason(relpath: str, text: bytes | None) -> str | None:
    """Second look at a ``setup.cfg``/``pyproject.toml`` after the patch applied: the file as
    pytest would read it must not hold pytest configuration, and a ``pyproject.toml`` must
    still parse (a broken one stops pytest with a usage error, which would read as infra)."""
    name = relpath.rsplit("/", 1)[-1].lower()
    if text is None or name not in ("setup.cfg", "pyproject.toml"):
        return None
    try:        # pytest decodes strictly: a byte it cannot read stops it before any test
        s = text.decode("utf-8") if isinstance(text, bytes) else text
    except UnicodeDecodeError:
        return f"{name} is no longer UTF-8 after the patch (pytest could not read it)"
    if name == "pyproject.toml":
        try:
            tool = tomllib.loads(s).get("tool", {})
        except tomllib.TOMLDecodeError:
            return "pyproject.toml no longer parses after the patch"
        if not isinstance(tool, dict):
            return "pyproject.toml's tool is no longer a table after the patch (pytest could not read it)"
        if "pytest" in tool:
            return "pyproject.toml change to pytest configuration"
        return None
    try:        # pytest reads setup.cfg with iniconfig on its rootdir search
        import iniconfig

        iniconfig.IniConfig(relpath, s)
    except Exception as exc:  # noqa: BLE001 - iniconfig's ParseError and whatever else stops pytest
        return f"setup.cfg no longer parses after the patch (pytest could not read it: {exc})"
    return "setup.cfg change to pytest configuration" if _has_pytest_section(name, s) else None


# --------------------------------------------------------------------------------------------
# Refused content (tamper): symlinks, binaries, compiled code, modules that shadow others

#: Names of the sealed-report plugin's package: a module of that name in the workspace would
#: be imported instead of the plugin.
#: sealbench's own: its package and the report plugin every scoring command loads by name
RESERVED_TOP_LEVEL = ("sealbench", "sealbench_report")
_EXTENSION = re.compile(r"\.(so|pyd|dll|dylib)(\.[0-9.]+)?$", re.IGNORECASE)
_BYTECODE = re.compile(r"\.py[co]$", re.IGNORECASE)
_SYMLINK_MODE = re.compile(rb"^(?:new file mode|new mode|index [0-9a-f]+\.\.[0-9a-f]+) 120000\s*$", re.MULTILINE)
_BINARY = re.compile(rb"^(?:GIT binary patch|Binary files .* differ)\s*$", re.MULTILINE)


@functools.cache
def shadowed_names() -> frozenset[str]:
    """Top-level import names a patch may not add (lower case): the standard library, every
    top-level module or package installed for the scoring interpreter (pytest, _pytest,
    pluggy, iniconfig, packaging…: whatever its ``sys.path`` entries under the interpreter's
    prefixes hold), and sealbench's own package (its pytest plugin).

    Listed from the folders rather than with ``importlib.metadata.packages_distributions()``,
    which reads every distribution's RECORD (about 1 s per scoring process here); the folders
    hold what an ``import`` would actually find, distributions or not."""
    import pkgutil

    names = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | set(RESERVED_TOP_LEVEL)
    prefixes = {str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    paths = [p for p in sys.path if p and any(str(Path(p).resolve()).startswith(x) for x in prefixes)]
    try:
        names |= {m.name for m in pkgutil.iter_modules(paths)}
    except Exception:  # noqa: BLE001 - an unreadable folder must not stop scoring
        pass
    # dunder names too: a workspace ``__future__.py`` stands for the standard library's when the
    # current folder is first on sys.path (``python -m pytest``), and pytest dies before it starts
    return frozenset(n.lower() for n in names if n and n != "__main__")


def _top_level_import(relpath: str, ws: Path) -> str | None:
    """The top-level import name a new file provides from the repo root (or a ``src/`` root
    the repo has), or None when it provides none (not a python file)."""
    parts = relpath.strip("/").split("/")
    if parts[0] == "src" and len(parts) > 1 and (ws / "src").is_dir():
        parts = parts[1:]
    if len(parts) == 1:
        name = parts[0]
        if name.lower().endswith((".py", ".pyw")):
            return name.rsplit(".", 1)[0].split(".")[0]
        if _EXTENSION.search(name) or _BYTECODE.search(name):
            return name.split(".")[0]
        return None
    if parts[-1].lower().endswith((".py", ".pyw")) or _EXTENSION.search(parts[-1]) or _BYTECODE.search(parts[-1]):
        return parts[0]
    return None


def path_rule(relpath: str, ws: Path) -> str | None:
    """Why a patch may not create or change ``relpath``, by its name alone (None: it may).

    Refused: compiled extension modules (``.so``/``.pyd``/``.dll``/``.dylib``, whatever the
    task allows), bytecode (``.pyc``/``.pyo``, anything under ``__pycache__``), and a new
    top-level module or package (``name.py``, ``name/…py`` at the repo root, or under
    ``src/`` when the repo has one) whose name shadows :func:`shadowed_names`. A top-level
    module or package the pristine repo already has may be changed.
    """
    p = relpath.strip().strip("/")
    if not p or p == "/dev/null":
        return None
    name = p.rsplit("/", 1)[-1]
    if _EXTENSION.search(name):
        return "compiled extension module refused"
    if _BYTECODE.search(name) or "__pycache__" in p.split("/"):
        return "bytecode file refused"
    top = _top_level_import(p, ws)
    if top and top.lower() in shadowed_names():
        first = p.split("/")[0] if not (p.startswith("src/") and (ws / "src").is_dir()) else "/".join(p.split("/")[:2])
        existing = ws / first
        if not existing.exists() and not existing.is_symlink():
            kind = "module" if "/" not in p.removeprefix("src/") or first.endswith((".py", ".pyw")) else "package"
            return f"new top-level {kind} {top!r} shadows an installed or standard-library module"
    return None


def section_rule(section: FilePatch, ws: Path, allow_binary: bool = False) -> str | None:
    """Why a patch section may not be applied, by what it does (None: it may): it makes a
    symlink (git mode 120000), or carries a binary file (``GIT binary patch`` / ``Binary
    files … differ``) when the task does not allow binary files (``meta.allow_binary``).
    Deleting a file is never refused here."""
    if section.new_path == "/dev/null":
        return None
    if _SYMLINK_MODE.search(section.text):
        return "symlink (git mode 120000) refused"
    if not allow_binary and _BINARY.search(section.text):
        return "binary file refused (the task does not set allow_binary)"
    return None
