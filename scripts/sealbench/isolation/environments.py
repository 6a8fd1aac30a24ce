"""Task test environments: what a pack declares, how it is built, and what it is.

A task's commands (``visible_command``, ``hidden_command``, the agents' visible runs) run in
the task's environment when the pack declares one (docs/contract.md §1 "Test environments"):

- ``PACK/environment/requirements.txt``: the pack's default environment;
- ``PACK/environments/<name>/requirements.txt``: a named one, picked by a task's meta.json key
  ``"environment": "<name>"``.

A task with neither runs with sealbench's own interpreter, as before.

An environment is a venv on the harness's interpreter (so the sealed-report plugin and the
sandbox's mounts keep working) with the requirements and pytest installed (pinned to the
harness's pytest unless the requirements name pytest). It is content-addressed: its folder is
``results/envs/<spec digest>/`` (python version, platform, requirements text, pytest pin), built
once; what was installed is its lock (``lock.txt``) and the environment's identity is the digest
over the python version and the lock (``env.json``). Scores depend on that digest, not on
sealbench's own venv.

A requirements file names released packages only, and must be buildable from its text alone:
direct references (``name @ URL``), bare URLs, version-control sources (``git+…``), editable
lines, local paths (``./x``, ``/x.whl``, ``file:``), option lines (``--index-url``,
``--find-links``, ``--trusted-host``, ``-r``, ``-c``, …) and ``${VARIABLES}`` are refused at
hash_pack, naming the file and line (only ``--hash`` may follow a requirement). Where packages
come from is the operator's installer configuration (``PIP_*``/``UV_*`` variables, e.g.
``UV_FIND_LINKS`` + ``UV_NO_INDEX`` for an offline machine), passed through untouched.

What a pack installs is pack-supplied code (a wheel's ``.pth``, an sdist's build), so the build
runs sandboxed (``sandbox.Sandbox`` with the host's network): only the environment's folder is
writable (bound at its own path, so the venv's paths are the same inside and out); the
interpreter, uv and the local files the installer variables name (wheel folders, ``file:``
indexes, config files, certificates) are read-only; ``/tmp`` is private (the installer's cache
lives there); the home folder, the pack and ``results/`` are absent; an unprivileged uid without
capabilities. With the sandbox off (``sandbox: off``, or ``auto`` without bwrap) it is built as
before, and ``env.json`` says so (``"sandbox": "none"``).
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.core import (
    PackError,
    SealbenchError,
    atomic_write_text,
    canonical_json,
    python_bin_dir,
    read_json,
    sha256_text,
    write_json,
)
from .sandbox import MODES as SANDBOX_MODES
from .sandbox import resolve_level

#: The pack's default environment and the folder of named ones (relative to the pack).
DEFAULT_DIR = "environment"
NAMED_DIR = "environments"
REQUIREMENTS = "requirements.txt"
#: The meta.json key naming a task's environment.
META_KEY = "environment"
DEFAULT_NAME = "default"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: per-requirement options pip accepts after a requirement on the same line (they pin, never fetch)
_LINE_OPTIONS = ("--hash",)
#: option lines, by what they do: install a path or repository in place (editable), change where
#: packages come from (the operator's installer configuration decides that, never the pack), or
#: include another file (an environment is its own text: its digest covers this file only).
#: Every other option line is refused too: none is needed to name released packages.
_EDITABLE = ("-e", "--editable")
_SOURCE_OPTIONS = ("-i", "--index-url", "--extra-index-url", "--no-index", "-f", "--find-links", "--trusted-host")
_INCLUDE_OPTIONS = ("-r", "--requirement", "-c", "--constraint")
#: version-control sources (pip's and uv's ``git+https://…`` and ``name @ git+…``)
_VCS = ("git+", "hg+", "svn+", "bzr+")
#: what pip takes for a file to install when a line ends with it (pip's is_archive_file)
_ARCHIVES = (".whl", ".tar.gz", ".tgz", ".tar.bz2", ".tbz", ".tar.xz", ".txz", ".tlz", ".tar.lz", ".tar.lzma",
             ".zip", ".tar")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_RELEASED = "name a released package (name==version); where packages come from is the operator's installer " \
            "configuration (PIP_INDEX_URL, PIP_FIND_LINKS, UV_INDEX_URL, UV_FIND_LINKS, …)"


class EnvironmentBuildError(SealbenchError):
    """An environment could not be built: names the requirements file and the installer's output."""


