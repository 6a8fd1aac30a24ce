"""Copy-on-write workspaces: overlay layers over a sealed, read-only task copy.

A workspace is either an **overlay** (``Overlay``: read-only lower folders, lowest first, and an
upper folder that takes every write, mounted by bubblewrap inside the sandbox with
``--overlay-src``/``--overlay``; set-up costs nothing per file) or a **copy** (the old way, where
overlays cannot be mounted: no bwrap, ``sandbox: off``, a person's session whose editor works on
the host). :func:`overlay_problem` says whether overlays work here; the card records which kind
each run used.

What changed is read without git (so nothing the worker does to ``.git`` matters):

- :func:`upper_changes`: from the upper folder against the lowers. A character device 0/0 is a
  whiteout (a deletion); a folder marked opaque (xattr ``user.overlay.opaque`` or
  ``trusted.overlay.opaque``) hides everything below it in the lowers; a file copied up but equal
  in bytes and mode is no change.
- :func:`tree_changes`: from a copied tree against the lowers, by walking both.

Both give :class:`~sealbench.isolation.gitdiff.Change` lists for :func:`~sealbench.isolation.gitdiff.tree_patch`.
Paths under ``.git`` and build artefacts (``__pycache__``, ``*.pyc`` …) never count. Both walk
what the worker wrote with :func:`~sealbench.core.untrusted.walk_tree` (iterative, no link followed,
capped) and read it through the walk's open folders; a workspace past a cap (nested deeper than
``untrusted.MAX_DEPTH``, changes over :data:`MAX_PATCH_BYTES`) raises ``UntrustedTree``, which
the run records as its own ``fail``. :func:`remove_tree` is ``untrusted.remove_tree``.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.core import ARTEFACT_NAMES, ARTEFACT_SUFFIXES
from ..core.processes import registered_run
from ..core.untrusted import Folder, UntrustedTree, read_untrusted, remove_tree, walk_tree
from .gitdiff import Change, git_mode

#: The two workspace kinds (on every run row as ``workspace``, and on the card).
OVERLAY, COPY = "overlay", "copy"
_OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")


@dataclass(frozen=True)
class Overlay:
    """An overlay mounted at ``dest`` inside a sandbox: ``lowers`` lowest first; ``upper`` and
    ``work`` on the same file system (None for both: a throw-away upper, ``--tmp-overlay``)."""

    dest: Path
    lowers: tuple[Path, ...]
    upper: Path | None = None
    work: Path | None = None

    def bwrap_args(self) -> list[str]:
        args: list[str] = []
        for low in self.lowers:
            args += ["--overlay-src", str(low)]
        if self.upper is None:
            return args + ["--tmp-overlay", str(self.dest)]
        return args + ["--overlay", str(self.upper), str(self.work), str(self.dest)]


def ignored(rel: str) -> bool:
    """Paths that are never part of a patch: ``.git`` and build artefacts."""
    parts = rel.split("/")
    return parts[0] == ".git" or any(p in ARTEFACT_NAMES for p in parts) or rel.endswith(ARTEFACT_SUFFIXES)


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(fd: int) -> bool:
    """Whether the open folder ``fd`` is marked opaque."""
    for name in _OPAQUE_XATTRS:
        try:
            if os.getxattr(fd, name) == b"y":
                return True
        except OSError:
            continue
    return False


def lookup(lowers: Sequence[Path], rel: str) -> Path | None:
    """The topmost lower entry at ``rel`` (None: absent, or hidden by a whiteout above it)."""
    for low in reversed(lowers):
        p = low / rel
        try:
            st = os.lstat(p)
        except OSError:
            continue
        return None if _is_whiteout(st) else p
    return None


Version = tuple[bytes | None, int]
_ABSENT: Version = (None, 0o100644)
#: Cap on the bytes of new file contents a patch takes from a workspace (the upper folder or
#: the copy): past it the workspace cannot be taken as a patch (the run's ``fail``).
MAX_PATCH_BYTES = 1 << 30


def _version(path: Path | None) -> Version:
    """A lower's version of a path (the sealed layers: the harness's own)."""
    if path is None:
        return _ABSENT
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(path).encode("utf-8", "surrogateescape"), 0o120000
    if stat.S_ISREG(st.st_mode):
        return path.read_bytes(), git_mode(st.st_mode)
    return _ABSENT


class _Reader:
    """Versions of the entries of a folder the worker wrote, read through the walk's open
    folder (``O_NOFOLLOW``: a link is its target's bytes, never the file it names; a FIFO or
    device is nothing), with :data:`MAX_PATCH_BYTES` over all the new contents kept."""

    def __init__(self) -> None:
        self.kept = 0

    def version(self, folder: Folder, name: str, st: os.stat_result) -> Version:
        if stat.S_ISLNK(st.st_mode):
            return os.readlink(name, dir_fd=folder.fd).encode("utf-8", "surrogateescape"), 0o120000
        if stat.S_ISREG(st.st_mode):
            return read_untrusted(name, MAX_PATCH_BYTES, dir_fd=folder.fd), git_mode(st.st_mode)
        return _ABSENT

    def keep(self, change: Change) -> Change:
        self.kept += len(change.new or b"")
        if self.kept > MAX_PATCH_BYTES:
            raise UntrustedTree(f"the changed files hold more than {MAX_PATCH_BYTES} bytes")
        return change


def _is_dir(path: Path) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _lower_files(lowers: Sequence[Path], rel_dir: str) -> set[str]:
    """Every file (not folder) the merged lowers show under ``rel_dir``."""
    out: set[str] = set()
    for low in lowers:
        base = low / rel_dir if rel_dir else low
        if not _is_dir(base):
            continue
        for folder in walk_tree(base):
            for e in folder.entries:
                if e.is_dir(follow_symlinks=False):
                    continue
                rel = folder.path(e.name)
                rel = f"{rel_dir}/{rel}" if rel_dir else rel
                top = lookup(lowers, rel)
                if top is not None and (top.is_symlink() or not top.is_dir()):
                    out.add(rel)
    return out


def _change(rel: str, old_v: Version, new_v: Version) -> Change | None:
    (old, old_mode), (new, new_mode) = old_v, new_v
    if old is None and new is None:
        return None
    if old == new and (old is None or old_mode == new_mode):
        return None
    return Change(rel, old, new, old_mode if old is not None else new_mode, new_mode if new is not None else old_mode)


def _files(folder, present: set[str] | None = None):
    """``(rel, entry, stat)`` of each entry of a walked ``folder`` that is neither a folder nor
    ignored; an ignored folder is not walked into. ``present`` gets every entry's path."""
    for e in folder.entries:
        rel = folder.path(e.name)
        if present is not None:
            present.add(rel)
        st = e.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode):
            if ignored(rel):
                folder.skip.add(e.name)
            continue
        if ignored(rel):
            continue
        yield rel, e, st


