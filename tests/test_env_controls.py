"""A task whose tests import a package sealbench's interpreter lacks (issue 14, point 1): without
an environment the controls are infra_fail naming the module and saying what to do; with the
pack's environment declaring it, the controls behave (empty diff fails, oracle passes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from packgen import make_pack  # noqa: E402
from sealbench import core, hash_pack, run_dummy  # noqa: E402
from sealbench.contract import FAIL, INFRA_FAIL, PASS  # noqa: E402

#: the hidden test needs tinypkg (a test dependency the pack must declare)
HIDDEN_NEEDS_TINYPKG = ("import sys\nsys.path.insert(0, '.')\nimport tinypkg\nfrom calc import add\n\n\n"
                        "def test_hidden():\n    assert add(3, 4) == 7 and tinypkg.VALUE == 42\n")


def tiny_task(tmp_path: Path) -> Path:
    pack = make_pack(tmp_path / "p", n=1)
    t = pack / "tasks" / "t00"
    (t / "hidden_tests" / "check_hidden.py").write_text(HIDDEN_NEEDS_TINYPKG)
    (t / "visible_tests" / "check_visible.py").write_text(HIDDEN_NEEDS_TINYPKG.replace("hidden", "visible"))
    return t


def seal(t: Path, tmp_path: Path) -> Path:
    out = tmp_path / "results" / "tasks" / t.name / "d" / "sealed"
    out.parent.mkdir(parents=True)
    hash_pack.seal_task(t, core.task_digest(t), out, tmp_path / "sealed.json")
    return out


def test_controls_that_cannot_import_a_test_dependency_are_infra_fail_naming_it(tmp_path: Path) -> None:
    sealed = seal(tiny_task(tmp_path), tmp_path)
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60)
    statuses = {r["solver"]: r["status"] for r in rec["results"]}
    assert statuses == {"empty_diff": INFRA_FAIL, "stub": INFRA_FAIL, "oracle": INFRA_FAIL}, rec["results"]
    assert rec["control_infra_fail"] is True
    for r in rec["results"]:
        assert "tinypkg" in r["reason"] and "PACK/environment/requirements.txt" in r["reason"], r["reason"]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    from envgen import offline_index

    return offline_index(tmp_path_factory.mktemp("wheels"), {"tinypkg==1.0": {"tinypkg/__init__.py": "VALUE = 42\n"}})


def built_env(tmp_path: Path, wheels: Path, monkeypatch, pack: Path):
    from envgen import offline_env_vars
    from sealbench.environments import build_env, declared_env

    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    (pack / "environment").mkdir()
    (pack / "environment" / "requirements.txt").write_text("tinypkg==1.0\n")
    spec = declared_env(pack, json.loads((pack / "tasks" / "t00" / "meta.json").read_text()))
    return build_env(spec, tmp_path / "results" / "envs")


def test_with_the_pack_environment_declaring_it_the_controls_behave(tmp_path: Path, wheels: Path, monkeypatch) -> None:
    t = tiny_task(tmp_path)
    env = built_env(tmp_path, wheels, monkeypatch, t.parent.parent)
    sealed = seal(t, tmp_path)
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60, env=env)
    statuses = {r["solver"]: r["status"] for r in rec["results"]}
    assert statuses == {"empty_diff": FAIL, "stub": FAIL, "oracle": PASS}, rec["results"]
    assert rec["control_infra_fail"] is False and rec["environment"]["digest"] == env.digest


def _agent_run(tmp_path: Path, sealed: Path, patch: bytes) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "patch.diff").write_bytes(patch)
    (run_dir / "run.json").write_text(json.dumps({"solver": "a", "fingerprint": "f" * 16, "epoch": 1, "exit_code": 0,
                                                  "end_reason": "exit", "attempts": []}))
    return run_dir


def test_an_agent_patch_on_a_task_whose_tests_cannot_be_collected_is_infra_fail(tmp_path: Path) -> None:
    from sealbench import hidden_score

    sealed = seal(tiny_task(tmp_path), tmp_path)
    run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60)
    run_dir = _agent_run(tmp_path, sealed, (sealed / "oracle.patch").read_bytes())
    rec = hidden_score.score_run(sealed, run_dir, tmp_path / "score.json", 60,
                                 controls=tmp_path / "controls" / "controls.json")
    assert rec["status"] == INFRA_FAIL and "tinypkg" in rec["reason"], rec["reason"]


def test_a_patch_that_breaks_collection_on_a_sound_task_stays_fail(tmp_path: Path, wheels: Path, monkeypatch) -> None:
    from sealbench import hidden_score

    t = tiny_task(tmp_path)
    env = built_env(tmp_path, wheels, monkeypatch, t.parent.parent)
    sealed = seal(t, tmp_path)
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60, env=env)
    assert rec["oracle_ok"], rec["results"]
    breaking = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+import nosuchmodule\n"
                " def add(a, b):\n-    return a - b\n+    return a + b\n")
    run_dir = _agent_run(tmp_path, sealed, breaking.encode())
    rec = hidden_score.score_run(sealed, run_dir, tmp_path / "score.json", 60,
                                 controls=tmp_path / "controls" / "controls.json", env=env)
    assert rec["status"] == FAIL and "nosuchmodule" in json.dumps(rec["score"]), rec["reason"]
