"""Reading what sandboxed code could have written: regular files only, no symlink followed,
never more than a cap, and no walk that recursion or a link can break.

A sandboxed agent (or the code under test, or a patch) can leave a symlink where the harness
expects a report — to a host file it may not read, or to ``/dev/zero`` — a file of many GiB, a
FIFO, a folder of mode 000, or a folder thousands of levels deep (deeper than ``PATH_MAX``, and
than Python's recursion limit: ``os.walk``, ``shutil.rmtree``, ``copytree`` and ``rglob`` raise
``RecursionError`` on it). Everything the harness takes from, copies out of or removes in a
folder the sandbox could write goes through here:

- :func:`read_untrusted` opens with ``O_NOFOLLOW`` and checks on the open descriptor that it is
  a regular file, then reads at most ``cap`` bytes; :func:`copy_untrusted_file` copies one file
  that way and says why it would not.
- :func:`walk_tree` is the one walk: iterative (an explicit stack of folder descriptors, each
  opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY``), so no link is followed and
  no path is ever longer than a name; capped in depth (:data:`MAX_DEPTH`) and entries
  (:data:`MAX_ENTRIES`). Past a cap, or where a folder cannot be opened, it raises
  :class:`UntrustedTree` with the reason in words, or names the part in a list and leaves it out.
- :func:`copy_untrusted_tree` copies a folder that way (symlinks, FIFOs, devices and sockets,
  what is too big or too deep are skipped and named).
- :func:`remove_tree` removes a folder of any depth without recursion and without following a
  link: it takes folders apart one level below the top, moving their sub-folders up to the top
  (a rename), giving itself back permission as it goes (an overlay's ``work/work`` is mode 000).

What these refuse is the run's own ``fail`` (its reason in words), never the harness's
``infra_fail``: ``workspace.workspace_patch`` turns it into an empty patch with
``patch_error``, ``scoring.score_patch`` into a ``fail``.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

#: Cap for a small report (usage.json, stamp.json, steers.jsonl).
REPORT_CAP = 1 << 20
#: Caps for the agent's output folder when it is kept in results/.
OUT_FILE_CAP = 16 << 20
OUT_TOTAL_CAP = 64 << 20
#: Caps of every walk of a folder the sandbox wrote: how deep it may nest and how many entries
#: it may hold (a real repository with a virtualenv inside is far below both).
MAX_DEPTH = 256
MAX_ENTRIES = 1_000_000

_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 16


class UntrustedFile(ValueError):
    """The file is not something the harness reads: a symlink, not a regular file, or too big."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name} {why}")
        self.why = why


class UntrustedTree(ValueError):
    """A folder the harness walks is not something it reads: it nests deeper than
    :data:`MAX_DEPTH`, holds more than :data:`MAX_ENTRIES` entries, or a part of it cannot be
    opened (the message says which and why)."""


def _short(rel: str) -> str:
    """A relative path fit for a reason (a deep one is cut in the middle)."""
    return rel if len(rel) <= 120 else f"{rel[:60].rstrip('/')}/…/{rel[-40:].split('/', 1)[-1]}"


