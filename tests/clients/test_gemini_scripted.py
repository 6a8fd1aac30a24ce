"""The real Gemini CLI against the scripted Gemini server (sealbench.testing.scripted_gemini), run
with sealbench's recipe (sealbench.agent.client_recipes_gemini): no network, no real model.

The client is the gemini-cli preset's install (``$SEALBENCH_GEMINI_BIN`` overrides it): the
clients tier."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.agent.client_recipes_gemini import gemini_recipe  # noqa: E402
from sealbench.testing.scripted_gemini import ScriptedGemini  # noqa: E402

pytestmark = pytest.mark.clients


def gemini_bin() -> str:
    """The client: ``$SEALBENCH_GEMINI_BIN``, else the gemini-cli preset's install (made once)."""
    from sealbench.agent import clients

    client = clients.CLIENTS["gemini-cli"]
    return os.environ.get("SEALBENCH_GEMINI_BIN") or str(clients.install(client, client.version) / client.bin)

MODEL = "gemini-2.5-pro"
CHECK = "import os, sys\nsys.path.insert(0, os.getcwd())\nimport calc\nassert calc.add(2, 3) == 5\nprint('visible ok')\n"
SCRIPT = ["cat calc.py", "sed -i 's/a - b/a + b/' calc.py", 'printf "[%s]\\n" "$SEALBENCH_VISIBLE_CMD"', "$SEALBENCH_VISIBLE_CMD"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def task(tmp_path: Path) -> tuple[Path, Path]:
    """(workspace repo with the bug, private HOME holding the prompt)."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    repo.mkdir()
    home.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "buggy add")
    (home / "prompt.md").write_text("calc.add subtracts instead of adding. Fix it.\n")
    (home / "check.py").write_text(CHECK)  # the visible tests, outside the workspace
    return repo, home


def run_client(repo: Path, home: Path, base_url: str, timeout: float) -> tuple[subprocess.CompletedProcess, float]:
    """Run the recipe as the sandbox would: its files under HOME, its env, `sh -c` in the repo."""
    command, env, files = gemini_recipe(MODEL, base_url, bin=gemini_bin())
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1",
                "TMPDIR": str(home), "SEALBENCH_PROMPT": str(home / "prompt.md"),
                "SEALBENCH_VISIBLE_CMD": f"python3 {home / 'check.py'}", **env}
    start = time.monotonic()
    res = subprocess.run(["sh", "-c", command], cwd=repo, env=full_env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=timeout)
    return res, time.monotonic() - start


def test_scripted_fix_lands_and_usage_is_recorded(task: tuple[Path, Path]) -> None:
    repo, home = task
    with ScriptedGemini(SCRIPT, keep_bodies=True) as srv:
        res, secs = run_client(repo, home, srv.base_url, timeout=120)
    print(f"gemini exit {res.returncode} after {secs:.1f} s\n--- stdout\n{res.stdout}--- stderr\n{res.stderr}")
    print("usage:", srv.split())
    assert res.returncode == 0, res.stderr[-2000:]
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    # the client wrote nothing of its own into the workspace
    assert _git(repo, "status", "--porcelain", "--untracked-files=all").splitlines() == [" M calc.py"]
    # the script was played to its end, one main turn per command, then the final text
    assert srv.finished
    assert srv.main_turns() == list(range(len(SCRIPT) + 1))
    assert all(c["model"] == MODEL and c["method"] == "streamGenerateContent" for c in srv.calls if c["kind"] == "main")
    assert all(c["headers"].get("x-goog-api-key") for c in srv.calls), "the dummy key goes in x-goog-api-key"
    assert not srv.unknown, srv.unknown
    # the prompt (stdin) and the visible command's output reached the model
    last = srv.calls[-1]["body"]["contents"]
    assert "subtracts instead of adding" in str(last[0]) and "Check your work with" in str(last[0])
    for part in (p for c in last if c.get("role") == "user" for p in c["parts"] if "functionResponse" in p):
        print("tool output:", part["functionResponse"]["response"]["output"].splitlines()[1:-2])
    assert "visible ok" in str(last[-1])
    main = srv.totals("main")
    assert main["calls"] == len(SCRIPT) + 1 and main["cachedContentTokenCount"] > 0
    assert srv.totals()["totalTokenCount"] == sum(c["usage"]["totalTokenCount"] for c in srv.calls)
    assert "complete" in res.stdout  # the final text reply is the client's output
