"""sealbench built-in offline candidate agent: search-based classical program repair.

An honest, LLM-free baseline.  It localises the fault from the visible test
failures and tries small single-line mutations until the visible suite passes.

Reads
    * the environment variables of the agent contract: SEALBENCH_TASK_ID,
      SEALBENCH_PROMPT, SEALBENCH_WORKSPACE, SEALBENCH_VISIBLE_CMD,
      SEALBENCH_TIME_BOX_S, SEALBENCH_MAX_STEPS, SEALBENCH_MAX_OUTPUT_TOKENS,
      SEALBENCH_OUT;
    * the prompt file (only for a few keyword hints, e.g. "case", "round");
    * the ``*.py`` files inside the workspace (source files and visible tests).

Writes
    * source files inside the workspace (never anything under ``visible_tests/``);
      rejected edits are reverted byte-exactly; if the search ends without a
      green suite, the best partial state is kept only if it strictly reduced the
      number of failing tests, otherwise every file is restored (empty diff);
    * ``$SEALBENCH_OUT/usage.json``  ({"tokens_in": 0, "tokens_out": 0,
      "cost_usd": 0.0, "steps": <number of visible runs>});
    * ``$SEALBENCH_OUT/stamp.json`` (an offline process: server
      ``offline:sealbench.agents.repair``, queue 0, retries 0, quota ``unmetered``, no
      route change) and an empty ``steers.jsonl`` (it takes no input once started);
    * ``$SEALBENCH_OUT/repair_log.jsonl`` (one JSON object per visible run).

Executes
    * only ``$SEALBENCH_VISIBLE_CMD`` (with PYTHONDONTWRITEBYTECODE=1); each run
      is one step.

Usage::

    PYTHONPATH=scripts python -m sealbench.agents.repair [--max-candidates N] [--lite] [--seed S]

Algorithm
    1. run the visible suite, parse the pytest output (FAILED lines, summary
       counts, traceback frames ``path.py:LINE:``);
    2. fault localisation: traceback-frame lines in source files, then the
       functions the failing tests call (``ast`` of the visible tests, ranked with
       an Ochiai score failing-vs-passing tests), then one level of callees and the
       module constants they use;
    3. mutation operators (token/``ast`` aware, single line, must compile):
       comparison swaps, arithmetic swaps, integer constants +-1 / 0<->1,
       subscript / slice / range bounds +-1, and<->or, not removal/insertion,
       True<->False, min<->max, wrapping in round()/abs(), adding .strip()/.lower();
    4. greedy search: accept on green; keep an edit that strictly reduces the
       failing count (and does not lose passes) and continue from it.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sealbench.core import contract

DEFAULT_MAX_CANDIDATES = 60
LITE_MAX_CANDIDATES = 12
TIME_FRACTION = 0.8
CHAIN_MIN_ROUND = 12  # single-edit candidates tried before chaining a partial improvement
SKIP_DIRS = {"visible_tests", "__pycache__", "node_modules", "venv", "site-packages", "build", "dist"}
UNSOLVED = 10**9  # failing count used when the suite could not even be counted

# operator tiers: lower is tried earlier (tier weight is added to the unit rank)
TIER_WEIGHT = 1.5
TIER_COMPARE, TIER_OFF_BY_ONE, TIER_LOGIC, TIER_CALL = 0, 1, 2, 3


class RepairError(Exception):
    """Base error of the repair agent."""


class ContractError(RepairError):
    """The agent contract (environment variables) is not satisfied."""


class Interrupted(RepairError):
    """The harness asked us to stop (SIGTERM)."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Settings:
    workspace: Path
    visible_cmd: str
    out_dir: Path | None
    prompt_path: Path | None
    time_box_s: float
    max_steps: int
    max_candidates: int
    lite: bool
    seed: int

    @property
    def step_cap(self) -> int:
        """Total visible runs allowed (the baseline run included)."""
        return max(1, min(self.max_candidates, self.max_steps))