def pytest_pin() -> str:
    """The pytest every environment gets unless its requirements name pytest: the harness's."""
    from importlib import metadata  # here: most jobs never ask (an import of ~25 ms)

    return f"pytest=={metadata.version('pytest')}"


def platform_tag() -> str:
    return f"{sys.implementation.name}-{sysconfig.get_platform()}"


def python_version() -> str:
    return ".".join(str(n) for n in sys.version_info[:3])


# --------------------------------------------------------------------------------------------
# declaration


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each requirement line: continuations joined, comments cut."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        if not buf:
            start = n
        if raw.endswith("\\"):
            buf += raw[:-1] + " "
            continue
        line = re.sub(r"(^|\s)#.*$", "", buf + raw).strip()
        buf = ""
        if line:
            out.append((start, line))
    if buf.strip():
        out.append((start, buf.strip()))
    return out


def _option(line: str) -> str:
    """The option an option line starts with (``-ifoo`` and ``--index-url=foo`` included)."""
    if line.startswith("--"):
        m = re.match(r"--[A-Za-z0-9-]*", line)
        return m.group(0) if m else line
    return line[:2]


def _option_problem(line: str) -> str:
    opt = _option(line)
    if opt in _EDITABLE:
        return f"editable installs are refused (they install a path or repository in place); {_RELEASED}"
    if opt in _SOURCE_OPTIONS:
        return (f"option lines are refused ({opt} changes where packages come from, which is the operator's "
                "installer configuration — PIP_INDEX_URL, PIP_FIND_LINKS, UV_INDEX_URL, UV_FIND_LINKS, … — never "
                "the pack's)")
    if opt in _INCLUDE_OPTIONS:
        return (f"option lines are refused ({opt} reads other files; an environment is its own text, its digest "
                "covers this file only: write those requirements here)")
    return (f"option lines are refused ({opt}): an environment must be buildable from its text alone, and only "
            "--hash may follow a requirement")


def _source_problem(where: str) -> str | None:
    """Why a requirement's source (``where``: a bare line or the URL of ``name @ URL``) is not a
    released package, or None."""
    low = where.lower()
    if low.startswith(("file:", ".", "/", "~")):
        return f"local paths are refused; {_RELEASED}"
    if low.startswith(_VCS):
        return f"version control sources are refused (they build a repository's code); {_RELEASED}"
    if _SCHEME.match(where):
        return f"URLs are refused (the installer would fetch whatever it serves); {_RELEASED}"
    return None


def requirements_problems(text: str, source: Path) -> list[str]:
    """Why ``text`` (the file ``source``) is not an environment of released packages buildable
    from its text alone: one problem per refused line, naming the file and the line."""
    from packaging.requirements import InvalidRequirement, Requirement

    problems = []
    for n, line in _logical_lines(text):
        where = f"{source}: line {n} ({line!r})"
        if line.startswith("-"):
            problems.append(f"{where}: {_option_problem(line)}")
            continue
        if "${" in line:
            problems.append(f"{where}: environment variables are refused; write the value")
            continue
        words = line.split()
        extra = [w for w in words[1:] if w.startswith("-")]
        head = line.split(" --", 1)[0].strip() if extra else line
        bad_opts = [w for w in extra if not w.startswith(_LINE_OPTIONS)]
        if bad_opts:
            problems.append(f"{where}: option {bad_opts[0].split('=', 1)[0]} is refused (only --hash may follow a "
                            "requirement)")
            continue
        bare = _source_problem(head)
        if bare:
            problems.append(f"{where}: {bare}")
            continue
        try:
            req = Requirement(head)
        except InvalidRequirement as exc:
            problems.append(f"{where}: not a requirement ({exc})")
            continue
        if req.url:
            kind = (_source_problem(req.url) or "URLs").split(" are refused", 1)[0]
            problems.append(f"{where}: direct references (name @ URL) are refused ({kind}: the installer would "
                            f"fetch and run whatever the URL holds, not a released package); {_RELEASED}")
            continue
        if req.name.lower().endswith(_ARCHIVES):
            problems.append(f"{where}: local paths are refused (pip installs a file of that name); {_RELEASED}")
    return problems


