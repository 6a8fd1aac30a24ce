"""What the pack builders share (``sealbench pack mutate``, ``sealbench pack import-swebench``;
docs/packs.md): a project read from a folder or an sdist, its layout, the requirements its
tests need, its test suite run with a JUnit report, a task folder written, a task verified.

- :func:`unpack_source`: a project folder copied, or an sdist (``.tar.gz``/``.tgz``/``.zip``)
  unpacked safely (no absolute path, no ``..``, no link out of the tree);
- :func:`detect_layout`: ``src/<pkg>``, flat ``<pkg>/`` or single-module layout, the tests
  folders, the test files and the support files the tests import (:class:`Layout`);
- :func:`detect_requirements` (in ``pack_requirements``) reads what the environment needs;
- :func:`run_tests`: pytest in a folder with an environment, results per test from JUnit XML;
- :func:`write_task`: a task folder of the pack contract (docs/contract.md §1), meta validated;
- :func:`verify_task`: sealbench's own scoring of the empty diff and the oracle on a task.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import tarfile
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..core.core import ARTEFACT_NAMES, PackError, SealbenchError, harness_env


class PackBuildError(SealbenchError):
    """A pack cannot be built from this source: the message names the file or the cause."""


#: Folders never copied from a project: version control, caches, virtual environments, builds.
SKIP_DIRS = frozenset({".git", ".hg", ".svn", ".tox", ".nox", ".venv", "venv", "env", "build", "dist",
                       "node_modules", ".eggs", ".github", ".idea", ".vscode"}) | ARTEFACT_NAMES
#: Top-level folders that are never the package under test.
NOT_PACKAGES = frozenset({"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks",
                          "bench", "scripts", "tools", "ci", "src", "build", "dist", "site", "data"})
#: Top-level modules that are never the module under test.
NOT_MODULES = frozenset({"setup.py", "conftest.py", "noxfile.py", "tasks.py", "fabfile.py", "manage.py",
                         "docs.py", "version.py", "_version.py", "runtests.py", "run_tests.py"})
TEST_DIR_NAMES = ("tests", "test")
ARCHIVES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".tar", ".zip")


def _ignore(_dir: str, names: list[str]) -> set[str]:
    return {n for n in names if n in SKIP_DIRS or n.endswith((".pyc", ".pyo")) or n.endswith(".egg-info")}


def _safe_member(name: str, archive: Path) -> PurePosixPath:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or (p.parts and ":" in p.parts[0]):
        raise PackBuildError(f"{archive}: member {name!r} has an absolute path or '..'; refusing to unpack it")
    return p


def _unpack_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive) as tf:
        members = tf.getmembers()
        for m in members:
            p = _safe_member(m.name, archive)
            if m.issym() or m.islnk():
                target = PurePosixPath(m.linkname)
                base = p.parent if m.issym() else PurePosixPath()
                resolved = os.path.normpath(str(base / target))
                if target.is_absolute() or resolved.startswith(".."):
                    raise PackBuildError(f"{archive}: member {m.name!r} links out of the archive "
                                         f"({m.linkname!r}); refusing to unpack it")
            elif not (m.isfile() or m.isdir()):
                raise PackBuildError(f"{archive}: member {m.name!r} is a device or fifo; refusing to unpack it")
        tf.extractall(dest, members=members, filter="data")


def _unpack_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            _safe_member(info.filename, archive)
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise PackBuildError(f"{archive}: member {info.filename!r} is a symlink; refusing to unpack it")
        zf.extractall(dest)


def unpack_source(source: Path, dest: Path) -> Path:
    """The project root of ``source`` (a folder, or an sdist unpacked into ``dest``), as plain files
    under ``dest`` (version control, caches, virtual environments and builds left out)."""
    source = Path(source)
    if not source.exists():
        raise PackBuildError(f"{source}: no such file or folder (give a project folder or an sdist)")
    dest.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        root = dest / source.resolve().name
        shutil.copytree(source, root, ignore=_ignore, symlinks=False)
        return root
    if not source.name.endswith(ARCHIVES):
        raise PackBuildError(f"{source}: not a folder or an sdist ({', '.join(ARCHIVES)})")
    raw = dest / "_unpacked"
    (_unpack_zip if source.name.endswith(".zip") else _unpack_tar)(source, raw)
    tops = [p for p in raw.iterdir()]
    top = tops[0] if len(tops) == 1 and tops[0].is_dir() else raw
    root = dest / top.name if top is not raw else dest / source.name.split(".")[0]
    shutil.copytree(top, root, ignore=_ignore, symlinks=False)
    shutil.rmtree(raw)
    return root


# ---------------------------------------------------------------------------------------------
# Layout


@dataclass
class Layout:
    """Where a project's code and tests are (paths relative to the project root, '/'-separated)."""

    kind: str                       # src | flat | module
    packages: list[str]             # top-level importable names under test
    import_paths: list[str]         # folders to put on PYTHONPATH (["src"] for a src layout)
    source_files: list[str]         # the code under test (no test or support file)
    test_dirs: list[str]
    test_files: list[str]
    support_files: list[str]        # non-test .py files of the tests folders, a root conftest.py


