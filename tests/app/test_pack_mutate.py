"""``sealbench pack mutate`` (issue 14, point 5a): a private pack of verified single-site mutants
from a project's sdist, its environment only from a local wheel folder (no network)."""

from __future__ import annotations

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from envgen import offline_env_vars, offline_index
from sealbench.builders import mutant_tasks as mt
from sealbench.builders.mutants import find_mutants
from sealbench.builders.pack_common import PackBuildError, detect_layout, unpack_source
from sealbench.builders.pack_mutate import Options, mutate_pack, prepare, try_mutant
from sealbench.builders.pack_requirements import detect_requirements
from sealbench.leak.leak_hidden import hidden_test_hits

NUMBERS = '''"""Numbers."""


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def intcomma(n):
    s = str(abs(n))
    groups = []
    while len(s) > 3:
        groups.insert(0, s[-3:])
        s = s[:-3]
    groups.insert(0, s)
    out = ",".join(groups)
    return "-" + out if n < 0 else out


def count_up(n):
    i = 0
    total = 0
    while i < n:
        total += i
        i += 1
    return total


def __repr__():
    return 1 + 1
'''
TEXT = '''import tinydep


def shout(s):
    return s.upper() + tinydep.BANG


def is_blank(s):
    return s is None or s.strip() == ""


def truncate(s, n):
    if len(s) <= n:
        return s
    return s[:n - 1] + "~"
'''
TEST_NUMBERS = '''import pytest

from tests.helpers import same
from tinyfmt.numbers import clamp, count_up, intcomma


def test_clamp_low():
    assert clamp(-5, 0, 10) == 0


def test_clamp_high():
    assert clamp(50, 0, 10) == 10


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


class TestIntcomma:
    def test_small(self):
        assert same(intcomma(999), "999")

    def test_thousands(self):
        assert same(intcomma(1234567), "1,234,567")

    def test_negative(self):
        assert same(intcomma(-1234), "-1,234")

    @pytest.mark.parametrize("n,s", [(1000, "1,000"), (100, "100")])
    def test_param(self, n, s):
        assert intcomma(n) == s


def test_count_up():
    assert count_up(4) == 6


def test_count_up_five():
    assert count_up(5) == 10
'''
TEST_TEXT = '''import tinydep

from tests.helpers import same
from tinyfmt.text import is_blank, shout, truncate


def test_shout():
    assert shout("hi") == "HI" + tinydep.BANG


def test_shout_empty():
    assert same(shout(""), tinydep.BANG)


def test_blank():
    assert is_blank("  ") and is_blank(None)


def test_not_blank():
    assert not is_blank("x")


def test_truncate_short():
    assert truncate("abc", 5) == "abc"


def test_truncate_exact():
    assert truncate("abcde", 5) == "abcde"


def test_truncate_long():
    assert same(truncate("abcdef", 4), "abc~")
'''
PYPROJECT = '''[project]
name = "tinyfmt"
version = "0.1"
dependencies = ["tinydep==1.0"]

[project.optional-dependencies]
test = ["pytest-cov", "black"]

[tool.pytest.ini_options]
testpaths = ["tests"]
'''


def make_project(root: Path) -> Path:
    files = {"pyproject.toml": PYPROJECT, "src/tinyfmt/__init__.py": "", "src/tinyfmt/numbers.py": NUMBERS,
             "src/tinyfmt/text.py": TEXT, "tests/__init__.py": "",
             "tests/helpers.py": "def same(a, b):\n    return a == b\n",
             "tests/test_numbers.py": TEST_NUMBERS, "tests/test_text.py": TEST_TEXT}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def make_sdist(tmp: Path) -> Path:
    proj = make_project(tmp / "tinyfmt-0.1")
    sdist = tmp / "tinyfmt-0.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        tf.add(proj, arcname="tinyfmt-0.1")
    return sdist


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    wheels = offline_index(tmp_path_factory.mktemp("wheels"),
                           {"tinydep==1.0": {"tinydep/__init__.py": "BANG = '!'\n"}})
    mp = pytest.MonkeyPatch()
    for k, v in offline_env_vars(wheels).items():
        mp.setenv(k, v)
    yield wheels
    mp.undo()


