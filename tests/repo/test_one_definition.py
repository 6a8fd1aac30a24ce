"""Issue 28 point 4: statuses, sandbox modes, cluster groups, test folders and stage flags are each
defined once and every user takes them from that definition; the package has no import cycle."""

from __future__ import annotations

import argparse
import ast
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "scripts" / "sealbench"
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tools"))

import cluster_groups  # noqa: E402
import import_graph  # noqa: E402

from sealbench.core import contract, core, paths, tables  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.pack import task_layout  # noqa: E402
from sealbench.stages import steps  # noqa: E402


def _modules() -> dict[str, ast.Module]:
    return {import_graph.module_name(p, PKG): ast.parse(p.read_bytes(), str(p))
            for p in sorted(PKG.rglob("*.py")) if "__pycache__" not in p.parts}


def _assigned_names(tree: ast.Module) -> set[str]:
    """Names a module binds at top level by assignment (a definition, not an import)."""
    out: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        out |= {t.id for t in targets if isinstance(t, ast.Name)}
    return out


# ------------------------------------------------------------------------------ 1. run statuses

@pytest.mark.unit
def test_run_statuses_are_defined_in_contract_only_and_the_status_column_lists_them() -> None:
    defining = [m for m, tree in _modules().items() if "STATUSES" in _assigned_names(tree)]
    assert defining == ["core.contract"]
    assert tables.STATUSES is contract.STATUSES
    status = [desc for name, _t, _n, desc in tables.RUNS_COLUMNS if name == "status"]
    assert status == [" ".join(f"`{s}`" for s in contract.STATUSES)]
    assert status == ["`pass` `fail` `timeout` `tamper` `infra_fail` `excluded`"]   # the text it always had


@pytest.mark.unit
def test_the_layer_docstrings_name_one_home_for_the_run_statuses() -> None:
    import sealbench

    docs = {layer: importlib.import_module(f"sealbench.{layer}").__doc__ or "" for layer in sealbench.LAYERS}
    claim = [(layer, line.split("``")[1]) for layer, doc in docs.items() for line in doc.split("\n- ")[1:]
             if "run statuses" in line]
    assert claim == [("core", "contract")], claim


# ------------------------------------------------------------------------------ 2. sandbox modes

def _sandbox_arguments() -> list[tuple[str, ast.Call]]:
    out = []
    for mod, tree in _modules().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument" and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value == "--sandbox"):
                out.append((mod, node))
    return out


@pytest.mark.unit
def test_every_sandbox_option_takes_its_choices_from_sandbox_modes() -> None:
    found = _sandbox_arguments()
    assert sorted(m.rsplit(".", 1)[-1] for m, _ in found) == sorted(
        ["environments", "pack_mutate", "pack_swebench", "predictions", "sandboxed"])
    for mod, call in found:
        choices = [k.value for k in call.keywords if k.arg == "choices"]
        assert len(choices) == 1 and isinstance(choices[0], ast.Name), mod
        assert getattr(importlib.import_module(f"sealbench.{mod}"), choices[0].id) is sandbox.MODES, mod


@pytest.mark.unit
@pytest.mark.parametrize("stage", ["run_dummy", "run_agent", "hidden_score"])
def test_stage_parsers_accept_exactly_the_sandbox_modes(stage: str) -> None:
    action = {a.dest: a for a in importlib.import_module(f"sealbench.stages.{stage}").parser()._actions}["sandbox"]
    assert tuple(action.choices) == sandbox.MODES


@pytest.mark.unit
def test_config_schema_sandbox_enum_is_sandbox_modes() -> None:
    schema = core.load_schema("config.schema.yaml")
    assert tuple(schema["properties"]["sandbox"]["enum"]) == sandbox.MODES


# ------------------------------------------------------------------------------ 3. cluster groups

