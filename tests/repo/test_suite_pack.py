"""Checks for the bundled demo task pack in suite/.

* every meta.json matches the key table of the pack contract;
* every task fails before the fix, passes after `git apply oracle.patch`, and
  still fails with a stub change (delegated to tools/verify_suite.py, run once
  for the whole pack on two threads);
* the pack is exactly what tools/build_suite.py generates from tools/suite_src/
  and the pack's own test folders (the one place a task's tests are written),
  also when it regenerates the pack in place.
"""

import filecmp
import json
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1].parent
SUITE = ROOT / "suite"
TASKS = SUITE / "tasks"
sys.path.insert(0, str(ROOT / "tools"))

import build_suite  # noqa: E402
import verify_suite  # noqa: E402

TASK_DIRS = sorted(p for p in TASKS.iterdir() if p.is_dir()) if TASKS.exists() else []
TASK_IDS = [p.name for p in TASK_DIRS]

KEY_TYPES = {
    "id": str, "title": str, "stratum": str, "language": str, "time_box_sec": int,
    "visible_command": str, "hidden_command": str, "failing_tests": int, "loc": int,
}
OPTIONAL = {"notes": str, "tags": list}
TIME_BOX = {"xs": 1200, "s": 1800, "m": 2700}


def load_meta(task_dir):
    return json.loads((task_dir / "meta.json").read_text(encoding="utf-8"))


@pytest.mark.unit
def test_pack_has_eight_tasks_per_stratum():
    counts = {}
    for task_dir in TASK_DIRS:
        stratum = load_meta(task_dir)["stratum"]
        counts[stratum] = counts.get(stratum, 0) + 1
    assert counts == {"xs": 8, "s": 8, "m": 8}


@pytest.mark.unit
def test_pack_level_checks():
    assert verify_suite.check_pack(SUITE) == []


@pytest.mark.unit
@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=TASK_IDS)
def test_meta_json(task_dir):
    meta = load_meta(task_dir)
    assert set(KEY_TYPES) <= set(meta)
    assert set(meta) <= set(KEY_TYPES) | set(OPTIONAL)
    for key, typ in list(KEY_TYPES.items()) + list(OPTIONAL.items()):
        if key in meta:
            assert isinstance(meta[key], typ) and not isinstance(meta[key], bool), key
    assert meta["id"] == task_dir.name
    assert re.match(r"^(xs|s|m)[0-9]{2}-[a-z0-9-]+$", meta["id"])
    assert meta["id"].split("-")[0].rstrip("0123456789") == meta["stratum"]
    assert meta["title"].strip() and "\n" not in meta["title"]
    assert meta["language"] == "python"
    assert meta["time_box_sec"] == TIME_BOX[meta["stratum"]]
    assert meta["visible_command"] == "python -m pytest -q -p no:cacheprovider visible_tests"
    assert meta["hidden_command"] == "python -m pytest -q -p no:cacheprovider hidden_tests"
    assert meta["failing_tests"] >= 1
    assert meta["loc"] == verify_suite.count_loc(task_dir / "repo")
    assert all(isinstance(t, str) for t in meta.get("tags", []))


@pytest.mark.unit
@pytest.mark.parametrize("task_dir", TASK_DIRS, ids=TASK_IDS)
def test_static_checks(task_dir):
    denylist = verify_suite.load_denylist(SUITE / "denylist.txt")
    problems, _ = verify_suite.check_task(task_dir, denylist, dynamic=False)
    assert problems == []


@pytest.fixture(scope="session")
def dynamic_results():
    """Run the fail-before / pass-after / stub checks once for every task."""
    meta = {d.name: load_meta(d) for d in TASK_DIRS}

    def run(task_dir):
        # outcomes only: speed is the tool's to measure (it times a slow run twice; not here)
        return task_dir.name, verify_suite.check_runs(task_dir, meta[task_dir.name], retime=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(pool.map(run, TASK_DIRS))


@pytest.mark.sandbox
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_fail_before_pass_after(task_id, dynamic_results):
    problems, _slowest = dynamic_results[task_id]
    # speed is measured by tools/verify_suite.py, never asserted in a test
    assert problems == []


def shipped_failing(task_dir):
    # failing_tests is taken from the shipped meta.json instead of being
    # re-measured: test_fail_before_pass_after already checks it against a
    # real run, and this keeps the module well inside its time budget
    return load_meta(TASKS / Path(task_dir).name)["failing_tests"]


def walk(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def assert_same_tree(built, shipped):
    assert walk(built) == walk(shipped)
    for rel in walk(shipped):
        assert filecmp.cmp(built / rel, shipped / rel, shallow=False), rel


@pytest.mark.unit
def test_pack_matches_generator(tmp_path):
    build_suite.main(["--root", str(tmp_path)], measure=shipped_failing)
    assert_same_tree(tmp_path / "suite" / "tasks", TASKS)


@pytest.mark.unit
def test_regenerating_in_place_keeps_the_tests_it_reads(tmp_path, monkeypatch):
    """The tests are read from the pack the generator rewrites: in place it keeps them (even when
    the build breaks half-way) and clears the rest (a stale file, a task no longer in
    tools/suite_src, a __pycache__)."""
    copy = tmp_path / "suite" / "tasks"
    shutil.copytree(TASKS, copy)
    monkeypatch.setattr(build_suite, "TESTS", copy)
    first = copy / TASK_IDS[0]
    (first / "repo" / "stale.py").write_text("x = 1\n")
    (first / "hidden_tests" / "__pycache__").mkdir()
    (first / "hidden_tests" / "__pycache__" / "t.pyc").write_bytes(b"\0")
    (copy / "xs99-gone" / "visible_tests").mkdir(parents=True)
    (copy / "xs99-gone" / "visible_tests" / "test_gone.py").write_text("def test_gone(): pass\n")

    def broken(task_dir):
        raise RuntimeError("the measurement broke")

    with pytest.raises(RuntimeError):
        build_suite.main(["--root", str(tmp_path)], measure=broken)
    assert all(build_suite.read_tests(copy / t) == build_suite.read_tests(TASKS / t) for t in TASK_IDS)
    build_suite.main(["--root", str(tmp_path)], measure=shipped_failing)
    assert_same_tree(copy, TASKS)


@pytest.mark.unit
def test_a_task_without_tests_in_the_pack_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(build_suite, "TESTS", tmp_path / "empty")
    with pytest.raises(SystemExit, match="no test files in"):
        build_suite.main(["--root", str(tmp_path)], measure=shipped_failing)
    assert not (tmp_path / "suite").exists()
