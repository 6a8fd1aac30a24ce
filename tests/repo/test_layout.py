"""The code's shape: stages never import each other, and no module grows past ~400 lines
without a stated reason (tools/import_graph.py prints the whole graph)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "scripts"))

import import_graph  # noqa: E402

pytestmark = pytest.mark.unit

#: "About 400 lines": a module may run a few lines over the mark tools/import_graph.py prints.
ABOUT = 420
#: Modules allowed past that, and why splitting them would not help a reader.
JUSTIFIED = {
    "agents.repair": "the built-in agent: one self-contained program (its own loop, edits, model-free search); "
                     "its fingerprint covers exactly the modules it runs, and it imports only the contract",
    "provenance.identity": "one resolver of how the shell and Python would run an agent's command on this machine (PATH, "
                "#!, python -m, the files its words name, their module closure); the fingerprint and the sandbox "
                "mounts (agent_command) both follow it, and splitting it would split one algorithm",
    "scoring.pytest_seal": "the seal is one unit: the audit hook writes a record only for events raised by this module's "
                   "own code objects, so the bootstrap, the hook and the plugin must live in one module",
    "isolation.environments": "one pack test environment from requirement lines to a sandboxed build and its record; the "
                    "line rules, the build's sandbox and the record share one spec",
    "agent.session": "one human session's lifecycle (start, check, steer, submit, abandon) over one state file; "
               "the pieces share the session record and its invariants",
    "agent.bridge": "one connection through the bridge: the forwarding, the request meter and the reply meter read "
              "the same two byte streams, and the observed session pairs each reply with its request",
    "leak.leak_ast": "one algorithm: hidden tests as normalized syntax trees, the code found in prose, and the "
                "index they are looked up in share the one normalisation",
    "app.cli": "the one command-line surface: every subcommand's parser (build_parser, which the docs' commands "
           "are checked against) beside its thin handler",
    "provenance.ledger": "one holdout ledger: its lines, the versions that reached the holdout, the budget and the "
              "citations beside decisions are read by the same chain and the same fingerprint rules",
    "builders.pack_mutate": "one command: the search over mutants, its progress, and the build folder renamed into "
                   "place only at its end share one run's state (counts, phase, the unfinished sibling)",
    "scoring.sealed_report": "the one verdict of a sealed run: the stream read once into its facts and the ordered "
                     "table of small named rules that judges them (VERDICT_RULES)",
    "stages.stratify": "one definition of a run row: its columns, and the rules that decide its status (timeout "
                "first, observed session, offline declaration, the first draw) read the same record",
}


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


def test_modules_stay_small_or_say_why() -> None:
    g = import_graph.graph(ROOT / "scripts" / "sealbench")
    big = {m: n for m, (n, _) in g.items() if n > ABOUT}
    assert set(big) <= set(JUSTIFIED), f"over {ABOUT} lines without a reason: {big}"


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
