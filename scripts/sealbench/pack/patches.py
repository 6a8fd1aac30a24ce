"""Unified diffs read section by section (docs/contract.md §1).

- :class:`FilePatch`: one file's section of a patch, with every path its headers name.
- :func:`split_patch`: a git-style or plain ``diff -u`` patch (one or many files) split into
  per-file sections; hunks are read by their line counts, git's quoted names and
  ``rename``/``copy`` lines are honoured.
- :func:`unsafe_path`: a path that leads outside the workspace (absolute, ``..``, ``.git``).

What the scoring workspace refuses of a patch is ``tamper_rules.py``; applying it is
``patch_apply.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class FilePatch:
    old_path: str          # "/dev/null" for a created file
    new_path: str          # "/dev/null" for a deleted file
    text: bytes
    #: every name the section's headers mention (``diff --git``, ``---``/``+++``, rename/copy)
    names: tuple[str, ...] = ()

    @property
    def paths(self) -> list[str]:
        """Every real path the section touches (old and new name of a rename)."""
        return sorted({p for p in (self.old_path, self.new_path, *self.names) if p and p != "/dev/null"})


_HUNK = re.compile(rb"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def _unquote(token: bytes) -> tuple[str, bytes]:
    """Read one path token (git C-quoted or bare up to a tab/end); return (path, rest)."""
    token = token.lstrip(b" ")
    if token.startswith(b'"'):
        out, i = bytearray(), 1
        while i < len(token) and token[i:i + 1] != b'"':
            c = token[i:i + 1]
            if c == b"\\" and i + 1 < len(token):
                nxt = token[i + 1:i + 2]
                if nxt.isdigit():
                    out.append(int(token[i + 1:i + 4], 8) & 0xFF)
                    i += 4
                    continue
                out.append(_C_ESCAPES.get(nxt, nxt[0]))
                i += 2
                continue
            out += c
            i += 1
        return out.decode("utf-8", "replace"), token[i + 1:]
    path, _, rest = token.partition(b"\t")
    return path.rstrip(b"\r").decode("utf-8", "replace"), rest


def _strip_prefix(path: str) -> str:
    if path == "/dev/null":
        return path
    return path[2:] if path[:2] in ("a/", "b/") else path


def _header_paths(line: bytes) -> tuple[str, str]:
    """Paths of a ``diff --git`` line (used when no ---/+++ or rename lines say better)."""
    rest = line[len(b"diff --git "):].rstrip(b"\r")
    if rest.startswith(b'"'):
        old, tail = _unquote(rest)
        new, _ = _unquote(tail)
        return _strip_prefix(old), _strip_prefix(new)
    # Bare names: "a/X b/X" (same name) is split in the middle; otherwise the first " b/".
    text = rest.decode("utf-8", "replace")
    half = (len(text) - 1) // 2
    if len(text) % 2 == 1 and text[half] == " " and text[:half][2:] == text[half + 1:][2:]:
        return _strip_prefix(text[:half]), _strip_prefix(text[half + 1:])
    if ' "' in text:
        old_t, _, new_t = text.partition(' "')
        return _strip_prefix(old_t), _strip_prefix(_unquote(('"' + new_t).encode())[0])
    old_t, sep, new_t = text.partition(" b/")
    return _strip_prefix(old_t), _strip_prefix("b/" + new_t if sep else new_t)


def split_patch(patch: bytes) -> list[FilePatch]:
    """Split a unified diff (git-style or plain ``diff -u``, one or many files) into per-file
    sections.

    Hunks are read by their line counts, so a removed line that happens to start with
    ``-- `` is never taken for a file header. Git's quoted path names are decoded, and
    ``rename``/``copy`` lines are honoured. Raises ``ValueError`` on text that holds no file
    header at all.
    """
    if not patch.strip():
        return []
    lines = patch.splitlines(keepends=True)
    secs: list[dict] = []
    i, n = 0, len(lines)
    old_left = new_left = 0
    while i < n:
        line = lines[i]
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag == b"\\":                   # "\ No newline at end of file"
                i += 1
                continue
            if tag in (b" ", b"\n", b"\r"):
                old_left, new_left = old_left - 1, new_left - 1
            elif tag == b"-":
                old_left -= 1
            elif tag == b"+":
                new_left -= 1
            else:                               # hunk shorter than announced: read as header
                old_left = new_left = 0
                continue
            i += 1
            continue
        body = line.rstrip(b"\n").rstrip(b"\r")
        if body.startswith(b"diff --git "):
            ho, hn = _header_paths(body)
            secs.append({"start": i, "git": True, "hdr": (ho, hn), "old": None, "new": None, "names": [ho, hn]})
        elif body.startswith(b"--- ") and i + 1 < n and lines[i + 1].startswith(b"+++ "):
            old = _strip_prefix(_unquote(body[4:])[0])
            new = _strip_prefix(_unquote(lines[i + 1][4:].rstrip(b"\n").rstrip(b"\r"))[0])
            if not secs or secs[-1]["old"] is not None or not secs[-1]["git"]:
                secs.append({"start": i, "git": False, "hdr": None, "old": None, "new": None, "names": []})
            secs[-1]["old"], secs[-1]["new"] = old, new
            secs[-1]["names"] += [old, new]
            i += 2
            continue
        elif secs and re.match(rb"^(rename|copy) (from|to) ", body):
            kind = "old" if b" from " in body[:12] else "new"
            name = _unquote(body.split(b" ", 2)[2])[0]
            secs[-1]["names"].append(name)
            secs[-1]["r" + kind] = name
        elif secs and body.startswith(b"new file mode"):
            secs[-1]["created"] = True
        elif secs and body.startswith(b"deleted file mode"):
            secs[-1]["deleted"] = True
        else:
            m = _HUNK.match(body)
            if m and secs:
                old_left = int(m.group(1)) if m.group(1) is not None else 1
                new_left = int(m.group(2)) if m.group(2) is not None else 1
        i += 1
    if not secs:
        raise ValueError("not a unified diff: no 'diff --git' or '---'/'+++' headers")
    out = []
    bounds = [s["start"] for s in secs] + [n]
    for s, end in zip(secs, bounds[1:]):
        ho, hn = s["hdr"] or (None, None)
        old = s["old"] or s.get("rold") or ("/dev/null" if s.get("created") else ho) or "/dev/null"
        new = s["new"] or s.get("rnew") or ("/dev/null" if s.get("deleted") else hn) or "/dev/null"
        names = tuple(sorted({p for p in s["names"] if p and p != "/dev/null"}))
        out.append(FilePatch(old, new, b"".join(lines[s["start"]:end]), names))
    return out


def unsafe_path(relpath: str) -> bool:
    p = relpath.strip()
    parts = p.split("/")
    return p.startswith("/") or any(part in ("..", ".git") for part in parts)
