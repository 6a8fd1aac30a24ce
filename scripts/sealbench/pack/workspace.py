"""Workspaces and their patches: the worker's view of a task and the diff taken from it.

- :func:`make_workspace` builds the worker's workspace (docs/contract.md §1): ``repo/`` with
  ``visible_tests/`` inside (with ``tests_layout: "repo"``, its files at their repository
  paths), a git repository with exactly one commit. It starts from read-only *layers*
  (:func:`base_layers`: the sealed ``repo/`` and a base layer holding ``.git`` and the visible
  tests, built once per sealed task) and is either an **overlay** over them (no copy: writes go
  to an upper folder; mounted by the sandbox) or a **copy** of them (:mod:`sealbench.isolation.layers`).
- :func:`workspace_patch` is the diff of the workspace against those layers, taken from the
  upper folder or the copy without git (:mod:`sealbench.isolation.gitdiff`), so whatever the worker does
  to ``.git`` changes nothing; build artefacts never enter it.
Commands run in them through :mod:`sealbench.core.processes`; scoring a patch is :mod:`sealbench.scoring.scoring`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.core import ARTEFACT_NAMES, ARTEFACT_SUFFIXES
from ..core.untrusted import walk_tree
from ..isolation.gitdiff import Change, tree_patch
from ..isolation.layers import COPY, OVERLAY, Overlay, remove_tree, tree_changes, upper_changes
from .task_layout import test_trees

#: Fixed identity and date: the same snapshot always gets the same commit id.
GIT_ENV = {
    "GIT_AUTHOR_NAME": "sealbench",
    "GIT_AUTHOR_EMAIL": "sealbench@localhost",
    "GIT_COMMITTER_NAME": "sealbench",
    "GIT_COMMITTER_EMAIL": "sealbench@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_TERMINAL_PROMPT": "0",
}
GIT_OPTS = ["-c", "core.hooksPath=/dev/null", "-c", "core.logAllRefUpdates=false",
            "-c", "core.autocrlf=false", "-c", "core.fileMode=true", "-c", "gc.auto=0",
            "-c", "core.excludesFile=/dev/null", "-c", "init.defaultBranch=main"]


def scratch_dir(prefix: str) -> Path:
    """A fresh private folder outside the project tree (``$SEALBENCH_TMPDIR`` or the system
    temp dir), so no ``pytest.ini``/``pyproject.toml``/``.git`` of the caller's tree is seen
    from a workspace."""
    base = os.environ.get("SEALBENCH_TMPDIR") or None
    return Path(tempfile.mkdtemp(prefix=f"sealbench-{prefix}-", dir=base))


class WorkspaceError(RuntimeError):
    """The harness could not build a workspace or take a patch (an infra failure)."""


def run_git(args: list[str], cwd: Path, env: Mapping[str, str] | None = None,
         input_bytes: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update(GIT_ENV)
    full_env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd).resolve().parent)
    if env:
        full_env.update(env)
    proc = subprocess.run(["git", *GIT_OPTS, *args], cwd=cwd, env=full_env, input=input_bytes,
                          capture_output=True)
    if check and proc.returncode != 0:
        raise WorkspaceError(
            f"git {' '.join(args)} failed in {cwd} (exit {proc.returncode}): "
            f"{proc.stderr.decode('utf-8', 'replace').strip()}"
        )
    return proc


def copy_tree(src: Path, dst: Path) -> None:
    """Copy a folder of plain files; the copy is writable by the owner whatever the source modes.

    Iterative and capped (:func:`~sealbench.core.untrusted.walk_tree`: it also copies the scoring
    workspace out of a tree a patch made): no link is followed and links, FIFOs and devices are
    left out; build artefacts are left out; a tree past the caps raises ``UntrustedTree``."""
    dst = Path(dst)
    dst.mkdir(parents=True, exist_ok=True)
    os.chmod(dst, 0o755)
    for folder in walk_tree(src):
        out = dst / folder.rel if folder.rel else dst
        for e in folder.entries:
            if e.name in ARTEFACT_NAMES:
                folder.skip.add(e.name)
                continue
            target = out / e.name
            if e.is_dir(follow_symlinks=False):
                target.mkdir(exist_ok=True)
                os.chmod(target, 0o755)
            elif e.is_file(follow_symlinks=False):
                fd = os.open(e.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder.fd)
                with os.fdopen(fd, "rb") as fin, open(target, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
                os.chmod(target, (e.stat(follow_symlinks=False).st_mode & 0o777) | 0o600)


@dataclass(frozen=True)
class Workspace:
    """The worker's workspace. ``root`` is its folder (the agent's cwd); ``lowers`` the sealed
    folders it starts from, lowest first (``repo/`` and the base layer: ``.git`` and the visible
    tests). ``kind`` is ``overlay`` (``root`` exists only inside a sandbox that mounts
    :meth:`overlay`; writes land in ``upper``) or ``copy`` (``root`` is a real copy)."""

    root: Path
    lowers: tuple[Path, ...]
    base_commit: str
    kind: str = COPY
    upper: Path | None = None
    work: Path | None = None

    def overlay(self) -> Overlay:
        """The mount a sandbox needs for an overlay workspace (``Sandbox.with_overlay``)."""
        if self.kind != OVERLAY or self.upper is None:
            raise WorkspaceError(f"{self.root}: a {self.kind} workspace has no overlay")
        return Overlay(self.root, self.lowers, self.upper, self.work)

    def view(self, dest: Path) -> Overlay:
        """A throw-away overlay of the workspace as it stands now (its upper folder as one more
        read-only lower) at ``dest``: how the harness runs the visible tests in it while the
        worker's own sandbox holds the live mount."""
        if self.kind == OVERLAY and self.upper is not None:
            return Overlay(Path(dest), self.lowers + (self.upper,))
        return Overlay(Path(dest), (self.root,))

    def to_dict(self) -> dict:
        return {"root": str(self.root), "lowers": [str(p) for p in self.lowers], "base_commit": self.base_commit,
                "kind": self.kind, "upper": str(self.upper) if self.upper else None,
                "work": str(self.work) if self.work else None}

    @classmethod
    def from_dict(cls, d: Mapping) -> Workspace:
        return cls(Path(d["root"]), tuple(Path(p) for p in d["lowers"]), d["base_commit"], d.get("kind", COPY),
                   Path(d["upper"]) if d.get("upper") else None, Path(d["work"]) if d.get("work") else None)


