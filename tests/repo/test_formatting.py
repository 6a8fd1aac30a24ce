"""The code's form (issue 28 point 5): the rules files are as snakefmt writes them, `snakemake --lint`
finds nothing, and ruff passes on the Python code. The settings are in pyproject.toml
([tool.snakefmt], [tool.ruff]); the tools' versions are pinned in its `test` extra. To fix what a
test reports: `snakefmt Snakefile workflow/rules` and `ruff check --fix scripts tests tools bench`."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: What ruff checks: the package, the tests and the tools around them.
PYTHON_DIRS = ("scripts", "tests", "tools", "bench")


def run_tool(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=env)


def need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (it is in pyproject.toml's `test` extra: pip install -e '.[test]')")


@pytest.mark.unit
def test_the_rules_files_are_as_snakefmt_writes_them() -> None:
    need("snakefmt")
    res = run_tool("snakefmt", "--config", str(ROOT / "pyproject.toml"), "--check", "Snakefile", "workflow/rules")
    out = res.stdout + res.stderr
    if res.returncode != 0:
        diff = run_tool("snakefmt", "--config", str(ROOT / "pyproject.toml"), "--compact-diff", "Snakefile",
                        "workflow/rules")
        pytest.fail(f"run `snakefmt Snakefile workflow/rules`:\n{out[-2000:]}\n{diff.stdout[-4000:]}")
    assert "would be left unchanged" in out, out[-3000:]  # it found the files


@pytest.mark.pipeline
@pytest.mark.snakemake
def test_snakemake_lint_finds_nothing() -> None:
    # the lint plans the workflow (config/config.yaml, the bundled suite) and writes nothing but
    # .snakemake/ (tests/pipeline/test_planning.py)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "scripts"),
                                                                      os.environ.get("PYTHONPATH")]))}
    res = run_tool("snakemake", "--lint", env=env)
    out = res.stdout + res.stderr
    assert "Traceback" not in out, out[-3000:]
    assert res.returncode == 0 and "Lints for" not in out, out[-5000:]


@pytest.mark.unit
def test_ruff_finds_nothing_in_the_python_code() -> None:
    need("ruff")
    res = run_tool("ruff", "check", "--no-cache", "--output-format", "concise", *PYTHON_DIRS)
    assert res.returncode == 0, (res.stdout + res.stderr)[-5000:]
