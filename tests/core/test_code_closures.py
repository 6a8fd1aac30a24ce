"""The stage closures kept between processes (sealbench.core.code_digests.package_facts): another
process with the same code reads them; any edit to the package's code derives them again, so a
stale cache can never hide an import (the code digests, and so which jobs rerun, follow it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
ASK = ("import json, sys; from sealbench.core import code_digests as c; "
       "print(json.dumps([list(c.code_closure('stages.split')), c.code_digest('stages.split'), len(c._IMPORTS)]))")


def _ask(scripts: Path) -> tuple[list[str], str, int]:
    res = subprocess.run([sys.executable, "-c", ASK], cwd=scripts, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(scripts), "PYTHONDONTWRITEBYTECODE": "1"})
    assert res.returncode == 0, res.stderr
    closure, digest, parsed = json.loads(res.stdout)
    return closure, digest, parsed


@pytest.fixture()
def package(tmp_path: Path) -> Path:
    """A copy of the sealbench package (its source only), alone on PYTHONPATH."""
    scripts = tmp_path / "scripts"
    shutil.copytree(ROOT / "scripts" / "sealbench", scripts / "sealbench",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return scripts


def test_a_second_process_reads_the_closures_instead_of_parsing(package: Path) -> None:
    first = _ask(package)
    assert first[2] > 0                                    # the first process parsed modules
    facts = json.loads((package / "sealbench" / "__pycache__" / "code-closures.json").read_text())
    assert facts["facts"]["closure:stages.split"] == first[0]
    second = _ask(package)
    assert second == (first[0], first[1], 0)               # the same closure and digest, nothing parsed


def test_an_added_import_is_in_the_next_closure_and_digest(package: Path) -> None:
    closure, digest, _ = _ask(package)
    assert "scoring/decoys.py" not in closure
    split = package / "sealbench" / "stages" / "split.py"
    split.write_text(split.read_text() + "\n\ndef _later():\n    from ..scoring import decoys  # noqa: F401\n")
    closure2, digest2, parsed = _ask(package)
    assert parsed > 0 and "scoring/decoys.py" in closure2 and digest2 != digest


def test_a_comment_changes_the_digest_not_the_closure(package: Path) -> None:
    closure, digest, _ = _ask(package)
    core = package / "sealbench" / "core" / "core.py"
    core.write_text(core.read_text() + "\n# a comment\n")
    closure2, digest2, _ = _ask(package)
    assert closure2 == closure and digest2 != digest


def test_the_cache_holds_for_its_code_only_and_any_edit_derives_again(package: Path) -> None:
    """The cache is trusted as the bytecode beside it is (whoever can write one can write the
    other): a closure written there is read while the code is the same, never after an edit."""
    _ask(package)
    path = package / "sealbench" / "__pycache__" / "code-closures.json"
    facts = json.loads(path.read_text())
    facts["facts"]["closure:stages.split"] = ["stages/split.py"]
    path.write_text(json.dumps(facts))
    # the cache matches this code's signature: it is read...
    assert _ask(package)[0] == ["stages/split.py"]
    # ...until the code changes: any edit gives another signature, and the closure is derived again
    split = package / "sealbench" / "stages" / "split.py"
    split.write_text(split.read_text() + "\n")
    closure, _, parsed = _ask(package)
    assert parsed > 0 and len(closure) > 1 and "core/core.py" in closure
