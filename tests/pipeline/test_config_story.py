"""One config story: a run schedules the candidate, the baseline and extra_agents only; the
sealbench commands read --configfile/--config as snakemake does, nested keys included."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, NOOP_AGENT, make_pack, write_config  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import config_sources, configuration  # noqa: E402
from sealbench.core.core import ConfigError  # noqa: E402


@pytest.fixture()
def project(tmp_path: Path, monkeypatch) -> Path:
    """A project folder whose config/config.yaml defines three agents (as the bundled one
    defines repair and repair_lite), and a user's partial config naming their own agent."""
    monkeypatch.chdir(tmp_path)
    pack = make_pack(tmp_path / "pack")
    (tmp_path / "config").mkdir()
    write_config(tmp_path / "config" / "config.yaml", pack,
                 agents={"fixer": {"command": FIX_AGENT}, "idle": {"command": NOOP_AGENT},
                         "slowpoke": {"command": "sleep 1000"}})
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump({
        "agents": {"mine": {"command": FIX_AGENT}}, "candidate": "mine", "baseline": "idle"}))
    return tmp_path


@pytest.mark.pipeline
def test_attack_a_configfile_does_not_run_the_agents_merged_in_from_the_workflow_config(project: Path) -> None:
    res = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-n", "gate",
                          "--configfile", "mine.yaml"], cwd=project, capture_output=True, text=True)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    scheduled = {line.split("agent=")[1].split(",")[0] for line in out.splitlines() if "agent=" in line}
    assert scheduled == {"mine", "idle"}, scheduled


@pytest.mark.unit
def test_extra_agents_run_beside_and_must_exist(project: Path) -> None:
    cfg, _ = config_sources.effective_config([Path("mine.yaml")], ["extra_agents=[slowpoke]"])
    assert configuration.agents_to_run(cfg) == ["idle", "mine", "slowpoke"]
    with pytest.raises(ConfigError, match="'extra_agents': 'nobody' is not an agent"):
        config_sources.effective_config([Path("mine.yaml")], ["extra_agents=[nobody]"])


@pytest.mark.pipeline
def test_attack_a_nested_override_reaches_the_run(project: Path) -> None:
    cfg, where = config_sources.effective_config([], ["envelope={max_wall_s: 5, max_steps: 3}", "epochs=2"])
    assert cfg["envelope"]["max_wall_s"] == 5 and cfg["envelope"]["max_steps"] == 3 and cfg["epochs"] == 2
    assert cfg["envelope"]["max_output_tokens"] == 1000  # merged, not replaced
    assert "config/config.yaml" in where and "--config" in where
    with pytest.raises(ConfigError, match="max_wall_s"):
        config_sources.effective_config([], ["envelope={max_wall_s: soon}"])  # still a type error, named
    res = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-n", "gate",
                          "--config", "envelope={max_wall_s: 5}"], cwd=project, capture_output=True, text=True)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]


@pytest.mark.pipeline
def test_attack_validate_and_progress_see_the_config_a_run_sees(project: Path, capsys) -> None:
    assert cli.main(["validate", "--configfile", "mine.yaml"]) == 0  # a partial file, merged
    out = capsys.readouterr().out
    assert "config (config/config.yaml + mine.yaml): valid" in out
    assert cli.main(["progress", "--configfile", "mine.yaml", "--config", "epochs=3"]) == 0
    rows = {cells[0]: cells[1:4] for line in capsys.readouterr().out.splitlines()
            if len(cells := [c.strip() for c in line.strip("│ ").split("│")]) >= 4}
    # done, stale, of: 12 tasks x (mine, idle) x 3 epochs: not slowpoke or fixer
    assert rows["run_agent"] == ["0", "", "72"], rows


@pytest.mark.unit
def test_no_config_here_says_what_to_do(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate"]) == 2
    err = capsys.readouterr().err
    # no project here (Snakefile and config/config.yaml, here or above): said in one sentence (test_project_root.py)
    assert "config/config.yaml in " + str(tmp_path) in err and "--configfile" in err
