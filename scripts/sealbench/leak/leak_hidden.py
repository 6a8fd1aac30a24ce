"""The hidden-test check of ``leak_check``: does ``prompt.md`` or ``repo/`` show the task's hidden tests?

Not a stage. The worker reads ``prompt.md`` and ``repo/``; ``hidden_test_hits`` finds there what
of ``hidden_tests/`` is distinctive: a test name, an expected value of an assertion (in the
prompt) or a line (whitespace-collapsed, >= ``HIDDEN_MIN_LINE`` characters); and, whatever
their length, a hidden test's body or its assertions, compared as normalized ASTs
(``leak_ast``, issue 26, point 5). What the visible tests also contain is not secret, nor is
boilerplate (imports, set-up, generic asserts); the rules in full are in ``hidden_test_hits``'s
docstring (issue 11, point 9).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import leak_ast
from .leak_text import _read_text

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

    kind: str      # test_name | assert_literal | line | test_body | assert
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


def _repo_hits(repo: _Readable, sec: _Secrets, code_hits: list[HiddenHit]) -> list[HiddenHit]:
    """Names and lines of the hidden tests in repo/ files, with ``code_hits`` (in path order).
    Literals and numbers found in repo/ are not secret (excluded before), so they are not
    looked for here."""
    order = {rel: i for i, (rel, _) in enumerate(repo.files)}
    hits: list[HiddenHit] = list(code_hits)
    for name, src in sec.names.items():
        hits.extend(HiddenHit("test_name", f"repo/{rel}", src, name) for rel in repo.where(name, word=True))
    for line, src in sec.lines.items():
        hits.extend(HiddenHit("line", f"repo/{rel}", src, _short(line)) for rel in repo.where(line))
    kinds = {"test_name": 0, "line": 1, "test_body": 2, "assert": 3}
    return sorted(hits, key=lambda h: (order[h.file[len("repo/"):]], kinds[h.kind]))


def _code_hits(file: str, hits: list[leak_ast.CodeHit]) -> list[HiddenHit]:
    return [HiddenHit(h.kind, file, h.source, _short(h.text)) for h in hits]


def _repo_code(code: leak_ast.HiddenCode, repo: _Readable) -> tuple[list[HiddenHit], leak_ast.Found]:
    """The AST hits of repo/ (``leak_ast.code_hits`` per file) and everything of the hidden code
    any repo file holds. Only ``.py`` files (parsed whole, once) and ``.md``/``.rst``/``.txt``
    files (read as prose) that have every identifier of some hidden unit are read, and of a
    ``.py`` file only the top-level blocks that have them are parsed (``leak_ast.file_index``)."""
    hits: list[HiddenHit] = []
    seen = leak_ast.Found()
    if not code:
        return hits, seen
    for rel, text in repo.files:
        is_py = rel.endswith(".py")
        if not (is_py or rel.endswith(leak_ast.PROSE_SUFFIXES)) or not leak_ast.may_hold(code, text):
            continue
        found = leak_ast.find(code, leak_ast.file_index(code, text, is_py))
        seen.defs |= found.defs
        seen.bodies |= found.bodies
        seen.asserts |= found.asserts
        hits.extend(_code_hits(f"repo/{rel}", leak_ast.code_hits(code, found)))
    return hits, seen


def _prompt_code_hits(prompt: str, code: leak_ast.HiddenCode, in_repo: leak_ast.Found) -> list[HiddenHit]:
    """The AST hits of the prompt; what repo/ also holds is not secret there (unless a whole def)."""
    if not code or not leak_ast.may_hold(code, prompt):
        return []
    found = leak_ast.find(code, leak_ast.CodeIndex(leak_ast.code_trees(prompt), code))
    return _code_hits("prompt.md", leak_ast.code_hits(code, found, in_repo))


def hidden_code_of(task_dir: Path, max_bytes: int = HIDDEN_MAX_BYTES) -> leak_ast.HiddenCode:
    """The hidden test functions and assertions of a task that its visible tests do not show."""
    task_dir = Path(task_dir)
    return leak_ast.hidden_code(_text_files(task_dir / "hidden_tests", max_bytes),
                                _text_files(task_dir / "visible_tests", max_bytes))


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
    give lines only (plus ``def test…``/``class Test…`` names for ``.py``). Two more kinds
    come from ``leak_ast`` and do not depend on length: ``test_body`` (a hidden test function —
    its ``def`` with the same name and body, or its body under any name when that has two or
    more statements or checks a specific constant) and ``assert`` (a hidden assertion that
    checks a specific constant, or two or more non-generic ones in one place), compared as
    normalized ASTs in the Python of the prompt and of repo/ ``.py``/``.md``/``.rst``/``.txt``
    files, so whitespace, comments, quoting and line breaks do not matter; the text names the
    test (``test_a: assert f(1) == 2``).

    Not secret, so never a hit: anything the visible tests also contain, literals and numbers
    that ``repo/`` contains, and boilerplate lines (imports, docstrings, comments, ``def``/
    ``class`` headers of tests or of names ``repo/`` defines, ``sys.path``/``__file__``/
    ``__main__`` set-up, Python lines without a literal such as ``assert result == expected``),
    test bodies and assertions the visible tests contain and, in the prompt, those repo/ holds.
    Files over ``max_bytes`` and binary files are not read. Returns at most ``limit`` hits:
    prompt.md first, then repo/ files in path order.
    """
    task_dir = Path(task_dir)
    hidden = _text_files(task_dir / "hidden_tests", max_bytes)
    if not hidden:
        return []
    visible = _text_files(task_dir / "visible_tests", max_bytes)
    visible_text = "\n".join(_collapse(t) for _, t in visible)
    repo = _Readable(_text_files(task_dir / "repo", max_bytes))
    sec = _hidden_secrets(hidden, visible_text, repo)
    code = leak_ast.hidden_code(hidden, visible)
    if not sec and not code:
        return []
    repo_code_hits, in_repo = _repo_code(code, repo)
    prompt = _read_text(task_dir / "prompt.md")
    hits = _prompt_hits(prompt, sec) + _prompt_code_hits(prompt, code, in_repo)
    if sec.names or sec.lines or repo_code_hits:
        hits.extend(_repo_hits(repo, sec, repo_code_hits))
    return hits[:limit]
