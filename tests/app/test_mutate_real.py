"""``sealbench pack mutate`` on real suites (issue 27, point 3): what real sdists showed —
toolz's typed pytest config, more_itertools' silence and packaging tools, tabulate's test
extras, temp paths in prompts, Ctrl-C. Small synthetic projects only (no network)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sealbench.builders.pack_requirements import detect_requirements, pytest_config_text


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


TYPED_PYPROJECT = '''[project]
name = "typed"
version = "1.0"

[tool.pytest.ini_options]
minversion = "6.0"
testpaths = ["typed"]
xfail_strict = true
timeout_retries = 3
faulthandler_timeout = 2.5
addopts = [
  "--strict-config",
  "-ra",
  "--cov=typed",
]
filterwarnings = [
  "error",
  "ignore:old:DeprecationWarning:",
]
'''


@pytest.mark.unit
def test_a_typed_pyproject_pytest_config_is_read(tmp_path: Path) -> None:
    """toolz 1.2.0: ``xfail_strict = true`` crashed with a TypeError; every TOML type is read."""
    root = _write(tmp_path / "p", {"pyproject.toml": TYPED_PYPROJECT})
    text = pytest_config_text(root)
    lines = text.splitlines()
    assert "xfail_strict = true" in lines and "timeout_retries = 3" in lines
    assert "faulthandler_timeout = 2.5" in lines and "minversion = 6.0" in lines
    assert "addopts = --strict-config -ra --cov=typed" in lines
    assert "error" in text and "ignore:old:DeprecationWarning:" in text
    req = detect_requirements(root, "")
    assert "pytest-cov" in req.lines            # the --cov inside the addopts list is seen


@pytest.mark.unit
@pytest.mark.parametrize("name, text", [
    ("pytest.ini", "[pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
    ("setup.cfg", "[metadata]\nname = typed\n\n[tool:pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
    ("tox.ini", "[tox]\nenvlist = py311\n\n[pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
])
def test_ini_style_pytest_configs_are_read(tmp_path: Path, name: str, text: str) -> None:
    root = _write(tmp_path / "p", {name: text})
    assert "xfail_strict = true" in pytest_config_text(root).splitlines()
    assert "pytest-cov" in detect_requirements(root, "").lines


@pytest.mark.unit
def test_native_pytest_table_and_odd_values_are_read(tmp_path: Path) -> None:
    """pytest 9's ``[tool.pytest]`` (typed values) beside ini_options; a nested table or a
    non-table ``tool.pytest`` is no crash."""
    root = _write(tmp_path / "p", {"pyproject.toml": '[tool.pytest]\nxfail_strict = false\n'
                                   'addopts = ["--cov=x"]\nweird = {a = 1}\n'})
    lines = pytest_config_text(root).splitlines()
    assert "xfail_strict = false" in lines and "addopts = --cov=x" in lines
    (root / "pyproject.toml").write_text('[tool]\npytest = "not a table"\n')
    assert pytest_config_text(root) == ""


@pytest.mark.unit
def test_build_system_requirements_are_left_out(tmp_path: Path) -> None:
    """more_itertools 11.2.1: requirements/development.txt pulls packaging.txt (flit_core,
    setuptools) into its environment; build-system requirements never run a test."""
    root = _write(tmp_path / "p", {
        "pyproject.toml": '[build-system]\nrequires = ["flit_core >=4,<5"]\nbuild-backend = "flit_core.buildapi"\n\n'
                          '[project]\nname = "moreish"\nversion = "1"\n',
        "requirements/development.txt": "--requirement testing.txt\n--requirement packaging.txt\n",
        "requirements/testing.txt": "coverage\nattrs\n",
        "requirements/packaging.txt": "flit>=4.0.2,<5\nflit_core>=4.0.2,<5\nsetuptools\nhatchling\nwheel\n"})
    req = detect_requirements(root, "import moreish\nimport attr\n")
    assert req.lines == ["attrs"], req.lines
    for name in ("flit_core", "setuptools", "hatchling"):
        assert any(d.startswith(name) and "build" in d for d in req.dropped), (name, req.dropped)
    # a suite that imports setuptools itself keeps it
    req = detect_requirements(root, "import setuptools\n")
    assert "setuptools" in req.lines


TABULATE_LIKE = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "tabby"\nversion = "1"\n\n'
                      '[project.optional-dependencies]\nwidechars = ["wcwidth"]\nyaml = ["PyYAML>=6"]\n'
                      'gui = ["unusedgui"]\n',
    "tox.ini": "[testenv]\ndeps =\n    pytest\n\n[testenv:py311-extra]\ndeps =\n    pytest\n    numpy\n"
               "    wcwidth\n\n[testenv:lint]\ndeps =\n    pre-commit\n",
    "setup.cfg": "[options.extras_require]\nfast = orjson\n",
}
TABULATE_TESTS = '''from pytest import skip
import pytest


def test_wide():
    try:
        import wcwidth  # noqa: F401
    except ImportError:
        skip("no wcwidth")


def test_numpy():
    np = pytest.importorskip("numpy")


def test_yaml():
    import yaml, orjson
'''


@pytest.mark.sandbox
def test_extras_the_tests_import_are_installed(tmp_path: Path) -> None:
    """tabulate: its tests import wcwidth (an extra), numpy (tox's -extra env); with only
    pytest installed 39 of 319 tests were skipped. Declared anywhere + imported = installed;
    declared but never imported (unusedgui, pre-commit) = left out as before."""
    root = _write(tmp_path / "p", TABULATE_LIKE)
    req = detect_requirements(root, TABULATE_TESTS)
    assert req.lines == ["numpy", "orjson", "pytest", "PyYAML>=6", "wcwidth"], req.lines  # pytest: [testenv]
    assert any(s.startswith("wcwidth") and "widechars" in s and "import" in s for s in req.sources), req.sources
    assert any(s.startswith("numpy") and "tox.ini [testenv:py311-extra]" in s for s in req.sources), req.sources
    assert not any("unusedgui" in line or "pre-commit" in line for line in req.lines)


# ---------------------------------------------------------------------------------------------
# Whole runs on a small project (offline wheels, as tests/app/test_pack_mutate.py)

CALC = '''"""Calc."""


def add(a, b):
    return a + b


def scale(xs, k):
    out = []
    for x in xs:
        out.append(x * k)
    return out


def above(xs, t):
    return [x for x in xs if x > t]
'''
TEST_CALC = '''import time

import pytest

from calc import core


def slow():
    time.sleep(0.05)


def test_add_small():
    slow()
    assert core.add(1, 2) == 3, f"add is wrong in {core.__file__}"


def test_add_big():
    slow()
    assert core.add(1000, 2345) == 3345, f"add is wrong in {core.__file__}"


def test_add_neg():
    assert core.add(-1, -2) == -3, f"add is wrong in {core.__file__}"


def test_scale():
    slow()
    assert core.scale([1, 2], 3) == [3, 6], f"scale is wrong in {core.__file__}"


def test_scale_zero():
    assert core.scale([1, 2], 0) == [0, 0], f"scale is wrong in {core.__file__}"


def test_above():
    assert core.above([1, 5, 9], 4) == [5, 9]


def test_above_edge():
    assert core.above([4, 5], 4) == [5]


def test_needs_a_missing_module():
    pytest.importorskip("no_such_module_here")
'''


def make_calc(root: Path) -> Path:
    return _write(root, {"pyproject.toml": '[project]\nname = "calc"\nversion = "0.1"\n',
                         "src/calc/__init__.py": "", "src/calc/core.py": CALC,
                         "tests/test_calc.py": TEST_CALC})


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    from envgen import offline_env_vars, offline_index

    wheels = offline_index(tmp_path_factory.mktemp("wheels"))
    mp = pytest.MonkeyPatch()
    for k, v in offline_env_vars(wheels).items():
        mp.setenv(k, v)
    yield tmp_path_factory.mktemp("envs")
    mp.undo()


def _cli(args: list[str], capsys) -> tuple[int, str, str]:
    from sealbench.app import cli

    try:
        rc = cli.main(["pack", "mutate", *args])
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped from `sealbench pack mutate` as a traceback")
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.sandbox
def test_a_run_says_its_progress_on_stderr(offline, tmp_path: Path, capsys, monkeypatch) -> None:
    """more_itertools ran 25 minutes silent: progress lines (tried, kept, refused by reason,
    times) go to stderr, time-spaced, and a last line with the totals."""
    import re
    import time

    monkeypatch.chdir(tmp_path)
    src = make_calc(tmp_path / "calc-0.1")
    t0 = time.monotonic()
    rc, out, err = _cli([str(src), "--out", str(tmp_path / "pack"), "--max-tasks", "2", "--env-root", str(offline),
                         "--test-timeout", "20", "--progress", "0.5"], capsys)
    wall = time.monotonic() - t0
    assert rc == 0, (out, err)
    beats = [ln for ln in err.splitlines() if ln.startswith("progress ")]
    assert beats, err
    # before the search there is nothing to count: no "tried 0 of 0"
    pat = (r"progress \d+m\d\ds: (tried \d+ of [1-9]\d* candidate mutants, kept \d+, refused \d+( \(.*\))?; )?"
           r"now .+ \(\d+m\d\ds\)")
    assert all(re.fullmatch(pat, ln) for ln in beats), beats
    assert len(beats) <= wall / 0.5 + 3, (len(beats), wall)            # time-spaced, not a flood
    assert any(re.search(r"refused [1-9]\d* \(\w", ln) for ln in beats), beats     # by reason
    assert re.search(r"^searching \d+ candidate mutants", err, re.M), err
    assert re.search(r"^done in \d+m\d\ds: tried \d+ mutants, kept 2, refused \d+$", err, re.M), err
    assert "Traceback" not in err and not any(ln.startswith("progress ") for ln in out.splitlines())
    assert not list(tmp_path.glob(".pack.unfinished*"))


@pytest.mark.sandbox
def test_prompts_quote_no_temp_path_and_the_summary_names_skipped_tests(offline, tmp_path: Path, capsys) -> None:
    """A prompt quoted the builder's temp path inside a failure message: repo-relative now.
    tabulate's skipped tests were never mentioned: the summary names them."""
    from sealbench.builders.pack_mutate import Options, mutate_pack, print_summary

    src = make_calc(tmp_path / "calc-0.1")
    opts = Options(src, tmp_path / "pack", max_tasks=2, test_timeout=20, env_root=offline)
    summary = mutate_pack(opts, log=lambda s: None)
    assert len(summary["kept"]) == 2, summary
    prompts = [p.read_text() for p in sorted((tmp_path / "pack").glob("tasks/*/prompt.md"))]
    quoted = [t for t in prompts if "is wrong in" in t]
    assert quoted, prompts
    for text in prompts:
        assert "sealbench-mutate-" not in text and "/tmp" not in text, text
    for text in quoted:
        assert re.search(r"is wrong in src/calc/core\.py", text), text
    capsys.readouterr()
    print_summary(summary)
    out = " ".join(capsys.readouterr().out.split())
    assert "1 tests were skipped unmutated" in out, out
    calc_tests = "tests/test_calc.py"   # the generated project's test file (a path in it, not of this repo)
    assert f"{calc_tests}::test_needs_a_missing_module (could not import 'no_such_module_here'" in out, out


@pytest.mark.sandbox
def test_ctrl_c_keeps_the_verified_tasks_and_the_same_command_goes_on(offline, tmp_path: Path, capsys,
                                                                        monkeypatch) -> None:
    """parse (issue 35): Ctrl-C threw away every verified task, with no way to resume. Ctrl-C
    (one sentence, exit 130) and a kill keep them in the unfinished sibling; another build's
    command is refused there rather than throw them away; the same command goes on from them,
    trying no mutant twice."""
    import json

    from sealbench.builders import pack_mutate
    from sealbench.builders.pack_common import TaskCheck

    monkeypatch.chdir(tmp_path)
    src = make_calc(tmp_path / "calc-0.1")
    real_try = pack_mutate.try_mutant
    tried: list[list] = [[]]                  # the mutants each run tried
    verified: list[str] = []

    def counted(p, m, logdir):
        if verified and len(tried) == 1:
            raise KeyboardInterrupt           # the first run, at the mutant after its first verified task
        tried[-1].append(pack_mutate._mutant_key(m))
        return real_try(p, m, logdir)

    def interrupted(pack, tid, **k):          # verification is not what is tested here: kept quick
        verified.append(tid)
        return TaskCheck(tid, True, "fail", "pass")

    monkeypatch.setattr(pack_mutate, "try_mutant", counted)
    monkeypatch.setattr(pack_mutate, "verify_task", interrupted)
    args = [str(src), "--out", str(tmp_path / "pack"), "--max-tasks", "2", "--env-root", str(offline),
            "--test-timeout", "20", "--progress", "0"]
    rc, out, err = _cli(args, capsys)
    unfinished = tmp_path / ".pack.unfinished"
    assert rc == 130 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last == (f"sealbench: pack mutate interrupted; 1 verified task kept in {unfinished}: run the same "
                    "command again to go on from them"), err
    first = [t.name for t in (unfinished / "tasks").iterdir()]
    assert len(first) == 1 and not (tmp_path / "pack").exists(), list(tmp_path.iterdir())
    kept_files = {f.relative_to(unfinished): f.read_bytes() for f in (unfinished / "tasks").rglob("*") if f.is_file()}
    # a kill leaves the same folder, its run gone
    mark = json.loads((unfinished / ".sealbench-unfinished").read_text())
    (unfinished / ".sealbench-unfinished").write_text(json.dumps({**mark, "pid": 999999999}))
    rc, out, err = _cli([*args, "--seed", "1"], capsys)               # another build: refused, nothing lost
    assert rc != 0 and f"{unfinished}: holds 1 verified task of an unfinished build that differs from this " \
        "one in --seed" in " ".join(err.split()), err
    assert [t.name for t in (unfinished / "tasks").iterdir()] == first
    tried.append([])
    verified.clear()
    rc, out, err = _cli(args, capsys)
    assert rc == 0, (out, err)
    assert "continuing the unfinished build in" in err and "1 verified task kept" in err, err
    assert re.search(r"^kept \S+ .*kept 2, ", err, re.M), err                       # the count goes on
    assert tried[1] and not set(tried[0]) & set(tried[1]), tried                      # nothing tried twice
    pack = tmp_path / "pack"
    assert first[0] in {t.name for t in (pack / "tasks").iterdir()} and len(list((pack / "tasks").iterdir())) == 2
    for rel, data in kept_files.items():
        if rel.name != "meta.json":                                      # its stratum is set at the end
            assert (pack / rel).read_bytes() == data, rel
    assert not unfinished.exists() and not list(pack.glob(".sealbench-*")), list(pack.iterdir())


@pytest.mark.sandbox
def test_a_build_whose_first_tasks_are_all_removed_for_one_cause_stops_saying_it(offline, tmp_path: Path, capsys,
                                                                                 monkeypatch) -> None:
    """parse's --cov made every oracle score tamper: 17 minutes, 0 tasks, nothing said. The first
    three removals for one cause stop the build with one sentence naming it and the fix."""
    from sealbench.builders import pack_mutate
    from sealbench.builders.pack_common import TaskCheck

    calls: list[str] = []

    def tampered(pack, tid, **k):
        calls.append(tid)
        return TaskCheck(tid, False, "fail", "tamper", "the oracle scored tamper: a tracer was set")

    monkeypatch.setattr(pack_mutate, "verify_task", tampered)
    monkeypatch.chdir(tmp_path)
    src = _write(make_calc(tmp_path / "calc-0.1"), {
        "src/calc/more.py": "def sub(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
        "tests/test_more.py": "from calc.more import mul, sub\n\n\ndef test_sub():\n    assert sub(3, 1) == 2\n\n\n"
                              "def test_sub_more():\n    assert sub(9, 4) == 5\n\n\ndef test_mul():\n"
                              "    assert mul(3, 2) == 6\n\n\ndef test_mul_more():\n    assert mul(4, 5) == 20\n",
        "pytest.ini": "[pytest]\naddopts = -ra\n    --strict-markers\n"})
    rc, out, err = _cli([str(src), "--out", str(tmp_path / "pack"), "--env-root", str(offline), "--test-timeout",
                         "20", "--progress", "0"], capsys)
    assert rc != 0 and len(calls) == 3, (calls, err)
    said = " ".join(err.split())
    assert ("stopped after the first 3 tasks were all removed because the oracle (the original code) scored tamper "
            "under sealbench's scoring; the scoring does not run the suite as the builder's own runs do") in said, err
    assert "(its addopts: -ra --strict-markers)" in said, err
    assert not (tmp_path / "pack").exists() and not list(tmp_path.glob(".pack*")), list(tmp_path.iterdir())


@pytest.mark.sandbox
def test_a_killed_runs_leftover_is_cleared_and_a_foreign_folder_kept(offline, tmp_path: Path) -> None:
    """A run of an earlier sealbench killed outright left its sibling ``.pack.unfinished-<pid>``:
    the next run clears it (its pid is gone); a folder of that shape without the marker is never
    touched, and one named as this version's unfinished build, without its marker, is refused."""
    from sealbench.builders.pack_mutate import Options, PackBuildError, mutate_pack

    src = make_calc(tmp_path / "calc-0.1")
    opts = Options(src, tmp_path / "pack", max_tasks=1, test_timeout=20, env_root=offline)
    (tmp_path / ".pack.unfinished").mkdir()
    with pytest.raises(PackBuildError, match=r"\.pack\.unfinished: exists and is not an unfinished build of "
                                             r"sealbench .*move it away"):
        mutate_pack(opts, log=lambda s: None)
    assert (tmp_path / ".pack.unfinished").is_dir() and not (tmp_path / "pack").exists()
    (tmp_path / ".pack.unfinished").rmdir()
    dead = tmp_path / ".pack.unfinished-999999999"
    (dead / "tasks").mkdir(parents=True)
    (dead / ".sealbench-unfinished").write_text("999999999\n")
    foreign = tmp_path / ".pack.unfinished-mine"
    foreign.mkdir()
    summary = mutate_pack(opts, log=lambda s: None)
    assert len(summary["kept"]) == 1 and (tmp_path / "pack" / "tasks").is_dir()
    assert not dead.exists() and foreign.is_dir()
    assert not list((tmp_path / "pack").glob(".sealbench-*")) and not (tmp_path / ".pack.unfinished").exists()


@pytest.mark.unit
def test_tests_nested_in_subpackages_are_tests_and_ids_name_their_package(tmp_path: Path) -> None:
    """toolz 1.2.0: toolz/sandbox/tests/test_core.py was taken for code under test (mutated),
    and the task ids took the first package (tlz, an alias) for toolz's modules."""
    from sealbench.builders.pack_common import detect_layout
    from sealbench.builders.pack_mutate import _package_of

    root = _write(tmp_path / "p", {"tlz/__init__.py": "", "toolz/__init__.py": "", "toolz/core.py": "",
                                   "toolz/tests/test_core.py": "", "toolz/sandbox/__init__.py": "",
                                   "toolz/sandbox/par.py": "", "toolz/sandbox/tests/test_par.py": "",
                                   "toolz/sandbox/tests/helper.py": ""})
    lay = detect_layout(root)
    assert "toolz/sandbox/tests/test_par.py" in lay.test_files
    assert "toolz/sandbox/tests/helper.py" in lay.support_files
    assert not any("/tests/" in f for f in lay.source_files), lay.source_files
    assert "toolz/sandbox/par.py" in lay.source_files
    assert _package_of(lay, "toolz/sandbox/par.py") == "toolz" and _package_of(lay, "tlz/__init__.py") == "tlz"


# cachetools 8.0.2 keeps its shared test methods in its tests package's __init__ (a mixin the test modules'
# TestCase classes inherit); JUnit names the file a method is defined in, so a catching test was
# placed in that __init__ — a support file the repo keeps — and the whole build stopped on
# "written but invalid" (visible_tests/tests/__init__.py beside repo/tests/__init__.py).
MIXIN_INIT = '''from calc import core


class CalcChecks:
    """Shared checks: every test module's TestCase runs them."""

    def test_add_pair(self):
        self.assertEqual(core.add(2, 3), 5)

    def test_add_zero(self):
        self.assertEqual(core.add(0, 7), 7)
'''
MIXIN_TESTS = '''import unittest

from calc import core

from . import CalcChecks


class CalcTest(CalcChecks, unittest.TestCase):
    def test_add_many(self):
        for a, b in [(1, 2), (5, 8)]:
            with self.subTest(a=a, b=b):
                self.assertEqual(core.add(a, b), a + b)

    def test_add_neg(self):
        self.assertEqual(core.add(-1, -2), -3)

    def test_scale(self):
        self.assertEqual(core.scale([1, 2], 3), [3, 6])

    def test_scale_zero(self):
        self.assertEqual(core.scale([1, 2], 0), [0, 0])

    def test_above(self):
        self.assertEqual(core.above([1, 5, 9], 4), [5, 9])

    def test_above_edge(self):
        self.assertEqual(core.above([4, 5], 4), [5])
'''


@pytest.mark.sandbox
def test_junit_names_the_module_that_collected_an_inherited_test(tmp_path: Path) -> None:
    import subprocess
    import sys

    from sealbench.builders.pack_common import read_junit

    root = _write(tmp_path / "calc-0.1", {"src/calc/__init__.py": "", "src/calc/core.py": CALC,
                                          "tests/__init__.py": MIXIN_INIT, "tests/test_calc.py": MIXIN_TESTS})
    junit = tmp_path / "j.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
                    "-o", "junit_family=xunit1", "tests"], cwd=root, capture_output=True,
                   env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"})
    got = {r.key for r in read_junit(junit, root)}
    assert "tests/test_calc.py::CalcTest::test_add_pair" in got, got          # inherited: its collecting module
    assert "tests/test_calc.py::CalcTest::test_add_many" in got, got
    assert not any(k.startswith("tests/__init__.py") for k in got), got
    # without the project's root the report is read as written (the file a method is defined in)
    assert any(r.file == "tests/__init__.py" for r in read_junit(junit)), "the report changed shape"


