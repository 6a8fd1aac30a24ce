"""leak_check: hidden tests are found in prompt.md or repo/ whatever their length (issue 26, point 5).

The line rule of ``leak_hidden`` (>= 30 characters, long literals, compound test names) misses a
hidden test file of short tests pasted into the prompt. The AST rule compares normalized test
bodies and assertions: whitespace, comments, quoting and line breaks do not matter. Attacks:
the short tests pasted plain, fenced, re-formatted; a body copied into a repo file; a TestCase
method pasted. Honest tasks next to them: prose, the visible tests quoted, ordinary asserts in
the repo, a generic snippet, the bundled suite.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_task  # noqa: E402
from sealbench.leak import leak_hidden  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.stages import leak_check  # noqa: E402

pytestmark = pytest.mark.unit

CALC = '''\
"""A small calculator."""


def f(x):
    return x + 1


def g():
    return None


def label(n):
    names = {0: "zero", 2: "two"}
    return names.get(n, str(n))


def total(xs):
    result = sum(f(x) for x in xs)
    assert isinstance(result, int)
    assert result is not None
    return result
'''
IMPORTS = "import sys, os\nsys.path.insert(0, os.getcwd())\nfrom calc import f, g, label, total\n\n\n"
THREE = '''\
def test_a():
    assert f(1) == 2
def test_b():
    assert f(0) == 0
def test_c():
    assert g() is None
'''
VISIBLE = IMPORTS + '''\
def test_f_of_two():
    assert f(2) == 3


def test_label_of_five():
    assert label(5) == "5"
'''
# as a mined pack does it, the hidden file holds the visible tests too
HIDDEN = IMPORTS + THREE + '''

def test_f_of_two():
    assert f(2) == 3


def test_total_of_three():
    """The sum of f over three values."""
    result = total([1, 2, 3])
    assert isinstance(result, int)
    assert result == 9
'''
UNITTEST = '''\
import unittest
from calc import label


class LabelCases(unittest.TestCase):
    def test_two(self):
        self.assertEqual(label(2), 'two')

    def test_zero(self):
        self.assertEqual(label(0), "zero")
        self.assertTrue(label(1))
'''
PROMPT = ("# f is off by one\n\n`f` adds one to its argument, but callers see the wrong value for small "
          "inputs, and `g()` should return nothing. `label` must name 0 and 2 in words.\n")


def calc_task(tasks: Path, tid: str = "calc") -> Path:
    """An honest task: prose prompt, repo/ with ordinary asserts, visible tests a subset of the hidden."""
    d = write_task(tasks, tid, "s", title="calculator off by one",
                   visible_command="python -m pytest -q visible_tests",
                   hidden_command="python -m pytest -q hidden_tests")
    for sub in ("repo", "visible_tests", "hidden_tests"):
        for p in (d / sub).iterdir():
            p.unlink()
    (d / "repo" / "calc.py").write_text(CALC)
    (d / "visible_tests" / "test_calc.py").write_text(VISIBLE)
    (d / "hidden_tests" / "test_calc.py").write_text(HIDDEN)
    (d / "hidden_tests" / "test_label_unittest.py").write_text(UNITTEST)
    (d / "prompt.md").write_text(PROMPT)
    return d


@pytest.fixture()
def task(tmp_path: Path) -> Path:
    p = make_pack(tmp_path / "p", n=1)
    return calc_task(p / "tasks")


def hits(task: Path) -> list[leak_hidden.HiddenHit]:
    return leak_hidden.hidden_test_hits(task)


def named(hs: list[leak_hidden.HiddenHit], file: str) -> set[str]:
    """The hidden test names the AST hits in ``file`` name (the text starts with the name)."""
    return {h.text.split(":")[0] for h in hs if h.kind == "test_body" and h.file == file}


def suspect(task: Path) -> bool:
    rep = leak_check.check_task_full(task, leak_check.read_denylist(task.parents[1] / "denylist.txt"), public=False)
    return rep.suspect


# ------------------------------------------------------------------ attacks

def test_three_short_tests_pasted_plain_are_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nThe tests:\n\n" + THREE + "\nGood luck.\n")
    hs = hits(task)
    assert named(hs, "prompt.md") == {"test_a", "test_b", "test_c"}
    assert all(h.source.startswith("hidden_tests/test_calc.py:") for h in hs)
    assert suspect(task)


def test_three_short_tests_in_a_python_fence_are_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nThese must pass:\n\n```python\n" + THREE + "```\n\nThanks.\n")
    assert named(hits(task), "prompt.md") == {"test_a", "test_b", "test_c"}


def test_reformatted_tests_are_suspect(task: Path) -> None:
    """Re-indented inside a list item, other spacing, parentheses, comments, line breaks, quotes."""
    pasted = ('1. Make these pass:\n\n'
              '      def test_a() :\n'
              '        # one more than one\n'
              '        assert (f( 1 )==2)\n'
              '\n'
              '      def test_b():  assert f(\n'
              '          0) == 0   # zero\n'
              '      def test_c():\n'
              '        assert g()   is   None\n'
              + '\n2. And the unittest one:\n\n'
              '    def test_two(self):\n'
              '        self.assertEqual(label(2),\n'
              '                         "two")\n')
    (task / "prompt.md").write_text(PROMPT + "\n" + pasted)
    assert named(hits(task), "prompt.md") == {"test_a", "test_b", "test_c", "LabelCases.test_two"}


def test_bare_hidden_asserts_without_their_defs_are_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nCheck: `assert f(0) == 0` and `assert g() is None`.\n")
    hs = hits(task)
    assert {h.text for h in hs if h.kind == "assert" and h.file == "prompt.md"} == {
        "assert f(0) == 0", "assert g() is None"}


def test_hidden_testcase_method_pasted_is_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\n~~~\nclass Check(unittest.TestCase):\n"
                                    "    def test_zero(self):\n        self.assertEqual(label(0), 'zero')\n"
                                    "        self.assertTrue(label(1))\n~~~\n")
    hs = hits(task)
    assert named(hs, "prompt.md") == {"LabelCases.test_zero"}
    assert {h.source for h in hs if h.kind == "test_body"} == {"hidden_tests/test_label_unittest.py:9"}
    assert suspect(task)


def test_hidden_body_copied_into_a_repo_file_is_suspect(task: Path) -> None:
    (task / "repo" / "calc.py").write_text(CALC + "\n\ndef _selfcheck():\n    result = total([1, 2, 3])\n"
                                           "    assert isinstance(result, int)\n    assert result == 9\n")
    hs = hits(task)
    assert named(hs, "repo/calc.py") == {"test_total_of_three"}
    assert suspect(task)


def test_one_short_hidden_test_in_a_repo_module_is_suspect(task: Path) -> None:
    (task / "repo" / "examples.py").write_text("from calc import f\n\nassert f(1) == 2  # sanity\n")
    assert named(hits(task), "repo/examples.py") == {"test_a"}


def test_hidden_file_pasted_into_a_repo_readme_is_suspect(task: Path) -> None:
    (task / "repo" / "README.md").write_text("# calc\n\nUsage:\n\n```py\n" + THREE + "```\n")
    assert named(hits(task), "repo/README.md") == {"test_a", "test_b", "test_c"}


def test_the_hit_is_named_in_the_leak_report(task: Path, capsys) -> None:
    (task / "prompt.md").write_text(PROMPT + "\n```python\n" + THREE + "```\n")
    rc = leak_check.main(["--task", str(task), "--denylist", str(task.parents[1] / "denylist.txt"),
                          "--out", str(task.parent.parent / "leak.json"), "--no-public-corpus"])
    err = capsys.readouterr().err
    assert rc == 1 and "LEAK SUSPECT: task 'calc'" in err
    assert "prompt.md: hidden test body 'test_a: assert f(1) == 2' (from hidden_tests/test_calc.py:6)" in err


# ------------------------------------------------------------------ honest tasks

def test_prose_prompt_and_ordinary_repo_asserts_are_not_suspect(task: Path) -> None:
    """repo/calc.py has `assert isinstance(result, int)` and `assert result is not None`; the first
    is also a hidden assert, but one ordinary assert is not a hidden test."""
    assert hits(task) == [] and not suspect(task)


def test_prompt_quoting_the_visible_tests_is_not_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nThe visible tests:\n\n```python\n" + VISIBLE + "```\n"
                                    "and `assert f(2) == 3` in short.\n")
    assert hits(task) == []


def test_prompt_with_a_generic_snippet_is_not_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nFor example:\n\n```python\nresult = total(values)\nassert result\n"
                                    "assert result is not None\nassert isinstance(result, int)\n```\n")
    assert hits(task) == []


def test_prompt_quoting_repo_code_is_not_suspect(task: Path) -> None:
    (task / "prompt.md").write_text(PROMPT + "\nThe code:\n\n```python\n" + CALC + "```\n")
    assert hits(task) == []


def test_prose_that_looks_like_broken_code_never_crashes(task: Path) -> None:
    noise = ("def test_a(:\n    assert f(1) == 2 (\n" + "(" * 3000 + "\n" + "[" * 200 + "]" * 199 + "\n"
             "```python\nif x:\n\tassert f(1) ==\n    2\n" + "\x00 NUL and é ü ∑ in prose\n"
             "    >>> f(1)\n    2\n" + "\tmixed\n  indent: yes\n" + "```\n" + "`unclosed inline code\n"
             + "Note: this is prose that parses as an annotation\n" + "x" * 5000 + "\n")
    (task / "prompt.md").write_text(PROMPT + noise)
    assert hits(task) == []


def test_repo_files_that_do_not_parse_are_skipped(task: Path) -> None:
    (task / "repo" / "broken.py").write_text("def test_a(:\n    assert f(1) == 2\n")
    (task / "repo" / "py2.py").write_text("print 'hello'\nassert f(1) == 2\n")
    assert hits(task) == []


@pytest.mark.skipif(not (ROOT / "suite" / "tasks").is_dir(), reason="suite not present")
def test_bundled_suite_has_no_ast_leak_and_the_check_ran() -> None:
    tasks = packs.load_pack(ROOT / "suite")
    assert len(tasks) >= 20
    units = 0
    for t in tasks:
        code = leak_hidden.hidden_code_of(t.dir)
        units += len(code.tests)
        assert leak_hidden.hidden_test_hits(t.dir) == [], t.id
    assert units >= len(tasks)          # every task's hidden tests were parsed into units


def test_hidden_body_in_a_method_of_a_big_repo_module_is_found(task: Path) -> None:
    """Only blocks of a .py file that may hold hidden code are parsed (methods of top-level
    classes, decorated defs, a string with column-0 `def` text that forces a whole-file parse)."""
    module = ('TEXT = """\ndef total(xs):\n    assert isinstance(result, int) and result\n"""\n\n\n'
              '@register(\n    "x",\n)\ndef helper():\n    return 1\n\n\n'
              'class Checks:\n    """Self checks."""\n    LIMIT = 3\n\n'
              '    @staticmethod\n    def other():\n        return None\n\n'
              '    def run(self):\n        result = total([1, 2, 3])\n'
              '        assert isinstance(result,\n                          int)\n'
              "        assert result == 9  # 'the' sum\n\n\nX = 1\n")
    (task / "repo" / "checks.py").write_text(module)
    assert named(hits(task), "repo/checks.py") == {"test_total_of_three"}


@pytest.mark.skipif(not (ROOT / "suite" / "tasks").is_dir(), reason="suite not present")
def test_bundled_suite_tasks_with_their_hidden_tests_pasted_are_suspect(tmp_path: Path) -> None:
    """The honest suite is clean (above); the same tasks with a hidden test file pasted into the
    prompt as a fenced block are each a suspect naming a hidden test."""
    for t in packs.load_pack(ROOT / "suite")[:6]:
        d = tmp_path / t.id
        shutil.copytree(t.dir, d)
        hidden = sorted((d / "hidden_tests").glob("*.py"))[0]
        (d / "prompt.md").write_text((d / "prompt.md").read_text() + "\n```python\n" + hidden.read_text() + "```\n")
        assert any(h.kind == "test_body" and h.file == "prompt.md" for h in hits(d)), t.id
