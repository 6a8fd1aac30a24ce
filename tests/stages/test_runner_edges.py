"""The process runner's edges (issue 13, point 8): what a capped log keeps, what a run ended by
the harness records, and that a crashed agent is visible on its run row whatever its score.

1. Output over the cap keeps its first half *and* its last half (the crash reason is at the
   end), with a marker line saying how many bytes were dropped between them.
2. A command ended by the harness (the clock, a stop, a limit) has no exit code (``None``, never
   ``0``) and records the signal that ended it; the exit status of any other child of the
   harness is not stolen by the runner's reaping.
3. An agent that ended on its own with a non-zero exit or a signal is ``agent_error`` on its
   run row, even when its patch passes; a run that timed out is not.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, STAMP, make_pack  # noqa: E402
from sealbench.core import core, processes  # noqa: E402
from sealbench.core.processes import run_process  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent, stratify  # noqa: E402

MIB = 1 << 20
ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100}
HEALTH = {"allowed_quota_states": [], "max_queue_ms": None, "max_retries": None, "required_server_id": None}
BWRAP = sandbox.bwrap_problem() is None


def _run(tmp: Path, command: str, timeout_s: float = 20, **kw) -> processes.ProcessResult:
    return run_process(command, tmp, dict(os.environ), timeout_s, tmp / "out", tmp / "err", **kw)


# ------------------------------------------------------------- 1. the cap keeps head and tail

@pytest.mark.sandbox
def test_capped_stdout_keeps_the_first_bytes_and_the_crash_reason(tmp_path: Path) -> None:
    cmd = "printf 'FIRST LINE\\n'; head -c 3145728 /dev/zero | tr '\\0' x; printf '\\nCRASH REASON\\n'"
    res = _run(tmp_path, cmd, cap_bytes=MIB)
    kept = (tmp_path / "out").read_bytes()
    assert kept.startswith(b"FIRST LINE\n")
    assert kept.endswith(b"CRASH REASON\n"), kept[-200:]
    total = len("FIRST LINE\n") + 3 * MIB + len("\nCRASH REASON\n")
    assert res.stdout_bytes == MIB and res.stdout_truncated_bytes == total - MIB
    assert f"… {total - MIB} bytes dropped …".encode() in kept
    assert len(kept) < MIB + 200


@pytest.mark.sandbox
def test_capped_stderr_keeps_its_tail_too(tmp_path: Path) -> None:
    cmd = "{ echo START; head -c 2097152 /dev/zero; echo; echo 'Traceback: boom'; } >&2"
    res = _run(tmp_path, cmd, cap_bytes=MIB)
    kept = (tmp_path / "err").read_bytes()
    assert kept.startswith(b"START\n") and kept.rstrip().endswith(b"Traceback: boom")
    assert res.stderr_bytes == MIB and res.stderr_truncated_bytes == 6 + 2 * MIB + 1 + 16 - MIB


@pytest.mark.unit
def test_pump_layout_half_and_half_with_one_marker_line(tmp_path: Path) -> None:
    counts: dict = {}
    processes._pump(io.BytesIO(b"0123456789ABCDEFGHIJ"), tmp_path / "f", 10, counts, "out")
    assert (tmp_path / "f").read_bytes() == "01234\n… 10 bytes dropped …\nFGHIJ".encode()
    assert counts["out"] == (10, 10)
    processes._pump(io.BytesIO(b"0123456789ABCDEFGHIJ"), tmp_path / "g", 7, counts, "out")  # odd cap
    assert (tmp_path / "g").read_bytes() == "012\n… 13 bytes dropped …\nGHIJ".encode()
    assert counts["out"] == (7, 13)


@pytest.mark.unit
@pytest.mark.parametrize("size", [0, 5, 10])
def test_output_within_the_cap_is_kept_whole_without_a_marker(tmp_path: Path, size: int) -> None:
    data = b"abcdefghij"[:size]
    counts: dict = {}
    processes._pump(io.BytesIO(data), tmp_path / "f", 10, counts, "out")
    assert (tmp_path / "f").read_bytes() == data and counts["out"] == (size, 0)


# ------------------------------------------- 2. ended by the harness: no exit code, the signal

@pytest.mark.sandbox
def test_sleep_killed_at_the_clock_has_no_exit_code_and_names_the_signal(tmp_path: Path) -> None:
    res = _run(tmp_path, "sleep 30", timeout_s=1)
    assert res.end_reason == "time_box" and res.timed_out
    assert res.returncode is None, f"killed at the clock, yet exit code {res.returncode}"
    assert res.signal in ("SIGTERM", "SIGKILL")
    assert res.wall_s < 10


@pytest.mark.sandbox
def test_a_sigterm_ignoring_command_is_ended_by_sigkill(tmp_path: Path) -> None:
    res = _run(tmp_path, "trap '' TERM; sleep 30", timeout_s=1)
    assert res.end_reason == "time_box" and res.returncode is None and res.signal == "SIGKILL"


@pytest.mark.sandbox
def test_exit_0_after_the_clock_is_still_no_exit_code(tmp_path: Path) -> None:
    """A command that answers the harness's SIGTERM with ``exit 0`` did not succeed: the clock ended it."""
    res = _run(tmp_path, "trap 'exit 0' TERM; sleep 30 & wait", timeout_s=1)
    assert res.end_reason == "time_box" and res.returncode is None and res.signal == "SIGTERM"


