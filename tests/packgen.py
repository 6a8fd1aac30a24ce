"""Generate small, fast task packs for tests.

Each task is a one-module repo with a planted bug in ``calc.add``; the visible and hidden
checks are one-test pytest files (run with pytest; as plain scripts they exit 1 on a wrong
answer). ``make_pack`` writes a valid pack;
tests then break it on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
ORACLE = (
    "diff --git a/calc.py b/calc.py\n"
    "--- a/calc.py\n"
    "+++ b/calc.py\n"
    "@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n"
    "-    return a - b\n"
    "+    return a + b\n"
)
#: pytest files that also run as plain scripts (scoring vouches only for pytest runs: its
#: report plugin and decoys need pytest).
VISIBLE = ("import sys\nsys.path.insert(0, '.')\nfrom calc import add\n\n\ndef test_visible():\n"
           "    assert add(2, 2) == 4\n\n\nif __name__ == '__main__':\n    sys.exit(0 if add(2, 2) == 4 else 1)\n")
HIDDEN = ("import sys\nsys.path.insert(0, '.')\nfrom calc import add\n\n\ndef test_hidden():\n"
          "    assert add(3, 4) == 7 and add(-1, 1) == 0\n\n\nif __name__ == '__main__':\n"
          "    sys.exit(0 if add(3, 4) == 7 and add(-1, 1) == 0 else 1)\n")
PYTEST = "python -m pytest -q -p no:cacheprovider"
#: A perfect agent for this pack, and a do-nothing one.
STAMP = ('echo \'{"server_id": "local", "queue_ms": 0, "retries": 0, "quota_state": "ok", '
         '"route_changed": false}\' > "$SEALBENCH_OUT/stamp.json"; : > "$SEALBENCH_OUT/steers.jsonl"')
FIX_AGENT = "sed -i 's/a - b/a + b/' calc.py; " + STAMP
NOOP_AGENT = "true; " + STAMP


def write_task(tasks: Path, tid: str, stratum: str, title: str | None = None, **meta_over) -> Path:
    d = tasks / tid
    (d / "repo").mkdir(parents=True)
    (d / "visible_tests").mkdir()
    (d / "hidden_tests").mkdir()
    (d / "repo" / "calc.py").write_text(BUGGY)
    (d / "visible_tests" / "check_visible.py").write_text(VISIBLE)
    (d / "hidden_tests" / "check_hidden.py").write_text(HIDDEN)
    (d / "oracle.patch").write_text(ORACLE)
    (d / "prompt.md").write_text(f"Task {tid}: adding two numbers gives the wrong total in the calculator.\n")
    meta = {
        "id": tid, "title": title or f"calculator total wrong in case {tid}", "stratum": stratum,
        "language": "python", "time_box_sec": 60,
        "visible_command": f"{PYTEST} visible_tests/check_visible.py",
        "hidden_command": f"{PYTEST} hidden_tests/check_hidden.py",
        "failing_tests": 1, "loc": 2, "notes": "generated for sealbench tests",
    }
    meta.update(meta_over)
    (d / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    return d


PT_VISIBLE = "def test_two():\n    assert add(2, 2) == 4\n\ndef test_zero():\n    assert add(0, 0) == 0\n"
PT_HIDDEN = ("def test_a():\n    assert add(3, 4) == 7\n\ndef test_b():\n    assert add(-1, 1) == 0\n\n"
             "def test_c():\n    assert add(10, 5) == 15\n")


def write_pytest_task(tasks: Path, tid: str = "pt", **meta_over) -> Path:
    """A task whose commands run whole pytest folders: 2 visible tests, 3 hidden ones."""
    meta = {"visible_command": f"{PYTEST} visible_tests", "hidden_command": f"{PYTEST} hidden_tests",
            "failing_tests": 3, **meta_over}
    t = write_task(tasks, tid, "xs", **meta)
    for f in list((t / "visible_tests").iterdir()) + list((t / "hidden_tests").iterdir()):
        f.unlink()
    imp = "import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import add\n\n"
    (t / "visible_tests" / "test_visible.py").write_text(imp + PT_VISIBLE)
    (t / "hidden_tests" / "test_hidden.py").write_text(imp + PT_HIDDEN)
    return t


def make_pack(root: Path, n: int = 12, strata: tuple[str, ...] = ("xs", "s", "m"),
              denylist: str = "# test denylist\nModeling's `separability_matrix` does not compute separability correctly\nhas_close_elements\n") -> Path:
    root = Path(root)
    tasks = root / "tasks"
    tasks.mkdir(parents=True)
    for i in range(n):
        write_task(tasks, f"t{i:02d}", strata[i % len(strata)])
    (root / "denylist.txt").write_text(denylist)
    return root


def write_config(path: Path, pack: Path, **over) -> Path:
    import yaml

    cfg = {
        "pack": str(pack), "seed": 7, "holdout_frac": 0.5, "score_split": "holdout",
        "agents": {"fixer": {"command": FIX_AGENT}, "idle": {"command": NOOP_AGENT}},
        "candidate": "fixer", "baseline": "idle", "epochs": 1, "oracle_runs": 2, "score_timeout_s": 60,
        "envelope": {"max_wall_s": 60, "max_steps": 10, "max_output_tokens": 1000},
        "health": {"allowed_quota_states": [], "max_queue_ms": None, "max_retries": None, "required_server_id": None},
        "mde": 0.1, "planning_discordance": 0.3, "min_kept_tasks": 2, "strata": ["xs", "s", "m"],
    }
    cfg.update(over)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path
