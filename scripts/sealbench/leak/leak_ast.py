"""The AST part of the hidden-test check: hidden tests found whatever their length (issue 26, point 5).

Not a stage; ``leak_hidden.hidden_test_hits`` calls it. The line rule there needs a line of at
least ``HIDDEN_MIN_LINE`` characters, so a hidden file of short tests (``assert f(1) == 2``)
pasted into the prompt went unseen. Here each hidden test function and each of its assertions
is normalized — statements as ``ast.dump`` without positions, identifiers and constants kept —
so whitespace, comments, quoting style, parentheses and line breaks do not matter, and the
same normalized statements are looked for in the Python of ``prompt.md`` (every chunk of
consecutive lines that parses, inline code spans, ``assert …`` tails of prose lines) and of
``repo/`` (of ``.py`` files only the top-level blocks and methods that have every identifier
of some hidden unit are parsed, see ``file_index``; ``.md``/``.rst``/``.txt`` files are read
like the prompt).

A place (the prompt, or one repo file) shows a hidden test when it holds (rules in
``code_hits``):
- *test_body*: a hidden test function — a ``def`` of the same name and body, whatever its
  length — or its body (a contiguous run of statements, under any name or none) when the body
  has two or more statements, or one that checks a specific constant (not ``None``,
  ``True``/``False``, ``0``, ``1`` or empty);
- *assert*: a hidden assertion (``assert`` or an ``assert*`` call statement) that compares
  to a specific constant, or two or more distinct hidden assertions that are not generic
  (generic: no call and no specific constant, e.g. ``assert result is not None``).
Not secret, so never a hit: a body or assertion the visible tests also contain; in the
prompt, what ``repo/`` also contains (the repo hit, if any, names it).
"""

from __future__ import annotations

import ast
import codeop
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

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


def _expected_constants(stmt: ast.stmt) -> list[object]:
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
            alone = len(stmts) >= 2 or any(not _trivial(v) for v in _expected_constants(stmts[0]))
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
                        specific=any(not _trivial(v) for v in _expected_constants(node)),
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
