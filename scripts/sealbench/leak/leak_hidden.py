"""The hidden-test check of ``leak_check``: does ``prompt.md`` or ``repo/`` show the task's hidden tests?

Not a stage. The worker reads ``prompt.md`` and ``repo/``; ``hidden_test_hits`` finds there what
of ``hidden_tests/`` is distinctive: a test name, an expected value of an assertion (in the
prompt) or a line (whitespace-collapsed, >= ``HIDDEN_MIN_LINE`` characters); and, whatever
their length, a hidden test's body or its assertions, compared as normalized ASTs (issue 26,
point 5: the module's second part, "hidden code as syntax trees"). What the visible tests also
contain is not secret, nor is boilerplate (imports, set-up, generic asserts); the rules in full
are in ``hidden_test_hits``'s docstring (issue 11, point 9).
"""

from __future__ import annotations

import ast
import codeop
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

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


def _code_hits(file: str, hits: list[CodeHit]) -> list[HiddenHit]:
    return [HiddenHit(h.kind, file, h.source, _short(h.text)) for h in hits]


def _repo_code(code: HiddenCode, repo: _Readable) -> tuple[list[HiddenHit], Found]:
    """The AST hits of repo/ (``code_hits`` per file) and everything of the hidden code
    any repo file holds. Only ``.py`` files (parsed whole, once) and ``.md``/``.rst``/``.txt``
    files (read as prose) that have every identifier of some hidden unit are read, and of a
    ``.py`` file only the top-level blocks that have them are parsed (``file_index``)."""
    hits: list[HiddenHit] = []
    seen = Found()
    if not code:
        return hits, seen
    for rel, text in repo.files:
        is_py = rel.endswith(".py")
        if not (is_py or rel.endswith(PROSE_SUFFIXES)) or not may_hold(code, text):
            continue
        found = find(code, file_index(code, text, is_py))
        seen.defs |= found.defs
        seen.bodies |= found.bodies
        seen.asserts |= found.asserts
        hits.extend(_code_hits(f"repo/{rel}", code_hits(code, found)))
    return hits, seen


def _prompt_code_hits(prompt: str, code: HiddenCode, in_repo: Found) -> list[HiddenHit]:
    """The AST hits of the prompt; what repo/ also holds is not secret there (unless a whole def)."""
    if not code or not may_hold(code, prompt):
        return []
    found = find(code, CodeIndex(code_trees(prompt), code))
    return _code_hits("prompt.md", code_hits(code, found, in_repo))


