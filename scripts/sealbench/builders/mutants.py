"""Single-site mutants of Python source, made from the ``ast`` (docs/packs.md).

:func:`find_mutants` lists every site of one file where a classical operator applies, inside
a function or method: the inverses of what the built-in repair agent searches
(``agents/repair.py``), kept to well-defined ones:

- comparison swaps ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``is``↔``is not``, ``in``↔``not in``;
- arithmetic ``+``↔``-``, ``*``↔``/``, ``//``↔``/`` (and ``+=``↔``-=``);
- boolean ``and``↔``or``, a ``not`` dropped;
- an integer literal ±1 (off by one), ``True``↔``False``.

A mutant replaces the exact characters of the operator (or literal) at the node's offsets, so
the rest of the file is byte-identical and the fix is a one-line diff. Skipped: docstrings and
other string literals, type annotations, f-string internals, decorators, ``__repr__``, code
under ``if __name__ == "__main__"`` and module-level code (a task's fix lives in a function).
A mutant whose text does not parse, or parses to the same tree, is dropped.

:func:`schedule` orders the candidates with a seed: functions shuffled and interleaved across
modules, a few mutants per function, so the kept tasks spread over the code (at most one
task per function is the caller's rule).
"""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass
from itertools import zip_longest

COMPARE = {ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
           ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Is: ("is", "is not"),
           ast.IsNot: ("is not", "is"), ast.In: ("in", "not in"), ast.NotIn: ("not in", "in")}
COMPARE_RE = {"<": r"<(?!=|<)", "<=": r"<=", ">": r">(?!=|>)", ">=": r">=", "==": r"==", "!=": r"!=",
              "is": r"\bis\b(?!\s+not\b)", "is not": r"\bis\s+not\b", "in": r"(?<!not )\bin\b",
              "not in": r"\bnot\s+in\b"}
ARITH = {ast.Add: [("+", "-")], ast.Sub: [("-", "+")], ast.Mult: [("*", "/")],
         ast.Div: [("/", "*"), ("/", "//")], ast.FloorDiv: [("//", "/")]}
ARITH_RE = {"+": r"\+", "-": r"-", "*": r"\*(?!\*)", "/": r"(?<!/)/(?!/)", "//": r"//"}
SKIP_FUNCTIONS = frozenset({"__repr__"})


@dataclass(frozen=True)
class Mutant:
    """One single-site change of one file (character offsets into its text)."""

    file: str              # repo path
    function: str          # qualified name of the enclosing function: Class.method or func
    func_lines: int        # lines of the enclosing function (the code read to find the fix)
    lineno: int
    start: int
    end: int
    original: str
    replacement: str
    operator: str          # for the builder's log only; never shown to a worker

    def apply(self, text: str) -> str:
        assert text[self.start:self.end] == self.original, f"{self.file}: the text changed under the mutant"
        return text[:self.start] + self.replacement + text[self.end:]

    @property
    def key(self) -> tuple[str, str]:
        return self.file, self.function


