"""Workspaces and their patches: the worker's copy of a task and the diff taken from it.

- :func:`make_workspace` builds the worker's workspace (docs/contract.md §1): a copy of ``repo/`` with
  ``visible_tests/`` inside (with ``tests_layout: "repo"``, its files at their repository
  paths), a git repository with exactly one commit. The same commit is
  also kept in a *shadow* git folder outside the workspace, so the patch is computed against
  the recorded base even if the worker rewrites ``.git``.
- :func:`workspace_patch` is the diff of the workspace against its base (build artefacts
  never enter it).
Commands run in them through :mod:`sealbench.processes`; scoring a patch is :mod:`sealbench.scoring`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from .core import ARTEFACT_NAMES, ARTEFACT_SUFFIXES

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

#: Test folders of the contract: a patch's changes to them never reach the scoring workspace.
TEST_DIRS = ("visible_tests", "hidden_tests")

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
    """Copy a folder of plain files; the copy is writable by the owner whatever the source modes."""
    def _copy(s: str, d: str) -> str:
        shutil.copyfile(s, d)
        mode = os.stat(s).st_mode & 0o777
        os.chmod(d, mode | 0o600)
        return d

    shutil.copytree(src, dst, copy_function=_copy, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*ARTEFACT_NAMES))
    for dirpath, dirnames, _ in os.walk(dst):
        os.chmod(dirpath, 0o755)


def _is_artefact(relpath: str) -> bool:
    parts = relpath.split("/")
    return any(p in ARTEFACT_NAMES for p in parts) or relpath.endswith(ARTEFACT_SUFFIXES)


@dataclass(frozen=True)
class Workspace:
    root: Path          # the worker's folder (cwd of the agent)
    shadow: Path        # git dir outside the workspace holding the one base commit
    base_commit: str


def make_workspace(sealed_task: Path, root: Path, shadow: Path) -> Workspace:
    """Build the worker's workspace from a sealed task copy (see module docstring)."""
    sealed_task = Path(sealed_task).resolve()
    root, shadow = Path(root).absolute(), Path(shadow).absolute()
    for p in (root, shadow):
        if p.exists():
            shutil.rmtree(p)
    root.mkdir(parents=True)
    copy_tree(sealed_task / "repo", root)
    if (root / ".git").exists():
        raise WorkspaceError(f"{sealed_task / 'repo'}: contains .git; a snapshot carries no history")
    from .task_layout import test_trees  # (task_layout imports this module)
    meta = json.loads((sealed_task / "meta.json").read_text("utf-8"))
    for src, dst in test_trees(meta, ("visible_tests",)):
        copy_tree(sealed_task / src, root / dst)
    shadow.parent.mkdir(parents=True, exist_ok=True)
    senv = {"GIT_DIR": str(shadow), "GIT_WORK_TREE": str(root)}
    run_git(["init", "-q", "--bare", str(shadow)], cwd=shadow.parent)
    run_git(["config", "core.bare", "false"], cwd=root, env=senv)
    run_git(["add", "-A", "-f", "--", "."], cwd=root, env=senv)
    run_git(["commit", "-q", "--allow-empty", "-m", "sealbench snapshot"], cwd=root, env=senv)
    base = run_git(["rev-parse", "HEAD"], cwd=root, env=senv).stdout.decode().strip()
    # The worker's own .git: a copy of the shadow (one commit, one ref, no reflog, no remotes).
    shutil.copytree(shadow, root / ".git")
    run_git(["config", "core.bare", "false"], cwd=root)
    run_git(["reset", "-q"], cwd=root)  # populate the worker's index from HEAD
    return Workspace(root, shadow, base)


def workspace_patch(ws: Workspace) -> bytes:
    """The workspace's diff against its base commit, via the shadow git folder.

    Everything the worker left (new, changed, deleted files, ignored or not) is included,
    except ``.git`` and build artefacts (``__pycache__``, ``.pytest_cache``, ``*.pyc`` …).
    """
    env = {"GIT_DIR": str(ws.shadow), "GIT_WORK_TREE": str(ws.root),
           "GIT_INDEX_FILE": str(ws.shadow / "sealbench-index")}
    run_git(["read-tree", ws.base_commit], cwd=ws.root, env=env)
    excludes = []
    for name in sorted(ARTEFACT_NAMES):
        excludes += [f":(exclude,glob)**/{name}/**", f":(exclude,glob){name}/**"]
    excludes += [f":(exclude,glob)**/*{suf}" for suf in ARTEFACT_SUFFIXES]
    run_git(["add", "-A", "-f", "--", ".", *excludes], cwd=ws.root, env=env)
    diff = run_git(["diff", "--cached", "--binary", "--full-index", "--no-color", "--no-ext-diff",
                 "--no-renames", ws.base_commit], cwd=ws.root, env=env).stdout
    return diff
