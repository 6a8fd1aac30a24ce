"""The requirements a project's tests need, read from its own files (docs/packs.md).

:func:`detect_requirements` gathers the runtime dependencies (``[project] dependencies``,
setup.cfg ``install_requires``) and the test dependencies (``[project.optional-dependencies]``
and ``[dependency-groups]`` test/tests/testing/dev, setup.cfg ``extras_require`` of those
names, ``requirements-test*.txt``, ``test-requirements.txt``, ``requirements/test*.txt``,
``requirements-dev.txt``, tox.ini ``deps`` of ``[testenv]``), evaluates their markers for this
interpreter, and leaves out, each with its reason: the project itself (the code under test is
the workspace, never installed), lines pip cannot take offline (editable, local paths, URLs,
index options), development tools that do not run tests (linters, type checkers, docs,
release tools) and pytest plugins the suite does not use. Plugin autoload is off in sealbench
(``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``), so every plugin kept is named with ``-p`` in the task
commands (:attr:`Requirements.plugins`, resolved to modules by :func:`plugin_modules`).
"""

from __future__ import annotations

import configparser
import json
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

TEST_GROUPS = ("test", "tests", "testing", "dev")
REQ_FILE_GLOBS = ("requirements-test*.txt", "requirements_test*.txt", "test-requirements*.txt",
                  "test_requirements*.txt", "requirements/test*.txt", "requirements-dev.txt",
                  "requirements/dev*.txt", "requirements/tests*.txt")
#: Development tools that run no test: never installed for a task.
DEV_TOOLS = frozenset(canonicalize_name(n) for n in (
    "black", "ruff", "flake8", "pylint", "isort", "mypy", "pyright", "pre-commit", "tox", "nox", "twine",
    "build", "wheel", "check-manifest", "codecov", "coveralls", "ipython", "ipdb", "pdbpp", "sphinx",
    "mkdocs", "mkdocs-material", "furo", "myst-parser", "pyupgrade", "bump2version", "towncrier", "flit",
    "hatch", "pip-tools", "setuptools-scm", "scriv", "pydocstyle", "bandit", "autopep8", "yapf",
    "interrogate", "vulture", "cogapp", "mdformat", "codespell", "validate-pyproject", "pyroma"))
#: Build backends and packaging tools: the tests run on the workspace, never on a built
#: package, so these (and whatever ``[build-system] requires`` names) are left out unless the
#: tests import them.
BUILD_TOOLS = frozenset(canonicalize_name(n) for n in (
    "setuptools", "flit-core", "flit", "hatchling", "hatch-vcs", "hatch-fancy-pypi-readme", "poetry-core",
    "pdm-backend", "pdm-pep517", "maturin", "scikit-build-core", "scikit-build", "meson-python",
    "setuptools-scm", "setuptools-rust", "wheel", "build", "versioneer", "enscons", "whey", "trampolim"))
#: Distributions whose import name is not their own name (for matching a test's ``import``).
IMPORT_NAMES = {"pyyaml": "yaml", "pillow": "PIL", "python-dateutil": "dateutil", "beautifulsoup4": "bs4",
                "scikit-learn": "sklearn", "attrs": "attr", "pyzmq": "zmq", "opencv-python": "cv2",
                "protobuf": "google", "pyjwt": "jwt", "python-multipart": "multipart", "msgpack-python": "msgpack"}
#: Known pytest plugins: the patterns (over the pytest config and the test files) that show a
#: suite uses them. A plugin never used is left out; pytest-randomly is always left out (it
#: reorders and reseeds the tests, so a task would not be reproducible).
PLUGIN_USE = {
    "pytest-asyncio": r"mark\.asyncio|asyncio_mode|pytest_asyncio",
    "pytest-cov": r"--cov\b",
    "pytest-mock": r"\bmocker\b|pytest_mock",
    "pytest-xdist": r"(^|\s)-n\s*(auto|\d)|--numprocesses|\bworker_id\b",
    "pytest-timeout": r"mark\.timeout|^\s*timeout\s*=|--timeout",
    "pytest-benchmark": r"\bbenchmark\b",
    "pytest-freezegun": r"\bfreezer\b", "pytest-freezer": r"\bfreezer\b",
    "pytest-httpserver": r"\bhttpserver\b", "pytest-subtests": r"\bsubtests\b",
    "pytest-datadir": r"\b(shared_)?datadir\b", "pytest-rerunfailures": r"mark\.flaky|--reruns",
    "pytest-env": r"^\s*env\s*=", "pytest-lazy-fixture": r"lazy_fixture", "pytest-randomly": r"(?!)",
    "pytest-sugar": r"(?!)", "pytest-instafail": r"(?!)", "pytest-clarity": r"(?!)",
    "pytest-describe": r"\bdescribe_", "pytest-check": r"\bcheck\.", "syrupy": r"\bsnapshot\b",
    "pytest-doctestplus": r"doctest_plus|--doctest-rst",
}
#: Plugins a suite may use without declaring them: added when their pattern matches.
UNDECLARED = ("pytest-asyncio", "pytest-mock", "pytest-cov", "pytest-timeout")
COVERAGE = frozenset({"coverage", "pytest-cov", "codecov", "coveralls"})


