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
    assert {"pandas", "pytest", "yaml"} <= names and "sealbench" not in names and "os" not in names
    assert any(p.lower().startswith("pytest==") for p in tcm.toolchain()["packages"])


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
    monkeypatch.setattr(tcm, "covered_distributions", lambda m: (_ for _ in ()).throw(AssertionError("recomputed")))
    assert tcm.toolchain(["lib"], cache=again) == first
    monkeypatch.undo()
    on_path(monkeypatch, tmp_path / "s")
    fake_dist(tmp_path / "s", "lib-dist", "lib")
    assert "lib-dist==1.0" in tcm.toolchain(["lib"], cache=again)["packages"]
