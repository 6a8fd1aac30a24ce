"""Honest census: does sealbench's scoring command judge real, honest test suites exactly as
plain pytest does?

For each library of :data:`SUITES` (pinned versions, chosen so that together they cover async
tests, doctests, hypothesis, ctypes, gc utilities, subTests and test factories):

1. download its sdist (``pip download --no-binary :all: --no-deps``) into the cache and unpack
   it (``<cache>/src/``);
2. make one venv per library (``<cache>/venvs/``, the interpreter running this script), with
   the library installed from the unpacked sdist, its pinned test dependencies and the pytest of
   sealbench's own venv; kept while its marker file (``.census-installed``, the install spec)
   still matches;
3. run the suite PLAINLY (no sandbox, no seal) on a fresh copy of the unpacked source, with
   ``harness_env`` plus the venv's PATH/VIRTUAL_ENV, recording each test's outcome with the
   listen-only plugin ``bench/_census_outcomes.py`` (``-p _census_outcomes``);
4. run the same command on another fresh copy through sealbench's scoring command
   (``sealed_command._run_check``) in the bubblewrap sandbox the copy path of scoring builds
   (workspace and report folder writable, the suite's test folders frozen read-only, the venv
   readable), and take the outcomes from its report (``report["outcomes"]``, else the stream);
5. compare: a test differs when it is in one run only or its outcomes differ. A library with
   differences has its plain run repeated (``--recheck``, 2) to tell flakiness apart.

Run it (the first run downloads and builds, about ten minutes; the logs of the last runs stay in
``<cache>/logs/<library>/``)::

    .venv/bin/python bench/honest_census.py [--only wrapt] [--cache DIR] [--timeout 600] [--jobs 1]

Columns: ``library``/``version``; ``plain``/``sealed``: tests (and collection errors) each run
reported; ``differ``: tests in one run only or with another outcome (``flaky`` of them: a plain
rerun disagreed with the first plain run or agreed with the sealed one); ``plain s``/``sealed s``:
wall time of each run; ``ratio``: sealed / plain (target <= 1.15); ``verdict``: the sealed
report's own verdict kind; ``subset``: the test files run when the full suite is too slow.
Totals: libraries judged identically, tests differing, worst ratio. Each difference is listed
with both outcomes and the sealed run's text for that test.

Prints a table and appends one JSON line to ``bench/results/honest_census.jsonl``.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import inspect
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
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
    Suite("python-dateutil", "4.0.0", ("dateutil",), f"{HYPOTHESIS} tests docs", ("tests", "docs"),
          deps=("hypothesis==6.170.27", "freezegun==1.5.5", "attrs==26.1.0"),
          covers="hypothesis, warnings as errors, tz data, xfail_strict"),
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
    Suite("anyio", "4.16.0", ("anyio",),
          "tests/test_synchronization.py tests/test_taskgroups.py tests/test_to_thread.py "
          "tests/test_from_thread.py tests/test_pytest_plugin.py tests/test_fileio.py",
          ("tests",),
          deps=("hypothesis==6.170.27", "pytest-mock==3.17.0", "pytest-timeout==2.4.0", "trustme==1.2.1",
                "psutil==7.2.2", "blockbuster==1.5.29", "truststore==0.10.5", "uvloop==0.23.0"),
          covers="anyio's pytest plugin (asyncio, uvloop), pytester, threads",
          subset="6 files: synchronization, taskgroups, to_thread, from_thread, pytest_plugin, fileio"),
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
    #: the sealed report's verdict kind and problem (sealed runs only)
    verdict: str | None = None
    problem: str | None = None
    #: the sealed stream's failure text per test (sealed runs only)
    texts: dict[str, str] = field(default_factory=dict)
    logdir: str = ""


def run_plain(suite: Suite, source: Path, venv: Path, cache: Path, timeout_s: float, tag: str = "plain") -> Run:
    """The suite as plain pytest runs it: no sandbox, no seal; outcomes from ``_census_outcomes``."""
    work, logdir = cache / "work" / suite.name / tag, cache / "logs" / suite.name
    plugin_dir = cache / "plugin"
    plugin_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RECORDER, plugin_dir / RECORDER.name)
    ws = fresh_copy(source, work / "ws")
    record = work / "outcomes.json"
    record.unlink(missing_ok=True)
    env = harness_env({**task_env(venv), "PYTHONPATH": str(plugin_dir), "CENSUS_OUTCOMES": str(record),
                       "PYTEST_ADDOPTS": f"-p {RECORDER.stem}"})
    t0 = time.perf_counter()
    res = run_process(suite.command, ws, env, timeout_s, logdir / f"{tag}.stdout", logdir / f"{tag}.stderr")
    wall = time.perf_counter() - t0
    outcomes = json.loads(record.read_text()) if record.is_file() else {}
    return Run(outcomes, wall, res.returncode, logdir=str(logdir))


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


def run_sealed(suite: Suite, source: Path, venv: Path, cache: Path, timeout_s: float) -> Run:
    """The suite through sealbench's scoring command (``sealed_command._run_check``), sandboxed."""
    from sealbench.scoring.sealed_command import _run_check

    work, logdir = cache / "work" / suite.name / "sealed", cache / "logs" / suite.name
    ws = fresh_copy(source, work / "ws")
    extra: dict[str, Any] = {}
    if "junit_dir" in inspect.signature(_run_check).parameters:   # the scoring command before the rewrite
        reports = work / "reports"
        if reports.exists():
            shutil.rmtree(reports)
        reports.mkdir(parents=True)
        extra["junit_dir"] = reports
    box = scoring_box(ws, list(extra.values()), venv, suite)
    t0 = time.perf_counter()
    out = _run_check(suite.command, ws, logdir, "sealed", timeout_s, box, **extra,
                     import_paths=(), packages=suite.packages, task_env=task_env(venv), expected_ids=None)
    wall = time.perf_counter() - t0
    report = out.report or {}
    return Run(sealed_outcomes(out), wall, out.returncode, verdict=report.get("kind"),
               problem=report.get("problem") or out.infra_reason or out.junit_error,
               texts=_failure_texts(out.stream or []), logdir=str(logdir))


