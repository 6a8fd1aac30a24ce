"""The small shared core of sealbench: errors, content digests, atomic writes, the config
schemas, and the environment every harness command runs in.

- errors (:class:`SealbenchError`, :class:`PackError`, :class:`ConfigError`): each names the
  file and the field, so a user knows what to fix before any work runs;
- content digests of files, task folders and the pack (``tree_entries``, ``task_digest``,
  ``pack_digest``, ``denylist_digest``), with a cache of file hashes;
- atomic writes (``write_json``, ``atomic_write_text``) and ``read_json``;
- the JSON schemas under workflow/schemas (``load_schema``, ``schema_errors``);
- the controls' names and fingerprints, and ``harness_env``: the fixed environment (PATH, HOME,
  locale, pytest's options) every sandboxed or scored command gets.

Reading a pack's tasks is ``pack.packs``; the stage code digests are ``core.code_digests``; agent
identity is ``provenance.identity``. This module imports nothing of sealbench.
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: Project root (the folder holding ``Snakefile``); the package lives in ``<root>/scripts``.
PROJECT_ROOT = Path(__file__).resolve().parents[3]
SCHEMA_DIR = PROJECT_ROOT / "workflow" / "schemas"

#: Files and folders that are build artefacts, never content: excluded from patches.
ARTEFACT_NAMES = frozenset(
    {"__pycache__", ".pytest_cache", ".benchmarks", ".mypy_cache", ".ruff_cache", ".hypothesis"}
)
ARTEFACT_SUFFIXES = (".pyc", ".pyo")

#: Task sub-paths of the pack contract.
TASK_FILES = ("meta.json", "prompt.md", "oracle.patch")
TASK_DIRS = ("repo", "visible_tests", "hidden_tests")


class SealbenchError(Exception):
    """Base class: an error the user can act on. The message says what and where."""


class PackError(SealbenchError):
    """The pack breaks the contract (docs/contract.md §1): names the file and the field."""


class ConfigError(SealbenchError):
    """The configuration breaks the schema (docs/contract.md §3): names the key."""


# --------------------------------------------------------------------------------------------
# JSON / atomic writes


def canonical_json(obj: Any) -> str:
    """Stable JSON text (sorted keys, no whitespace variance) used for digests."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


_UMASK = _read_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and rename: never half-written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def write_json(path: Path, obj: Any) -> None:
    """Atomically write pretty, key-sorted JSON (stable bytes for the same content)."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def make_writable(path: Path) -> None:
    """Give back write permission on a sealed (read-only) folder so it can be removed."""
    for dirpath, _dirs, files in os.walk(path):
        os.chmod(dirpath, 0o755)
        for name in files:
            try:
                os.chmod(Path(dirpath, name), 0o644)
            except FileNotFoundError:
                pass


def read_json(path: Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 text ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise PackError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc


# --------------------------------------------------------------------------------------------
# Content digests


@dataclass(frozen=True)
class FileEntry:
    """One regular file of a digested tree."""

    relpath: str
    sha256: str
    size: int


class HashCache:
    """A git-index-style stat cache: (size, mtime_ns, ctime_ns, inode) -> sha256.

    A file whose stat tuple is unchanged is not re-read; any content change changes at least
    one of these (ctime cannot be set back by a user), so a stale entry is never used.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else None
        self.entries: dict[str, list] = {}
        self.dirty = False
        if self.path and self.path.exists():
            try:
                self.entries = json.loads(self.path.read_text())
            except (OSError, ValueError):
                self.entries = {}

    def sha256(self, path: Path | str, st: os.stat_result) -> str:
        key = str(path)
        sig = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        hit = self.entries.get(key)
        if hit and hit[:4] == sig:
            return hit[4]
        digest = file_sha256(path)
        self.entries[key] = sig + [digest]
        self.dirty = True
        return digest

    def save(self) -> None:
        if self.path and self.dirty:
            atomic_write_text(self.path, json.dumps(self.entries, separators=(",", ":")))
            self.dirty = False


