"""A human session's shell is sealed like an agent's run (issue 13, point 8b).

The attack: a person in a session reads the pack's hidden tests, its gold patch, the bundled
suite or the project's results/ — from the session's shell, or through `session check` (a visible
test that prints the hidden one). From `sealbench session shell` (run here with `-c`, and once
interactively on a pseudo-terminal) none of them exists; the workspace, its visible tests and
the prompt are there, and `sealbench session check|steer|status|submit` work from inside.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import make_pack, write_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from sealbench.agent import session  # noqa: E402
from sealbench.isolation.sandbox import bwrap_problem  # noqa: E402

pytestmark = pytest.mark.sandbox

#: Text only the hidden test holds (packgen.HIDDEN).
SECRET = "add(3, 4) == 7"
needs_bwrap = pytest.mark.skipif(bool(bwrap_problem()), reason=f"bubblewrap cannot run here: {bwrap_problem()}")


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("SEALBENCH_TMPDIR", str(scratch))
    pack = make_pack(tmp_path / "pack", n=3)
    cfg = write_config(tmp_path / "config.yaml", pack)
    results = tmp_path / "results"
    s = session.start_session("t00", "ana", "human", cfg, results)
    return {"pack": pack, "results": results, "session": s, "ws": Path(s.data["workspace"]), "tmp": tmp_path}


def shell(env: dict, command: str) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "SEALBENCH_SESSION_SOCKET"}
    e["PYTHONPATH"] = str(ROOT / "scripts")
    return subprocess.run([sys.executable, "-m", "sealbench.app.cli", "session", "shell", "--results", str(env["results"]),
                           "-c", command], capture_output=True, text=True, env=e, cwd=env["tmp"],
                          stdin=subprocess.DEVNULL, timeout=300)


def forbidden(env: dict) -> list[Path]:
    t = env["pack"] / "tasks" / "t00"
    return [t / "hidden_tests" / "check_hidden.py", t / "oracle.patch", env["pack"], env["results"],
            env["results"] / "sessions", ROOT / "suite", ROOT / "results", ROOT / "config"]


@needs_bwrap
def test_attack_the_session_shell_shows_no_pack_and_no_results(env: dict) -> None:
    probes = "".join(f'if [ -e "{p}" ]; then echo "SEEN {p}"; fi; ' for p in forbidden(env))
    script = (probes + f'cat "{env["pack"]}/tasks/t00/hidden_tests/check_hidden.py"; '
              f'cat {ROOT}/suite/tasks/*/hidden_tests/* 2>&1 | head -2; ls "{env["results"]}"; '
              'cat visible_tests/check_visible.py >/dev/null && echo VISIBLE_OK; '
              'echo mine > mine.txt && echo WRITE_OK; cat "$SEALBENCH_PROMPT"; pwd')
    res = shell(env, script)
    out = res.stdout + res.stderr
    assert "SEEN" not in out, out
    assert SECRET not in out and "+    return a + b" not in out, out
    assert "VISIBLE_OK" in out and "WRITE_OK" in out and (env["ws"] / "mine.txt").read_text() == "mine\n"
    assert "Task t00" in out and str(env["ws"]) in out


@needs_bwrap
def test_session_commands_work_from_inside_the_shell(env: dict) -> None:
    res = shell(env, 'sealbench session check; echo "check rc=$?"; sealbench session steer "asked a colleague"; '
                     'sealbench session status; sealbench validate; echo "validate rc=$?"')
    out = res.stdout + res.stderr
    assert "visible tests: failing" in out and "check rc=1" in out, out
    assert "steer recorded" in out and "session t00-ana-1: ana on t00 (open)" in out
    assert "validate rc=2" in out and "runs only `sealbench session check`" in out
    sdir = env["session"].dir
    assert len(session.read_jsonl(sdir / "attempts.jsonl")) == 1 and len(session.read_jsonl(sdir / "out" / "steers.jsonl")) == 1
    res = shell(env, "sed -i 's/a - b/a + b/' calc.py && sealbench session submit; sleep 30; echo NOT_ENDED")
    out = res.stdout + res.stderr
    assert "submitted t00-ana-1" in out and "this shell closes" in out and "NOT_ENDED" not in out, out
    assert res.returncode == 0
    st = session.status(results=env["results"])
    assert st.session.data["status"] == "submitted"
    run = json.loads((Path(st.session.data["run_dir"]) / "run.json").read_text())
    assert run["steer_count"] == 1 and [a["exit"] for a in run["attempts"]] == [1]


def test_attack_a_visible_test_cannot_print_the_hidden_one(env: dict, capfd: pytest.CaptureFixture) -> None:
    """`session check` runs the person's code: it must not see the pack or results/ either."""
    hidden = env["pack"] / "tasks" / "t00" / "hidden_tests" / "check_hidden.py"
    (env["ws"] / "visible_tests" / "check_visible.py").write_text(
        "import os\n\n\ndef test_visible():\n"
        f"    try:\n        print(open({str(hidden)!r}).read())\n    except OSError as e:\n        print('NO PACK', e)\n"
        f"    print('RESULTS', os.path.exists({str(env['results'])!r}))\n    assert False\n")
    rc, _ = session.check(results=env["results"])
    out = capfd.readouterr()
    text = out.out + out.err
    assert rc == 1
    if not bwrap_problem():
        assert SECRET not in text and "RESULTS False" in text and "NO PACK" in text, text


@needs_bwrap
def test_the_interactive_shell_on_a_terminal(env: dict) -> None:
    hidden = env["pack"] / "tasks" / "t00" / "hidden_tests" / "check_hidden.py"
    e = {k: v for k, v in os.environ.items() if k != "SEALBENCH_SESSION_SOCKET"}
    e["PYTHONPATH"] = str(ROOT / "scripts")
    pid, fd = pty.fork()
    if pid == 0:  # the child: the session shell on the pseudo-terminal
        os.chdir(env["tmp"])
        os.execve(sys.executable, [sys.executable, "-m", "sealbench.app.cli", "session", "shell", "--results",
                                   str(env["results"])], e)
    out = b""

    def read_until(marker: bytes, timeout: float = 60) -> None:
        nonlocal out
        end = time.monotonic() + timeout
        while marker not in out and time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    out += os.read(fd, 1 << 16)
                except OSError:
                    return

    read_until(b"[sealbench t00-ana-1]")
    os.write(fd, f"cat {hidden}; echo DONE-$((6*7))\n".encode())
    read_until(b"DONE-42")
    os.write(fd, b"sealbench session status; echo DONE-$((7*7))\n")
    read_until(b"DONE-49")
    os.write(fd, b"exit\n")
    read_until(b"\x00", timeout=10)
    _, status = os.waitpid(pid, 0)
    text = out.decode("utf-8", "replace")
    assert "DONE-42" in text and "No such file or directory" in text and SECRET not in text, text
    assert "session t00-ana-1: ana on t00 (open)" in text, text
    assert os.waitstatus_to_exitcode(status) == 0