def is_test_file(rel: str) -> bool:
    name = PurePosixPath(rel).name
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _py_files(root: Path, folder: str) -> list[str]:
    base = root / folder if folder else root
    out = []
    for dirpath, dirnames, files in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for f in sorted(files):
            if f.endswith(".py"):
                out.append(Path(dirpath, f).relative_to(root).as_posix())
    return out


def detect_layout(root: Path) -> Layout:
    """The project's layout; raises :class:`PackBuildError` when no package or no tests are found."""
    root = Path(root)
    if (root / "src").is_dir():
        src = root / "src"
        pkgs = sorted(p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
        pkgs += sorted(p.stem for p in src.glob("*.py"))
        kind, prefix, import_paths = "src", "src/", ["src"]
    else:
        pkgs = sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()
                      and p.name not in NOT_PACKAGES and not p.name.startswith("."))
        kind, prefix, import_paths = "flat", "", []
        if not pkgs:
            pkgs = sorted(p.stem for p in root.glob("*.py") if p.name not in NOT_MODULES and not is_test_file(p.name))
            kind = "module"
    if not pkgs:
        raise PackBuildError(f"{root}: no package found (looked for src/<pkg>/__init__.py, <pkg>/__init__.py "
                             "and a top-level module)")
    test_dirs = [d for d in TEST_DIR_NAMES if (root / d).is_dir()]
    for pkg in pkgs:                    # tests folders inside the package, at any depth (toolz/sandbox/tests)
        base = root / f"{prefix}{pkg}"
        if base.is_dir():
            test_dirs += sorted(d.relative_to(root).as_posix() for name in TEST_DIR_NAMES for d in base.rglob(name)
                                if d.is_dir() and not any(part in SKIP_DIRS for part in d.relative_to(root).parts))
    in_tests: list[str] = [f for d in test_dirs for f in _py_files(root, d)]
    test_files = [f for f in in_tests if is_test_file(f)]
    test_files += [p.name for p in sorted(root.glob("*.py")) if is_test_file(p.name)]
    if not test_files:
        raise PackBuildError(f"{root}: no test files found (test_*.py or *_test.py in {', '.join(TEST_DIR_NAMES)}/, "
                             "inside the package or at the top)")
    support = [f for f in in_tests if not is_test_file(f)]
    if (root / "conftest.py").is_file():
        support.append("conftest.py")
    used = set(in_tests) | set(test_files)
    sources: list[str] = []
    for pkg in pkgs:
        if (root / f"{prefix}{pkg}").is_dir():
            sources += [f for f in _py_files(root, f"{prefix}{pkg}") if f not in used]
        else:
            sources.append(f"{prefix}{pkg}.py")
    return Layout(kind, pkgs, import_paths, sources, test_dirs, sorted(set(test_files)), sorted(set(support)))


# ---------------------------------------------------------------------------------------------
# Running a test suite


@dataclass
class TestResult:
    """One test case of a JUnit report."""

    file: str
    cls: str | None
    name: str                  # as pytest names it, parameters included
    outcome: str               # passed | failed | error | skipped
    message: str = ""

    @property
    def function(self) -> str:
        return self.name.split("[", 1)[0]

    @property
    def key(self) -> str:
        """The test function: ``file::Class::function`` (parameters dropped)."""
        return "::".join(x for x in (self.file, self.cls, self.function) if x)

    @property
    def id(self) -> str:
        return "::".join(x for x in (self.file, self.cls, self.name) if x)


