"""``sealbench try AGENT TASK``: one sealed, scored attempt outside the DAG; tune tasks only
unless --holdout, and a holdout try is a look the ledger remembers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_config  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core.configuration import load_config_file  # noqa: E402
from sealbench.pack.packs import load_pack  # noqa: E402
from sealbench.provenance import ledger  # noqa: E402
from sealbench.stages import split  # noqa: E402


@pytest.fixture()
def project(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    pack = make_pack(tmp_path / "pack")
    write_config(tmp_path / "cfg.yaml", pack)
    return tmp_path


def sides(project: Path) -> dict:
    cfg = load_config_file(project / "cfg.yaml")
    strata_of = {t.id: t.stratum for t in load_pack(Path(cfg["pack"]))}
    return split.check(Path(cfg["pack"]), strata_of, cfg["seed"], cfg["holdout_frac"])


@pytest.mark.sandbox
def test_a_try_on_a_tune_task_runs_scores_and_prints(project: Path, capsys) -> None:
    task = sorted(sides(project)["tune"])[0]
    rc = cli.main(["try", "fixer", task, "--config", str(project / "cfg.yaml")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"fixer on {task} (tune)" in out and "→ PASS" in out and "+    return a + b" in out, out
    run_dir = project / out.split("run folder: ")[1].splitlines()[0]
    assert run_dir.is_relative_to(project / "results" / "tries" / task)
    assert json.loads((run_dir / "score.json").read_text())["status"] == "pass"
    assert "1/1 attempt(s) passed" in out
    assert not (project / "results" / "tasks").exists()  # the pipeline's results are untouched
    assert not (project / "pack" / "ledger.jsonl").exists()  # a tune try is no look at the holdout
    rc = cli.main(["try", "idle", task, "--config", str(project / "cfg.yaml"), "--epochs", "2"])
    out = capsys.readouterr().out
    assert rc == 0 and out.count("→ FAIL") == 2 and "patch: empty" in out and "0/2 attempt(s) passed" in out


@pytest.mark.unit
def test_attack_a_holdout_try_is_refused_without_saying_so(project: Path, capsys) -> None:
    task = sorted(sides(project)["holdout"])[0]
    rc = cli.main(["try", "fixer", task, "--config", str(project / "cfg.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and "is on the holdout" in err and "--holdout" in err
    assert not (project / "results" / "tries").exists() and not (project / "pack" / "ledger.jsonl").exists()


@pytest.mark.sandbox
def test_attack_a_holdout_try_is_remembered_as_a_look(project: Path, capsys) -> None:
    """Peek at a holdout task with one version, then score another version there: HOLDOUT_TUNED."""
    task = sorted(sides(project)["holdout"])[0]
    assert cli.main(["try", "fixer", task, "--config", str(project / "cfg.yaml"), "--holdout"]) == 0
    assert "look at the holdout is in the pack's ledger" in capsys.readouterr().out
    prior = ledger.read_ledger(project / "pack" / "ledger.jsonl")
    assert [e["kind"] for e in prior] == ["try"] and set(prior[0]["agents"]) == {"fixer"}
    later = dict(prior[0], kind="scored", agents={"fixer": "f" * 16},
                 lineage={"fixer": {"name": "fixer", "lineage": "fixer", "files": {}}})
    assert [r["code"] for r in ledger.ledger_reasons(prior, later)] == ["HOLDOUT_TUNED"]


@pytest.mark.unit
def test_unknown_agent_or_task_is_named_before_anything_runs(project: Path, capsys) -> None:
    assert cli.main(["try", "fixr", "t00", "--config", str(project / "cfg.yaml")]) == 2
    assert "no agent 'fixr'" in capsys.readouterr().err
    assert cli.main(["try", "fixer", "t0", "--config", str(project / "cfg.yaml")]) == 2
    assert "no task 't0'" in capsys.readouterr().err
    assert not (project / "results").exists()