def requirement_names(text: str) -> set[str]:
    """The normalised names of the requirements in ``text`` (valid lines only)."""
    from packaging.requirements import InvalidRequirement, Requirement

    names = set()
    for _n, line in _logical_lines(text):
        try:
            names.add(re.sub(r"[-_.]+", "-", Requirement(line.split(" --", 1)[0]).name).lower())
        except InvalidRequirement:
            continue
    return names


@dataclass(frozen=True)
class EnvSpec:
    """What a task declares: a name (``default`` or the ``environments/<name>``), the
    requirements text and the file it came from."""

    name: str
    requirements: str
    source: Path

    @property
    def digest(self) -> str:
        """sha256 over the python version, the platform, the requirements text and the pytest
        pin: the folder the environment is built in."""
        return sha256_text(canonical_json({"python": python_version(), "platform": platform_tag(),
                                           "requirements": self.requirements, "pytest": pytest_pin()}))

    @property
    def install_lines(self) -> str:
        """The requirements to install: the text, plus the harness's pytest unless it names pytest."""
        text = self.requirements if self.requirements.endswith("\n") or not self.requirements else self.requirements + "\n"
        return text if "pytest" in requirement_names(text) else text + pytest_pin() + "\n"


def env_from_requirements(text: str, source: Path, name: str = DEFAULT_NAME) -> EnvSpec:
    """An environment from a requirements text (``source`` names its file in errors)."""
    if not _NAME.match(name):
        raise PackError(f"{source}: environment name {name!r} must be letters, digits, '_', '.', '-'")
    problems = requirements_problems(text, Path(source))
    if problems:
        raise PackError("; ".join(problems))
    return EnvSpec(name=name, requirements=text, source=Path(source))


def _read_requirements(path: Path, name: str) -> EnvSpec:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 text ({exc})") from exc
    return env_from_requirements(text, path, name)


def declared_env(pack: Path, meta: Mapping[str, Any]) -> EnvSpec | None:
    """The environment a task (its ``meta``) runs in: ``environments/<meta.environment>``, else
    the pack's ``environment/``, else None (sealbench's own interpreter)."""
    pack = Path(pack)
    meta_file = pack / "tasks" / str(meta.get("id", "?")) / "meta.json"
    name = meta.get(META_KEY)
    if name is not None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise PackError(f"{meta_file}: field '{META_KEY}': {name!r} is not an environment name "
                            "(letters, digits, '_', '.', '-')")
        req = pack / NAMED_DIR / name / REQUIREMENTS
        if not req.is_file():
            known = sorted(p.parent.name for p in (pack / NAMED_DIR).glob(f"*/{REQUIREMENTS}"))
            raise PackError(f"{meta_file}: field '{META_KEY}': no environment {name!r}: {req} does not exist "
                            f"(declared: {', '.join(known) or 'none'}); add it or fix the name")
        return _read_requirements(req, name)
    default = pack / DEFAULT_DIR
    if default.exists():
        req = default / REQUIREMENTS
        if not req.is_file():
            raise PackError(f"{default}: the pack's default environment has no {REQUIREMENTS}; add one "
                            "(pip requirements format) or remove the folder")
        return _read_requirements(req, DEFAULT_NAME)
    return None


# --------------------------------------------------------------------------------------------
# build


