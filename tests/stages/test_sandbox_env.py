"""Issue 25 point 5: sandboxed processes get an allowlisted environment, never the harness's.

An agent's command, the visible runs it asks for and the scoring commands run with the
contract's ``SEALBENCH_*`` variables, a minimal ``PATH``, ``HOME``, ``LANG``/``LC_ALL``, ``TERM``,
``TMPDIR`` where the sandbox has one, the harness's fixed knobs, and what the agent's own
``env:`` declares: nothing else of the harness's environment (its API keys, cloud credentials,
where the pack and results are) reaches them, so it cannot land in their output or in results/.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.agent import agent_probe  # noqa: E402
from sealbench.core import contract, core, paths  # noqa: E402
from sealbench.isolation import sandbox  # noqa: E402
from sealbench.scoring import scoring  # noqa: E402
from sealbench.stages import hash_pack, run_agent  # noqa: E402

CANARY = f"harness-secret-{uuid.uuid4().hex}"
#: What the harness has and no sandboxed process may see (names and values).
SECRETS = {"AWS_SECRET_ACCESS_KEY": CANARY, "OPENAI_API_KEY": "sk-" + CANARY, "ANTHROPIC_API_KEY": CANARY,
           "GITHUB_TOKEN": CANARY, "HARNESS_ONLY_KNOB": CANARY, "SEALBENCH_INTERNAL_KNOB": CANARY,
           paths.PACK_ENV: "/pack-" + CANARY, paths.RESULTS_ENV: "/results-" + CANARY,
           "PYTHONSTARTUP": "/nowhere-" + CANARY, "http_proxy": "http://" + CANARY}
#: A full envelope: every contract variable is set (the optional ones when declared).
ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 1000, "temperature": 0.0, "model": "m-1"}
#: What the shell itself adds to the environment it prints.
SHELL_OWN = {"PWD", "OLDPWD", "SHLVL", "_"}
#: The harness's fixed variables (besides the contract's, for an agent).
FIXED = {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "PYTHONDONTWRITEBYTECODE",
         "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONHASHSEED", "PYTHONPATH"}
#: What the tested code may see: the fixed ones, pytest's own, the task environment's.
TESTED = FIXED | SHELL_OWN | {"PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST", "PYTEST_VERSION", "VIRTUAL_ENV"}
#: The agent replaces calc.add with code that says which variables it sees, by name and value,
#: as a test failure message (printed by pytest, streamed back to the agent, kept in the logs).
DUMP = ("import os\n\n\ndef add(a, b):\n"
        "    raise AssertionError('ENVDUMP ' + repr(sorted(os.environ.items())))\n")


@pytest.fixture()
def sealed(tmp_path: Path) -> dict:
    base = tmp_path / f"w-{uuid.uuid4().hex[:8]}"
    pack = make_pack(base / "pack", n=1)
    t = pack / "tasks" / "t00"
    s = base / "results" / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), s, base / "results" / "sealed.json")
    return {"base": base, "pack": pack, "sealed": s}


@pytest.fixture()
def secrets(monkeypatch) -> dict[str, str]:
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    return SECRETS


def _printed_env(text: str) -> dict[str, str]:
    """``env``'s output (one NAME=value per line; the values here have no newline)."""
    out = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.replace("_", "a").isalnum():
            out[name] = value
    return out


def _leaks(text: str) -> list[str]:
    names = {k for k in SECRETS if f"{k}=" in text or f"'{k}'" in text}
    return sorted(names | ({"CANARY"} if CANARY in text else set()))


def _dumped(text: str) -> dict[str, str]:
    """The environment the DUMP code printed (the first ENVDUMP line of a pytest output)."""
    m = re.search(r"ENVDUMP (\[.*\])", text)
    assert m, text[-2000:]
    return dict(ast.literal_eval(m.group(1)))


def _attempt(w: dict, command: str, agent_env: dict | None = None, mode: str = "auto") -> tuple[dict, Path]:
    rd = w["base"] / "results" / f"run-{mode}"
    options = run_agent.RunOptions(sandbox_mode=mode, hide=(w["pack"], w["base"] / "results"))
    rec = run_agent.run_agent(w["sealed"], rd, "dumper", "0" * 16, command, agent_env or {}, 1, ENVELOPE, options)
    return rec, rd


