"""SWE-bench predictions: import (score every row on a pack) and export (a solver's patches)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import ORACLE, STAMP, make_pack  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.builders import predictions  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.provenance import identity  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent, run_dummy  # noqa: E402

WRONG = ORACLE.replace("+    return a + b", "+    return a * b")
CLOCK = {"clock_verified": False, "clock": "unverified", "time_to_green_s": None, "wall_s": None}


def row(iid: str, patch: str | None, model: str = "acme-coder") -> str:
    return json.dumps({"instance_id": iid, "model_patch": patch, "model_name_or_path": model})


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "pack")


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.sandbox
def test_import_scores_good_rows_and_reports_bad_rows_by_line(pack: Path, tmp_path: Path) -> None:
    f = write_lines(tmp_path / "preds.jsonl", [
        row("t00", ORACLE),                                   # 1 correct
        row("t01", WRONG),                                    # 2 a - b -> a * b
        row("t02", "   \n"),                                  # 3 empty
        row("t03", "this is not a diff"),                     # 4 malformed patch
        row("t99", ORACLE),                                   # 5 unknown instance
        '{"instance_id": "t05", "model_patch": ',             # 6 invalid JSON
        "",                                                   # blank: not a row
        json.dumps({"instance_id": "t06", "model_patch": 7, "model_name_or_path": "x"}),   # 8 non-string
        json.dumps({"instance_id": "t07", "model_name_or_path": "x"}),                     # 9 missing
    ])
    out = tmp_path / "out"
    recs = predictions.import_predictions(f, pack, out, sandbox_mode="auto")
    by_line = {r["line"]: r for r in recs}
    assert [r["line"] for r in recs] == [1, 2, 3, 4, 5, 6, 8, 9]
    assert by_line[1]["status"] == "pass" and by_line[1]["gold_like"] is True
    assert by_line[2]["status"] == "fail" and by_line[2]["hidden_pass"] is False
    assert by_line[3]["status"] == "fail" and by_line[3]["reason"] == "empty patch" and by_line[3]["empty_patch"] is True
    assert by_line[1]["empty_patch"] is False
    r4 = by_line[4]
    assert r4["status"] == "error" and r4["field"] == "model_patch"
    assert r4["error"].startswith("line 4: field 'model_patch' is not a unified diff")
    assert by_line[5]["status"] == "error" and by_line[5]["field"] == "instance_id"
    assert "line 5: field 'instance_id': 't99' is not a task of the pack" in by_line[5]["error"]
    assert by_line[6]["status"] == "error" and by_line[6]["error"].startswith("line 6: invalid JSON")
    assert by_line[8]["error"] == "line 8: field 'model_patch' must be a string, got int"
    assert by_line[9]["error"] == "line 9: field 'model_patch' is missing"
    for r in recs:
        assert {k: r[k] for k in CLOCK} == CLOCK                  # no clock: no time claim
    assert {r["solver"] for r in recs if r["status"] != "error"} == {"acme-coder"}
    # one record per row on disk, plus the summary
    assert json.loads((out / "t00.json").read_text())["status"] == "pass"
    assert json.loads((out / "error-line-00004.json").read_text())["field"] == "model_patch"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == 8 and summary["counts"] == {"error": 5, "fail": 2, "pass": 1}
    assert summary["clock_verified"] is False


@pytest.mark.sandbox
def test_solver_override_null_patch_and_repeated_instance(pack: Path, tmp_path: Path) -> None:
    f = write_lines(tmp_path / "p.jsonl", [
        json.dumps({"instance_id": "t00", "model_patch": ORACLE}),    # no model name: --solver gives it
        row("t01", None),                                             # null patch = empty patch
        row("t00", WRONG),                                            # repeats line 1
    ])
    recs = predictions.import_predictions(f, pack, tmp_path / "o", solver="mine")
    assert [r["status"] for r in recs] == ["pass", "fail", "error"]
    assert recs[1]["empty_patch"] is True and recs[1]["reason"].startswith("empty patch")
    assert "repeats line 1" in recs[2]["error"]
    assert {r["solver"] for r in recs} == {"mine"}
    # without --solver the missing model name is a row error
    recs = predictions.import_predictions(f, pack, tmp_path / "o")
    assert recs[0]["status"] == "error" and recs[0]["error"] == "line 1: field 'model_name_or_path' is missing"
    # line 3 is now the first valid t00 row; the earlier import's records were replaced
    assert json.loads((tmp_path / "o" / "t00.json").read_text())["line"] == 3
    assert not (tmp_path / "o" / "error-line-00003.json").exists()


@pytest.mark.sandbox
def test_tampering_prediction_is_tamper(pack: Path, tmp_path: Path) -> None:
    tamper = ("diff --git a/visible_tests/check_visible.py b/visible_tests/check_visible.py\n"
              "--- a/visible_tests/check_visible.py\n+++ b/visible_tests/check_visible.py\n"
              "@@ -1,4 +1 @@\n-import sys\n-sys.path.insert(0, '.')\n-from calc import add\n"
              "-sys.exit(0 if add(2, 2) == 4 else 1)\n+pass\n")
    f = write_lines(tmp_path / "p.jsonl", [row("t00", tamper)])
    (rec,) = predictions.import_predictions(f, pack, tmp_path / "o")
    assert rec["status"] == "tamper" and rec["tamper_paths"] == ["visible_tests/check_visible.py"]


@pytest.mark.sandbox
def test_cli_import_prints_table_exit_0_and_2_for_unreadable_file(pack: Path, tmp_path: Path, capsys) -> None:
    f = write_lines(tmp_path / "p.jsonl", [row("t00", ORACLE), "not json"])
    rc = cli.main(["predictions", "import", str(f), "--pack", str(pack), "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "instance" in out and "status" in out and "reason" in out
    assert "t00" in out and "pass" in out and "line 2: invalid JSON" in out
    rc = cli.main(["predictions", "import", str(tmp_path / "missing.jsonl"), "--pack", str(pack)])
    assert rc == 2 and "cannot read the predictions file" in capsys.readouterr().err


@pytest.mark.sandbox
def test_json_list_file_is_read_too(pack: Path, tmp_path: Path) -> None:
    f = tmp_path / "p.json"
    f.write_text(json.dumps([json.loads(row("t00", ORACLE)), json.loads(row("t01", ""))]))
    recs = predictions.import_predictions(f, pack, tmp_path / "o")
    assert [r["status"] for r in recs] == ["pass", "fail"]


# ------------------------------------------------------------------------------ round trip

AGENT = ('case "$SEALBENCH_TASK_ID" in '
         "t00) sed -i 's/a - b/a + b/' calc.py;; "
         "t01) sed -i 's/a - b/a * b/' calc.py;; "
         "t02) echo 'import sys; sys.exit(0)' > visible_tests/check_visible.py; sed -i 's/a - b/a + 1/' calc.py;; "
         "esac; " + STAMP)
TASKS = ("t00", "t01", "t02", "t03")


def build_results(pack: Path, results: Path) -> dict:
    """A results tree as the pipeline lays it out, made with the stage functions themselves:
    sealed copies, controls, one agent's runs and their hidden scores, and an experiment."""
    fp = identity.agent_fingerprint("fixer", {"command": AGENT})
    digests, statuses = {}, {"fixer": {}, "oracle": {}, "empty_diff": {}, "stub": {}}
    for tid in TASKS:
        src = pack / "tasks" / tid
        digest = core.task_digest(src)
        digests[tid] = digest
        base = results / "tasks" / tid / digest
        hash_pack.seal_task(src, digest, base / "sealed", base / "sealed.json")
        ctl = run_dummy.run_controls(base / "sealed", base / "controls", oracle_runs=1, timeout_s=30)
        for r in ctl["results"]:
            statuses[r["solver"]][tid] = r["status"]
        rd = base / "runs" / "fixer" / fp / "1"
        run_agent.run_agent(base / "sealed", rd, "fixer", fp, AGENT, {}, 1,
                            {"max_wall_s": 30, "max_steps": 5, "max_output_tokens": 100})
        score = hidden_score.score_run(base / "sealed", rd, base / "scores" / "fixer" / fp / "1.json", 30,
                                       controls=base / "controls" / "controls.json")
        statuses["fixer"][tid] = score["status"]
    exp = results / "experiments" / "0123456789abcdef"
    exp.mkdir(parents=True)
    core.write_json(exp / "experiment.json", {"exp_id": exp.name, "task_digests": digests,
                                              "agent_fingerprints": {"fixer": fp}})
    os.symlink(Path("experiments") / exp.name, results / "latest")
    return statuses