def hidden_code_of(task_dir: Path, max_bytes: int = HIDDEN_MAX_BYTES) -> HiddenCode:
    """The hidden test functions and assertions of a task that its visible tests do not show."""
    task_dir = Path(task_dir)
    return hidden_code(_text_files(task_dir / "hidden_tests", max_bytes),
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
    come from the syntax trees (below) and do not depend on length: ``test_body`` (a hidden test function —
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
    code = hidden_code(hidden, visible)
    if not sec and not code:
        return []
    repo_code_hits, in_repo = _repo_code(code, repo)
    prompt = _read_text(task_dir / "prompt.md")
    hits = _prompt_hits(prompt, sec) + _prompt_code_hits(prompt, code, in_repo)
    if sec.names or sec.lines or repo_code_hits:
        hits.extend(_repo_hits(repo, sec, repo_code_hits))
    return hits[:limit]


# ----------------------------------------------------------------------------- hidden code as syntax trees
# The hidden-test check's syntax trees: hidden tests found whatever their length (issue 26,
# point 5); ``hidden_test_hits`` calls this part. The line rule above needs a line of at
# least ``HIDDEN_MIN_LINE`` characters, so a hidden file of short tests (``assert f(1) == 2``)
# pasted into the prompt went unseen. Here each hidden test function and each of its assertions
# is normalized — statements as ``ast.dump`` without positions, identifiers and constants kept —
# so whitespace, comments, quoting style, parentheses and line breaks do not matter, and the
# same normalized statements are looked for in the Python of ``prompt.md`` (every chunk of
# consecutive lines that parses, inline code spans, ``assert …`` tails of prose lines) and of
# ``repo/`` (of ``.py`` files only the top-level blocks and methods that have every identifier
# of some hidden unit are parsed, see ``file_index``; ``.md``/``.rst``/``.txt`` files are read
# like the prompt).
#
# A place (the prompt, or one repo file) shows a hidden test when it holds (rules in
# ``code_hits``):
# - *test_body*: a hidden test function — a ``def`` of the same name and body, whatever its
#   length — or its body (a contiguous run of statements, under any name or none) when the body
#   has two or more statements, or one that checks a specific constant (not ``None``,
#   ``True``/``False``, ``0``, ``1`` or empty);
# - *assert*: a hidden assertion (``assert`` or an ``assert*`` call statement) that compares
#   to a specific constant, or two or more distinct hidden assertions that are not generic
#   (generic: no call and no specific constant, e.g. ``assert result is not None``).
# Not secret, so never a hit: a body or assertion the visible tests also contain; in the
# prompt, what ``repo/`` also contains (the repo hit, if any, names it).

#: a chunk of the prompt is parsed at most this many lines at once (a longer run of code is
#: parsed in pieces of whole statements)
CODE_MAX_LINES = 400
#: parse attempts per starting line when a chunk does not parse as a whole
_RETRIES = 8
#: file kinds of repo/ read as prose with code in it (``.py`` files are parsed whole)
PROSE_SUFFIXES = (".md", ".rst", ".txt")

_IDENT = re.compile(r"[^\W\d]\w*")
_NEWLINE = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"^([ \t]*)(.*)", re.M)
_INLINE_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_ASSERT_TAIL = re.compile(r"(?<![\w.])assert\b")
_BODY_FIELDS = ("body", "orelse", "finalbody")
_PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError)


@dataclass(frozen=True)
class HiddenTest:
    """One hidden test function, normalized."""

    name: str                 # test_a, or Class.test_method
    func: str                 # the def's own name
    source: str               # hidden_tests/<path>:<line of the def>
    body: tuple[str, ...]     # the normalized statements of its body (docstring left out)
    first: str                # its first statement as source, to name it in a hit
    words: frozenset[str]     # identifiers a text must contain to hold the body
    alone: bool               # the body counts found without its def (see ``code_hits``)


@dataclass(frozen=True)
class HiddenAssert:
    """One hidden assertion statement, normalized."""

    norm: str
    source: str               # hidden_tests/<path>:<line>
    test: str                 # the HiddenTest.name it is in
    text: str                 # the statement as source
    words: frozenset[str]
    specific: bool            # an expected value is a specific constant
    generic: bool             # no call and no specific constant anywhere


@dataclass
class HiddenCode:
    """The hidden tests of a task that the visible tests do not already show."""

    tests: list[HiddenTest] = field(default_factory=list)
    asserts: dict[str, HiddenAssert] = field(default_factory=dict)
    #: statement type -> identifier sets of the hidden statements of that type (what a
    #: statement must have to be one of them; ``CodeIndex`` normalizes no other)
    kinds: dict[str, list[frozenset[str]]] = field(default_factory=dict)
    #: the names of the hidden test functions
    funcs: set[str] = field(default_factory=set)

    def add_kind(self, stmt: ast.stmt) -> None:
        self.kinds.setdefault(type(stmt).__name__, []).append(_words(stmt))

    def __bool__(self) -> bool:
        return bool(self.tests or self.asserts)

    def needs(self) -> list[frozenset[str]]:
        """The identifier sets of the units that can make a hit (``code_hits``): a text can hold
        one only if it has all its words. A test whose body does not count alone needs its
        name (its ``def``); a generic assertion never counts."""
        return ([t.words if t.alone else t.words | {t.func} for t in self.tests]
                + [a.words for a in self.asserts.values() if not a.generic])


# ------------------------------------------------------------------ normalizing

