"""Decoyed tasks for the scoring tests (the attacks of tests/scoring/ and tests/stages/test_seal_outsider2.py).

A task's patches are scored the way ``hidden_score`` scores them: against the hidden suite the
controls decoyed (``run_dummy.run_controls``: decoy tests the gold patch fails, ``decoys.py``),
with the test ids the gold patch's runs collected. A forger that turns failures into passes
passes the decoys too (``tamper``, rule ``decoy_passed``); an honest suite is judged as plain
pytest judges it.

:func:`build` makes one such task (a test module builds its tasks once, in a module-scoped
fixture); :meth:`Decoyed.score` scores a patch on it; :func:`git_patch` / :meth:`Decoyed.calc`
make the patches; :func:`caught` is what every attack must come out as.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "scripts"))

from packgen import BUGGY, ORACLE, write_task  # noqa: E402
from sealbench.isolation import sandbox as sb  # noqa: E402
from sealbench.scoring import decoys, scoring  # noqa: E402
from sealbench.stages import run_dummy  # noqa: E402

PYTEST = "python -m pytest -q -p no:cacheprovider"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.hooksPath=/dev/null",
       "-c", "init.defaultBranch=main"]


def git_patch(repo: Path, tmp: Path, change: Callable[[Path], object]) -> bytes:
    """The ``git diff --binary`` a worker's workspace would produce after ``change(workdir)``."""
    wd = Path(tmp) / "gitwd"
    if wd.exists():
        shutil.rmtree(wd)
    shutil.copytree(repo, wd, symlinks=True)
    subprocess.run([*GIT, "init", "-q"], cwd=wd, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=wd, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "base"], cwd=wd, check=True)
    change(wd)
    subprocess.run([*GIT, "add", "-A"], cwd=wd, check=True)
    return subprocess.run([*GIT, "diff", "--cached", "--binary", "--full-index"], cwd=wd, check=True,
                          capture_output=True).stdout


def bwrap_available() -> bool:
    return sb.bwrap_problem() is None


@dataclass
class Decoyed:
    """A task whose controls ran and decoyed its hidden suite."""

    task: Path                 # the task folder (sealed layout: repo/, hidden_tests/, meta.json …)
    meta: dict
    controls: dict             # controls.json
    suite: Path                # the decoyed hidden tests
    spec: list                 # (file, decoy, twin) of each decoy
    tasks_root: Path           # the folder hidden inside the sandbox (the tasks)
    controls_path: Path        # controls.json (the decoyed suite beside it)
    hidden_command: str | None = None   # the command that runs the decoyed suite (None: the task's)

    @property
    def made(self) -> int:
        return int(self.controls["decoys"]["made"])

    def sandbox(self):
        """The scoring sandbox the pipeline uses (bubblewrap, the tasks hidden); None without bwrap."""
        return sb.make_sandbox("bwrap", hide=[self.tasks_root]) if bwrap_available() else None

    def patch(self, tmp: Path, change: Callable[[Path], object]) -> bytes:
        return git_patch(self.task / "repo", tmp, change)

    def calc(self, tmp: Path, source: str) -> bytes:
        """A patch that replaces calc.py with ``source``."""
        return self.patch(tmp, lambda wd: (wd / "calc.py").write_text(source))

    def prelude(self, tmp: Path, prelude: str, body: str = BUGGY) -> bytes:
        """A patch that puts ``prelude`` before the (still buggy) ``add``."""
        return self.calc(tmp, prelude + "\n" + body)

    def score(self, patch: bytes, tmp: Path, *, sandboxed: bool = True, timeout_s: float = 60,
              meta: Mapping | None = None, ids: bool = True, **kw) -> scoring.ScoreResult:
        """Score ``patch`` as ``hidden_score`` does: the decoyed suite, its decoys, the gold runs'
        ids and hidden test count (``ids``); in bubblewrap when it works (``sandboxed``)."""
        logs = Path(tmp) / f"logs-{len(list(Path(tmp).glob('logs-*')))}"
        if sandboxed and "sandbox" not in kw:
            kw["sandbox"] = self.sandbox()
        if ids:
            kw.setdefault("expected_ids", self.controls["oracle_ids"])
            kw.setdefault("expected_hidden", self.controls["oracle_hidden_ran"])
        if self.hidden_command and (meta is None or meta.get("hidden_command") == self.meta["hidden_command"]):
            kw.setdefault("hidden_command", self.hidden_command)
        return scoring.score_patch(self.task, dict(meta or self.meta), patch, logs, timeout_s,
                                   hidden_tests=self.suite, decoys=self.spec, **kw)

    def attack(self, patch: bytes, tmp: Path, **kw) -> scoring.ScoreResult:
        """:meth:`score` of the hidden command alone (where the decoys are): its verdict is the
        run's, no failing visible test hides a forged hidden pass (and it costs half)."""
        kw.setdefault("commands", ("hidden",))
        return self.score(patch, tmp, **kw)