@pytest.mark.sandbox
def test_export_then_import_gives_the_same_statuses(pack: Path, tmp_path: Path) -> None:
    results = tmp_path / "results"
    statuses = build_results(pack, results)
    assert statuses["fixer"] == {"t00": "pass", "t01": "fail", "t02": "tamper", "t03": "fail"}
    for solver, source in (("fixer", results), ("oracle", results / "latest"), ("empty_diff", results),
                           ("stub", results / "experiments" / "0123456789abcdef")):
        out = tmp_path / f"{solver}.jsonl"
        rows = predictions.export_predictions(source, solver, out)
        lines = [json.loads(x) for x in out.read_text().splitlines()]
        assert lines == rows and [r["instance_id"] for r in rows] == sorted(TASKS)
        assert {r["model_name_or_path"] for r in rows} == {solver}
        assert set(rows[0]) == {"instance_id", "model_patch", "model_name_or_path"}
        recs = predictions.import_predictions(out, pack, tmp_path / f"imp-{solver}")
        assert {r["instance_id"]: r["status"] for r in recs} == statuses[solver], solver
        assert all(r["solver"] == solver for r in recs)
    # the fixer's t03 patch is empty: exported as "", imported as an empty patch
    assert json.loads((tmp_path / "imp-fixer" / "t03.json").read_text())["empty_patch"] is True


@pytest.mark.unit
def test_export_cli_and_its_refusals(pack: Path, tmp_path: Path, capsys) -> None:
    results = tmp_path / "results"
    results.mkdir()
    # no experiment: the only patch of each task is used
    for tid, body in (("t00", ORACLE), ("t01", WRONG)):
        d = results / "tasks" / tid / ("a" * 64) / "runs" / "fixer" / ("b" * 16) / "1"
        d.mkdir(parents=True)
        (d / "patch.diff").write_text(body)
    out = tmp_path / "x.jsonl"
    assert cli.main(["predictions", "export", "--results", str(results), "--solver", "fixer", "--out", str(out)]) == 0
    assert "wrote 2 predictions of fixer" in capsys.readouterr().out
    assert [json.loads(x)["model_patch"] for x in out.read_text().splitlines()] == [ORACLE, WRONG]
    assert cli.main(["predictions", "export", "--results", str(results), "--solver", "ghost", "--out", str(out)]) == 2
    assert "no epoch-1 patch of solver 'ghost'" in capsys.readouterr().err
    # two fingerprints of the same solver on one task: ambiguous without an experiment
    d = results / "tasks" / "t00" / ("a" * 64) / "runs" / "fixer" / ("c" * 16) / "1"
    d.mkdir(parents=True)
    (d / "patch.diff").write_text(ORACLE)
    assert cli.main(["predictions", "export", "--results", str(results), "--solver", "fixer", "--out", str(out)]) == 2
    assert "give an experiment folder" in capsys.readouterr().err