def parse(text: str) -> ast.Module | None:
    """``text`` parsed, or None when it is not Python (never raises: prose must not crash)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except _PARSE_ERRORS:
        return None


def _norm(node: ast.AST, memo: dict[int, str]) -> str:
    """The normalized form of a statement (or except handler / match case): ``ast.dump`` (no
    positions) of a simple statement; a compound one is built from its children's forms, so
    each node of a tree is dumped once however deep it is."""
    got = memo.get(id(node))
    if got is not None:
        return got
    if not any(isinstance(getattr(node, f, None), list) for f in (*_BODY_FIELDS, "handlers", "cases")):
        out = ast.dump(node)
    else:
        parts = []
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], (ast.stmt, ast.excepthandler,
                                                                           ast.match_case)):
                parts.append(f"{name}=[{','.join(_norm(v, memo) for v in value)}]")
            elif isinstance(value, list):
                parts.append(f"{name}=[{','.join(ast.dump(v) if isinstance(v, ast.AST) else repr(v) for v in value)}]")
            else:
                parts.append(f"{name}={ast.dump(value) if isinstance(value, ast.AST) else repr(value)}")
        out = f"{type(node).__name__}({', '.join(parts)})"
    memo[id(node)] = out
    return out


def _sub_lists(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists directly inside a statement: bodies, branches, handlers, cases."""
    for name in _BODY_FIELDS:
        value = getattr(stmt, name, None)
        if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
            yield value
    for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())):
        yield part.body


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return body[1:]
    return body


def _is_assert(stmt: ast.stmt) -> bool:
    """``assert …`` or a call statement of an ``assert*`` function/method (``self.assertEqual``)."""
    if isinstance(stmt, ast.Assert):
        return True
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        return name.startswith("assert")
    return False


def _trivial(value: object) -> bool:
    if value is None or value is Ellipsis or isinstance(value, bool):
        return True
    if isinstance(value, (int, float, complex)):
        return value in (0, 1)
    return isinstance(value, (str, bytes)) and not value


def _checked(stmt: ast.stmt) -> list[ast.AST]:
    """What an assertion checks: the test of ``assert``, the arguments of an ``assert*`` call."""
    if isinstance(stmt, ast.Assert):
        return [stmt.test]
    call = stmt.value                                             # type: ignore[attr-defined]
    return [*call.args, *(k.value for k in call.keywords)]


def _checked_values(stmt: ast.stmt) -> list[object]:
    """The values a statement checks: the constants of an assertion except those passed into a
    call (``f(1) == 2`` checks 2); for any other statement, all its constants."""
    if not _is_assert(stmt):
        return [n.value for n in ast.walk(stmt) if isinstance(n, ast.Constant)]
    roots = _checked(stmt)
    out: list[object] = []
    while roots:
        n = roots.pop()
        if isinstance(n, ast.Constant):
            out.append(n.value)
        elif isinstance(n, ast.Call):
            roots.append(n.func)
        else:
            roots.extend(ast.iter_child_nodes(n))
    return out


def _words(node: ast.AST) -> frozenset[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Assert):
            out.add("assert")
    return frozenset(out)


def _unparse(node: ast.AST) -> str:
    try:
        return " ".join(ast.unparse(node).split())
    except (ValueError, RecursionError):
        return type(node).__name__


# ------------------------------------------------------------------ where code is

