"""``sealbench pack mutate SOURCE``: a private pack of single-site mutants of real code
(docs/packs.md "Building packs from real code").

SOURCE (a project folder or an sdist) is read (``pack_common``), its tests' environment built
(``environments``), its suite run once unmutated (the baseline: only tests that pass there are
ever used, only test files whose every test passes or is skipped), then mutants
(``mutants``) are tried in a seeded order, at most one task per function: a mutant is kept when
at least two test functions that passed on the baseline fail on it; refused when its tests
hang, when no test or only one test function fails, or when it breaks the collection of the
tests. Each kept mutant becomes a task (``mutant_tasks``), every task is verified with
sealbench's own scoring (``pack_common.verify_task``), and a summary table is printed.

The pack is built in a hidden sibling of ``--out`` (``.PACK.unfinished``) with a journal of every
mutant tried; Ctrl-C or a kill keeps the verified tasks there, and the same command again
continues from them (the seeded order replayed, nothing tried twice). A build that keeps no
task and removes its first ones for one cause stops (``pack_common.FailFast``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from ..isolation.sandbox import MODES as SANDBOX_MODES
from ..pack.workspace import scratch_dir
from . import mutant_tasks as mt
from .mutants import Mutant, find_mutants, schedule
from .pack_common import (
    FailFast,
    Layout,
    PackBuildError,
    TaskCheck,
    TaskFiles,
    TestResult,
    TestRun,
    decoy_coverage,
    detect_layout,
    pytest_command,
    removal_cause,
    run_tests,
    unpack_source,
    verify_task,
    write_task,
)
from .pack_requirements import (
    Requirements,
    detect_requirements,
    plugin_modules,
    pytest_addopts,
    read_requirements_file,
)

#: A mutant is kept when at least this many test functions catch it.
MIN_CATCHING = 2
REFUSALS = {"hangs": "its tests hang (killed at the test timeout)",
            "equivalent": "equivalent or not caught: no test fails",
            "one test": "caught by one test function only (a task needs a visible and a hidden one)",
            "collection": "it breaks the collection of the tests",
            "split": "its catching tests cannot be split into visible and hidden ones",
            "invalid": "the task written for it breaks the pack contract (its reason names the file and field)",
            "unverified": "the task did not verify (no hidden test readable by the worker, the empty diff "
                          "fails, the oracle passes)"}


@dataclass
class Options:
    source: Path
    out: Path
    max_tasks: int = 24
    seed: int = 0
    requirements: Path | None = None
    time_box: int = 1200
    test_timeout: float | None = None
    strata: list[str] = field(default_factory=lambda: ["xs", "s", "m"])
    env_root: Path = Path("results/envs")
    sandbox: str = "auto"
    progress_every: float = 30.0   # seconds between progress lines while it works


@dataclass
class Project:
    root: Path
    layout: Layout
    requirements: Requirements
    plugins: list[str]             # -p module names
    command_env: dict[str, str]
    files: list[str]               # clean test files (every test passes or is skipped)
    passed: set[str]               # baseline passing test ids
    timeout: float
    source_note: str
    skipped: list[TestResult] = field(default_factory=list)   # baseline skips (never used)


@dataclass
class Outcome:
    mutant: Mutant
    refused: str | None
    run: TestRun | None = None
    catching: list[TestResult] = field(default_factory=list)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}h{s // 60 % 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class Progress:
    """What the search is doing, said every ``every`` seconds by a background thread (never a
    flood): the phase, mutants tried, kept, refused by reason, elapsed time and the current run's."""

    def __init__(self, log, every: float, candidates: int = 0) -> None:
        self.log, self.every = log, every
        self.t0 = time.monotonic()
        self.phase, self.since = "starting", self.t0
        self.tried, self.kept, self.candidates = 0, 0, candidates
        self.refused: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, phase: str) -> None:
        self.phase, self.since = phase, time.monotonic()

    def line(self) -> str:
        now = time.monotonic()
        why = ", ".join(f"{k} {n}" for k, n in sorted(self.refused.items()))
        if not self.candidates:   # before the search: nothing to count yet
            return f"progress {_clock(now - self.t0)}: now {self.phase} ({_clock(now - self.since)})"
        counts = (f"tried {self.tried} of {self.candidates} candidate mutants, kept {self.kept}, "
                  f"refused {sum(self.refused.values())}{f' ({why})' if why else ''}")
        return f"progress {_clock(now - self.t0)}: {counts}; now {self.phase} ({_clock(now - self.since)})"

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self.log(self.line())

    def __enter__(self) -> Progress:
        if self.every > 0:
            self._thread = threading.Thread(target=self._beat, name="pack-mutate-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _source_note(source: Path) -> str:
    if source.is_file():
        digest = hashlib.sha256(source.read_bytes()).hexdigest()
        return f"sdist {source.name} sha256 {digest}"
    return f"folder {source.resolve()}"


def _cause(run: TestRun, command: str) -> str:
    """Why a suite could not run, from its output."""
    import re

    text = run.output
    for pattern, what in ((r"Failed to import filter module '([^']+)'", "the pytest config's filterwarnings "
                           "names module {0!r}, which the environment lacks; pass --requirements with it"),
                          (r"No module named '([^']+)'", "the tests import {0!r}, which the environment lacks; "
                           "declare it or pass --requirements"),
                          (r"unrecognized arguments: (.+)", "pytest does not know {0} (a plugin the config needs "
                           "is not loaded); pass --requirements naming it"),
                          (r"PluginValidationError.*|ImportError while loading conftest.*", "{0}")):
        m = re.search(pattern, text)
        if m:
            return what.format(*(m.groups() or [m.group(0)]))
    tail = " | ".join(text.strip().splitlines()[-6:])
    return f"`{command}` exited {run.returncode}{' (timed out)' if run.timed_out else ''}: {tail}"


def prepare(opts: Options, work: Path, log, progress: Progress | None = None, root: Path | None = None) -> Project:
    """Unpack (unless ``root`` is the source already unpacked), find the layout and requirements,
    build the environment, run the baseline."""
    say = progress.start if progress is not None else (lambda phase: None)
    from ..isolation.environments import build_env, env_from_requirements

    root = root if root is not None else unpack_source(opts.source, work / "src")
    layout = detect_layout(root)
    test_text = "\n".join((root / f).read_text("utf-8", "replace") for f in layout.test_files + layout.support_files)
    req = (read_requirements_file(opts.requirements, root, test_text) if opts.requirements
           else detect_requirements(root, test_text))
    log(f"{root.name}: {layout.kind} layout, packages {', '.join(layout.packages)}; {len(layout.test_files)} test "
        f"files; requirements: {', '.join(req.lines) or 'none'}")
    say(f"building the environment ({len(req.lines)} requirements)")
    t0 = time.monotonic()
    built = build_env(env_from_requirements(req.text(), opts.requirements or Path("environment/requirements.txt")),
                      opts.env_root, sandbox=opts.sandbox)
    from ..core.core import harness_env

    cenv = built.command_env()
    plugins = plugin_modules(str(built.python), req.plugins, harness_env(cenv))
    log(f"environment ready in {_clock(time.monotonic() - t0)}: {built.path}")
    say("running the unmutated tests (the baseline)")
    t0 = time.monotonic()
    run = run_tests(root, cenv, layout.import_paths, plugins, layout.test_files, opts.test_timeout or 1800,
                    work / "logs" / "baseline")
    wall = time.monotonic() - t0
    command = pytest_command(plugins, layout.test_files)
    if not run.by_outcome("passed"):
        raise PackBuildError(f"{opts.source}: the project's tests cannot run: {_cause(run, command)}")
    files = []
    for f in layout.test_files:
        rs = [r for r in run.results if r.file == f]
        if rs and all(r.outcome in ("passed", "skipped") for r in rs) and any(r.outcome == "passed" for r in rs):
            files.append(f)
    bad = [r for r in run.results if r.outcome in ("failed", "error")]
    skipped = [r for r in run.results if r.outcome == "skipped"]
    log(f"baseline: {len(run.by_outcome('passed'))} passed, {len(bad)} failed or errored, {len(skipped)} skipped "
        f"({wall:.1f} s); {len(files)} of {len(layout.test_files)} test files clean")
    timeout = opts.test_timeout or max(30.0, 5 * wall)
    return Project(root, layout, req, plugins, cenv, files, run.by_outcome("passed"), timeout,
                   _source_note(opts.source), skipped)


def try_mutant(p: Project, m: Mutant, logdir: Path) -> Outcome:
    """Run the clean test files on the mutant (in place, restored after)."""
    path = p.root / m.file
    original = path.read_text("utf-8")
    path.write_text(m.apply(original), "utf-8")
    try:
        run = run_tests(p.root, p.command_env, p.layout.import_paths, p.plugins, p.files, p.timeout, logdir)
    finally:
        path.write_text(original, "utf-8")
    if run.timed_out:
        return Outcome(m, "hangs", run)
    if any(r.outcome == "error" and not r.file for r in run.results) or not run.results:
        return Outcome(m, "collection", run)
    caught = [r for r in run.results if r.outcome in ("failed", "error") and r.id in p.passed]
    keys = {r.key for r in caught}
    if not keys:
        return Outcome(m, "equivalent", run)
    if len(keys) < MIN_CATCHING:
        return Outcome(m, "one test", run, caught)
    return Outcome(m, None, run, caught)


def _package_of(layout: Layout, path: str) -> str:
    """The package (or module) under test that ``path`` belongs to; the first one otherwise."""
    rel = path.removeprefix("src/") if layout.kind == "src" else path
    top = rel.split("/", 1)[0].removesuffix(".py")
    return top if top in layout.packages else layout.packages[0]


def _split(p: Project, o: Outcome, seed: str) -> tuple[set[str], set[str]] | None:
    """(visible keys, hidden-only keys) of the catching test functions, or None."""
    keys = sorted({r.key for r in o.catching})
    random.Random(seed).shuffle(keys)
    visible, hidden = set(keys[:len(keys) // 2]), set(keys[len(keys) // 2:])
    texts = {f: (p.root / f).read_text("utf-8") for f in {k.split("::", 1)[0] for k in keys}}
    for k in sorted(hidden):            # one defined elsewhere (inherited) cannot be cut out: visible
        f, name = k.split("::", 1)
        if f in {v.split("::", 1)[0] for v in visible} and name not in mt.locatable(texts[f], [name]):
            hidden.discard(k)
            visible.add(k)
    return (visible, hidden) if visible and hidden else None


def build_task(p: Project, o: Outcome, tid: str, split: tuple[set[str], set[str]], repo: Path,
               scratch: Path | None = None) -> TaskFiles:
    """The task of a kept mutant; the failure messages quoted in its prompt carry repo-relative
    paths, never the builder's scratch folder (``scratch``, default the project copy's parent)."""
    from dataclasses import replace

    visible, hidden = split
    scratch_text = str(scratch if scratch is not None else p.root.parent)
    m = o.mutant
    vis_files = sorted({k.split("::", 1)[0] for k in visible})
    hid_files = sorted({r.file for r in o.catching})
    vis_tree = {f: mt.prune_tests((p.root / f).read_text("utf-8"),
                                  [k.split("::", 1)[1] for k in hidden if k.startswith(f + "::")]) for f in vis_files}
    hid_tree = {f: (p.root / f).read_text("utf-8") for f in hid_files}
    fails = [r for r in o.run.results if r.outcome in ("failed", "error")]
    vis_fails = [replace(r, message=mt.scrub_paths(r.message, str(p.root), scratch_text))
                 for r in o.catching if r.key in visible]
    failing_hidden = len({r.id for r in fails if r.file in hid_files})
    original = (p.root / m.file).read_text("utf-8")
    oracle = mt.oracle_diff(m.file, m.apply(original), original)
    loc = sum(len(f.read_text("utf-8", "replace").splitlines()) for f in repo.rglob("*.py"))
    meta = {"id": tid, "title": mt.title_text(vis_fails), "stratum": "pending", "language": "python",
            "time_box_sec": 0, "visible_command": pytest_command(p.plugins, vis_files),
            "hidden_command": pytest_command(p.plugins, hid_files), "failing_tests": failing_hidden, "loc": loc,
            "tests_layout": "repo", "support_files": p.layout.support_files, "packages": p.layout.packages,
            "notes": f"mutant of {p.source_note}; made by sealbench pack mutate on {date.today().isoformat()}; "
                     "never published"}
    if p.layout.import_paths:
        meta["import_paths"] = p.layout.import_paths
    return TaskFiles(tid, meta, mt.prompt_text(vis_fails, vis_files, failing_hidden), repo, vis_tree, hid_tree,
                     oracle)


def _repo_snapshot(p: Project, m: Mutant, dest: Path) -> Path:
    """The project with the mutant and without any test file (support files stay)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(p.root, dest)
    for f in p.layout.test_files:
        (dest / f).unlink(missing_ok=True)
    (dest / m.file).write_text(m.apply((p.root / m.file).read_text("utf-8")), "utf-8")
    return dest


UNFINISHED = ".sealbench-unfinished"
JOURNAL = ".sealbench-journal.jsonl"


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C with verified tasks kept in ``folder`` (the same command again continues from them)."""

    def __init__(self, kept: int, folder: Path) -> None:
        super().__init__(f"{_verified(kept)} kept in {folder}")
        self.kept, self.folder = kept, folder


def _tree_digest(root: Path) -> str:
    """The content of a project folder: its files' paths and bytes."""
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def build_identity(opts: Options, root: Path) -> dict:
    """What the tasks of a build depend on: the source's content (``root``: as unpacked), the seed
    (the order of the mutants), the requirements, the time box, the test timeout and the strata.
    An unfinished build of the same identity is continued; --max-tasks, --env-root, --sandbox and
    --progress may change between runs."""
    req = Path(opts.requirements) if opts.requirements else None
    return {"source": _tree_digest(root), "seed": opts.seed,
            "requirements": hashlib.sha256(req.read_bytes()).hexdigest() if req and req.is_file() else None,
            "time_box": opts.time_box, "test_timeout": opts.test_timeout, "strata": list(opts.strata)}


def _mutant_key(m: Mutant) -> str:
    return json.dumps([m.file, m.start, m.end, m.original, m.replacement])


class Journal:
    """Every mutant an unfinished build tried, one JSON line each, written (and synced) as soon as
    it is decided: refused, removed (with its cause), or kept as a verified task. A later line for
    the same mutant replaces an earlier one; a line cut short by a kill is ignored."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / JOURNAL
        self.entries: dict[str, dict] = {}
        if self.path.is_file():
            for line in self.path.read_text("utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    self.entries[entry["mutant"]] = entry
                except (ValueError, KeyError, TypeError):
                    continue                # the last line of a killed run

    @property
    def kept(self) -> list[str]:
        return [e["tid"] for e in self.entries.values() if e["outcome"] == "kept"]

    def record(self, m: Mutant, entry: dict) -> None:
        entry = {"mutant": _mutant_key(m), **entry}
        self.entries[entry["mutant"]] = entry
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def get(self, m: Mutant) -> dict | None:
        return self.entries.get(_mutant_key(m))


def _unfinished_path(out: Path) -> Path:
    return out.parent / f".{out.name}.unfinished"


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (Linux: /proc/PID/stat field 22), so a reused pid is not taken for it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _owner_alive(mark: dict) -> bool:
    pid = mark.get("pid")
    if not isinstance(pid, int) or pid == os.getpid() or not _alive(pid):
        return False
    started = _process_start(pid)
    return started is None or mark.get("started") in (None, started)


def _clear_legacy(out: Path) -> None:
    """Siblings ``.PACK.unfinished-<pid>`` of earlier sealbench versions whose run is gone."""
    for old in out.parent.glob(f".{out.name}.unfinished-*"):
        mark = old / UNFINISHED
        try:
            pid = int(mark.read_text("utf-8").strip())
        except (OSError, ValueError):
            continue                            # not ours: never touched
        if not _alive(pid):
            shutil.rmtree(old, ignore_errors=True)


def _differences(old: dict, new: dict) -> str:
    names = {"source": "the source's content", "seed": "--seed", "requirements": "--requirements",
             "time_box": "--time-box", "test_timeout": "--test-timeout", "strata": "the strata"}
    return ", ".join(names.get(k, k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k))


def open_unfinished(out: Path, build: dict, log) -> tuple[Path, Journal]:
    """The folder to build ``out`` in, ``.OUT.unfinished`` beside it, and its journal: an
    unfinished build of the same ``build`` identity left by an interrupted or killed run is
    continued (its task folders that the journal does not record as kept are removed); a fresh
    folder otherwise. Refused: the folder of a run still going, one that is not sealbench's, and
    one holding verified tasks of another build (never thrown away unasked)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    _clear_legacy(out)
    tmp = _unfinished_path(out)
    if tmp.exists():
        try:
            mark = json.loads((tmp / UNFINISHED).read_text("utf-8"))
            assert isinstance(mark, dict)
        except (OSError, ValueError, AssertionError):
            raise PackBuildError(f"{tmp}: exists and is not an unfinished build of sealbench (no readable "
                                 f"{UNFINISHED}); move it away, or give --out another folder") from None
        if _owner_alive(mark):
            raise PackBuildError(f"{tmp}: another run (pid {mark['pid']}) is building {out} now; wait for it, "
                                 "or give --out another folder")
        journal = Journal(tmp)
        if mark.get("build") == build:
            for t in (tmp / "tasks").glob("*") if (tmp / "tasks").is_dir() else []:
                if t.name not in set(journal.kept):
                    shutil.rmtree(t, ignore_errors=True)       # written, but its verification never ended
            log(f"continuing the unfinished build in {tmp}: {_verified(len(journal.kept))} kept, "
                f"{len(journal.entries)} mutants tried before (not tried again)")
        elif journal.kept:
            raise PackBuildError(f"{tmp}: holds {_verified(len(journal.kept))} of an unfinished build that "
                                 f"differs from this one in {_differences(mark.get('build') or {}, build)}; run "
                                 f"that build's command again to finish it, or remove {tmp} to start over")
        else:
            shutil.rmtree(tmp)
    if not tmp.exists():
        tmp.mkdir()
    (tmp / UNFINISHED).write_text(json.dumps({"pid": os.getpid(), "started": _process_start(os.getpid()),
                                              "build": build}) + "\n", "utf-8")
    return tmp, Journal(tmp)


def _verified(n: int) -> str:
    return f"{n} verified task{'' if n == 1 else 's'}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _publish(tmp: Path, out: Path) -> None:
    (tmp / UNFINISHED).unlink()
    (tmp / JOURNAL).unlink(missing_ok=True)
    if out.is_dir():
        out.rmdir()                             # empty (checked at the start)
    tmp.rename(out)


def mutate_pack(opts: Options, log=print) -> dict:
    """Build the pack; returns the summary (kept task ids, refusals by reason). The pack is
    built in a hidden sibling of ``opts.out`` (:func:`open_unfinished`) and renamed to it only
    when a task is kept. A run that ends otherwise (Ctrl-C: :class:`BuildInterrupted`, an error,
    a kill) leaves that sibling only when it holds verified tasks, for the same command to go on."""
    out = Path(opts.out)
    if out.exists() and not out.is_dir():
        raise PackBuildError(f"{out}: exists and is not a folder; give --out a new folder")
    if out.exists() and any(out.iterdir()):
        raise PackBuildError(f"{out}: exists and is not empty; give --out a new folder")
    work = scratch_dir("mutate")
    tmp: Path | None = None
    journal: Journal | None = None
    progress = Progress(log, opts.progress_every)
    try:
        root = unpack_source(opts.source, work / "src")
        tmp, journal = open_unfinished(out, build_identity(opts, root), log)
        with progress:
            summary = _search(opts, work, tmp, log, progress, root, journal)
        summary["pack"] = str(out)
        if summary["kept"]:
            _publish(tmp, out)
        log(f"done in {_clock(time.monotonic() - progress.t0)}: tried {progress.tried} mutants, kept "
            f"{progress.kept}, refused {sum(progress.refused.values())}")
        return summary
    except KeyboardInterrupt:
        if journal is not None and journal.kept:
            raise BuildInterrupted(len(journal.kept), tmp) from None
        raise
    finally:
        if tmp is not None and tmp.exists() and not (journal is not None and journal.kept):
            shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def _search(opts: Options, work: Path, out: Path, log, progress: Progress, root: Path | None = None,
            journal: Journal | None = None) -> dict:
    p = prepare(opts, work, log, progress, root)
    journal = journal if journal is not None else Journal(out)
    (out / "environment").mkdir(exist_ok=True)
    (out / "environment" / "requirements.txt").write_text(p.requirements.text(), "utf-8")
    (out / "denylist.txt").write_text(f"# private mutants of {p.source_note}: nothing was published\n", "utf-8")
    candidates = [m for f in p.layout.source_files for m in find_mutants((p.root / f).read_text("utf-8"), f)]
    progress.candidates = len(candidates)
    log(f"searching {len(candidates)} candidate mutants for at most {opts.max_tasks} tasks "
        f"(each test run up to {p.timeout:.0f} s)")
    refused = progress.refused
    kept: dict[str, Mutant] = {}
    checks: list = []          # the verified tasks' checks (their decoy coverage)
    rows: list[tuple[str, str, str]] = []
    stop = FailFast(pytest_addopts(p.root))

    def removed(m: Mutant, tid: str, key: str, why: str, cause: str | None) -> None:
        refused[key] += 1
        rows.append((tid, "removed", f"{REFUSALS[key]}: {why}"))
        journal.record(m, {"outcome": "removed", "reason": key, "tid": tid, "row": rows[-1], "cause": cause})
        log(f"removed {tid}: {why[:400]}{' …' if len(why) > 400 else ''}")     # one line
        sentence = stop.removed(cause)
        if sentence:
            raise PackBuildError(f"{opts.source}: {sentence}")

    for group in schedule(candidates, opts.seed):
        if len(kept) >= opts.max_tasks:
            break
        for m in group:
            done = journal.get(m)
            if done is not None and (done["outcome"] != "kept" or (out / "tasks" / done["tid"]).is_dir()):
                progress.tried += 1               # decided by an earlier run of this build: replayed
                if done["outcome"] != "kept":
                    refused[done["reason"]] += 1
                    rows.append(tuple(done["row"]))
                    if done["outcome"] == "removed":
                        stop.removed(done.get("cause"))
                    continue
                kept[done["tid"]] = m
                checks.append(TaskCheck(done["tid"], True, decoys=done.get("decoys", 0),
                                        decoys_why_none=done.get("decoys_why_none")))
                progress.kept += 1
                stop.kept_one()
                break
            progress.start(f"testing {m.file}:{m.lineno} in {m.function}")
            o = try_mutant(p, m, work / "logs" / "mutant")
            progress.tried += 1
            split = None
            if o.refused is None:
                tid = mt.task_id(_package_of(p.layout, m.file), m.file, m.function, set(kept))
                split = _split(p, o, f"{opts.seed}:{tid}")
                o.refused = None if split else "split"
            if o.refused:
                refused[o.refused] += 1
                rows.append((f"{m.file}:{m.lineno} {m.function}", "refused", REFUSALS[o.refused]))
                journal.record(m, {"outcome": "refused", "reason": o.refused, "row": rows[-1]})
                continue
            progress.start(f"verifying task {tid}")
            task = build_task(p, o, tid, split, _repo_snapshot(p, m, work / "repo"), work)
            task.meta["time_box_sec"], task.meta["stratum"] = opts.time_box, opts.strata[0]
            try:
                write_task(out, task, opts.strata)
            except PackBuildError as exc:     # one mutant's task, not the build: said, and the search goes on
                shutil.rmtree(out / "tasks" / tid, ignore_errors=True)
                why = " ".join(str(exc).split())
                removed(m, tid, "invalid", why, "the task written for it breaks the pack contract ("
                        + why.replace(tid, "<task>") + ")")
                continue
            check = verify_task(out, tid, timeout_s=p.timeout * 2, sandbox_mode=opts.sandbox,
                                env_root=opts.env_root)
            if not check.ok:            # removed; the function's next mutant may still make a task
                shutil.rmtree(out / "tasks" / tid)
                removed(m, tid, "unverified", " ".join(str(check.reason).split()), removal_cause(check))
                continue
            kept[tid] = m
            checks.append(check)
            journal.record(m, {"outcome": "kept", "tid": tid, "decoys": check.decoys,
                               "decoys_why_none": check.decoys_why_none})
            progress.kept += 1
            stop.kept_one()
            log(f"kept {tid} ({len({r.key for r in o.catching})} catching test functions), verified "
                f"[{progress.line()}]")
            break
    strata = mt.assign_strata({t: m.func_lines for t, m in kept.items()}, opts.strata)
    for tid, s in strata.items():
        _set_stratum(out / "tasks" / tid / "meta.json", s)
        rows.append((tid, f"kept ({s})", f"{kept[tid].func_lines}-line function {kept[tid].function}"))
    skipped = [(r.id, r.message.strip().splitlines()[0] if r.message.strip() else "") for r in p.skipped]
    return {"pack": str(out), "kept": sorted(kept), "refused": dict(refused), "candidates": len(candidates),
            "rows": rows, "strata": strata, "skipped": skipped, "decoys": decoy_coverage(checks)}


def _set_stratum(meta_path: Path, stratum: str) -> None:
    import json

    meta = json.loads(meta_path.read_text("utf-8"))
    meta["stratum"] = stratum
    meta_path.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", "utf-8")


def print_summary(summary: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"sealbench pack mutate → {summary['pack']}")
    for col in ("mutant / task", "outcome", "why"):
        table.add_column(col)
    for row in summary["rows"]:
        table.add_row(*row)
    con = Console()
    con.print(table)
    why = "; ".join(f"{n} {REFUSALS[k]}" for k, n in sorted(summary["refused"].items())) or "none"
    con.print(f"{len(summary['kept'])} tasks kept and verified, from {summary['candidates']} candidate sites. "
              f"Refused: {why}.")
    if summary.get("decoys"):
        con.print(summary["decoys"])
    skipped = summary.get("skipped") or []
    if skipped:
        shown = "; ".join(f"{tid}{f' ({msg})' if msg else ''}" for tid, msg in skipped[:SKIPPED_SHOWN])
        more = f"; and {len(skipped) - SKIPPED_SHOWN} more" if len(skipped) > SKIPPED_SHOWN else ""
        con.print(f"{len(skipped)} tests were skipped unmutated, so no task uses them (a module they need may be "
                  f"missing from the environment; pass --requirements to add it): {shown}{more}.", soft_wrap=True)


#: Most skipped tests named in the summary.
SKIPPED_SHOWN = 20


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_mutate(args: argparse.Namespace) -> int:
    from ..core.config_sources import effective_config

    if Path("config/config.yaml").is_file():   # the project's strata, when run in a project
        strata = list(effective_config([], [], False)[0]["strata"])
        print(f"strata from config/config.yaml: {', '.join(strata)}")
    else:
        strata = list(Options.__dataclass_fields__["strata"].default_factory())
        print(f"no config/config.yaml here: strata {', '.join(strata)} (the default config's)")
    out = args.out or Path("packs") / f"{Path(args.source).name.split('.tar')[0].split('.zip')[0]}-mutants"
    opts = Options(Path(args.source), out, args.max_tasks, args.seed, args.requirements, args.time_box,
                   args.test_timeout, strata, Path(args.env_root), args.sandbox, args.progress)
    try:
        summary = mutate_pack(opts, log=_stderr)
    except BuildInterrupted as exc:
        print(f"sealbench: pack mutate interrupted; {_verified(exc.kept)} kept in {exc.folder}: run the same "
              "command again to go on from them", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(f"sealbench: pack mutate interrupted; nothing was written to {out} (run it again to start over)",
              file=sys.stderr)
        return 130
    print_summary(summary)
    if not summary["kept"]:
        raise PackBuildError(f"{args.source}: no task kept, so nothing was written to {out}; see the refusals above")
    return 0


def add_parser(psub: argparse._SubParsersAction) -> None:
    p = psub.add_parser("mutate", help="a private pack of single-site mutants of a project (folder or sdist)")
    p.add_argument("source", type=Path, help="a project folder or an sdist (.tar.gz/.zip)")
    p.add_argument("--out", type=Path, default=None, help="the pack folder to write (new; default packs/<source>-mutants)")
    p.add_argument("--max-tasks", type=int, default=24)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--requirements", type=Path, default=None, help="the tests' requirements (skips detection)")
    p.add_argument("--time-box", type=int, default=1200, help="time_box_sec of every task (default 1200)")
    p.add_argument("--test-timeout", type=float, default=None,
                   help="seconds per test-suite run (default: 5 x the baseline's, at least 30)")
    p.add_argument("--env-root", default="results/envs", help="where environments are built (default results/envs)")
    p.add_argument("--sandbox", default="auto", choices=SANDBOX_MODES)
    p.add_argument("--progress", type=float, default=30.0,
                   help="seconds between progress lines on stderr (default 30; 0: none)")
    p.set_defaults(func=cmd_mutate)
