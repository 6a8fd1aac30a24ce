"""Sandbox overhead per run: the same trivial command and the same small pytest suite, run
unsandboxed and inside the bubblewrap sandbox, N times each, in the same process.

    python bench/sandbox_overhead.py [--n 20]

Prints a table and appends one JSON line to bench/results/sandbox_overhead.jsonl.
Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core import harness_env  # noqa: E402
from sealbench.sandbox import bwrap_problem, make_sandbox  # noqa: E402
from sealbench.workspace import run_process  # noqa: E402

SUITE = "def test_a():\n    assert 1 + 1 == 2\n\ndef test_b():\n    assert 'x'.upper() == 'X'\n"


def measure(command: str, ws: Path, level: str, n: int) -> list[float]:
    box = make_sandbox(level, writable=[ws]) if level == "bwrap" else None
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        res = run_process(command, ws, harness_env(), 60, ws.parent / "o", ws.parent / "e", sandbox=box)
        times.append(time.perf_counter() - t0)
        assert res.returncode == 0, (ws.parent / "e").read_text()
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args(argv)
    problem = bwrap_problem()
    if problem:
        print(f"bubblewrap unavailable: {problem}")
        return 1
    with tempfile.TemporaryDirectory(prefix="sealbench-bench-") as tmp:
        ws = Path(tmp) / "ws"
        (ws / "tests").mkdir(parents=True)
        (ws / "tests" / "test_x.py").write_text(SUITE)
        rows = []
        for name, cmd in (("true", "true"), ("pytest (2 tests)", "python -m pytest -q -p no:cacheprovider tests")):
            plain = measure(cmd, ws, "none", args.n)
            boxed = measure(cmd, ws, "bwrap", args.n)
            rows.append({"command": name, "plain_ms": 1000 * statistics.median(plain),
                         "sandbox_ms": 1000 * statistics.median(boxed)})
    print(f"sandbox overhead, median of {args.n} runs each ({platform.machine()}, {os.cpu_count()} cores)")
    print(f"{'command':<20} {'plain ms':>10} {'bwrap ms':>10} {'overhead ms':>12} {'ratio':>7}")
    for r in rows:
        r["overhead_ms"] = r["sandbox_ms"] - r["plain_ms"]
        print(f"{r['command']:<20} {r['plain_ms']:>10.1f} {r['sandbox_ms']:>10.1f} {r['overhead_ms']:>12.1f} "
              f"{r['sandbox_ms'] / r['plain_ms']:>7.2f}")
    out = ROOT / "bench" / "results" / "sandbox_overhead.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "n": args.n,
                             "machine": platform.machine(), "cores": os.cpu_count(), "rows": rows}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