def upper_changes(upper: Path, lowers: Sequence[Path]) -> list[Change]:
    """What the upper folder of an overlay changes over its ``lowers`` (see module docstring).
    Raises :class:`~sealbench.core.untrusted.UntrustedTree` or ``UntrustedFile`` (the reason in
    words) when the upper folder cannot be read within the caps."""
    upper = Path(upper)
    changes: dict[str, Change] = {}
    deleted: set[str] = set()
    present: set[str] = set()     # every entry of the upper folder (whiteouts too)
    opaque: list[str] = []
    reader = _Reader()
    for folder in walk_tree(upper):
        if folder.rel and _opaque(folder.fd):
            # the folder was deleted and made again: whatever the lowers had below it is gone
            opaque.append(folder.rel)
        for rel, e, st in _files(folder, present):
            if _is_whiteout(st):
                low = lookup(lowers, rel)
                if low is not None and _is_dir(low):
                    deleted |= {f for f in _lower_files(lowers, rel)}
                else:
                    deleted.add(rel)
                continue
            low = lookup(lowers, rel)
            if low is not None and _is_dir(low):
                deleted |= _lower_files(lowers, rel)   # a folder replaced by a file
                low = None
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                c = _change(rel, _version(low), reader.version(folder, e.name, st))
                if c is not None:
                    changes[rel] = reader.keep(c)
    for rd in opaque:
        deleted |= {f for f in _lower_files(lowers, rd) if f not in present}
    for rel in deleted:
        if rel in changes or ignored(rel):
            continue
        c = _change(rel, _version(lookup(lowers, rel)), _ABSENT)
        if c is not None:
            changes[rel] = c
    return list(changes.values())