@dataclass
class Outcome:
    """One run of the visible suite."""

    returncode: int
    passed: int
    failed: int
    errors: int
    output: str
    seconds: float
    timed_out: bool = False
    failing_ids: list[str] = field(default_factory=list)

    @property
    def green(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def failing(self) -> int:
        """Number of failing tests; UNSOLVED if the run could not be counted."""
        if self.timed_out:
            return UNSOLVED
        if self.returncode != 0 and self.failed + self.errors == 0:
            return UNSOLVED
        return self.failed + self.errors

    def better_than(self, other: Outcome) -> bool:
        return self.failing < other.failing and self.passed >= other.passed


@dataclass(frozen=True)
class Frame:
    path: Path
    lineno: int


@dataclass
class Unit:
    """A group of suspicious lines (one frame line or one function body)."""

    path: Path
    lines: list[int]
    tier: int  # 0 frame line, 1 directly reached function, 2 callee / constant
    score: float
    label: str


@dataclass(frozen=True)
class Mutation:
    operator: str
    tier: int
    new_line: str


@dataclass(frozen=True)
class Candidate:
    path: Path
    lineno: int
    operator: str
    old_line: str
    new_line: str
    rank: float

    @property
    def key(self) -> tuple[str, int, str, str]:
        return (str(self.path), self.lineno, self.old_line, self.new_line)


# ------------------------------------------------------------------ settings / io


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        return int(float(raw)) if raw.strip() else default
    except ValueError:
        return default


def load_settings(argv: list[str] | None) -> Settings:
    parser = argparse.ArgumentParser(prog="python -m sealbench.agents.repair", description=__doc__.splitlines()[0])
    parser.add_argument("--max-candidates", type=int, default=DEFAULT_MAX_CANDIDATES,
                        help="cap on visible runs (baseline included); default %(default)s")
    parser.add_argument("--lite", action="store_true",
                        help="weak baseline: comparison swaps on frame/called lines only, <=12 candidates, no chaining")
    parser.add_argument("--seed", type=int, default=0,
                        help="tie-break seed (0 = pure deterministic order)")
    args = parser.parse_args(argv)

    cmd = os.environ.get("SEALBENCH_VISIBLE_CMD", "").strip()
    if not cmd:
        raise ContractError("SEALBENCH_VISIBLE_CMD is not set")
    workspace = Path(os.environ.get("SEALBENCH_WORKSPACE") or os.getcwd()).resolve()
    if not workspace.is_dir():
        raise ContractError(f"workspace {workspace} is not a directory")
    out = os.environ.get("SEALBENCH_OUT")
    prompt = os.environ.get("SEALBENCH_PROMPT")
    return Settings(
        workspace=workspace,
        visible_cmd=cmd,
        out_dir=Path(out) if out else None,
        prompt_path=Path(prompt) if prompt else None,
        time_box_s=float(_int_env("SEALBENCH_TIME_BOX_S", 600)),
        max_steps=_int_env("SEALBENCH_MAX_STEPS", 10**6),
        max_candidates=max(1, args.max_candidates),
        lite=args.lite,
        seed=args.seed,
    )


def read_prompt(settings: Settings) -> str:
    if settings.prompt_path is None:
        return ""
    try:
        return settings.prompt_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def split_lines(text: str) -> list[str]:
    """Split like the Python tokenizer (\\n, \\r\\n, \\r), keeping line ends."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


# --------------------------------------------------------------- running the suite

_SUMMARY_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_NODE_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?: - .*)?$")
_FRAME = re.compile(r"^(?P<path>[^\s:][^:\n]*?\.py):(?P<line>\d+):")
_NATIVE_FRAME = re.compile(r'File "(?P<path>[^"]+\.py)", line (?P<line>\d+)')
_SECTION = re.compile(r"^_{3,} (.+?) _{3,}$")


#: Terminal colour and style codes (a suite's config may force ``--color=yes``).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape codes."""
    return _ANSI.sub("", text)


def parse_output(output: str) -> tuple[int, int, int, list[str]]:
    """Return (passed, failed, errors, failing node ids) from pytest -q output (colour codes
    ignored)."""
    output = strip_ansi(output)
    passed = failed = errors = 0
    for line in reversed(output.splitlines()):
        if _SUMMARY_COUNT.search(line) and (" in " in line or line.startswith("=")):
            for n, kind in _SUMMARY_COUNT.findall(line):
                if kind == "passed":
                    passed = int(n)
                elif kind == "failed":
                    failed = int(n)
                elif kind.startswith("error"):
                    errors = int(n)
            break
    ids = [m.group(1) for m in map(_NODE_LINE.match, output.splitlines()) if m]
    return passed, failed, errors, list(dict.fromkeys(ids))


def run_visible(settings: Settings, timeout: float) -> Outcome:
    """Run SEALBENCH_VISIBLE_CMD once (in its own process group, so a timeout kills it all)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    proc = subprocess.Popen(settings.visible_cmd, shell=True, cwd=settings.workspace, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=max(0.5, timeout))
        timed_out = False
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
        out, _ = proc.communicate()
        timed_out = True
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        raise
    out = strip_ansi(out or "")  # what the agent reads: frames, ids and counts without colour codes
    passed, failed, errors, ids = parse_output(out)
    return Outcome(proc.returncode if not timed_out else -9, passed, failed, errors, out or "",
                   time.monotonic() - start, timed_out, ids)


# ------------------------------------------------------------------ the workspace


class Workspace:
    """Source files of the workspace, with byte-exact snapshots for reverting."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.original: dict[Path, bytes] = {}
        self.sources: dict[Path, str] = {}
        self.trees: dict[Path, ast.Module] = {}
        self.tests: dict[Path, ast.Module] = {}
        self.pycache_before = set(self._caches())
        for path in self._python_files():
            raw = path.read_bytes()
            try:
                text = raw.decode("utf-8")
                tree = ast.parse(text, filename=str(path))
            except (UnicodeDecodeError, SyntaxError, ValueError):
                tree = None
            if self.is_visible_test(path):
                if tree is not None:
                    self.tests[path] = tree
                continue
            if self.is_test_like(path):
                continue
            self.original[path] = raw
            self.sources[path] = raw.decode("utf-8", errors="surrogateescape")
            if tree is not None:
                self.trees[path] = tree

    def _python_files(self) -> Iterator[Path]:
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel = Path(dirpath).relative_to(self.root)
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                                 and (d not in SKIP_DIRS or (d == "visible_tests" and rel == Path("."))))
            for name in sorted(filenames):
                if name.endswith(".py"):
                    yield Path(dirpath) / name

    def _caches(self) -> Iterator[Path]:
        for dirpath, dirnames, _ in os.walk(self.root):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            for d in dirnames:
                if d in ("__pycache__", ".pytest_cache"):
                    yield Path(dirpath) / d

    def is_visible_test(self, path: Path) -> bool:
        try:
            return path.resolve().relative_to(self.root).parts[0] == "visible_tests"
        except (ValueError, IndexError):
            return False

    @staticmethod
    def is_test_like(path: Path) -> bool:
        name = path.name
        return name == "conftest.py" or name.startswith("test_") or name.endswith("_test.py")

    def rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def resolve(self, raw: str) -> Path | None:
        """Map a path printed by pytest to a workspace file, or None if outside."""
        p = Path(raw)
        p = (p if p.is_absolute() else self.root / p)
        try:
            p = p.resolve()
            p.relative_to(self.root)
        except (OSError, ValueError):
            p = None
        if p is not None and p.is_file():
            return p
        # pytest may print paths relative to another rootdir: match by suffix
        tail = Path(raw).as_posix().lstrip("./")
        matches = [f for f in (*self.original, *self.tests) if f.as_posix().endswith("/" + tail)]
        return matches[0] if len(matches) == 1 else None

    def lines(self, path: Path) -> list[str]:
        return split_lines(self.sources[path])

    def write_line(self, path: Path, lineno: int, new_line: str) -> None:
        lines = self.lines(path)
        lines[lineno - 1] = new_line
        text = "".join(lines)
        self.sources[path] = text
        path.write_bytes(text.encode("utf-8", errors="surrogateescape"))

    def restore(self, path: Path, text: str) -> None:
        self.sources[path] = text
        path.write_bytes(text.encode("utf-8", errors="surrogateescape"))

    def restore_all(self) -> None:
        for path, raw in self.original.items():
            if path.read_bytes() != raw:
                path.write_bytes(raw)
            self.sources[path] = raw.decode("utf-8", errors="surrogateescape")

    def changed(self) -> bool:
        return any(path.read_bytes() != raw for path, raw in self.original.items())

    def clean_caches(self) -> None:
        for cache in list(self._caches()):
            if cache not in self.pycache_before:
                shutil.rmtree(cache, ignore_errors=True)


