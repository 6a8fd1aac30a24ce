"""``sealbench validate`` says, before any job, which refusals the config and the pack's split
already decide: a pack that can never publish with this config must not cost a full run to find out."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_config  # noqa: E402
from sealbench.app import cli  # noqa: E402

pytestmark = pytest.mark.sandbox


@pytest.fixture()
def pack(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return make_pack(tmp_path / "pack", n=12)


def validate(tmp_path: Path, pack: Path, capsys, **over) -> tuple[int, str]:
    write_config(tmp_path / "cfg.yaml", pack, **over)
    rc = cli.main(["validate", "--configfile", str(tmp_path / "cfg.yaml")])
    return rc, capsys.readouterr().out


def test_attack_a_holdout_smaller_than_min_kept_tasks_is_named_before_the_run(tmp_path: Path, pack: Path,
                                                                             capsys) -> None:
    rc, out = validate(tmp_path, pack, capsys, min_kept_tasks=8)  # 12 tasks, holdout_frac 0.5: 6 holdout
    assert rc == 0, out  # the config is valid; it just cannot publish
    assert "cannot publish a headline" in out, out
    assert "TOO_FEW_CLEAN_TASKS" in out and "6 holdout task(s)" in out and "min_kept_tasks is 8" in out, out


def test_attack_every_refusal_the_config_decides_is_listed(tmp_path: Path, pack: Path, capsys) -> None:
    rc, out = validate(tmp_path, pack, capsys, score_split="tune", sandbox="off", min_kept_tasks=7,
                       envelope={"max_wall_s": 60, "max_steps": None, "max_output_tokens": None})
    assert rc == 0, out
    for code in ("TUNE_SPLIT", "ENVELOPE_INCOMPLETE", "UNSANDBOXED", "TOO_FEW_CLEAN_TASKS"):
        assert code in out, (code, out)
    assert "max_steps, max_output_tokens" in out, out


def test_a_stratum_with_fewer_than_two_scored_tasks_is_named(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    pack = make_pack(tmp_path / "pack", n=12, strata=("xs", "s", "m", "s", "m", "xs", "s", "m", "s", "m", "s", "m"))
    # two xs tasks among 12: the stratified split puts one on each side, so the holdout has 1 xs task
    rc, out = validate(tmp_path, pack, capsys)
    assert rc == 0, out
    assert "STRATUM_TOO_SMALL" in out and "xs (n=" in out, out


def test_a_config_that_can_publish_says_the_runs_decide(tmp_path: Path, pack: Path, capsys) -> None:
    rc, out = validate(tmp_path, pack, capsys)
    assert rc == 0, out
    assert "nothing in the config or the split stops a headline" in out, out
    assert "cannot publish" not in out, out
