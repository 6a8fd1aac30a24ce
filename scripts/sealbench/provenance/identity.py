"""Agent identity: which files an agent's command covers, and the fingerprint over them.

An agent is the same method across runs when its name, command, env, endpoint, paths, lineage
*and the bytes of the code it runs* are the same. :func:`agent_identity` resolves the command the
way the shell and Python will (PATH lookup, ``#!`` interpreters, ``python -m`` modules, files and
folders the words name, ``readonly_paths``/``code_paths``) and digests every covered file. The
fingerprint is location-free: the same command and the same bytes give the same fingerprint
whatever folder the pipeline runs in and however a path is written (relative, absolute, through a
symlink); :func:`agent_fingerprint` is :func:`agent_identity` from the working directory (the
built-in controls' fixed fingerprints are :func:`sealbench.core.core.control_fingerprint`).

The same resolution says what a run must make visible: :func:`command_plan` lists the files and
folders the command's words name (mounted read-only in the sandbox) and the command as the
sandbox runs it, with each relative word naming one of them made absolute (the agent's cwd is
its workspace, not the project folder); its ``first`` command is what ``run_agent``'s start
check probes.

Imports from :mod:`sealbench.core.core` and :mod:`sealbench.core.code_digests` (the static import reader
``_sealbench_closure``, which the stage code digests use too); neither imports this module.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.code_digests import _sealbench_closure
from ..core.core import (
    ARTEFACT_NAMES,
    ARTEFACT_SUFFIXES,
    ConfigError,
    HashCache,
    canonical_json,
    command_path,
    sha256_text,
)
from ..core.shell_syntax import OPERATOR_CHARS, runtime_word, shell_events

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
#: (Reserved words — then, do, if, ! … — are :mod:`sealbench.core.shell_syntax`'s.)
_COMMAND_PREFIXES = frozenset({"exec", "command", "builtin", "nohup", "env", "time", "nice"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^python[0-9.]*$")
#: ``env:`` variables whose value is where things are looked up or written, not code.
_ENV_NOT_CODE = frozenset({"PATH", "PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH", "HOME", "TMPDIR"})
#: Other interpreters whose first word (when not an option) is the script they run.
_SCRIPT_RUNNER = re.compile(r"^((ba|da|k|z)?sh|node|perl|ruby|Rscript)$")
_PUNCT = set(OPERATOR_CHARS - {"\n"})
#: The sealbench package folder (symlinks resolved): its files are named ``sealbench/<path in it>``
#: in the fingerprint, wherever the project is.
_PACKAGE = os.path.realpath(Path(__file__).resolve().parents[1])
#: What may stand before / after a path written in a command (start, blank, quote, ``=``, operator).
_WORD_START = r"(?:(?<=^)|(?<=[\s'\"=;&|()<>`]))"
_WORD_END = r"(?=$|[\s'\";&|()<>`])"


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

    def __init__(self, name: str, spec: Mapping[str, Any], base: Path, cache: HashCache | None,
                 hash_files: bool = True) -> None:
        self.name, self.base, self.cache, self.hash_files = name, base, cache, hash_files
        env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
        # the agent's PATH and PYTHONPATH as run_agent sets them (harness_env, then the agent's env)
        self.path_env = env.get("PATH", command_path())
        self.pythonpath = env.get("PYTHONPATH", str(Path(__file__).resolve().parents[2])).split(os.pathsep)
        self.files: dict[str, str] = {}
        #: each covered file's location-free name (``sealbench/…`` for the package's files, a
        #: module's path below its search root for ``python -m``'s); other files: content only
        self.labels: dict[str, str] = {}
        #: each covered folder (absolute, as named) -> its files, in order
        self.dirs: dict[str, list[str]] = {}
        #: ``env:`` keys and readonly_paths/code_paths entries whose value was covered -> its path
        self.env_named: dict[str, str] = {}
        self.paths_named: dict[tuple[str, str], str] = {}
        self.covered: list[str] = []
        self.skipped: list[dict[str, str]] = []
        self.excluded = {os.path.join(base, "results"), os.path.join(base, ".snakemake")}
        self.interpreter = sys.executable
        #: every word naming a covered file or folder (:class:`NamedPath`), in command order
        self.named: list[NamedPath] = []
        #: each simple command's start, in command order: its command word, where it was found,
        #: whether it is a Python, its script or module, whether a cd came before it and the case
        #: branches it is inside (see :meth:`entries`: what the start check probes)
        self.starts: list[dict[str, Any]] = []
        #: names a lookup tests before running them (``command -v X``, ``type X``, ``which X``)
        self.guarded: set[str] = set()

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

    def add_file(self, p: str, token: str, module_label: str | None = None) -> bool:
        """Hash one file (a symlink: its target's bytes). False when it cannot be covered.
        ``module_label``: its name as a module's file (``pkg/mod.py``), where it is not used."""
        label = self.show(p)
        if module_label and label not in self.labels:
            self.labels[label] = module_label
        if label in self.files:
            return True
        real = os.path.realpath(p)
        if label not in self.labels and (real + "/").startswith(_PACKAGE + "/"):
            self.labels[label] = "sealbench/" + os.path.relpath(real, _PACKAGE)
        try:
            st = os.stat(p)
        except OSError as exc:
            self.skip(token, f"{label}: {exc.strerror or 'cannot be read'}")
            return False
        if not stat.S_ISREG(st.st_mode):
            self.skip(token, f"{label}: not a regular file (socket, FIFO or device)")
            return False
        if not self.hash_files or self.cache is None:
            self.files[label] = ""
            return True
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
                self.paths_named[(field, raw)] = p
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
        self.dirs[p] = files
        self.paths_named[(field, raw)] = p
        self.cover(p, is_dir=True)

    def broad(self, p: str) -> str | None:
        """Why a folder must not be hashed as code (None: it may)."""
        if p == "/" or any(p == s or p.startswith(s + "/") for s in ("/proc", "/sys", "/dev", "/run")):
            return "a system folder"
        if any(p == x or p.startswith(x + "/") for x in self.excluded):
            return "results/ holds outputs, not code"
        return None

    # -- where the pipeline runs, left out

    def content_id(self, p: str) -> str:
        """What a covered file or folder is, wherever it is and however it is written: a file
        its content digest, a folder the digest of its files' (name within it, digest)."""
        if p in self.dirs:
            entries = [[os.path.relpath(f, p), self.files.get(self.show(f), "")] for f in self.dirs[p]]
            return "dir:" + sha256_text(canonical_json(entries))
        return "file:" + self.files.get(self.show(p), "")

    def location_free_command(self, command: str) -> str:
        """``command`` with each path part of a word naming a covered file or folder (the
        :class:`NamedPath` records; a #! interpreter is no word of it) replaced by that file's or
        folder's :meth:`content_id`, longest first and only where it stands as a whole word part."""
        subs: dict[str, str] = {}
        for n in self.named:
            if n.role != "interpreter" and n.cand and n.cand not in subs:
                subs[n.cand] = self.content_id(n.path)
        if not subs:
            return command
        pattern = re.compile(_WORD_START + "(" + "|".join(re.escape(c) for c in sorted(subs, key=len, reverse=True))
                             + ")" + _WORD_END)
        return pattern.sub(lambda m: subs[m.group(1)], command)

    def location_free_files(self) -> list[list[str]]:
        """The covered files as (location-free name or "", digest), each pair once."""
        return sorted({(self.labels.get(k, ""), d) for k, d in self.files.items()})  # type: ignore[return-value]

    # -- the env: values

    def add_env(self, env: Mapping[str, Any]) -> None:
        """Each ``env:`` value naming an existing file or folder (absolute, ``~``, or relative to
        the working directory), covered as a word of the command naming it is (:meth:`add_word`:
        a folder's files, the working, home and temporary folders never). Search paths and the
        agent's own home or temporary folder (:data:`_ENV_NOT_CODE`) are not code: what the
        command finds through ``PATH``/``PYTHONPATH`` is covered already."""
        for key, value in sorted(env.items()):
            v = str(value)
            if not v or not (os.path.isabs(os.path.expanduser(v)) or os.path.exists(os.path.join(self.base, v))):
                continue
            p = self.abspath(v)
            if not os.path.exists(p):
                continue
            if key in _ENV_NOT_CODE or key.startswith("XDG_"):
                self.skip(f"{key}={v}", f"env {key}: a search path or the agent's own folder, not code; not hashed")
                continue
            if self.add_word(v, p, command_word=False):
                self.env_named[key] = p

    # -- the command

    def add_word(self, token: str, p: str, command_word: bool) -> bool:
        """A word of the command that names an existing file or folder. True when covered."""
        if os.path.isdir(p):
            why = self.broad(p)
            home = os.path.expanduser("~")
            if why is None and (os.path.commonpath([p, str(self.base)]) == p
                                or p in ("/tmp", "/var/tmp", tempfile.gettempdir(), home)):
                why = "a temporary, home or working folder (it holds the results)"
            if why:
                self.skip(token, f"{self.show(p)}/: {why}; not hashed")
                return False
            files = self.tree_files(p)
            if files is None:
                self.skip(token, f"{self.show(p)}/: more than {MAX_CODE_FILES} files; not hashed (name the "
                                 "code that runs in code_paths)")
                return False
            for f in files:
                self.add_file(f, token)
            self.dirs[p] = files
            self.cover(p, is_dir=True)
            return True
        if self.add_file(p, token):
            self.cover(p)
            if command_word:
                self.add_shebang(p, token)
            return True
        return False

    def name_word(self, word: str, cand: str, p: str, role: str) -> None:
        """Record that ``word`` (its path part ``cand``, as written) names the covered ``p``."""
        self.named.append(NamedPath(word=word, cand=cand, path=p, role=role, is_dir=os.path.isdir(p)))

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
            self.name_word(token, parts[0], parts[0], "interpreter")
        if os.path.basename(parts[0]) == "env":
            rest = [w for w in parts[1:] if not w.startswith("-") and not _ASSIGNMENT.match(w)]
            found = shutil.which(rest[0], path=self.path_env) if rest else None
            if found and self.add_file(os.path.abspath(found), token):
                self.cover(os.path.abspath(found))
                self.name_word(token, os.path.abspath(found), os.path.abspath(found), "interpreter")

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
        # the search root the top module was found in: its files are named below it (pkg/mod.py)
        root = os.path.dirname(os.path.dirname(found[0]) if os.path.basename(found[0]) == "__init__.py"
                               else found[0]) if found else None
        if top == "sealbench" and found:
            found = _sealbench_closure(found, Path(found[0]).parent)
        for f in found:
            rel = os.path.relpath(os.path.abspath(f), root) if root else None
            if self.add_file(os.path.abspath(f), token, rel if rel and not rel.startswith("..") else None):
                self.cover(os.path.abspath(f))

    def add_command(self, command: str) -> None:
        """Cover what ``command``'s words name, read with bash's grammar (:func:`shell_events`),
        and note each simple command's start (``starts``: what the start check may probe)."""
        parse = shell_events(command)
        at_command = True  # the next word is run as a command
        redirect: str | None = None  # the operator the next word is the target of
        python = module_next = option_arg = False  # inside `python [options]`, the word after -m
        cur: dict[str, Any] | None = None  # the start of the simple command being read (see starts)
        runner_next = False  # the next word is the script of the command's interpreter (bash x.sh)
        cd_seen = False  # a `cd` ran before: relative paths of later commands are not the project's
        prefix = ""  # the last prefix word (exec, command, env …) of this command
        lookup = False  # the words are names a lookup tests (command -v X, type X, hash X, which X)
        for ev in parse.events:
            w, kind = ev.token, ev.kind
            if kind == "skip":
                continue
            if kind != "word":  # an operator, a redirection, or a reserved word (then, done, fi …)
                redirect = w if kind == "redirect" else None
                at_command = kind in ("sep", "open")
                python = module_next = option_arg = runner_next = False
                if kind != "redirect":
                    cur, prefix, lookup = None, "", False
                continue
            word = w  # as written (quotes removed)
            if redirect is not None:
                r, redirect = redirect, None
                if ">" in r or r.startswith("<<") or w.isdigit() or w == "-":
                    continue  # an output, a here-document or a descriptor: not code
            elif at_command:
                if prefix == "command" and w.startswith("-") and set(w[1:]) & {"v", "V"}:
                    at_command, lookup = False, True  # command -v X: looks X up, runs nothing
                    continue
                if w in _COMMAND_PREFIXES or (w.startswith("-") and w != "-"):
                    prefix = w if w in _COMMAND_PREFIXES else prefix
                    continue  # exec/env/nohup … (and their options): a command follows
                if _ASSIGNMENT.match(w):  # VAR=value before the command
                    var, w = w.split("=", 1)
                    if var == "PYTHONPATH":
                        self.pythonpath = w.split(os.pathsep)
                        continue
                else:
                    at_command = False
                    cd_seen = cd_seen or w in ("cd", "pushd")
                    lookup = os.path.basename(w) in ("type", "hash", "which")
                    if w not in _SHELL_BUILTINS and w not in parse.functions:
                        cur = {"word": w, "path": None, "python": False, "script": None, "script_path": None,
                               "module": None, "after_cd": cd_seen, "branch": ev.branch}
                        self.starts.append(cur)
                        python = self.add_command_word(w, cur)
                        cur["python"] = python
                        runner_next = not python and bool(_SCRIPT_RUNNER.match(os.path.basename(w)))
                    continue
            if lookup and not w.startswith("-"):
                self.guarded.add(w)
            runner_script, runner_next = runner_next and cur is not None and not w.startswith("-") \
                and not runtime_word(w), False
            if "$" in w:
                self.skip(w, "contains $: expanded by the shell at run time, not resolved")
                if cur is not None and python and cur["script"] is None and cur["module"] is None \
                        and not w.startswith("-"):
                    cur = None  # python's script or module is only known at run time
                continue
            if python and module_next:
                python = module_next = False
                self.start_module(cur, w)
                self.add_module(w, w)
                continue
            if python and w.startswith("-m"):
                module_next = w == "-m"
                if not module_next:
                    python = False
                    self.start_module(cur, w[2:])
                    self.add_module(w[2:], w)
                continue
            if python and w in ("-W", "-X", "--check-hash-based-pycs"):
                option_arg = True  # python's options that take a value: the value is next
                continue
            if python and option_arg:
                option_arg = False
                continue
            if python and w == "-c":
                python = False  # code follows, then its arguments: no script
                cur = None
                continue
            role = "argument"
            if runner_script and cur is not None:
                role = "script"
                cur["script"] = w
                cur["script_path"] = self.abspath(w)
            if python and not w.startswith("-"):
                python = False  # the script python runs; its arguments follow
                role = "script"
                if cur is not None:
                    cur["script"] = w
                    cur["script_path"] = self.abspath(w)
            for cand in ([w, w.split("=", 1)[1]] if "=" in w else [w]):
                if cand and (os.path.isabs(os.path.expanduser(cand)) or os.path.exists(os.path.join(self.base, cand))):
                    p = self.abspath(cand)
                    if os.path.exists(p):
                        if self.add_word(cand, p, command_word=False):
                            self.name_word(word, cand, p, role)
                        break

    @staticmethod
    def start_module(cur: dict[str, Any] | None, module: str) -> None:
        if cur is not None:
            cur["module"] = module

    @property
    def first(self) -> dict[str, Any] | None:
        """The first command the shell runs, builtins and functions aside (None: builtins only);
        a command a lookup tests first (``command -v X && X …``) may not run: never the first."""
        entries = self.entries()
        return entries[0] if entries else None

    def entries(self) -> list[dict[str, Any]]:
        """The commands one of which the shell runs first: the first command, and when it is in a
        case branch, the first command of each other branch of that case (which branch runs is
        known only at run time). Commands a lookup tests (``command -v X``) are left out."""
        starts = [s for s in self.starts if s["word"] not in self.guarded]
        if not starts:
            return []
        out = [starts[0]]
        for case_id, own in starts[0]["branch"]:
            seen = {own}
            for s in starts[1:]:
                b = dict(s["branch"]).get(case_id)
                if b is not None and b not in seen:
                    seen.add(b)
                    out.append(s)
        return out

    def add_command_word(self, w: str, start: dict[str, Any] | None = None) -> bool:
        """The word the shell runs: found on the agent's PATH (or a path). True for a Python."""
        if runtime_word(w):
            self.skip(w, "contains $, ` or a pattern: expanded by the shell at run time, not resolved")
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
        if start is not None and start["path"] is None:
            start["path"] = p
        if self.add_word(w, p, command_word=True):
            self.name_word(w, w, p, "command")
        if _PYTHON.match(os.path.basename(w)):
            self.interpreter = p
            return True
        return False


@dataclass(frozen=True)
class NamedPath:
    """One word of an agent's command that names a file or folder its identity covers."""

    word: str      #: the word as written (quotes removed), e.g. ``agents/x.py`` or ``--cfg=c.yaml``
    cand: str      #: its path part as written (``c.yaml`` of ``--cfg=c.yaml``)
    path: str      #: the absolute path it names
    role: str      #: ``command`` (run by the shell), ``script`` (run by python), ``argument``, ``interpreter`` (a #!)
    is_dir: bool

    @property
    def relative(self) -> bool:
        """Written relative to the working directory (or with ``~``): the sandbox needs it absolute.
        A command word without ``/`` is found on PATH, in the sandbox as here: never rewritten."""
        if self.role == "interpreter" or (self.role == "command" and "/" not in self.cand):
            return False
        return not os.path.isabs(self.cand)

    def replacement(self) -> str:
        """The word with its path made absolute, quoted for the shell (an assignment stays one)."""
        prefix = self.word[:len(self.word) - len(self.cand)] if self.word.endswith(self.cand) else ""
        if prefix and not (_ASSIGNMENT.match(prefix) and prefix.endswith("=")):
            prefix = shlex.quote(prefix)
        return prefix + shlex.quote(self.path)


def agent_identity(name: str, spec: Mapping[str, Any], base: Path | str | None = None,
                   cache: HashCache | Path | str | None = None) -> dict[str, Any]:
    """What makes two runs of an agent the same method, and what its fingerprint covers.

    The fingerprint digests the agent's name, command, env, endpoint, readonly_paths, code_paths,
    lineage and the bytes of every file it covers, none of it by where it is: the same command
    and the same bytes have the same fingerprint whatever folder the pipeline runs in (``base``)
    and however a path is written (relative, absolute, with ``..``, through a symlink):

    * each covered file enters as its content digest, with a name only where the name does not
      depend on the folder: a file of the sealbench package (symlinks resolved) as
      ``sealbench/<path in the package>``, a ``python -m`` module's file as its path below the
      search-path folder it was found in (``pkg/mod.py``); any other file by its digest alone;
    * each word of the command (or its ``--opt=`` value) naming a covered file or folder (the
      :class:`NamedPath` records: a command word found on PATH too), each ``env:`` value and each
      ``readonly_paths``/``code_paths`` entry naming one is replaced by that file's content
      digest, or for a folder by the digest of its files' (name within the folder, digest);
      the rest of the command, every other env value, ``name``, ``endpoint`` and ``lineage`` enter
      as written.

    What it covers:

    * the command's words, split the way the shell splits them: each command word found on the
      agent's PATH (as the shell will; a script's ``#!`` interpreter too), every other word that
      names an existing file (absolute, or relative to ``base``, the working directory; also the
      value of ``--opt=value``), a folder a word names (every file in it);
    * ``python -m module``: the module's file, found without importing it; for sealbench's own
      modules (the built-in agents) only that module and the sealbench modules it imports;
    * each ``env:`` value naming an existing file or folder, as a word of the command would
      (``python3 $AGENT_SCRIPT`` with ``AGENT_SCRIPT: agents/x.py``); search paths (``PATH``,
      ``PYTHONPATH``), ``HOME``, ``TMPDIR`` and ``XDG_*`` aside;
    * every file under ``readonly_paths`` and ``code_paths`` (symlinks: their target's bytes).

    Words with ``$`` are expanded by the shell at run time and are not resolved; they are listed
    in ``skipped`` with anything else that could not be covered. Build artefacts (``__pycache__``,
    ``*.pyc``) and ``.git`` folders are not code. In ``files`` (name -> digest, for display:
    ``sealbench show``, the card's covered files) and ``covered`` files are named relative to
    ``base`` when inside it, absolute otherwise; those names are not part of the fingerprint.
    Hashes go through a stat cache (``results/.sealbench/agent-hashcache.json`` when that
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
    cov.add_env(spec.get("env") or {})
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
    env = {k: cov.content_id(cov.env_named[k]) if k in cov.env_named else v for k, v in (spec.get("env") or {}).items()}
    paths = {field: [cov.content_id(cov.paths_named[(field, p)]) if (field, p) in cov.paths_named else p
                     for p in spec.get(field) or []] for field in ("readonly_paths", "code_paths")}
    ident = {"name": name, "command": cov.location_free_command(spec["command"]), "env": env,
             "endpoint": spec.get("endpoint"), **paths, "lineage": lineage,
             "files": [list(f) for f in cov.location_free_files()]}
    return {"fingerprint": sha256_text(canonical_json(ident))[:16], "lineage": lineage, "command": spec["command"],
            "files": files, "covered": cov.covered, "skipped": cov.skipped}


def agent_fingerprint(name: str, spec: Mapping[str, Any]) -> str:
    """The agent's fingerprint as seen from the current working directory (:func:`agent_identity`)."""
    return agent_identity(name, spec)["fingerprint"]
