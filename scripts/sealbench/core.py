"""The small shared core of sealbench: reading packs and configs, content digests, atomic writes.

Every stage module (``hash_pack``, ``leak_check``, ``split``, ``run_dummy``, ``run_agent``,
``hidden_score``, ``stratify``, ``gate``) imports from here and from ``workspace``; stages never
import each other.

Errors raised here are :class:`PackError` / :class:`ConfigError` and always name the file and
the field, so a user knows what to fix before any work runs.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

#: Project root (the folder holding ``Snakefile``); the package lives in ``<root>/scripts``.
PROJECT_ROOT = Path(__file__).resolve().parents[2]
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
    """The pack breaks the contract (CONTRACTS §1): names the file and the field."""


class ConfigError(SealbenchError):
    """The configuration breaks the schema (CONTRACTS §3): names the key."""


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
# Configuration

CONFIG_DEFAULTS: dict[str, Any] = {"oracle_runs": 3, "score_timeout_s": 300, "humans": [], "sandbox": "auto",
                                   "stop_on_green": False, "log_cap_bytes": 1 << 20,
                                   "card_name": "default", "interval_method": "wilson", "public_results": None,
                                   "batch_size": 1,
                                   "limits": {"max_processes": 1024, "max_memory_mb": 8192, "max_file_mb": 2048,
                                              "max_workspace_mb": 8192}}
CONTROLS = ("empty_diff", "stub", "oracle")


def validate_config(config: Mapping[str, Any], where: str = "config") -> dict:
    """Validate a config mapping against ``config.schema.yaml`` and its cross-field rules.

    Returns a copy with defaults filled in. Raises :class:`ConfigError` listing every problem.
    """
    cfg = dict(CONFIG_DEFAULTS)
    cfg.update(config)
    if isinstance(cfg.get("limits"), Mapping):  # a key left out keeps its default
        cfg["limits"] = {**CONFIG_DEFAULTS["limits"], **cfg["limits"]}
    errors = schema_errors(cfg, _parsed_schema("config.schema.yaml"), where)
    if not errors:
        agents = cfg["agents"]
        for key in ("candidate", "baseline"):
            name = cfg[key]
            if name not in agents and name not in CONTROLS and name not in cfg["humans"]:
                errors.append(
                    f"{where}: field '{key}': '{name}' is neither an agent in 'agents' "
                    f"({', '.join(sorted(agents)) or 'none'}), a person in 'humans', nor a control ({', '.join(CONTROLS)})"
                )
        if cfg["candidate"] in CONTROLS:
            errors.append(f"{where}: field 'candidate': a control ('{cfg['candidate']}') cannot be the candidate")
        if cfg["candidate"] == cfg["baseline"]:
            errors.append(f"{where}: fields 'candidate' and 'baseline' name the same solver")
        for who in cfg["humans"]:
            if who in agents or who in CONTROLS:
                errors.append(f"{where}: field 'humans': '{who}' is already an agent or control name")
        for name in agents:
            if name in CONTROLS:
                errors.append(f"{where}: field 'agents.{name}': '{name}' is reserved for a control solver")
        pub = cfg.get("public_results")
        if pub is not None and not (Path(pub) / "decision.json").is_file():
            errors.append(f"{where}: field 'public_results': '{pub}' holds no decision.json "
                          "(point it at a finished results/experiments/<id> folder)")
        pack = Path(str(cfg["pack"]))
        if not pack.exists():
            errors.append(f"{where}: field 'pack': '{pack}' does not exist")
        elif not (pack / "tasks").is_dir():
            errors.append(f"{where}: field 'pack': '{pack}' has no tasks/ folder (see CONTRACTS §1)")
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))
    return cfg


def load_config_file(path: Path) -> dict:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: must be a mapping of keys to values")
    return validate_config(data, where=str(path))


def envelope_digest(cfg: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json({"envelope": cfg["envelope"], "health": cfg["health"]}))


def agent_fingerprint(name: str, spec: Mapping[str, Any]) -> str:
    """What makes two runs of an agent the same method: its command and its environment, and
    for the agents shipped with sealbench (``sealbench.agents.*``) their source code too."""
    ident: dict[str, Any] = {"name": name, "command": spec["command"], "env": spec.get("env", {}),
                             "endpoint": spec.get("endpoint"), "readonly_paths": spec.get("readonly_paths", [])}
    if "sealbench.agents" in spec["command"]:
        agents = Path(__file__).resolve().parent / "agents"
        ident["builtin_code"] = {p.name: file_sha256(p) for p in sorted(agents.glob("*.py"))}
    return sha256_text(canonical_json(ident))[:16]


def control_fingerprint(name: str) -> str:
    return sha256_text(canonical_json({"control": name, "version": 1}))[:16]


# --------------------------------------------------------------------------------------------
# Packs


@dataclass(frozen=True)
class Task:
    """One task of a pack, as read from ``meta.json`` (validated)."""

    id: str
    dir: Path
    meta: dict

    @property
    def stratum(self) -> str:
        return self.meta["stratum"]


def validate_meta(meta_path: Path, strata: Iterable[str] | None = None, schema_ok: set[str] | None = None) -> dict:
    """Read and validate one ``meta.json``; raise :class:`PackError` naming file and field.

    ``schema_ok``: digests of meta.json texts that already passed the schema (with this very
    schema); such a text skips the jsonschema pass, every other check still runs. Texts that
    pass are added to it."""
    meta_path = Path(meta_path)
    task_dir = meta_path.parent
    if not meta_path.is_file():
        raise PackError(f"{meta_path}: missing (every task needs a meta.json)")
    try:
        raw = meta_path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{meta_path}: not UTF-8 text ({exc})") from exc
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise PackError(f"{meta_path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    if not isinstance(meta, dict):
        raise PackError(f"{meta_path}: must be a JSON object")
    key = sha256_text(_schema_text("meta.schema.yaml") + "\0" + raw) if schema_ok is not None else None
    if key is not None and key in schema_ok:
        errors = []
    else:
        errors = schema_errors(meta, _parsed_schema("meta.schema.yaml"), str(meta_path))
        if key is not None and not errors:
            schema_ok.add(key)
    if not errors:
        if "\n" in meta["title"] or "\r" in meta["title"]:
            errors.append(f"{meta_path}: field 'title': must be one line (it contains a line break)")
        if meta["id"] != task_dir.name:
            errors.append(f"{meta_path}: field 'id': '{meta['id']}' does not equal the folder name '{task_dir.name}'")
        strata = list(strata) if strata is not None else None
        if strata is not None and meta["stratum"] not in strata:
            errors.append(
                f"{meta_path}: field 'stratum': '{meta['stratum']}' is not one of the configured strata "
                f"({', '.join(strata)}); add it to 'strata' in the config or fix the task"
            )
    for name in TASK_FILES + TASK_DIRS:
        p = task_dir / name
        if p.is_symlink():
            errors.append(f"{p}: is a symlink; a pack must contain plain files and folders only")
        elif name in TASK_FILES and not p.is_file():
            errors.append(f"{p}: missing (required by the pack contract)")
        elif name in TASK_DIRS and not p.is_dir():
            errors.append(f"{p}/: missing folder (required by the pack contract)")
    prompt = task_dir / "prompt.md"
    if prompt.is_file():
        try:
            prompt.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            errors.append(f"{prompt}: not UTF-8 text ({exc})")
    if errors:
        raise PackError("invalid task:\n  " + "\n  ".join(errors))
    return meta


def load_pack(pack: Path, strata: Iterable[str] | None = None, schema_ok: set[str] | None = None) -> list[Task]:
    """All tasks of a pack, validated, sorted by id. Raises :class:`PackError` on any problem.
    ``schema_ok``: see :func:`validate_meta`."""
    pack = Path(pack)
    tasks_dir = pack / "tasks"
    if not tasks_dir.is_dir():
        raise PackError(f"{tasks_dir}: missing (a pack holds its tasks in tasks/<task_id>/)")
    errors: list[str] = []
    tasks: list[Task] = []
    for child in sorted(tasks_dir.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_symlink():
            errors.append(f"{child}: is a symlink; tasks/ may only hold plain task folders")
            continue
        if not child.is_dir():
            errors.append(f"{child}: not a task folder (tasks/ may only hold task folders)")
            continue
        try:
            meta = validate_meta(child / "meta.json", strata, schema_ok)
        except PackError as exc:
            errors.append(str(exc))
            continue
        tasks.append(Task(child.name, child, meta))
    if not tasks and not errors:
        errors.append(f"{tasks_dir}: holds no tasks")
    if errors:
        raise PackError("\n".join(errors))
    return tasks


def python_bin_dir() -> str:
    """The folder of the interpreter running sealbench: put first on PATH for task commands."""
    return str(Path(sys.executable).parent)


def harness_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for task and agent commands: this interpreter first on PATH, no bytecode,
    no auto-loaded pytest plugins, stable hashing, and nothing of Snakemake's own state."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SNAKEMAKE")}
    env["PATH"] = python_bin_dir() + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONPATH", None)
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def toolchain() -> dict[str, Any]:
    """The bill of materials the tests run under: interpreter and installed distributions."""
    from importlib import metadata

    pkgs = set()
    for d in metadata.distributions():
        md = d.metadata  # parsed on each access: read once per distribution
        if md["Name"]:
            pkgs.add(f"{md['Name']}=={md['Version']}")
    pkgs = sorted(pkgs, key=str.lower)
    return {
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "executable": sys.executable,
        "packages": pkgs,
    }


def toolchain_digest(tc: Mapping[str, Any] | None = None) -> str:
    tc = tc or toolchain()
    return sha256_text(canonical_json({"python": tc["python"], "packages": tc["packages"]}))


@functools.cache
def code_digest(*modules: str) -> str:
    """Digest of sealbench's own source for the given stage modules plus the shared core.

    Used as a Snakemake ``params`` value so that a code change reruns exactly the jobs of the
    stages whose code changed. Read once per process (a workflow's code does not change under it).
    """
    here = Path(__file__).resolve().parent
    names = sorted(set(modules) | {"core", "workspace", "scoring", "pytest_seal", "schema", "__init__"})
    h = hashlib.sha256()
    for name in names:
        p = here / (name.replace(".", "/") + ".py")
        h.update(name.encode() + b"\0")
        if p.exists():
            h.update(p.read_bytes())
    return h.hexdigest()[:16]
