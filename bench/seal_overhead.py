"""What the seal costs one scoring command: a one-test pytest run, plain and sealed, N times each
(alternating, unsandboxed, in the same process), and the bootstrap's own time as it reports it
in its start record (``boot_ms``: from ``sitecustomize`` to the audit hook installed, without
``import_ms``, the imports of pytest, its plugins and unittest that pytest makes anyway).

    python bench/seal_overhead.py [--n 20]

Prints a table and appends one JSON line to bench/results/seal_overhead.jsonl. The target of
issue 25: the bootstrap ≤ 5 % of the plain one-test run. Not a test: nothing here asserts a time.
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
from sealbench.scoring.sealed_command import _run_check  # noqa: E402

COMMAND = "python -m pytest -q -p no:cacheprovider tests"
ONE_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="seal-bench-") as tmp:
        ws = Path(tmp) / "ws"
        (ws / "tests").mkdir(parents=True)
        (ws / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (ws / "tests" / "test_one.py").write_text(ONE_TEST)
        logs = Path(tmp) / "logs"
        plain, sealed, boot, imports = [], [], [], []
        env = harness_env({"PYTHONPATH": str(ws)})
        for i in range(args.n):
            t0 = time.perf_counter()
            res = run_process(COMMAND, ws, env, 60, logs / f"plain{i}.out", logs / f"plain{i}.err")
            plain.append(time.perf_counter() - t0)
            assert res.returncode == 0, (logs / f"plain{i}.out").read_text()
            t0 = time.perf_counter()
            out = _run_check(COMMAND, ws, logs, f"sealed{i}", 60, sealed_files=["tests/test_one.py"])
            sealed.append(time.perf_counter() - t0)
            assert out.report.get("kind") == "pass", out.report
            start = next(r for r in out.stream if r.get("kind") == "start")
            boot.append(float(start["boot_ms"]) / 1000)
            imports.append(float(start["import_ms"]) / 1000)
    row = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "n": args.n, "machine": platform.machine(),
        "cpus": os.cpu_count(), "python": platform.python_version(), "load": list(os.getloadavg()),
        "plain_median_s": statistics.median(plain), "plain_min_s": min(plain),
        "sealed_median_s": statistics.median(sealed), "sealed_min_s": min(sealed),
        "boot_median_s": statistics.median(boot), "boot_max_s": max(boot),
        "import_median_s": statistics.median(imports),
    }
    row["boot_share_of_plain"] = row["boot_median_s"] / row["plain_median_s"]
    row["sealed_over_plain"] = row["sealed_median_s"] / row["plain_median_s"]
    print(f"one-test pytest run, n={args.n} (median / min):")
    print(f"  plain   {row['plain_median_s'] * 1000:7.1f} / {row['plain_min_s'] * 1000:7.1f} ms")
    print(f"  sealed  {row['sealed_median_s'] * 1000:7.1f} / {row['sealed_min_s'] * 1000:7.1f} ms "
          f"(x{row['sealed_over_plain']:.2f}: bootstrap, hook, canaries, records, JUnit)")
    print(f"  bootstrap {row['boot_median_s'] * 1000:.1f} ms median (max {row['boot_max_s'] * 1000:.1f}) = "
          f"{row['boot_share_of_plain'] * 100:.1f} % of the plain run   target <= 5 %   "
          f"{'yes' if row['boot_share_of_plain'] <= 0.05 else 'NO'}")
    print(f"  (imports made early, that pytest makes anyway: {row['import_median_s'] * 1000:.1f} ms median)")
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / "seal_overhead.jsonl", "a") as fh:
        fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
