"""Honest census: does sealbench's scoring command judge real, honest test suites exactly as
plain pytest does, and what does it cost?

For each library of :data:`SUITES` (pinned versions, chosen so that together they cover async
tests (pytest-asyncio, anyio's plugin, aiounittest), doctests, hypothesis, ctypes, gc, subTests,
pytester and test factories):

1. download its sdist (``pip download --no-binary :all: --no-deps``) into the cache and unpack
   it (``<cache>/src/``);
2. make one venv per library (``<cache>/venvs/``, from the interpreter running this script), with
   the library installed from the unpacked sdist, its pinned test dependencies and the pytest of
   sealbench's own venv; kept while its marker file (``.census-installed``: the install spec)
   still matches;
3. run the suite PLAINLY (no sandbox, no report plugin) on a fresh copy of the unpacked source,
   with ``harness_env`` plus the venv's PATH/VIRTUAL_ENV, recording each test's outcome with the
   listen-only plugin ``bench/_census_outcomes.py`` (``-p _census_outcomes``);
4. run the same command on another fresh copy through sealbench's scoring command
   (``sealed_command._run_check``) in the bubblewrap sandbox the copy path of scoring builds
   (workspace writable, the suite's test folders frozen read-only, the venv readable), and take
   the outcomes from its report (``report["outcomes"]``, else from the stream);
5. repeat both ``--repeat`` times (3; who goes first alternates) and compare the first pair: a
   test differs when it is in one run only or its outcomes differ. A library with differences
   gets plain reruns (up to ``1 + --recheck`` plain runs) to tell flakiness apart;
6. run plain pytest once more, inside the same scoring sandbox (every library; ``--no-boxed``:
   only where the host's plain run and the sealed run differ). The JUDGE is compared there: the
   sealed run against plain pytest in the same sandbox (same files, uid, ``/dev``, read-only test
   folders), on every test, so only the report plugin and the verdict can make a difference. The
   host's plain run is compared too: what differs there but not in the sandbox is the sandbox's
   environment (a test that skips as root on the host and runs as the sandbox's user; a block
   device the sandbox's ``/dev`` does not have), listed with its cause.

Run it (the first run downloads and builds, about ten minutes; a census then takes 25-35 minutes
on 2 cores; the logs of the last runs stay in ``<cache>/logs/<library>/``)::

    .venv/bin/python bench/honest_census.py [--only wrapt] [--cache DIR] [--timeout 600] [--jobs 1]
                                            [--repeat 3] [--recheck 2] [--boxed] [--build-only]

Columns: ``library``/``version``; ``plain``/``sealed``: tests (and collection errors or skips,
as ``collect:<nodeid>``) each run reported; ``plain outcomes``: the plain run's counts (p passed,
f failed, s skipped, xf xfailed, xp xpassed, e collection error); ``judge differs``: tests in
one of the sealed run and the plain run in the same sandbox only, or with another outcome there
(the judge's differences: the number issue 33 wants at 0); ``host differs``: the same against the
host's plain run (``flaky`` of them: another run agreed with the other side, or the plain runs
disagreed); ``plain s``/``sealed s``: median wall time; ``ratio``: sealed / plain
(target <= 1.15); ``cpu ratio``: the same for the CPU time (user + system) of the runs'
processes, which the machine's other load disturbs less; ``verdict``: the sealed report's own
verdict kind (``fail`` where the suite fails plainly too); ``subset``: when not the whole suite
(its command is printed under the table). Totals: libraries judged identically and tests
differing, by the judge and against the host; worst ratio. Each difference is listed with its cause (``sandbox``, ``report
plugin``, ``flaky``), every run's outcome, and the reason each run gave; then the tests whose
outcome changed between the repeats though the first pair agreed (``unsteady``: load-sensitive
tests, not differences).

Prints a table and appends one JSON line to ``bench/results/honest_census.jsonl``.
Not a test: nothing here asserts a time. ``--jobs`` above 1 makes the times unfair.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from _census_outcomes import fold, phase_outcome  # noqa: E402 - bench/ is this script's folder

from sealbench.core.core import harness_env, python_bin_dir  # noqa: E402
from sealbench.core.processes import run_process  # noqa: E402
from sealbench.isolation.sandbox import make_sandbox, resolve_level  # noqa: E402

#: the recording plugin of the plain runs (copied alone into ``<cache>/plugin/``, put on PYTHONPATH)
RECORDER = Path(__file__).resolve().parent / "_census_outcomes.py"
#: every suite's command starts so; ``Suite.args`` follows
PYTEST = "python -m pytest -q -p no:cacheprovider"
MARKER = ".census-installed"

# pytest plugins, by the module their ``pytest11`` entry point names (importlib.metadata): the
# runs have PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, so a suite names each plugin it needs with ``-p``
HYPOTHESIS = "-p _hypothesis_pytestplugin"
ASYNCIO = "-p pytest_asyncio.plugin"
#: the anyio subset: 6 of its 24 test files, the async core, its pytest plugin (pytester) and file
#: I/O (these alone take ~45 s here; sockets, subprocesses and signals are left out)
ANYIO_FILES = ("synchronization", "taskgroups", "to_thread", "from_thread", "pytest_plugin", "fileio")
#: dateutil's one file left out: 10 tests over the whole tz database, two thirds of its tests' own time
DATEUTIL_SKIPPED = "tests/test_tzpath_data.py"


@dataclass(frozen=True)
class Suite:
    """One library's honest suite."""

    name: str                        #: PyPI name
    version: str
    packages: tuple[str, ...]        #: its import names (the sealed report says where they came from)
    args: str                        #: pytest arguments after :data:`PYTEST`
    tests: tuple[str, ...]           #: its test folders (frozen read-only in the sealed run, as scoring does)
    deps: tuple[str, ...] = ()       #: pinned test dependencies
    covers: str = ""                 #: what it brings to the census
    subset: str = ""                 #: which tests, when not all of them
    prepare: str = ""                #: run once in the unpacked source with the venv (e.g. compile catalogs)

    @property
    def command(self) -> str:
        return f"{PYTEST} {self.args}"


