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
import math
import os
import re
import shlex
import shutil
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
        mde, psi = cfg["mde"], cfg["planning_discordance"]
        if psi <= mde**2:  # the rule of stats._check_mde_psi: the paired variance psi - mde^2 must be > 0
            errors.append(
                f"{where}: fields 'mde' ({mde:g}) and 'planning_discordance' ({psi:g}) are impossible together: "
                f"the required number of tasks needs ψ > mde² (planning_discordance > {mde**2:.4g}). Raise "
                f"planning_discordance above {mde**2:.4g}, or lower mde below √ψ = {math.sqrt(psi):.4g}")
        pack = Path(str(cfg["pack"]))
        if not pack.exists():
            errors.append(f"{where}: field 'pack': '{pack}' does not exist")
        elif not (pack / "tasks").is_dir():
            errors.append(f"{where}: field 'pack': '{pack}' has no tasks/ folder (see docs/contract.md §1)")
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


#: A folder an agent's identity covers (readonly_paths, code_paths) may hold at most this many
#: files: more is a configuration error (name narrower folders), so planning stays quick.
MAX_CODE_FILES = 20000
#: The stat cache of agent code (results/.sealbench/<this>), apart from the pack's hashcache.json.
AGENT_CACHE_NAME = "agent-hashcache.json"
#: Never code: build artefacts and version-control folders inside a covered folder.
_NOT_CODE_DIRS = ARTEFACT_NAMES | {".git", ".hg", ".svn"}
#: Words the shell runs itself (no file on PATH) or that only shape the command line.
_SHELL_BUILTINS = frozenset({
    ":", ".", "[", "[[", "]]", "alias", "bg", "break", "builtin", "case", "cd", "command", "continue", "declare",
    "do", "done", "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fg", "fi", "for",
    "function", "getopts", "hash", "if", "in", "jobs", "kill", "let", "local", "printf", "pwd", "read", "readonly",
    "return", "select", "set", "shift", "source", "test", "then", "time", "trap", "true", "type", "ulimit", "umask",
    "unalias", "unset", "until", "wait", "while", "{", "}", "!",
})
#: After these words the next word is again a command (``exec python x.py``, ``if true; then …``).
_COMMAND_PREFIXES = frozenset({"exec", "command", "builtin", "nohup", "env", "time", "nice", "then", "do", "else",
                               "elif", "if", "while", "until", "!", "{"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python[0-9.]*$")
_PUNCT = set("();<>|&")


def _shell_words(command: str) -> list[str]:
    """The command's words and operators, the way a POSIX shell splits them (quotes removed).

    Shell syntax shlex cannot follow (an unbalanced quote) falls back to splitting on whitespace
    and operators, quotes stripped from the ends of each word."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        return list(lex)
    except ValueError:
        return [w.strip("'\"") for w in re.findall(r"[^\s;&|()<>]+|[;&|()<>]+", command)]


def _module_search(entries: Iterable[str], base: Path) -> list[str]:
    return [str(p if Path(p).is_absolute() else base / p) for p in entries if p]


@functools.cache
def _interpreter_sys_path(interpreter: str) -> tuple[str, ...]:
    """``sys.path`` of another Python (without its script folder), asked once per process."""
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    try:
        out = subprocess.run([interpreter, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"], env=env,
                             cwd="/", capture_output=True, text=True, timeout=20)
        return tuple(json.loads(out.stdout)) if out.returncode == 0 else ()
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()


class _Coverage:
    """Collects the files one agent's identity covers (see :func:`agent_identity`)."""

    def __init__(self, name: str, spec: Mapping[str, Any], base: Path, cache: HashCache) -> None:
        self.name, self.base, self.cache = name, base, cache
        env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
        # the agent's PATH and PYTHONPATH as run_agent sets them (harness_env, then the agent's env)
        self.path_env = env.get("PATH", python_bin_dir() + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin"))
        self.pythonpath = env.get("PYTHONPATH", str(Path(__file__).resolve().parents[1])).split(os.pathsep)
        self.files: dict[str, str] = {}
        self.covered: list[str] = []
        self.skipped: list[dict[str, str]] = []
        self.excluded = {os.path.join(base, "results"), os.path.join(base, ".snakemake")}
        self.interpreter = sys.executable

    # -- naming

    def abspath(self, p: str | Path) -> str:
        p = os.path.expanduser(str(p))
        return os.path.normpath(p if os.path.isabs(p) else os.path.join(self.base, p))

    def show(self, p: str) -> str:
        rel = os.path.relpath(p, self.base)
        return p if rel == ".." or rel.startswith("../") else rel

    def skip(self, token: str, reason: str) -> None:
        item = {"token": token, "reason": reason}
        if item not in self.skipped:
            self.skipped.append(item)

    def cover(self, root: str, is_dir: bool = False) -> None:
        label = self.show(root) + ("/" if is_dir else "")
        if label not in self.covered:
            self.covered.append(label)

    # -- hashing

    def add_file(self, p: str, token: str) -> bool:
        """Hash one file (a symlink: its target's bytes). False when it cannot be covered."""
        label = self.show(p)
        if label in self.files:
            return True
        try:
            st = os.stat(p)
        except OSError as exc:
            self.skip(token, f"{label}: {exc.strerror or 'cannot be read'}")
            return False
        if not stat.S_ISREG(st.st_mode):
            self.skip(token, f"{label}: not a regular file (socket, FIFO or device)")
            return False
        try:
            self.files[label] = self.cache.sha256(p, st)
        except OSError as exc:
            self.skip(token, f"{label}: {exc.strerror or 'cannot be read'}")
            return False
        return True

    def tree_files(self, root: str) -> list[str] | None:
        """Every file under ``root`` (following symlinks, once per folder), artefacts left out;
        None when there are more than MAX_CODE_FILES."""
        out: list[str] = []
        seen: set[tuple[int, int]] = set()
        def unreadable(exc: OSError) -> None:
            self.skip(self.show(root), f"{self.show(str(exc.filename))}: {exc.strerror or 'cannot be read'}")

        for dirpath, dirnames, filenames in os.walk(root, followlinks=True, onerror=unreadable):
            st = os.stat(dirpath)
            if (st.st_dev, st.st_ino) in seen:
                dirnames[:] = []
                continue
            seen.add((st.st_dev, st.st_ino))
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in _NOT_CODE_DIRS and os.path.join(dirpath, d) not in self.excluded)
            out.extend(os.path.join(dirpath, f) for f in filenames if not f.endswith(ARTEFACT_SUFFIXES))
            if len(out) > MAX_CODE_FILES:
                return None
        return sorted(out)

    def add_path(self, raw: str, field: str) -> None:
        """A readonly_paths / code_paths entry: the file, or every file under the folder."""
        p = self.abspath(raw)
        where = f"agents.{self.name}.{field}"
        if not os.path.exists(p):
            if field == "code_paths":
                raise ConfigError(f"{where}: '{raw}' does not exist (code_paths name the files and folders "
                                  "of the agent's code; fix the path or remove it)")
            self.skip(raw, f"{field}: does not exist")
            return
        if self.broad(p):
            self.skip(raw, f"{field}: {self.broad(p)}; not hashed")
            return
        if not os.path.isdir(p):
            if self.add_file(p, raw):
                self.cover(p)
            return
        files = self.tree_files(p)
        if files is None:
            raise ConfigError(
                f"{where}: '{raw}' holds more than {MAX_CODE_FILES} files. An agent's fingerprint covers every "
                f"file it can read or run, and a folder this big is too slow to check at every plan. Name "
                f"narrower folders (the client's own package folder, e.g. node_modules/<client>) in {field}"
                + ("" if field == "code_paths" else ", and list what fingerprints the agent in code_paths"))
        for f in files:
            self.add_file(f, raw)
        self.cover(p, is_dir=True)

    def broad(self, p: str) -> str | None:
        """Why a folder must not be hashed as code (None: it may)."""
        if p == "/" or any(p == s or p.startswith(s + "/") for s in ("/proc", "/sys", "/dev", "/run")):
            return "a system folder"
        if any(p == x or p.startswith(x + "/") for x in self.excluded):
            return "results/ holds outputs, not code"
        return None

    # -- the command

    def add_word(self, token: str, p: str, command_word: bool) -> None:
        """A word of the command that names an existing file or folder."""
        if os.path.isdir(p):
            why = self.broad(p)
            home = os.path.expanduser("~")
            if why is None and (os.path.commonpath([p, str(self.base)]) == p
                                or p in ("/tmp", "/var/tmp", tempfile.gettempdir(), home)):
                why = "a temporary, home or working folder (it holds the results)"
            if why:
                self.skip(token, f"{self.show(p)}/: {why}; not hashed")
                return
            files = self.tree_files(p)
            if files is None:
                self.skip(token, f"{self.show(p)}/: more than {MAX_CODE_FILES} files; not hashed (name the "
                                 "code that runs in code_paths)")
                return
            for f in files:
                self.add_file(f, token)
            self.cover(p, is_dir=True)
        elif self.add_file(p, token):
            self.cover(p)
            if command_word:
                self.add_shebang(p, token)

    def add_shebang(self, p: str, token: str) -> None:
        """A script run as a command is run by its ``#!`` interpreter: cover that too."""
        try:
            with open(p, "rb") as fh:
                first = fh.readline(256)
        except OSError:
            return
        if not first.startswith(b"#!"):
            return
        parts = first[2:].decode("utf-8", "replace").split()
        if not parts:
            return
        if self.add_file(parts[0], token):
            self.cover(parts[0])
        if os.path.basename(parts[0]) == "env":
            rest = [w for w in parts[1:] if not w.startswith("-") and not _ASSIGNMENT.match(w)]
            found = shutil.which(rest[0], path=self.path_env) if rest else None
            if found and self.add_file(os.path.abspath(found), token):
                self.cover(os.path.abspath(found))

    def add_module(self, module: str, token: str) -> None:
        """``python -m module``: the module's file (and its packages' ``__init__``), found without
        importing anything; for sealbench's own modules also the sealbench modules they import."""
        from importlib.machinery import PathFinder

        top = module.split(".")[0]
        search = _module_search(self.pythonpath, self.base)
        if PathFinder.find_spec(top, search) is None:
            search = search + list(_interpreter_sys_path(self.interpreter))
        path: list[str] | None = search
        found: list[str] = []
        spec = None
        for part in module.split("."):
            spec = PathFinder.find_spec(part, path) if path is not None else None
            if spec is None:
                self.skip(token, f"module {module}: not found on the agent's Python path")
                return
            if spec.has_location and spec.origin:
                found.append(spec.origin)
            path = list(spec.submodule_search_locations) if spec.submodule_search_locations else None
        if spec is not None and spec.submodule_search_locations:  # a package runs its __main__
            main = PathFinder.find_spec("__main__", list(spec.submodule_search_locations))
            if main is not None and main.origin:
                found.append(main.origin)
        if top == "sealbench" and found:
            found = _sealbench_closure(found, Path(found[0]).parent)
        for f in found:
            if self.add_file(os.path.abspath(f), token):
                self.cover(os.path.abspath(f))

    def add_command(self, command: str) -> None:
        at_command = True  # the next word is run as a command
        redirect: str | None = None  # the operator the next word is the target of
        python = module_next = option_arg = False  # inside `python [options]`, the word after -m
        for w in _shell_words(command):
            if w and set(w) <= _PUNCT:  # an operator: ; && || | & ( ) or a redirection
                redirect = w if ("<" in w or ">" in w) else None
                at_command = redirect is None
                python = module_next = option_arg = False
                continue
            if redirect is not None:
                r, redirect = redirect, None
                if ">" in r or r.startswith("<<") or w.isdigit() or w == "-":
                    continue  # an output, a here-document or a descriptor: not code
            elif at_command:
                if w in _COMMAND_PREFIXES or (w.startswith("-") and w != "-"):
                    continue  # exec/env/nohup/if/then … (and their options): a command follows
                if _ASSIGNMENT.match(w):  # VAR=value before the command
                    var, w = w.split("=", 1)
                    if var == "PYTHONPATH":
                        self.pythonpath = w.split(os.pathsep)
                        continue
                else:
                    at_command = False
                    if w not in _SHELL_BUILTINS:
                        python = self.add_command_word(w)
                    continue
            if "$" in w:
                self.skip(w, "contains $: expanded by the shell at run time, not resolved")
                continue
            if python and module_next:
                python = module_next = False
                self.add_module(w, w)
                continue
            if python and w.startswith("-m"):
                module_next = w == "-m"
                if not module_next:
                    python = False
                    self.add_module(w[2:], w)
                continue
            if python and w in ("-W", "-X", "--check-hash-based-pycs"):
                option_arg = True  # python's options that take a value: the value is next
                continue
            if python and option_arg:
                option_arg = False
                continue
            if python and not w.startswith("-"):
                python = False  # the script python runs; its arguments follow
            for cand in ([w, w.split("=", 1)[1]] if "=" in w else [w]):
                if cand and (os.path.isabs(os.path.expanduser(cand)) or os.path.exists(os.path.join(self.base, cand))):
                    p = self.abspath(cand)
                    if os.path.exists(p):
                        self.add_word(cand, p, command_word=False)
                        break

    def add_command_word(self, w: str) -> bool:
        """The word the shell runs: found on the agent's PATH (or a path). True for a Python."""
        if "$" in w:
            self.skip(w, "contains $: expanded by the shell at run time, not resolved")
            return False
        if "/" in w:
            p = self.abspath(w)
        else:
            found = shutil.which(w, path=self.path_env)
            if found is None:
                self.skip(w, "command not found on the agent's PATH")
                return False
            p = os.path.abspath(found)
        if not os.path.exists(p):
            self.skip(w, "no such file")
            return False
        self.add_word(w, p, command_word=True)
        if _PYTHON.match(os.path.basename(w)):
            self.interpreter = p
            return True
        return False


_IMPORTS: dict[str, tuple[tuple, list]] = {}


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


def agent_identity(name: str, spec: Mapping[str, Any], base: Path | str | None = None,
                   cache: HashCache | Path | str | None = None) -> dict[str, Any]:
    """What makes two runs of an agent the same method, and what its fingerprint covers.

    The fingerprint digests the agent's name, command, env, endpoint, readonly_paths, code_paths,
    lineage and the bytes of every file it covers:

    * the command's words, split the way the shell splits them: each command word found on the
      agent's PATH (as the shell will; a script's ``#!`` interpreter too), every other word that
      names an existing file (absolute, or relative to ``base``, the working directory; also the
      value of ``--opt=value``), a folder a word names (every file in it);
    * ``python -m module``: the module's file, found without importing it; for sealbench's own
      modules (the built-in agents) only that module and the sealbench modules it imports;
    * every file under ``readonly_paths`` and ``code_paths`` (symlinks: their target's bytes).

    Words with ``$`` are expanded by the shell at run time and are not resolved; they are listed
    in ``skipped`` with anything else that could not be covered. Build artefacts (``__pycache__``,
    ``*.pyc``) and ``.git`` folders are not code. Files are named relative to ``base`` when inside
    it. Hashes go through a stat cache (``results/.sealbench/agent-hashcache.json`` when that
    folder exists, or ``cache``). Raises :class:`ConfigError` for a missing code_paths entry or a
    folder of more than :data:`MAX_CODE_FILES` files in readonly_paths/code_paths.
    """
    base = Path(os.path.abspath(base if base is not None else Path.cwd()))
    own = not isinstance(cache, HashCache)
    if cache is None:
        folder = base / "results" / ".sealbench"
        cache = HashCache(folder / AGENT_CACHE_NAME if folder.is_dir() else None)
    elif not isinstance(cache, HashCache):
        cache = HashCache(Path(cache))
    cov = _Coverage(name, spec, base, cache)
    cov.add_command(spec["command"])
    for p in spec.get("readonly_paths") or []:
        cov.add_path(p, "readonly_paths")
    for p in spec.get("code_paths") or []:
        cov.add_path(p, "code_paths")
    if own:
        try:
            cache.save()
        except OSError:
            pass  # the cache only saves time
    lineage = spec.get("lineage") or name
    files = dict(sorted(cov.files.items()))
    ident = {"name": name, "command": spec["command"], "env": spec.get("env", {}), "endpoint": spec.get("endpoint"),
             "readonly_paths": spec.get("readonly_paths", []), "code_paths": spec.get("code_paths", []),
             "lineage": lineage, "files": files}
    return {"fingerprint": sha256_text(canonical_json(ident))[:16], "lineage": lineage, "command": spec["command"],
            "files": files, "covered": cov.covered, "skipped": cov.skipped}


def agent_fingerprint(name: str, spec: Mapping[str, Any]) -> str:
    """The agent's fingerprint as seen from the current working directory (:func:`agent_identity`)."""
    return agent_identity(name, spec)["fingerprint"]


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


#: Modules loaded by name at run time, not imported: pytest loads the seal plugin with
#: ``-p sealbench.pytest_seal`` in every scoring command.
RUNTIME_LOADS: dict[str, tuple[str, ...]] = {"scoring": ("pytest_seal",)}


@functools.cache
def code_closure(*modules: str) -> tuple[str, ...]:
    """The sealbench source files the given modules run: the modules, every sealbench module
    they import (statically, transitively, lazy imports included) and what those load by name
    (``RUNTIME_LOADS``), as paths relative to the package folder. Derived, not listed by hand."""
    here = Path(__file__).resolve().parent
    files = [str(here / (m.replace(".", "/") + ".py")) for m in modules]
    closure: list[str] = []
    while True:
        closure = _sealbench_closure(files, here)
        names = {Path(f).resolve().relative_to(here).with_suffix("").as_posix().replace("/", ".") for f in closure}
        extra = [str(here / (x + ".py")) for n in names for x in RUNTIME_LOADS.get(n, ())
                 if x not in names and (here / (x + ".py")).is_file()]
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
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for rel in code_closure(*modules):
        h.update(rel.encode() + b"\0")
        h.update((here / rel).read_bytes())
    return h.hexdigest()[:16]