# ----------------------------------------------------------------------------------------------
# Comparing


@dataclass
class Difference:
    test: str
    plain: str          #: "-" when the plain run did not report it
    sealed: str         #: "-" when the sealed run did not report it
    flaky: bool = False
    plain_reruns: list[str] = field(default_factory=list)
    sealed_text: str = ""


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
    plain_tests: int = 0
    sealed_tests: int = 0
    plain_s: float = 0.0
    sealed_s: float = 0.0
    plain_rc: int | None = None
    sealed_rc: int | None = None
    plain_counts: dict[str, int] = field(default_factory=dict)
    verdict: str | None = None
    problem: str | None = None
    diffs: list[Difference] = field(default_factory=list)
    error: str | None = None
    logdir: str = ""

    @property
    def ratio(self) -> float | None:
        return self.sealed_s / self.plain_s if self.plain_s and self.sealed_s else None

    @property
    def stable_diffs(self) -> list[Difference]:
        return [d for d in self.diffs if not d.flaky]


def counts(outcomes: Mapping[str, str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in outcomes.values():
        out[o] = out.get(o, 0) + 1
    return dict(sorted(out.items()))


def census_one(suite: Suite, cache: Path, timeout_s: float, recheck: int,
               say: Callable[[str], None]) -> Row:
    row = Row(suite.name, suite.version, suite.covers, suite.subset or "all", suite.command)
    try:
        source = fetch_source(suite, cache)
        venv = build_venv(suite, source, cache)
        say(f"{suite.name}: plain run")
        plain = run_plain(suite, source, venv, cache, timeout_s)
        say(f"{suite.name}: sealed run ({plain.wall_s:.1f} s plain, {len(plain.outcomes)} tests)")
        sealed = run_sealed(suite, source, venv, cache, timeout_s)
    except (subprocess.CalledProcessError, OSError) as exc:
        row.error = f"{type(exc).__name__}: {exc}"
        return row
    row.plain_tests, row.sealed_tests = len(plain.outcomes), len(sealed.outcomes)
    row.plain_s, row.sealed_s = plain.wall_s, sealed.wall_s
    row.plain_rc, row.sealed_rc = plain.returncode, sealed.returncode
    row.plain_counts = counts(plain.outcomes)
    row.verdict, row.problem, row.logdir = sealed.verdict, sealed.problem, sealed.logdir
    row.diffs = differences(plain.outcomes, sealed.outcomes)
    for i in range(recheck if row.diffs else 0):
        say(f"{suite.name}: {len(row.diffs)} differences; plain rerun {i + 1}/{recheck}")
        again = run_plain(suite, source, venv, cache, timeout_s, tag=f"plain-rerun{i + 1}")
        for d in row.diffs:
            d.plain_reruns.append(again.outcomes.get(d.test, "-"))
    for d in row.diffs:
        d.flaky = any(o != d.plain or o == d.sealed for o in d.plain_reruns)
        d.sealed_text = sealed.texts.get(d.test, "")
    return row


# ----------------------------------------------------------------------------------------------
# Output


def git_commit() -> str:
    res = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"], capture_output=True, text=True)
    return res.stdout.strip() or "?"


HEADERS = ("library", "version", "plain", "sealed", "differ", "plain s", "sealed s", "ratio", "verdict", "subset")


def cells(r: Row) -> tuple[str, ...]:
    if r.error:
        return (r.library, r.version, "-", "-", "-", "-", "-", "-", "error", r.error[:60])
    flaky = sum(d.flaky for d in r.diffs)
    differ = f"{len(r.diffs)}" + (f" ({flaky} flaky)" if flaky else "")
    ratio = f"{r.ratio:.2f}" if r.ratio is not None else "-"
    return (r.library, r.version, str(r.plain_tests), str(r.sealed_tests), differ, f"{r.plain_s:.1f}",
            f"{r.sealed_s:.1f}", ratio, str(r.verdict), r.subset)


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
    for i, h in enumerate(HEADERS):
        t.add_column(h, justify="right" if 2 <= i <= 7 else "left")
    for r in rows:
        t.add_row(*cells(r))
    Console(width=max(shutil.get_terminal_size().columns, 150)).print(t)


def print_differences(rows: list[Row], limit: int) -> None:
    for r in rows:
        if not r.diffs and not r.error:
            continue
        print(f"\n{r.library} {r.version}: {r.command}")
        print(f"  plain exit {r.plain_rc} {r.plain_counts}; sealed exit {r.sealed_rc}, verdict {r.verdict}"
              + (f": {r.problem}" if r.problem else "") + f"; logs {r.logdir}")
        for d in r.diffs[:limit]:
            rerun = f" (plain reruns: {', '.join(d.plain_reruns)})" if d.plain_reruns else ""
            print(f"  {'flaky ' if d.flaky else ''}{d.test}: plain {d.plain}, sealed {d.sealed}{rerun}")
            if d.sealed_text:
                text = d.sealed_text.strip().splitlines()
                print("      " + "\n      ".join(text[-6:]))
        if len(r.diffs) > limit:
            print(f"  ... and {len(r.diffs) - limit} more (--show N)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "sealbench-census")
    ap.add_argument("--only", action="append", default=[], help="a library's name (repeatable)")
    ap.add_argument("--timeout", type=float, default=600, help="seconds per run")
    ap.add_argument("--jobs", type=int, default=1, help="libraries at once (times are fair only with 1)")
    ap.add_argument("--recheck", type=int, default=2, help="plain reruns of a library with differences")
    ap.add_argument("--show", type=int, default=8, help="differences listed per library")
    ap.add_argument("--build-only", action="store_true", help="download and build the venvs, run nothing")
    args = ap.parse_args(argv)
    suites = [s for s in SUITES if not args.only or s.name in args.only]
    unknown = set(args.only) - {s.name for s in SUITES}
    if unknown:
        ap.error(f"unknown library: {', '.join(sorted(unknown))} (known: {', '.join(s.name for s in SUITES)})")
    cache = args.cache.expanduser().absolute()
    level = resolve_level("auto")
    commit, started = git_commit(), time.perf_counter()
    if args.build_only:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            for venv in pool.map(lambda s: build_venv(s, fetch_source(s, cache), cache), suites):
                print(venv)
        return 0

    def say(msg: str) -> None:
        print(f"[{time.perf_counter() - started:6.0f} s] {msg}", file=sys.stderr, flush=True)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(lambda s: census_one(s, cache, args.timeout, args.recheck, say), suites))
    total_s = time.perf_counter() - started
    same = [r for r in rows if not r.error and not r.diffs]
    ratios = [(r.ratio, r.library) for r in rows if r.ratio is not None]
    worst = max(ratios) if ratios else None
    title = (f"honest census {time.strftime('%Y-%m-%d %H:%M')}, sealbench {commit}, sandbox {level}, "
             f"pytest {pytest_version()}, {os.cpu_count()} cores")
    print_table(rows, title)
    print_differences(rows, args.show)
    n_diff = sum(len(r.diffs) for r in rows)
    n_stable = sum(len(r.stable_diffs) for r in rows)
    print(f"\njudged identically: {len(same)}/{len(rows)} libraries; tests differing: {n_diff} "
          f"({n_stable} stable, {n_diff - n_stable} flaky); worst ratio: "
          + (f"{worst[0]:.2f} ({worst[1]})" if worst else "-") + f"; census took {total_s:.0f} s")
    out = ROOT / "bench" / "results" / "honest_census.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "commit": commit, "sandbox": level,
                             "machine": platform.machine(), "cores": os.cpu_count(), "pytest": pytest_version(),
                             "total_s": round(total_s, 1), "identical": len(same), "libraries": len(rows),
                             "differing": n_diff, "stable_differing": n_stable,
                             "worst_ratio": round(worst[0], 3) if worst else None,
                             "rows": [{**asdict(r), "ratio": r.ratio} for r in rows]}, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