# ------------------------------------------------------------- fault localisation


def extract_frames(ws: Workspace, output: str) -> tuple[list[tuple[Frame, float]], list[Frame]]:
    """Source frames ranked (innermost first, counted over failing tests) and test-file frames."""
    sections: list[list[Frame]] = [[]]
    test_frames: list[Frame] = []
    for line in output.splitlines():
        if _SECTION.match(line):
            sections.append([])
            continue
        m = _FRAME.match(line) or _NATIVE_FRAME.search(line)
        if not m:
            continue
        path = ws.resolve(m.group("path"))
        if path is None:
            continue
        frame = Frame(path, int(m.group("line")))
        if path in ws.original:
            sections[-1].append(frame)
        elif ws.is_visible_test(path):
            test_frames.append(frame)
    score: dict[Frame, float] = {}
    for sec in sections:
        for depth, frame in enumerate(reversed(list(dict.fromkeys(sec)))):
            score[frame] = score.get(frame, 0.0) + 1.0 / (1 + depth)
    ranked = sorted(score.items(), key=lambda kv: (-kv[1], str(kv[0].path), kv[0].lineno))
    return ranked, test_frames


def called_names(node: ast.AST) -> list[str]:
    """Names of called functions/methods/classes inside ``node`` (source order)."""
    names: list[str] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            f = sub.func
            if isinstance(f, ast.Name):
                names.append(f.id)
            elif isinstance(f, ast.Attribute):
                names.append(f.attr)
    return list(dict.fromkeys(names))


def attribute_names(node: ast.AST) -> list[str]:
    return list(dict.fromkeys(s.attr for s in ast.walk(node) if isinstance(s, ast.Attribute)))


def import_aliases(tree: ast.Module) -> dict[str, str]:
    return {a.asname: a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
            for a in n.names if a.asname}


@dataclass
class TestInfo:
    names: set[str]
    attrs: set[str]


