"""The stub control edits a source file the tamper rules accept (issue 14, point 4b).

In a repo with a root ``conftest.py`` (and test-config and test files) the stub must still
edit a source file of the task's language, so it tests a source edit and scores ``fail``,
never ``tamper``. A repo with no such file fails with an error naming the task.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import BUGGY, ORACLE, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.core.core import SealbenchError  # noqa: E402
from sealbench.stages import hash_pack, run_dummy  # noqa: E402

CONFTEST = "import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), 'src'))\n"


def task_with_conftest(tmp_path: Path, source: bool = True) -> Path:
    """t00 with ``src/calc.py`` found through a root ``conftest.py``, beside test-config files and
    a ``tests/`` folder that all sort before ``src/``."""
    pack = make_pack(tmp_path / "p", n=1)
    t = pack / "tasks" / "t00"
    repo = t / "repo"
    (repo / "calc.py").unlink()
    (repo / "conftest.py").write_text(CONFTEST)
    (repo / "pyproject.toml").write_text('[project]\nname = "calc"\nversion = "0.1"\n')
    (repo / "setup.cfg").write_text("[metadata]\nname = calc\n")
    (repo / "sitecustomize.py").write_text("")
    (repo / "tests").mkdir()
    (repo / "tests" / "helpers.py").write_text("ANSWER = 4\n")
    (repo / "z_test.py").write_text("def test_nothing():\n    pass\n")
    if source:
        (repo / "src").mkdir()
        (repo / "src" / "calc.py").write_text(BUGGY)
        (t / "oracle.patch").write_text(ORACLE.replace("calc.py", "src/calc.py"))
    meta = json.loads((t / "meta.json").read_text())
    meta["loc"] = 4
    (t / "meta.json").write_text(json.dumps(meta))
    return t


def seal(t: Path, tmp_path: Path) -> Path:
    out = tmp_path / "sealed"
    hash_pack.seal_task(t, core.task_digest(t), out, tmp_path / "sealed.json")
    return out


@pytest.mark.sandbox
def test_the_stub_edits_the_source_file_and_fails_not_tamper(tmp_path: Path) -> None:
    sealed = seal(task_with_conftest(tmp_path), tmp_path)
    rec = run_dummy.run_controls(sealed, tmp_path / "controls", oracle_runs=1, timeout_s=60)
    assert rec["stub_file"] == "src/calc.py"
    stub = next(r for r in rec["results"] if r["solver"] == "stub")
    assert stub["status"] == "fail", stub["reason"]
    assert rec["oracle_ok"] and not rec["weak_test"] and not rec["stub_passes"]
    patch = (tmp_path / "controls" / "stub.patch").read_text()
    assert "b/src/calc.py" in patch and "conftest" not in patch


@pytest.mark.unit
def test_no_source_file_is_a_clear_error_naming_the_task(tmp_path: Path) -> None:
    sealed = seal(task_with_conftest(tmp_path, source=False), tmp_path)
    meta = json.loads((sealed / "meta.json").read_text())
    with pytest.raises(SealbenchError, match=r"t00.*no python source file"):
        run_dummy.stub_patch(sealed, meta)