@pytest.mark.sandbox
@pytest.mark.parametrize("mode", ["auto", "off"])
def test_an_agent_sees_no_variable_of_the_harness(sealed, secrets, mode: str) -> None:
    """Attack: the harness holds API keys and cloud credentials; an agent that prints its
    environment (into its own output, which lands in results/) sees none of them. What it sees
    is exactly the allowlist: the contract's variables, the fixed ones, its declared ``env:``."""
    rec, rd = _attempt(sealed, 'env; test -d "$HOME" && test -w "$HOME" && echo HOME-IS-USABLE',
                       {"MY_VAR": 1}, mode)
    assert rec["exit_code"] == 0, (rd / "agent.stderr").read_text()
    text = (rd / "agent.stdout").read_text()
    assert _leaks(text) == [], f"the agent saw the harness's {_leaks(text)}"
    seen = _printed_env(text)
    allowed = set(contract.ENV) | FIXED | SHELL_OWN | {"MY_VAR"}
    assert set(seen) <= allowed, f"not on the allowlist: {sorted(set(seen) - allowed)}"
    # the honest case: its declared env, every contract variable, a usable HOME, a minimal PATH
    assert seen["MY_VAR"] == "1"
    assert {k for k in seen if k.startswith("SEALBENCH_")} == set(contract.ENV)
    assert seen["SEALBENCH_TASK_ID"] == "t00" and seen["SEALBENCH_MODEL"] == "m-1"
    assert "HOME-IS-USABLE" in text
    assert seen["PATH"].split(os.pathsep) == [core.python_bin_dir(), "/usr/local/bin", "/usr/bin", "/bin"]
    assert seen["LANG"] == seen["LC_ALL"] == "C.UTF-8"
    isolated = rec["isolation"] == "bwrap"
    assert isolated is (mode == "auto" and sandbox.bwrap_problem() is None)
    assert ("TMPDIR" in seen) is isolated and seen.get("TMPDIR", "/tmp") == "/tmp"


@pytest.mark.sandbox
def test_tested_code_sees_no_variable_of_the_harness(sealed, secrets, tmp_path: Path) -> None:
    """Attack: the agent's code runs in its visible runs and in scoring with the tests; code
    that puts its environment into a test failure (kept in visible_logs/ and the scoring logs,
    streamed back to the agent for a visible run) shows none of the harness's variables."""
    cmd = f"printf %s {shlex.quote(DUMP)} > calc.py; \"$SEALBENCH_VISIBLE_CMD\"; true"
    rec, rd = _attempt(sealed, cmd)
    visible = (rd / "visible_logs" / "visible-1.stdout").read_text()
    assert "ENVDUMP" in visible, visible[-2000:]
    assert _leaks(visible) == [] and _leaks((rd / "agent.stdout").read_text()) == []
    # the same patch scored (the hidden tests import it): the tested code sees no secret either
    meta = json.loads((sealed["sealed"] / "meta.json").read_text())
    level = sandbox.resolve_level("auto")
    box = sandbox.make_sandbox(level, hide=[sealed["pack"], sealed["base"] / "results"])
    logs = tmp_path / "score"
    res = scoring.score_patch(sealed["sealed"], meta, (rd / "patch.diff").read_bytes(), logs, 60,
                              sandbox=box if level == "bwrap" else None)
    hidden = (logs / "hidden.stdout").read_text()
    assert res.status == "fail" and "ENVDUMP" in hidden, hidden[-2000:]
    assert _leaks(hidden) == [], f"the tested code saw the harness's {_leaks(hidden)}"
    for text in (visible, hidden):
        names = set(_dumped(text))
        assert names <= TESTED, f"not on the allowlist: {sorted(names - TESTED)}"


@pytest.mark.unit
def test_the_start_check_gets_the_runs_environment(secrets, tmp_path: Path) -> None:
    """The start check (no agent code runs) uses the same allowlist: an agent's command that
    names a harness-only variable cannot start from it there either."""
    env = agent_probe.worker_env("bwrap", {"MY_VAR": "x"},
                                 {"SEALBENCH_WORKSPACE": "/ws", "SEALBENCH_ISOLATION": "bwrap"})
    assert _leaks(repr(env)) == []
    assert env["MY_VAR"] == "x" and env["HOME"] == env["TMPDIR"] == "/tmp"
    assert set(env) <= set(contract.ENV) | FIXED | {"MY_VAR"}


@pytest.mark.unit
def test_a_task_environment_puts_its_bin_first_and_nothing_of_the_harness_path(monkeypatch) -> None:
    """A task with a test environment: its commands' PATH is that environment's bin, this
    interpreter's, the system's; the folders on the harness's own PATH are not passed on."""
    from sealbench.isolation.environments import BuiltEnv

    monkeypatch.setenv("PATH", os.pathsep.join(["/home/someone/.secret-tools/bin", "/opt/corp/bin",
                                                 os.environ["PATH"]]))
    built = BuiltEnv(path=Path("/envs/e1"), python=Path("/envs/e1/bin/python"), lock="", digest="d", installer="uv")
    env = core.harness_env({**built.command_env(), "PYTHONPATH": "/ws"})
    assert env["PATH"].split(os.pathsep) == ["/envs/e1/bin", core.python_bin_dir(), "/usr/local/bin", "/usr/bin", "/bin"]
    assert env["VIRTUAL_ENV"] == "/envs/e1" and env["PYTHONPATH"] == "/ws"
    assert core.harness_env()["PATH"] == core.command_path()
