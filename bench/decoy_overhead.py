"""What decoys cost a scoring command, on the gold patch of bundled tasks, N times each way
(alternating, in the same process):

- the hidden command alone, unsandboxed: plain pytest with the pack's hidden tests (``plain``),
  sealbench's report plugin with the same tests (``report``), and the report plugin with the
  task's decoyed hidden tests (``decoys``: ``decoys.write_suite`` with ``--decoys`` of the
  candidates made for the task, default 2 as ``decoys_per_task``);
- the scoring command as ``hidden_score`` runs it (``scoring.score_patch``: patch applied over the
  sealed copy, visible and hidden commands, in the bubblewrap sandbox when it works), without
  decoys (``score``) and with the decoyed suite and its decoys (``score+decoys``).

    python bench/decoy_overhead.py [--n 10] [--decoys 2] [--tasks m01-high-season-surcharge,xs03-cargo-amount-whitespace]

Prints the median wall time of each way per task and the ratios (``report/plain``: the plugin's
cost; ``decoys/report``: what the decoys add to the hidden command alone; ``scored``: what they
add to the scoring command, ``score+decoys / score``), and appends one JSON line to
bench/results/decoy_overhead.jsonl. The target of issue 33: decoys add ≤ 10 % to a scoring
command (``scored``). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core.core import harness_env  # noqa: E402
from sealbench.core.processes import run_process  # noqa: E402
from sealbench.isolation.sandbox import make_sandbox, resolve_level  # noqa: E402
from sealbench.scoring import decoys  # noqa: E402
from sealbench.scoring.scoring import score_patch  # noqa: E402
from sealbench.scoring.sealed_command import _run_check  # noqa: E402

DEFAULT_TASKS = ("m01-high-season-surcharge", "s05-feet-inches-carry", "xs03-cargo-amount-whitespace",
                 "xs07-half-cent-rounding")


def workspace(task: Path, dest: Path, hidden: Path) -> Path:
    """The task's repo with the gold patch applied and ``hidden`` as its hidden_tests/."""
    shutil.copytree(task / "repo", dest)
    subprocess.run(["git", "apply", str(task / "oracle.patch")], cwd=dest, check=True)
    shutil.copytree(hidden, dest / "hidden_tests")
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS))
    ap.add_argument("--decoys", type=int, default=2, help="decoys in the suite (config decoys_per_task)")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="decoy-bench-") as tmp:
        for tid in args.tasks.split(","):
            task = ROOT / "suite" / "tasks" / tid
            meta = json.loads((task / "meta.json").read_text())
            visible_text = "\n".join(p.read_text() for p in (task / "visible_tests").rglob("*.py"))
            forbidden = (task / "prompt.md").read_text() + visible_text
            cands = decoys.candidates(task / "hidden_tests", decoys.seen_bodies(task / "visible_tests"), forbidden,
                                      decoys.seed_of(task), args.decoys)[:args.decoys]
            suite = Path(tmp) / tid / "decoyed"
            decoys.write_suite(task / "hidden_tests", suite, cands)
            plain_ws = workspace(task, Path(tmp) / tid / "plain", task / "hidden_tests")
            decoy_ws = workspace(task, Path(tmp) / tid / "decoy", suite)
            logs = Path(tmp) / tid / "logs"
            times: dict[str, list[float]] = {"plain": [], "report": [], "decoys": [], "score": [], "score+decoys": []}
            gold = (task / "oracle.patch").read_bytes()
            box = make_sandbox(resolve_level("auto"), hide=[ROOT / "suite"])
            env = harness_env({"PYTHONPATH": str(plain_ws)})
            spec = [c.spec for c in cands]
            for i in range(args.n):
                t0 = time.perf_counter()
                run_process(meta["hidden_command"], plain_ws, env, 120, logs / f"p{i}.out", logs / f"p{i}.err")
                times["plain"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                _run_check(meta["hidden_command"], plain_ws, logs / f"r{i}", "hidden", 120, import_paths=(".",))
                times["report"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                out = _run_check(meta["hidden_command"], decoy_ws, logs / f"d{i}", "hidden", 120, import_paths=(".",),
                                 decoys=spec)
                times["decoys"].append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                res = score_patch(task, meta, gold, logs / f"s{i}", 120, sandbox=box)
                times["score"].append(time.perf_counter() - t0)
                assert res.status == "pass", (tid, res.status, res.reason)
                t0 = time.perf_counter()
                res = score_patch(task, meta, gold, logs / f"sd{i}", 120, sandbox=box, hidden_tests=suite,
                                  decoys=spec)
                times["score+decoys"].append(time.perf_counter() - t0)
                assert res.status == "pass", (tid, res.status, res.reason)
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append({"task": tid, "tests": len(out.report.get("outcomes") or {}), "decoys": len(cands),
                         **{f"{k}_s": round(v, 4) for k, v in med.items()},
                         "report_over_plain": round(med["report"] / med["plain"], 3),
                         "decoys_over_report": round(med["decoys"] / med["report"], 3),
                         "scored": round(med["score+decoys"] / med["score"], 3)})
    print(f"{'task':32} {'tests':>5} {'decoys':>6} {'plain s':>8} {'report s':>8} {'decoys s':>8} "
          f"{'score s':>8} {'+decoys s':>9} {'report/plain':>12} {'decoys/report':>13} {'scored':>7}")
    for r in rows:
        print(f"{r['task']:32} {r['tests']:>5} {r['decoys']:>6} {r['plain_s']:>8.3f} {r['report_s']:>8.3f} "
              f"{r['decoys_s']:>8.3f} {r['score_s']:>8.3f} {r['score+decoys_s']:>9.3f} "
              f"{r['report_over_plain']:>12.3f} {r['decoys_over_report']:>13.3f} {r['scored']:>7.3f}")
    print(f"worst decoys/report (the hidden command alone): {max(r['decoys_over_report'] for r in rows):.3f}; "
          f"worst scored (the scoring command, score+decoys / score): {max(r['scored'] for r in rows):.3f} "
          f"(target ≤ 1.10); sandbox {resolve_level('auto')}")
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "decoy_overhead.jsonl").open("a") as fh:
        fh.write(json.dumps({"when": time.strftime("%Y-%m-%dT%H:%M:%S"), "n": args.n, "machine": platform.machine(),
                             "python": platform.python_version(),
                             "sandbox": resolve_level("auto"), "rows": rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
