"""Scoring: a patch on a pristine snapshot with the sealed tests (docs/contract.md §1).

:func:`score_patch` builds a scoring workspace (pristine ``repo/`` + patch, then the sealed
``visible_tests/`` and ``hidden_tests/``), runs both commands under the sealed report, and
classifies the outcome (:class:`ScoreResult`). The verdict comes from the sealed report stream
and the exit code, never from the command's printed output.

Its parts, one concern each:

- ``patches.py``: a unified diff read section by section (``split_patch``);
- ``tamper_rules.py``: protected paths and refused content (``protected_reason``,
  ``path_rule``, ``section_rule``);
- ``patch_apply.py``: a patch applied except what the tamper rules refuse
  (``apply_patch_details``);
- ``similarity.py``: how close a patch is to the gold patch (``gold_similarity``);
- ``sealed_command.py``: one command run with the report plugin, and its verdict (``judge``);
- ``sealed_report.py``: the report stream and the facts it shows (``stream_facts``), where the
  packages under test were imported from (``import_outside``);
- ``verdict.py``: the one table of rules every status is decided by (``decide``);
- ``decoys.py``: the decoy tests the hidden suite carries (twins of real tests that correct
  code must fail);
- ``task_layout.py``: where the task's tests go, its own protected paths, its import paths
  and packages.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core.contract import INFRA_FAIL, PASS
from ..core.untrusted import UntrustedTree
from ..isolation.layers import COPY, OVERLAY, Overlay, lookup, remove_tree, sparse_copy, workspace_kind
from ..pack.patches import unsafe_path
from ..pack.task_layout import TEST_DIRS, import_paths, packages, protected_paths, test_trees
from ..pack.workspace import copy_tree, scratch_dir
from .patch_apply import apply_patch_details, patch_paths
from .sealed_command import CommandOutcome, _run_check, command_verdict
from .similarity import GOLD_LIKE_THRESHOLD, gold_similarity
from .verdict import Evidence, PatchEvidence, decide


@dataclass
class ScoreResult:
    """The verdict of scoring one patch on one task."""

    status: str                      # pass | fail | tamper | infra_fail
    visible_pass: bool | None
    hidden_pass: bool | None
    reason: str | None               # why not pass, in words
    patch_applied: bool
    #: protected paths the patch touched (never applied); non-empty means status ``tamper``
    #: unless the harness broke (``infra_fail``) or the patch was refused (``fail``)
    tamper_paths: list[str] = field(default_factory=list)
    visible: CommandOutcome | None = None
    hidden: CommandOutcome | None = None
    gold_similarity: float | None = None     # None: no gold patch given
    gold_like: bool | None = None
    #: where a package under test was imported from outside the scoring workspace ("pkg from
    #: path"); None: every one came from inside (or none was imported)
    import_outside: str | None = None
    #: the scoring workspace: ``overlay`` (layers over the sealed copy) or ``copy``
    workspace: str | None = None
    #: the verdict table's rule that decided the status (``verdict.RULES``)
    rule: str | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("visible", "hidden"):
            if isinstance(d.get(key), dict):
                d[key].pop("stream", None)
                d[key].pop("secret", None)
        return d

    @property
    def runner_started(self) -> bool | None:
        """Both commands' runners started (None: a command did not run)."""
        outs = [o for o in (self.visible, self.hidden) if o is not None]
        if len(outs) < 2:
            return None
        return all(o.runner_started for o in outs)


def _clear(path: Path) -> None:
    """Remove what is at ``path`` (a folder the patch or the tested code may have filled:
    :func:`~sealbench.core.untrusted.remove_tree`); what stays is the patch's ``UntrustedTree``."""
    left = remove_tree(path)
    if left:
        raise UntrustedTree("; ".join(left))


