"""A task whose tests import a package sealbench's interpreter lacks (issue 14, point 1): without
an environment the controls are infra_fail naming the module and saying what to do; with the
pack's environment declaring it, the controls behave (empty diff fails, oracle passes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.contract import FAIL, INFRA_FAIL, PASS  # noqa: E402
from sealbench.stages import hash_pack, run_dummy  # noqa: E402

pytestmark = pytest.mark.sandbox

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


@pytest.fixture(scope="module")
def broken(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A task whose tests import tinypkg, without an environment: sealed, controls run."""
    tmp = tmp_path_factory.mktemp("broken")
    sealed = seal(tiny_task(tmp), tmp)
    return tmp, sealed, run_dummy.run_controls(sealed, tmp / "controls", oracle_runs=1, timeout_s=60)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    from envgen import offline_index

    return offline_index(tmp_path_factory.mktemp("wheels"), {"tinypkg==1.0": {"tinypkg/__init__.py": "VALUE = 42\n"}})


@pytest.fixture(scope="module")
def sound(tmp_path_factory, wheels: Path):
    """The same task with PACK/environment/requirements.txt naming tinypkg: built offline, controls run."""
    from envgen import offline_env_vars
    from sealbench.isolation.environments import build_env, declared_env

    tmp = tmp_path_factory.mktemp("sound")
    t = tiny_task(tmp)
    pack = t.parent.parent
    (pack / "environment").mkdir()
    (pack / "environment" / "requirements.txt").write_text("tinypkg==1.0\n")
    with pytest.MonkeyPatch.context() as mp:
        for k, v in offline_env_vars(wheels).items():
            mp.setenv(k, v)
        env = build_env(declared_env(pack, json.loads((t / "meta.json").read_text())), tmp / "results" / "envs")
    sealed = seal(t, tmp)
    return tmp, sealed, env, run_dummy.run_controls(sealed, tmp / "controls", oracle_runs=1, timeout_s=60, env=env)


def test_controls_that_cannot_import_a_test_dependency_are_infra_fail_naming_it(broken) -> None:
    _tmp, _sealed, rec = broken
    statuses = {r["solver"]: r["status"] for r in rec["results"]}
    assert statuses == {"empty_diff": INFRA_FAIL, "stub": INFRA_FAIL, "oracle": INFRA_FAIL}, rec["results"]
    assert rec["control_infra_fail"] is True and rec["missing_modules"] == ["tinypkg"]
    for r in rec["results"]:
        assert "tinypkg" in r["reason"] and "PACK/environment/requirements.txt" in r["reason"], r["reason"]


def test_with_the_pack_environment_declaring_it_the_controls_behave(sound) -> None:
    _tmp, _sealed, env, rec = sound
    statuses = {r["solver"]: r["status"] for r in rec["results"]}
    assert statuses == {"empty_diff": FAIL, "stub": FAIL, "oracle": PASS}, rec["results"]
    assert rec["control_infra_fail"] is False and rec["environment"]["digest"] == env.digest
    assert "missing_modules" not in rec


def _agent_run(tmp_path: Path, patch: bytes) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "patch.diff").write_bytes(patch)
    (run_dir / "run.json").write_text(json.dumps({"solver": "a", "fingerprint": "f" * 16, "epoch": 1, "exit_code": 0,
                                                  "end_reason": "exit", "attempts": []}))
    return run_dir


def test_an_agent_patch_on_a_task_whose_tests_cannot_be_collected_is_infra_fail(broken, tmp_path: Path) -> None:
    from sealbench.stages import hidden_score

    tmp, sealed, _rec = broken
    run_dir = _agent_run(tmp_path, (sealed / "oracle.patch").read_bytes())
    rec = hidden_score.score_run(sealed, run_dir, tmp_path / "score.json", 60, controls=tmp / "controls" / "controls.json")
    assert rec["status"] == INFRA_FAIL and "tinypkg" in rec["reason"], rec["reason"]


