"""``sealbench pack mutate`` on real suites (issue 27, point 3): what real sdists showed —
toolz's typed pytest config, more_itertools' silence and packaging tools, tabulate's test
extras, temp paths in prompts, Ctrl-C. Small synthetic projects only (no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sealbench.pack_requirements import detect_requirements, pytest_config_text


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


TYPED_PYPROJECT = '''[project]
name = "typed"
version = "1.0"

[tool.pytest.ini_options]
minversion = "6.0"
testpaths = ["typed"]
xfail_strict = true
timeout_retries = 3
faulthandler_timeout = 2.5
addopts = [
  "--strict-config",
  "-ra",
  "--cov=typed",
]
filterwarnings = [
  "error",
  "ignore:old:DeprecationWarning:",
]
'''


def test_a_typed_pyproject_pytest_config_is_read(tmp_path: Path) -> None:
    """toolz 1.2.0: ``xfail_strict = true`` crashed with a TypeError; every TOML type is read."""
    root = _write(tmp_path / "p", {"pyproject.toml": TYPED_PYPROJECT})
    text = pytest_config_text(root)
    lines = text.splitlines()
    assert "xfail_strict = true" in lines and "timeout_retries = 3" in lines
    assert "faulthandler_timeout = 2.5" in lines and "minversion = 6.0" in lines
    assert "addopts = --strict-config -ra --cov=typed" in lines
    assert "error" in text and "ignore:old:DeprecationWarning:" in text
    req = detect_requirements(root, "")
    assert "pytest-cov" in req.lines            # the --cov inside the addopts list is seen


@pytest.mark.parametrize("name, text", [
    ("pytest.ini", "[pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
    ("setup.cfg", "[metadata]\nname = typed\n\n[tool:pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
    ("tox.ini", "[tox]\nenvlist = py311\n\n[pytest]\nxfail_strict = true\naddopts = --cov=typed\n"),
])
def test_ini_style_pytest_configs_are_read(tmp_path: Path, name: str, text: str) -> None:
    root = _write(tmp_path / "p", {name: text})
    assert "xfail_strict = true" in pytest_config_text(root).splitlines()
    assert "pytest-cov" in detect_requirements(root, "").lines


def test_native_pytest_table_and_odd_values_are_read(tmp_path: Path) -> None:
    """pytest 9's ``[tool.pytest]`` (typed values) beside ini_options; a nested table or a
    non-table ``tool.pytest`` is no crash."""
    root = _write(tmp_path / "p", {"pyproject.toml": '[tool.pytest]\nxfail_strict = false\n'
                                   'addopts = ["--cov=x"]\nweird = {a = 1}\n'})
    lines = pytest_config_text(root).splitlines()
    assert "xfail_strict = false" in lines and "addopts = --cov=x" in lines
    (root / "pyproject.toml").write_text('[tool]\npytest = "not a table"\n')
    assert pytest_config_text(root) == ""


def test_build_system_requirements_are_left_out(tmp_path: Path) -> None:
    """more_itertools 11.2.1: requirements/development.txt pulls packaging.txt (flit_core,
    setuptools) into its environment; build-system requirements never run a test."""
    root = _write(tmp_path / "p", {
        "pyproject.toml": '[build-system]\nrequires = ["flit_core >=4,<5"]\nbuild-backend = "flit_core.buildapi"\n\n'
                          '[project]\nname = "moreish"\nversion = "1"\n',
        "requirements/development.txt": "--requirement testing.txt\n--requirement packaging.txt\n",
        "requirements/testing.txt": "coverage\nattrs\n",
        "requirements/packaging.txt": "flit>=4.0.2,<5\nflit_core>=4.0.2,<5\nsetuptools\nhatchling\nwheel\n"})
    req = detect_requirements(root, "import moreish\nimport attr\n")
    assert req.lines == ["attrs"], req.lines
    for name in ("flit_core", "setuptools", "hatchling"):
        assert any(d.startswith(name) and "build" in d for d in req.dropped), (name, req.dropped)
    # a suite that imports setuptools itself keeps it
    req = detect_requirements(root, "import setuptools\n")
    assert "setuptools" in req.lines


TABULATE_LIKE = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "tabby"\nversion = "1"\n\n'
                      '[project.optional-dependencies]\nwidechars = ["wcwidth"]\nyaml = ["PyYAML>=6"]\n'
                      'gui = ["unusedgui"]\n',
    "tox.ini": "[testenv]\ndeps =\n    pytest\n\n[testenv:py311-extra]\ndeps =\n    pytest\n    numpy\n"
               "    wcwidth\n\n[testenv:lint]\ndeps =\n    pre-commit\n",
    "setup.cfg": "[options.extras_require]\nfast = orjson\n",
}
TABULATE_TESTS = '''from pytest import skip
import pytest


def test_wide():
    try:
        import wcwidth  # noqa: F401
    except ImportError:
        skip("no wcwidth")


def test_numpy():
    np = pytest.importorskip("numpy")


def test_yaml():
    import yaml, orjson
'''


def test_extras_the_tests_import_are_installed(tmp_path: Path) -> None:
    """tabulate: its tests import wcwidth (an extra), numpy (tox's -extra env); with only
    pytest installed 39 of 319 tests were skipped. Declared anywhere + imported = installed;
    declared but never imported (unusedgui, pre-commit) = left out as before."""
    root = _write(tmp_path / "p", TABULATE_LIKE)
    req = detect_requirements(root, TABULATE_TESTS)
    assert req.lines == ["numpy", "orjson", "pytest", "PyYAML>=6", "wcwidth"], req.lines  # pytest: [testenv]
    assert any(s.startswith("wcwidth") and "widechars" in s and "import" in s for s in req.sources), req.sources
    assert any(s.startswith("numpy") and "tox.ini [testenv:py311-extra]" in s for s in req.sources), req.sources
    assert not any("unusedgui" in line or "pre-commit" in line for line in req.lines)
