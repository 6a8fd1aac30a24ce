"""The test suite's own machinery (tests/conftest.py, tests/pipeline_runs.py): a finished run shared
by the parallel workers is built once, a failed build is built again, and the slowest modules are
handed out first with each module's tests kept together."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

import conftest
import pipeline_runs

pytestmark = pytest.mark.unit


class _Factory:
    """What ``shared_run`` reads of pytest's TempPathFactory: a worker's temporary folder."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        self.base.mkdir(parents=True, exist_ok=True)
        return self.base


def _fake_build(wd: Path, **cfg) -> pipeline_runs.FinishedRun:
    with open(wd.parent / "builds.log", "a") as log:  # one line per build, from any process
        log.write(f"{os.getpid()}\n")
    (wd / "made").write_text("yes")
    time.sleep(0.5)  # long enough for the other workers to ask meanwhile
    return pipeline_runs.FinishedRun(wd, "console of the build")


WORKER = """
import os, sys, time
from pathlib import Path
sys.path[:0] = [{tests!r}, {repo!r}]
import pipeline_runs, test_test_runs
pipeline_runs.finished_run = test_test_runs._fake_build
run = pipeline_runs.shared_run(test_test_runs._Factory(Path({root!r}) / ("popen-" + os.environ["PYTEST_XDIST_WORKER"])), "default_run")
print(f"{{run.wd}}|{{run.console}}")
"""


def test_workers_build_a_shared_run_once_and_read_it(tmp_path: Path) -> None:
    tests = Path(__file__).resolve().parents[1]
    code = WORKER.format(tests=str(tests), repo=str(tests / "repo"), root=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTEST_XDIST_WORKER": f"gw{i}"}) for i in range(3)]
    got = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert len((tmp_path / "builds.log").read_text().split()) == 1
    assert got == {f"{tmp_path / 'default_run'}|console of the build"}


def test_a_failed_build_is_built_again(tmp_path: Path, monkeypatch) -> None:
    calls = []

    def broken(wd: Path, **cfg):
        calls.append(wd)
        (wd / "half").write_text("a run that stopped")
        raise AssertionError("the run failed")

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    monkeypatch.setattr(pipeline_runs, "finished_run", broken)
    with pytest.raises(AssertionError):
        pipeline_runs.shared_run(_Factory(tmp_path / "popen-gw0"), "default_run")
    monkeypatch.setattr(pipeline_runs, "finished_run", _fake_build)
    run = pipeline_runs.shared_run(_Factory(tmp_path / "popen-gw1"), "default_run")
    assert calls and run.console == "console of the build"
    assert not (run.wd / "half").exists() and (run.wd / "made").is_file()  # built afresh


def test_without_workers_the_run_is_in_the_sessions_own_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.setattr(pipeline_runs, "finished_run", _fake_build)
    run = pipeline_runs.shared_run(_Factory(tmp_path / "session"), "default_run")
    assert run.wd == tmp_path / "session" / "default_run"


class _Item:
    def __init__(self, nodeid: str, tier: str) -> None:
        self.nodeid, self.tier = nodeid, tier

    def iter_markers(self):
        yield SimpleNamespace(name=self.tier)

    def add_marker(self, marker) -> None:
        pass


def test_slowest_modules_first_each_module_together_and_in_order() -> None:
    items = [_Item("a.py::t1", "unit"), _Item("b.py::t1", "sandbox"), _Item("c.py::t1", "unit"),
             _Item("c.py::t2", "pipeline"), _Item("a.py::t2", "unit"), _Item("b.py::t2", "unit")]
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.nodeid for i in items] == ["c.py::t1", "c.py::t2", "b.py::t1", "b.py::t2", "a.py::t1", "a.py::t2"]


def test_a_test_without_a_tier_stops_the_collection() -> None:
    items = [_Item("a.py::t1", "unit"), _Item("a.py::t2", "slow")]
    with pytest.raises(pytest.UsageError, match=r"a.py::t2: no tier"):
        conftest.pytest_collection_modifyitems(None, items)


def test_the_clients_tier_runs_only_when_asked_for() -> None:
    deselected = []
    config = SimpleNamespace(option=SimpleNamespace(markexpr=""),
                             hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    items = [_Item("a.py::t1", "unit"), _Item("clients/c.py::t1", "clients")]
    conftest.pytest_collection_modifyitems(config, items)
    assert [i.nodeid for i in items] == ["a.py::t1"] and [i.nodeid for i in deselected] == ["clients/c.py::t1"]
    config.option.markexpr = "clients"
    items = [_Item("a.py::t1", "unit"), _Item("clients/c.py::t1", "clients")]
    conftest.pytest_collection_modifyitems(config, items)
    assert [i.nodeid for i in items] == ["clients/c.py::t1", "a.py::t1"]
