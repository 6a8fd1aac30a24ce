"""hidden_score: score one agent attempt on a pristine snapshot with the sealed tests.

Reads:  a sealed task; run.json and patch.diff of one attempt
Writes: results/tasks/<id>/<digest>/scores/<agent>/<fingerprint>/<epoch>.json

The patch is applied to a fresh copy of ``repo/``; its changes to protected paths (test
folders, pytest configuration, ``conftest.py``, start-up hooks, ``.pth`` files) are dropped
and listed as ``tamper_paths``, and both test folders are copied in from the sealed pack;
then the visible and hidden commands run (see ``scoring.score_patch``). The status is decided by
the verdict table (``scoring/verdict.py``) on the patch's score, ``run.json`` and ``controls.json``
(typed records: ``core/records.py``); the score record names the deciding ``rule``. Status:
- ``timeout``: the worker was killed at its clock (``run.json`` ``timed_out``): whatever it
  wrote or exited with, its patch is still scored and shown, never a pass;
- ``infra_fail``: only the harness's own failure: it could not run the attempt
  (``end_reason`` ``harness_error``), or the scoring commands could not run *and* the task's
  controls (``controls.json``: ``control_infra_fail``) could not be scored either;
- ``tamper``: the patch touched protected paths (the rest is still scored and shown), or a
  decoy passed (a copy of a hidden test that the gold patch fails: ``controls/decoys/``, made by
  ``run_dummy``; every patch is scored against the hidden suite with its decoys);
- ``pass``: visible and hidden commands exit 0 and their JUnit reports (when pytest wrote
  one) agree; otherwise ``fail``.
The agent's own exit status is recorded (``agent_exit_code``, and ``agent_signal`` when a
signal ended it), never the verdict: an agent that exits 127 is scored on its patch like any
other. ``agent_error`` says the agent crashed — it ended on its own with a non-zero exit or a
signal, not at its clock, a stop or a limit (``processes.ended_in_error``) — whatever its
status: a crashed agent whose half-edit passes is a ``pass`` with ``agent_error`` true. A
scoring ``infra_fail`` (no tests collected, usage error, exit 126/127...) while the task's
controls ran fine is the patch's doing (it broke the test run): ``fail`` with the reason. So is a
patch whose tests cannot be collected for a missing module, unless every control hit that too
(``controls.json`` ``missing_modules``, :mod:`sealbench.scoring.collection`): then ``infra_fail``.
With ``--env DIR`` the commands run in the task's test environment (:mod:`sealbench.isolation.environments`).
Neither may leave the rate's denominator, or abstaining on a failure would pay.
``gold_like``/``gold_similarity`` compare the patch with the sealed ``oracle.patch``.
``time_to_green_s`` is the end of the first sealed-green visible attempt, if the final state is green.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from ..core.core import read_json
from ..core.processes import ended_in_error
from ..core.records import ControlsRecord, RunRecord, ScoreRecord
from ..isolation.environments import BuiltEnv
from ..provenance import draws
from ..scoring.collection import missing_modules
from ..scoring.decoys import suite_of
from ..scoring.scoring import score_patch
from ..scoring.verdict import Evidence, Verdict, decide, first_rule
from .sandboxed import add_isolation_args, env_arg, env_card, limits_arg, run_guarded, scoring_sandbox


def time_to_green(attempts: list[dict], final_visible_green: bool | None) -> float | None:
    """End of the first visible attempt that was green *sealed* (``sealed_green``: the
    workspace as it stood then passed the visible tests restored from the pack, under the
    tamper rules — see ``visible.sealed_green``), if the final state is green. An attempt
    green only in the worker's own workspace never counts."""
    if not final_visible_green:
        return None
    for a in attempts:
        if a.get("exit") == 0 and a.get("sealed_green") is True and isinstance(a.get("end_s"), (int, float)):
            return float(a["end_s"])
    return None