def check_snapshot(sealed_task: Path) -> None:
    """A task's ``repo/`` must carry no history: a ``.git`` in it is the harness's error to
    report (the task is broken), before any control or agent uses it."""
    if os.path.lexists(Path(sealed_task) / "repo" / ".git"):
        raise WorkspaceError(f"{Path(sealed_task) / 'repo'}: contains .git; a snapshot carries no history")


def _build_layer(sealed_task: Path, meta: Mapping, layer: Path) -> None:
    """Write the base layer at ``layer``: the visible tests where the workspace has them and
    ``.git`` holding one commit of ``repo/`` plus those tests (fixed identity and date), indexed
    straight from the sealed folders (no copy of the snapshot)."""
    check_snapshot(sealed_task)
    tmp = Path(tempfile.mkdtemp(prefix=".layer-", dir=layer.parent))
    try:
        out = tmp / "layer"
        out.mkdir()
        git = {"GIT_DIR": str(out / ".git")}
        run_git(["init", "-q", "--bare", str(out / ".git")], cwd=tmp)
        run_git(["config", "core.bare", "false"], cwd=tmp, env=git)
        excludes = [f":(exclude,glob)**/{n}/**" for n in sorted(ARTEFACT_NAMES)]
        excludes += [f":(exclude,glob){n}/**" for n in sorted(ARTEFACT_NAMES)]
        excludes += [f":(exclude,glob)**/*{suf}" for suf in ARTEFACT_SUFFIXES]
        run_git(["add", "-A", "-f", "--", ".", *excludes], cwd=sealed_task / "repo",
                env={**git, "GIT_WORK_TREE": str(sealed_task / "repo")})
        for src, dst in test_trees(meta, ("visible_tests",)):
            copy_tree(sealed_task / src, out / dst)
            # the tests at their workspace place, over the repo's files (a later tree wins)
            run_git(["add", "--ignore-removal", "-f", "--", "." if dst == "." else dst, *excludes], cwd=out,
                    env={**git, "GIT_WORK_TREE": str(out)})
        run_git(["commit", "-q", "--allow-empty", "-m", "sealbench snapshot"], cwd=out, env=git)
        for dirpath, _dirs, _files in os.walk(out):
            os.chmod(dirpath, 0o755)
        try:
            os.rename(out, layer)
        except OSError:
            if not (layer / ".git").is_dir():  # not another builder's finished layer
                raise
    finally:
        remove_tree(tmp)


