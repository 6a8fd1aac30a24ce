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

Both give :class:`~sealbench.gitdiff.Change` lists for :func:`~sealbench.gitdiff.tree_patch`.
Paths under ``.git`` and build artefacts (``__pycache__``, ``*.pyc`` …) never count.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from .core import ARTEFACT_NAMES, ARTEFACT_SUFFIXES
from .gitdiff import Change, git_mode
from .processes import registered_run

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


def _opaque(path: str) -> bool:
    for name in _OPAQUE_XATTRS:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
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


def _version(path: Path | None) -> tuple[bytes | None, int]:
    if path is None:
        return None, 0o100644
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return os.readlink(path).encode("utf-8", "surrogateescape"), 0o120000
    if stat.S_ISREG(st.st_mode):
        return path.read_bytes(), git_mode(st.st_mode)
    return None, 0o100644


def _lower_files(lowers: Sequence[Path], rel_dir: str) -> set[str]:
    """Every file (not folder) the merged lowers show under ``rel_dir``."""
    out: set[str] = set()
    for low in lowers:
        base = low / rel_dir if rel_dir else low
        for dirpath, dirnames, filenames in os.walk(base):
            rd = os.path.relpath(dirpath, low)
            rd = "" if rd == "." else rd
            for n in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                rel = (f"{rd}/{n}" if rd else n).replace(os.sep, "/")
                top = lookup(lowers, rel)
                if top is not None and (top.is_symlink() or not top.is_dir()):
                    out.add(rel)
    return out


def _change(rel: str, old_path: Path | None, new_path: Path | None) -> Change | None:
    old, old_mode = _version(old_path)
    new, new_mode = _version(new_path)
    if old is None and new is None:
        return None
    if old == new and (old is None or old_mode == new_mode):
        return None
    return Change(rel, old, new, old_mode if old is not None else new_mode, new_mode if new is not None else old_mode)


def upper_changes(upper: Path, lowers: Sequence[Path]) -> list[Change]:
    """What the upper folder of an overlay changes over its ``lowers`` (see module docstring)."""
    upper = Path(upper)
    changes: dict[str, Change] = {}
    deleted: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(upper):
        rd = os.path.relpath(dirpath, upper)
        rd = "" if rd == "." else rd.replace(os.sep, "/")
        if rd and ignored(rd):
            dirnames[:] = []
            continue
        if rd and _opaque(dirpath):
            # the folder was deleted and made again: whatever the lowers had below it is gone
            deleted |= {f for f in _lower_files(lowers, rd) if not os.path.lexists(upper / f)}
        keep = []
        for n in dirnames:
            full = os.path.join(dirpath, n)
            if os.path.islink(full):
                filenames.append(n)
            else:
                keep.append(n)
        dirnames[:] = keep
        for n in filenames:
            rel = f"{rd}/{n}" if rd else n
            if ignored(rel):
                continue
            full = Path(dirpath) / n
            st = os.lstat(full)
            if _is_whiteout(st):
                low = lookup(lowers, rel)
                if low is not None and os.path.isdir(low) and not os.path.islink(low):
                    deleted |= {f for f in _lower_files(lowers, rel)}
                else:
                    deleted.add(rel)
                continue
            low = lookup(lowers, rel)
            if low is not None and os.path.isdir(low) and not os.path.islink(low):
                deleted |= _lower_files(lowers, rel)   # a folder replaced by a file
                low = None
            if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                c = _change(rel, low, full)
                if c is not None:
                    changes[rel] = c
    for rel in deleted:
        if rel in changes or ignored(rel):
            continue
        c = _change(rel, lookup(lowers, rel), None)
        if c is not None:
            changes[rel] = c
    return list(changes.values())


def tree_changes(root: Path, lowers: Sequence[Path]) -> list[Change]:
    """What a copied tree at ``root`` changes over the merged ``lowers`` it was copied from."""
    root = Path(root)
    now: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rd = os.path.relpath(dirpath, root)
        rd = "" if rd == "." else rd.replace(os.sep, "/")
        if rd and ignored(rd):
            dirnames[:] = []
            continue
        for n in list(dirnames):
            if os.path.islink(os.path.join(dirpath, n)):
                filenames.append(n)
        for n in filenames:
            rel = f"{rd}/{n}" if rd else n
            if not ignored(rel):
                now.add(rel)
    before = {f for f in _lower_files(lowers, "") if not ignored(f)}
    changes = []
    for rel in sorted(now | before):
        new = root / rel if rel in now else None
        if new is not None and not (new.is_symlink() or new.is_file()):
            new = None
        c = _change(rel, lookup(lowers, rel) if rel in before else None, new)
        if c is not None:
            changes.append(c)
    return changes


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
        shutil.rmtree(tmp, ignore_errors=True)


def remove_tree(path: Path) -> None:
    """Remove a folder an overlay wrote (its ``work`` folder holds a root-only ``work/work``)."""
    for dirpath, dirnames, _ in os.walk(path):
        for d in dirnames:
            try:
                os.chmod(os.path.join(dirpath, d), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


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
