"""The real Codex CLI against the scripted Responses server: no network, no model.

``sealbench.testing.scripted_openai_responses`` plays a fixed list of shell commands through
Codex's shell tool; ``sealbench.agent.client_recipes_codex.codex_recipe`` is the command,
environment and config file a run uses. Skipped when the client is not installed (path below,
or ``$SEALBENCH_CODEX_BIN``). Outbound traffic is pointed at a local proxy that refuses and
records every request, so a recipe that lets Codex phone home fails here.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.agent.client_recipes_codex import codex_recipe  # noqa: E402
from sealbench.testing.scripted_openai_responses import ScriptedResponses  # noqa: E402

pytestmark = pytest.mark.clients


def codex_bin() -> str:
    """The client: ``$SEALBENCH_CODEX_BIN``, else the codex preset's install (made once)."""
    from sealbench.agent import clients

    client = clients.CLIENTS["codex"]
    return os.environ.get("SEALBENCH_CODEX_BIN") or str(clients.install(client, client.version) / client.bin)

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


class _RefusingProxy(socketserver.ThreadingTCPServer):
    """An HTTP(S) proxy that answers 403 to everything and records each request line."""

    daemon_threads = True

    def __init__(self) -> None:
        self.seen: list[str] = []
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ProxyHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline().decode(errors="replace").strip()
        self.server.seen.append(line)  # type: ignore[attr-defined]
        self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


@pytest.fixture
def proxy():
    p = _RefusingProxy()
    yield p
    p.shutdown()
    p.server_close()


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(repo with a buggy calc.py, committed; empty home; prompt file)."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    (repo / "calc.py").write_text(BUGGY)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "calc.py"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=repo, check=True)
    prompt = tmp_path / "prompt.md"
    prompt.write_text("add() in calc.py subtracts; make it add.\n")
    return repo, home, prompt


def _run_codex(base_url: str, repo: Path, home: Path, prompt: Path, proxy_url: str,
               timeout: float) -> tuple[int, str, str, float]:
    """Run the recipe's command as sealbench would: bash -c in the workspace, HOME its own."""
    cmd, env, files = codex_recipe("scripted-model", base_url, bin=codex_bin())
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
                "SEALBENCH_PROMPT": str(prompt), "SEALBENCH_VISIBLE_CMD": f"{sys.executable} -B -m pytest -q",
                "PYTHONDONTWRITEBYTECODE": "1",
                "HTTP_PROXY": proxy_url, "HTTPS_PROXY": proxy_url, "ALL_PROXY": proxy_url,
                "http_proxy": proxy_url, "https_proxy": proxy_url, "all_proxy": proxy_url,
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost", **env}
    t0 = time.monotonic()
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=repo, env=full_env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the launcher and the native binary with it
        out, err = proc.communicate()
        pytest.fail(f"codex did not end within {timeout:.0f} s\nstdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}")
    return proc.returncode, out, err, time.monotonic() - t0


def _events(stdout: str) -> list[dict]:
    events = []
    for line in stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
    return events


def test_codex_plays_the_script_and_fixes_the_bug(tmp_path, proxy):
    repo, home, prompt = _workspace(tmp_path)
    py = shlex.quote(sys.executable)
    script = ["cat calc.py",
              "sed -i 's/a - b/a + b/' calc.py",
              f"{py} -B -c 'import calc; assert calc.add(2, 3) == 5; print(\"ok\")'"]
    with ScriptedResponses(script) as srv:
        rc, out, err, secs = _run_codex(srv.api_base, repo, home, prompt, proxy.url, timeout=120)
    print(f"codex exit {rc} after {secs:.1f} s; server totals {json.dumps(srv.totals())}")
    events = _events(out)
    assert rc == 0, f"stdout:\n{out[-3000:]}\nstderr:\n{err[-3000:]}"
    assert (repo / "calc.py").read_text() == FIXED
    # the script played to the end: every command issued, its output fed back, the final message sent
    assert srv.played(), json.dumps(srv.calls, indent=1, default=str)[-3000:]
    assert [c["turn"] for c in srv.calls] == list(range(len(script) + 1))
    assert all(c["tool"] for c in srv.calls[:-1]) and srv.calls[-1]["final"]
    assert "ok" in str(srv.calls[-1]["observation"])
    # the prompt arrived with the visible test command appended
    task = srv.calls[0]["task"]
    assert task.startswith(prompt.read_text().strip()) and "Run the visible tests with:" in task and "pytest" in task
    # what Codex reports for the turn is what the server reported, cached and reasoning tokens too
    usage = next(e["usage"] for e in events if e.get("type") == "turn.completed")
    totals = srv.totals()
    print(f"codex turn.completed usage {json.dumps(usage)}")
    assert usage["input_tokens"] == totals["input_tokens"]
    assert usage["cached_input_tokens"] == totals["cached_tokens"] > 0
    assert usage["output_tokens"] == totals["output_tokens"]
    assert usage["reasoning_output_tokens"] == totals["reasoning_tokens"]
    # Codex asked only for responses, and left nothing of its own in the workspace
    assert {(r["method"], r["path"]) for r in srv.requests} == {("POST", "/v1/responses")}
    status = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert status == [" M calc.py"]
    assert (home / "codex-last-message.txt").read_text().strip() == srv.final_text
    assert proxy.seen == [], f"Codex tried to reach out: {proxy.seen}"


def test_codex_fails_fast_against_a_wrong_port(tmp_path, proxy):
    repo, home, prompt = _workspace(tmp_path)
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err, secs = _run_codex(f"http://127.0.0.1:{port}/v1", repo, home, prompt, proxy.url, timeout=60)
    errors = [e.get("message") or (e.get("error") or {}).get("message") for e in _events(out)
              if e.get("type") in ("error", "turn.failed")]
    print(f"codex exit {rc} after {secs:.1f} s; its errors: {errors}")
    assert rc != 0
    assert secs < 60
    failed = [e for e in _events(out) if e.get("type") == "turn.failed"]
    assert failed and "Connection failed" in failed[-1]["error"]["message"], out[-3000:]
    assert (repo / "calc.py").read_text() == BUGGY
    assert proxy.seen == [], f"Codex tried to reach out: {proxy.seen}"