class _Offsets:
    """(line, byte column) of the ast → character offset into the text."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.starts = [0]
        for ln in self.lines:
            self.starts.append(self.starts[-1] + len(ln))

    def __call__(self, lineno: int, col: int) -> int:
        line = self.lines[lineno - 1]
        return self.starts[lineno - 1] + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    def start(self, n: ast.AST) -> int:
        return self(n.lineno, n.col_offset)

    def end(self, n: ast.AST) -> int:
        return self(n.end_lineno, n.end_col_offset)


def _gap_site(text: str, a: int, b: int, pattern: str) -> tuple[int, int] | None:
    """The operator between two operands: the one match of ``pattern`` in the text between them
    (comments blanked; only brackets, spaces and the operator can be there)."""
    gap = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), text[a:b])
    hits = list(re.finditer(pattern, gap))
    if len(hits) != 1:
        return None
    return a + hits[0].start(), a + hits[0].end()


def _is_main_guard(n: ast.AST) -> bool:
    return (isinstance(n, ast.If) and isinstance(n.test, ast.Compare)
            and isinstance(n.test.left, ast.Name) and n.test.left.id == "__name__")


def _skipped_ids(fn: ast.AST) -> set[int]:
    """Nodes never mutated inside a function: annotations, decorators, docstrings, f-strings."""
    skip: list[ast.AST] = list(getattr(fn, "decorator_list", []))
    if fn.returns is not None:
        skip.append(fn.returns)
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None and a.annotation is not None:
            skip.append(a.annotation)
    for n in ast.walk(fn):
        if isinstance(n, ast.AnnAssign):
            skip.append(n.annotation)
        elif isinstance(n, ast.JoinedStr):
            skip.append(n)
    return {id(x) for s in skip for x in ast.walk(s)}


def _functions(tree: ast.Module) -> list[tuple[str, ast.AST]]:
    """Every function and method with its qualified name (innermost owns its body's sites)."""
    out: list[tuple[str, ast.AST]] = []

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for n in body:
            if _is_main_guard(n):
                continue
            if isinstance(n, ast.ClassDef):
                visit(n.body, f"{prefix}{n.name}.")
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((f"{prefix}{n.name}", n))
                visit(n.body, f"{prefix}{n.name}.")
    visit(tree.body, "")
    return out


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """The nodes of ``fn``'s body, not those of functions or classes nested in it."""
    out, stack = [], list(fn.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(n)
        stack.extend(ast.iter_child_nodes(n))
    return out


def _sites(text: str, off: _Offsets, n: ast.AST) -> list[tuple[int, int, str, str]]:
    """(start, end, original, replacement) of every mutation of node ``n``."""
    out: list[tuple[int, int, str, str]] = []
    if isinstance(n, ast.Compare):
        left = n.left
        for op, right in zip(n.ops, n.comparators):
            old, new = COMPARE[type(op)]
            span = _gap_site(text, off.end(left), off.start(right), COMPARE_RE[old])
            if span:
                out.append((*span, text[span[0]:span[1]], new))
            left = right
    elif isinstance(n, ast.BinOp) and type(n.op) in ARITH:
        if any(isinstance(s, (ast.JoinedStr, ast.List, ast.Tuple)) or
               (isinstance(s, ast.Constant) and isinstance(s.value, (str, bytes))) for s in (n.left, n.right)):
            return out          # sequence concatenation: the swap only raises a TypeError
        for old, new in ARITH[type(n.op)]:
            span = _gap_site(text, off.end(n.left), off.start(n.right), ARITH_RE[old])
            if span:
                out.append((*span, old, new))
    elif isinstance(n, ast.AugAssign) and isinstance(n.op, (ast.Add, ast.Sub)):
        old, new = ("+=", "-=") if isinstance(n.op, ast.Add) else ("-=", "+=")
        span = _gap_site(text, off.end(n.target), off.start(n.value), re.escape(old))
        if span and not (isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)):
            out.append((*span, old, new))
    elif isinstance(n, ast.BoolOp):
        old, new = ("and", "or") if isinstance(n.op, ast.And) else ("or", "and")
        for a, b in zip(n.values, n.values[1:]):
            span = _gap_site(text, off.end(a), off.start(b), rf"\b{old}\b")
            if span:
                out.append((*span, old, new))
    elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
        s, e = off.start(n), off.start(n.operand)
        head = re.match(r"not\b[ \t]*", text[s:e])
        if head and head.end() == e - s and text[s:e].count("(") == 0:
            out.append((s, e, text[s:e], ""))
        elif head:                      # not (x): keep the brackets
            out.append((s, s + head.end(), head.group(), ""))
    elif isinstance(n, ast.Constant) and isinstance(n.value, bool):
        s, e = off.start(n), off.end(n)
        out.append((s, e, text[s:e], str(not n.value)))
    elif isinstance(n, ast.Constant) and isinstance(n.value, int):
        s, e = off.start(n), off.end(n)
        lit = text[s:e]
        if re.fullmatch(r"\d+", lit) and (lit == "0" or not lit.startswith("0")):
            out += [(s, e, lit, str(v)) for v in (n.value + 1, n.value - 1) if v >= 0]
    return out


def _label(orig: str, repl: str) -> str:
    return f"drop {orig.strip()!r}" if not repl else f"{orig!r} -> {repl!r}"


def find_mutants(text: str, path: str) -> list[Mutant]:
    """Every single-site mutant of one source file (``path``: its repo path), in text order."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    off, base = _Offsets(text), ast.dump(tree)
    out: list[Mutant] = []
    for qual, fn in _functions(tree):
        if fn.name in SKIP_FUNCTIONS:
            continue
        skipped = _skipped_ids(fn)
        body = fn.body[1:] if (fn.body and isinstance(fn.body[0], ast.Expr) and isinstance(
            fn.body[0].value, ast.Constant) and isinstance(fn.body[0].value.value, str)) else fn.body
        if not body:
            continue
        size = fn.end_lineno - fn.lineno + 1
        for n in sorted(_own_nodes(fn), key=lambda x: (getattr(x, "lineno", 0), getattr(x, "col_offset", 0))):
            if id(n) in skipped or not hasattr(n, "lineno"):
                continue
            for s, e, orig, repl in _sites(text, off, n):
                new = text[:s] + repl + text[e:]
                try:
                    if ast.dump(ast.parse(new)) == base:
                        continue
                except SyntaxError:
                    continue
                line = text.count("\n", 0, s) + 1
                out.append(Mutant(path, qual, size, line, s, e, orig, repl, _label(orig, repl)))
    seen: set[tuple[int, int, str]] = set()
    return [m for m in out if (m.start, m.end, m.replacement) not in seen
            and not seen.add((m.start, m.end, m.replacement))]


def schedule(mutants: list[Mutant], seed: int, per_function: int = 3) -> list[list[Mutant]]:
    """Candidates per function in the order to try them: files and functions shuffled with
    ``seed`` and interleaved across files; at most ``per_function`` mutants of each."""
    rng = random.Random(seed)
    by_file: dict[str, dict[str, list[Mutant]]] = {}
    for m in mutants:
        by_file.setdefault(m.file, {}).setdefault(m.function, []).append(m)
    files = sorted(by_file)
    rng.shuffle(files)
    queues = []
    for f in files:
        funcs = sorted(by_file[f])
        rng.shuffle(funcs)
        queue = []
        for fn in funcs:
            ms = list(by_file[f][fn])
            rng.shuffle(ms)
            queue.append(ms[:per_function])
        queues.append(queue)
    return [group for row in zip_longest(*queues) for group in row if group is not None]