@pytest.mark.sandbox
@pytest.mark.skipif(not BWRAP, reason="bubblewrap unavailable")
def test_sandboxed_sleep_killed_at_the_clock_has_no_exit_code(tmp_path: Path) -> None:
    box = sandbox.make_sandbox("bwrap", writable=[tmp_path])
    res = _run(tmp_path, "sleep 30", timeout_s=1, sandbox=box)
    assert res.end_reason == "time_box" and res.returncode is None
    assert res.signal in ("SIGTERM", "SIGKILL")


@pytest.mark.sandbox
def test_a_stopped_command_has_no_exit_code(tmp_path: Path) -> None:
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    res = _run(tmp_path, "sleep 30", stop_event=stop)
    assert res.end_reason == "stopped" and res.returncode is None and res.signal in ("SIGTERM", "SIGKILL")


@pytest.mark.sandbox
def test_a_limit_stop_has_no_exit_code(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    box = sandbox.make_sandbox("none", writable=[ws], limits={"max_workspace_mb": 1})
    res = run_process("head -c 3000000 /dev/zero > big; sleep 30", ws, dict(os.environ), 20,
                      tmp_path / "out", tmp_path / "err", sandbox=box)
    assert res.end_reason == "limit" and "workspace limit" in (res.limit_hit or "")
    assert res.returncode is None and res.signal in ("SIGTERM", "SIGKILL")


@pytest.mark.sandbox
def test_an_exit_keeps_its_code_and_no_signal(tmp_path: Path) -> None:
    res = _run(tmp_path, "exit 3")
    assert (res.end_reason, res.returncode, res.signal) == ("exit", 3, None)


@pytest.mark.sandbox
def test_a_command_killed_by_a_signal_of_its_own_names_it(tmp_path: Path) -> None:
    res = _run(tmp_path, "kill -SEGV $$")
    assert res.end_reason == "exit" and res.returncode == -11 and res.signal == "SIGSEGV"


@pytest.mark.sandbox
def test_the_runner_does_not_reap_another_childs_exit_status(tmp_path: Path) -> None:
    """The runner reaps the orphans its command left; a child somebody else started (and will
    wait for) keeps its exit status — stolen, Popen would report 0."""
    other = subprocess.Popen(["sh", "-c", "exit 7"])
    time.sleep(0.3)  # a zombie now, waiting for its parent's wait()
    _run(tmp_path, "sleep 30", timeout_s=0.5)
    assert other.wait() == 7


@pytest.mark.unit
def test_ended_in_error_is_a_crash_not_a_harness_stop() -> None:
    f = processes.ended_in_error
    assert f("exit", 3, None) and f("exit", -11, "SIGSEGV") and f("exit", 137, None)
    assert not f("exit", 0, None)
    for why in ("time_box", "green", "stopped", "limit", "harness_error", "submit"):
        assert not f(why, None, "SIGTERM") and not f(why, 0, None)


# ------------------------------------------------ 3. a crashed agent is flagged on its run row

@pytest.fixture()
def sealed(tmp_path: Path) -> Path:
    pack = make_pack(tmp_path / "p", n=1)
    t = pack / "tasks" / "t00"
    out = tmp_path / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), out, tmp_path / "results" / "sealed.json")
    return out


