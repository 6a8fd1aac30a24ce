"""The code's shape: the layers import only downward, stages never import each other, no cycle
(tools/import_graph.py prints the whole graph), and no block of six code lines stands twice
outside tests. Modules are grouped by concern: a line count is no reason to split one, so none
is capped."""

from __future__ import annotations

import re
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
    """Each test file sits in tests/<layer>/ (or tests/pipeline/ when it runs snakemake, tests/clients/ when
    it installs real agent clients: the clients tier); helpers stay in tests/."""
    import sealbench

    tests = ROOT / "tests"
    assert not list(tests.glob("test_*.py")), "a test file in tests/ itself: put it in its layer's folder"
    folders = {p.parent.name for p in tests.rglob("test_*.py") if "data" not in p.relative_to(tests).parts}
    assert folders <= {*sealbench.LAYERS, *sealbench.APART, "pipeline", "repo", "clients"}, folders


# ----------------------------------------------------------------------------- repeated blocks
# Outside tests, no run of six code lines stands twice: the Python of the package, the logger
# plugin, bench/ and tools/. Lines are compared with their white space folded; blank lines,
# comments, imports and lone brackets are passed over (they say nothing alone). The demo pack's
# files (suite/) are data, and the rule files' directives (conda/threads/resources) are
# declarations Snakemake asks of every rule.
REPEAT = 6
_PASSED_OVER = re.compile(r"^(import |from \S+ import |#|[()\[\]{}:,]+$|$)")


def _code_lines(path: Path) -> list[tuple[int, str]]:
    out = []
    for no, raw in enumerate(path.read_text().splitlines(), 1):
        line = " ".join(raw.split())
        if not _PASSED_OVER.match(line):
            out.append((no, line))
    return out


def repeated_blocks(files: list[Path], root: Path) -> list[str]:
    """Each run of ``REPEAT`` code lines that stands in more than one place, with its places."""
    places: dict[tuple[str, ...], list[str]] = {}
    for f in files:
        lines = _code_lines(f)
        for k in range(len(lines) - REPEAT + 1):
            run = tuple(text for _, text in lines[k:k + REPEAT])
            places.setdefault(run, []).append(f"{f.relative_to(root)}:{lines[k][0]}")
    return [f"{', '.join(where)}: {' / '.join(run)[:160]}" for run, where in places.items() if len(where) > 1]


def _outside_tests(root: Path) -> list[Path]:
    return sorted(p for d in ("scripts", "bench", "tools") for p in (root / d).rglob("*.py"))


def test_no_block_of_six_lines_is_repeated_outside_tests() -> None:
    files = _outside_tests(ROOT)
    assert len(files) > 90
    found = repeated_blocks(files, ROOT)
    assert not found, f"{len(found)} run(s) of {REPEAT} lines stand twice:\n" + "\n".join(found[:20])


def test_a_block_repeated_in_two_modules_is_caught(tmp_path: Path) -> None:
    body = "\n".join(f"    total += step_{i}(x)  # part {i}" for i in range(6))
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "a.py").write_text(f"import os\n\ndef f(x):\n    total = 0\n{body}\n    return total\n")
    (tmp_path / "scripts" / "b.py").write_text(f"def g(x):\n    total = 1\n\n{body}\n\n    return -total\n")
    found = repeated_blocks(_outside_tests(tmp_path), tmp_path)
    assert found and "scripts/a.py:5" in found[0] and "scripts/b.py:4" in found[0]
    # the same shape with other names is not a repeat; nor are imports and brackets alone
    (tmp_path / "scripts" / "b.py").write_text(body.replace("total", "acc") + "\n")
    (tmp_path / "scripts" / "c.py").write_text("import os\nimport sys\n)\n]\n}\n# x\n" * 3)
    assert repeated_blocks(_outside_tests(tmp_path), tmp_path) == []
