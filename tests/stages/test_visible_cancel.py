"""Visible runs the agent abandons are cancelled (issue 14, point 4a).

A visible run that hangs must not hold the visible-test service: a new visible run started by
the agent cancels it (its whole process tree killed) and starts at once; the end of the
agent's session (its command exits, or is killed at the clock) cancels it too; each visible
run has its own clock. A cancelled run is recorded ``cancelled`` in the attempt log, never
green. Processes are looked for on the host by a token on the hanging child's command line.
"""

from __future__ import annotations

import os
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

ENVELOPE = {"max_wall_s": 40, "max_steps": 5, "max_output_tokens": 100}
#: a visible test that hangs (in a child process carrying the token) while ``hang`` exists
HANGING = ("import os, subprocess, sys\nsys.path.insert(0, '.')\nfrom calc import add\n\n\n"
           "def test_visible():\n    if os.path.exists('hang'):\n        open('started', 'w').close()\n"
           "        subprocess.run([sys.executable, '-c', 'import time; time.sleep(3600)', {token!r}])\n"
           "    assert add(2, 2) == 4\n")
#: start the hanging run in the background and give it time to start (a visible run's own
#: writes, like ``started``, stay in its throw-away view: the worker never sees them)
START_HANGING = ('touch hang; "$SEALBENCH_VISIBLE_CMD" > "$SEALBENCH_OUT/first.log" 2>&1 & first=$!; sleep 3; ')


@pytest.fixture()
def world(tmp_path: Path) -> dict:
    base = tmp_path / f"secret-{uuid.uuid4().hex[:8]}"
    pack = make_pack(base / "pack", n=1)
    t = pack / "tasks" / "t00"
    token = f"sealbench-hang-{uuid.uuid4().hex}"
    (t / "visible_tests" / "check_visible.py").write_text(HANGING.format(token=token))
    sealed = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, base / "results" / "sealed.json")
    return {"base": base, "pack": pack, "sealed": sealed, "token": token}


def attempt(w: dict, command: str, envelope=ENVELOPE, score: bool = True, **opts) -> tuple[dict, dict | None]:
    rd = w["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="auto", hide=(w["pack"], w["base"] / "results"), **opts)
    rec = run_agent.run_agent(w["sealed"], rd, "agent", "0" * 16, command, {}, 1, envelope, options)
    if not score:  # the workspace still holds ``hang``: scoring would hang until its clock
        return rec, None
    return rec, hidden_score.score_run(w["sealed"], rd, w["base"] / "results" / "score.json", 60)


def survivors(token: str) -> list[int]:
    """Host pids whose command line carries ``token`` (inside the sandbox's PID namespace or not)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    out.append(int(entry))
            except OSError:
                continue
    return out


def out_file(w: dict, name: str) -> str:
    p = w["base"] / "results" / "run" / "out" / name
    return p.read_text().strip() if p.exists() else ""


def test_a_new_visible_run_cancels_a_hanging_one_and_runs_at_once(world) -> None:
    cmd = (START_HANGING + "rm -f hang started; " + FIX_AGENT + '; "$SEALBENCH_VISIBLE_CMD"; '
           'echo $? > "$SEALBENCH_OUT/second_rc"; wait $first; echo $? > "$SEALBENCH_OUT/first_rc"')
    rec, score = attempt(world, cmd)
    assert rec["end_reason"] == "exit" and rec["wall_s"] < 25, "the second run waited for the first"
    first, second = rec["attempts"]
    assert first["cancelled"] is True and first["exit"] is None and not first.get("sealed_green")
    assert "new visible run" in first["cancel_reason"]
    assert second["cancelled"] is False and second["exit"] == 0 and second["sealed_green"] is True
    assert second["start_s"] - first["end_s"] < 3 and second["end_s"] < 20
    assert out_file(world, "second_rc") == "0" and out_file(world, "first_rc") not in ("", "0")
    assert "cancelled" in out_file(world, "first.log")
    assert score["status"] == "pass" and score["time_to_green_s"] == second["end_s"]
    assert survivors(world["token"]) == []


def test_the_end_of_the_session_cancels_a_hanging_run(world) -> None:
    rec, _ = attempt(world, START_HANGING + STAMP + "; exit 0", score=False)
    assert rec["end_reason"] == "exit" and rec["wall_s"] < 25
    (only,) = rec["attempts"]
    assert only["cancelled"] is True and only["exit"] is None and not only.get("sealed_green")
    # the agent's process group dies first, its client with it; the session's end is the backstop
    assert "session ended" in only["cancel_reason"] or "client went away" in only["cancel_reason"]
    assert hidden_score.time_to_green(rec["attempts"], True) is None  # even were the final state green
    assert survivors(world["token"]) == [], "the abandoned visible run outlived the session"


def test_a_run_killed_with_the_agent_at_its_clock_is_never_green(world) -> None:
    rec, _ = attempt(world, FIX_AGENT + '; touch hang; "$SEALBENCH_VISIBLE_CMD"; sleep 60',
                     envelope=dict(ENVELOPE, max_wall_s=6), score=False)
    assert rec["end_reason"] == "time_box" and rec["wall_s"] < 15
    (only,) = rec["attempts"]
    assert only["exit"] != 0 and not only.get("sealed_green")
    assert only["cancelled"] is True or only["end_reason"] == "time_box"
    assert hidden_score.time_to_green(rec["attempts"], True) is None  # even were the final state green
    assert survivors(world["token"]) == []


def test_each_visible_run_has_its_own_clock(world) -> None:
    cmd = ('touch hang; "$SEALBENCH_VISIBLE_CMD"; echo $? > "$SEALBENCH_OUT/first_rc"; rm -f hang started; '
           + FIX_AGENT + '; "$SEALBENCH_VISIBLE_CMD"')
    rec, score = attempt(world, cmd, visible_timeout_s=3)
    first, second = rec["attempts"]
    assert first["timeout_s"] <= 3 and first["end_reason"] == "time_box" and first["exit"] == 124
    assert first["end_s"] - first["start_s"] < 8 and not first.get("sealed_green")
    assert out_file(world, "first_rc") == "124"
    assert second["exit"] == 0 and second["sealed_green"] is True and second["end_reason"] == "exit"
    assert score["time_to_green_s"] == second["end_s"]
    assert survivors(world["token"]) == []
