"""Tests at their repository paths, protected support files, src/ layouts and import
provenance (issue 14, points 2 and 3; docs/contract.md §1, docs/sealed-runs.md).

A ``tests_layout: "repo"`` task: ``src/numlib`` (a bug in ``add``), an assert helper module in the
library's test package that the tests import (listed in ``support_files``), the library's own
pytest configuration, and test files that sit in that test package in the workspace.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core import core  # noqa: E402
from sealbench.core.core import PackError  # noqa: E402
from sealbench.pack.packs import validate_meta  # noqa: E402
from sealbench.pack.workspace import make_workspace  # noqa: E402
from sealbench.scoring import scoring  # noqa: E402
from sealbench.stages import hash_pack, run_dummy  # noqa: E402

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
HELPERS = "def check_eq(got, want):\n    assert got == want, f'{got} != {want}'\n"
VISIBLE = "from tests.helpers import check_eq\nfrom numlib import add\n\n\ndef test_two():\n    check_eq(add(2, 2), 4)\n"
HIDDEN = ("from tests.helpers import check_eq\nfrom numlib import add\n\n\ndef test_seven():\n    check_eq(add(3, 4), 7)\n"
          "\n\ndef test_zero():\n    check_eq(add(-1, 1), 0)\n")
PYTEST = "python -m pytest -q -p no:cacheprovider"
#: the library's test modules at their repository paths
VIS, HID, MISSING = "tests/test_visible.py", "tests/test_hidden.py", "tests/missing.py"


def diff(path: str, old: str | None, new: str | None) -> bytes:
    """A unified diff replacing a whole file (None: absent)."""
    a = old.splitlines(keepends=True) if old else []
    b = new.splitlines(keepends=True) if new else []
    head = f"diff --git a/{path} b/{path}\n"
    if old is None:
        head += "new file mode 100644\n"
    if new is None:
        head += "deleted file mode 100644\n"
    head += f"--- {'a/' + path if old is not None else '/dev/null'}\n+++ {'b/' + path if new is not None else '/dev/null'}\n"
    body = f"@@ -{1 if a else 0},{len(a)} +{1 if b else 0},{len(b)} @@\n"
    body += "".join("-" + x for x in a) + "".join("+" + x for x in b)
    return (head + body).encode()


ORACLE = diff("src/numlib/__init__.py", BUGGY, FIXED)


def write_task(tmp_path: Path, python: str = "python", **meta_over) -> Path:
    t = tmp_path / "pack" / "tasks" / "rl"
    repo = t / "repo"
    (repo / "src" / "numlib").mkdir(parents=True)
    (repo / "src" / "numlib" / "__init__.py").write_text(BUGGY)
    (repo / "tests").mkdir()
    (repo / "tests" / "__init__.py").write_text("")
    (repo / "tests" / "helpers.py").write_text(HELPERS)
    (repo / "pyproject.toml").write_text('[project]\nname = "numlib"\nversion = "0.1"\n\n'
                                         '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (t / "visible_tests" / "tests").mkdir(parents=True)
    (t / "visible_tests" / "tests" / "test_visible.py").write_text(VISIBLE)
    (t / "hidden_tests" / "tests").mkdir(parents=True)
    (t / "hidden_tests" / "tests" / "test_hidden.py").write_text(HIDDEN)
    (t / "oracle.patch").write_bytes(ORACLE)
    (t / "prompt.md").write_text("add gives the wrong total\n")
    pyt = PYTEST.replace("python", python, 1)
    meta = {"id": "rl", "title": "add is wrong", "stratum": "xs", "language": "python", "time_box_sec": 60,
            "visible_command": f"{pyt} {VIS}", "hidden_command": f"{pyt} {HID}",
            "failing_tests": 2, "loc": 4, "tests_layout": "repo",
            "support_files": ["tests/__init__.py", "tests/helpers.py"], **meta_over}
    (t / "meta.json").write_text(json.dumps(meta))
    return t


def seal(t: Path, tmp_path: Path) -> tuple[Path, dict]:
    out = tmp_path / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), out, tmp_path / "sealed.json")
    return out, json.loads((out / "meta.json").read_text())


def score(tmp_path: Path, sealed: Path, meta: dict, patch: bytes, name: str, **kw) -> scoring.ScoreResult:
    return scoring.score_patch(sealed, meta, patch, tmp_path / "logs" / name, 60, **kw)


@pytest.fixture()
def task(tmp_path: Path) -> tuple[Path, dict]:
    return seal(write_task(tmp_path), tmp_path)


# --- (c) a src/ layout without PYTHONPATH in its commands; the controls behave -------------------

@pytest.mark.sandbox
def test_src_layout_controls_empty_diff_fails_oracle_passes(task, tmp_path: Path) -> None:
    sealed, meta = task
    empty = score(tmp_path, sealed, meta, b"", "empty")
    assert empty.status == "fail", empty.reason
    oracle = score(tmp_path, sealed, meta, ORACLE, "oracle")
    assert oracle.status == "pass", oracle.reason
    assert oracle.hidden.junit.ran == 2
    assert oracle.import_outside is None
    assert oracle.hidden.report["imports"]["numlib"][0].endswith("src/numlib/__init__.py")


# --- (a) a patch neutering the helper the tests import ------------------------------------------

@pytest.mark.sandbox
def test_patch_neutering_a_support_file_is_tamper(task, tmp_path: Path) -> None:
    sealed, meta = task
    noop = "def check_eq(got, want):\n    return None\n"
    res = score(tmp_path, sealed, meta, diff("tests/helpers.py", HELPERS, noop), "neuter")
    assert res.status == "tamper", res.reason
    assert "tests/helpers.py" in res.tamper_paths and "support file" in res.reason
    assert res.hidden_pass is False        # the sealed helper ran: the bug is still caught


@pytest.mark.sandbox
def test_support_file_is_protected_with_the_folders_layout_too(tmp_path: Path) -> None:
    """Today's layout (tests in hidden_tests/), the helper in repo/tests/: the exact attack of the
    issue, a no-op helper with the bug in place, must not pass."""
    t = write_task(tmp_path, **folders())
    (t / "repo" / "src").rename(t / "repo" / "lib")
    (t / "repo" / "lib" / "numlib").rename(t / "repo" / "numlib")      # importable from the root
    sealed, meta = seal(t, tmp_path)
    noop = "def check_eq(got, want):\n    return None\n"
    res = score(tmp_path, sealed, meta, diff("tests/helpers.py", HELPERS, noop), "neuter")
    assert res.status == "tamper" and res.tamper_paths == ["tests/helpers.py"], res.reason


# --- (b) a patch writing at a test's repository path ---------------------------------------------

@pytest.mark.sandbox
@pytest.mark.parametrize("path", ["tests/test_hidden.py", "tests/test_visible.py"])
def test_patch_creating_a_test_at_its_repo_path_is_tamper(task, tmp_path: Path, path: str) -> None:
    sealed, meta = task
    fake = "def test_seven():\n    pass\n\n\ndef test_zero():\n    pass\n"
    res = score(tmp_path, sealed, meta, ORACLE + diff(path, None, fake), "fake")
    assert res.status == "tamper", res.reason
    assert path in res.tamper_paths and "test file at its repository path" in res.reason


@pytest.mark.sandbox
def test_init_of_a_test_folder_is_protected(task, tmp_path: Path) -> None:
    sealed, meta = task
    res = score(tmp_path, sealed, meta, ORACLE + diff("tests/__init__.py", None, "import os\n"), "init")
    assert res.status == "tamper" and "tests/__init__.py" in res.tamper_paths, res.reason


# --- the worker's workspace: visible tests at their repo paths, hidden absent --------------------

@pytest.mark.sandbox
def test_workspace_has_visible_tests_at_repo_paths_and_no_hidden(task, tmp_path: Path) -> None:
    sealed, _ = task
    ws = make_workspace(sealed, tmp_path / "ws", tmp_path / "shadow.git")
    assert (ws.root / "tests" / "test_visible.py").read_text() == VISIBLE
    assert (ws.root / "tests" / "helpers.py").read_text() == HELPERS
    assert not (ws.root / "tests" / "test_hidden.py").exists()
    assert not (ws.root / "visible_tests").exists() and not (ws.root / "hidden_tests").exists()


# --- 3. the stub never edits a protected file ----------------------------------------------------

@pytest.mark.unit
def test_stub_never_edits_a_support_file(tmp_path: Path) -> None:
    t = write_task(tmp_path, support_files=["tests/__init__.py", "tests/helpers.py", "aaa_checks.py"])
    (t / "repo" / "aaa_checks.py").write_text("def same(a, b):\n    return a == b\n")
    sealed, meta = seal(t, tmp_path)
    _patch, rel = run_dummy.stub_patch(sealed, meta)
    assert rel == "src/numlib/__init__.py"


# --- hash_pack validation ------------------------------------------------------------------------

@pytest.mark.unit
@pytest.mark.parametrize("over, words", [
    ({"support_files": [MISSING]}, f"field 'support_files': '{MISSING}' is not a file in repo/"),
    ({"support_files": ["../meta.json"]}, "field 'support_files': '../meta.json' must not contain '..'"),
    ({"import_paths": ["/abs"]}, "field 'import_paths': '/abs' must be a relative path"),
    ({"tests_layout": "flat"}, "tests_layout"),
])
def test_meta_layout_keys_are_checked_naming_the_field(tmp_path: Path, over: dict, words: str) -> None:
    t = write_task(tmp_path, **over)
    with pytest.raises(PackError) as err:
        validate_meta(t / "meta.json")
    assert words in str(err.value) and str(t / "meta.json") in str(err.value)


@pytest.mark.unit
def test_no_package_under_test_found_nor_declared_is_refused(tmp_path: Path) -> None:
    t = write_task(tmp_path)
    (t / "repo" / "src" / "numlib" / "__init__.py").unlink()
    (t / "repo" / "src" / "numlib" / "table.txt").write_text("1 2\n")
    with pytest.raises(PackError, match="field 'packages': no package or module of the code under test found in repo/"):
        validate_meta(t / "meta.json")
    meta = json.loads((t / "meta.json").read_text())
    (t / "meta.json").write_text(json.dumps(dict(meta, packages=["numlib"])))
    assert validate_meta(t / "meta.json")["packages"] == ["numlib"]


@pytest.mark.unit
def test_a_test_colliding_with_a_repo_file_is_refused(tmp_path: Path) -> None:
    t = write_task(tmp_path)
    (t / "repo" / "tests" / "test_visible.py").write_text("")
    with pytest.raises(PackError, match=f"visible_tests/{VIS} at {VIS}, which repo/"):
        validate_meta(t / "meta.json")


@pytest.mark.unit
def test_a_valid_repo_layout_task_passes_validation(tmp_path: Path) -> None:
    meta = validate_meta(write_task(tmp_path) / "meta.json")
    assert meta["tests_layout"] == "repo"


# --- (d), (e) the package under test also importable from outside the workspace ------------------

@pytest.fixture()
def outside_env(tmp_path: Path) -> str:
    """A venv whose interpreter sees sealbench's packages and a correct copy of numlib installed
    outside any workspace (a .pth file); returns its python."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    (tmp_path / "installed" / "numlib").mkdir(parents=True)
    (tmp_path / "installed" / "numlib" / "__init__.py").write_text(FIXED)
    (site / "outside.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{tmp_path / 'installed'}\n")
    return str(venv / "bin" / "python")