@dataclass(frozen=True)
class BuiltEnv:
    """A built environment: its folder, interpreter, lock (``name==version`` per line, sorted),
    identity digest (python version + lock) and the installer that built it."""

    path: Path
    python: Path
    lock: str
    digest: str
    installer: str
    name: str = DEFAULT_NAME
    python_version: str = ""
    source: str = ""             #: the requirements file it was built from (as named at the build)
    #: how the install ran: ``bwrap`` (sandboxed), ``none`` (unsandboxed: ``sandbox: off``, or
    #: ``auto`` without bwrap), "" (built before sealbench recorded it)
    sandbox: str = ""

    def describe(self) -> str:
        """One phrase naming it: its name and the requirements file."""
        return f"{self.name!r}, {self.source or 'its requirements.txt'}"

    @property
    def bin_dir(self) -> Path:
        return self.python.parent

    def command_env(self) -> dict[str, str]:
        """What a task command's environment adds (``harness_env(extra=...)``): the venv's
        ``bin`` first on PATH, then the harness's, and ``VIRTUAL_ENV``."""
        rest = os.environ.get("PATH", "/usr/bin:/bin")
        return {"PATH": os.pathsep.join([str(self.bin_dir), python_bin_dir(), rest]), "VIRTUAL_ENV": str(self.path)}

    def card(self) -> dict[str, Any]:
        """What the card says of it."""
        return {"name": self.name, "digest": self.digest, "installer": self.installer,
                "python": self.python_version, "sandbox": self.sandbox, "lock": self.lock.splitlines()}


def env_digest(python: str, lock: str) -> str:
    return sha256_text(canonical_json({"python": python, "lock": lock}))


def _uv() -> str | None:
    """The uv binary: next to the interpreter, the ``uv`` package's, or on PATH."""
    here = Path(python_bin_dir()) / "uv"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    if importlib.util.find_spec("uv") is not None:
        try:
            from uv import find_uv_bin  # type: ignore[import-not-found]

            return str(find_uv_bin())
        except (ImportError, FileNotFoundError):
            pass
    return shutil.which("uv")


def _installer_env() -> dict[str, str]:
    """The installer's environment: the user's (``PIP_*``/``UV_*`` untouched) without what would
    make the harness's own packages leak into the new venv."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.setdefault("PIP_DISABLE_PIP_VERSION_CHECK", "1")
    return env


#: installer variables that may name local files or folders (wheel folders, ``file:`` indexes,
#: constraint and config files, certificates): the operator's, mounted read-only in the build's
#: sandbox. Lists are split on whitespace and commas (``UV_FIND_LINKS`` is comma-separated).
INSTALLER_PATH_VARS = ("UV_FIND_LINKS", "PIP_FIND_LINKS", "UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL",
                       "UV_EXTRA_INDEX_URL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_CONSTRAINT", "PIP_CONSTRAINT",
                       "UV_OVERRIDE", "UV_BUILD_CONSTRAINT", "UV_CONFIG_FILE", "PIP_CONFIG_FILE", "PIP_CERT",
                       "PIP_CLIENT_CERT", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NETRC")
#: name lookups with the host's network: followed when a symlink leads out of /etc
NETWORK_FILES = ("/etc/resolv.conf", "/etc/hosts")


def _local_paths(env: Mapping[str, str]) -> tuple[dict[str, str], list[Path]]:
    """The local files and folders the installer variables name, and ``env`` with the relative
    ones made absolute (the sandboxed build runs in the environment's folder)."""
    from urllib.parse import unquote, urlparse

    out, found = dict(env), []
    for key in INSTALLER_PATH_VARS:
        if not env.get(key):
            continue
        parts = re.split(r"([\s,]+)", env[key])
        for i, token in enumerate(parts):
            if not token or re.fullmatch(r"[\s,]+", token):
                continue
            value = token.split("=", 1)[1] if key == "UV_INDEX" and re.match(r"^[\w.-]+=", token) else token
            if value.startswith("file:"):
                path = unquote(urlparse(value).path) if value.startswith("file://") else value[len("file:"):]
            elif "://" in value:
                continue
            else:
                path = value
            if path and os.path.exists(path):
                found.append(Path(os.path.abspath(path)))
                if not os.path.isabs(path) and value == token == path:
                    parts[i] = os.path.abspath(path)
        out[key] = "".join(parts)
    return out, found


def build_sandbox(folder: Path, level: str, uv: str | None, mounts: Iterable[Path] = ()) -> Any:
    """The sandbox an environment is built in (None at level ``none``): the host's network, only
    ``folder`` writable (bound at its own path), the interpreter's folders, uv and ``mounts`` (the
    installer variables' local files) read-only, a private ``/tmp``, nothing else of the host."""
    if level == "none":
        return None
    from .limits import Limits
    from .sandbox import SCRIPTS_DIR, Sandbox, default_hidden, default_readable

    readable = [p for p in default_readable() if p != SCRIPTS_DIR]
    readable += [Path(uv)] if uv else []
    readable += list(mounts)
    readable += [Path(f).resolve() for f in NETWORK_FILES if Path(f).is_symlink() and Path(f).resolve().exists()]
    return Sandbox(level=level, writable=(Path(folder).absolute(),), readable=tuple(dict.fromkeys(readable)),
                   hidden=default_hidden([Path(folder).parent]), network=True, limits=Limits())


class _Build:
    """One build's commands: each run in the build's sandbox (or not, at level ``none``)."""

    def __init__(self, spec: EnvSpec, folder: Path, level: str) -> None:
        self.spec, self.folder = spec, folder
        uv = _uv()
        self.uv = str(Path(uv).resolve()) if uv else None
        self.env, self.box = _installer_env(), None   # level none: as before, the user's variables untouched
        if level != "none":
            env, mounts = _local_paths(self.env)
            self.box = build_sandbox(folder, level, self.uv, mounts)
            self.env = self.box.adjust_env(env)      # HOME, TMPDIR: the private /tmp
            # a private cache, gone with the build: nothing a build leaves is read by another
            self.env.update(UV_CACHE_DIR="/tmp/uv-cache", PIP_CACHE_DIR="/tmp/pip-cache",
                            XDG_CACHE_HOME="/tmp/.cache", UV_LINK_MODE="copy")

    def run(self, argv: list[str], what: str) -> str:
        spec = self.spec
        if self.box is not None:
            argv = self.box.wrap(argv, self.folder)
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.env, stdin=subprocess.DEVNULL)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise EnvironmentBuildError(f"{spec.source}: building environment {spec.name!r} failed ({what}, exit "
                                        f"{proc.returncode}{', sandboxed' if self.box is not None else ''}); check "
                                        "the requirements and where your installer finds packages (PIP_*/UV_* "
                                        f"variables). Installer's last lines:\n{tail}")
        return proc.stdout