def score_patch(sealed_task: Path, meta: Mapping, patch: bytes, logdir: Path, timeout_s: float, *,
                oracle: bytes | None = None, sandbox: object | None = None,
                expected_hidden: int | None = None,
                commands: tuple[str, ...] = ("visible", "hidden"), task_check: bool = False,
                task_env: Mapping[str, str] | None = None,
                expected_ids: Mapping[str, Sequence[str]] | None = None,
                hidden_tests: Path | None = None, decoys: Sequence[tuple[str, ...]] = (),
                hidden_command: str | None = None) -> ScoreResult:
    """Score ``patch`` on a sealed task (docs/contract.md §1 scoring workspace): over an overlay
    of the sealed copy where the sandbox can mount one (:func:`scoring_overlay`), else
    on a copy; ``ScoreResult.workspace`` says which.

    The patch's protected sections (:func:`protected_reason`) are not applied; the rest is,
    then the sealed test folders are copied in and both commands run with a JUnit report
    requested through ``PYTEST_ADDOPTS``. Per command (:func:`judge`): a command that cannot
    run (missing interpreter, pytest usage error, no tests collected or run) is
    ``infra_fail``; otherwise it passes when it exits 0 and, if a JUnit report was written,
    the report shows tests ran with no failure or error, and for the hidden command at least
    ``meta["failing_tests"]`` tests ran. A command that exceeds ``timeout_s`` fails (the patch
    hangs). Status precedence: patch refused (unsafe path, malformed, does not apply) →
    ``fail``, except that a patch which also touched protected paths is ``tamper``; harness
    ``infra_fail``; ``tamper`` whenever protected paths were touched; then pass/fail.
    ``oracle`` (the gold patch) fills ``gold_similarity``/``gold_like``. ``sandbox`` (a
    :class:`~sealbench.isolation.sandbox.Sandbox`) isolates both commands: only the scoring workspace and
    the report folder are writable. ``expected_hidden`` (hidden tests the gold patch ran)
    raises the number of hidden tests that must run, so a patch cannot skip its way to a pass;
    ``expected_ids`` (``{"visible": ids, "hidden": ids}``, what the gold patch's runs collected,
    from the controls) must be exactly the tests each command collects, or the run is ``tamper``.
    ``commands`` limits the run to some of ``visible``/``hidden`` (the other is None and does
    not count; a visible-only run is how an agent's session asks "am I green?"). ``task_env``
    (:meth:`sealbench.isolation.environments.BuiltEnv.command_env`) runs both in the task's environment.

    The task's layout (``task_layout``): its test trees go where ``tests_layout`` says, its
    support files and tests at repository paths are protected (the sealed copy always wins),
    its ``import_paths`` go first on ``PYTHONPATH``, and the sealed report records where each
    of its ``packages`` was imported from. A package imported from outside the scoring
    workspace is ``tamper`` (the patch redirected what is tested), or with ``task_check`` (the
    controls, or a task whose controls already did so) ``infra_fail`` naming the package and
    path: the task's environment or ``import_paths`` is wrong.

    ``hidden_tests`` (the controls' decoyed copy of the hidden tests, ``decoys.write_suite``)
    stands for the pack's ``hidden_tests/``, and ``decoys`` ((file, decoy, twin) each,
    ``decoys.from_records``) are the decoys in it: every one must fail, and one that passes makes
    the run ``tamper`` whatever else happened (a test the gold patch fails passed);
    ``hidden_command`` (``decoys.command_for``: the task's, with the decoys' ids where it names
    tests by id) runs in place of ``meta["hidden_command"]``.

    Both commands run as plain pytest with the report plugin (``sealed_command``); see
    :func:`judge` and ``verdict.RULES``. A runner that never started is
    ``infra_fail``; a patch that adds symlinks, binaries (unless ``meta["allow_binary"]``),
    compiled extensions, bytecode or shadowing top-level modules is ``tamper``
    (:func:`section_rule`, :func:`path_rule`).
    """
    kind = (workspace_kind(getattr(sandbox, "level", "none")) if hasattr(sandbox, "with_overlay") else COPY)
    res = _score(sealed_task, meta, patch, logdir, timeout_s, oracle=oracle, sandbox=sandbox,
                 expected_hidden=expected_hidden, commands=commands, task_check=task_check, task_env=task_env,
                 overlay=kind == OVERLAY, expected_ids=expected_ids or {}, hidden_tests=hidden_tests,
                 decoys=tuple(decoys), hidden_command=hidden_command)
    res.workspace = kind
    return res


