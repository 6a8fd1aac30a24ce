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

A requirements file must be buildable from its text alone: editable lines, local paths, option
lines (``--index-url``, ``-r``, …) and ``${VARIABLES}`` are refused, naming the file and line.
Where packages come from is the user's installer configuration (``PIP_*``/``UV_*`` variables,
e.g. ``PIP_FIND_LINKS`` + ``PIP_NO_INDEX`` for an offline machine), passed through untouched.
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
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

from .core import PackError, SealbenchError, canonical_json, python_bin_dir, read_json, sha256_text, write_json

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


class EnvironmentBuildError(SealbenchError):
    """An environment could not be built: names the requirements file and the installer's output."""


def pytest_pin() -> str:
    """The pytest every environment gets unless its requirements name pytest: the harness's."""
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


def requirements_problems(text: str, source: Path) -> list[str]:
    """Why ``text`` (the file ``source``) is not an environment buildable from its text alone."""
    from packaging.requirements import InvalidRequirement, Requirement

    problems = []
    for n, line in _logical_lines(text):
        where = f"{source}: line {n} ({line!r})"
        if line.startswith(("-e", "--editable")):
            problems.append(f"{where}: editable installs are refused; name a released package (name==version)")
            continue
        if line.startswith("-"):
            problems.append(f"{where}: option lines are refused (an environment must be buildable from its text "
                            "alone); where packages come from is your installer's configuration (PIP_INDEX_URL, "
                            "PIP_FIND_LINKS, UV_INDEX_URL, …)")
            continue
        if "${" in line:
            problems.append(f"{where}: environment variables are refused; write the value")
            continue
        words = line.split()
        extra = [w for w in words[1:] if w.startswith("-")]
        head = line.split(" --", 1)[0].strip() if extra else line
        bad_opts = [w for w in extra if not w.startswith(_LINE_OPTIONS)]
        if bad_opts:
            problems.append(f"{where}: option {bad_opts[0]} is refused (only --hash may follow a requirement)")
            continue
        if head.startswith((".", "/", "~", "file:")) or re.search(r"\.(whl|tar\.gz|zip)$", head) and "://" not in head:
            problems.append(f"{where}: local paths are refused; name a released package (name==version)")
            continue
        try:
            req = Requirement(head)
        except InvalidRequirement as exc:
            problems.append(f"{where}: not a requirement ({exc})")
            continue
        if req.url and req.url.startswith("file:"):
            problems.append(f"{where}: local paths are refused; name a released package (name==version)")
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
                "python": self.python_version, "lock": self.lock.splitlines()}


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


def _run(argv: list[str], spec: EnvSpec, what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, env=_installer_env(), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise EnvironmentBuildError(f"{spec.source}: building environment {spec.name!r} failed ({what}, exit "
                                    f"{proc.returncode}); check the requirements and where your installer finds "
                                    f"packages (PIP_*/UV_* variables). Installer's last lines:\n{tail}")
    return proc.stdout


_LOCK_SCRIPT = ("import importlib.metadata as m, sys\n"
                "names = {}\n"
                "for d in m.distributions():\n"
                "    n = d.metadata['Name']\n"
                "    if n: names.setdefault(n.lower(), f'{n}=={d.version}')\n"
                "print('.'.join(map(str, sys.version_info[:3])))\n"
                "print('\\n'.join(sorted(names.values(), key=str.lower)))\n")


def _install(spec: EnvSpec, folder: Path) -> tuple[str, str, str]:
    """Make the venv in ``folder`` and install; returns (installer, python version, lock)."""
    py = folder / "bin" / "python"
    _run([sys.executable, "-m", "venv", "--without-pip", str(folder)], spec, "venv")
    req = folder / "requirements.in"
    req.write_text(spec.install_lines, encoding="utf-8")
    uv = _uv()
    if uv:
        version = _run([uv, "--version"], spec, "uv --version").split()
        installer = " ".join(version[:2])
        _run([uv, "pip", "install", "--python", str(py), "-r", str(req)], spec, installer)
    else:
        installer = f"pip {metadata.version('pip')}"
        _run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-input", "-r", str(req)], spec,
             installer)
    out = _run([str(py), "-I", "-c", _LOCK_SCRIPT], spec, "reading what was installed").splitlines()
    return installer, out[0].strip(), "\n".join(out[1:]).strip() + "\n"


def build_env(spec: EnvSpec, root: Path) -> BuiltEnv:
    """Build ``spec`` under ``root`` (``<root>/<spec digest>/``), or return the one built.

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
        try:
            installer, version, lock_text = _install(spec, folder)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        digest = env_digest(version, lock_text)
        (folder / "lock.txt").write_text(lock_text, encoding="utf-8")
        write_json(folder / "env.json", {"name": spec.name, "spec_digest": spec.digest, "digest": digest,
                                         "python": version, "platform": platform_tag(), "installer": installer,
                                         "requirements": spec.requirements, "source": str(spec.source),
                                         "lock": lock_text.splitlines()})
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
                    name=data["name"], python_version=data["python"], source=str(data.get("source") or ""))


# --------------------------------------------------------------------------------------------
# the build_env job (workflow/rules/environment.smk)


def pack_requirements(spec: EnvSpec, pack: Path) -> str:
    """``spec``'s requirements file relative to the pack (the job finds the pack by $SEALBENCH_PACK)."""
    return Path(spec.source).absolute().relative_to(Path(pack).absolute()).as_posix()


def main(argv: list[str] | None = None) -> int:
    import argparse

    from .paths import pack_root

    ap = argparse.ArgumentParser(prog="sealbench.environments", description="build one task test environment")
    ap.add_argument("--requirements", required=True, help="the requirements file, relative to the pack")
    ap.add_argument("--name", required=True)
    ap.add_argument("--expect", required=True, help="the spec digest planned")
    ap.add_argument("--root", type=Path, required=True, help="where environments live (results/envs)")
    args = ap.parse_args(argv)
    try:
        source = pack_root() / args.requirements
        spec = _read_requirements(source, args.name)
        if spec.digest != args.expect:
            raise SealbenchError(f"{source}: its environment digest is {spec.digest[:12]}… but the workflow was planned "
                                 f"with {args.expect[:12]}…: the file changed while the workflow ran; rerun snakemake")
        env = build_env(spec, args.root)
    except SealbenchError as exc:
        print(f"build_env: {exc}", file=sys.stderr)
        return 1
    print(f"build_env {env.name}: {env.path} ({env.installer}, python {env.python_version}, "
          f"{len(env.lock.splitlines())} packages, digest {env.digest[:12]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
