"""The scoring workspace as an overlay: no copy of the snapshot per scored patch.

``score_patch`` applies the patch to a *sparse* folder holding only the files it touches
(``layers.sparse_copy``; the tamper rules still look at the whole sealed ``repo/``), then
:func:`as_layer` turns that folder into an overlay layer (files the patch deleted become
whiteouts). Each command then runs on :func:`scoring_overlay`: the sealed ``repo/``, the patched
layer and, with ``tests_layout: "repo"``, the sealed test trees as read-only lowers, a fresh
upper folder for whatever the command writes, and the sealed test folders and the task's
protected files mounted read-only from the sealed copy over it. What the tested code sees is the
same tree the copy path builds (tests/stages/test_overlay_workspace.py compares the two).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..isolation.layers import Overlay, lookup
from ..pack.patches import unsafe_path
from ..pack.task_layout import test_trees


def whiteout(path: Path) -> None:
    """An overlay whiteout at ``path`` (a character device 0/0: hides the lower entry). Linux
    lets any user make one (5.8 and newer); ``layers.overlay_problem`` checks it works here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(0, 0))


def as_layer(layer: Path, repo: Path, touched: Iterable[str], hide: Iterable[str] = ()) -> None:
    """Make the sparse folder ``layer`` (the patch applied to the ``touched`` files of ``repo``)
    an overlay layer over ``repo``: a touched file of ``repo`` that the patch deleted gets a
    whiteout, and so does each of ``hide`` that ``repo`` has (folders the scoring workspace
    never takes from the snapshot: ``visible_tests/``, ``hidden_tests/``)."""
    for rel in sorted(set(touched)):
        if unsafe_path(rel):
            continue
        low, mine = repo / rel, layer / rel
        if (low.is_file() and not low.is_symlink()) and not os.path.lexists(mine):
            parent = mine.parent
            while parent != layer and not os.path.lexists(parent):
                parent = parent.parent
            if parent == layer or parent.is_dir():   # under a file the patch made: already hidden
                whiteout(mine)
    for rel in hide:
        if os.path.lexists(repo / rel) and not os.path.lexists(layer / rel):
            whiteout(layer / rel)


def _top(lowers: list[Path], rel: str) -> Path | None:
    """The topmost lower file at ``rel`` (None: absent, hidden by a whiteout, or not a file)."""
    p = lookup(lowers, rel)
    return p if p is not None and stat.S_ISREG(os.lstat(p).st_mode) else None


def scoring_overlay(sealed_task: Path, meta: Mapping, test_dirs: tuple[str, ...], own: Iterable[str],
                    lowers: tuple[Path, ...], ws: Path, upper: Path,
                    work: Path) -> tuple[Overlay, list[tuple[Path, Path]]]:
    """The overlay one scoring command runs on at ``ws``, and the (sealed source, path) pairs
    mounted read-only over it: each test folder of ``test_dirs`` at its workspace folder (or as a
    lower at the root with ``tests_layout: "repo"``), and every one of the task's protected
    paths ``own`` present in this view, from the sealed copy that provides it."""
    layers = list(lowers)
    frozen: list[tuple[Path, Path]] = []
    for src, dst in test_trees(meta, test_dirs):
        if dst == ".":
            layers.append(Path(sealed_task) / src)
        else:
            frozen.append((Path(sealed_task) / src, Path(ws) / dst))
    for rel in sorted(own):
        source = _top(layers, rel)
        if source is not None:
            frozen.append((source, Path(ws) / rel))
    upper.mkdir(parents=True)
    work.mkdir(parents=True)
    return Overlay(Path(ws), tuple(layers), upper, work), frozen
