"""Time-to-green counts only sealed greens: a visible run that is green in the worker's own
workspace counts when the workspace as it stood then also passes the visible tests restored
from the pack, under the tamper rules."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, STAMP, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

pytestmark = pytest.mark.sandbox

VISIBLE = "from calc import add\n\n\ndef test_add_small():\n    assert add(2, 2) == 4\n"
HIDDEN = "from calc import add\n\n\ndef test_add_more():\n    assert add(3, 4) == 7\n\n\ndef test_add_zero():\n    assert add(-1, 1) == 0\n"
FORCE_PASS = ("import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
              "    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n")
ENVELOPE = {"max_wall_s": 60, "max_steps": 5, "max_output_tokens": 100}


@pytest.fixture()
def world(tmp_path: Path) -> dict:
    base = tmp_path / f"secret-{uuid.uuid4().hex[:8]}"
    pack = make_pack(base / "pack", n=1)
    t = pack / "tasks" / "t00"
    for d, name, text in (("visible_tests", "check_visible.py", VISIBLE), ("hidden_tests", "check_hidden.py", HIDDEN)):
        (t / d / name).unlink()
        (t / d / f"test_{d.split('_')[0]}.py").write_text(text)
    meta = json.loads((t / "meta.json").read_text())
    meta.update(visible_command="python -m pytest -q -p no:cacheprovider visible_tests",
                hidden_command="python -m pytest -q -p no:cacheprovider hidden_tests", failing_tests=2)
    (t / "meta.json").write_text(json.dumps(meta))
    sealed = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, base / "results" / "sealed.json")
    return {"base": base, "pack": pack, "sealed": sealed}


def attempt(w: dict, command: str) -> tuple[dict, dict]:
    rd = w["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="auto", hide=(w["pack"], w["base"] / "results"))
    rec = run_agent.run_agent(w["sealed"], rd, "agent", "0" * 16, command, {}, 1, ENVELOPE, options)
    score = hidden_score.score_run(w["sealed"], rd, w["base"] / "results" / "score.json", 60)
    return rec, score


def test_a_green_forced_by_a_planted_conftest_is_not_time_to_green(world) -> None:
    cmd = (f"printf \"{FORCE_PASS}\" > conftest.py; $SEALBENCH_VISIBLE_CMD; rm conftest.py; sleep 1; "
           f"{FIX_AGENT}; $SEALBENCH_VISIBLE_CMD")
    rec, score = attempt(world, cmd)
    first, second = rec["attempts"]
    assert first["exit"] == 0, "the planted conftest made the worker's own run green"
    assert first["sealed_green"] is False and "conftest.py" in (first["sealed_reason"] or "")
    assert second["exit"] == 0 and second["sealed_green"] is True
    assert score["status"] == "pass"
    assert score["time_to_green_s"] == second["end_s"] > first["end_s"] + 0.9


def test_a_green_from_rewritten_visible_tests_is_not_time_to_green(world) -> None:
    cmd = ("printf 'def test_ok():\\n    pass\\n' > visible_tests/test_visible.py; $SEALBENCH_VISIBLE_CMD; "
           "git checkout -q -- visible_tests; sleep 1; " + FIX_AGENT + "; $SEALBENCH_VISIBLE_CMD")
    rec, score = attempt(world, cmd)
    first, second = rec["attempts"]
    assert first["exit"] == 0 and first["sealed_green"] is False
    assert score["time_to_green_s"] == second["end_s"]


def test_an_honest_green_counts_at_once(world) -> None:
    rec, score = attempt(world, f"{FIX_AGENT}; $SEALBENCH_VISIBLE_CMD; sleep 0.5; $SEALBENCH_VISIBLE_CMD")
    assert [a["sealed_green"] for a in rec["attempts"]] == [True, True]
    assert score["time_to_green_s"] == rec["attempts"][0]["end_s"]


def test_red_runs_are_not_rechecked(world) -> None:
    rec, score = attempt(world, "$SEALBENCH_VISIBLE_CMD; " + STAMP)
    assert [a["exit"] for a in rec["attempts"]] == [1] and "sealed_green" not in rec["attempts"][0]
    assert score["time_to_green_s"] is None