def folders(python: str = "python") -> dict:
    """meta.json keys of today's layout: the tests in visible_tests/ and hidden_tests/."""
    pyt = PYTEST.replace("python", python, 1)
    return {"tests_layout": "folders", "visible_command": f"{pyt} visible_tests/{VIS}",
            "hidden_command": f"{pyt} hidden_tests/{HID}"}


@pytest.mark.sandbox
@pytest.mark.parametrize("layout", ["folders", "repo"])
def test_controls_importing_an_installed_copy_are_refused_naming_the_path(tmp_path: Path, outside_env: str,
                                                                          layout: str) -> None:
    over = folders(outside_env) if layout == "folders" else {}
    t = write_task(tmp_path, python=outside_env, import_paths=[], **over)
    sealed, _ = seal(t, tmp_path)
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60, sandbox_mode="off")
    empty = next(r for r in rec["results"] if r["solver"] == "empty_diff")
    assert empty["status"] == "infra_fail", empty
    where = str(tmp_path / "installed" / "numlib" / "__init__.py")
    assert f"the tests import numlib from {where}, outside the workspace" in empty["reason"]
    assert rec["import_outside"] == f"numlib from {where}"
    assert not rec["weak_test"]
    import pandas as pd

    from sealbench.gate.refusal_rules import import_outside_refusal
    r = import_outside_refusal(pd.DataFrame([{"task_id": "rl", "import_outside": rec["import_outside"]},
                                             {"task_id": "ok", "import_outside": None}]))
    assert r["code"] == "TASK_IMPORTS_OUTSIDE" and r["evidence"] == ["rl"] and f"rl: numlib from {where}" in r["sentence"]