@pytest.fixture(scope="module")
def built(offline, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mutate")
    sdist = make_sdist(tmp)
    opts = Options(sdist, tmp / "pack", max_tasks=3, seed=3, test_timeout=20, env_root=tmp / "envs")
    lines: list[str] = []
    return opts, mutate_pack(opts, log=lines.append), lines


@pytest.mark.unit
def test_layout_requirements_and_an_unsafe_sdist(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    lay = detect_layout(root)
    assert (lay.kind, lay.packages, lay.import_paths) == ("src", ["tinyfmt"], ["src"])
    assert lay.test_files == ["tests/test_numbers.py", "tests/test_text.py"]
    assert lay.support_files == ["tests/__init__.py", "tests/helpers.py"]
    req = detect_requirements(root, TEST_NUMBERS + TEST_TEXT)
    assert req.lines == ["tinydep==1.0"]           # coverage unused, black a dev tool: left out, said why
    assert any("pytest-cov" in d and "--cov" in d for d in req.dropped)
    assert any(d.startswith("black") and "development tool" in d for d in req.dropped)
    (root / "pyproject.toml").write_text(PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "--cov=tinyfmt"'))
    req = detect_requirements(root, "")
    assert "pytest-cov" in req.lines and req.plugins == ["pytest-cov"]
    bad = tmp_path / "bad.tar.gz"
    evil = tmp_path / "evil.txt"
    evil.write_text("x")
    with tarfile.open(bad, "w:gz") as tf:
        tf.add(evil, arcname="../evil.txt")
    with pytest.raises(PackBuildError, match=r"bad.tar.gz: member '../evil.txt'"):
        unpack_source(bad, tmp_path / "out")


@pytest.mark.unit
def test_mutants_are_single_site_and_skip_what_they_must() -> None:
    ms = find_mutants(NUMBERS, "src/tinyfmt/numbers.py")
    assert ms and {m.function for m in ms} == {"clamp", "intcomma", "count_up"}   # not __repr__
    for m in ms:
        new = m.apply(NUMBERS)
        diff = [(a, b) for a, b in zip(NUMBERS.splitlines(), new.splitlines()) if a != b]
        assert len(diff) == 1 and len(new.splitlines()) == len(NUMBERS.splitlines())
    assert {m.operator for m in ms} >= {"'<' -> '<='", "'+=' -> '-='", "'>' -> '>='", "'0' -> '1'"}


@pytest.mark.unit
def test_prune_keeps_the_rest_byte_identical() -> None:
    out = mt.prune_tests(TEST_NUMBERS, ["TestIntcomma::test_negative", "test_clamp_high"])
    assert "test_negative" not in out and "test_clamp_high" not in out
    assert out.replace("\n", "") in TEST_NUMBERS.replace("\n", "") or "test_thousands" in out
    assert mt.prune_tests(TEST_NUMBERS, []) == TEST_NUMBERS
    only = "class TestA:\n    def test_x(self):\n        assert 1\n"
    assert mt.prune_tests(only, ["TestA::test_x"]) == "class TestA:\n    pass\n"


@pytest.mark.sandbox
def test_equivalent_and_hanging_mutants_are_refused(offline, tmp_path: Path) -> None:
    sdist = make_sdist(tmp_path)
    opts = Options(sdist, tmp_path / "pack", test_timeout=5, env_root=tmp_path / "envs")
    p = prepare(opts, tmp_path / "work", lambda s: None)
    assert len(p.files) == 2 and len(p.passed) == 17
    ms = {(m.lineno, m.operator): m for m in find_mutants(NUMBERS, "src/tinyfmt/numbers.py")}
    equivalent = ms[(5, "'<' -> '<='")]          # clamp(lo, lo, hi) returns lo either way
    hang = ms[(28, "'+=' -> '-='")]               # i -= 1: the loop never ends
    assert try_mutant(p, equivalent, tmp_path / "l1").refused == "equivalent"
    assert try_mutant(p, hang, tmp_path / "l2").refused == "hangs"
    caught = try_mutant(p, ms[(15, "'>' -> '>='")], tmp_path / "l3")
    assert caught.refused is None and len({r.key for r in caught.catching}) >= 2
    assert (p.root / "src/tinyfmt/numbers.py").read_text() == NUMBERS      # restored after each run


@pytest.mark.sandbox
def test_pack_mutate_makes_verified_tasks(built) -> None:
    opts, summary, _ = built
    pack = Path(opts.out)
    kept = summary["kept"]
    assert len(kept) >= 3, summary
    assert (pack / "environment" / "requirements.txt").read_text().splitlines()[-1] == "tinydep==1.0"
    assert (pack / "denylist.txt").read_text().startswith("#") and not (pack / "split_manifest.json").exists()
    assert set(summary["strata"].values()) <= {"xs", "s", "m"} and "xs" in summary["strata"].values()
    for tid in kept:
        t = pack / "tasks" / tid
        meta = json.loads((t / "meta.json").read_text())
        assert tid.startswith("tinyfmt-") and meta["id"] == tid
        assert meta["tests_layout"] == "repo" and meta["support_files"] == ["tests/__init__.py", "tests/helpers.py"]
        assert meta["import_paths"] == ["src"] and meta["language"] == "python" and meta["time_box_sec"] == 1200
        assert meta["visible_command"].startswith("python -m pytest -q -p no:cacheprovider tests/")
        assert "never published" in meta["notes"] and "tinyfmt-0.1.tar.gz sha256" in meta["notes"]
        assert meta["failing_tests"] >= 2
        assert not list((t / "repo").rglob("test_*.py")) and (t / "repo/tests/helpers.py").is_file()
        vis = {p.relative_to(t / "visible_tests").as_posix(): p.read_text() for p in (t / "visible_tests").rglob("*.py")}
        hid = {p.relative_to(t / "hidden_tests").as_posix(): p.read_text() for p in (t / "hidden_tests").rglob("*.py")}
        assert vis and hid and set(vis) <= set(hid)
        vis_names = {n for text in vis.values() for n in _test_names(text)}
        hid_names = {n for text in hid.values() for n in _test_names(text)}
        assert hid_names - vis_names, "the visible tree must lack the hidden-only tests"
        assert hidden_test_hits(t) == []          # the pipeline's leak check would pass it
        prompt = (t / "prompt.md").read_text()
        assert not any(n in prompt for n in hid_names - vis_names)
        ws = t / "ws"
        subprocess.run(["cp", "-r", str(t / "repo"), str(ws)], check=True)
        subprocess.run(["git", "apply", str(t / "oracle.patch")], cwd=ws, check=True)
        subprocess.run(["rm", "-rf", str(ws)], check=True)
    assert summary["refused"].get("equivalent", 0) >= 1, summary      # e.g. clamp's x < lo -> x <= lo
    assert any(r[1] == "refused" and "no test fails" in r[2] for r in summary["rows"])


def _test_names(text: str) -> set[str]:
    import re

    return set(re.findall(r"def (test_\w+)", text))


@pytest.mark.unit
def test_the_cli_has_the_pack_group() -> None:
    from sealbench.app import cli

    with pytest.raises(SystemExit) as e:
        cli.main(["pack", "mutate", "--help"])
    assert e.value.code == 0


@pytest.mark.sandbox
def test_a_project_that_turns_warnings_into_errors_scores_its_oracle(tmp_path: Path) -> None:
    """Real projects run with ``filterwarnings = error`` (humanize does): the sealed report's
    own canaries must not leak a ResourceWarning into the first test (it did: an unclosed file)."""
    from packgen import write_pytest_task
    from sealbench.scoring.scoring import score_patch

    t = write_pytest_task(tmp_path / "tasks")
    (t / "repo" / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    meta = json.loads((t / "meta.json").read_text())
    res = score_patch(t, meta, (t / "oracle.patch").read_bytes(), tmp_path / "logs", 60)
    assert res.status == "pass", (res.reason, (tmp_path / "logs" / "visible.stdout").read_text()[-1500:])


@pytest.mark.sandbox
def test_verify_refuses_a_task_whose_hidden_tests_the_worker_can_read(tmp_path: Path) -> None:
    from packgen import write_pytest_task
    from sealbench.builders.pack_common import verify_task

    t = write_pytest_task(tmp_path / "pack" / "tasks")
    line = '    assert add(1000000, 2345678) == 3345678, "big numbers add up"\n'
    (t / "hidden_tests" / "test_hidden.py").write_text((t / "hidden_tests" / "test_hidden.py").read_text()
                                                      + "\n\ndef test_big():\n" + line)
    assert verify_task(tmp_path / "pack", "pt", sandbox_mode="off").ok
    (t / "repo" / "README.md").write_text("Example:\n\n" + line)
    check = verify_task(tmp_path / "pack", "pt", sandbox_mode="off")
    assert not check.ok and "leak suspect" in check.reason and "repo/README.md" in check.reason


@pytest.mark.unit
def test_a_coverage_plugin_the_config_switches_on_is_switched_off_in_the_task_commands(tmp_path: Path) -> None:
    """parse's config has ``--cov`` (and could have ``--cov-fail-under``, which fails a run of some
    test files whose every test passes): pytest-cov stays loaded, so the config's options parse,
    and ``--no-cov`` in the command switches its work off, for the builder's runs and the scoring."""
    from sealbench.builders.pack_common import pytest_command
    from sealbench.builders.pack_requirements import pytest_addopts

    cmd = pytest_command(["pytest_cov.plugin", "pytest_mock"], ["test/test_a.py"])
    assert cmd == "python -m pytest -q -p no:cacheprovider -p pytest_cov.plugin -p pytest_mock --no-cov test/test_a.py"
    # honest: without the plugin loaded the option would be a usage error, so it is never added
    assert pytest_command(["pytest_mock"], ["test/test_a.py"]) == \
        "python -m pytest -q -p no:cacheprovider -p pytest_mock test/test_a.py"
    root = make_project(tmp_path / "p")
    assert pytest_addopts(root) == ""
    (root / "pyproject.toml").write_text(PYPROJECT.replace('testpaths = ["tests"]', 'addopts = "--cov=tinyfmt '
                                                           '--cov-branch --doctest-modules"'))
    assert pytest_addopts(root) == "--cov=tinyfmt --cov-branch --doctest-modules"


@pytest.mark.unit
def test_fail_fast_stops_on_the_third_removal_for_one_cause_only() -> None:
    from sealbench.builders.pack_common import FailFast, TaskCheck, removal_cause

    tamper = removal_cause(TaskCheck("a", False, "fail", "tamper", "the oracle scored tamper: x"))
    empty = removal_cause(TaskCheck("b", False, "pass", "pass", "the empty diff scored pass"))
    leak = removal_cause(TaskCheck("c", False, reason="leak suspect: the worker can read its hidden tests: y"))
    assert tamper != empty and leak is None and removal_cause(TaskCheck("d", True, "fail", "pass")) is None
    stop = FailFast("--cov=parse")
    assert [stop.removed(c) for c in (tamper, tamper, empty, tamper, leak, tamper)] == [None] * 6
    sentence = stop.removed(tamper)
    assert sentence.startswith("stopped after the first 3 tasks were all removed because the oracle (the original "
                               "code) scored tamper") and "(its addopts: --cov=parse)" in sentence
    assert ". " not in sentence                                                  # one sentence
    kept = FailFast()
    kept.removed(tamper), kept.removed(tamper), kept.kept_one()
    assert kept.removed(tamper) is None and kept.removed(tamper) is None   # tasks verify: a task's own cause