class CodeIndex:
    """The normalized statements of some parsed code: every statement list, every statement,
    and the bodies of the ``def``s named like a hidden test.

    ``trees`` are (tree, its source). With ``code`` only the statements that may be hidden
    ones are normalized — of a type some hidden statement has, with every identifier of one
    in their source lines — the others stand as ``""`` (equal to no hidden statement): a big
    file costs its parse and a regex, not a dump of every node."""

    def __init__(self, trees: list[tuple[ast.Module, str]], code: HiddenCode | None = None):
        self.lists: list[list[str]] = []
        self.stmts: set[str] = set()
        self.defs: dict[str, set[tuple[str, ...]]] = {}
        for tree, source in trees:
            self._add(tree, source, code)
        self.stmts.discard("")

    def _add(self, tree: ast.Module, source: str, code: HiddenCode | None) -> None:
        memo: dict[int, str] = {}
        lines = _NEWLINE.split(source) if code is not None else []

        def norm(stmt: ast.stmt) -> str:
            if code is None:
                return _norm(stmt, memo)
            got = memo.get(id(stmt))
            if got is not None:
                return got
            needs = code.kinds.get(type(stmt).__name__)
            words = set(_IDENT.findall(" ".join(lines[stmt.lineno - 1:stmt.end_lineno or stmt.lineno]))) \
                if needs else set()
            if not any(need <= words for need in needs or ()):
                memo[id(stmt)] = ""
                return ""
            return _norm(stmt, memo)

        stack = [tree.body]
        while stack:
            stmts = stack.pop()
            norms = [norm(s) for s in stmts]
            self.lists.append(norms)
            self.stmts.update(norms)
            for s in stmts:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and code is not None \
                        and s.name in code.funcs:
                    self.defs.setdefault(s.name, set()).add(tuple(norm(b) for b in _without_docstring(s.body)))
                stack.extend(_sub_lists(s))

    def has_seq(self, key: tuple[str, ...]) -> bool:
        """Whether the statements ``key`` follow one another in some statement list."""
        if not key or any(k not in self.stmts for k in key):
            return False
        k = len(key)
        for norms in self.lists:
            for i in range(len(norms) - k + 1):
                if norms[i] == key[0] and tuple(norms[i:i + k]) == key:
                    return True
        return False

    def has_def(self, name: str, body: tuple[str, ...]) -> bool:
        return body in self.defs.get(name, ())


def _first_line_can_start(line: str) -> bool:
    """Whether ``line`` may begin Python code (complete or to be continued): a cheap filter
    that keeps prose lines from being parsed with the lines after them."""
    if parse(line) is not None:
        return True
    try:                        # None: a statement begun (``def f():``, ``x = (``), not an error
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            codeop.compile_command(line, "<prompt>", "exec")
        return True
    except _PARSE_ERRORS:
        return False


def _parse_prefix(region: list[str]) -> tuple[ast.Module, int] | None:
    """The longest leading run of ``region`` that parses, found from the syntax errors' lines,
    and how many lines it has; None when none does."""
    end = len(region)
    for _ in range(_RETRIES):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse("\n".join(region[:end]))
        except SyntaxError as exc:
            bad = exc.lineno or 1
            if bad == 1:
                return None
            end = bad - 1 if bad <= end else end - 1
            if end < 1:
                return None
            continue
        except _PARSE_ERRORS:
            return None
        return tree, end
    return None


def code_trees(text: str) -> list[tuple[ast.Module, str]]:
    """The Python in a prose text (markdown, reStructuredText, plain): every run of consecutive
    lines at one indentation or deeper that parses (fenced and indented blocks included, the
    indentation taken off), every inline code span, and the ``assert …`` tail of a line. Never
    raises; a run is parsed in pieces of at most ``CODE_MAX_LINES`` lines. Returns (tree, the
    source parsed)."""
    trees: list[tuple[ast.Module, str]] = []

    def add(source: str) -> bool:
        tree = parse(source)
        if tree is not None:
            trees.append((tree, source))
        return tree is not None

    for m in _INLINE_CODE.finditer(text):
        add(m.group(1).strip())
    lines = text.splitlines()
    for line in lines:
        for m in _ASSERT_TAIL.finditer(line):
            if line[:m.start()].strip():                  # a whole line is parsed below
                tail = line[m.start():].strip()
                add(tail) or add(tail.rstrip("`.,;: "))
    i, n = 0, len(lines)
    while i < n:
        head = lines[i]
        stripped = head.lstrip()
        if not stripped or not _first_line_can_start(stripped):
            i += 1
            continue
        indent = head[:len(head) - len(stripped)]
        region: list[str] = []
        for line in lines[i:i + CODE_MAX_LINES]:
            if not line.strip():
                region.append("")
            elif line.startswith(indent):
                region.append(line[len(indent):])
            else:
                break
        got = _parse_prefix(region)
        if got is None:
            i += 1
            continue
        tree, used = got
        if used == len(region) == CODE_MAX_LINES and len(tree.body) > 1:
            # cut before the last statement, which may go on past the window
            used = tree.body[-1].lineno - 1
            add("\n".join(region[:used]))
        else:
            trees.append((tree, "\n".join(region[:used])))
        i += max(used, 1)
    return trees