@pytest.mark.pipeline
def test_every_rule_of_the_workflow_is_grouped_or_named_ungrouped() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    snakemake = Path(sys.executable).with_name("snakemake")
    out = subprocess.run([str(snakemake), "--list-rules", "--workflow-profile", "none"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rules = {line.split()[0] for line in out.stdout.splitlines() if line.strip() and not line[0].isspace()}
    assert {"hash_pack", "decide", "build_env", "task_batch", "gate"} <= rules
    assert not set(cluster_groups.GROUPS) & set(cluster_groups.UNGROUPED)
    assert rules == set(cluster_groups.GROUPS) | set(cluster_groups.UNGROUPED)


@pytest.mark.unit
def test_every_executor_profile_holds_the_one_groups_definition() -> None:
    for prof in cluster_groups.PROFILES:
        cfg = yaml.safe_load((ROOT / prof / "config.yaml").read_text())
        assert cfg["groups"] == cluster_groups.GROUPS, prof
    assert cluster_groups.main(["--check"]) == 0
    text = (ROOT / cluster_groups.PROFILES[0] / "config.yaml").read_text()
    with pytest.raises(ValueError):
        cluster_groups.rewritten(text + "\n" + cluster_groups.block())   # two blocks: refused, not guessed


@pytest.mark.unit
def test_a_stale_profile_block_is_rewritten_from_the_definition() -> None:
    text = (ROOT / "profiles/slurm/config.yaml").read_text()
    stale = text.replace("  decide: aggregate\n", "")
    assert stale != text
    assert cluster_groups.rewritten(stale) == text


# ------------------------------------------------------------------------------ 4. test folders

@pytest.mark.unit
def test_test_dirs_are_defined_in_task_layout_and_imported_from_there() -> None:
    trees = _modules()
    assert [m for m, t in trees.items() if "TEST_DIRS" in _assigned_names(t)] == ["pack.task_layout"]
    users = []
    for mod, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(a.name == "TEST_DIRS" for a in node.names):
                assert (node.module, node.level) in (("task_layout", 1), ("pack.task_layout", 2)), mod
                users.append(mod)
    assert sorted(users) == ["scoring.scoring", "scoring.tamper_rules"]
    assert task_layout.TEST_DIRS == ("visible_tests", "hidden_tests")
    for mod in users:
        assert importlib.import_module(f"sealbench.{mod}").TEST_DIRS is task_layout.TEST_DIRS


# ------------------------------------------------------------------------------ 5. stage flags

#: Flags a stage's parser has for use by hand, which the workflow's steps never pass.
CLI_ONLY = {"hash_pack": {"--task-dir"}, "leak_check": {"--pack", "--denylist", "--no-public-corpus"},
            "run_dummy": set(), "run_agent": {"--hide"}, "hidden_score": set()}


def _options(p: argparse.ArgumentParser, sub: str | None) -> set[str]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return _options(a.choices[sub], None)
    return {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}


def _all_steps(c: steps.StepConfig, env: str | None, record: bool) -> list[steps.Step]:
    spec = {"command": "true", "fingerprint": "f" * 12}
    return [steps.hash_pack(c, "t1", "d" * 64), steps.leak_check(c, "t1", "d" * 64, record=record),
            steps.run_dummy(c, "t1", "d" * 64, env), steps.run_agent(c, "t1", "d" * 64, "a", spec, 1, env),
            steps.hidden_score(c, "t1", "d" * 64, "a", "f" * 12, 1, env),
            steps.hidden_score_session(c, "t1", "d" * 64, "ann", 1, env)]


@pytest.mark.unit
def test_every_step_argv_parses_with_its_stages_own_parser_and_uses_every_flag() -> None:
    assert set(CLI_ONLY) == set(steps.STAGES)
    passed: dict[str, set[str]] = {s: set() for s in steps.STAGES}
    for green in (False, True):
        c = steps.StepConfig(oracle_runs=2, score_timeout_s=60, decoys_per_task=2, sandbox="required", limits="{}", envelope="{}",
                             stop_on_green=green, log_cap_bytes=10, max_wall_s=5, toolchain_digest="tc",
                             denylist_digest="dd", corpus_sha="cs", results=paths.RESULTS)
        for env, record in ((None, False), ("e" * 64, True)):
            for step in _all_steps(c, env, record):
                parser = importlib.import_module(f"sealbench.stages.{step.stage}").parser()
                args = parser.parse_args(list(step.argv))   # an unknown flag or a missing value exits
                if "--sandbox" in step.argv:
                    assert args.sandbox == "required"
                passed[step.stage] |= {w for w in step.argv if w.startswith("--")}
    for stage in steps.STAGES:
        parser = importlib.import_module(f"sealbench.stages.{stage}").parser()
        defined = _options(parser, "seal" if stage == "hash_pack" else None)
        assert passed[stage] <= defined, stage
        assert defined - passed[stage] == CLI_ONLY[stage], stage


@pytest.mark.unit
def test_a_flag_the_parser_lacks_is_refused() -> None:
    with pytest.raises(SystemExit):
        importlib.import_module("sealbench.stages.run_dummy").parser().parse_args(["--sealed", "s", "--out-dir", "o",
                                                                           "--no-such-flag"])


# ------------------------------------------------------------------------------ 6. import cycles

def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in g:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in g.get(v, ()):
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


@pytest.mark.unit
def test_the_package_has_no_import_cycle() -> None:
    g = {m: deps for m, (_n, deps) in import_graph.graph(PKG).items()}
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]   # the check finds one
    assert _cycles(g) == []
    assert "builders.pack_swebench" in g["app.cli"] and "app.cli" not in g["builders.pack_swebench"]
    assert "pack.task_layout" in g["pack.workspace"] and "pack.workspace" not in g["pack.task_layout"]
    assert {"add_config_args", "config_of"} <= set(vars(importlib.import_module("sealbench.core.config_sources")))
