"""What the stages that run a task's code share (sealbench.stages.sandboxed): their isolation flags
and the error handling of their ``main``: a sandbox that cannot be had fails the job (exit 1,
nothing recorded); any other error is recorded as the harness's and the job succeeds."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.isolation import sandbox  # noqa: E402
from sealbench.stages import hidden_score, run_agent, run_dummy, sandboxed  # noqa: E402

pytestmark = pytest.mark.unit


def _parse(words: list[str], **kw) -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    sandboxed.add_isolation_args(ap, **kw)
    return ap.parse_args(words)


def test_the_isolation_flags_and_their_defaults() -> None:
    args = _parse([])
    assert (args.timeout, args.sandbox, args.limits, args.env) == (300, "auto", None, None)
    assert sandboxed.limits_arg(args) is None and sandboxed.env_arg(args) is None
    args = _parse(["--timeout", "7", "--sandbox", "off", "--limits", json.dumps({"memory_mb": 64})])
    assert (args.timeout, args.sandbox, sandboxed.limits_arg(args)) == (7.0, "off", {"memory_mb": 64})
    assert not hasattr(_parse([], timeout=False), "timeout")
    with pytest.raises(SystemExit):
        _parse(["--sandbox", "maybe"])


def test_run_guarded_returns_the_work_or_the_harness_record(capsys) -> None:
    assert sandboxed.run_guarded("s", lambda: {"ok": 1}, lambda exc: {"broke": str(exc)}) == ({"ok": 1}, False)

    def broken() -> dict:
        raise ValueError("boom")

    assert sandboxed.run_guarded("s", broken, lambda exc: {"broke": str(exc)}) == ({"broke": "boom"}, True)

    def no_sandbox() -> dict:
        raise sandbox.SandboxUnavailable("sandbox: required, but bwrap is missing")

    assert sandboxed.run_guarded("stage_x", no_sandbox, lambda exc: {"broke": str(exc)}) is None
    assert "stage_x: sandbox: required, but bwrap is missing" in capsys.readouterr().err


@pytest.mark.parametrize("stage, work, words", [
    (run_dummy, "run_controls", ["--sealed", "s", "--out-dir", "o"]),
    (hidden_score, "score_run", ["--sealed", "s", "--run-dir", "r", "--out", "o"]),
])
def test_a_scoring_stage_without_its_sandbox_fails_the_job(stage, work, words, monkeypatch, capsys) -> None:
    def unavailable(*_a, **_k):
        raise sandbox.SandboxUnavailable("sandbox: required, but it cannot be had here")

    monkeypatch.setattr(stage, work, unavailable)
    assert stage.main([*words, "--sandbox", "required"]) == 1
    assert f"{stage.__name__.rsplit('.', 1)[1]}: sandbox: required" in capsys.readouterr().err


def test_run_dummy_records_a_harness_failure_and_succeeds(tmp_path: Path, capsys) -> None:
    out = tmp_path / "controls"
    assert run_dummy.main(["--sealed", str(tmp_path / "no-such-task" / "d" / "sealed"), "--out-dir", str(out),
                           "--sandbox", "off"]) == 0
    record = json.loads((out / "controls.json").read_text())
    assert record["control_infra_fail"] is True and record["task_id"] == "no-such-task"
    assert "run_dummy: HARNESS ERROR on no-such-task" in capsys.readouterr().err


def test_run_agent_parser_has_the_isolation_flags_but_no_timeout() -> None:
    options = {o for a in run_agent.parser()._actions for o in a.option_strings}
    assert {"--sandbox", "--limits", "--env", "--visible-timeout"} <= options
    assert "--timeout" not in options