def tree_changes(root: Path, lowers: Sequence[Path]) -> list[Change]:
    """What a copied tree at ``root`` changes over the merged ``lowers`` it was copied from.
    Raises as :func:`upper_changes` does."""
    before = {f for f in _lower_files(lowers, "") if not ignored(f)}
    now: set[str] = set()
    changes = []
    reader = _Reader()
    for folder in walk_tree(Path(root)):
        for rel, e, st in _files(folder):
            now.add(rel)
            old = _version(lookup(lowers, rel)) if rel in before else _ABSENT
            c = _change(rel, old, reader.version(folder, e.name, st))
            if c is not None:
                changes.append(reader.keep(c))
    for rel in sorted(before - now):
        c = _change(rel, _version(lookup(lowers, rel)), _ABSENT)
        if c is not None:
            changes.append(c)
    return sorted(changes, key=lambda c: c.path)


def workspace_kind(level: str) -> str:
    """``overlay`` for a run in the bwrap sandbox where overlays work, else ``copy``;
    ``SEALBENCH_WORKSPACE=copy`` asks for copies (both give the same patch)."""
    if level != "bwrap" or os.environ.get("SEALBENCH_WORKSPACE", "").strip().lower() == COPY:
        return COPY
    return OVERLAY if overlay_problem(os.environ.get("SEALBENCH_TMPDIR") or None) is None else COPY


@functools.cache
def overlay_problem(base: str | None = None) -> str | None:
    """None when bubblewrap can mount an overlay here (and writes land in the upper folder,
    leaving the lower unchanged); else why not, in words. ``base``: where workspaces are made
    (``$SEALBENCH_TMPDIR``; None: the system temp folder), since the upper folder's file system
    must support overlays."""
    from .sandbox import Sandbox, bwrap_problem

    problem = bwrap_problem()
    if problem:
        return problem
    tmp = Path(tempfile.mkdtemp(prefix="sealbench-overlay-probe-", dir=base))
    try:
        for d in ("low", "mid", "up", "work", "dest"):
            (tmp / d).mkdir()
        (tmp / "low" / "f").write_bytes(b"lower\n")
        (tmp / "low" / "gone").write_bytes(b"hidden by a whiteout\n")
        try:
            os.mknod(tmp / "mid" / "gone", 0o600 | stat.S_IFCHR, os.makedev(0, 0))
        except OSError as exc:
            return f"an overlay whiteout cannot be made here ({exc}); Linux 5.8 or newer allows it"
        ov = Overlay(tmp / "dest", (tmp / "low", tmp / "mid"), tmp / "up", tmp / "work")
        box = Sandbox(level="bwrap", readable=(), hidden=(), overlays=(ov,))
        argv = box.wrap(["/bin/sh", "-c", "test ! -e gone && echo upper > f && cat f"], ov.dest)
        try:
            proc = registered_run(argv, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap could not mount an overlay: {exc}"
        if proc.returncode != 0 or proc.stdout != b"upper\n":
            return "bwrap could not mount an overlay here: " + proc.stderr.decode("utf-8", "replace").strip()[:300]
        if (tmp / "low" / "f").read_bytes() != b"lower\n" or (tmp / "up" / "f").read_bytes() != b"upper\n":
            return "an overlay mounted here did not keep its writes in the upper folder"
        return None
    finally:
        remove_tree(tmp)


def sparse_copy(lowers: Sequence[Path], rels: Iterable[str], dest: Path) -> None:
    """Copy only ``rels`` (files of the merged lowers that exist) into ``dest``, keeping modes."""
    for rel in rels:
        src = lookup(lowers, rel)
        if src is None or not src.is_file() or src.is_symlink():
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
        os.chmod(out, (os.stat(src).st_mode & 0o777) | 0o600)