def build(root: Path, tid: str = "dt", *, hidden: Mapping[str, str] | None = None,
          visible: Mapping[str, str] | None = None, repo: Mapping[str, str] | None = None,
          oracle: str | bytes = ORACLE, decoys_per_task: int = 2, **meta) -> Decoyed:
    """A packgen task (``calc.add`` computes ``a - b``; its hidden test
    ``assert add(3, 4) == 7 and add(-1, 1) == 0``), its controls run with decoys
    (``oracle_runs=2``). ``hidden``/``visible``: file name -> text replacing the task's test files;
    ``repo``: extra or replaced repo files; ``oracle``: the gold patch. Asserts the controls hold
    and made at least one decoy."""
    tasks = Path(root) / "tasks"
    t = write_task(tasks / tid / "d0", "sealed", "xs", id=tid, **meta)
    for folder, files in (("hidden_tests", hidden), ("visible_tests", visible)):
        if files is not None:
            for f in (t / folder).iterdir():
                f.unlink()
            for name, text in files.items():
                (t / folder / name).write_text(text)
    for name, text in (repo or {}).items():
        (t / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        (t / "repo" / name).write_text(text)
    (t / "oracle.patch").write_bytes(oracle.encode() if isinstance(oracle, str) else oracle)
    ctl_dir = Path(root) / "controls" / tid
    ctl = run_dummy.run_controls(t, ctl_dir, oracle_runs=2, timeout_s=60, sandbox_mode="auto",
                                 decoys_per_task=decoys_per_task)
    statuses = {(r["solver"], r["epoch"]): r["status"] for r in ctl["results"]}
    assert ctl["oracle_ok"] and not ctl["control_infra_fail"], (statuses, [r["reason"] for r in ctl["results"]])
    assert not ctl["weak_test"] and not ctl["stub_passes"], statuses
    assert ctl["decoys"]["made"] >= 1, ctl["decoys"]
    got = decoys.suite_of(ctl_dir / "controls.json")
    suite, spec, command = ((got[0], list(got[1]), None) if isinstance(got, tuple)
                            else (got.tests, list(got.spec), getattr(got, "command", None)))
    assert suite is not None and spec, ctl["decoys"]
    return Decoyed(t, json.loads((t / "meta.json").read_text()), ctl, suite, spec, tasks, ctl_dir / "controls.json",
                   command)


def caught(res: scoring.ScoreResult, want: str | None = None) -> None:
    """What every attack must come out as: not ``pass``, never ``infra_fail`` (an abstention
    would take the run out of the denominator); ``want``: exactly ``tamper`` or ``fail``."""
    assert res.status not in ("pass", "infra_fail"), (res.status, res.reason)
    if want is not None:
        assert res.status == want, (res.status, res.reason)


def tamper_by_decoy(res: scoring.ScoreResult) -> None:
    """The forgery turned failures into passes: a decoy passed (``tamper``, rule ``decoy_passed``)."""
    assert res.status == "tamper", (res.status, res.reason)
    assert "the gold patch fails passed" in (res.reason or ""), res.reason
    assert res.hidden is not None and res.hidden.report["decoys_passed"], res.hidden.report


def honest(res_gold: scoring.ScoreResult, res_bug: scoring.ScoreResult) -> None:
    """An honest suite judged as pytest judges it: the gold fix ``pass``, the bug ``fail``."""
    assert res_gold.status == "pass", res_gold.reason
    assert res_bug.status == "fail", res_bug.reason
    assert res_bug.hidden is not None and res_bug.hidden.report["decoys_passed"] == [], res_bug.hidden.report
