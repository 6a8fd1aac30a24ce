#!/usr/bin/env python3
"""Regenerate suite/tasks/ from tools/suite_src/ and the pack's own tests (byte-deterministic).

Layout of tools/suite_src/:
  base/                    the correct service (package berthwise)
  tasks/<task_id>/
    task.toml              title, stratum, notes, tags and [[edit]] tables
                           (file, old, new): `old` is text of the correct base
                           that occurs exactly once in `file`; it is replaced by
                           `new` to plant the bug
    prompt.md              the symptom as reported

A task's tests are written in one place, the shipped pack itself:
suite/tasks/<task_id>/visible_tests/*.py and hidden_tests/*.py of this project
(a new task's tests go there first). They are read from there whatever --root
says, and regenerating in place keeps those two folders of each task (it
clears and rewrites everything else).

For every task this writes suite/tasks/<task_id>/ under --root with repo/
(base + bug), visible_tests/, hidden_tests/, prompt.md, oracle.patch
(buggy -> correct) and meta.json (failing_tests is measured by running the
hidden tests on repo/).

Usage: python tools/build_suite.py [--root DIR]
"""

import argparse
import difflib
import json
import os
import shutil
import sys
import tomllib
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(TOOLS))
SRC = TOOLS / "suite_src"
#: where the tasks' tests are written (the one copy): the shipped pack's test folders
TESTS = TOOLS.parent / "suite" / "tasks"
TEST_FOLDERS = ("visible_tests", "hidden_tests")

import verify_suite  # noqa: E402

TIME_BOX = {"xs": 1200, "s": 1800, "m": 2700}
VISIBLE_COMMAND = "python -m pytest -q -p no:cacheprovider visible_tests"
HIDDEN_COMMAND = "python -m pytest -q -p no:cacheprovider hidden_tests"
DEFAULT_NOTES = "planted 2026-11-29 for sealbench; never filed publicly"


def read_tree(root):
    """{relative posix path: text} for every .py file under root, sorted."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
    return files


def write_text(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def unified_patch(buggy, correct):
    """Unified diff turning the buggy tree into the correct one (a/ b/ prefixes)."""
    chunks = []
    for rel in sorted(set(buggy) | set(correct)):
        old, new = buggy.get(rel), correct.get(rel)
        if old == new:
            continue
        if old is None or new is None:
            raise SystemExit("edits may not add or delete files (%s)" % rel)
        if not old.endswith("\n") or not new.endswith("\n"):
            raise SystemExit("%s must end with a newline" % rel)
        diff = list(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            fromfile="a/" + rel, tofile="b/" + rel, n=3,
        ))
        chunks.append("diff --git a/%s b/%s\n" % (rel, rel))
        chunks.extend(diff)
    if not chunks:
        raise SystemExit("edits produced no change")
    return "".join(chunks)


def plant(base, edits, task_id):
    files = dict(base)
    for edit in edits:
        rel, old, new = edit["file"], edit["old"], edit["new"]
        if rel not in files:
            raise SystemExit("%s: no base file %s" % (task_id, rel))
        count = files[rel].count(old)
        if count != 1:
            raise SystemExit("%s: edit text occurs %d times in %s:\n%s" % (task_id, count, rel, old))
        files[rel] = files[rel].replace(old, new)
    return files


def read_tests(task_dir):
    """{folder: {file name: text}} of the .py files in a task's test folders."""
    return {sub: {p.name: p.read_text(encoding="utf-8") for p in sorted((task_dir / sub).glob("*.py"))}
            for sub in TEST_FOLDERS}


def _remove(path):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def clear_tasks(out_tasks, keep):
    """Empty out_tasks (creating it if need be) but for the test files
    (visible_tests/*.py, hidden_tests/*.py) of the tasks in ``keep``:
    regenerating in place must not delete the tests it reads."""
    out_tasks.mkdir(parents=True, exist_ok=True)
    for task_dir in sorted(out_tasks.iterdir()):
        if task_dir.name not in keep or task_dir.is_symlink() or not task_dir.is_dir():
            _remove(task_dir)
            continue
        for entry in sorted(task_dir.iterdir()):
            if entry.name not in TEST_FOLDERS or entry.is_symlink() or not entry.is_dir():
                _remove(entry)
                continue
            for path in sorted(entry.iterdir()):
                if path.suffix != ".py" or path.is_symlink() or not path.is_file():
                    _remove(path)


def build_task(src, base, out_tasks, tests, measure=None):
    """Write out_tasks/<id>/ from the task's source folder ``src`` and its
    test files ``tests`` (:func:`read_tests`)."""
    task_id = src.name
    spec = tomllib.loads((src / "task.toml").read_text(encoding="utf-8"))
    stratum = spec["stratum"]
    buggy = plant(base, spec.get("edit", []), task_id)
    touched = {e["file"] for e in spec.get("edit", [])}
    if stratum == "m" and len(touched) < 2:
        raise SystemExit("%s: m tasks must touch at least two files" % task_id)

    dest = out_tasks / task_id
    for rel, text in buggy.items():
        write_text(dest / "repo" / rel, text)
    for sub, files in tests.items():
        for name, text in files.items():
            write_text(dest / sub / name, text)
    write_text(dest / "prompt.md", (src / "prompt.md").read_text(encoding="utf-8"))
    write_text(dest / "oracle.patch", unified_patch(buggy, base))

    loc = sum(len(text.splitlines()) for text in buggy.values())
    failing = (measure or verify_suite.measure_failing)(dest)
    meta = {
        "id": task_id,
        "title": spec["title"],
        "stratum": stratum,
        "language": "python",
        "time_box_sec": TIME_BOX[stratum],
        "visible_command": VISIBLE_COMMAND,
        "hidden_command": HIDDEN_COMMAND,
        "failing_tests": failing,
        "loc": loc,
        "notes": spec.get("notes", DEFAULT_NOTES),
        "tags": list(spec.get("tags", [])),
    }
    write_text(dest / "meta.json", json.dumps(meta, indent=2) + "\n")
    return task_id, failing


def main(argv=None, measure=None):
    """measure(task_dir) -> failing hidden tests; defaults to running them."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=str(TOOLS.parent), help="project root")
    args = parser.parse_args(argv)
    root = Path(args.root)
    base = read_tree(SRC / "base")
    out_tasks = root / "suite" / "tasks"
    sources = sorted(p for p in (SRC / "tasks").iterdir() if p.is_dir())
    # every task's tests are read before anything is removed: in place, out_tasks holds them
    tests = {src.name: read_tests(TESTS / src.name) for src in sources}
    missing = sorted(f"{task_id}/{sub}" for task_id, subs in tests.items() for sub, files in subs.items() if not files)
    if missing:
        raise SystemExit("no test files in %s for: %s (a task's tests are written there)" % (TESTS, ", ".join(missing)))
    in_place = out_tasks.resolve() == TESTS.resolve()
    clear_tasks(out_tasks, set(tests) if in_place else set())
    for src in sources:
        task_id, failing = build_task(src, base, out_tasks, tests[src.name], measure)
        print("built %-28s failing_tests=%d" % (task_id, failing))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
