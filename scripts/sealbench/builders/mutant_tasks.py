"""One kept mutant as a task of the pack contract (docs/packs.md): its test trees, oracle,
prompt, title, id, and the strata over the kept tasks.

- :func:`prune_tests`: a test file with some test functions/methods removed (their lines cut
  out, the rest byte-identical);
- :func:`oracle_diff`: the unified diff that undoes the mutation (``a/``/``b/`` prefixes);
- :func:`prompt_text` / :func:`title_text`: what fails, in the words of the visible tests and
  their assertion messages — never the fix, never a hidden test;
- :func:`assign_strata`: tertiles (or as many groups as the config has strata) by the size of
  the function the fix lives in.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
from collections.abc import Iterable

from .pack_common import TestResult

#: Most failing tests quoted in a prompt, and the longest message quoted.
PROMPT_TESTS, MESSAGE_CHARS = 8, 400


def _defs(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for n in tree.body:
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[n.name] = n
        elif isinstance(n, ast.ClassDef):
            for m in n.body:
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    out[f"{n.name}::{m.name}"] = m
    return out


def locatable(text: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` (``function`` or ``Class::method``) are defined in the file's own text."""
    return set(names) & set(_defs(ast.parse(text)))


def prune_tests(text: str, names: Iterable[str]) -> str:
    """``text`` without the test functions/methods ``names`` (decorators included). A class left
    without a statement gets ``pass`` where its last method was."""
    names = set(names)
    tree = ast.parse(text)
    defs = _defs(tree)
    lines = text.splitlines(keepends=True)
    spans = []
    for name in names:
        node = defs[name]
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        spans.append((first, node.end_lineno, node.col_offset))
    emptied = {id(c) for c in tree.body if isinstance(c, ast.ClassDef)
               and all(f"{c.name}::{getattr(m, 'name', '')}" in names for m in c.body)}
    keep_pass = {max(n.end_lineno for n in c.body) for c in tree.body if id(c) in emptied}
    for first, last, col in sorted(spans, reverse=True):
        repl = [" " * col + "pass\n"] if last in keep_pass else []
        lines[first - 1:last] = repl
    out = "".join(lines)
    ast.parse(out)
    return out


def oracle_diff(path: str, mutated: str, original: str) -> str:
    """The diff from the mutated file back to the original (applies with ``git apply`` at the
    workspace root)."""
    body = []
    for line in difflib.unified_diff(mutated.splitlines(keepends=True), original.splitlines(keepends=True),
                                     f"a/{path}", f"b/{path}", n=3):
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return f"diff --git a/{path} b/{path}\n" + "".join(body)


def scrub_paths(text: str, root: str, scratch: str) -> str:
    """``text`` without the builder's temporary paths: a path under the project copy ``root``
    becomes repo-relative, any other path under the scratch folder ``<scratch>``."""
    for base in sorted({root, os.path.realpath(root)}, key=len, reverse=True):
        text = text.replace(base.rstrip("/") + "/", "").replace(base.rstrip("/"), ".")
    for base in sorted({scratch, os.path.realpath(scratch)}, key=len, reverse=True):
        text = text.replace(base.rstrip("/"), "<scratch>")
    return text


def _exception(msg: str) -> str | None:
    m = re.match(r"([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\b", msg.strip())
    return m.group(1).rsplit(".", 1)[-1] if m else None


def _subject(r: TestResult) -> str:
    words = re.sub(r"^test_?|_test$", "", r.function) or r.function
    if r.cls:
        cls = re.sub(r"^Test_?", "", r.cls)
        words = f"{cls} {words}" if cls else words
    return words.replace("_", " ").strip()


def title_text(visible_fails: list[TestResult]) -> str:
    """One line from the failing behaviour: what the first visible failing test checks, and how it fails."""
    first = visible_fails[0]
    exc = _exception(first.message)
    how = "gives a wrong result" if exc in (None, "AssertionError") else f"raises {exc}"
    return f"`{_subject(first)}` {how}"


def prompt_text(visible_fails: list[TestResult], visible_files: list[str], hidden_count: int) -> str:
    """The worker's prompt: the visible failing tests, their messages, what is expected."""
    lines = [f"# {title_text(visible_fails)}", "",
             "Some of the project's tests fail. The visible tests that fail now:", ""]
    for r in visible_fails[:PROMPT_TESTS]:
        msg = r.message.strip().splitlines()[0] if r.message.strip() else ""
        msg = msg[:MESSAGE_CHARS] + (" …" if len(msg) > MESSAGE_CHARS else "")
        lines.append(f"- `{r.id}`" + (f": {msg}" if msg else ""))
    if len(visible_fails) > PROMPT_TESTS:
        lines.append(f"- … and {len(visible_fails) - PROMPT_TESTS} more in the same files")
    lines += ["", "Run them with `$SEALBENCH_VISIBLE_CMD` (the visible command runs "
              + ", ".join(f"`{f}`" for f in visible_files) + ").", "",
              "Expected: these tests pass and the project otherwise behaves as before. The tests are right; "
              "the defect is in the project's code. Do not edit the tests.",
              f"Scoring also runs tests not shown here; {hidden_count} tests fail now in all.", ""]
    return "\n".join(lines)


def assign_strata(sizes: dict[str, int], strata: list[str]) -> dict[str, str]:
    """Each task's stratum: tasks ranked by the lines of the function the fix lives in (ties by
    task id), cut into ``len(strata)`` groups of (nearly) equal size, smallest first."""
    order = sorted(sizes, key=lambda t: (sizes[t], t))
    k, n = len(strata), len(order)
    return {t: strata[min(k - 1, i * k // n)] for i, t in enumerate(order)} if n else {}


def task_id(pkg: str, path: str, function: str, taken: set[str]) -> str:
    """``<pkg>-<module>-<function>-<n>``: ``n`` the first number not taken."""
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{pkg}-{module}-{function}")
    n = 1
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"