@dataclass
class TestRun:
    """A pytest run: per-test results (JUnit XML) and how the process ended."""

    results: list[TestResult] = field(default_factory=list)
    returncode: int | None = None
    timed_out: bool = False
    output: str = ""

    def by_outcome(self, outcome: str) -> set[str]:
        return {r.id for r in self.results if r.outcome == outcome}


#: Plugins a suite's config may switch on whose work no test outcome depends on, but that break a
#: task's scoring or slow it down, each by the option of its own that switches its work off (the
#: plugin stays loaded, so the config's options still parse). By the plugin's top-level module.
#: pytest-cov: ``--cov-fail-under`` fails a run of some test files whose every test passes
#: (parse's config has ``--cov``; every oracle would fail), and coverage's tracer slows each run.
SWITCHED_OFF = {"pytest_cov": ("--no-cov",)}


def switched_off(plugins: list[str]) -> list[str]:
    """The options that switch off the work of the ``plugins`` (modules) named :data:`SWITCHED_OFF`."""
    return [o for p in plugins for o in SWITCHED_OFF.get(p.split(".", 1)[0], ())]


def pytest_command(plugins: list[str], files: list[str]) -> str:
    """The task command: quiet pytest without its cache, the plugins named (autoload is off), and
    the work of those in :data:`SWITCHED_OFF` switched off (``--no-cov``)."""
    words = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    for p in plugins:
        words += ["-p", p]
    return shlex.join(words + switched_off(plugins) + list(files))


def _class_of(classname: str, file: str) -> str | None:
    last = classname.rsplit(".", 1)[-1]
    return None if not classname or last == PurePosixPath(file).stem else last


def _collecting_file(classname: str, file: str, root: Path | None) -> str:
    """The test module that collected a test case. JUnit's ``file`` is where the function is
    *defined*: a method a ``TestCase`` inherits from a mixin elsewhere (cachetools keeps its shared
    tests in its tests package's ``__init__``) names the mixin's file. ``classname`` is the node id's dotted
    path, so with the project's ``root`` the longest prefix of it naming a ``.py`` file there is the
    collecting module."""
    if root is None or not classname:
        return file
    dotted = file.removesuffix(".py").replace("/", ".")
    if classname == dotted or classname.startswith(dotted + "."):
        return file
    parts = classname.split(".")
    for n in range(len(parts), 0, -1):
        cand = "/".join(parts[:n]) + ".py"
        if (Path(root) / cand).is_file():
            return cand
    return file