@dataclass
class Requirements:
    """The environment of a project's tests: requirement lines, plugins, and where each came from."""

    lines: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)     # distributions to name with -p
    sources: list[str] = field(default_factory=list)     # "<line>  # <file: field>"
    dropped: list[str] = field(default_factory=list)     # "<line>: <why>"

    def text(self) -> str:
        head = ["# the environment of this pack's task commands (sealbench pack: docs/packs.md)"]
        head += [f"# left out: {d}" for d in self.dropped]
        return "\n".join(head + self.lines) + "\n"


def _section(cfg: configparser.ConfigParser, name: str, key: str) -> str:
    return cfg.get(name, key, fallback="") if cfg.has_section(name) else ""


def _ini(path: Path) -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cfg.read_string(path.read_text("utf-8", "replace"))
    except configparser.Error:
        pass
    return cfg


def _config_value(value: object) -> str | None:
    """A TOML pytest option as ini text: a string as is, a bool ``true``/``false``, a number,
    a list its items joined by spaces; a table (no pytest option is one) None."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, list):
        items = [_config_value(v) for v in value]
        return " ".join(v for v in items if v is not None)
    return None


def _toml_pytest_options(py: dict) -> dict[str, object]:
    """``[tool.pytest.ini_options]`` and pytest 9's native ``[tool.pytest]`` keys (any TOML type)."""
    tool = py.get("tool")
    table = tool.get("pytest") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return {}
    ini = table.get("ini_options")
    opts = {k: v for k, v in table.items() if k != "ini_options"}
    if isinstance(ini, dict):
        opts.update(ini)
    return opts


def pytest_config_text(root: Path) -> str:
    """The project's pytest configuration as ini text, one ``key = value`` line an option
    (pytest.ini, pyproject.toml ``[tool.pytest.ini_options]``/``[tool.pytest]``, tox.ini
    ``[pytest]``, setup.cfg ``[tool:pytest]``)."""
    parts = []
    if (root / "pytest.ini").is_file():
        parts.append((root / "pytest.ini").read_text("utf-8", "replace"))
    if (root / "pyproject.toml").is_file():
        for k, v in _toml_pytest_options(_pyproject(root)).items():
            text = _config_value(v)
            if text is not None:
                parts.append(f"{k} = {text}")
    for name, sec in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        if (root / name).is_file():
            cfg = _ini(root / name)
            if cfg.has_section(sec):
                parts += [f"{k} = {v}" for k, v in cfg.items(sec)]
    return "\n".join(parts)


def pytest_addopts(root: Path) -> str:
    """The ``addopts`` of the project's pytest config, on one line ("" when it has none)."""
    m = re.search(r"^addopts\s*=[ \t]*(.*(?:\n[ \t]+.*)*)", pytest_config_text(root), re.M)
    return " ".join(m.group(1).split()) if m else ""


def _pyproject(root: Path) -> dict:
    try:
        return tomllib.loads((root / "pyproject.toml").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}


def _group(groups: dict, name: str, seen: set[str]) -> list[str]:
    out: list[str] = []
    for item in groups.get(name, []):
        if isinstance(item, dict) and "include-group" in item and item["include-group"] not in seen:
            seen.add(item["include-group"])
            out += _group(groups, item["include-group"], seen)
        elif isinstance(item, str):
            out.append(item)
    return out


