"""The sandbox every worker command and every scoring command runs in (bubblewrap).

What a sandboxed command sees (``Sandbox.wrap``):
- the whole system read-only (``--ro-bind / /``), a fresh ``/dev``, ``/proc`` of a new PID
  namespace, a private empty ``/tmp``;
- *hidden* (an empty tmpfs laid over them): the pack, ``results/``, the project folder
  the pipeline runs from, the user's home and sealbench's scratch folder — so hidden tests,
  gold patches and other tasks are not visible;
- read-only again on top: the interpreter's prefix (so ``python`` and its packages work)
  and sealbench's own ``scripts/`` (the built-in agents), plus any ``readonly_paths`` an
  agent's config names;
- writable: only the paths given (the workspace and ``SEALBENCH_OUT`` for an agent);
- no network (``--unshare-net``: only a loopback of its own), unless an agent's config
  allows one loopback endpoint, which is then reached through a bridge (``bridge.py``);
- its own session and PID namespace, killed with the harness (``--die-with-parent``).

``mode``: ``auto`` uses bwrap where it works and otherwise runs unsandboxed with a warning;
``required`` refuses to run without it; ``off`` never sandboxes. The level actually used
(``bwrap`` or ``none``) is recorded on every run row and on the card.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Sequence

from .core import SealbenchError

MODES = ("auto", "required", "off")
SCRIPTS_DIR = Path(__file__).resolve().parents[1]


class SandboxUnavailable(SealbenchError):
    """``sandbox: required`` but bubblewrap cannot run here."""


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap works here, else why not (in words)."""
    exe = shutil.which("bwrap")
    if not exe:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        proc = subprocess.run([exe, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid",
                               "--unshare-net", "--die-with-parent", "--tmpfs", "/tmp", "true"],
                              capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        return "bwrap cannot create namespaces here: " + proc.stderr.decode("utf-8", "replace").strip()[:300]
    return None


def resolve_level(mode: str) -> str:
    """The isolation level for a configured ``sandbox`` mode: ``bwrap`` or ``none``."""
    if mode not in MODES:
        raise SealbenchError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")
    if mode == "off":
        return "none"
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if mode == "required":
        raise SandboxUnavailable(f"sandbox: required, but {problem}. Install bubblewrap or set sandbox: auto.")
    warnings.warn(f"sealbench: running UNSANDBOXED ({problem}); the gate will refuse a headline for these runs",
                  stacklevel=2)
    return "none"


def _existing(paths: Iterable[Path | str | None]) -> list[Path]:
    out = []
    for p in paths:
        if p is None:
            continue
        p = Path(p).absolute()
        if p.exists() and p not in out:
            out.append(p)
    return out


def default_hidden(extra: Iterable[Path | str | None] = ()) -> tuple[Path, ...]:
    """Folders hidden from every sandboxed command: the caller's project folder, the home
    folder, sealbench's scratch base, plus ``extra`` (the pack, results/)."""
    candidates: list[Path | str | None] = [Path.cwd(), os.environ.get("HOME"), os.environ.get("SEALBENCH_TMPDIR")]
    candidates += list(extra)
    return tuple(p for p in _existing(candidates) if p != Path("/"))


def default_readable() -> tuple[Path, ...]:
    """Read-only again on top of the hidden folders: the interpreter and sealbench's scripts."""
    return tuple(_existing([sys.prefix, sys.base_prefix, sys.exec_prefix,
                            Path(sys.executable).resolve().parent.parent, SCRIPTS_DIR]))


@dataclass(frozen=True)
class Sandbox:
    """An isolation recipe. ``level`` is ``bwrap`` (isolated) or ``none`` (plain subprocess)."""

    level: str
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = field(default_factory=default_readable)
    hidden: tuple[Path, ...] = field(default_factory=default_hidden)
    network: bool = False

    def with_writable(self, *paths: Path) -> "Sandbox":
        return replace(self, writable=self.writable + tuple(Path(p).absolute() for p in paths))

    def with_readable(self, *paths: Path) -> "Sandbox":
        return replace(self, readable=self.readable + tuple(_existing(paths)))

    def wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """The argv that runs ``argv`` in this sandbox with ``cwd`` as working folder."""
        if self.level == "none":
            return list(argv)
        exe = shutil.which("bwrap") or "bwrap"
        cmd = [exe, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try"]
        if not self.network:
            cmd.append("--unshare-net")
        cmd += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
        for h in self.hidden:
            if h.is_dir():
                cmd += ["--tmpfs", str(h)]
            elif h.exists():
                cmd += ["--ro-bind", "/dev/null", str(h)]
        for r in self.readable:
            if r.exists():
                cmd += ["--ro-bind", str(r), str(r)]
        for w in self.writable:
            w.mkdir(parents=True, exist_ok=True) if not w.exists() else None
            cmd += ["--bind", str(w), str(w)]
        cmd += ["--chdir", str(Path(cwd).absolute()), "--"]
        return cmd + list(argv)


def make_sandbox(level: str, writable: Iterable[Path] = (), hide: Iterable[Path | str | None] = (),
                 readable: Iterable[Path | str] = ()) -> Sandbox:
    """A sandbox at ``level`` with ``writable`` paths, hiding the defaults plus ``hide``."""
    return Sandbox(level=level, writable=tuple(Path(p).absolute() for p in writable),
                   readable=default_readable() + tuple(_existing(readable)), hidden=default_hidden(hide))
