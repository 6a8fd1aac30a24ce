"""Workspaces, the process runner, patches and scoring: the shared machinery of the run stages.

- :func:`make_workspace` builds the worker's workspace (CONTRACTS §1): a copy of ``repo/`` with
  ``visible_tests/`` inside, a git repository with exactly one commit. The same commit is
  also kept in a *shadow* git folder outside the workspace, so the patch is computed against
  the recorded base even if the worker rewrites ``.git``.
- :func:`run_process` runs a shell command under a wall clock and kills its whole process
  group at the time box.
- :func:`workspace_patch` is the diff of the workspace against its base (build artefacts
  never enter it).
- :func:`score_patch` builds a scoring workspace (pristine ``repo/`` + patch, then the sealed
  ``visible_tests/`` and ``hidden_tests/``), runs both commands and classifies the outcome.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from .core import ARTEFACT_NAMES, ARTEFACT_SUFFIXES, harness_env

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

#: Output kept per captured stream (bytes); the rest is counted, not stored.
LOG_CAP_BYTES = 256 * 1024


def scratch_dir(prefix: str) -> Path:
    """A fresh private folder outside the project tree (``$SEALBENCH_TMPDIR`` or the system
    temp dir), so no ``pytest.ini``/``pyproject.toml``/``.git`` of the caller's tree is seen
    from a workspace."""
    base = os.environ.get("SEALBENCH_TMPDIR") or None
    return Path(tempfile.mkdtemp(prefix=f"sealbench-{prefix}-", dir=base))


class WorkspaceError(RuntimeError):
    """The harness could not build a workspace or take a patch (an infra failure)."""


def _git(args: list[str], cwd: Path, env: Mapping[str, str] | None = None,
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
    copy_tree(sealed_task / "visible_tests", root / "visible_tests")
    shadow.parent.mkdir(parents=True, exist_ok=True)
    senv = {"GIT_DIR": str(shadow), "GIT_WORK_TREE": str(root)}
    _git(["init", "-q", "--bare", str(shadow)], cwd=shadow.parent)
    _git(["config", "core.bare", "false"], cwd=root, env=senv)
    _git(["add", "-A", "-f", "--", "."], cwd=root, env=senv)
    _git(["commit", "-q", "--allow-empty", "-m", "sealbench snapshot"], cwd=root, env=senv)
    base = _git(["rev-parse", "HEAD"], cwd=root, env=senv).stdout.decode().strip()
    # The worker's own .git: a copy of the shadow (one commit, one ref, no reflog, no remotes).
    shutil.copytree(shadow, root / ".git")
    _git(["config", "core.bare", "false"], cwd=root)
    _git(["reset", "-q"], cwd=root)  # populate the worker's index from HEAD
    return Workspace(root, shadow, base)


def workspace_patch(ws: Workspace) -> bytes:
    """The workspace's diff against its base commit, via the shadow git folder.

    Everything the worker left (new, changed, deleted files, ignored or not) is included,
    except ``.git`` and build artefacts (``__pycache__``, ``.pytest_cache``, ``*.pyc`` …).
    """
    env = {"GIT_DIR": str(ws.shadow), "GIT_WORK_TREE": str(ws.root),
           "GIT_INDEX_FILE": str(ws.shadow / "sealbench-index")}
    _git(["read-tree", ws.base_commit], cwd=ws.root, env=env)
    excludes = []
    for name in sorted(ARTEFACT_NAMES):
        excludes += [f":(exclude,glob)**/{name}/**", f":(exclude,glob){name}/**"]
    excludes += [f":(exclude,glob)**/*{suf}" for suf in ARTEFACT_SUFFIXES]
    _git(["add", "-A", "-f", "--", ".", *excludes], cwd=ws.root, env=env)
    diff = _git(["diff", "--cached", "--binary", "--full-index", "--no-color", "--no-ext-diff",
                 "--no-renames", ws.base_commit], cwd=ws.root, env=env).stdout
    return diff


# --------------------------------------------------------------------------------------------
# Patches

_DIFF_HEADER = re.compile(rb"^diff --git a/(.+?) b/(.+?)$", re.M)


@dataclass(frozen=True)
class FilePatch:
    old_path: str
    new_path: str
    text: bytes


def split_patch(patch: bytes) -> list[FilePatch]:
    """Split a git-style unified diff into per-file sections.

    A patch whose text has no ``diff --git`` header but does have ``---``/``+++`` lines is
    treated as one section (plain ``diff -u`` output). Raises ``ValueError`` on anything else.
    """
    if not patch.strip():
        return []
    starts = [m.start() for m in _DIFF_HEADER.finditer(patch)]
    if not starts:
        m_old = re.search(rb"^--- (?:a/)?(\S+)", patch, re.M)
        m_new = re.search(rb"^\+\+\+ (?:b/)?(\S+)", patch, re.M)
        if not (m_old and m_new):
            raise ValueError("not a unified diff: no 'diff --git' or '---'/'+++' headers")
        return [FilePatch(m_old.group(1).decode("utf-8", "replace"), m_new.group(1).decode("utf-8", "replace"), patch)]
    out = []
    bounds = starts + [len(patch)]
    for a, b in zip(bounds, bounds[1:]):
        section = patch[a:b]
        m = _DIFF_HEADER.match(section)
        assert m is not None
        out.append(FilePatch(m.group(1).decode("utf-8", "replace"), m.group(2).decode("utf-8", "replace"), section))
    return out


def unsafe_path(relpath: str) -> bool:
    p = relpath.strip()
    return p.startswith("/") or any(part == ".." for part in p.split("/")) or p.startswith(".git/") or p == ".git"


def touches_tests(relpath: str) -> bool:
    first = relpath.split("/", 1)[0]
    return first in TEST_DIRS


# --------------------------------------------------------------------------------------------
# Running commands


@dataclass
class ProcessResult:
    """How a command ended. ``end_reason`` is data: ``exit`` or ``time_box``."""

    returncode: int | None
    wall_s: float
    timed_out: bool
    end_reason: str
    stdout_bytes: int = 0
    stderr_bytes: int = 0


def _kill_group(pgid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        if sig == signal.SIGTERM:
            time.sleep(0.2)


def run_process(command: str, cwd: Path, env: Mapping[str, str], timeout_s: float,
                stdout_path: Path, stderr_path: Path) -> ProcessResult:
    """Run ``command`` with bash in its own session; at ``timeout_s`` kill its whole group.

    Standard input is ``/dev/null``; stdout/stderr go to files. Processes the command left
    behind in its group are killed when it exits too.
    """
    stdout_path.parent.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(["bash", "-c", command], cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, start_new_session=True)
        timed_out = False
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            rc = proc.wait()
        finally:
            _kill_group(proc.pid)
    wall = time.monotonic() - start
    return ProcessResult(
        returncode=rc, wall_s=round(wall, 3), timed_out=timed_out,
        end_reason="time_box" if timed_out else "exit",
        stdout_bytes=stdout_path.stat().st_size, stderr_bytes=stderr_path.stat().st_size,
    )


def tail_text(path: Path, limit: int = 4000) -> str:
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# Scoring

#: pytest's exit codes that mean the harness, not the patch, broke (internal error, usage
#: error, no tests collected).
PYTEST_INFRA_CODES = {3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}
SHELL_INFRA_CODES = {126: "command not executable", 127: "command not found (missing interpreter?)"}


@dataclass
class CommandOutcome:
    command: str
    returncode: int | None
    wall_s: float
    timed_out: bool
    infra_reason: str | None
    log_tail: str


@dataclass
class ScoreResult:
    """The verdict of scoring one patch on one task."""

    status: str                      # pass | fail | infra_fail
    visible_pass: bool | None
    hidden_pass: bool | None
    reason: str | None               # why not pass, in words
    patch_applied: bool
    dropped_test_paths: list[str] = field(default_factory=list)
    visible: CommandOutcome | None = None
    hidden: CommandOutcome | None = None

    def to_dict(self) -> dict:
        return asdict(self)


_MISSING_RUNNER = re.compile(r"No module named '?pytest'?\b|ModuleNotFoundError: No module named '?_?pytest")


def classify_exit(command: str, rc: int | None, output: str = "") -> str | None:
    """Infra reason for an exit code, or None when the code is the test outcome."""
    if rc is None:
        return "no exit code"
    if rc in SHELL_INFRA_CODES:
        return SHELL_INFRA_CODES[rc]
    if "pytest" in command and rc in PYTEST_INFRA_CODES:
        return PYTEST_INFRA_CODES[rc]
    if "pytest" in command and rc != 0 and _MISSING_RUNNER.search(output):
        return "the test runner (pytest) is not installed for this interpreter"
    return None


def _run_check(command: str, ws: Path, logdir: Path, name: str, timeout_s: float) -> CommandOutcome:
    res = run_process(command, ws, harness_env(), timeout_s, logdir / f"{name}.stdout", logdir / f"{name}.stderr")
    tail = tail_text(logdir / f"{name}.stdout") + tail_text(logdir / f"{name}.stderr", 2000)
    infra = None if res.timed_out else classify_exit(command, res.returncode, tail)
    return CommandOutcome(command, res.returncode, res.wall_s, res.timed_out, infra, tail)


def apply_patch(ws: Path, patch: bytes) -> tuple[bool, str, list[str]]:
    """Apply ``patch`` to ``ws`` (not a git repository) except its test-folder sections.

    Returns (applied, message, dropped test paths).
    """
    try:
        sections = split_patch(patch)
    except ValueError as exc:
        return False, f"patch is malformed: {exc}", []
    dropped: list[str] = []
    keep: list[bytes] = []
    for s in sections:
        for p in {s.old_path, s.new_path}:
            if unsafe_path(p):
                return False, f"patch touches a path outside the workspace: {p!r}", []
        if touches_tests(s.old_path) or touches_tests(s.new_path):
            dropped.append(s.new_path if s.new_path != "/dev/null" else s.old_path)
        else:
            keep.append(s.text)
    body = b"".join(keep)
    if not body.strip():
        return True, "nothing to apply", sorted(set(dropped))
    proc = _git(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=ws, input_bytes=body, check=False)
    if proc.returncode != 0:
        return False, "git apply failed: " + proc.stderr.decode("utf-8", "replace").strip()[:2000], sorted(set(dropped))
    return True, "applied", sorted(set(dropped))


def score_patch(sealed_task: Path, meta: Mapping, patch: bytes, logdir: Path, timeout_s: float) -> ScoreResult:
    """Score ``patch`` on a sealed task (CONTRACTS §1 scoring workspace).

    ``pass`` needs the visible and the hidden command to exit 0. A command that cannot run
    (missing interpreter, no tests collected, pytest usage error) is ``infra_fail``, never
    ``fail``. A scoring command that exceeds ``timeout_s`` is a ``fail`` (the patch hangs).
    """
    sealed_task, logdir = Path(sealed_task).resolve(), Path(logdir).absolute()
    scratch = scratch_dir("score")
    try:
        ws = scratch / "ws"
        ws.mkdir()
        copy_tree(sealed_task / "repo", ws)
        applied, message, dropped = apply_patch(ws, patch)
        if not applied:
            return ScoreResult("fail", None, None, message, False, dropped)
        for d in TEST_DIRS:
            if (ws / d).exists():
                shutil.rmtree(ws / d)
            copy_tree(sealed_task / d, ws / d)
        visible = _run_check(meta["visible_command"], ws, logdir, "visible", timeout_s)
        hidden = _run_check(meta["hidden_command"], ws, logdir, "hidden", timeout_s)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for name, out in (("visible", visible), ("hidden", hidden)):
        if out.infra_reason:
            return ScoreResult("infra_fail", None, None, f"{name} command: {out.infra_reason} (exit {out.returncode})",
                               True, dropped, visible, hidden)
    vis_ok = visible.returncode == 0 and not visible.timed_out
    hid_ok = hidden.returncode == 0 and not hidden.timed_out
    if vis_ok and hid_ok:
        return ScoreResult("pass", True, True, None, True, dropped, visible, hidden)
    why = []
    if not vis_ok:
        why.append("visible tests " + ("timed out" if visible.timed_out else f"failed (exit {visible.returncode})"))
    if not hid_ok:
        why.append("hidden tests " + ("timed out" if hidden.timed_out else f"failed (exit {hidden.returncode})"))
    return ScoreResult("fail", vis_ok, hid_ok, "; ".join(why), True, dropped, visible, hidden)
