"""hidden_score: score one agent attempt on a pristine snapshot with the sealed tests.

Reads:  a sealed task; run.json and patch.diff of one attempt
Writes: results/tasks/<id>/<digest>/scores/<agent>/<fingerprint>/<epoch>.json

The patch is applied to a fresh copy of ``repo/``; its changes to protected paths (test
folders, pytest configuration, ``conftest.py``, start-up hooks, ``.pth`` files) are dropped
and listed as ``tamper_paths``, and both test folders are copied in from the sealed pack;
then the visible and hidden commands run (see ``scoring.score_patch``). Status:
- ``timeout``: the worker ran out of clock (its patch is still scored and shown, never a pass);
- ``infra_fail``: the agent command could not run (exit 126/127) or a scoring command could
  not run (missing interpreter, no tests collected);
- ``tamper``: the patch touched protected paths (the rest is still scored and shown);
- ``pass``: visible and hidden commands exit 0 and their JUnit reports (when pytest wrote
  one) agree; otherwise ``fail``.
``gold_like``/``gold_similarity`` compare the patch with the sealed ``oracle.patch``.
``time_to_green_s`` is the end of the first green visible attempt, if the final state is green.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from .core import read_json, write_json
from .sandbox import SandboxUnavailable, make_sandbox, resolve_level
from .scoring import SHELL_INFRA_CODES, score_patch


def time_to_green(attempts: list[dict], final_visible_green: bool | None) -> float | None:
    if not final_visible_green:
        return None
    for a in attempts:
        if a.get("exit") == 0 and isinstance(a.get("end_s"), (int, float)):
            return float(a["end_s"])
    return None


def score_run(sealed: Path, run_dir: Path, out: Path, timeout_s: float, sandbox_mode: str = "auto",
              controls: Path | None = None) -> dict:
    """Score one attempt and write its record (see module docstring). ``controls`` (the task's
    controls.json) gives how many hidden tests the gold patch ran: the patch must run as many."""
    sealed, run_dir = Path(sealed).resolve(), Path(run_dir)
    meta = read_json(sealed / "meta.json")
    run = read_json(run_dir / "run.json")
    if run.get("end_reason") == "harness_error":
        return _infra_record(out, meta["id"], run, f"the harness could not run the attempt: {run.get('error')}")
    expected = read_json(controls).get("oracle_hidden_ran") if controls else None
    level = resolve_level(sandbox_mode)
    box = make_sandbox(level, hide=[sealed.parent.parent.parent])
    patch = (run_dir / "patch.diff").read_bytes()
    oracle_file = sealed / "oracle.patch"
    oracle = oracle_file.read_bytes() if oracle_file.exists() else None
    res = score_patch(sealed, meta, patch, Path(out).with_suffix(".logs"), timeout_s, oracle=oracle,
                      sandbox=box, expected_hidden=expected)
    status, reason = res.status, res.reason
    if run["exit_code"] in SHELL_INFRA_CODES and not run["timed_out"]:
        status, reason = "infra_fail", f"agent command: {SHELL_INFRA_CODES[run['exit_code']]} (exit {run['exit_code']})"
    elif run["timed_out"]:
        status, reason = "timeout", f"the worker was stopped at its {run['time_box_s']:.0f}s clock" + (
            f"; its patch scored {res.status}" if res.status != "infra_fail" else "")
    record = {
        "task_id": meta["id"], "solver": run["solver"], "fingerprint": run["fingerprint"], "epoch": run["epoch"],
        "status": status, "reason": reason, "visible_pass": res.visible_pass, "hidden_pass": res.hidden_pass,
        "time_to_green_s": time_to_green(run.get("attempts", []), res.visible_pass),
        "tamper_paths": res.tamper_paths, "patch_applied": res.patch_applied,
        "gold_like": res.gold_like, "gold_similarity": res.gold_similarity, "scoring_isolation": level,
        "score": res.to_dict(), "run": run,
    }
    write_json(out, record)
    return record


def _infra_record(out: Path, task_id: str, run: dict, reason: str) -> dict:
    record = {
        "task_id": task_id, "solver": run["solver"], "fingerprint": run["fingerprint"], "epoch": run["epoch"],
        "status": "infra_fail", "reason": reason, "visible_pass": None, "hidden_pass": None,
        "time_to_green_s": None, "tamper_paths": [], "patch_applied": False, "gold_like": None,
        "gold_similarity": None, "scoring_isolation": None, "score": None, "run": run,
    }
    write_json(out, record)
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.hidden_score", description=__doc__.splitlines()[0])
    ap.add_argument("--sealed", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--sandbox", default="auto", choices=["auto", "required", "off"])
    ap.add_argument("--controls", type=Path, help="the task's controls.json (gold-patch test count)")
    args = ap.parse_args(argv)
    try:
        rec = score_run(args.sealed, args.run_dir, args.out, args.timeout, args.sandbox, args.controls)
    except SandboxUnavailable as exc:
        print(f"hidden_score: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # the harness broke scoring this attempt: record it; the others go on
        run = read_json(args.run_dir / "run.json")
        rec = _infra_record(args.out, run.get("task_id", "?"), run,
                            f"the harness could not score the attempt: {type(exc).__name__}: {exc}")
        print(f"hidden_score: HARNESS ERROR: {rec['reason']}\n{traceback.format_exc()}", file=sys.stderr)
    print(f"hidden_score {rec['task_id']} {rec['solver']}#{rec['epoch']}: {rec['status']}"
          + (f" ({rec['reason']})" if rec["reason"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
