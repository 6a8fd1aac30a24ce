"""Sandbox overhead per run: the same trivial command and the same small pytest suite, run
unsandboxed and inside the bubblewrap sandbox, N times each, in the same process.

    python bench/sandbox_overhead.py [--n 20]

Columns: ``plain`` (no sandbox), ``old`` (the previous recipe: ``--ro-bind / /`` with tmpfs
holes, no user namespace, no limits), ``allowlist`` (the current mounts and user namespace,
no limits) and ``bwrap`` (the current sandbox with the default limits: what every command
pays).

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

from sealbench.core.core import harness_env  # noqa: E402
from sealbench.core.processes import run_process  # noqa: E402
from sealbench.isolation.bwrap import bwrap_executable  # noqa: E402
from sealbench.isolation.sandbox import bwrap_problem, default_hidden, make_sandbox  # noqa: E402

SUITE = "def test_a():\n    assert 1 + 1 == 2\n\ndef test_b():\n    assert 'x'.upper() == 'X'\n"


class OldRecipe:
    """The recipe before the allowlist (for the before/after ratio only)."""

    level = "bwrap"

    def __init__(self, ws: Path) -> None:
        self.ws, self.hidden = ws, default_hidden()

    def wrap(self, argv, cwd):
        cmd = [bwrap_executable()[0], "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
               "--unshare-uts", "--unshare-cgroup-try", "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
               "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/dev/shm"]
        for h in self.hidden:
            cmd += ["--tmpfs", str(h)] if h.is_dir() else ["--ro-bind", "/dev/null", str(h)]
        for r in (sys.prefix, sys.base_prefix, str(ROOT / "scripts")):
            cmd += ["--ro-bind", r, r]
        return cmd + ["--bind", str(self.ws), str(self.ws), "--chdir", str(cwd), "--", *argv]


NO_LIMITS = {"max_processes": None, "max_memory_mb": None, "max_file_mb": None, "max_workspace_mb": None}


LEVELS = ("none", "old", "allowlist", "bwrap")


def measure(command: str, ws: Path, n: int) -> dict[str, list[float]]:
    """Times per level, the levels taking turns run by run (so load changes hit all alike)."""
    boxes = {"none": None, "old": OldRecipe(ws), "allowlist": make_sandbox("bwrap", writable=[ws], limits=NO_LIMITS),
             "bwrap": make_sandbox("bwrap", writable=[ws])}
    times: dict[str, list[float]] = {lv: [] for lv in LEVELS}
    for _i in range(n):
        for lv in LEVELS:
            t0 = time.perf_counter()
            res = run_process(command, ws, harness_env(), 60, ws.parent / "o", ws.parent / "e", sandbox=boxes[lv])
            times[lv].append(time.perf_counter() - t0)
            assert res.returncode == 0, (ws.parent / "e").read_text()
    return times


def measure_report(ws: Path, n: int) -> dict[str, float]:
    """The same pytest suite in the same sandbox, run plainly and as scoring runs it
    (``sealed_command._run_check``: the report plugin and its stream)."""
    from sealbench.scoring.sealed_command import _run_check

    cmd = "python -m pytest -q -p no:cacheprovider tests"
    box = make_sandbox("bwrap", writable=[ws])
    plain, sealed = [], []
    for _i in range(n):
        t0 = time.perf_counter()
        run_process(cmd, ws, harness_env(), 60, ws.parent / "o", ws.parent / "e", sandbox=box)
        plain.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        out = _run_check(cmd, ws, ws.parent / "logs", "hidden", 60, box)
        sealed.append(time.perf_counter() - t0)
        assert out.report and out.report.get("kind") == "pass", out
    return {"plain_ms": 1000 * statistics.median(plain), "sealed_ms": 1000 * statistics.median(sealed)}


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
            med = {lv: 1000 * statistics.median(t) for lv, t in measure(cmd, ws, args.n).items()}
            rows.append({"command": name, "plain_ms": med["none"], "old_ms": med["old"],
                         "allowlist_ms": med["allowlist"], "sandbox_ms": med["bwrap"]})
        report = measure_report(ws, args.n)
    print(f"sandbox overhead, median of {args.n} runs each ({platform.machine()}, {os.cpu_count()} cores)")
    print(f"{'command':<20} {'plain ms':>9} {'old ms':>8} {'allowlist':>10} {'bwrap ms':>9} {'overhead':>9} "
          f"{'ratio':>6} {'new/old':>8}")
    for r in rows:
        r["overhead_ms"] = r["sandbox_ms"] - r["plain_ms"]
        print(f"{r['command']:<20} {r['plain_ms']:>9.1f} {r['old_ms']:>8.1f} {r['allowlist_ms']:>10.1f} "
              f"{r['sandbox_ms']:>9.1f} {r['overhead_ms']:>9.1f} {r['sandbox_ms'] / r['plain_ms']:>6.2f} "
              f"{r['sandbox_ms'] / r['old_ms']:>8.2f}")
    print(f"report plugin (the pytest run scoring makes: plugin and stream) on the same suite "
          f"in the same sandbox: {report['plain_ms']:.1f} ms -> {report['sealed_ms']:.1f} ms "
          f"(+{report['sealed_ms'] - report['plain_ms']:.1f} ms, x{report['sealed_ms'] / report['plain_ms']:.2f})")
    out = ROOT / "bench" / "results" / "sandbox_overhead.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "n": args.n,
                             "machine": platform.machine(), "cores": os.cpu_count(), "rows": rows,
                             "report": report}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
