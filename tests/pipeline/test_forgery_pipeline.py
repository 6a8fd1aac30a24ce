"""One real pipeline run whose candidate forges a different way on every task: 0 passes and no
headline; an honest agent scored in the same run gets the decision it gets without the forger."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
from test_forgery import ATEXIT_REWRITE, FORGE_JUNIT, LIVE_CONFIG_PLUGIN, MONKEYPATCH_REPORT  # noqa: E402
from test_seal_attacks import EMPTY_BODIES, FORGE_BEFORE_PYTEST, ROUTES  # noqa: E402

from packgen import FIX_AGENT, NOOP_AGENT, make_pack, write_config  # noqa: E402
from pipeline_runs import smk  # noqa: E402

ROOT = HERE.parent
pytestmark = pytest.mark.pipeline

#: task index % 12 → the forgery the candidate uses on it (none of them fixes the bug)
FORGER = r'''
import json, os, sys
from pathlib import Path
ws = Path.cwd()
out = Path(os.environ["SEALBENCH_OUT"])
(out / "stamp.json").write_text(json.dumps({"server_id": "local", "queue_ms": 0, "retries": 0,
                                            "quota_state": "ok", "route_changed": False}))
(out / "steers.jsonl").write_text("")
PRELUDES = %(preludes)r
n = int(os.environ["SEALBENCH_TASK_ID"][1:]) %% 12
calc = ws / "calc.py"
if n < 5 or n in (9, 10):                   # in-process forgery from the module under test
    calc.write_text(PRELUDES[n] + "\n" + calc.read_text())
elif n == 8:                                # code that runs before pytest (a stdlib name)
    (ws / "__future__.py").write_text(PRELUDES[n])
elif n == 11:                               # a folder 1500 levels deep, now and at scoring time
    deep = "/".join(["d"] * 1500)
    os.makedirs(ws / "deep" / deep, exist_ok=True)
    os.makedirs(out / "deep" / deep, exist_ok=True)
    calc.write_text("import os\nos.makedirs(os.path.join('left', *['d'] * 1500), exist_ok=True)\n"
                    + calc.read_text())
elif n == 5:                                # a pytest.py shadowing the real one
    (ws / "pytest.py").write_text("import sys\nsys.exit(0)\n")
elif n == 6:                                # a setup.cfg symlinked to a pytest section
    (ws / "notes.cfg").write_text("[tool:pytest]\naddopts = --collect-only\n")
    (ws / "setup.cfg").symlink_to("notes.cfg")
else:                                       # abstain: exit 127 ("command not found") when red
    sys.exit(127)
'''


def decision(wd: Path) -> dict:
    return json.loads((wd / "results" / "latest" / "decision.json").read_text())


def test_a_forger_gets_no_pass_and_the_honest_decision_is_unchanged(tmp_path: Path) -> None:
    import pandas as pd

    forger = tmp_path / "forger.py"
    preludes = [FORGE_JUNIT, "import os\nos._exit(0)\n", MONKEYPATCH_REPORT, LIVE_CONFIG_PLUGIN, ATEXIT_REWRITE,
                "", "", "", FORGE_BEFORE_PYTEST, EMPTY_BODIES.format(route=ROUTES["gc"]),
                EMPTY_BODIES.format(route=ROUTES["frames"])]
    forger.write_text(FORGER % {"preludes": preludes})
    agents = {"fixer": {"command": FIX_AGENT}, "idle": {"command": NOOP_AGENT},
              "forger": {"command": f"python {forger}", "readonly_paths": [str(forger)]}}
    with_forger = tmp_path / "with"
    with_forger.mkdir()
    make_pack(with_forger / "pack")
    write_config(with_forger / "cfg.yaml", with_forger / "pack", agents=agents, candidate="fixer", baseline="idle",
                 sandbox="required")
    res = smk(with_forger, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-4000:]
    # the honest agent's decision is the one it gets on this pack and config without the forger
    # (tests/pipeline/test_pipeline.py: publishable, headline 1.0, no reason)
    honest = decision(with_forger)
    assert honest["publishable"] is True and honest["headline"] == 1.0 and honest["reasons"] == [], honest["reasons"]

    res = smk(with_forger, "--cores", "2", "gate", "--config", "candidate=forger")
    assert res.returncode == 0, res.stderr[-4000:]
    forged = decision(with_forger)
    assert forged["publishable"] is False and "CANDIDATE_TAMPERED" in [r["code"] for r in forged["reasons"]]
    runs = pd.read_parquet(with_forger / "results" / "latest" / "tables" / "runs.parquet")
    rows = runs[(runs.role == "agent") & (runs.solver == "forger")]
    assert len(rows) == 12
    assert (rows.status == "pass").sum() == 0, rows[["task_id", "status", "reason"]].to_string()
    assert not rows.status.isin(["infra_fail", "excluded"]).any(), rows[["task_id", "status", "reason"]].to_string()
    by_kind = dict(zip(rows.task_id, rows.status))
    assert by_kind["t05"] == "tamper" and by_kind["t06"] == "tamper"      # shadow module, symlinked config
    assert by_kind["t09"] == "tamper" and by_kind["t10"] == "tamper"      # empty test bodies (gc, frames)
    assert by_kind["t08"] == "fail" and by_kind["t11"] == "fail"          # __future__.py; a deep folder