def _req_file(path: Path, root: Path, seen: set[Path]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if path in seen or not path.is_file():
        return out
    seen.add(path)
    for raw in path.read_text("utf-8", "replace").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith(("-r ", "--requirement ")):
            out += _req_file((path.parent / line.split(None, 1)[1]).resolve(), root, seen)
        elif line and not line.startswith("#"):
            out.append((line, path.relative_to(root).as_posix()))
    return out


def declared(root: Path) -> tuple[str | None, list[tuple[str, str]]]:
    """The project's name and every (requirement line, where it was declared)."""
    py = _pyproject(root)
    proj = py.get("project", {})
    name = proj.get("name")
    found = [(r, "pyproject.toml [project] dependencies") for r in proj.get("dependencies", [])]
    for g in TEST_GROUPS:
        found += [(r, f"pyproject.toml [project.optional-dependencies] {g}")
                  for r in proj.get("optional-dependencies", {}).get(g, [])]
        found += [(r, f"pyproject.toml [dependency-groups] {g}")
                  for r in _group(py.get("dependency-groups", {}), g, {g})]
    if (root / "setup.cfg").is_file():
        cfg = _ini(root / "setup.cfg")
        name = name or _section(cfg, "metadata", "name") or None
        found += [(r, "setup.cfg [options] install_requires")
                  for r in _section(cfg, "options", "install_requires").splitlines()]
        for g in TEST_GROUPS:
            found += [(r, f"setup.cfg [options.extras_require] {g}")
                      for r in _section(cfg, "options.extras_require", g).splitlines()]
    seen: set[Path] = set()
    for pattern in REQ_FILE_GLOBS:
        for path in sorted(root.glob(pattern)):
            found += _req_file(path.resolve(), root.resolve(), seen)
    if (root / "tox.ini").is_file():
        deps = _section(_ini(root / "tox.ini"), "testenv", "deps")
        for line in deps.splitlines():
            line = line.strip()
            if line.startswith("-r"):
                found += _req_file((root / line[2:].strip()).resolve(), root.resolve(), seen)
            elif line:
                found.append((line, "tox.ini [testenv] deps"))
    return name, [(r.strip(), w) for r, w in found if r.strip() and not r.strip().startswith("#")]


def optional_declared(root: Path) -> list[tuple[str, str]]:
    """Requirements declared for other purposes than the test groups: every other extra of
    ``[project.optional-dependencies]``, dependency group, setup.cfg ``extras_require`` and
    tox.ini ``[testenv:*]`` deps. Used only for what the tests import (:func:`imported_modules`)."""
    py = _pyproject(root)
    proj = py.get("project", {}) if isinstance(py.get("project"), dict) else {}
    found: list[tuple[str, str]] = []
    extras = proj.get("optional-dependencies", {})
    for g, reqs in (extras.items() if isinstance(extras, dict) else []):
        if g not in TEST_GROUPS and isinstance(reqs, list):
            found += [(r, f"pyproject.toml [project.optional-dependencies] {g}") for r in reqs if isinstance(r, str)]
    groups = py.get("dependency-groups", {})
    for g in (groups if isinstance(groups, dict) else {}):
        if g not in TEST_GROUPS:
            found += [(r, f"pyproject.toml [dependency-groups] {g}") for r in _group(groups, g, {g})]
    if (root / "setup.cfg").is_file():
        cfg = _ini(root / "setup.cfg")
        if cfg.has_section("options.extras_require"):
            for g, text in cfg.items("options.extras_require"):
                if g not in TEST_GROUPS:
                    found += [(r, f"setup.cfg [options.extras_require] {g}") for r in text.splitlines()]
    if (root / "tox.ini").is_file():
        cfg = _ini(root / "tox.ini")
        for sec in cfg.sections():
            if sec.startswith("testenv:"):
                found += [(r.strip(), f"tox.ini [{sec}] deps") for r in _section(cfg, sec, "deps").splitlines()]
    return [(r.strip(), w) for r, w in found if r.strip() and not r.strip().startswith(("#", "-"))]


def imported_modules(test_text: str) -> set[str]:
    """Top-level module names the tests import (anywhere: inside functions and ``try`` too,
    and ``pytest.importorskip("name")``)."""
    mods = set(re.findall(r"^\s*from\s+([A-Za-z_]\w*)[\w.]*\s+import\b", test_text, re.M))
    for names in re.findall(r"^\s*import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*"
                            r"(?:\s+as\s+\w+)?)*)", test_text, re.M):
        mods |= {n.strip().split(".", 1)[0].split()[0] for n in names.split(",") if n.strip()}
    mods |= set(re.findall(r"importorskip\(\s*['\"]([A-Za-z_]\w*)", test_text))
    return mods


def _imports(key: str, modules: set[str]) -> str | None:
    """The module of distribution ``key`` the tests import, or None."""
    for m in modules:
        if canonicalize_name(m) == key or IMPORT_NAMES.get(key) == m:
            return m
    return None


def build_requires(root: Path) -> set[str]:
    """The canonical names of ``[build-system] requires``."""
    names = set()
    bs = _pyproject(root).get("build-system", {})
    for line in (bs.get("requires", []) if isinstance(bs, dict) else []):
        try:
            names.add(canonicalize_name(Requirement(str(line)).name))
        except InvalidRequirement:
            continue
    return names


def detect_requirements(root: Path, test_text: str) -> Requirements:
    """What the environment of ``root``'s tests needs; ``test_text``: the test and support files'
    text (where plugin use shows). Every line left out is listed with its reason."""
    root = Path(root)
    name, found = declared(root)
    own = canonicalize_name(name) if name else None
    config = pytest_config_text(root)
    used_text = config + "\n" + test_text
    cov = re.search(PLUGIN_USE["pytest-cov"], config, re.M) is not None
    # coverage itself is also needed when the config names it (e.g. a filterwarnings category)
    needs_coverage = cov or re.search(r"\bcoverage\b", config) is not None
    modules = imported_modules(test_text)
    builders = build_requires(root) | BUILD_TOOLS
    extra: list[tuple[str, str]] = []
    for line, where in optional_declared(root):    # other extras: only what the tests import
        try:
            mod = _imports(canonicalize_name(Requirement(line).name), modules)
        except InvalidRequirement:
            continue
        if mod:
            extra.append((line, f"{where}; the tests import {mod}"))
    req = Requirements()
    kept: dict[str, str] = {}
    for line, where in found + extra:
        if line.startswith(("-", ".", "/")) or "://" in line or "{" in line:
            req.dropped.append(f"{line} ({where}): an option, a local path or a URL; pip cannot take it offline")
            continue
        try:
            r = Requirement(line)
        except InvalidRequirement:
            req.dropped.append(f"{line} ({where}): not a requirement specifier")
            continue
        if r.url:  # name @ URL: a pack's environment names released packages only (environments.py)
            req.dropped.append(f"{line} ({where}): a direct reference (name @ URL), not a released package")
            continue
        key = canonicalize_name(r.name)
        group = where.split(";", 1)[0].rsplit(" ", 1)[-1]
        imported = _imports(key, modules) is not None
        if r.marker is not None and not any(r.marker.evaluate({"extra": e}) for e in ("", group)):
            req.dropped.append(f"{line} ({where}): its marker is false for this interpreter")
            continue
        why = None
        if key == own:
            why = "the project itself: the code under test is the workspace, never installed"
        elif key in builders and not imported:
            why = "a build-system requirement (packaging); the tests run on the workspace, never on a build"
        elif (key in DEV_TOOLS or key.startswith("types-") or key.startswith("sphinx")
              or key.startswith("flake8")) and not imported:
            why = "a development tool; it runs no test"
        elif key in COVERAGE and not (cov or (key == "coverage" and needs_coverage)):
            why = "coverage only; the pytest config does not ask for --cov"
        elif key in PLUGIN_USE and not re.search(PLUGIN_USE[key], used_text, re.M):
            why = "a pytest plugin neither the config nor the tests use"
        if why:
            req.dropped.append(f"{line} ({where}): {why}")
            continue
        if key in kept:
            continue
        spec = str(r).split(";", 1)[0].strip() if r.marker is not None else str(r)
        kept[key] = spec
        req.sources.append(f"{spec}  # {where}")
    if needs_coverage and not cov and "coverage" not in kept:
        kept["coverage"] = "coverage"
        req.sources.append("coverage  # named by the pytest config (e.g. a filterwarnings category)")
    for plug in UNDECLARED:
        key = canonicalize_name(plug)
        if key not in kept and re.search(PLUGIN_USE[plug], used_text, re.M):
            kept[key] = plug
            req.sources.append(f"{plug}  # used by the tests or the pytest config, not declared")
    req.lines = sorted(kept.values(), key=str.lower)
    req.plugins = sorted(k for k in kept if k.startswith("pytest-") or k in PLUGIN_USE)
    return req


def read_requirements_file(path: Path, root: Path, test_text: str) -> Requirements:
    """``--requirements FILE``: its lines as given (no detection); plugins among them are named."""
    lines = [ln for ln, _ in _req_file(Path(path).resolve(), Path(path).resolve().parent, set())]
    req = Requirements(lines=lines, sources=[f"{ln}  # {path}" for ln in lines])
    for ln in lines:
        try:
            key = canonicalize_name(Requirement(ln).name)
        except InvalidRequirement:
            continue
        if key.startswith("pytest-") or key in PLUGIN_USE:
            req.plugins.append(key)
    return req


PROBE_PLAIN = ("import importlib.metadata as m, json, re\n"
               "c = lambda n: re.sub(r'[-_.]+', '-', n).lower()\n"
               "print(json.dumps(sorted({(c(e.dist.name), e.value) for e in m.entry_points(group='pytest11')})))")


def plugin_modules(python: str, dists: list[str], env: dict[str, str]) -> list[str]:
    """The ``-p`` names (plugin modules) of ``dists`` installed for ``python``. A distribution
    without a pytest11 entry point there (e.g. hypothesis loads itself) names none."""
    proc = subprocess.run([python, "-c", PROBE_PLAIN], capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{python}: could not list its pytest plugins: {proc.stderr.strip()[-500:]}")
    eps = json.loads(proc.stdout)
    wanted = {canonicalize_name(d) for d in dists}
    return [value.split(":", 1)[0] for dist, value in eps if dist in wanted]
