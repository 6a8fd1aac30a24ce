"""Applying a patch to a pristine snapshot (docs/contract.md §1).

:func:`apply_patch_details` applies a patch with ``git apply`` (to a folder that is not a git
repository) except the sections the tamper rules refuse (``tamper_rules.py``: protected paths,
refused content), each listed with its reason (:class:`PatchApplication`); paths git reads that
the headers hide get the same checks, and no symlink survives. :func:`apply_patch` returns the
same as (applied, message, protected paths).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.untrusted import UntrustedTree, walk_tree
from ..pack.patches import FilePatch, split_patch, unsafe_path
from ..pack.workspace import run_git
from .tamper_rules import _as_text, _post_apply_reason, path_rule, protected_reason, section_rule


@dataclass
class PatchApplication:
    applied: bool
    message: str
    protected: dict[str, str] = field(default_factory=dict)     # path -> why


def _read_original(ws: Path, relpath: str) -> bytes | None:
    f = ws / relpath
    try:
        return f.read_bytes() if f.is_file() and not f.is_symlink() else None
    except OSError:
        return None


def _git_paths(ws: Path, body: bytes) -> list[str] | None:
    """The paths ``git apply`` itself reads from ``body`` (None when it cannot parse it)."""
    proc = run_git(["apply", "--numstat", "-z", "-"], cwd=ws, input_bytes=body, check=False)
    if proc.returncode != 0:
        return None
    out = []
    for rec in proc.stdout.split(b"\0"):
        if rec:
            out.append(rec.split(b"\t", 2)[-1].decode("utf-8", "replace"))
    return out


def apply_patch_details(ws: Path, patch: bytes, allow_binary: bool = False,
                        task_paths: Mapping[str, str] | None = None,
                        pristine: Path | None = None) -> PatchApplication:
    """Apply ``patch`` to ``ws`` (not a git repository) except its protected sections and the
    sections refused by :func:`section_rule` / :func:`path_rule` (listed the same way).
    ``task_paths``: the task's own protected paths and why (``task_layout.protected_paths``).
    ``pristine``: the whole snapshot the rules look at, when ``ws`` holds only the files the
    patch touches (an overlay's patched layer, :func:`patch_paths`)."""
    pristine = ws if pristine is None else pristine
    try:
        sections = split_patch(patch)
    except ValueError as exc:
        return PatchApplication(False, f"patch is malformed: {exc}")
    for s in sections:
        for p in s.paths:
            if unsafe_path(p):
                return PatchApplication(False, f"patch touches a path outside the workspace: {p!r}")
    protected: dict[str, str] = {}
    keep: list[FilePatch] = []
    for s in sections:
        why = {p: protected_reason(p, _as_text(_read_original(ws, p)), s.text, task_paths) for p in s.paths}
        if s.new_path != "/dev/null":
            why[s.new_path] = (why.get(s.new_path) or path_rule(s.new_path, pristine)
                               or section_rule(s, pristine, allow_binary))
        why = {p: w for p, w in why.items() if w}
        if why:
            protected.update(why)
        else:
            keep.append(s)
    body = b"".join(s.text for s in keep)
    if not body.strip():
        return PatchApplication(True, "nothing to apply", dict(sorted(protected.items())))
    # Belt and braces: a path git itself reads from the kept sections that the parser did not
    # name gets the same checks; if it is protected, nothing of the patch is applied.
    seen = _git_paths(ws, body)
    named = {p for s in keep for p in s.paths}
    unnamed = sorted(set(seen or ()) - named)
    for p in unnamed:
        if unsafe_path(p):
            return PatchApplication(False, f"patch touches a path outside the workspace: {p!r}",
                                    dict(sorted(protected.items())))
    sneaked = {p: w for p in unnamed
               if (w := protected_reason(p, _as_text(_read_original(ws, p)), None, task_paths) or path_rule(p, pristine))}
    if sneaked:
        protected.update(sneaked)
        return PatchApplication(True, "nothing applied: git reads protected paths the patch headers hide",
                                dict(sorted(protected.items())))
    touched = sorted({p for s in keep for p in s.paths})
    before = {p: _read_original(ws, p) for p in touched
              if p.rsplit("/", 1)[-1].lower() in ("setup.cfg", "pyproject.toml")}
    proc = run_git(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=ws, input_bytes=body, check=False)
    if proc.returncode != 0:
        return PatchApplication(False, "git apply failed: " + proc.stderr.decode("utf-8", "replace").strip()[:2000],
                                dict(sorted(protected.items())))
    for p, orig in before.items():
        why = _post_apply_reason(p, _read_original(ws, p))
        if why:
            protected[p] = why
            target = ws / p
            if orig is None:
                target.unlink(missing_ok=True)
            else:
                target.write_bytes(orig)
    # Belt and braces: whatever the headers said, no symlink may come out of the patch (the
    # pristine copy has none). The walk is iterative and capped (untrusted.walk_tree): a patch
    # whose tree nests too deep is refused, the patch's fail.
    try:
        for folder in walk_tree(ws):
            for e in folder.entries:
                if e.is_symlink():
                    protected[folder.path(e.name)] = "symlink (git mode 120000) refused"
                    os.unlink(e.name, dir_fd=folder.fd)
    except UntrustedTree as exc:
        return PatchApplication(False, f"the patched tree cannot be taken: {exc}", dict(sorted(protected.items())))
    return PatchApplication(True, "applied", dict(sorted(protected.items())))


def patch_paths(ws: Path, patch: bytes) -> list[str] | None:
    """Every path ``patch`` names in its headers or that ``git apply`` reads from it: the files
    a sparse copy must hold for the patch to apply as on the whole snapshot (None: malformed)."""
    try:
        named = {p for s in split_patch(patch) for p in s.paths}
    except ValueError:
        return None
    if not patch.strip():
        return sorted(named)
    seen = _git_paths(ws, patch)
    return sorted(named | set(seen or ()))


def apply_patch(ws: Path, patch: bytes, allow_binary: bool = False,
                task_paths: Mapping[str, str] | None = None) -> tuple[bool, str, list[str]]:
    """Apply ``patch`` to ``ws`` (not a git repository) except its protected sections.

    Returns (applied, message, protected paths the patch touched). See
    :func:`apply_patch_details` for the reason per path.
    """
    res = apply_patch_details(ws, patch, allow_binary, task_paths)
    return res.applied, res.message, sorted(res.protected)
