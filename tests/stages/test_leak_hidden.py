"""leak_check: hidden tests must not show in prompt.md or repo/ (issue 11, point 9).

The attacks (a hidden test's name, a distinctive assertion literal or a distinctive line in the
prompt; a copy of a hidden test in repo/) each make the task a leak suspect exactly as a
denylist hit does; an honest task (the bug told in words, repo code defining what the tests
call, a visible test sharing lines with the hidden one) does not.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_pytest_task, write_task  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.stages import leak_check, stratify  # noqa: E402

pytestmark = pytest.mark.unit

LEDGER = '''\
"""A tiny ledger: signed amounts, credits positive, debits negative."""


def balance(entries):
    """Sum of the signed amounts of ``entries``."""
    return sum(abs(e["amount"]) for e in entries)


def describe(entries):
    return f"balance {balance(entries):.2f} EUR"
'''
IMPORTS = "import sys, os\nsys.path.insert(0, os.getcwd())\nfrom ledger import balance, describe\n\n\n"
VISIBLE = IMPORTS + '''\
def test_credit_only():
    assert balance([{"amount": 5}]) == 5


def test_describe_credit():
    assert describe([{"amount": 5}]) == "balance 5.00 EUR"
'''
HIDDEN_LINE = 'entries = [{"amount": 120}, {"amount": -45}, {"amount": -30}]'
HIDDEN = IMPORTS + f'''\
def test_debit_reduces_the_running_balance():
    {HIDDEN_LINE}
    assert balance(entries) == 45


def test_description_shows_overdraft_sign():
    assert describe([{{"amount": 10}}, {{"amount": -35.5}}]) == "balance -25.50 EUR"


def test_large_ledger_total():
    assert balance([{{"amount": 2718281}}, {{"amount": -1}}]) == 2718280


def test_credit_only():
    assert balance([{{"amount": 7}}]) == 7


class TestRefundReversal:
    def test_refund_then_charge(self):
        assert describe([{{"amount": -12}}, {{"amount": 12}}]) == "balance 0.00 EUR"
'''
PROMPT = ("# Debits increase the ledger balance\n\nA ledger with a credit of 100 and a debit of 40 shows a "
          "balance of 140 instead of 60: debits are added instead of subtracted. `balance` must subtract "
          "them, and `describe` must show a negative balance with its sign.\n")


def ledger_task(tasks: Path, tid: str = "led") -> Path:
    """An honest task: the bug told in words, repo/ defines what the tests call, the visible test
    shares its import lines (and one test name) with the hidden one."""
    d = write_task(tasks, tid, "s", title="ledger balance wrong with debits",
                   visible_command="python -m pytest -q visible_tests",
                   hidden_command="python -m pytest -q hidden_tests")
    for sub in ("repo", "visible_tests", "hidden_tests"):
        for f in (d / sub).iterdir():
            f.unlink()
    (d / "repo" / "ledger.py").write_text(LEDGER)
    (d / "visible_tests" / "test_ledger_visible.py").write_text(VISIBLE)
    (d / "hidden_tests" / "test_ledger_hidden.py").write_text(HIDDEN)
    (d / "prompt.md").write_text(PROMPT)
    return d


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    p = make_pack(tmp_path / "p", n=2)
    ledger_task(p / "tasks")
    return p


def report(pack: Path, tid: str = "led") -> leak_check.TaskReport:
    return leak_check.check_task_full(pack / "tasks" / tid, leak_check.read_denylist(pack / "denylist.txt"),
                                      public=False)


def kinds(rep: leak_check.TaskReport) -> set[tuple[str, str]]:
    return {(h.kind, h.file) for h in rep.hidden_hits}


# ------------------------------------------------------------------ attacks

def test_prompt_quoting_a_hidden_test_name_is_suspect(pack: Path) -> None:
    t = pack / "tasks" / "led"
    (t / "prompt.md").write_text(PROMPT + "\nMake test_debit_reduces_the_running_balance pass.\n")
    rep = report(pack)
    assert rep.suspect and not rep.hits
    assert ("test_name", "prompt.md") in kinds(rep)
    assert any(h.text == "test_debit_reduces_the_running_balance" for h in rep.hidden_hits)


def test_prompt_quoting_a_hidden_test_class_is_suspect(pack: Path) -> None:
    (pack / "tasks" / "led" / "prompt.md").write_text(PROMPT + "\nSee TestRefundReversal.\n")
    rep = report(pack)
    assert rep.suspect and ("test_name", "prompt.md") in kinds(rep)


def test_prompt_quoting_an_assertion_literal_is_suspect(pack: Path) -> None:
    (pack / "tasks" / "led" / "prompt.md").write_text(
        PROMPT + "\nWith a 10 credit and a 35.5 debit the text must read `balance -25.50 EUR`.\n")
    rep = report(pack)
    assert rep.suspect
    assert [h.text for h in rep.hidden_hits if h.kind == "assert_literal"] == ["balance -25.50 EUR"]


def test_prompt_quoting_a_distinctive_assertion_number_is_suspect(pack: Path) -> None:
    (pack / "tasks" / "led" / "prompt.md").write_text(PROMPT + "\nA big ledger should total 2718280.\n")
    rep = report(pack)
    assert rep.suspect and [h.text for h in rep.hidden_hits] == ["2718280"]


def test_prompt_quoting_a_hidden_line_is_suspect(pack: Path) -> None:
    (pack / "tasks" / "led" / "prompt.md").write_text(PROMPT + "\n```\n" + HIDDEN_LINE + "\n```\n")
    rep = report(pack)
    assert rep.suspect and ("line", "prompt.md") in kinds(rep)


def test_repo_copy_of_a_hidden_test_file_is_suspect(pack: Path) -> None:
    t = pack / "tasks" / "led"
    (t / "repo" / "tests_copy").mkdir()
    shutil.copy(t / "hidden_tests" / "test_ledger_hidden.py", t / "repo" / "tests_copy" / "test_hidden.py")
    rep = report(pack)
    assert rep.suspect
    assert ("test_name", "repo/tests_copy/test_hidden.py") in kinds(rep)
    assert ("line", "repo/tests_copy/test_hidden.py") in kinds(rep)


def test_distinctive_hidden_line_in_a_repo_module_is_suspect(pack: Path) -> None:
    t = pack / "tasks" / "led"
    (t / "repo" / "ledger.py").write_text(LEDGER + "\n\n# example:\n#     " + HIDDEN_LINE + "\n")
    rep = report(pack)
    assert rep.suspect and kinds(rep) == {("line", "repo/ledger.py")}
    assert HIDDEN_LINE in rep.hidden_hits[0].text or rep.hidden_hits[0].text.endswith("…")


def test_non_python_hidden_file_line_in_repo_is_suspect(pack: Path) -> None:
    t = pack / "tasks" / "led"
    expected = "2026-01-31  opening balance carried forward  1,204.75 EUR"
    (t / "hidden_tests" / "expected_statement.txt").write_text("statement\n" + expected + "\n")
    (t / "repo" / "README.txt").write_text("Sample statement line:\n  " + expected + "\n")
    rep = report(pack)
    assert rep.suspect and kinds(rep) == {("line", "repo/README.txt")}


def test_unparsable_hidden_python_falls_back_to_lines(pack: Path) -> None:
    t = pack / "tasks" / "led"
    broken = "def test_broken(:\n    assert describe([]) == 'balance 0.00 EUR for an empty ledger'\n"
    (t / "hidden_tests" / "test_broken.py").write_text(broken)
    (t / "prompt.md").write_text(PROMPT + "\n    assert describe([]) == 'balance 0.00 EUR for an empty ledger'\n")
    rep = report(pack)
    assert rep.suspect and ("line", "prompt.md") in kinds(rep)


def test_hidden_hit_stops_the_job_like_a_denylist_hit(pack: Path, tmp_path: Path, capsys) -> None:
    t = pack / "tasks" / "led"
    (t / "prompt.md").write_text(PROMPT + "\nMake test_description_shows_overdraft_sign pass.\n")
    out = tmp_path / "leak.json"
    rc = leak_check.main(["--task", str(t), "--denylist", str(pack / "denylist.txt"), "--out", str(out),
                          "--no-public-corpus"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "LEAK SUSPECT: task 'led'" in err
    assert "prompt.md" in err and "test_description_shows_overdraft_sign" in err
    assert "hidden_tests/test_ledger_hidden.py" in err
    assert "not hidden" in err                                       # says what to do
    rec = json.loads(out.read_text())
    assert rec["suspect"] is True and rec["hits"] == []
    assert leak_check.CHECK_HIDDEN in rec["checks"] and leak_check.CHECK_DENYLIST in rec["checks"]
    assert rec["hidden_test_hits"] == [{"kind": "test_name", "file": "prompt.md",
                                        "source": "hidden_tests/test_ledger_hidden.py:11",
                                        "text": "test_description_shows_overdraft_sign"}]
    # downstream: the same record field the denylist sets makes tasks.parquet's leak_suspect
    row = stratify.build_tasks({"strata_of": {"led": "s"}}, {"led": "holdout"},
                               [{"task_id": "led", "task_digest": "d"}], [rec],
                               [{"task_id": "led", "oracle_ok": True, "oracle_passes": 1, "oracle_runs": 1,
                                 "weak_test": False, "stub_passes": False, "flaky": False,
                                 "control_infra_fail": False}])[0]
    assert row["leak_suspect"] is True and "hidden_tests" in row["leak_checks"].split(";")


def test_pack_cli_exits_1_on_a_hidden_leak(pack: Path, capsys) -> None:
    (pack / "tasks" / "led" / "prompt.md").write_text(PROMPT + "\nSee TestRefundReversal.\n")
    rc = leak_check.main(["--pack", str(pack), "--denylist", str(pack / "denylist.txt"), "--no-public-corpus"])
    assert rc == 1
    assert "checked=3 suspects=1" in capsys.readouterr().out


# ------------------------------------------------------------------ honest tasks

def test_honest_task_is_not_suspect(pack: Path) -> None:
    rep = report(pack)
    assert rep.hidden_hits == [] and not rep.suspect
    assert leak_check.CHECK_HIDDEN in rep.checks
    assert leak_check.hidden_test_hits(pack / "tasks" / "led") == []


def test_names_and_lines_shared_with_visible_tests_are_not_secret(pack: Path) -> None:
    t = pack / "tasks" / "led"
    # test_credit_only is a visible test too; the import lines are the visible test's; the repo
    # defines balance/describe; small numbers and short literals are not distinctive.
    (t / "prompt.md").write_text(PROMPT + "\ntest_credit_only passes already. The balance should be 45, not 195.\n"
                                 "    from ledger import balance, describe\n    sys.path.insert(0, os.getcwd())\n")
    (t / "repo" / "conftest.py").write_text("import sys, os\nsys.path.insert(0, os.getcwd())\n")
    assert report(pack).hidden_hits == []


def test_generated_packs_are_clean(tmp_path: Path) -> None:
    p = make_pack(tmp_path / "g", n=3)
    write_pytest_task(p / "tasks")
    for t in packs.load_pack(p):
        assert leak_check.hidden_test_hits(t.dir) == [], t.id


def test_bench_pack_is_clean(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import make_pack as bench_pack  # noqa: PLC0415
    finally:
        sys.path.remove(str(ROOT / "bench"))
    p = bench_pack.make_pack(tmp_path / "b", 6, seed=3, repo_kb=8)
    for t in packs.load_pack(p):
        assert leak_check.hidden_test_hits(t.dir) == [], t.id


@pytest.mark.skipif(not (ROOT / "suite" / "tasks").is_dir(), reason="suite not present")
def test_bundled_suite_has_no_hidden_test_leak() -> None:
    for t in packs.load_pack(ROOT / "suite"):
        assert leak_check.hidden_test_hits(t.dir) == [], t.id


def test_existing_check_names_stay_for_the_card_posture(pack: Path) -> None:
    """card.contamination_posture looks for "denylist" and "ngram13:humaneval" in leak_checks."""
    rep = leak_check.check_task_full(pack / "tasks" / "led", leak_check.read_denylist(pack / "denylist.txt"))
    assert {leak_check.CHECK_DENYLIST, leak_check.CHECK_HIDDEN} <= set(rep.checks)
    if rep.corpus_missing is None:
        assert leak_check.CHECK_NGRAM in rep.checks
    assert leak_check.CHECK_HIDDEN not in (leak_check.CHECK_DENYLIST, leak_check.CHECK_NGRAM)