def _top_blocks(text: str) -> list[str]:
    """``text`` (Python) cut into blocks that parse alone: its top-level functions and classes,
    the methods of its top-level classes (indentation taken off; class-level statements go with
    the method before them) and the runs of other top-level statements between them. A block
    starts at a ``def``, ``class`` or decorator line (a decorated def stays with its
    decorators). A cut inside a string or brackets gives a block that does not parse."""
    cuts: list[tuple[int, str]] = [(0, "")]        # (offset, indentation of the block)
    in_decorator = False
    class_indent: str | None = None                # the body indentation of the class we are in
    in_class = False
    for m in _LINE.finditer(text):
        indent, rest = m.group(1), m.group(2)
        if not rest or rest.startswith("#"):
            continue
        if in_class and class_indent is None and indent:
            class_indent = indent
        if not indent:
            in_class = rest.startswith("class ")
            class_indent = None
        starts = rest.startswith(("def ", "async ", "class ", "@"))
        cut = starts and not in_decorator and (not indent or (in_class and indent == class_indent))
        if (cut or (not indent and cuts[-1][1])) and m.start() > cuts[-1][0]:
            cuts.append((m.start(), indent))
        if starts:
            in_decorator = rest.startswith("@")
    cuts.append((len(text), ""))
    blocks = []
    for (a, indent), (b, next_indent) in zip(cuts, cuts[1:]):
        block = text[a:b]
        if indent:
            block = "\n".join(line[len(indent):] if line.startswith(indent) else line
                              for line in block.split("\n"))
        elif next_indent:               # a class header whose methods follow: its body goes on
            block = block.rstrip() + f"\n{next_indent}pass\n"
        blocks.append(block)
    return blocks


def _may_hold(needs: list[frozenset[str]], text: str) -> bool:
    if not any(all(w in text for w in need) for need in needs):     # substrings first: cheap
        return False
    words = set(_IDENT.findall(text))
    return any(need <= words for need in needs)


def may_hold(code: HiddenCode, text: str) -> bool:
    """Whether ``text`` has every identifier of some hidden unit that can make a hit (else it
    cannot hold one and is not parsed)."""
    needs = code.needs()
    return bool(needs) and _may_hold(needs, text)


def file_index(code: HiddenCode, text: str, is_python: bool) -> CodeIndex:
    """The code of a repo file that may hold hidden code. Python: only its top-level blocks
    (``_top_blocks``) that have every identifier of some unit are parsed; when one of them
    does not parse the file is parsed whole, and a file that does not parse holds no code.
    Other files are read as prose (``code_trees``)."""
    if not is_python:
        return CodeIndex(code_trees(text), code)
    needs = code.needs()
    trees = []
    for block in _top_blocks(text):
        if _may_hold(needs, block):
            tree = parse(block)
            if tree is None:
                whole = parse(text)
                return CodeIndex([(whole, text)] if whole is not None else [], code)
            trees.append((tree, block))
    return CodeIndex(trees, code)


# ------------------------------------------------------------------ the hidden tests