_LOCK_SCRIPT = ("import importlib.metadata as m, sys\n"
                "names = {}\n"
                "for d in m.distributions():\n"
                "    n = d.metadata['Name']\n"
                "    if n: names.setdefault(n.lower(), f'{n}=={d.version}')\n"
                "print('.'.join(map(str, sys.version_info[:3])))\n"
                "print('\\n'.join(sorted(names.values(), key=str.lower)))\n")


def _install(spec: EnvSpec, folder: Path, level: str) -> tuple[str, str, str]:
    """Make the venv in ``folder`` and install, every step at ``level`` (``bwrap``: sandboxed, the
    lock read too — starting the environment's interpreter runs its ``.pth`` files); returns
    (installer, python version, lock)."""
    build = _Build(spec, folder, level)
    py = folder / "bin" / "python"
    build.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], "venv")
    req = folder / "requirements.in"
    atomic_write_text(req, spec.install_lines)
    if build.uv:
        version = build.run([build.uv, "--version"], "uv --version").split()
        installer = " ".join(version[:2])
        # with its bytecode (pip's default, not uv's): task commands run with PYTHONDONTWRITEBYTECODE,
        # so an environment without it compiles pytest and the task's libraries at every test run
        build.run([build.uv, "pip", "install", "--compile-bytecode", "--python", str(py), "-r", str(req)], installer)
    else:
        from importlib import metadata

        installer = f"pip {metadata.version('pip')}"
        build.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-input", "-r", str(req)],
                  installer)
    out = build.run([str(py), "-I", "-c", _LOCK_SCRIPT], "reading what was installed").splitlines()
    return installer, out[0].strip(), "\n".join(out[1:]).strip() + "\n"


