"""Scoring: a patch on a pristine snapshot with the sealed tests (CONTRACTS §1).

- :func:`split_patch` / :func:`apply_patch`: a patch is applied section by section; sections
  touching the test folders are never applied (and are listed).
- :func:`score_patch` builds a scoring workspace (pristine ``repo/`` + patch, then the sealed
  ``visible_tests/`` and ``hidden_tests/``), runs both commands and classifies the outcome.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Mapping

from .core import harness_env
from .workspace import TEST_DIRS, run_git, copy_tree, run_process, scratch_dir, tail_text

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
    proc = run_git(["apply", "--binary", "--whitespace=nowarn", "-"], cwd=ws, input_bytes=body, check=False)
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