def score_run(sealed: Path, run_dir: Path, out: Path, timeout_s: float, sandbox_mode: str = "auto",
              controls: Path | None = None, limits: dict | None = None, env: BuiltEnv | None = None) -> dict:
    """Score one attempt and write its record (see module docstring). ``controls`` (the task's
    controls.json) gives how many hidden tests the gold patch ran: the patch must run as many.
    ``env``: the task's test environment (its commands run in it; none: sealbench's interpreter)."""
    sealed, run_dir = Path(sealed).resolve(), Path(run_dir)
    meta = read_json(sealed / "meta.json")
    run = read_json(run_dir / "run.json")
    typed = RunRecord.from_dict(run, run_dir / "run.json").require("solver", "fingerprint", "epoch",
                                                                   source=run_dir / "run.json")
    early = first_rule(Evidence(run=typed))   # the harness could not run the attempt: nothing to score
    if early is not None:
        return _infra_record(out, meta["id"], run, early)
    ctl = ControlsRecord.read(controls) if controls else None
    expected = ctl.oracle_hidden_ran if ctl else None
    level, box = scoring_sandbox(sealed, sandbox_mode, limits, env)
    patch = (run_dir / "patch.diff").read_bytes()
    oracle_file = sealed / "oracle.patch"
    oracle = oracle_file.read_bytes() if oracle_file.exists() else None
    suite = suite_of(controls) if controls else None
    res = score_patch(sealed, meta, patch, Path(out).with_suffix(".logs"), timeout_s, oracle=oracle,
                      sandbox=box, expected_hidden=expected, hidden_tests=suite and suite.tests,
                      decoys=suite.spec if suite else (), hidden_command=suite and suite.command,
                      expected_ids=(ctl.oracle_ids or None) if ctl else None,
                      task_check=bool(ctl and ctl.import_outside),
                      task_env=env.command_env() if env else None)
    v = decide(Evidence(scored=Verdict(res.status, res.rule or "", res.reason), run=typed, controls=ctl,
                        missing_modules=tuple(missing_modules(res))))
    code, signal_name = run.get("exit_code"), run.get("signal")
    record = {
        "task_id": meta["id"], "solver": run["solver"], "fingerprint": run["fingerprint"], "epoch": run["epoch"],
        "status": v.status, "reason": v.reason, "rule": v.rule,
        "visible_pass": res.visible_pass, "hidden_pass": res.hidden_pass,
        "agent_exit_code": code, "agent_signal": signal_name,
        "agent_error": ended_in_error(run.get("end_reason"), code, signal_name),
        "time_to_green_s": time_to_green(run.get("attempts", []), res.visible_pass),
        "tamper_paths": res.tamper_paths, "patch_applied": res.patch_applied,
        "gold_like": res.gold_like, "gold_similarity": res.gold_similarity, "scoring_isolation": level,
        "scoring_workspace": res.workspace, "score": res.to_dict(), "run": run,
    }
    if env is not None:
        record["environment"] = env_card(env)
    return ScoreRecord.from_dict(record, out).write(out)


def _infra_record(out: Path, task_id: str, run: dict, verdict: Verdict) -> dict:
    """The score record of an attempt the harness could not run or score (``verdict``: its
    ``infra_fail`` from the verdict table)."""
    record = {
        "task_id": task_id, "solver": run["solver"], "fingerprint": run["fingerprint"], "epoch": run["epoch"],
        "status": verdict.status, "reason": verdict.reason, "rule": verdict.rule,
        "visible_pass": None, "hidden_pass": None,
        "agent_exit_code": run.get("exit_code"), "agent_signal": run.get("signal"),
        "agent_error": ended_in_error(run.get("end_reason"), run.get("exit_code"), run.get("signal")),
        "time_to_green_s": None, "tamper_paths": [], "patch_applied": False, "gold_like": None,
        "gold_similarity": None, "scoring_isolation": None, "scoring_workspace": None, "score": None, "run": run,
    }
    return ScoreRecord.from_dict(record, out).write(out)


def parser() -> argparse.ArgumentParser:
    """This stage's command line; :mod:`sealbench.stages.steps` writes the argv the workflow passes."""
    ap = argparse.ArgumentParser(prog="sealbench.stages.hidden_score", description=__doc__.splitlines()[0])
    ap.add_argument("--sealed", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--controls", type=Path, help="the task's controls.json (gold-patch test count)")
    add_isolation_args(ap)
    return ap


def _harness_error(args: argparse.Namespace, exc: Exception) -> dict:
    """The harness broke scoring this attempt: record it (the other attempts go on)."""
    run = read_json(args.run_dir / "run.json")
    why = decide(Evidence(scoring_error=f"the harness could not score the attempt: {type(exc).__name__}: {exc}"))
    rec = _infra_record(args.out, run.get("task_id", "?"), run, why)
    print(f"hidden_score: HARNESS ERROR: {rec['reason']}\n{traceback.format_exc()}", file=sys.stderr)
    return rec


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ran = run_guarded("hidden_score",
                      lambda: score_run(args.sealed, args.run_dir, args.out, args.timeout, args.sandbox,
                                        args.controls, limits_arg(args), env_arg(args)),
                      lambda exc: _harness_error(args, exc))
    if ran is None:
        return 1
    rec = ran[0]
    # the outcome of this draw goes on the record beside its start (draws.py), as stratify will
    # count it (a run killed at its clock is a timeout whatever its patch scored)
    run = rec.get("run") or {}
    sealed_at = Path(args.sealed).absolute()
    counted = decide(Evidence(record=Verdict(rec["status"], rec.get("rule") or "", rec["reason"]),
                              run=RunRecord.from_dict(run, args.run_dir / "run.json")))
    draws.note_outcome(draws.slot_key(sealed_at.parent.parent.name, sealed_at.parent.name, rec["solver"],
                                      rec["fingerprint"], rec["epoch"]),
                       run.get("draw"), counted.status, rec.get("hidden_pass"))
    print(f"hidden_score {rec['task_id']} {rec['solver']}#{rec['epoch']}: {rec['status']}"
          + (f" ({rec['reason']})" if rec["reason"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