SUITES: tuple[Suite, ...] = (
    Suite("wrapt", "2.5.2", ("wrapt",), "tests", ("tests",),
          covers="C extension, proxies, weakref/gc, post-import hooks"),
    Suite("freezegun", "1.5.5", ("freezegun",), "tests", ("tests",),
          covers="time patching, asyncio, sqlite"),
    Suite("boltons", "26.2.0", ("boltons",), "--doctest-modules boltons tests", ("tests",),
          covers="doctests, gcutils, tbutils, fileutils"),
    Suite("attrs", "26.1.0", ("attr", "attrs"), f"{HYPOTHESIS} tests", ("tests",),
          deps=("hypothesis==6.170.27", "Pympler==1.1", "cloudpickle==3.1.3"),
          covers="hypothesis @given, parametrized fixtures, slots/gc, xfail_strict"),
    Suite("python-dateutil", "4.0.0", ("dateutil",), f"{HYPOTHESIS} -p pytest_cov.plugin tests docs --ignore={DATEUTIL_SKIPPED}",
          ("tests", "docs"), deps=("hypothesis==6.170.27", "freezegun==1.5.5", "attrs==26.1.0", "pytest-cov==7.1.0"),
          covers="hypothesis, warnings as errors, tz files, xfail_strict",
          subset="without test_tzpath_data.py"),
    Suite("structlog", "26.1.0", ("structlog",), f"{ASYNCIO} tests", ("tests",),
          deps=("pytest-asyncio==1.5.0", "simplejson==4.3.0", "time-machine==3.6.0", "rich==15.0.0",
                "freezegun==1.5.5"),
          covers="pytest-asyncio (auto mode), logging, pickling, multiprocessing"),
    Suite("toolz", "1.2.0", ("toolz", "tlz"), "--doctest-modules toolz", ("toolz/tests",),
          covers="doctests, curried namespace, pickling"),
    Suite("colorama", "0.4.6", ("colorama",), "colorama/tests", ("colorama/tests",),
          covers="ctypes (win32 module), terminal state, mock"),
    Suite("ddt", "1.7.2", ("ddt",), "test", ("test",),
          deps=("aiounittest==1.5.0", "PyYAML==6.0.4", "six==1.17.0"),
          covers="test factories (ddt), unittest async (aiounittest)"),
    Suite("humanize", "4.17.0", ("humanize",), "-p pytest_benchmark.plugin --benchmark-disable", ("tests",),
          deps=("freezegun==1.5.5", "pytest-benchmark==5.3.1", "babel==2.19.0"),
          covers="parametrize-heavy, doctests (addopts), gettext catalogs",
          prepare="pybabel --quiet compile --directory src/humanize/locale --domain humanize"),
    Suite("more-itertools", "11.2.1", ("more_itertools",), "--doctest-modules more_itertools tests", ("tests",),
          covers="unittest TestCase, subTest, doctests"),
    Suite("asgiref", "3.13.0", ("asgiref",), f"{ASYNCIO} tests", ("tests",),
          deps=("pytest-asyncio==1.5.0", "packaging==26.4"),
          covers="pytest-asyncio (strict), threads <-> loops, gc of locals"),
    Suite("anyio", "4.16.0", ("anyio",), " ".join(f"tests/test_{n}.py" for n in ANYIO_FILES), ("tests",),
          deps=("hypothesis==6.170.27", "pytest-mock==3.17.0", "pytest-timeout==2.4.0", "trustme==1.2.1",
                "psutil==7.2.2", "blockbuster==1.5.29", "truststore==0.10.5", "uvloop==0.23.0"),
          covers="anyio's pytest plugin (asyncio, uvloop), pytester, threads",
          subset="6 of 24 test files"),
    Suite("sniffio", "1.3.1", ("sniffio",), "sniffio", ("sniffio/_tests",), deps=("curio==1.6",),
          covers="asyncio and curio event loops"),
)