def _row(sealed: Path, tmp: Path, command: str, envelope=ENVELOPE) -> tuple[dict, dict, dict]:
    rd = tmp / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="auto", hide=(tmp / "p", tmp / "results"))
    rec = run_agent.run_agent(sealed, rd, "agent", "0" * 16, command, {}, 1, envelope, options)
    score = hidden_score.score_run(sealed, rd, tmp / "results" / "score.json", 60, sandbox_mode="auto")
    tasks = [{"task_id": "t00", "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    [row] = stratify.build_runs({"pack_digest": "p" * 64}, tasks, [], [score], HEALTH)
    return rec, score, row


@pytest.mark.sandbox
def test_agent_that_fixes_then_exits_3_passes_and_is_flagged(sealed: Path, tmp_path: Path) -> None:
    rec, score, row = _row(sealed, tmp_path, FIX_AGENT + "; exit 3")
    assert rec["exit_code"] == 3 and rec["end_reason"] == "exit" and rec["signal"] is None
    assert score["status"] == "pass" and score["agent_error"] is True
    assert row["status"] == "pass" and row["agent_error"] is True and row["exit_code"] == 3


@pytest.mark.sandbox
def test_agent_killed_by_a_signal_is_flagged(sealed: Path, tmp_path: Path) -> None:
    rec, score, row = _row(sealed, tmp_path, FIX_AGENT + "; kill -KILL $$")
    assert rec["end_reason"] == "exit" and rec["exit_code"] not in (0, None)
    assert row["status"] == "pass" and row["agent_error"] is True


@pytest.mark.sandbox
def test_agent_exiting_0_is_not_flagged(sealed: Path, tmp_path: Path) -> None:
    rec, score, row = _row(sealed, tmp_path, FIX_AGENT)
    assert rec["exit_code"] == 0 and rec["signal"] is None
    assert row["status"] == "pass" and row["agent_error"] is False and score["agent_error"] is False


@pytest.mark.sandbox
def test_agent_killed_at_its_clock_is_a_timeout_not_an_agent_error(sealed: Path, tmp_path: Path) -> None:
    rec, score, row = _row(sealed, tmp_path, FIX_AGENT + "; trap 'exit 0' TERM; sleep 60 & wait",
                           envelope=dict(ENVELOPE, max_wall_s=2))
    assert rec["timed_out"] and rec["end_reason"] == "time_box"
    assert rec["exit_code"] is None, f"killed at the clock, yet run.json says exit {rec['exit_code']}"
    assert rec["signal"] in ("SIGTERM", "SIGKILL")
    assert score["status"] == "timeout" and row["status"] == "timeout" and row["agent_error"] is False
    assert row["exit_code"] is None


@pytest.mark.unit
def test_runs_table_declares_agent_error_and_controls_are_false() -> None:
    from sealbench.core import tables

    assert ("agent_error", "bool") in [(c[0], c[1]) for c in tables.RUNS_COLUMNS]
    ctl = {"task_id": "t00", "results": [{"solver": "oracle", "fingerprint": "o" * 16, "epoch": 1,
                                          "status": "pass", "visible_pass": True, "hidden_pass": True,
                                          "patch_bytes": 10, "reason": None}]}
    tasks = [{"task_id": "t00", "stratum": "xs", "split": "holdout", "task_digest": "d" * 64}]
    [row] = stratify.build_runs({"pack_digest": "p" * 64}, tasks, [ctl], [], HEALTH)
    assert row["agent_error"] is False


@pytest.mark.sandbox
def test_hidden_score_names_the_signal_of_a_crashed_failing_agent(sealed: Path, tmp_path: Path) -> None:
    rec, score, row = _row(sealed, tmp_path, STAMP + "; kill -SEGV $$")
    assert score["status"] == "fail" and row["agent_error"] is True
    if rec["signal"]:  # unsandboxed: the harness saw the signal itself
        assert rec["signal"] == "SIGSEGV" and "SIGSEGV" in score["reason"]
    else:  # sandboxed: bwrap reports it as exit 128+11
        assert rec["exit_code"] == 139 and "exit 139" in score["reason"]