def build_env(spec: EnvSpec, root: Path, sandbox: str = "auto") -> BuiltEnv:
    """Build ``spec`` under ``root`` (``<root>/<spec digest>/``), or return the one built.

    ``sandbox``: the config's mode (``auto``, ``required``, ``off``); the install runs in
    :func:`build_sandbox` unless it resolves to ``none``, which ``env.json`` records.

    Built once: ``env.json`` is written last, so a folder without it (a crashed build) is never
    used but removed and built again; concurrent builders of the same digest take a lock file
    (the second finds the first's result). The venv is built in place, not renamed (a venv's
    scripts name their folder).
    """
    root = Path(root).absolute()
    folder = root / spec.digest
    if (folder / "env.json").is_file():
        return load_env(folder)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f".{spec.digest}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "env.json").is_file():
            return load_env(folder)
        if folder.exists():
            shutil.rmtree(folder)
        level = resolve_level(sandbox)
        try:
            installer, version, lock_text = _install(spec, folder, level)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        digest = env_digest(version, lock_text)
        # written by replacing (never through a link the install may have planted in its folder)
        atomic_write_text(folder / "lock.txt", lock_text)
        write_json(folder / "env.json", {"name": spec.name, "spec_digest": spec.digest, "digest": digest,
                                         "python": version, "platform": platform_tag(), "installer": installer,
                                         "requirements": spec.requirements, "source": str(spec.source),
                                         "sandbox": level, "lock": lock_text.splitlines()})
    return load_env(folder)


def load_env(path: Path) -> BuiltEnv:
    """The environment built in ``path`` (from its ``env.json``)."""
    path = Path(path).absolute()
    record = path / "env.json"
    if not record.is_file():
        raise SealbenchError(f"{record}: missing: {path} is not a built environment (a crashed build?); "
                             "rerun the pipeline to build it")
    data = read_json(record)
    missing = [k for k in ("name", "digest", "python", "installer", "lock") if k not in data]
    if missing:
        raise SealbenchError(f"{record}: missing key(s) {', '.join(missing)}; remove {path} to rebuild it")
    lock = "\n".join(data["lock"]) + "\n"
    if env_digest(data["python"], lock) != data["digest"]:
        raise SealbenchError(f"{record}: field 'digest' does not match its lock; remove {path} to rebuild it")
    py = path / "bin" / "python"
    if not py.exists():
        raise SealbenchError(f"{py}: missing: the environment in {path} is broken; remove it to rebuild it")
    return BuiltEnv(path=path, python=py, lock=lock, digest=data["digest"], installer=data["installer"],
                    name=data["name"], python_version=data["python"], source=str(data.get("source") or ""),
                    sandbox=str(data.get("sandbox") or ""))


# --------------------------------------------------------------------------------------------
# the build_env job (workflow/rules/environment.smk)


def pack_requirements(spec: EnvSpec, pack: Path) -> str:
    """``spec``'s requirements file relative to the pack (the job finds the pack by $SEALBENCH_PACK)."""
    return Path(spec.source).absolute().relative_to(Path(pack).absolute()).as_posix()


def main(argv: list[str] | None = None) -> int:
    import argparse

    from ..core.paths import pack_root

    ap = argparse.ArgumentParser(prog="sealbench.isolation.environments", description="build one task test environment")
    ap.add_argument("--requirements", required=True, help="the requirements file, relative to the pack")
    ap.add_argument("--name", required=True)
    ap.add_argument("--expect", required=True, help="the spec digest planned")
    ap.add_argument("--root", type=Path, required=True, help="where environments live (results/envs)")
    ap.add_argument("--sandbox", default="auto", choices=SANDBOX_MODES,
                    help="the config's sandbox mode: the install runs sandboxed unless it resolves to none")
    args = ap.parse_args(argv)
    try:
        source = pack_root() / args.requirements
        spec = _read_requirements(source, args.name)
        if spec.digest != args.expect:
            raise SealbenchError(f"{source}: its environment digest is {spec.digest[:12]}… but the workflow was planned "
                                 f"with {args.expect[:12]}…: the file changed while the workflow ran; rerun snakemake")
        env = build_env(spec, args.root, sandbox=args.sandbox)
    except SealbenchError as exc:
        print(f"build_env: {exc}", file=sys.stderr)
        return 1
    print(f"build_env {env.name}: {env.path} ({env.installer}, python {env.python_version}, "
          f"{len(env.lock.splitlines())} packages, digest {env.digest[:12]}, "
          f"{'built unsandboxed' if env.sandbox == 'none' else 'built sandboxed' if env.sandbox else 'built earlier'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
