"""run_agent + hidden_score + run_dummy called directly on a sealed task."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, make_pack  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import configuration, core  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent, run_dummy  # noqa: E402

ENVELOPE = {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100}


@pytest.fixture()
def sealed(tmp_path: Path) -> Path:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t00"
    out = tmp_path / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), out, tmp_path / "sealed.json")
    return out


def attempt(sealed: Path, tmp_path: Path, command: str, envelope=ENVELOPE, name="a") -> tuple[dict, dict]:
    rd = tmp_path / "runs" / name
    rec = run_agent.run_agent(sealed, rd, name, "0" * 16, command, {}, 1, envelope)
    score = hidden_score.score_run(sealed, rd, tmp_path / "scores" / f"{name}.json", 30)
    return rec, score


@pytest.mark.sandbox
def test_fixing_agent_passes_with_reports_read(sealed: Path, tmp_path: Path) -> None:
    cmd = ('"$SEALBENCH_VISIBLE_CMD"; ' + FIX_AGENT + '; "$SEALBENCH_VISIBLE_CMD"; '
           'echo \'{"tokens_in": 10, "tokens_out": 3, "cost_usd": 0.5, "steps": 2}\' > "$SEALBENCH_OUT/usage.json"; '
           'echo steer >> "$SEALBENCH_OUT/steers.jsonl"; test "$SEALBENCH_MAX_STEPS" = 5')
    rec, score = attempt(sealed, tmp_path, cmd)
    assert rec["exit_code"] == 0 and rec["end_reason"] == "exit"
    assert rec["usage"] == {"tokens_in": 10, "tokens_out": 3, "cost_usd": 0.5, "steps": 2}
    assert rec["steer_count"] == 1
    assert [a["exit"] for a in rec["attempts"]] == [1, 0]
    assert score["status"] == "pass" and score["time_to_green_s"] == rec["attempts"][1]["end_s"]


@pytest.mark.sandbox
def test_missing_reports_stay_null(sealed: Path, tmp_path: Path) -> None:
    rec, score = attempt(sealed, tmp_path, "true")
    assert set(rec["usage"].values()) == {None} and set(rec["stamp"].values()) == {None}
    assert rec["steer_count"] is None and rec["patch_bytes"] == 0
    assert score["status"] == "fail" and score["time_to_green_s"] is None


@pytest.mark.sandbox
def test_ill_typed_usage_is_null_and_reported(sealed: Path, tmp_path: Path) -> None:
    rec, _ = attempt(sealed, tmp_path, 'echo \'{"tokens_in": "many", "steps": 3}\' > "$SEALBENCH_OUT/usage.json"')
    assert rec["usage"]["tokens_in"] is None and rec["usage"]["steps"] == 3
    assert "tokens_in has the wrong type" in rec["report_problems"][0]


@pytest.mark.sandbox
def test_time_box_gives_timeout_with_patch_scored(sealed: Path, tmp_path: Path) -> None:
    env = dict(ENVELOPE, max_wall_s=2)
    rec, score = attempt(sealed, tmp_path, FIX_AGENT + "; sleep 60", envelope=env)
    assert rec["timed_out"] and rec["end_reason"] == "time_box" and rec["wall_s"] < 10
    assert score["status"] == "timeout" and score["hidden_pass"] is True


@pytest.mark.sandbox
def test_agent_command_not_found_is_fail_not_infra(sealed: Path, tmp_path: Path) -> None:
    # an agent's own exit status (127 here) is never infra: abstaining must not leave the rates
    _, score = attempt(sealed, tmp_path, "no-such-agent-binary --go")
    assert score["status"] == "fail" and "command not found" in score["reason"]
    assert score["agent_exit_code"] == 127


@pytest.mark.sandbox
def test_agent_cannot_see_hidden_tests_or_gold_patch(sealed: Path, tmp_path: Path) -> None:
    cmd = 'ls -a > "$SEALBENCH_OUT/ls.txt"; git log --oneline | wc -l > "$SEALBENCH_OUT/commits.txt"'
    attempt(sealed, tmp_path, cmd)
    listing = (tmp_path / "runs" / "a" / "out" / "ls.txt").read_text().split()
    assert "hidden_tests" not in listing and "oracle.patch" not in listing and "visible_tests" in listing
    assert (tmp_path / "runs" / "a" / "out" / "commits.txt").read_text().strip() == "1"


@pytest.mark.sandbox
def test_controls_on_a_good_task(sealed: Path, tmp_path: Path) -> None:
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=3, timeout_s=30)
    assert rec["oracle_ok"] and not rec["flaky"] and not rec["weak_test"] and not rec["stub_passes"]
    assert [r["solver"] for r in rec["results"]] == ["empty_diff", "stub", "oracle", "oracle", "oracle"]
    stub = (tmp_path / "controls" / "stub.patch").read_text()
    assert "calc.py" in stub and "+# sealbench stub" in stub


@pytest.mark.sandbox
def test_weak_task_is_flagged(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    t = pack / "tasks" / "t01"
    (t / "hidden_tests" / "check_hidden.py").write_text("def test_nothing():\n    pass\n")
    (t / "visible_tests" / "check_visible.py").write_text("def test_nothing():\n    pass\n")
    hash_pack.seal_task(t, core.task_digest(t), tmp_path / "s", tmp_path / "s.json")
    rec = run_dummy.run_controls(tmp_path / "s", tmp_path / "c", oracle_runs=2, timeout_s=30)
    assert rec["weak_test"] and rec["stub_passes"]


@pytest.mark.unit
def test_cli_check_exit_codes(tmp_path: Path, capsys) -> None:
    (tmp_path / "decision.json").write_text(json.dumps({"publishable": False, "reasons": [
        {"code": "ORACLE_FAILED", "sentence": "broken"}]}))
    assert cli.main(["check", str(tmp_path)]) == 1
    assert "ORACLE_FAILED" in capsys.readouterr().err
    (tmp_path / "decision.json").write_text(json.dumps({"publishable": True, "headline": 0.5, "reasons": []}))
    assert cli.main(["check", str(tmp_path)]) == 0
    assert cli.main(["check", str(tmp_path / "nothing")]) == 2


@pytest.mark.sandbox
def test_over_envelope_usage_is_marked(sealed: Path, tmp_path: Path) -> None:
    rec, _ = attempt(sealed, tmp_path, 'echo \'{"tokens_in": 1, "tokens_out": 500, "cost_usd": 0, "steps": 9}\' '
                                       '> "$SEALBENCH_OUT/usage.json"')
    assert rec["over_envelope"] == ["steps 9 > max_steps 5", "tokens_out 500 > max_output_tokens 100"]


@pytest.mark.sandbox
def test_rewritten_git_history_does_not_change_the_patch(sealed: Path, tmp_path: Path) -> None:
    cmd = (FIX_AGENT.split(";")[0] + "; rm -rf .git; git init -q; git add -A; "
           "git -c user.name=x -c user.email=x@y commit -qm fake")
    rec, score = attempt(sealed, tmp_path, cmd)
    patch = (tmp_path / "runs" / "a" / "patch.diff").read_text()
    assert "+    return a + b" in patch and score["status"] == "pass"


@pytest.mark.unit
def test_progress_counts_follow_the_results(tmp_path: Path) -> None:
    import yaml

    from packgen import write_config

    pack = make_pack(tmp_path / "p")
    cfg = configuration.validate_config(yaml.safe_load(write_config(tmp_path / "c.yaml", pack).read_text()))
    rows = dict((s, (d, st, n)) for s, d, st, n in cli.progress_counts(cfg, tmp_path / "results"))
    assert rows["hash_pack"] == (0, 0, 12) and rows["run_agent"] == (0, 0, 24)
    t = pack / "tasks" / "t00"
    d = tmp_path / "results" / "tasks" / "t00" / core.task_digest(t)
    hash_pack.seal_task(t, core.task_digest(t), d / "sealed", d / "sealed.json")
    rows = dict((s, (d, st, n)) for s, d, st, n in cli.progress_counts(cfg, tmp_path / "results"))
    assert rows["hash_pack"] == (1, 0, 12)