# ----------------------------------------------------------------------------------------------
# Environments


def pytest_version() -> str:
    """The pytest of sealbench's own venv (every census venv gets the same)."""
    return importlib.metadata.version("pytest")


def pip_env() -> dict[str, str]:
    """The installer's environment: the user's (``PIP_*`` defaults untouched) without what would
    leak this interpreter's packages into the new venv."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def fetch_source(suite: Suite, cache: Path) -> Path:
    """The unpacked sdist of ``suite`` (downloaded and unpacked once)."""
    sdists, src = cache / "sdists", cache / "src"

    def archives() -> list[Path]:
        stem = f"{suite.name}-{suite.version}.".lower().replace("_", "-")
        return [p for p in sdists.glob("*.tar.gz") if p.name.lower().replace("_", "-").startswith(stem)]

    if not archives():
        sdists.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                        "-d", str(sdists), f"{suite.name}=={suite.version}"], check=True, env=pip_env())
    found = archives()
    if not found:
        raise OSError(f"pip download left no sdist of {suite.name} {suite.version} in {sdists}")
    with tarfile.open(found[0]) as tar:
        top = Path(tar.getnames()[0]).parts[0]
        if not (src / top).is_dir():
            src.mkdir(parents=True, exist_ok=True)
            tar.extractall(src, filter="data")
    return src / top


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def build_venv(suite: Suite, source: Path, cache: Path) -> Path:
    """The suite's venv; rebuilt only when its marker (the install spec) differs."""
    venv = cache / "venvs" / f"{suite.name}-{suite.version}"
    spec = json.dumps({"python": sys.version, "pytest": pytest_version(), "source": str(source),
                       "deps": list(suite.deps), "prepare": suite.prepare}, sort_keys=True)
    marker = venv / MARKER
    if marker.is_file() and marker.read_text() == spec:
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv_python(venv)), "-m", "pip", "install", "-q", str(source),
                    f"pytest=={pytest_version()}", *suite.deps], check=True, env=pip_env())
    if suite.prepare:
        env = {**pip_env(), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
        subprocess.run(suite.prepare, shell=True, cwd=source, check=True, env=env)
    marker.write_text(spec)
    return venv


def task_env(venv: Path) -> dict[str, str]:
    """What ``environments.BuiltEnv.command_env`` gives a task command for this venv."""
    rest = os.environ.get("PATH", "/usr/bin:/bin")
    return {"PATH": os.pathsep.join([str(venv / "bin"), python_bin_dir(), rest]), "VIRTUAL_ENV": str(venv)}


def fresh_copy(source: Path, dest: Path) -> Path:
    """A fresh copy of the unpacked source at ``dest`` (the tests may write into it)."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, symlinks=True)
    return dest


# ----------------------------------------------------------------------------------------------
# The two runs


@dataclass
class Run:
    """One run of a suite: each test's outcome and how long it took."""

    outcomes: dict[str, str]
    wall_s: float
    returncode: int | None
    #: CPU time (user + system) of the run's processes
    cpu_s: float = 0.0
    #: the sealed report's verdict kind and problem (sealed runs only)
    verdict: str | None = None
    problem: str | None = None
    #: why a test failed or was skipped, where the run says (the sealed stream: failures only)
    texts: dict[str, str] = field(default_factory=dict)
    logdir: str = ""


def children_cpu() -> float:
    """CPU time (user + system) of this process's finished children so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_plain(suite: Suite, source: Path, venv: Path, cache: Path, timeout_s: float, tag: str = "plain",
              boxed: bool = False) -> Run:
    """The suite as plain pytest runs it: no seal, no sandbox (``boxed``: in the scoring sandbox,
    to tell what the sandbox changes from what the report plugin changes); outcomes from
    ``_census_outcomes``."""
    work, logdir = cache / "work" / suite.name / tag, cache / "logs" / suite.name
    plugin_dir = cache / "plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RECORDER, plugin_dir / RECORDER.name)
    ws = fresh_copy(source, work / "ws")
    record = work / "out" / "outcomes.json"
    record.parent.mkdir(exist_ok=True)
    record.unlink(missing_ok=True)
    box = scoring_box(ws, [record.parent], venv, suite).with_readable(plugin_dir) if boxed else None
    env = harness_env({**task_env(venv), "PYTHONPATH": str(plugin_dir), "CENSUS_OUTCOMES": str(record),
                       "PYTEST_ADDOPTS": f"-p {RECORDER.stem}"})
    cpu0, t0 = children_cpu(), time.perf_counter()
    res = run_process(suite.command, ws, env, timeout_s, logdir / f"{tag}.stdout", logdir / f"{tag}.stderr",
                      sandbox=box)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    outcomes = json.loads(record.read_text()) if record.is_file() else {}
    texts_file = record.with_name(record.name + ".texts")
    texts = json.loads(texts_file.read_text()) if texts_file.is_file() else {}
    return Run(outcomes, wall, res.returncode, cpu_s=cpu, texts=texts, logdir=str(logdir))


def _stream_outcomes(stream: list[dict]) -> dict[str, str]:
    """Each test's outcome from a sealed report stream's ``report`` records (what
    ``sealed_report.test_outcomes`` gives, where it exists)."""
    try:
        from sealbench.scoring.sealed_report import test_outcomes  # type: ignore[attr-defined]
    except ImportError:
        out: dict[str, str] = {}
        for r in stream:
            if r.get("kind") == "report":
                nid = str(r.get("nodeid"))
                out[nid] = fold(out.get(nid), phase_outcome(str(r.get("when")), str(r.get("outcome")),
                                                            bool(r.get("xfail")), bool(r.get("subtest"))))
        return out
    return dict(test_outcomes(stream))


def _failure_texts(stream: list[dict]) -> dict[str, str]:
    """The last failure text the stream holds per test (``report`` records, then ``raw``)."""
    texts: dict[str, str] = {}
    for kind in ("raw", "report", "collect"):
        for r in stream:
            if r.get("kind") == kind and r.get("outcome") in ("failed", "skipped") and r.get("text"):
                key = str(r.get("nodeid")) if kind != "collect" else f"collect:{r.get('nodeid')}"
                texts[key] = str(r.get("text"))
    return texts


def sealed_outcomes(out: Any) -> dict[str, str]:
    """The real tests' outcomes of a sealed run (canaries left out), with its collection errors
    and skips as ``collect:<nodeid>``, as the plain run's recorder names them."""
    report = out.report or {}
    stream = out.stream or []
    got = report.get("outcomes")
    outcomes = dict(got) if isinstance(got, Mapping) else _stream_outcomes(stream)
    # what the harness adds to a suite: canaries (before the rewrite), decoys (after it)
    names = set((getattr(out, "secret", None) or {}).get("names", {}).values()) | set(report.get("canary_names") or ())
    decoys = set(getattr(out, "decoys", None) or ())
    outcomes = {n: o for n, o in outcomes.items() if str(n).rsplit("::", 1)[-1] not in names and n not in decoys}
    for r in stream:
        if r.get("kind") == "collect" and r.get("outcome") in ("failed", "skipped"):
            outcomes[f"collect:{r.get('nodeid')}"] = "error" if r.get("outcome") == "failed" else "skipped"
    return outcomes


def scoring_box(ws: Path, writable: list[Path], venv: Path, suite: Suite) -> Any:
    """The sandbox the copy path of scoring builds (``scoring.fresh``): the workspace (and a report
    folder, where ``_run_check`` still takes one) writable, the test folders frozen read-only; the
    environment readable (``stages.sandboxed.scoring_sandbox``)."""
    box = make_sandbox(resolve_level("auto"), limits=None).with_readable(venv)
    box = box.with_writable(ws, *writable)
    frozen = [ws / t for t in suite.tests if (ws / t).exists()]
    return box.with_frozen(*frozen) if frozen else box


def run_sealed(suite: Suite, source: Path, venv: Path, cache: Path, timeout_s: float, tag: str = "sealed") -> Run:
    """The suite through sealbench's scoring command (``sealed_command._run_check``), sandboxed."""
    from sealbench.scoring.sealed_command import _run_check

    work, logdir = cache / "work" / suite.name / tag, cache / "logs" / suite.name
    ws = fresh_copy(source, work / "ws")
    extra: dict[str, Any] = {}
    if "junit_dir" in inspect.signature(_run_check).parameters:   # the scoring command before the rewrite
        reports = work / "reports"
        if reports.exists():
            shutil.rmtree(reports)
        reports.mkdir(parents=True)
        extra["junit_dir"] = reports
    box = scoring_box(ws, list(extra.values()), venv, suite)
    cpu0, t0 = children_cpu(), time.perf_counter()
    out = _run_check(suite.command, ws, logdir, tag, timeout_s, box, **extra,
                     import_paths=(), packages=suite.packages, task_env=task_env(venv), expected_ids=None)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    report = out.report or {}
    return Run(sealed_outcomes(out), wall, out.returncode, cpu_s=cpu, verdict=report.get("kind"),
               problem=report.get("problem") or out.infra_reason or out.junit_error,
               texts=_failure_texts(out.stream or []), logdir=str(logdir))


# ----------------------------------------------------------------------------------------------
# Comparing


@dataclass
class Difference:
    test: str
    plain: str          #: the first plain run's outcome ("-": not reported)
    sealed: str         #: the first sealed run's outcome ("-": not reported)
    #: the other runs' outcomes (repeats, then the rechecks)
    plain_again: list[str] = field(default_factory=list)
    sealed_again: list[str] = field(default_factory=list)
    #: plain pytest in the scoring sandbox ("" when not run): says whether the sandbox or the
    #: report plugin makes the difference
    boxed: str = ""
    #: why, where the runs say: the first plain run, the sealed run, the plain run in the sandbox
    plain_text: str = ""
    sealed_text: str = ""
    boxed_text: str = ""

    @property
    def flaky(self) -> bool:
        """A plain run disagreed with the first one or agreed with the sealed one, or a sealed run
        agreed with the plain one."""
        return (any(o != self.plain or o == self.sealed for o in self.plain_again)
                or any(o == self.plain for o in self.sealed_again))

    @property
    def cause(self) -> str:
        if self.flaky:
            return "flaky"
        if not self.boxed:
            return "?"
        return {self.sealed: "sandbox", self.plain: "report plugin"}.get(self.boxed, "?")


def differences(plain: Mapping[str, str], sealed: Mapping[str, str]) -> list[Difference]:
    return [Difference(t, plain.get(t, "-"), sealed.get(t, "-"))
            for t in sorted(set(plain) | set(sealed)) if plain.get(t) != sealed.get(t)]


@dataclass
class Row:
    library: str
    version: str
    covers: str
    subset: str
    command: str
    runs: int = 0
    plain_tests: int = 0
    sealed_tests: int = 0
    #: medians over the runs
    plain_s: float = 0.0
    sealed_s: float = 0.0
    plain_cpu_s: float = 0.0
    sealed_cpu_s: float = 0.0
    #: the plain run in the scoring sandbox (None: not run)
    boxed_s: float | None = None
    plain_rc: int | None = None
    sealed_rc: int | None = None
    plain_counts: dict[str, int] = field(default_factory=dict)
    verdict: str | None = None
    problem: str | None = None
    diffs: list[Difference] = field(default_factory=list)
    #: tests whose outcome changed between the repeats though the first pair agreed: test ->
    #: (plain outcomes, sealed outcomes), run by run (load-sensitive tests, on either side)
    unsteady: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    error: str | None = None
    logdir: str = ""
    #: the JUDGE's differences: the sealed run against plain pytest in the same scoring sandbox
    #: (same files, same uid, same /dev: only the report plugin and the verdict differ); ``diffs``
    #: are the sealed run against plain pytest on the host, which also counts what the sandbox's
    #: environment changes (a test that skips as root, a block device the sandbox has not)
    judge_diffs: list[Difference] = field(default_factory=list)
    judged_boxed: bool = False

    @property
    def ratio(self) -> float | None:
        return self.sealed_s / self.plain_s if self.plain_s and self.sealed_s else None

    @property
    def cpu_ratio(self) -> float | None:
        return self.sealed_cpu_s / self.plain_cpu_s if self.plain_cpu_s and self.sealed_cpu_s else None

    @property
    def stable_diffs(self) -> list[Difference]:
        return [d for d in self.diffs if not d.flaky]


def census_one(suite: Suite, cache: Path, timeout_s: float, repeat: int, recheck: int,
               say: Callable[[str], None], boxed_always: bool = False) -> Row:
    """Plain and sealed runs of one suite, ``repeat`` times each (taking turns: which goes first
    alternates), compared on the first pair; a library with differences gets plain reruns up to
    ``1 + recheck`` plain runs in all, and a plain run in the scoring sandbox (``boxed_always``:
    every library gets one, for its time)."""
    row = Row(suite.name, suite.version, suite.covers, suite.subset or "all", suite.command)
    plains: list[Run] = []
    sealeds: list[Run] = []
    try:
        source = fetch_source(suite, cache)
        venv = build_venv(suite, source, cache)
        for i in range(repeat):
            say(f"{suite.name}: run {i + 1}/{repeat}")
            pair = [lambda i=i: plains.append(run_plain(suite, source, venv, cache, timeout_s, _tag("plain", i))),
                    lambda i=i: sealeds.append(run_sealed(suite, source, venv, cache, timeout_s, _tag("sealed", i)))]
            for step in pair if i % 2 == 0 else pair[::-1]:
                step()
        plain, sealed = plains[0], sealeds[0]
        row.diffs = differences(plain.outcomes, sealed.outcomes)
        while row.diffs and len(plains) < 1 + recheck:
            say(f"{suite.name}: {len(row.diffs)} differences; plain rerun")
            plains.append(run_plain(suite, source, venv, cache, timeout_s, _tag("plain", len(plains))))
        if boxed_always or any(not d.flaky for d in row.diffs):
            say(f"{suite.name}: plain run in the scoring sandbox")
            boxed = run_plain(suite, source, venv, cache, timeout_s, "boxed", boxed=True)
            row.boxed_s, row.judged_boxed = boxed.wall_s, True
            for d in row.diffs:
                d.boxed, d.boxed_text = boxed.outcomes.get(d.test, "-"), boxed.texts.get(d.test, "")
            # the judge alone: sealed against plain pytest in the same sandbox, on every test
            row.judge_diffs = differences(boxed.outcomes, sealed.outcomes)
            for d in row.judge_diffs:
                d.boxed, d.boxed_text = d.plain, boxed.texts.get(d.test, "")
                d.plain_text, d.sealed_text = d.boxed_text, sealed.texts.get(d.test, "")
                d.sealed_again = [r.outcomes.get(d.test, "-") for r in sealeds[1:]]
        else:                   # no difference with the host's plain run: none with the judge either
            row.judge_diffs = []
    except (subprocess.CalledProcessError, OSError) as exc:
        row.error = f"{type(exc).__name__}: {exc}"
        return row
    for d in row.diffs:
        d.plain_again = [r.outcomes.get(d.test, "-") for r in plains[1:]]
        d.sealed_again = [r.outcomes.get(d.test, "-") for r in sealeds[1:]]
        d.plain_text, d.sealed_text = plain.texts.get(d.test, ""), sealed.texts.get(d.test, "")
    differing = {d.test for d in row.diffs}
    for test in sorted({t for r in plains + sealeds for t in r.outcomes} - differing):
        seen = ([r.outcomes.get(test, "-") for r in plains], [r.outcomes.get(test, "-") for r in sealeds])
        if len(set(seen[0] + seen[1])) > 1:
            row.unsteady[test] = seen
    row.runs = repeat
    row.plain_tests, row.sealed_tests = len(plain.outcomes), len(sealed.outcomes)
    row.plain_s = statistics.median(r.wall_s for r in plains[:repeat])
    row.sealed_s = statistics.median(r.wall_s for r in sealeds)
    row.plain_cpu_s = statistics.median(r.cpu_s for r in plains[:repeat])
    row.sealed_cpu_s = statistics.median(r.cpu_s for r in sealeds)
    row.plain_rc, row.sealed_rc = plain.returncode, sealed.returncode
    row.plain_counts = counts(plain.outcomes)
    row.verdict, row.problem, row.logdir = sealed.verdict, sealed.problem, sealed.logdir
    return row


def _tag(kind: str, i: int) -> str:
    return kind if i == 0 else f"{kind}-{i + 1}"


def counts(outcomes: Mapping[str, str]) -> dict[str, int]:
    return dict(sorted(Counter(outcomes.values()).items()))


# ----------------------------------------------------------------------------------------------
# Output


def git_commit() -> str:
    res = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True, text=True)
    return res.stdout.strip() or "?"


