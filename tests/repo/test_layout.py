"""The code's shape: the layers import only downward, stages never import each other, no cycle
(tools/import_graph.py prints the whole graph). Modules are grouped by concern: a line count is
no reason to split one, so none is capped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "scripts"))

import import_graph  # noqa: E402

pytestmark = pytest.mark.unit



def test_no_stage_imports_another_stage() -> None:
    g = import_graph.graph(ROOT / "scripts" / "sealbench")
    assert set(import_graph.STAGES) <= set(g)
    assert import_graph.stage_violations(g) == []


def test_a_stage_importing_a_stage_is_caught(tmp_path: Path) -> None:
    pkg = tmp_path / "sealbench"
    (pkg / "core").mkdir(parents=True)
    (pkg / "stages").mkdir()
    for d in (pkg, pkg / "core", pkg / "stages"):
        (d / "__init__.py").write_text("")
    (pkg / "core" / "core.py").write_text("X = 1\n")
    (pkg / "stages" / "hash_pack.py").write_text("def make_writable(): pass\n")
    (pkg / "stages" / "task_batch.py").write_text(
        "from ..core.core import X\n\ndef f():\n    from .hash_pack import make_writable\n")
    assert import_graph.stage_violations(import_graph.graph(pkg)) == [("stages.task_batch", "stages.hash_pack")]


# ------------------------------------------------------------------ layers (scripts/sealbench/<layer>/)

def _layer_of(module: str) -> str | None:
    import sealbench

    top = module.split(".")[0]
    return top if top in sealbench.LAYERS else None


def test_no_module_imports_a_module_of_a_higher_layer() -> None:
    """A module imports only its own layer or the layers below (``sealbench.LAYERS``, bottom to top);
    agents/ and testing/ import only the core."""
    import sealbench

    rank = {layer: i for i, layer in enumerate(sealbench.LAYERS)}
    g = import_graph.graph(ROOT / "scripts" / "sealbench")
    assert {m.split(".")[0] for m in g if "." in m} <= {*sealbench.LAYERS, *sealbench.APART}
    up = []
    for mod, (_, deps) in sorted(g.items()):
        here = _layer_of(mod)
        for dep in sorted(deps):
            there = _layer_of(dep)
            if there is None:
                continue
            if mod.split(".")[0] in sealbench.APART and there != "core":
                up.append(f"{mod} -> {dep} (agents/ and testing/ import only the core)")
            elif here is not None and rank[there] > rank[here]:
                up.append(f"{mod} ({here}) -> {dep} ({there})")
    assert not up, "imports of a higher layer:\n  " + "\n  ".join(up)


def test_no_import_cycle_between_modules() -> None:
    full = import_graph.graph(ROOT / "scripts" / "sealbench")
    g = {m: {d for d in deps if d in full} for m, (_, deps) in full.items()}
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for d in sorted(g.get(m, ())):
            if state.get(d) == 1:
                cycles.append(" -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d, stack + [d])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert not cycles, "import cycles:\n  " + "\n  ".join(cycles)


def test_every_module_is_in_a_layer_folder() -> None:
    pkg = ROOT / "scripts" / "sealbench"
    assert sorted(p.name for p in pkg.glob("*.py")) == ["__init__.py"], "a module outside the layer folders"


def test_tests_mirror_the_layers() -> None:
    """Each test file sits in tests/<layer>/ (or tests/pipeline/ when it runs snakemake); helpers stay in tests/."""
    import sealbench

    tests = ROOT / "tests"
    assert not list(tests.glob("test_*.py")), "a test file in tests/ itself: put it in its layer's folder"
    folders = {p.parent.name for p in tests.rglob("test_*.py") if "data" not in p.relative_to(tests).parts}
    assert folders <= {*sealbench.LAYERS, *sealbench.APART, "pipeline", "repo"}, folders