def read_junit(path: Path, root: Path | None = None) -> list[TestResult]:
    """Test cases of a JUnit XML report written with ``junit_family=xunit1`` (it names the file).
    With the project's ``root``, each case's file is the module that collected it (an inherited
    test method is its subclass's module's, not the mixin's)."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        kids = {c.tag: c for c in case}
        outcome, msg = "passed", ""
        for tag in ("failure", "error", "skipped"):
            if tag in kids:
                outcome = {"failure": "failed"}.get(tag, tag)
                msg = kids[tag].get("message") or ""
                break
        file = _collecting_file(case.get("classname") or "", case.get("file") or "", root)
        out.append(TestResult(file, _class_of(case.get("classname") or "", file), case.get("name") or "",
                              outcome, msg))
    return out


def run_tests(workdir: Path, command_env: Mapping[str, str], import_paths: list[str], plugins: list[str],
              files: list[str], timeout_s: float, logdir: Path) -> TestRun:
    """pytest on ``files`` in ``workdir`` as the task commands run it (autoload off, no cache,
    ``plugins`` named, ``import_paths`` on PYTHONPATH), with ``command_env`` (the built
    environment's PATH/VIRTUAL_ENV). A run past ``timeout_s`` is killed (``timed_out``)."""
    from ..core.processes import run_process

    logdir.mkdir(parents=True, exist_ok=True)
    junit = logdir / "junit.xml"
    junit.unlink(missing_ok=True)
    extra = dict(command_env)
    if import_paths:
        extra["PYTHONPATH"] = os.pathsep.join(str(Path(workdir, p)) for p in import_paths)
    extra["PYTEST_ADDOPTS"] = (f"--junitxml={shlex.quote(str(junit))} -o junit_family=xunit1 "
                               f"--rootdir={shlex.quote(str(workdir))}")
    command = pytest_command(plugins, files)
    res = run_process(command, workdir, harness_env(extra), timeout_s, logdir / "stdout", logdir / "stderr")
    text = "".join(p.read_text("utf-8", "replace") for p in (logdir / "stdout", logdir / "stderr") if p.exists())
    results = read_junit(junit, Path(workdir)) if junit.is_file() else []
    return TestRun(results, res.returncode, bool(res.timed_out), text[-4000:])


# ---------------------------------------------------------------------------------------------
# Writing and verifying a task


@dataclass
class TaskFiles:
    """Everything of one task folder (docs/contract.md §1); test trees map repo paths to text."""

    id: str
    meta: dict
    prompt: str
    repo: Path                      # the snapshot to copy (already without the sealed test files)
    visible: dict[str, str]
    hidden: dict[str, str]
    oracle: str


def write_task(pack: Path, task: TaskFiles, strata: list[str] | None = None) -> Path:
    """Write ``pack/tasks/<id>/`` (replacing an older folder of that id) and validate its meta."""
    from ..pack.packs import validate_meta

    tdir = Path(pack) / "tasks" / task.id
    if tdir.exists():
        shutil.rmtree(tdir)
    tdir.mkdir(parents=True)
    shutil.copytree(task.repo, tdir / "repo", ignore=_ignore, symlinks=False)
    for name, tree in (("visible_tests", task.visible), ("hidden_tests", task.hidden)):
        (tdir / name).mkdir()
        for rel, text in tree.items():
            dst = tdir / name / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text, encoding="utf-8")
    (tdir / "prompt.md").write_text(task.prompt, encoding="utf-8")
    (tdir / "oracle.patch").write_text(task.oracle, encoding="utf-8")
    (tdir / "meta.json").write_text(json.dumps(task.meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    try:
        validate_meta(tdir / "meta.json", strata)
    except PackError as exc:
        raise PackBuildError(f"task {task.id} written but invalid: {exc}") from exc
    return tdir


@dataclass
class TaskCheck:
    """A task verified with sealbench's own scoring: the empty diff fails both commands, the
    oracle passes. ``reason`` says what went wrong (None when ``ok``)."""

    task_id: str
    ok: bool
    empty: str | None = None             # status of the empty diff
    oracle: str | None = None            # status of the oracle
    reason: str | None = None
    #: the decoy tests the pipeline's controls will be able to make for it (``run_dummy.make_decoys``,
    #: 2 asked for), and why none (None: some)
    decoys: int = 0
    decoys_why_none: str | None = None


def verify_task(pack: Path, task_id: str, *, timeout_s: float = 300, sandbox_mode: str = "auto",
                env_root: Path = Path("results/envs"), visible_may_pass: bool = False) -> TaskCheck:
    """Score the empty diff and ``oracle.patch`` on ``pack/tasks/<task_id>`` as written (the
    task's declared environment built under ``env_root``; sandboxed when bwrap works, or as
    ``sandbox_mode`` says). ok: the worker cannot read the hidden tests (``leak_hidden``: the
    pipeline's leak check would refuse the pack), the empty diff fails with both the visible and
    the hidden command failing (only the hidden one with ``visible_may_pass``: imported SWE-bench
    tasks, whose visible tests passed before the fix), and the oracle passes."""
    from ..core.contract import FAIL, PASS
    from ..isolation.environments import build_env, declared_env
    from ..isolation.sandbox import make_sandbox, resolve_level
    from ..leak.leak_hidden import hidden_test_hits
    from ..pack.packs import validate_meta
    from ..pack.workspace import scratch_dir
    from ..scoring.scoring import score_patch
    from ..stages.run_dummy import task_decoys

    pack = Path(pack).absolute()
    tdir = pack / "tasks" / task_id
    try:
        meta = validate_meta(tdir / "meta.json")
        spec = declared_env(pack, meta)
    except PackError as exc:
        return TaskCheck(task_id, False, reason=str(exc))
    hits = hidden_test_hits(tdir)
    if hits:
        shown = "; ".join(f"{h.file}: {h.kind} {h.text!r} (from {h.source})" for h in hits[:2])
        return TaskCheck(task_id, False, reason=f"leak suspect: the worker can read its hidden tests: {shown}")
    env = build_env(spec, env_root, sandbox=sandbox_mode) if spec is not None else None
    task_env = env.command_env() if env is not None else None
    level = resolve_level(sandbox_mode)
    logs = scratch_dir("verify")
    box = make_sandbox(level, hide=[pack, logs]) if level != "none" else None
    if box is not None and env is not None:
        box = box.with_readable(env.path)          # the task's environment, read-only inside
    oracle = (tdir / "oracle.patch").read_bytes()
    try:
        empty = score_patch(tdir, meta, b"", logs / "empty", timeout_s, sandbox=box, task_env=task_env)
        gold = score_patch(tdir, meta, oracle, logs / "oracle", timeout_s, oracle=oracle, sandbox=box,
                           task_env=task_env)
        chosen, decoy_record = [], {"why_none": "the task does not verify"}
        if empty.status == FAIL and gold.status == PASS:
            # the decoys the pipeline's controls will make (coverage, said per task and in the summary)
            suite, decoy_record = task_decoys(tdir, meta, logs / "decoys", 2, timeout_s, box, task_env)
            chosen = list(suite.spec)
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    problems = []
    visible_ok = visible_may_pass and empty.visible_pass is not None
    if empty.status != FAIL or (empty.visible_pass is not False and not visible_ok) or empty.hidden_pass is not False:
        must = "the hidden one must fail" if visible_may_pass else "both must fail"
        problems.append(f"the empty diff scored {empty.status} (visible pass {empty.visible_pass}, hidden pass "
                        f"{empty.hidden_pass}; {must}){': ' + empty.reason if empty.reason else ''}")
    if gold.status != PASS:
        problems.append(f"the oracle scored {gold.status}: {gold.reason}")
    return TaskCheck(task_id, not problems, empty.status, gold.status, "; ".join(problems) or None,
                     len(chosen), None if chosen else decoy_record.get("why_none"))


#: A build that has kept no task yet stops once this many tasks in a row were removed for the same cause.
FAIL_FAST = 3


def removal_cause(check: TaskCheck) -> str | None:
    """Why a task did not verify, in words that are the same for every task the same cause removes
    (None: a cause of this task's own, such as a leak suspect, never a reason to stop a build)."""
    if check.ok or (check.reason or "").startswith("leak suspect"):
        return None
    if check.oracle is None:
        return "sealbench could not score them (their meta.json or environment was refused)"
    if check.oracle != "pass":
        return f"the oracle (the original code) scored {check.oracle} under sealbench's scoring"
    return f"the empty diff did not fail both commands under sealbench's scoring (it scored {check.empty})"


class FailFast:
    """Stops a build that removes task after task for one cause it will never get past (parse's
    ``--cov`` once made every oracle score ``tamper``: 17 minutes, 0 tasks, nothing said): once
    :data:`FAIL_FAST` tasks in a row were removed for the same cause and none was kept, :meth:`removed`
    returns the one sentence to stop with. ``config`` names what the project's test setup adds (its
    pytest config's ``addopts``), the most common reason the builder's own runs and the scoring differ."""

    def __init__(self, config: str = "", limit: int = FAIL_FAST) -> None:
        self.config, self.limit = config, limit
        self.kept, self.cause, self.count = False, None, 0

    def kept_one(self) -> None:
        self.kept = True

    def removed(self, cause: str | None) -> str | None:
        if self.kept or cause is None:
            return None
        self.count = self.count + 1 if cause == self.cause else 1
        self.cause = cause
        if self.count < self.limit:
            return None
        if cause.startswith("the task written"):
            fix = ("every task of this project is written the same invalid way, which is a sealbench bug: report it "
                   "with the lines above")
        else:
            where = f" (its addopts: {self.config})" if self.config else ""
            fix = ("the scoring does not run the suite as the builder's own runs do, most often because of an option "
                   f"or a plugin the project's pytest config adds{where}: remove it from the config in a copy of the "
                   "source and run again (the lines above say why each task was removed)")
        return f"stopped after the first {self.count} tasks were all removed because {cause}; {fix}"


def decoy_coverage(checks: list[TaskCheck]) -> str:
    """The builder's closing line on decoys: of the tasks kept, how many carry decoys."""
    kept = [c for c in checks if c.ok]
    if not kept:
        return "decoys: no task kept"
    covered = [c for c in kept if c.decoys]
    bare = sorted(c.task_id for c in kept if not c.decoys)
    return (f"decoys: {len(covered)} of {len(kept)} kept tasks carry decoy tests "
            f"({100 * len(covered) / len(kept):.0f}%)" + (f"; none for {', '.join(bare[:8])}"
                                                          f"{' …' if len(bare) > 8 else ''}" if bare else ""))