def _score(sealed_task: Path, meta: Mapping, patch: bytes, logdir: Path, timeout_s: float, *,
           oracle: bytes | None, sandbox: object | None, expected_hidden: int | None,
           commands: tuple[str, ...], task_check: bool, task_env: Mapping[str, str] | None,
           overlay: bool, expected_ids: Mapping[str, Sequence[str]], hidden_tests: Path | None = None,
           decoys: tuple[tuple[str, ...], ...] = (), hidden_command: str | None = None) -> ScoreResult:
    sealed_task, logdir = Path(sealed_task).resolve(), Path(logdir).absolute()
    # where each test folder of the pack is taken from: the sealed copy, or the decoyed hidden tests
    sources = {"visible_tests": sealed_task / "visible_tests",
               "hidden_tests": Path(hidden_tests).resolve() if hidden_tests else sealed_task / "hidden_tests"}
    sim = gold_similarity(patch, oracle) if oracle is not None else None
    gold = {"gold_similarity": sim, "gold_like": None if sim is None else sim >= GOLD_LIKE_THRESHOLD}
    scratch = scratch_dir("score")
    repo = sealed_task / "repo"
    app = None
    try:
        if overlay and sources["hidden_tests"].is_dir():
            # mounted from a copy in this run's scratch, decoyed or not: where a mount comes from
            # (/proc/self/mountinfo) must not tell the tested code whether the suite carries decoys
            neutral = scratch / "tests" / "hidden_tests"
            shutil.copytree(sources["hidden_tests"], neutral, symlinks=True)
            sources["hidden_tests"] = neutral
        own = protected_paths(sealed_task, meta)
        base = scratch / ("patched" if overlay else "base")
        base.mkdir()
        if overlay:   # only the files the patch touches, applied; the rest stays the sealed repo/
            rels = patch_paths(base, patch)
            sparse_copy((repo,), [p for p in rels or () if not unsafe_path(p)], base)
            app = apply_patch_details(base, patch, bool(meta.get("allow_binary")), own, pristine=repo)
        else:
            copy_tree(repo, base)
            app = apply_patch_details(base, patch, bool(meta.get("allow_binary")), own)
        tamper = sorted(app.protected)
        if not app.applied:
            return _verdict(PatchEvidence(False, app.message, dict(app.protected)), None, None, tamper, gold)
        for d in TEST_DIRS:
            if (base / d).exists() or (base / d).is_symlink():
                _clear(base / d)
        for rel in meta.get("support_files") or ():   # the sealed copy, whatever happened
            if overlay:
                (base / rel).unlink(missing_ok=True)
            else:
                shutil.copyfile(repo / rel, base / rel)
        if overlay:
            as_layer(base, repo, rels or (), hide=TEST_DIRS)
        imports = {"import_paths": tuple(import_paths(repo, meta)),
                   "packages": tuple(packages(repo, meta))}
        ws = scratch / "ws"
        runs = iter(range(1, 3))

        def fresh(test_dirs: tuple[str, ...]) -> object | None:
            # Each command gets a fresh view of the patched snapshot with only the test folders
            # it needs (the visible command never sees hidden_tests/), read-only inside the
            # sandbox: nothing the tested code does in one run reaches the tests of the next, or
            # the test modules collected after the one that imported it.
            if overlay:
                n = next(runs)
                _clear(ws)
                ws.mkdir()
                ov, frozen_from = scoring_overlay(sealed_task, meta, test_dirs, own, (repo, base), ws,
                                                  scratch / f"upper{n}", scratch / f"work{n}", sources)
                return sandbox.with_overlay(ov, frozen_from)
            _clear(ws)
            copy_tree(base, ws)
            for src, dst in test_trees(meta, test_dirs):
                copy_tree(sources.get(src, sealed_task / src), ws / dst)
            if sandbox is None or not hasattr(sandbox, "with_writable"):
                return sandbox
            box = sandbox.with_writable(ws)
            frozen = [ws / dst for _src, dst in test_trees(meta, test_dirs) if dst != "."]
            frozen += [ws / p for p in sorted(own) if (ws / p).exists()]   # support files, tests at repo paths
            return box.with_frozen(*frozen) if hasattr(box, "with_frozen") else box

        visible = hidden = None
        if "visible" in commands:
            box = fresh(("visible_tests",))
            visible = _run_check(meta["visible_command"], ws, logdir, "visible", timeout_s, box,
                                 task_env=task_env, expected_ids=expected_ids.get("visible"), **imports)
        if "hidden" in commands:
            box = fresh(TEST_DIRS)
            hidden = _run_check(hidden_command or meta["hidden_command"], ws, logdir, "hidden", timeout_s, box,
                                task_env=task_env, expected_ids=expected_ids.get("hidden"), decoys=decoys,
                                **imports)
    except UntrustedTree as exc:
        if app is None:   # the sealed snapshot itself: not the patch's doing
            raise
        # the tree the patch made, or what the tested code left in it, cannot be copied or
        # removed (nested past untrusted.MAX_DEPTH …): the patch's fail, never the harness's
        return _verdict(PatchEvidence(True, app.message, dict(app.protected), prepare_error=str(exc)),
                        None, None, sorted(app.protected), gold)
    finally:
        remove_tree(scratch)
    expected = max(int(meta.get("failing_tests") or 0), int(expected_hidden or 0))
    outside = next((o.report["import_outside"] for o in (visible, hidden)
                    if o is not None and o.report.get("import_outside")), None)
    ev = PatchEvidence(True, app.message, dict(app.protected),
                       visible=command_verdict("visible", visible) if visible is not None else None,
                       hidden=command_verdict("hidden", hidden, expected) if hidden is not None else None,
                       import_outside=outside, task_check=task_check)
    return _verdict(ev, visible, hidden, tamper, gold)