def _test_functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, def) of the tests pytest/unittest collect: module-level ``test*``
    functions and ``test*`` methods of ``Test*`` classes or ``…TestCase`` subclasses."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            out.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            bases = [b.attr if isinstance(b, ast.Attribute) else b.id if isinstance(b, ast.Name) else ""
                     for b in node.bases]
            if node.name.startswith("Test") or any(b.endswith("TestCase") for b in bases):
                out.extend((f"{node.name}.{m.name}", m) for m in node.body
                           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test"))
    return out


def hidden_code(hidden: list[tuple[str, str]], visible: list[tuple[str, str]]) -> HiddenCode:
    """The test functions and assertions of the Python files of ``hidden`` ((path, text) under
    hidden_tests/) that the visible tests do not contain. A test whose body has no call and no
    assertion (``pass``) is left out; files that do not parse are left to the line rule."""
    seen = CodeIndex([(t, text) for rel, text in visible if rel.endswith(".py") and (t := parse(text)) is not None])
    code = HiddenCode()
    for rel, text in hidden:
        tree = parse(text) if rel.endswith(".py") else None
        if tree is None:
            continue
        memo: dict[int, str] = {}
        for name, func in _test_functions(tree):
            stmts = _without_docstring(func.body)
            if not any(isinstance(n, (ast.Call, ast.Assert)) for s in stmts for n in ast.walk(s)):
                continue
            body = tuple(_norm(s, memo) for s in stmts)
            if seen.has_seq(body):
                continue
            code.funcs.add(func.name)
            for s in stmts:
                code.add_kind(s)
            alone = len(stmts) >= 2 or any(not _trivial(v) for v in _checked_values(stmts[0]))
            code.tests.append(HiddenTest(name, func.name, f"hidden_tests/{rel}:{func.lineno}", body,
                                         _unparse(stmts[0]), frozenset().union(*(_words(s) for s in stmts)), alone))
            for node in ast.walk(func):
                if isinstance(node, ast.stmt) and _is_assert(node):
                    norm = _norm(node, memo)
                    if norm in seen.stmts or norm in code.asserts:
                        continue
                    code.add_kind(node)
                    args = _checked(node)
                    calls = any(isinstance(n, ast.Call) for a in args for n in ast.walk(a))
                    consts = [n.value for a in args for n in ast.walk(a) if isinstance(n, ast.Constant)]
                    code.asserts[norm] = HiddenAssert(
                        norm, f"hidden_tests/{rel}:{node.lineno}", name, _unparse(node), _words(node),
                        specific=any(not _trivial(v) for v in _checked_values(node)),
                        generic=not calls and all(_trivial(v) for v in consts))
    return code


@dataclass(frozen=True)
class CodeHit:
    kind: str                 # test_body | assert
    source: str               # hidden_tests/<path>:<line>
    text: str                 # "<test name>: <first statement>" or the assertion


@dataclass
class Found:
    """What of the hidden code a place holds, before the thresholds of ``code_hits``."""

    defs: set[str] = field(default_factory=set)        # HiddenTest.name: def of that name and body
    bodies: set[str] = field(default_factory=set)      # HiddenTest.name: body, any name
    asserts: set[str] = field(default_factory=set)     # HiddenAssert.norm


def find(code: HiddenCode, index: CodeIndex) -> Found:
    """The hidden tests and assertions ``index`` holds."""
    out = Found()
    for t in code.tests:
        if index.has_def(t.func, t.body):
            out.defs.add(t.name)
        if index.has_seq(t.body):
            out.bodies.add(t.name)
    out.asserts = {n for n in code.asserts if n in index.stmts}
    return out


def code_hits(code: HiddenCode, found: Found, not_secret: Found | None = None) -> list[CodeHit]:
    """The hits of one place: a hidden test whose def (same name and body) is there; one whose
    body is there when the body counts alone (two or more statements, or one that checks a
    specific constant); the assertions of the other tests that are there, when one of them
    checks a specific constant (that one) or two or more are not generic (those). What
    ``not_secret`` holds (repo/'s finds, for the prompt) counts only as a def."""
    skip = not_secret or Found()
    hits: list[CodeHit] = []
    named: set[str] = set()
    for t in code.tests:
        if t.name in found.defs or (t.alone and t.name in found.bodies and t.name not in skip.bodies):
            hits.append(CodeHit("test_body", t.source, f"{t.name}: {t.first}"))
            named.add(t.name)
    shown = [a for n, a in code.asserts.items()
             if n in found.asserts and n not in skip.asserts and a.test not in named]
    counted = [a for a in shown if not a.generic]
    hits.extend(CodeHit("assert", a.source, a.text) for a in counted if len(counted) >= 2 or a.specific)
    return hits