def test_functions(ws: Workspace) -> dict[str, TestInfo]:
    """Map 'file::[Class::]name' (relative path) -> names the test reaches (helpers/fixtures expanded)."""
    out: dict[str, TestInfo] = {}
    for path, tree in ws.tests.items():
        aliases = import_aliases(tree)
        local: dict[str, ast.AST] = {}
        for n in ast.walk(tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test"):
                local.setdefault(n.name, n)

        def reach(fn: ast.AST, depth: int = 0) -> TestInfo:
            names = set(called_names(fn))
            attrs = set(attribute_names(fn))
            params = [a.arg for a in fn.args.args] if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
            if depth < 2:
                for helper in sorted((names | set(params)) & local.keys()):
                    sub = reach(local[helper], depth + 1)
                    names |= sub.names
                    attrs |= sub.attrs
            names = {aliases.get(n, n) for n in names}
            return TestInfo(names, attrs)

        rel = ws.rel(path)
        for n in tree.body:
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test"):
                out[f"{rel}::{n.name}"] = reach(n)
            elif isinstance(n, ast.ClassDef) and n.name.startswith("Test"):
                for m in n.body:
                    if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"):
                        out[f"{rel}::{n.name}::{m.name}"] = reach(m)
    return out


def normalise_nodeid(nodeid: str, known: Iterable[str]) -> str | None:
    base = re.sub(r"\[.*\]$", "", nodeid)
    known = list(known)
    if base in known:
        return base
    tail = base.split("/")[-1]
    for k in known:
        if k.endswith("/" + tail) or k == tail:
            return k
    return None


@dataclass
class DefIndex:
    """Function / class definitions of the source files, by name."""

    funcs: dict[str, list[tuple[Path, ast.AST]]] = field(default_factory=dict)
    classes: dict[str, list[tuple[Path, ast.ClassDef]]] = field(default_factory=dict)
    constants: dict[str, list[tuple[Path, ast.stmt]]] = field(default_factory=dict)
    enclosing: dict[Path, list[ast.AST]] = field(default_factory=dict)

    @classmethod
    def build(cls, ws: Workspace) -> DefIndex:
        idx = cls()
        for path, tree in ws.trees.items():
            idx.enclosing[path] = []
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    idx.funcs.setdefault(n.name, []).append((path, n))
                    idx.enclosing[path].append(n)
                elif isinstance(n, ast.ClassDef):
                    idx.classes.setdefault(n.name, []).append((path, n))
            for stmt in tree.body:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else \
                    [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
                for t in targets:
                    if isinstance(t, ast.Name):
                        idx.constants.setdefault(t.id, []).append((path, stmt))
        return idx

    def resolve(self, name: str) -> list[tuple[Path, ast.AST]]:
        found = list(self.funcs.get(name, []))
        for path, c in self.classes.get(name, []):
            inits = [m for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and m.name in ("__init__", "__post_init__", "__new__")]
            found.extend((path, m) for m in inits)
            fields = [s for s in c.body if isinstance(s, (ast.Assign, ast.AnnAssign))]
            found.extend((path, s) for s in fields)
        return found

    def innermost(self, path: Path, lineno: int) -> ast.AST | None:
        best = None
        for n in self.enclosing.get(path, []):
            if n.lineno <= lineno <= (n.end_lineno or n.lineno):
                if best is None or n.lineno >= best.lineno:
                    best = n
        return best


def node_lines(node: ast.AST) -> list[int]:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    body = getattr(node, "body", None)
    lines = list(range(start, (node.end_lineno or node.lineno) + 1))
    # skip the docstring
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        doc = set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
        lines = [ln for ln in lines if ln not in doc]
    return lines


def localise(ws: Workspace, outcome: Outcome, lite: bool) -> list[Unit]:
    """Rank suspicious line groups: frame lines, then reached functions, then callees."""
    idx = DefIndex.build(ws)
    frames, test_frames = extract_frames(ws, outcome.output)
    units: list[Unit] = []
    seen_nodes: set[tuple[Path, int, int]] = set()

    def add_node(path: Path, node: ast.AST, tier: int, score: float, label: str) -> None:
        key = (path, node.lineno, node.end_lineno or node.lineno)
        if key in seen_nodes:
            return
        seen_nodes.add(key)
        units.append(Unit(path, node_lines(node), tier, score, label))

    for frame, score in frames:
        units.append(Unit(frame.path, [frame.lineno], 0, score, f"frame {ws.rel(frame.path)}:{frame.lineno}"))

    # tests: failing vs passing, Ochiai per reached name
    tests = test_functions(ws)
    failing = {k for k in (normalise_nodeid(i, tests) for i in outcome.failing_ids) if k}
    if not failing:
        failing = set(tests)
    passing = set(tests) - failing
    hot: set[str] = set()
    for tf in test_frames:
        tree = ws.tests.get(tf.path)
        if tree is None:
            continue
        for n in ast.walk(tree):
            if isinstance(n, ast.stmt) and n.lineno <= tf.lineno <= (n.end_lineno or n.lineno) \
                    and not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                hot.update(called_names(n))
        hot = {import_aliases(tree).get(h, h) for h in hot}

    def ochiai(name: str, attr: bool = False) -> float:
        get = (lambda t: t.attrs) if attr else (lambda t: t.names)
        ef = sum(1 for t in failing if name in get(tests[t]))
        ep = sum(1 for t in passing if name in get(tests[t]))
        return 0.0 if ef == 0 else ef / math.sqrt(len(failing) * (ef + ep))

    direct: list[tuple[float, int, str, Path, ast.AST]] = []
    order = 0
    for frame, score in frames:  # function enclosing each frame line
        fn = idx.innermost(frame.path, frame.lineno)
        if fn is not None:
            direct.append((-(2.0 + score), order, getattr(fn, "name", "?"), frame.path, fn))
            order += 1
    names = sorted({n for t in failing for n in tests[t].names})
    for name in names:
        defs = idx.resolve(name)
        s = ochiai(name) + (1.0 if name in hot else 0.0)
        for path, node in defs:
            direct.append((-s / len(defs), order, name, path, node))
            order += 1
    if not lite:  # attribute access (properties) on the objects under test
        for name in sorted({a for t in failing for a in tests[t].attrs} - set(names)):
            for path, node in idx.funcs.get(name, []):
                direct.append((-0.5 * ochiai(name, attr=True), order, name, path, node))
                order += 1
    direct.sort(key=lambda d: (d[0], d[1]))
    first_direct = len(units)
    for neg, _, name, path, node in direct:
        add_node(path, node, 1, -neg, f"def {name}")
    if lite:
        return units

    for unit in list(units[first_direct:]):  # one level of callees + module constants used
        tree = ws.trees.get(unit.path)
        node = next((n for n in idx.enclosing.get(unit.path, []) if n.lineno == min(unit.lines)
                     or any(d.lineno == min(unit.lines) for d in getattr(n, "decorator_list", []))), None)
        if tree is None or node is None:
            continue
        for name in called_names(node):
            for path, callee in idx.resolve(name):
                add_node(path, callee, 2, unit.score * 0.5, f"callee {name}")
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        for name in sorted(used & idx.constants.keys()):
            for path, stmt in idx.constants[name]:
                add_node(path, stmt, 2, unit.score * 0.4, f"const {name}")
    return units


# ------------------------------------------------------------------------ mutation

COMPARE_SWAPS = {"<": ["<=", ">"], "<=": ["<", ">="], ">": [">=", "<"], ">=": [">", "<="],
                 "==": ["!="], "!=": ["=="]}
ARITH_SWAPS = {"+": ["-"], "-": ["+"], "*": ["/"], "/": ["*", "//"], "//": ["/"],
               "+=": ["-="], "-=": ["+="]}
RARE_ARITH_SWAPS = {"+": ["*"], "*": ["+"], "%": ["//"], "//": ["%"]}
NAME_SWAPS = {"and": "or", "or": "and", "True": "False", "False": "True", "min": "max", "max": "min"}
STR_METHODS = {"split", "startswith", "endswith", "replace", "find", "index", "partition", "rsplit",
               "strip", "lower", "upper", "count", "join", "format", "encode", "isdigit", "rstrip", "lstrip"}


def byte_to_char(line: str, col: int) -> int:
    return len(line.encode("utf-8", errors="surrogateescape")[:col].decode("utf-8", errors="surrogateescape"))


class LineMutator:
    """Generates single-line mutants of one source file."""

    def __init__(self, text: str, tree: ast.Module | None, hints: set[str]) -> None:
        self.lines = split_lines(text)
        self.tree = tree
        self.hints = hints
        self.tokens: dict[int, list[tokenize.TokenInfo]] = {}
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.start[0] == tok.end[0]:
                    self.tokens.setdefault(tok.start[0], []).append(tok)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
        self.nodes: dict[int, list[ast.AST]] = {}
        if tree is not None:
            for n in ast.walk(tree):
                if hasattr(n, "lineno") and n.lineno == getattr(n, "end_lineno", None):
                    self.nodes.setdefault(n.lineno, []).append(n)

    def tier(self, default: int, *keys: str) -> int:
        return 0 if any(k in self.hints for k in keys) else default

    def mutants(self, lineno: int) -> list[Mutation]:
        if not 1 <= lineno <= len(self.lines):
            return []
        line = self.lines[lineno - 1]
        muts: list[Mutation] = []
        toks = self.tokens.get(lineno, [])

        def splice(c0: int, c1: int, repl: str) -> str:
            return line[:c0] + repl + line[c1:]

        for i, tok in enumerate(toks):
            c0, c1 = tok.start[1], tok.end[1]
            if tok.type == tokenize.OP and tok.string in COMPARE_SWAPS:
                for r in COMPARE_SWAPS[tok.string]:
                    # boundary swaps (< vs <=) are far more common than inverted directions (< vs >)
                    flip = {tok.string, r} in ({"<", ">"}, {"<=", ">="})
                    muts.append(Mutation(f"cmp {tok.string}->{r}", TIER_LOGIC if flip else TIER_COMPARE,
                                         splice(c0, c1, r)))
            elif tok.type == tokenize.OP and tok.string in ARITH_SWAPS:
                for r in ARITH_SWAPS[tok.string]:
                    muts.append(Mutation(f"arith {tok.string}->{r}", self.tier(TIER_LOGIC, "arith"),
                                         splice(c0, c1, r)))
                for r in RARE_ARITH_SWAPS.get(tok.string, []):
                    muts.append(Mutation(f"arith {tok.string}->{r}", TIER_CALL, splice(c0, c1, r)))
            elif tok.type == tokenize.NUMBER and re.fullmatch(r"\d+", tok.string):
                n = int(tok.string)
                for v in dict.fromkeys([n + 1, n - 1] + ([1] if n == 0 else [0] if n == 1 else [])):
                    if v >= 0 or n == 0:
                        muts.append(Mutation(f"const {n}->{v}", self.tier(TIER_OFF_BY_ONE, "boundary"),
                                             splice(c0, c1, str(v))))
            elif tok.type == tokenize.NAME and tok.string in NAME_SWAPS:
                r = NAME_SWAPS[tok.string]
                t = TIER_LOGIC if tok.string in ("and", "or", "True", "False") else self.tier(TIER_LOGIC, "minmax")
                muts.append(Mutation(f"swap {tok.string}->{r}", t, splice(c0, c1, r)))
            elif tok.type == tokenize.NAME and tok.string == "not":
                end = toks[i + 1].start[1] if i + 1 < len(toks) and toks[i + 1].start[0] == lineno else c1
                muts.append(Mutation("remove not", TIER_LOGIC, splice(c0, end, "")))
            elif tok.type == tokenize.NAME and tok.string in ("in", "is"):
                prev = toks[i - 1].string if i else ""
                nxt = toks[i + 1].string if i + 1 < len(toks) else ""
                if tok.string == "in" and prev != "not" and not any(t.string == "for" for t in toks[:i]):
                    muts.append(Mutation("insert not in", TIER_LOGIC, splice(c0, c1, "not in")))
                if tok.string == "is" and nxt != "not":
                    muts.append(Mutation("insert is not", TIER_LOGIC, splice(c0, c1, "is not")))
        muts.extend(self._ast_mutants(lineno, line))
        unique: dict[str, Mutation] = {}
        for m in muts:
            if m.new_line != line and m.new_line not in unique:
                unique[m.new_line] = m
        return list(unique.values())

    def _ast_mutants(self, lineno: int, line: str) -> list[Mutation]:
        muts: list[Mutation] = []

        def seg(n: ast.AST) -> tuple[int, int, str]:
            c0, c1 = byte_to_char(line, n.col_offset), byte_to_char(line, n.end_col_offset)
            return c0, c1, line[c0:c1]

        def plus(n: ast.AST, delta: str) -> str:
            c0, c1, s = seg(n)
            simple = isinstance(n, (ast.Name, ast.Attribute, ast.Call, ast.Subscript, ast.Constant)) or \
                (isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)))
            return line[:c0] + (s if simple else f"({s})") + f" {delta} 1" + line[c1:]

        def wrap(n: ast.AST, pre: str, post: str) -> str:
            c0, c1, s = seg(n)
            return line[:c0] + pre + s + post + line[c1:]

        def is_int_const(n: ast.AST) -> bool:
            return isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool)

        for n in self.nodes.get(lineno, []):
            if isinstance(n, ast.Subscript):
                sl = n.slice
                parts = [sl.lower, sl.upper] if isinstance(sl, ast.Slice) else [sl]
                for p in parts:
                    if p is None or is_int_const(p) or isinstance(p, (ast.Tuple, ast.Slice)) \
                            or (isinstance(p, ast.Constant) and isinstance(p.value, str)) \
                            or getattr(p, "lineno", None) != lineno:
                        continue
                    for d in ("+", "-"):
                        muts.append(Mutation(f"bound {d}1", self.tier(TIER_OFF_BY_ONE, "boundary"), plus(p, d)))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "range" and n.args:
                stop = n.args[0] if len(n.args) == 1 else n.args[1]
                if not is_int_const(stop):
                    muts.append(Mutation("range stop +1", self.tier(TIER_OFF_BY_ONE, "boundary"), plus(stop, "+")))
                if len(n.args) >= 2 and not is_int_const(n.args[0]):
                    muts.append(Mutation("range start -1", self.tier(TIER_OFF_BY_ONE, "boundary"),
                                         plus(n.args[0], "-")))
            elif isinstance(n, (ast.If, ast.While, ast.IfExp, ast.Assert)):
                test = n.test
                if getattr(test, "lineno", None) == lineno and not (
                        isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
                    muts.append(Mutation("insert not", TIER_LOGIC, wrap(test, "not (", ")")))
            if isinstance(n, (ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                v = n.value
                if getattr(v, "lineno", None) != lineno:
                    continue
                has_div = any(isinstance(b, ast.BinOp) and isinstance(b.op, (ast.Div, ast.Mult))
                              for b in ast.walk(v))
                if has_div:
                    t = self.tier(TIER_CALL, "round")
                    muts.append(Mutation("wrap round", t, wrap(v, "round(", ")")))
                    muts.append(Mutation("wrap round2", t, wrap(v, "round(", ", 2)")))
                if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Sub):
                    muts.append(Mutation("wrap abs", self.tier(TIER_CALL, "abs"), wrap(v, "abs(", ")")))
                if isinstance(n, ast.Return) and isinstance(v, (ast.Compare, ast.BoolOp)):
                    muts.append(Mutation("insert not", TIER_LOGIC, wrap(v, "not (", ")")))
        # .strip() / .lower() on string-ish names
        strish: list[ast.Name] = []
        for n in self.nodes.get(lineno, []):
            cands: list[ast.AST] = []
            if isinstance(n, ast.Attribute) and n.attr in STR_METHODS:
                cands.append(n.value)
            elif isinstance(n, ast.Compare):
                cands.extend([n.left, *n.comparators])
            elif isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Slice):
                cands.append(n.slice)
            elif isinstance(n, ast.Return) and n.value is not None:
                cands.append(n.value)
            elif isinstance(n, ast.Call):
                cands.extend(n.args)
            elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                cands.append(n.elt)
            elif isinstance(n, ast.DictComp):
                cands.append(n.key)
            strish.extend(c for c in cands if isinstance(c, ast.Name) and isinstance(c.ctx, ast.Load)
                          and getattr(c, "lineno", None) == lineno)
        stringy = any(t.type == tokenize.STRING for t in self.tokens.get(lineno, [])) or \
            any(isinstance(n, ast.Attribute) and n.attr in STR_METHODS for n in self.nodes.get(lineno, [])) or \
            bool(self.hints & {"lower", "strip"})
        for n in self.nodes.get(lineno, []) if stringy else []:
            v = getattr(n, "value", None) if isinstance(n, (ast.Return, ast.Assign)) else None
            if isinstance(v, (ast.Call, ast.Subscript, ast.Attribute)) and getattr(v, "lineno", None) == lineno:
                muts.append(Mutation("add .strip()", self.tier(TIER_CALL, "strip"), wrap(v, "", ".strip()")))
                muts.append(Mutation("add .lower()", self.tier(TIER_CALL, "lower"), wrap(v, "", ".lower()")))
        seen: set[tuple[int, int]] = set()
        for name in strish if stringy else []:
            if (name.col_offset, name.end_col_offset) in seen or len(seen) >= 3:
                continue
            seen.add((name.col_offset, name.end_col_offset))
            muts.append(Mutation(f"add {name.id}.strip()", self.tier(TIER_CALL, "strip"), wrap(name, "", ".strip()")))
            muts.append(Mutation(f"add {name.id}.lower()", self.tier(TIER_CALL, "lower"), wrap(name, "", ".lower()")))
        return muts


def prompt_hints(prompt: str) -> set[str]:
    """A handful of keyword hints from the symptom description (no NLP, just words)."""
    p = prompt.lower()
    table = {
        "lower": ("case-insensitive", "case insensitive", "case-sensitive", "case sensitive", "uppercase",
                  "upper-case", "lowercase", "lower-case", "capital", "letter case", "regardless of case",
                  "ignore case", "ignoring case", "mixed case", "mixed-case"),
        "strip": ("whitespace", "trailing space", "leading space", "spaces", "strip", "padding"),
        "round": ("round", "decimal", "cents", "precision"),
        "abs": ("negative", "absolute"),
        "boundary": ("off by one", "off-by-one", "boundary", "inclusive", "exclusive", "last element",
                     "first element", "edge", "one too", "limit"),
        "minmax": ("minimum", "maximum", "largest", "smallest", "clamp"),
    }
    return {k for k, words in table.items() if any(w in p for w in words)}


def compiles(text: str, path: Path) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
    return True


def generate_candidates(ws: Workspace, units: list[Unit], hints: set[str], lite: bool,
                        tried: set[tuple[str, int, str, str]], seed: int) -> list[Candidate]:
    """All compiling single-line mutants of the ranked units, best first."""
    mutators: dict[Path, LineMutator] = {}
    scored: list[tuple[float, int, int, int, Candidate]] = []
    seen: set[tuple[str, int, str, str]] = set()
    for ui, unit in enumerate(units):
        if unit.path not in ws.sources:
            continue
        mut = mutators.get(unit.path)
        if mut is None:
            mut = mutators[unit.path] = LineMutator(ws.sources[unit.path], ws.trees.get(unit.path), hints)
        for li, lineno in enumerate(unit.lines):
            for oi, m in enumerate(mut.mutants(lineno)):
                if lite and not m.operator.startswith("cmp"):
                    continue
                old = mut.lines[lineno - 1]
                rank = ui + TIER_WEIGHT * m.tier
                cand = Candidate(unit.path, lineno, m.operator, old, m.new_line, rank)
                if cand.key in seen or cand.key in tried:
                    continue
                seen.add(cand.key)
                scored.append((rank, ui, li, oi, cand))
    if seed:
        rng = random.Random(seed)
        scored = [(r + rng.random() * 0.5, ui, li, oi, c) for r, ui, li, oi, c in scored]
    scored.sort(key=lambda s: s[:4])
    out: list[Candidate] = []
    for *_, cand in scored:
        lines = list(mutators[cand.path].lines)
        lines[cand.lineno - 1] = cand.new_line
        if compiles("".join(lines), cand.path):
            out.append(cand)
    return out


# -------------------------------------------------------------------------- search


class Search:
    """Greedy generate-and-validate loop over the ranked candidates."""

    def __init__(self, settings: Settings, ws: Workspace) -> None:
        self.s = settings
        self.ws = ws
        self.start = time.monotonic()
        self.steps = 0
        self.log: list[dict[str, object]] = []
        self.hints = prompt_hints(read_prompt(settings))

    # -- budget
    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def out_of_time(self) -> bool:
        return self.elapsed() > TIME_FRACTION * self.s.time_box_s

    def run(self, timeout: float) -> Outcome:
        self.steps += 1
        hard = max(1.0, 0.95 * self.s.time_box_s - self.elapsed())
        return run_visible(self.s, min(timeout, hard))

    def record(self, cand: Candidate | None, outcome: Outcome, accepted: bool) -> None:
        entry: dict[str, object] = {
            "step": self.steps,
            "file": self.ws.rel(cand.path) if cand else None,
            "line": cand.lineno if cand else None,
            "operator": cand.operator if cand else "baseline",
            "failed": outcome.failing if outcome.failing != UNSOLVED else None,
            "passed": outcome.passed,
            "timed_out": outcome.timed_out,
            "accepted": accepted,
            "seconds": round(outcome.seconds, 3),
        }
        if cand:
            entry["new"] = cand.new_line.strip()
        self.log.append(entry)

    # -- main loop
    def solve(self) -> tuple[bool, Outcome]:
        """Rounds of single-edit search; chain the best improving edit between rounds."""
        baseline = self.run(timeout=max(30.0, 0.5 * self.s.time_box_s))
        self.record(None, baseline, False)
        if baseline.green:
            return True, baseline
        per_run = max(3.0, 5.0 * baseline.seconds + 2.0)
        best = baseline
        tried: set[tuple[str, int, str, str]] = set()
        budget = LITE_MAX_CANDIDATES if self.s.lite else 10**9
        evaluated = 0
        improvers: list[Candidate] = []
        while True:
            units = localise(self.ws, best, self.s.lite)
            cands = generate_candidates(self.ws, units, self.hints, self.s.lite, tried, self.s.seed)
            # edits that improved on their own last round are the best partners of the kept edit
            cands = [c for c in improvers if self.ws.lines(c.path)[c.lineno - 1] == c.old_line] + cands
            improvers = []
            left = min(budget - evaluated, self.s.step_cap - self.steps)
            # a round may stop early (to leave room for chaining) once it has an improving edit
            patience = max(CHAIN_MIN_ROUND, left // 2)
            round_best: tuple[Candidate, Outcome] | None = None
            for i, cand in enumerate(cands):
                if self.steps >= self.s.step_cap or evaluated >= budget or self.out_of_time():
                    break
                if round_best is not None and i >= patience:
                    break
                tried.add(cand.key)
                before = self.ws.sources[cand.path]
                self.ws.write_line(cand.path, cand.lineno, cand.new_line)
                outcome = self.run(per_run)
                evaluated += 1
                if outcome.green:
                    self.record(cand, outcome, True)
                    return True, outcome
                self.record(cand, outcome, False)
                self.ws.restore(cand.path, before)
                if not self.s.lite and outcome.better_than(best):
                    improvers.append(cand)
                    if round_best is None or outcome.better_than(round_best[1]):
                        round_best = (cand, outcome)
            if round_best is None:
                return False, best
            cand, best = round_best  # keep the best improving edit and continue from it
            self.ws.write_line(cand.path, cand.lineno, cand.new_line)
            tried.add((str(cand.path), cand.lineno, cand.new_line, cand.old_line))  # never undo it
            self.log.append({"step": self.steps, "file": self.ws.rel(cand.path), "line": cand.lineno,
                             "operator": "keep " + cand.operator, "failed": best.failing, "passed": best.passed,
                             "accepted": True, "new": cand.new_line.strip()})


def write_reports(settings: Settings, steps: int, log: list[dict[str, object]]) -> None:
    if settings.out_dir is None:
        return
    try:
        settings.out_dir.mkdir(parents=True, exist_ok=True)
        contract.write_report(settings.out_dir, contract.USAGE_FILE,
                              {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "steps": steps})
        # The session stamp of an offline process: no model server, no queue, no quota, no
        # route. These are facts about this agent, not defaults: it calls no service.
        contract.write_report(settings.out_dir, contract.STAMP_FILE,
                              {"server_id": "offline:sealbench.agents.repair", "queue_ms": 0, "retries": 0,
                               "quota_state": "unmetered", "route_changed": False})
        # Nobody can steer it: it reads no input after the clock starts (an empty file = 0 steers).
        (settings.out_dir / contract.STEERS_FILE).touch()
        with open(settings.out_dir / "repair_log.jsonl", "a", encoding="utf-8") as fh:
            for entry in log:
                fh.write(json.dumps(entry) + "\n")
    except OSError as exc:
        print(f"repair: could not write reports: {exc}", file=sys.stderr)


def _raise_interrupted(signum: int, frame: object) -> None:
    raise Interrupted(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    try:
        settings = load_settings(argv)
    except ContractError as exc:
        print(f"repair: {exc}", file=sys.stderr)
        return 2
    ws = Workspace(settings.workspace)
    search = Search(settings, ws)
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    except ValueError:  # not in the main thread
        pass
    solved = False
    best: Outcome | None = None
    baseline_failing = None
    try:
        solved, best = search.solve()
    except Interrupted:
        solved = False
    finally:
        if search.log and search.log[0]["operator"] == "baseline":
            baseline_failing = search.log[0]["failed"]
        if not solved:
            keep = (best is not None and baseline_failing is not None and best.failing < baseline_failing) or \
                (best is not None and baseline_failing is None and best.failing < UNSOLVED)
            if not keep or not ws.changed():
                ws.restore_all()
        ws.clean_caches()
        write_reports(settings, search.steps, search.log)
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    status = "green" if solved else ("partial" if ws.changed() else "unsolved")
    print(f"repair: {status} after {search.steps} visible runs in {search.elapsed():.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