@pytest.mark.sandbox
@pytest.mark.parametrize("layout", ["folders", "repo"])
def test_patch_deleting_the_package_so_an_installed_copy_loads_is_tamper(tmp_path: Path, outside_env: str,
                                                                         layout: str) -> None:
    over = folders(outside_env) if layout == "folders" else {}
    sealed, meta = seal(write_task(tmp_path, python=outside_env, **over), tmp_path)
    # the task's import paths come first (PYTHONPATH, as plain pytest runs it), so the controls
    # test the workspace's copy even with one installed; deleting it lets the installed copy load
    ok = score(tmp_path, sealed, meta, b"", "empty", task_check=True)
    assert ok.status == "fail" and ok.import_outside is None, ok.reason
    res = score(tmp_path, sealed, meta, diff("src/numlib/__init__.py", BUGGY, None), "delete")
    assert res.status == "tamper", res.reason
    assert "imported numlib from" in res.reason and str(tmp_path / "installed") in res.reason


# --- the agent's visible runs get the task's import paths ----------------------------------------

@pytest.mark.sandbox
def test_agent_visible_runs_import_the_src_package_of_the_workspace(task, tmp_path: Path) -> None:
    import time

    from sealbench.pack.task_layout import import_paths, pythonpath_env
    from sealbench.scoring import visible
    sealed, meta = task
    ws = make_workspace(sealed, tmp_path / "ws", tmp_path / "shadow.git")
    (ws.root / "src" / "numlib" / "__init__.py").write_text(FIXED)
    now = time.time()
    server = visible.VisibleServer(tmp_path / "v.sock", meta["visible_command"], ws.root, now, now + 60,
                                   tmp_path / "attempts.jsonl", tmp_path / "vlogs",
                                   task_env=pythonpath_env(ws.root, import_paths(sealed / "repo", meta)))
    try:
        rc = visible.client(str(tmp_path / "v.sock"))
    finally:
        server.close()
    assert rc == 0, (tmp_path / "vlogs" / "visible-1.stdout").read_text()


@pytest.mark.unit
def test_import_outside_reads_every_imports_record_of_the_stream() -> None:
    from sealbench.scoring.sealed_report import import_outside
    inside = {"kind": "imports", "when": "collected", "modules": {"numlib": ["/w/ws/src/numlib/__init__.py"]}}
    assert import_outside([inside], "/w/ws") is None
    sibling = {"kind": "imports", "when": "finish", "modules": {"numlib": ["/w/ws2/numlib/__init__.py"]}}
    assert import_outside([inside, sibling], "/w/ws") == {"package": "numlib", "path": "/w/ws2/numlib/__init__.py"}
    made = {"kind": "imports", "when": "finish", "modules": {"numlib": ["(no file: built in, or made at run time)"]}}
    assert import_outside([inside, made], "/w/ws")["package"] == "numlib"
