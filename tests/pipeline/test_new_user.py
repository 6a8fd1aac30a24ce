"""A new user's path, end to end, as the docs tell it: write an agent script in the project folder,
try it on one tune task with ``sealbench try``, then run the whole pipeline with it as the
candidate. Nothing in the config but its command and ``offline: true`` (no readonly_paths, no
stamp): no run may be excluded or end in infra_fail, and the decision must publish."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import NOOP_AGENT, write_config  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core.configuration import load_config_file  # noqa: E402
from sealbench.isolation.sandbox import bwrap_problem  # noqa: E402
from sealbench.pack.packs import load_pack  # noqa: E402
from sealbench.stages import split  # noqa: E402

pytestmark = [pytest.mark.pipeline,
              pytest.mark.skipif(bwrap_problem() is not None and "CI" not in __import__("os").environ,
                                 reason="needs bubblewrap")]

#: What a user writes after reading docs/contract.md §2: read the prompt, run the visible tests
#: through the wrapper, edit, run them again, report usage and (no) steers. No server: offline.
MY_AGENT = '''#!/usr/bin/env python3
"""My first sealbench agent: a one-rule fixer."""
import json, os, pathlib, subprocess

out = pathlib.Path(os.environ["SEALBENCH_OUT"])
prompt = pathlib.Path(os.environ["SEALBENCH_PROMPT"]).read_text()
print("task:", os.environ["SEALBENCH_TASK_ID"], "-", prompt.strip()[:60])
steps = 0
for _ in range(2):
    steps += 1
    green = subprocess.run(os.environ["SEALBENCH_VISIBLE_CMD"], shell=True).returncode == 0
    print("visible tests:", "green" if green else "red")
    if green:
        break
    src = pathlib.Path("calc.py")
    src.write_text(src.read_text().replace("a - b", "a + b"))
(out / "usage.json").write_text(json.dumps({"tokens_in": 0, "tokens_out": 0, "cost_usd": 0, "steps": steps}))
(out / "steers.jsonl").write_text("")
'''


def test_a_new_users_agent_in_the_project_folder_tries_then_runs_clean(tmp_path: Path, monkeypatch, capsys,
                                                                      default_run: FinishedRun) -> None:
    # the project where the bundled agents already ran (the session's default run, copied): the
    # new agent's runs are the work (the controls and the baseline's runs are reused)
    proj = copy_run(default_run, tmp_path / "my-project")
    pack = proj / "pack"
    (proj / "agents").mkdir()
    (proj / "agents" / "my_agent.py").write_text(MY_AGENT)
    (proj / "agents" / "my_agent.py").chmod(0o755)
    write_config(proj / "cfg.yaml", pack, agents={"mine": {"command": "agents/my_agent.py", "offline": True},
                                                  "idle": {"command": NOOP_AGENT}},
                 candidate="mine", baseline="idle")
    monkeypatch.chdir(proj)

    # 1. validate, then try it on one tune task
    assert cli.main(["validate", "--configfile", "cfg.yaml"]) == 0, capsys.readouterr()
    cfg = load_config_file(proj / "cfg.yaml")
    strata_of = {t.id: t.stratum for t in load_pack(pack)}
    tune = sorted(split.check(pack, strata_of, cfg["seed"], cfg["holdout_frac"])["tune"])[0]
    capsys.readouterr()
    rc = cli.main(["try", "mine", tune, "--configfile", "cfg.yaml"])
    out = capsys.readouterr().out
    assert rc == 0 and "→ PASS" in out and "visible tests: green" in out, out

    # 2. the whole pipeline with it as the candidate
    res = smk(proj, "--cores", "2", "gate")
    assert res.returncode == 0, res.stderr[-4000:]
    import pandas as pd

    runs = pd.read_parquet(proj / "results" / "latest" / "tables" / "runs.parquet")
    mine = runs[runs["solver"] == "mine"]
    assert len(mine) == 12 and "agent_error" in runs, runs[["task_id", "solver", "status"]]
    assert set(runs["status"]) <= {"pass", "fail"}, runs[["task_id", "solver", "status", "excluded_reason"]]
    assert set(mine["status"]) == {"pass"}, mine[["task_id", "status", "reason"]]
    assert mine["agent_error"].fillna(False).astype(bool).sum() == 0
    decision = json.loads((proj / "results" / "latest" / "decision.json").read_text())
    assert decision["publishable"] is True, decision["reasons"]
    assert decision["headline"] == 1.0 and decision["exclusions"] == 0, (decision["headline"], decision["reasons"])
