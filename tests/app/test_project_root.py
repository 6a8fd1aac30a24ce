"""The CLI finds the project from any folder inside it and from a session's workspace (issue 13,
point 8a); where there is none it says so in one sentence (exit 2, no traceback).

The project here is a folder with `Snakefile` and `config/config.yaml` whose `pack` is relative
(`pack`), as in the bundled project; the commands run as `python -m sealbench.app.cli` from a folder
two levels below it, from a folder outside any project, and from a human session's workspace
(a scratch folder outside the project).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from packgen import make_pack, write_config  # noqa: E402

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    shutil.copy(ROOT / "Snakefile", p / "Snakefile")
    make_pack(p / "pack")
    (p / "config").mkdir()
    write_config(p / "config" / "config.yaml", Path("pack"))  # relative to the project folder
    (p / "docs" / "deep").mkdir(parents=True)
    (tmp_path / "scratch").mkdir()
    return p


def sb(cwd: Path, *args: str, scratch: str | None = None, **env: str) -> subprocess.CompletedProcess:
    """``sealbench ARGS`` run in ``cwd`` with this tree's code (scratch folders in ``scratch``)."""
    e = {k: v for k, v in os.environ.items() if k not in ("SEALBENCH_PROJECT", "SEALBENCH_SESSION_SOCKET")}
    e.update(PYTHONPATH=str(ROOT / "scripts"), **env)
    if scratch:
        e["SEALBENCH_TMPDIR"] = scratch
    return subprocess.run([sys.executable, "-m", "sealbench.app.cli", *args], cwd=cwd, env=e, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=600)


def test_validate_and_progress_from_a_subfolder(proj: Path) -> None:
    deep = proj / "docs" / "deep"
    res = sb(deep, "validate")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "valid. pack" in res.stdout and "12 tasks" in res.stdout
    res = sb(deep, "progress")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "hash_pack" in res.stdout and "decision: not yet" in res.stdout
    # a path typed in the subfolder is read from there
    (deep / "mine.yaml").write_text("seed: 7\n")
    res = sb(deep, "validate", "--configfile", "mine.yaml")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("args", [["validate"], ["progress"], ["show"], ["session", "status"], ["session", "check"]],
                         ids=lambda a: "_".join(a))
def test_outside_any_project_one_sentence_exit_2(tmp_path: Path, args: list[str]) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    res = sb(nowhere, *args)
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "Snakefile" in err and "config/config.yaml" in err and str(nowhere) in err, err


def test_session_commands_from_the_workspace(proj: Path) -> None:
    scratch = str(proj.parent / "scratch")
    res = sb(proj, "session", "start", "t00", "--role", "human", "--who", "ana", scratch=scratch)
    assert res.returncode == 0, res.stdout + res.stderr
    ws = Path(re.search(r"^workspace: (.+)$", res.stdout, re.M).group(1))
    assert not ws.is_relative_to(proj)  # the workspace lives outside the project
    inside = ws / "visible_tests"
    sdir = proj / "results" / "sessions" / "t00-ana-1"

    res = sb(inside, "session", "status", scratch=scratch)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "session t00-ana-1: ana on t00 (open)" in res.stdout
    res = sb(inside, "session", "check", scratch=scratch)
    assert res.returncode == 1, res.stdout + res.stderr            # the bug is still there
    assert "visible tests: failing" in res.stdout
    assert len((sdir / "attempts.jsonl").read_text().splitlines()) == 1
    res = sb(ws, "session", "steer", "asked a colleague", scratch=scratch)
    assert res.returncode == 0, res.stdout + res.stderr
    res = sb(ws, "validate", scratch=scratch)                      # the project, found through the session
    assert res.returncode == 0 and "12 tasks" in res.stdout, res.stdout + res.stderr
    (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    res = sb(ws, "session", "submit", scratch=scratch)
    assert res.returncode == 0, res.stdout + res.stderr
    runs = list((proj / "results" / "tasks" / "t00").glob("*/sessions/ana/1/run.json"))
    assert len(runs) == 1 and json.loads(runs[0].read_text())["steer_count"] == 1


def test_the_project_named_by_environment(proj: Path, tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir()
    res = sb(nowhere, "progress", SEALBENCH_PROJECT=str(proj))
    assert res.returncode == 0, res.stdout + res.stderr
