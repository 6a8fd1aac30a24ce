"""Reading what sandboxed code could have written: regular files only, no symlink followed,
never more than a cap.

A sandboxed agent (or the code under test) can leave a symlink where the harness expects a
report — to a host file it may not read, or to ``/dev/zero`` — or a file of many GiB. Every
file the harness takes from a folder the sandbox could write goes through here:
:func:`read_untrusted` opens with ``O_NOFOLLOW`` and checks on the open descriptor that it is a
regular file, then reads at most ``cap`` bytes; :func:`copy_untrusted_tree` copies a folder
that way (symlinks, FIFOs, devices and sockets are skipped and named).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: Cap for a small report (usage.json, stamp.json, steers.jsonl).
REPORT_CAP = 1 << 20
#: Caps for the agent's output folder when it is kept in results/.
OUT_FILE_CAP = 16 << 20
OUT_TOTAL_CAP = 64 << 20


class UntrustedFile(ValueError):
    """The file is not something the harness reads: a symlink, not a regular file, or too big."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name} {why}")
        self.why = why


def read_untrusted(path: Path | str, cap: int = REPORT_CAP) -> bytes:
    """The bytes of ``path`` if it is a regular file (not a symlink) of at most ``cap`` bytes.

    Raises ``FileNotFoundError`` when there is nothing at ``path`` and :class:`UntrustedFile`
    (with the reason in words) otherwise. Parent folders are the harness's own.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise UntrustedFile(path.name, "is a symbolic link; not followed") from exc
        raise UntrustedFile(path.name, f"cannot be opened: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UntrustedFile(path.name, "is not a regular file")
        if st.st_size > cap:
            raise UntrustedFile(path.name, f"is {st.st_size} bytes, over the {cap}-byte cap")
        chunks, left = [], cap + 1
        while left > 0:
            b = os.read(fd, min(left, 1 << 16))
            if not b:
                break
            chunks.append(b)
            left -= len(b)
        data = b"".join(chunks)
        if len(data) > cap:                      # grew after the stat
            raise UntrustedFile(path.name, f"is over the {cap}-byte cap")
        return data
    finally:
        os.close(fd)


def copy_untrusted_tree(src: Path, dst: Path, file_cap: int = OUT_FILE_CAP,
                        total_cap: int = OUT_TOTAL_CAP) -> list[str]:
    """Copy the regular files of ``src`` into ``dst`` (created), following no symlink; returns
    what was left out and why (symlinks, special files, files over ``file_cap``, anything past
    ``total_cap``)."""
    src, dst = Path(src), Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel_dir = Path(dirpath).relative_to(src)
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                skipped.append(f"{rel_dir / d}: a symbolic link; not followed")
                dirnames.remove(d)
        for name in sorted(filenames):
            rel = rel_dir / name
            try:
                data = read_untrusted(Path(dirpath) / name, file_cap)
            except FileNotFoundError:
                continue
            except UntrustedFile as exc:
                skipped.append(f"{rel}: {exc.why}")
                continue
            if total + len(data) > total_cap:
                skipped.append(f"{rel}: past the {total_cap}-byte cap of the output folder")
                continue
            total += len(data)
            target = dst / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return skipped