HEADERS = ("library", "version", "plain", "sealed", "plain outcomes", "judge differs", "host differs", "plain s",
           "sealed s", "ratio", "cpu ratio", "verdict", "subset")
SHORT = {"passed": "p", "failed": "f", "skipped": "s", "xfailed": "xf", "xpassed": "xp", "error": "e"}


def cells(r: Row) -> tuple[str, ...]:
    if r.error:
        return (r.library, r.version, "-", "-", "-", "-", "-", "-", "-", "-", "-", "error", r.error[:60])

    def differ(diffs: list[Difference]) -> str:
        flaky = sum(d.flaky for d in diffs)
        return f"{len(diffs)}" + (f" ({flaky} flaky)" if flaky else "")

    seen = " ".join(f"{n}{SHORT.get(o, ' ' + o)}" for o, n in r.plain_counts.items())

    def ratio(x: float | None) -> str:
        return f"{x:.2f}" if x is not None else "-"

    judge = differ(r.judge_diffs) if r.judged_boxed or not r.diffs else "?"
    return (r.library, r.version, str(r.plain_tests), str(r.sealed_tests), seen, judge, differ(r.diffs), f"{r.plain_s:.1f}",
            f"{r.sealed_s:.1f}", ratio(r.ratio), ratio(r.cpu_ratio), str(r.verdict), r.subset)