def _open_untrusted(path: Path | str, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """An open descriptor on the regular file at ``path`` (relative to ``dir_fd`` if given), never
    through a symlink at its last component; raises FileNotFoundError or UntrustedFile."""
    name = os.path.basename(os.fspath(path)) or os.fspath(path)
    try:
        fd = os.open(path, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as exc:
        try:
            st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            raise UntrustedFile(name, "is a symbolic link; not followed") from exc
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise UntrustedFile(name, "is not a regular file") from exc
        raise UntrustedFile(name, f"cannot be opened: {exc.strerror}") from exc
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise UntrustedFile(name, "is not a regular file")
    return fd, st


def read_untrusted(path: Path | str, cap: int = REPORT_CAP, dir_fd: int | None = None) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink) of at most ``cap`` bytes.

    Raises ``FileNotFoundError`` when there is nothing at ``path`` and :class:`UntrustedFile`
    (with the reason in words) otherwise. Parent folders are the harness's own, or ``dir_fd``
    (a folder :func:`walk_tree` opened) holds ``path``.
    """
    fd, st = _open_untrusted(path, dir_fd)
    name = os.path.basename(os.fspath(path))
    try:
        if st.st_size > cap:
            raise UntrustedFile(name, f"is {st.st_size} bytes, over the {cap}-byte cap")
        chunks, left = [], cap + 1
        while left > 0:
            b = os.read(fd, min(left, _CHUNK))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > cap:                      # grew after the stat
            raise UntrustedFile(name, f"is over the {cap}-byte cap")
        return data
    finally:
        os.close(fd)


def copy_untrusted_file(src: Path | str, dst: Path | str, cap: int) -> str | None:
    """Copy ``src`` to ``dst`` if it is a regular file (opened with ``O_NOFOLLOW``, checked on
    the open descriptor) of at most ``cap`` bytes; None when copied, else why not, in words
    (``dst`` is then not written). ``dst`` is the harness's (an existing file is replaced)."""
    name = os.path.basename(os.fspath(src))
    try:
        fd, st = _open_untrusted(src)
    except FileNotFoundError:
        return f"{name} does not exist"
    except UntrustedFile as exc:
        return str(exc)
    try:
        if st.st_size > cap:
            return f"{name} is {st.st_size} bytes, over the {cap}-byte cap"
        tmp = Path(f"{os.fspath(dst)}.part")
        total = 0
        with open(tmp, "wb") as out:
            while True:
                b = os.read(fd, _CHUNK)
                if not b:
                    break
                total += len(b)
                if total > cap:                  # grew after the stat
                    break
                out.write(b)
        if total > cap:
            tmp.unlink()
            return f"{name} is over the {cap}-byte cap"
        os.replace(tmp, dst)
        return None
    finally:
        os.close(fd)


@dataclass
class Folder:
    """One folder of a :func:`walk_tree`: ``rel`` its path below the top (``""``: the top),
    ``fd`` an open descriptor on it (valid until the walk moves on: read its files with
    ``dir_fd=fd``), ``entries`` what it holds, sorted by name (``DirEntry.stat`` and
    ``is_dir`` with ``follow_symlinks=False``). Add names of sub-folders to ``skip`` to leave
    them out of the walk."""

    rel: str
    fd: int
    depth: int
    entries: list[os.DirEntry]
    skip: set[str] = field(default_factory=set)

    def path(self, name: str) -> str:
        return f"{self.rel}/{name}" if self.rel else name


def walk_tree(root: Path | str, max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES,
              skipped: list[str] | None = None) -> Iterator[Folder]:
    """Every folder under ``root`` (itself first), top-down, once each, iteratively, following
    no link (a symlink to a folder is an entry like a file). A sub-folder nesting deeper than
    ``max_depth`` below ``root``, more than ``max_entries`` entries in all, or a folder that
    cannot be opened raise :class:`UntrustedTree` (no ``root``: ``FileNotFoundError``); with a
    ``skipped`` list, each is named there instead (``rel: why``) and left out (past
    ``max_entries`` the walk stops)."""

    def refuse(rel: str, why: str) -> None:
        if skipped is None:
            raise UntrustedTree(f"{_short(rel) or '.'}: {why}")
        skipped.append(f"{_short(rel) or '.'}: {why}")

    try:
        fd: int | None = os.open(root, _DIR_FLAGS)
    except FileNotFoundError:
        if skipped is None:
            raise
        skipped.append(". does not exist")
        return
    except OSError as exc:
        refuse("", "is a symbolic link; not followed" if os.path.islink(root)
               else f"cannot be opened ({exc.strerror})")
        return
    frames: list[tuple[int, str, int, list[str]]] = []   # (fd, rel, depth, sub-folders still to walk)
    rel, depth, count = "", 0, 0
    try:
        while True:
            if fd is not None:
                with os.scandir(fd) as it:
                    entries = sorted(it, key=lambda e: e.name)
                count += len(entries)
                if count > max_entries:
                    os.close(fd)
                    fd = None
                    refuse(rel, f"more than {max_entries} entries in all; the rest was not read")
                    return
                folder = Folder(rel, fd, depth, entries)
                frames.append((fd, rel, depth, []))
                fd = None
                yield folder
                frames[-1][3].extend(reversed([e.name for e in entries if e.name not in folder.skip
                                               and e.is_dir(follow_symlinks=False)]))
            if not frames:
                return
            parent, prel, pdepth, todo = frames[-1]
            if not todo:
                os.close(parent)
                frames.pop()
                continue
            name = todo.pop()
            rel, depth = (f"{prel}/{name}" if prel else name), pdepth + 1
            if depth > max_depth:
                refuse(rel, f"nests deeper than {max_depth} levels")
                continue
            try:
                fd = os.open(name, _DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                continue
            except OSError as exc:
                refuse(rel, f"cannot be opened ({exc.strerror})")
    finally:
        if fd is not None:
            os.close(fd)
        for f, *_ in frames:
            os.close(f)


def copy_untrusted_tree(src: Path, dst: Path, file_cap: int = OUT_FILE_CAP,
                        total_cap: int = OUT_TOTAL_CAP) -> list[str]:
    """Copy the regular files of ``src`` into ``dst`` (created), following no symlink; returns
    what was left out and why (symlinks, special files, files over ``file_cap``, anything past
    ``total_cap``, folders nested too deep or unreadable: :func:`walk_tree`). Nothing in ``src``
    makes it raise."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    total = 0
    for folder in walk_tree(src, skipped=skipped):
        for entry in folder.entries:
            rel = folder.path(entry.name)
            if entry.is_dir(follow_symlinks=False):
                continue
            if entry.is_symlink():
                skipped.append(f"{_short(rel)}: a symbolic link; not followed")
                continue
            try:
                data = read_untrusted(entry.name, file_cap, dir_fd=folder.fd)
            except FileNotFoundError:
                continue
            except UntrustedFile as exc:
                skipped.append(f"{_short(rel)}: {exc.why}")
                continue
            if total + len(data) > total_cap:
                skipped.append(f"{_short(rel)}: past the {total_cap}-byte cap of the output folder")
                continue
            target = dst / rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            except OSError as exc:
                if exc.errno != errno.ENAMETOOLONG:   # the harness's own trouble (a full disk …)
                    raise
                skipped.append(f"{_short(rel)}: its path is too long to keep")
                continue
            total += len(data)
    return skipped


def _fix_mode(name: str | Path, dir_fd: int | None) -> None:
    """Give the owner rwx on the folder ``name`` (relative to ``dir_fd``) without following a
    link, even when it cannot be opened for reading (mode 000): through an ``O_PATH`` descriptor."""
    p = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        mode = stat.S_IMODE(os.fstat(p).st_mode)
        if mode & 0o700 != 0o700:
            try:
                os.chmod(f"/proc/self/fd/{p}", mode | 0o700)
            except OSError:   # no /proc: the folder was checked a moment ago through the descriptor
                os.chmod(name, mode | 0o700, dir_fd=dir_fd)
    finally:
        os.close(p)


def _open_to_remove(name: str | Path, dir_fd: int | None) -> int:
    """A descriptor on the folder ``name``, whose owner may now list it and remove from it."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        _fix_mode(name, dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    if mode & 0o700 != 0o700:
        os.fchmod(fd, mode | 0o700)
    return fd


def remove_tree(path: Path | str) -> list[str]:
    """Remove ``path`` and everything under it, however deep, following no link; returns what
    could not be removed, in words (empty: all of it is gone; nothing there: empty too).

    No recursion and no long path: each folder just below the top is opened (``O_NOFOLLOW``),
    its files and links unlinked, its sub-folders moved up beside it (a rename, so the next
    round finds them at the top), then it is removed; until the top is empty. A folder that
    cannot be listed or changed (an overlay's root-only ``work/work``) gets owner rwx first."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            return [f"{path}: {exc.strerror}"]
        return []
    try:
        top = _open_to_remove(path, None)
    except OSError as exc:
        return [f"{path}: cannot be opened ({exc.strerror})"]
    failed: dict[str, str] = {}
    seq = 0
    try:
        while True:
            failed.clear()
            progress = False
            for name in os.listdir(top):
                try:
                    st = os.stat(name, dir_fd=top, follow_symlinks=False)
                    if not stat.S_ISDIR(st.st_mode):
                        os.unlink(name, dir_fd=top)
                        progress = True
                        continue
                    sub = _open_to_remove(name, top)
                    try:
                        for child in os.listdir(sub):
                            cst = os.stat(child, dir_fd=sub, follow_symlinks=False)
                            if not stat.S_ISDIR(cst.st_mode):
                                os.unlink(child, dir_fd=sub)
                                progress = True
                                continue
                            if cst.st_mode & 0o700 != 0o700:
                                _fix_mode(child, sub)   # moving a folder rewrites its ".."
                            while True:
                                seq += 1
                                moved = f".sealbench-rm-{seq}"
                                try:
                                    os.stat(moved, dir_fd=top, follow_symlinks=False)
                                except FileNotFoundError:
                                    break
                            os.rename(child, moved, src_dir_fd=sub, dst_dir_fd=top)
                            progress = True
                    finally:
                        os.close(sub)
                    os.rmdir(name, dir_fd=top)
                    progress = True
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    failed[name] = exc.strerror or str(exc)
            if not progress:
                break
        left = os.listdir(top)
    except OSError as exc:   # the top itself could not be listed: nothing more to try
        left, failed = ["."], {".": exc.strerror or str(exc)}
    finally:
        os.close(top)
    if left:
        first = sorted(left)[0]
        return [f"{path}: {len(left)} entr{'y' if len(left) == 1 else 'ies'} could not be removed "
                f"({_short(first)}: {failed.get(first, 'still there')})"]
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        return [f"{path}: {exc.strerror}"]
    return []