def _verdict(ev: PatchEvidence, visible: CommandOutcome | None, hidden: CommandOutcome | None,
             tamper: list[str], gold: Mapping) -> ScoreResult:
    """The score of a patch: the verdict table on ``ev`` (``verdict.decide``), with what it rests on.
    Each command passed or not (None: not run, or the harness broke so nothing is known)."""
    v = decide(Evidence(patch=ev))
    vis_ok = hid_ok = None
    if ev.applied and ev.prepare_error is None and v.status != INFRA_FAIL:   # a command not asked for counts as passed
        vis_ok = ev.visible is None or ev.visible.status == PASS
        hid_ok = ev.hidden is None or ev.hidden.status == PASS
    outside = (f"{ev.import_outside['package']} from {ev.import_outside['path']}"
               if v.rule in ("import_outside", "import_outside_task") else None)
    return ScoreResult(v.status, vis_ok, hid_ok, v.reason, ev.applied, tamper, visible, hidden, **gold,
                       import_outside=outside, rule=v.rule)


# ----------------------------------------------------------------------------- the overlay workspace
# The scoring workspace as an overlay: no copy of the snapshot per scored patch.
#
# ``score_patch`` applies the patch to a *sparse* folder holding only the files it touches
# (``layers.sparse_copy``; the tamper rules still look at the whole sealed ``repo/``), then
# ``as_layer`` turns that folder into an overlay layer (files the patch deleted become
# whiteouts). Each command then runs on ``scoring_overlay``: the sealed ``repo/``, the patched
# layer and, with ``tests_layout: "repo"``, the sealed test trees as read-only lowers, a fresh
# upper folder for whatever the command writes, and the sealed test folders and the task's
# protected files mounted read-only from the sealed copy over it. What the tested code sees is the
# same tree the copy path builds (tests/stages/test_overlay_workspace.py compares the two).


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
                    lowers: tuple[Path, ...], ws: Path, upper: Path, work: Path,
                    sources: Mapping[str, Path] | None = None) -> tuple[Overlay, list[tuple[Path, Path]]]:
    """The overlay one scoring command runs on at ``ws``, and the (sealed source, path) pairs
    mounted read-only over it: each test folder of ``test_dirs`` at its workspace folder (or as a
    lower at the root with ``tests_layout: "repo"``), and every one of the task's protected
    paths ``own`` present in this view, from the sealed copy that provides it. ``sources``: where a
    test folder is taken from instead of the sealed task (the decoyed hidden tests)."""
    layers = list(lowers)
    frozen: list[tuple[Path, Path]] = []
    for src, dst in test_trees(meta, test_dirs):
        folder = Path((sources or {}).get(src, Path(sealed_task) / src))
        if dst == ".":
            layers.append(folder)
        else:
            frozen.append((folder, Path(ws) / dst))
    for rel in sorted(own):
        source = _top(layers, rel)
        if source is not None:
            frozen.append((source, Path(ws) / rel))
    upper.mkdir(parents=True)
    work.mkdir(parents=True)
    return Overlay(Path(ws), tuple(layers), upper, work), frozen