def test_a_patch_that_breaks_collection_on_a_sound_task_stays_fail(sound, tmp_path: Path) -> None:
    from sealbench.stages import hidden_score

    tmp, sealed, env, _rec = sound
    breaking = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n+import nosuchmodule\n"
                " def add(a, b):\n-    return a - b\n+    return a + b\n")
    run_dir = _agent_run(tmp_path, breaking.encode())
    rec = hidden_score.score_run(sealed, run_dir, tmp_path / "score.json", 60,
                                 controls=tmp / "controls" / "controls.json", env=env)
    assert rec["status"] == FAIL and "nosuchmodule" in json.dumps(rec["score"]), rec["reason"]
    assert rec["environment"]["digest"] == env.digest


def test_an_agent_keeps_its_python_and_its_visible_runs_use_the_task_environment(sound, tmp_path: Path) -> None:
    from sealbench.stages.run_agent import RunOptions, run_agent

    _tmp, sealed, env, _rec = sound
    command = ('"$SEALBENCH_TASK_PYTHON" -c "import tinypkg; print(tinypkg.VALUE)" > "$SEALBENCH_OUT/task.txt"; '
               'python -c "import tinypkg" 2> "$SEALBENCH_OUT/own.txt"; '
               "sed -i 's/a - b/a + b/' calc.py; \"$SEALBENCH_VISIBLE_CMD\"")
    rec = run_agent(sealed, tmp_path / "run", "a", "0" * 16, command, {}, 1,
                    {"max_wall_s": 60, "max_steps": 5, "max_output_tokens": 100}, RunOptions(env=env.path))
    out = tmp_path / "run" / "out"
    assert (out / "task.txt").read_text().strip() == "42"                # SEALBENCH_TASK_PYTHON: the task's
    assert "No module named 'tinypkg'" in (out / "own.txt").read_text()  # the agent's python: unchanged
    assert [a["exit"] for a in rec["attempts"]] == [0] and rec["attempts"][0]["sealed_green"] is True, rec["attempts"]
    assert rec["environment"]["digest"] == env.digest


def test_a_batched_step_of_a_task_with_an_environment_is_keyed_by_its_lock_too(sound) -> None:
    from sealbench.stages.steps import step_key
    from sealbench.stages.task_batch import _with_env_identity

    _tmp, _sealed, env, _rec = sound
    step = {"module": "run_dummy", "argv": ["--sealed", "s", "--env", str(env.path)], "outputs": ["o"], "code": "c",
            "toolchain": "t"}
    keyed = _with_env_identity(step)
    assert keyed["toolchain"] == f"t:{env.digest}" and step_key(keyed) != step_key(step)
    plain = dict(step, argv=["--sealed", "s"])
    assert _with_env_identity(plain) is plain  # no environment: the key as before


def test_sealbench_try_builds_the_task_environment_and_runs_in_it(tmp_path: Path, wheels: Path, monkeypatch,
                                                                  capsys) -> None:
    from envgen import offline_env_vars
    from packgen import write_config
    from sealbench.app import cli
    from sealbench.pack.packs import load_pack
    from sealbench.stages import split

    monkeypatch.chdir(tmp_path)
    for k, v in offline_env_vars(wheels).items():
        monkeypatch.setenv(k, v)
    pack = make_pack(tmp_path / "pack")
    (pack / "environments" / "tiny").mkdir(parents=True)
    (pack / "environments" / "tiny" / "requirements.txt").write_text("tinypkg==1.0\n")
    strata_of = {t.id: t.stratum for t in load_pack(pack)}
    task = sorted(split.check(pack, strata_of, 7, 0.5)["tune"])[0]
    t = pack / "tasks" / task
    (t / "hidden_tests" / "check_hidden.py").write_text(HIDDEN_NEEDS_TINYPKG)
    meta = json.loads((t / "meta.json").read_text())
    (t / "meta.json").write_text(json.dumps(dict(meta, environment="tiny")))
    write_config(tmp_path / "cfg.yaml", pack)
    rc = cli.main(["try", "fixer", task, "--config", str(tmp_path / "cfg.yaml")])
    out = capsys.readouterr().out
    assert rc == 0 and "→ PASS" in out, out
    run_dir = tmp_path / out.split("run folder: ")[1].splitlines()[0]
    score = json.loads((run_dir / "score.json").read_text())
    assert score["status"] == "pass" and score["environment"]["name"] == "tiny"