@pytest.mark.sandbox
def test_a_suite_with_tests_in_its_tests_package_builds(offline, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    src = _write(tmp_path / "calc-0.1", {"pyproject.toml": '[project]\nname = "calc"\nversion = "0.1"\n',
                                         "src/calc/__init__.py": "", "src/calc/core.py": CALC,
                                         "tests/__init__.py": MIXIN_INIT, "tests/test_calc.py": MIXIN_TESTS})
    rc, out, err = _cli([str(src), "--out", str(tmp_path / "pack"), "--max-tasks", "3", "--env-root", str(offline),
                         "--test-timeout", "20", "--progress", "0"], capsys)
    assert rc == 0, (out, err)
    tasks = sorted((tmp_path / "pack" / "tasks").iterdir())
    assert tasks, err
    for t in tasks:
        assert (t / "repo" / "tests" / "__init__.py").is_file()            # the support file stays in repo/
        for tree in ("visible_tests", "hidden_tests"):
            assert not (t / tree / "tests" / "__init__.py").exists(), t


@pytest.mark.sandbox
def test_a_task_that_breaks_the_contract_is_refused_and_the_search_goes_on(offline, tmp_path: Path, capsys,
                                                                          monkeypatch) -> None:
    """One mutant's invalid task stopped the whole cachetools build (exit 2, nothing kept); it is
    one refusal, named with its reason, and the next mutant may still make a task."""
    from sealbench.builders import pack_mutate
    from sealbench.builders.pack_common import PackBuildError

    real, calls = pack_mutate.write_task, []

    def first_breaks(out, task, strata=None):
        calls.append(task.id)
        if len(calls) == 1:
            raise PackBuildError(f"task {task.id} written but invalid: meta.json: field 'tests_layout': clash")
        return real(out, task, strata)

    monkeypatch.setattr(pack_mutate, "write_task", first_breaks)
    monkeypatch.chdir(tmp_path)
    src = make_calc(tmp_path / "calc-0.1")
    rc, out, err = _cli([str(src), "--out", str(tmp_path / "pack"), "--max-tasks", "1", "--env-root", str(offline),
                         "--test-timeout", "20", "--progress", "0"], capsys)
    assert rc == 0, (out, err)
    assert len(calls) >= 2 and not (tmp_path / "pack" / "tasks" / calls[0]).exists()
    assert f"removed {calls[0]}: task {calls[0]} written but invalid: meta.json: field 'tests_layout'" in err, err
    assert len(list((tmp_path / "pack" / "tasks").iterdir())) == 1
