"""Fast tests for the built-in classical repair agent (sealbench.agents.repair)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.agents import repair  # noqa: E402

VISIBLE_CMD = f"{sys.executable} -m pytest -q -p no:cacheprovider visible_tests"

OFF_BY_ONE = '''\
"""Tiny inventory helpers."""


def in_stock(count, minimum):
    """True when at least `minimum` items are left."""
    return count > minimum


def total(prices):
    return sum(prices)
'''

OFF_BY_ONE_TESTS = '''\
from shop.stock import in_stock, total


def test_exactly_minimum_is_in_stock():
    assert in_stock(3, 3)


def test_below_minimum():
    assert not in_stock(2, 3)


def test_above_minimum():
    assert in_stock(5, 3)


def test_total():
    assert total([1, 2]) == 3
'''

WRONG_KEY = '''\
def user_name(record):
    return record["nme"]
'''

WRONG_KEY_TESTS = '''\
from shop.users import user_name


def test_user_name():
    assert user_name({"name": "ada"}) == "ada"
'''

UNREACHABLE = '''\
def scale(x):
    if x > 100:
        return 0
    return x * 3 + 1
'''

UNREACHABLE_TESTS = '''\
from shop.scale import scale


def test_scale():
    assert scale(2) == 13
'''

ARITH = '''\
def net(gross, fee):
    return gross + fee
'''

ARITH_TESTS = '''\
from shop.money import net


def test_net():
    assert net(10, 3) == 7


def test_net_zero_fee():
    assert net(10, 0) == 10
'''


def git(ws: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True, text=True).stdout


def make_workspace(tmp_path: Path, module: str, source: str, tests: str) -> Path:
    ws = tmp_path / "ws"
    (ws / "shop").mkdir(parents=True)
    (ws / "shop" / "__init__.py").write_text("")
    (ws / "shop" / f"{module}.py").write_text(source)
    (ws / "visible_tests").mkdir()
    (ws / "visible_tests" / "test_visible.py").write_text(tests)
    (ws / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "snapshot")
    return ws


@pytest.fixture
def agent_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    out = tmp_path / "out"
    out.mkdir()
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Something is wrong.\n")

    def setup(ws: Path, max_steps: int = 50) -> Path:
        monkeypatch.chdir(ws)
        for key, value in {
            "SEALBENCH_TASK_ID": "t-1", "SEALBENCH_PROMPT": str(prompt), "SEALBENCH_WORKSPACE": str(ws),
            "SEALBENCH_VISIBLE_CMD": VISIBLE_CMD, "SEALBENCH_TIME_BOX_S": "120",
            "SEALBENCH_MAX_STEPS": str(max_steps), "SEALBENCH_MAX_OUTPUT_TOKENS": "1000",
            "SEALBENCH_OUT": str(out),
        }.items():
            monkeypatch.setenv(key, value)
        return out

    return setup


def usage(out: Path) -> dict:
    return json.loads((out / "usage.json").read_text())


def log(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "repair_log.jsonl").read_text().splitlines()]


@pytest.mark.sandbox
def test_fixes_off_by_one(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "stock", OFF_BY_ONE, OFF_BY_ONE_TESTS)
    out = agent_env(ws)
    assert repair.main([]) == 0
    assert "return count >= minimum" in (ws / "shop" / "stock.py").read_text()
    assert git(ws, "diff", "--stat", "--", "visible_tests") == ""
    assert git(ws, "status", "--porcelain") == " M shop/stock.py\n"  # no __pycache__ left behind
    steps = usage(out)["steps"]
    assert 0 < steps <= repair.DEFAULT_MAX_CANDIDATES
    assert usage(out) == {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "steps": steps}
    assert log(out)[-1]["accepted"] is True
    stamp = json.loads((out / "stamp.json").read_text())
    assert stamp["server_id"].startswith("offline:") and stamp["route_changed"] is False
    assert (out / "steers.jsonl").read_text() == ""
    assert subprocess.run(VISIBLE_CMD, shell=True, cwd=ws, capture_output=True).returncode == 0


@pytest.mark.sandbox
def test_unfixable_bug_leaves_empty_diff(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "users", WRONG_KEY, WRONG_KEY_TESTS)
    out = agent_env(ws)
    assert repair.main([]) == 0
    assert git(ws, "diff") == ""
    assert git(ws, "status", "--porcelain") == ""
    assert usage(out)["steps"] >= 1


@pytest.mark.sandbox
def test_max_steps_caps_visible_runs(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "scale", UNREACHABLE, UNREACHABLE_TESTS)
    out = agent_env(ws, max_steps=2)
    assert repair.main([]) == 0
    assert usage(out)["steps"] == 2
    assert len(log(out)) == 2
    assert git(ws, "diff") == ""


@pytest.mark.sandbox
def test_lite_only_tries_comparison_swaps(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "money", ARITH, ARITH_TESTS)
    out = agent_env(ws)
    assert repair.main(["--lite"]) == 0
    entries = log(out)
    assert all(e["operator"] == "baseline" or e["operator"].startswith("cmp") for e in entries)
    assert len(entries) - 1 <= repair.LITE_MAX_CANDIDATES
    assert git(ws, "diff") == ""


@pytest.mark.sandbox
def test_full_mode_fixes_arithmetic_and_lite_fixes_comparison(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "money", ARITH, ARITH_TESTS)
    agent_env(ws)
    assert repair.main([]) == 0
    assert "return gross - fee" in (ws / "shop" / "money.py").read_text()


@pytest.mark.sandbox
def test_green_workspace_is_left_alone(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "stock", OFF_BY_ONE.replace(">", ">="), OFF_BY_ONE_TESTS)
    out = agent_env(ws)
    assert repair.main([]) == 0
    assert git(ws, "status", "--porcelain") == ""
    assert usage(out)["steps"] == 1


@pytest.mark.sandbox
def test_module_cli_lite_fixes_comparison(tmp_path: Path, agent_env) -> None:
    ws = make_workspace(tmp_path, "stock", OFF_BY_ONE, OFF_BY_ONE_TESTS)
    out = agent_env(ws)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "scripts"))
    proc = subprocess.run([sys.executable, "-m", "sealbench.agents.repair", "--lite"], cwd=ws, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "count >= minimum" in (ws / "shop" / "stock.py").read_text()
    assert usage(out)["steps"] <= repair.LITE_MAX_CANDIDATES + 1


@pytest.mark.unit
def test_parse_output_counts_and_ids() -> None:
    text = ("F.E\nFAILED visible_tests/test_a.py::test_x[1-2] - AssertionError: boom\n"
            "ERROR visible_tests/test_a.py::test_y - KeyError\n2 failed, 1 passed, 1 error in 0.10s\n")
    passed, failed, errors, ids = repair.parse_output(text)
    assert (passed, failed, errors) == (1, 2, 1)
    assert ids == ["visible_tests/test_a.py::test_x[1-2]", "visible_tests/test_a.py::test_y"]


@pytest.mark.unit
def test_mutants_compile_and_cover_operators(tmp_path: Path) -> None:
    src = "def f(xs, n):\n    return [x for x in xs[:n] if x < 3 and not x == 0]\n"
    mut = repair.LineMutator(src, repair.ast.parse(src), set())
    ops = {m.operator for m in mut.mutants(2)}
    assert {"cmp <-><=", "swap and->or", "remove not", "bound +1", "const 3->4"} <= ops


@pytest.mark.unit
def test_colour_codes_in_the_test_output_are_read_through() -> None:
    """A suite whose pytest config forces ``--color=yes`` (humanize does): the failing ids, the
    counts and the frames must be read as without colour, or the agent stops after one run."""
    esc = "\x1b[31m\x1b[1m"
    out = (f"{esc}src/pkg/mod.py\x1b[0m:12: AssertionError\n"
           f"{esc}FAILED\x1b[0m t/test_mod.py::test_a - assert 1 == 2\n"
           f"\x1b[31m========= \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m3 passed\x1b[0m\x1b[31m in 0.05s\x1b[0m =========\n")
    assert repair.parse_output(out) == (3, 1, 0, ["t/test_mod.py::test_a"])
    assert repair.strip_ansi(out).splitlines()[0] == "src/pkg/mod.py:12: AssertionError"