def print_table(rows: list[Row], title: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        table = [HEADERS, *(cells(r) for r in rows)]
        widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS))]
        print(title)
        for line in table:
            print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)))
        return
    t = Table(title=title)
    for h in HEADERS:
        t.add_column(h, justify="right" if h in ("plain", "sealed", "plain s", "sealed s", "ratio", "cpu ratio")
                     else "left")
    for r in rows:
        t.add_row(*cells(r))
    Console(width=max(shutil.get_terminal_size().columns, 160)).print(t)


def print_differences(rows: list[Row], limit: int) -> None:
    for r in rows:
        if not r.diffs and not r.judge_diffs and not r.error and not r.unsteady:
            continue
        print(f"\n{r.library} {r.version}: {r.command}")
        if r.error:
            print(f"  {r.error}")
            continue
        print(f"  plain exit {r.plain_rc}; sealed exit {r.sealed_rc}, verdict {r.verdict}"
              + (f": {r.problem}" if r.problem else "") + f"; logs {r.logdir}")
        for d in r.diffs[:limit]:
            again = ", ".join(filter(None, [f"plain reruns {'/'.join(d.plain_again)}" if d.plain_again else "",
                                            f"sealed reruns {'/'.join(d.sealed_again)}" if d.sealed_again else "",
                                            f"plain in the sandbox {d.boxed}" if d.boxed else ""]))
            print(f"  [{d.cause}] {d.test}: plain {d.plain}, sealed {d.sealed}" + (f" ({again})" if again else ""))
            for side, text in (("plain", d.plain_text), ("sealed", d.sealed_text), ("in the sandbox", d.boxed_text)):
                if text:
                    print(f"      {side}: " + "\n      ".join(text.strip().splitlines()[-6:]))
        if len(r.diffs) > limit:
            print(f"  ... and {len(r.diffs) - limit} more (--show N)")
        for d in r.judge_diffs[:limit]:
            again = f" (sealed reruns {'/'.join(d.sealed_again)})" if d.sealed_again else ""
            print(f"  [judge{', flaky' if d.flaky else ''}] {d.test}: plain in the sandbox {d.plain}, "
                  f"sealed {d.sealed}{again}")
            for side, text in (("in the sandbox", d.plain_text), ("sealed", d.sealed_text)):
                if text:
                    print(f"      {side}: " + "\n      ".join(text.strip().splitlines()[-6:]))
        for test, (plain, sealed) in list(r.unsteady.items())[:limit]:
            print(f"  [unsteady, first runs agree] {test}: plain {'/'.join(plain)}, sealed {'/'.join(sealed)}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sealbench-census")
    ap.add_argument("--only", action="append", default=[], help="a library's name (repeatable)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    ap.add_argument("--jobs", type=int, default=1, help="libraries at once (times are fair only with 1)")
    ap.add_argument("--repeat", type=int, default=3, help="plain and sealed runs per library (times: the median)")
    ap.add_argument("--recheck", type=int, default=2,
                    help="a library with differences gets plain runs up to 1 + RECHECK in all")
    ap.add_argument("--show", type=int, default=8, help="differences listed per library")
    ap.add_argument("--no-boxed", dest="boxed", action="store_false",
                    help="skip plain pytest in the scoring sandbox where the host's plain run agrees with "
                         "the sealed one (the judge is then compared on the differing tests only)")
    ap.add_argument("--build-only", action="store_true", help="download and build the venvs, run nothing")
    args = ap.parse_args(argv)
    suites = [s for s in SUITES if not args.only or s.name in args.only]
    unknown = set(args.only) - {s.name for s in SUITES}
    if unknown:
        ap.error(f"unknown library: {', '.join(sorted(unknown))} (known: {', '.join(s.name for s in SUITES)})")
    cache = args.cache.expanduser().absolute()
    # a census started in the background (``cmd &`` in a script) has SIGINT ignored, and every test
    # process would inherit that (anyio's test_keyboard_interrupt_does_not_resume_test then fails,
    # plainly and sealed alike): a handler of our own is reset to the default in each child
    signal.signal(signal.SIGINT, signal.default_int_handler)
    level = resolve_level("auto")
    commit, started, load_before = git_commit(), time.perf_counter(), os.getloadavg()[0]
    if args.build_only:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for venv in pool.map(lambda s: build_venv(s, fetch_source(s, cache), cache), suites):
                print(venv)
        return 0

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {msg}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda s: census_one(s, cache, args.timeout, max(1, args.repeat), args.recheck, say, args.boxed), suites))
    total_s, load_after = time.perf_counter() - started, os.getloadavg()[0]
    same = [r for r in rows if not r.error and not r.diffs]
    ratios = [(r.ratio, r.library) for r in rows if r.ratio is not None]
    worst = max(ratios) if ratios else None
    cpu_ratios = [(r.cpu_ratio, r.library) for r in rows if r.cpu_ratio is not None]
    worst_cpu = max(cpu_ratios) if cpu_ratios else None
    title = (f"honest census {time.strftime('%Y-%m-%d %H:%M')}, sealbench {commit}, sandbox {level}, "
             f"pytest {pytest_version()}, {os.cpu_count()} cores, load {load_before:.1f} -> {load_after:.1f}, "
             f"{args.repeat} runs each")
    print_table(rows, title)
    for r in rows:
        if r.subset != "all":
            print(f"{r.library} ({r.subset}): {r.command}")
        if r.boxed_s is not None:
            print(f"{r.library}: plain pytest in the scoring sandbox took {r.boxed_s:.1f} s "
                  f"(plain {r.plain_s:.1f} s, sealed {r.sealed_s:.1f} s)")
    print_differences(rows, args.show)
    n_diff = sum(len(r.diffs) for r in rows)
    n_stable = sum(len(r.stable_diffs) for r in rows)
    judged = [r for r in rows if not r.error]
    n_judge = sum(len(r.judge_diffs) for r in judged)
    n_judge_stable = sum(not d.flaky for r in judged for d in r.judge_diffs)
    print(f"\nthe judge (sealed against plain pytest in the same sandbox): "
          f"{sum(not r.judge_diffs for r in judged)}/{len(rows)} libraries identical; tests differing: {n_judge} "
          f"({n_judge_stable} stable, {n_judge - n_judge_stable} flaky)")
    print(f"against plain pytest on the host: {len(same)}/{len(rows)} libraries identical; tests differing: {n_diff} "
          f"({n_stable} stable, {n_diff - n_stable} flaky); worst ratio: "
          + (f"{worst[0]:.2f} ({worst[1]})" if worst else "-") + "; worst cpu ratio: "
          + (f"{worst_cpu[0]:.2f} ({worst_cpu[1]})" if worst_cpu else "-") + f"; census took {total_s:.0f} s")
    out = ROOT / "bench" / "results" / "honest_census.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "commit": commit, "sandbox": level,
                             "machine": platform.machine(), "cores": os.cpu_count(), "pytest": pytest_version(),
                             "load_before": load_before, "load_after": load_after,
                             "total_s": round(total_s, 1), "identical": len(same), "libraries": len(rows),
                             "differing": n_diff, "stable_differing": n_stable, "judge_differing": n_judge,
                             "judge_stable_differing": n_judge_stable,
                             "worst_ratio": round(worst[0], 3) if worst else None,
                             "worst_cpu_ratio": round(worst_cpu[0], 3) if worst_cpu else None,
                             "repeat": args.repeat,
                             "rows": [{**asdict(r), "ratio": r.ratio, "cpu_ratio": r.cpu_ratio,
                                       "diffs": [{**asdict(d), "flaky": d.flaky, "cause": d.cause} for d in r.diffs]}
                                      for r in rows]}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
