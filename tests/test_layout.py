"""The code's shape: stages never import each other, and no module grows past ~400 lines
without a stated reason (tools/import_graph.py prints the whole graph)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import import_graph  # noqa: E402

pytestmark = pytest.mark.unit

#: "About 400 lines": a module may run a few lines over the mark tools/import_graph.py prints.
ABOUT = 420
#: Modules allowed past that, and why splitting them would not help a reader.
JUSTIFIED = {
    "agents.repair": "the built-in agent: one self-contained program (its own loop, edits, model-free search); "
                     "its fingerprint covers exactly the modules it runs, and it imports only the contract",
    "identity": "one resolver of how the shell and Python would run an agent's command on this machine (PATH, "
                "#!, python -m, the files its words name, their module closure); the fingerprint and the sandbox "
                "mounts (agent_command) both follow it, and splitting it would split one algorithm",
    "pytest_seal": "the seal is one unit: the audit hook writes a record only for events raised by this module's "
                   "own code objects, so the bootstrap, the hook and the plugin must live in one module",
    "environments": "one pack test environment from requirement lines to a sandboxed build and its record; the "
                    "line rules, the build's sandbox and the record share one spec",
    "session": "one human session's lifecycle (start, check, steer, submit, abandon) over one state file; "
               "the pieces share the session record and its invariants",
    "bridge": "one connection through the bridge: the forwarding, the request meter and the reply meter read "
              "the same two byte streams, and the observed session pairs each reply with its request",
    "leak_ast": "one algorithm: hidden tests as normalized syntax trees, the code found in prose, and the "
                "index they are looked up in share the one normalisation",
    "cli": "the one command-line surface: every subcommand's parser (build_parser, which the docs' commands "
           "are checked against) beside its thin handler",
    "ledger": "one holdout ledger: its lines, the versions that reached the holdout, the budget and the "
              "citations beside decisions are read by the same chain and the same fingerprint rules",
    "pack_mutate": "one command: the search over mutants, its progress, and the build folder renamed into "
                   "place only at its end share one run's state (counts, phase, the unfinished sibling)",
    "sealed_report": "the one verdict of a sealed run: the stream read once into its facts and the ordered "
                     "table of small named rules that judges them (VERDICT_RULES)",
    "stratify": "one definition of a run row: its columns, and the rules that decide its status (timeout "
                "first, observed session, offline declaration, the first draw) read the same record",
}


def test_no_stage_imports_another_stage() -> None:
    g = import_graph.graph(ROOT / "scripts" / "sealbench")
    assert set(import_graph.STAGES) <= set(g)
    assert import_graph.stage_violations(g) == []


def test_a_stage_importing_a_stage_is_caught(tmp_path: Path) -> None:
    pkg = tmp_path / "sealbench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("X = 1\n")
    (pkg / "hash_pack.py").write_text("def make_writable(): pass\n")
    (pkg / "task_batch.py").write_text("from .core import X\n\ndef f():\n    from .hash_pack import make_writable\n")
    assert import_graph.stage_violations(import_graph.graph(pkg)) == [("task_batch", "hash_pack")]


def test_modules_stay_small_or_say_why() -> None:
    g = import_graph.graph(ROOT / "scripts" / "sealbench")
    big = {m: n for m, (n, _) in g.items() if n > ABOUT}
    assert set(big) <= set(JUSTIFIED), f"over {ABOUT} lines without a reason: {big}"
