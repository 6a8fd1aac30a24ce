"""A patch in git's format written from two versions of each changed file, without git.

:func:`tree_patch` is what ``git diff --binary --full-index --no-renames`` prints for a list of
:class:`Change` (old and new bytes and modes of one path), sections in path order: ``index``
lines with full blob ids, ``new file``/``deleted file``/``old mode``/``new mode`` lines, unified
hunks with three lines of context and git's default function-name header, ``\\ No newline at end
of file``, git's path quoting, and ``GIT binary patch`` literals for files with a NUL byte in
their first 8,000 bytes. ``git apply`` applies it (tests/stages/test_overlay_workspace.py checks both
ways). Hunks are aligned with :mod:`difflib` (git uses Myers): where a change can be aligned in
more than one way, the two may pick different but equivalent hunks.

Workspaces take their patch with it (``workspace.workspace_patch``): from the upper layer of an
overlay or from a copied tree, never from the worker's ``.git``.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import zlib
from dataclasses import dataclass

ZERO_ID = "0" * 40
CONTEXT = 3
_BINARY_SNIFF = 8000
_QUOTE = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}


@dataclass(frozen=True)
class Change:
    """One path's two versions: ``old``/``new`` None when it did not / does not exist; modes are
    git modes (``0o100644``, ``0o100755``, ``0o120000`` for a symlink, whose bytes are its target)."""

    path: str
    old: bytes | None
    new: bytes | None
    old_mode: int = 0o100644
    new_mode: int = 0o100644


def blob_id(data: bytes) -> str:
    """git's object id of a blob with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_mode(st_mode: int) -> int:
    """The git mode of a file with this ``st_mode`` (executable by its owner: 100755)."""
    import stat

    if stat.S_ISLNK(st_mode):
        return 0o120000
    return 0o100755 if st_mode & 0o100 else 0o100644


def _quote(name: str) -> str:
    raw = name.encode("utf-8", "surrogateescape")
    if not any(b < 32 or b >= 127 or b in (34, 92) for b in raw):
        return name
    out = []
    for b in raw:
        if b in _QUOTE:
            out.append("\\" + _QUOTE[b])
        elif b < 32 or b >= 127:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def _name(prefix: str, path: str) -> str:
    return _quote(prefix + path)


def _is_binary(data: bytes | None) -> bool:
    return data is not None and b"\0" in data[:_BINARY_SNIFF]


def _binary_literal(data: bytes) -> bytes:
    packed = zlib.compress(data, 1)   # git deflates binary patches at Z_BEST_SPEED
    lines = [b"literal %d\n" % len(data)]
    for i in range(0, len(packed), 52):
        chunk = packed[i:i + 52]
        n = len(chunk)
        lines.append(bytes([ord("A") + n - 1 if n <= 26 else ord("a") + n - 27]) + base64.b85encode(chunk, pad=True) + b"\n")
    return b"".join(lines) + b"\n"


def _func_line(lines: list[bytes], before: int) -> bytes:
    """git's default hunk-header text: the last line before ``before`` that starts with a letter,
    ``_`` or ``$`` (at most 79 bytes, trailing white space removed)."""
    for i in range(before - 1, -1, -1):
        rec = lines[i]
        if rec[:1].isalpha() or rec[:1] in (b"_", b"$"):
            return rec.rstrip(b"\n")[:79].rstrip()
    return b""


def _range(start: int, count: int) -> bytes:
    if count == 1:
        return b"%d" % (start + 1)
    return b"%d,%d" % (start + 1 if count else start, count)


def _hunks(old: bytes, new: bytes) -> bytes:
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        func = _func_line(a, i1)
        head = b"@@ -" + _range(i1, i2 - i1) + b" +" + _range(j1, j2 - j1) + b" @@"
        out.append(head + (b" " + func if func else b"") + b"\n")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out += [_line(b" ", ln) for ln in a[x1:x2]]
                continue
            if tag in ("replace", "delete"):
                out += [_line(b"-", ln) for ln in a[x1:x2]]
            if tag in ("replace", "insert"):
                out += [_line(b"+", ln) for ln in b[y1:y2]]
    return b"".join(out)


def _line(mark: bytes, ln: bytes) -> bytes:
    if ln.endswith(b"\n"):
        return mark + ln
    return mark + ln + b"\n\\ No newline at end of file\n"


def section(c: Change) -> bytes:
    """The ``diff --git`` section of one change (empty when nothing changed)."""
    if c.old == c.new and (c.old is None or c.old_mode == c.new_mode):
        return b""
    a, b = _name("a/", c.path), _name("b/", c.path)
    head = [f"diff --git {a} {b}\n"]
    old_id = blob_id(c.old) if c.old is not None else ZERO_ID
    new_id = blob_id(c.new) if c.new is not None else ZERO_ID
    if c.old is None:
        head.append(f"new file mode {c.new_mode:o}\n")
    elif c.new is None:
        head.append(f"deleted file mode {c.old_mode:o}\n")
    elif c.old_mode != c.new_mode:
        head += [f"old mode {c.old_mode:o}\n", f"new mode {c.new_mode:o}\n"]
    if old_id != new_id:
        mode = f" {c.old_mode:o}" if c.old is not None and c.new is not None and c.old_mode == c.new_mode else ""
        head.append(f"index {old_id}..{new_id}{mode}\n")
    text = "".join(head).encode("utf-8", "surrogateescape")
    if old_id == new_id:
        return text
    old, new = c.old or b"", c.new or b""
    if _is_binary(c.old) or _is_binary(c.new):
        return text + b"GIT binary patch\n" + _binary_literal(new) + _binary_literal(old)
    if not old and not new:
        return text
    tab_a = "\t" if " " in c.path else ""
    minus = f"--- {a}{tab_a}\n" if c.old is not None else "--- /dev/null\n"
    plus = f"+++ {b}{tab_a}\n" if c.new is not None else "+++ /dev/null\n"
    return text + (minus + plus).encode("utf-8", "surrogateescape") + _hunks(old, new)


def tree_patch(changes: list[Change]) -> bytes:
    """The patch of ``changes``, one section per path in git's order (by path bytes)."""
    ordered = sorted(changes, key=lambda c: c.path.encode("utf-8", "surrogateescape"))
    return b"".join(section(c) for c in ordered)