def file_sha256(path: Path | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree_entries(root: Path, cache: HashCache | None = None) -> list[FileEntry]:
    """All regular files under ``root`` (sorted by relative POSIX path) with their sha256.

    Symlinks, sockets, FIFOs and device files are refused with a :class:`PackError` naming
    the path: a pack is plain files, so its digest means exactly its bytes.
    """
    root = Path(root)
    if root.is_symlink():
        raise PackError(f"{root}: is a symlink; a pack must contain plain files and folders only")
    if not root.is_dir():
        raise PackError(f"{root}: is not a folder")
    out: list[FileEntry] = []
    top = str(root)
    for dirpath, dirnames, filenames in os.walk(top):  # plain strings: this runs at every re-plan
        dirnames.sort()
        for name in dirnames:
            p = os.path.join(dirpath, name)
            if os.path.islink(p):
                raise PackError(f"{p}: is a symlink; a pack must contain plain files and folders only")
        # os.walk joins onto ``top``: the relative folder is the rest of the string
        prefix = "" if dirpath == top else dirpath[len(top):].lstrip(os.sep).replace(os.sep, "/") + "/"
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                raise PackError(f"{p}: is a symlink; a pack must contain plain files and folders only")
            if not stat.S_ISREG(st.st_mode):
                raise PackError(f"{p}: is a special file (socket, FIFO or device); refused")
            digest = cache.sha256(p, st) if cache else file_sha256(p)
            out.append(FileEntry(prefix + name, digest, st.st_size))
    out.sort(key=lambda e: e.relpath)
    return out


def digest_entries(entries: Iterable[FileEntry]) -> str:
    """Digest of a tree: sha256 over ``relpath NUL sha256 LF`` lines in path order."""
    h = hashlib.sha256()
    for e in entries:
        h.update(e.relpath.encode("utf-8") + b"\0" + e.sha256.encode("ascii") + b"\n")
    return h.hexdigest()


def task_digest(task_dir: Path, cache: HashCache | None = None) -> str:
    """Content digest of one task folder (relative paths + bytes)."""
    return digest_entries(tree_entries(task_dir, cache))


def pack_digest(task_digests: Mapping[str, str], denylist_digest: str) -> str:
    """Digest of a pack: its task digests (by id) and its denylist.

    ``split_manifest.json`` is deliberately not part of it: the manifest is derived from the
    pack by ``split`` and has its own digest, recorded beside this one.
    """
    lines = [f"task {tid} {d}" for tid, d in sorted(task_digests.items())]
    lines.append(f"denylist {denylist_digest}")
    return sha256_text("\n".join(lines) + "\n")


def denylist_digest(pack: Path) -> str:
    path = Path(pack) / "denylist.txt"
    if not path.exists():
        return sha256_text("")  # no denylist: digest of the empty list (recorded as such)
    if path.is_symlink() or not path.is_file():
        raise PackError(f"{path}: must be a plain file")
    return file_sha256(path)


# --------------------------------------------------------------------------------------------
# Schemas (one place: workflow/schemas/)


@functools.cache
def _schema_text(name: str) -> str:
    path = SCHEMA_DIR / name
    if not path.exists():
        raise SealbenchError(
            f"schema {path} not found: sealbench must run from its source tree "
            "(install it with `pip install -e .`)"
        )
    return path.read_text()


@functools.cache
def _parsed_schema(name: str) -> dict:
    """A schema file parsed once per process (read-only: callers get copies from load_schema)."""
    return yaml.safe_load(_schema_text(name))


def load_schema(name: str) -> dict:
    """A schema from workflow/schemas/ (a fresh copy the caller may change)."""
    return copy.deepcopy(_parsed_schema(name))


def _field(path: Iterable[Any]) -> str:
    parts = [str(p) for p in path]
    return ".".join(parts) if parts else "(top level)"


def schema_errors(instance: Any, schema: dict, where: str) -> list[str]:
    """Human-readable schema violations, each naming ``where`` and the field."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    messages: list[str] = []
    for err in sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.absolute_path))):
        field = _field(err.absolute_path)
        if err.validator == "additionalProperties":
            allowed = sorted((err.schema.get("properties") or {}).keys())
            extra = sorted(set(err.instance) - set(allowed)) if isinstance(err.instance, dict) else []
            for key in extra:
                full = key if field == "(top level)" else f"{field}.{key}"
                hint = difflib.get_close_matches(key, allowed, n=1)
                tip = f" (did you mean '{hint[0]}'?)" if hint else f" (allowed: {', '.join(allowed)})"
                messages.append(f"{where}: unknown key '{full}'{tip}")
        elif err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            full = missing if field == "(top level)" else f"{field}.{missing}"
            messages.append(f"{where}: missing required key '{full}'")
        else:
            messages.append(f"{where}: field '{field}': {err.message}")
    return messages


# --------------------------------------------------------------------------------------------
# Controls (the built-in solvers every task is scored with)

CONTROLS = ("empty_diff", "stub", "oracle")


def control_fingerprint(name: str) -> str:
    """The fixed fingerprint of a built-in control (its runs are addressed like an agent's)."""
    return sha256_text(canonical_json({"control": name, "version": 1}))[:16]


def python_bin_dir() -> str:
    """The folder of the interpreter running sealbench: put first on PATH for task commands."""
    return str(Path(sys.executable).parent)


#: The system folders on every task and agent command's PATH, after the interpreter's.
SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")
#: HOME of every task and agent command: a folder that exists wherever it runs (the sandbox's
#: private /tmp; unsandboxed, the machine's).
COMMAND_HOME = "/tmp"
#: What every task and agent command gets whatever the caller adds (docs/contract.md §2).
FIXED_ENV = {"HOME": COMMAND_HOME, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb",
             "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONHASHSEED": "0"}


def command_path(*first: str) -> str:
    """The PATH of a task or agent command: ``first`` (a task environment's ``bin``), this
    interpreter's folder, then :data:`SYSTEM_PATH`; never the harness's own PATH."""
    out: list[str] = []
    for p in (*first, python_bin_dir(), *SYSTEM_PATH):
        if p and p not in out:
            out.append(p)
    return os.pathsep.join(out)


def _own_path(path: str) -> str:
    """A caller's PATH with the harness's own folders taken out (a task environment's
    ``command_env`` puts the harness's PATH after its ``bin``), as :func:`command_path`."""
    drop = set(os.environ.get("PATH", "").split(os.pathsep)) | set(SYSTEM_PATH) | {python_bin_dir()}
    return command_path(*(p for p in path.split(os.pathsep) if p and p not in drop))


def pytest_options() -> dict[str, str]:
    """The harness's own ``PYTEST_ADDOPTS`` (a knob of the person running sealbench), for the
    task commands that honour it: scoring (``sealed_command``) and the visible runs."""
    value = os.environ.get("PYTEST_ADDOPTS", "").strip()
    return {"PYTEST_ADDOPTS": value} if value else {}


def harness_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for task and agent commands (agents, visible runs, scoring, controls): an
    allowlist, nothing of the harness's own environment (its keys and credentials, where the
    pack and results/ are, Snakemake's state). :data:`FIXED_ENV` (HOME, locale, TERM, no
    bytecode, no auto-loaded pytest plugins, stable hashing), PATH from :func:`command_path`,
    then ``extra``: what the caller sets for this command (the contract's ``SEALBENCH_*``,
    PYTHONPATH, PYTEST_ADDOPTS, a task environment's PATH and VIRTUAL_ENV). A PATH in ``extra``
    keeps only the folders it adds to the harness's. ``TMPDIR`` only when a caller sets it (the
    sandbox's /tmp: ``agent_probe.worker_env``); an agent's own ``env:`` is applied after this."""
    env = {"PATH": command_path(), **FIXED_ENV}
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
        if "PATH" in extra:
            env["PATH"] = _own_path(str(extra["PATH"]))
    return env