def _writable_files(repo: Path) -> None:
    """Sealed copies made before overlays were files of mode 0444: make them 0644 (the digest
    does not count modes), so a file the worker opens for writing can be copied up."""
    for dirpath, _dirs, files in os.walk(repo):
        for n in files:
            f = os.path.join(dirpath, n)
            st = os.lstat(f)
            if not st.st_mode & 0o200 and not os.path.islink(f):
                os.chmod(f, (st.st_mode & 0o777) | 0o200)


def base_layers(sealed_task: Path, private: Path) -> tuple[Path, ...]:
    """The read-only folders a workspace starts from, lowest first: the sealed ``repo/`` and
    the base layer (:func:`_build_layer`). A hash_pack sealed copy (``…/sealed`` beside
    ``sealed.json``) keeps one base layer for all its workspaces (``…/layer``, built once);
    any other task folder gets one in ``private``."""
    sealed_task = Path(sealed_task).resolve()
    meta = json.loads((sealed_task / "meta.json").read_text("utf-8"))
    cached = sealed_task.name == "sealed" and (sealed_task.parent / "sealed.json").is_file()
    layer = sealed_task.parent / "layer" if cached else Path(private) / "layer"
    if not (layer / ".git").is_dir():
        layer.parent.mkdir(parents=True, exist_ok=True)
        if cached:
            _writable_files(sealed_task / "repo")
        _build_layer(sealed_task, meta, layer)
    return (sealed_task / "repo", layer)


def _head(layer: Path) -> str:
    return (layer / ".git" / "refs" / "heads" / "main").read_text().strip()


def make_workspace(sealed_task: Path, root: Path, private: Path, kind: str = COPY) -> Workspace:
    """The worker's workspace (see module docstring). ``private`` is a folder of the harness
    beside it (the overlay's upper and work folders; a base layer that is not cached). An
    ``overlay`` workspace costs no copy: ``root`` is an empty mount point until a sandbox mounts
    :meth:`Workspace.overlay` there; a ``copy`` copies the layers into ``root``."""
    root, private = Path(root).absolute(), Path(private).absolute()
    for p in (root, private):
        left = remove_tree(p)
        if left:
            raise WorkspaceError(f"{p}: an old workspace could not be removed: {'; '.join(left)}")
    private.mkdir(parents=True)
    lowers = base_layers(sealed_task, private)
    base = _head(lowers[-1])
    root.mkdir(parents=True)
    if kind == OVERLAY:
        upper, work = private / "upper", private / "work"
        upper.mkdir()
        work.mkdir()
        return Workspace(root, lowers, base, OVERLAY, upper, work)
    if kind != COPY:
        raise WorkspaceError(f"workspace kind {kind!r} is not one of {OVERLAY}, {COPY}")
    for low in lowers:
        copy_tree(low, root)
    return Workspace(root, lowers, base, COPY)


def workspace_changes(ws: Workspace) -> list[Change]:
    """What the worker changed (see :mod:`sealbench.isolation.layers`): never read through ``.git``."""
    if ws.kind == OVERLAY and ws.upper is not None:
        return upper_changes(ws.upper, ws.lowers)
    return tree_changes(ws.root, ws.lowers)


def workspace_patch(ws: Workspace) -> bytes:
    """The workspace's diff against its base, in git's format (:mod:`sealbench.isolation.gitdiff`).

    Everything the worker left (new, changed, deleted files, ignored or not) is included,
    except ``.git`` and build artefacts (``__pycache__``, ``.pytest_cache``, ``*.pyc`` …).
    A workspace that cannot be read, or not within the caps (``untrusted.walk_tree``: nested
    deeper than ``MAX_DEPTH``, …), raises :class:`WorkspaceError` with the reason: the worker
    left it so, and the run takes it as an empty patch (its ``fail``), never the harness's error.
    """
    try:
        return tree_patch(workspace_changes(ws))
    except (OSError, ValueError) as exc:   # ValueError: untrusted.UntrustedTree / UntrustedFile
        raise WorkspaceError(f"{ws.root}: the workspace could not be read: {exc}") from exc
