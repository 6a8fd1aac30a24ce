"""Words that mean what they say (issue 35, point 5): the console's first line of a decision, the
verdicts of report.html and results/index.html with their numbers and a neutral tone for neutral
outcomes, the pack's name and each agent's version, `sealbench show` naming the experiment it
shows, and `show`/`hash` at full width when piped. The gate's stratum notes themselves are in
tests/gate/test_gate_seeds.py (test_8_*)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "gate"))

from test_gate_refusals import BASE, CAND, build_spec, write_experiment  # noqa: E402

from sealbench.app import cli  # noqa: E402
from sealbench.core import core, results_index  # noqa: E402
from sealbench.core.run_console import summary_lines  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.report import report_html, report_md  # noqa: E402

pytestmark = pytest.mark.unit

PER_STRATUM = [{"stratum": "xs", "n": 3, "passes": 2.0, "pass_rate": 0.667, "ci_low": 0.2, "ci_high": 0.9,
                "timeout_rate": 0.0},
               {"stratum": "s", "n": 3, "passes": 0.0, "pass_rate": 0.0, "ci_low": 0.0, "ci_high": 0.5,
                "timeout_rate": 0.0},
               {"stratum": "m", "n": 3, "passes": 0.0, "pass_rate": 0.0, "ci_low": 0.0, "ci_high": 0.5,
                "timeout_rate": 0.0}]
NO_WINNER = "no winner (the 95% interval [+0.000, +0.000] includes 0)"


def _decision(**kw) -> dict:
    d = {"experiment": "04fbf9b4bbdbc884", "publishable": True, "headline": None,
         "headline_metric": "repair hidden-test pass rate on the holdout split (per-task, epochs averaged)",
         "n": 9, "passes": 2.0, "per_stratum": PER_STRATUM, "reasons": [],
         "notes": [{"code": "DUMMY_BEATEN_ON_SOME_STRATA", "sentence": "repair beats the controls only on xs."}],
         "allowed_sentences": ["per stratum: xs 2/3; s 0/3; m 0/3."], "comparison_summary": NO_WINNER,
         "comparison": {"candidate": "repair", "baseline": "repair_lite", "split": "holdout", "delta": 0.0,
                        "ci_low": 0.0, "ci_high": 0.0, "matched_tasks": 9, "verdict": "NO_WINNER",
                        "verdict_label": "NO_WINNER + UNDERPOWERED"}}
    d.update(kw)
    return d


def _gate(root: Path, spec: dict) -> Path:
    exp_dir, split_path, pack_hash = write_experiment(root, spec)
    assert gate.main(["--experiment-dir", str(exp_dir), "--split", str(split_path), "--pack-hash", str(pack_hash),
                      "--latest", str(root / "latest")]) == 0
    return exp_dir


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One gated experiment (the candidate a client preset with a version), read by several tests."""
    spec = build_spec()
    spec["cfg"]["agents"][CAND].update(client="claude-code", version="2.0.14", model="m-1")
    return _gate(tmp_path_factory.mktemp("words"), spec)


def _text(page: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


# ------------------------------------------------------------------- the console's first line


def test_the_console_says_what_may_be_published_with_its_numbers() -> None:
    lines = summary_lines(_decision(), "results/latest")
    first = " ".join(ln.strip() for ln in lines[:lines.index(next(ln for ln in lines if ln.startswith("  notes")))])
    assert "no headline number" not in first, first   # "PUBLISHABLE: no headline number" contradicts itself
    assert first.startswith("PUBLISHABLE per stratum only, no pooled number (DUMMY_BEATEN_ON_SOME_STRATA)"), first
    assert first.endswith("(per-task, epochs averaged): xs 2/3, s 0/3, m 0/3"), first
    # an older decision's code still says why the pooled number was withheld
    old = _decision(notes=[{"code": "DUMMY_BEATEN_ONLY_ON_EASY", "sentence": "x"}])
    assert "(DUMMY_BEATEN_ONLY_ON_EASY)" in summary_lines(old, "r")[0]
    # a pooled headline carries its count; a refusal stays what it was
    pooled = summary_lines(_decision(headline=0.0, passes=0.0), "r")[0]
    assert pooled.startswith("PUBLISHABLE: headline 0.000 (0/9 tasks)"), pooled
    refused = summary_lines(_decision(publishable=False, reasons=[{"code": "LEAK_SUSPECT", "sentence": "s"}]), "r")
    assert refused[0].startswith("NOT PUBLISHABLE: no headline number"), refused[0]


# ------------------------------------------------------------------------------- report.html


def test_report_verdicts_carry_their_numbers_and_neutral_outcomes_are_not_red_or_green() -> None:
    page = report_html.section_decision(_decision())
    banner = re.search(r'<div class="verdict (\w+)">([^<]*)</div>', page)
    assert banner and banner.group(1) == "ok" and "xs 2/3, s 0/3, m 0/3" in banner.group(2), page[:600]
    comparison = re.findall(r'<div class="verdict (\w+)">Comparison: ([^<]*)</div>', page)
    assert comparison and comparison[0][0] == "neutral", "no winner is a neutral outcome, not a red one"
    assert "delta +0.000 [+0.000, +0.000] on 9 matched holdout tasks" in comparison[0][1], comparison
    # publishable, but no better than doing nothing on any stratum: not green
    nowhere = _decision(headline=0.0, passes=0.0, per_stratum=[dict(p, passes=0.0) for p in PER_STRATUM],
                        notes=[{"code": "DUMMY_BEATEN_NOWHERE", "sentence": "beats the controls on no stratum"}])
    banner = re.search(r'<div class="verdict (\w+)">([^<]*)</div>', report_html.section_decision(nowhere))
    assert banner.group(1) == "neutral" and "0/9" in banner.group(2), banner.groups()
    assert "no better than doing nothing on any stratum" in banner.group(2), banner.groups()
    # a refusal is red; the candidate named the winner is green (honest cases beside)
    refused = report_html.section_decision(_decision(publishable=False, reasons=[{"code": "LEAK_SUSPECT"}]))
    assert '<div class="verdict no">' in refused
    won = _decision(comparison_summary="winner: repair over repair_lite")
    assert re.search(r'<div class="verdict ok">Comparison: ', report_html.section_decision(won))
    assert ".neutral{" in report_html.CSS
    # per task: a do-nothing control failing is what it should do (grey); an agent failing is red
    assert 'class="expected runs"' in report_html._cell([{"solver": "stub", "status": "fail", "epoch": 1}], None, None)
    assert 'class="fail runs"' in report_html._cell([{"solver": "repair", "status": "fail", "epoch": 1}], None, None)
    assert 'class="pass runs"' in report_html._cell([{"solver": "oracle", "status": "pass", "epoch": 1}], None, None)


def test_the_report_names_the_pack_and_each_agents_version(gated: Path) -> None:
    exp_dir = gated
    exp = core.read_json(exp_dir / "experiment.json")
    page = (exp_dir / "report.html").read_text(encoding="utf-8")
    header = _text(page.split("</header>")[0])
    pack_name = Path(exp["config_full"]["pack"]).name
    assert f"pack {pack_name}" in header and exp["pack_digest"][:12] in header, header
    for agent in (CAND, BASE):
        assert exp["agent_fingerprints"][agent] in header, (agent, header)
    assert "claude-code 2.0.14" in header, header
    # the dummy table says, per stratum, whether the controls were beaten, beside its numbers
    controls = _text(page.split('id="controls"')[1].split("</section>")[0])
    assert "beats the controls" in controls


# ------------------------------------------------------------------------ results/index.html


def test_the_index_gives_numbers_pack_name_and_versions_and_a_neutral_tone(gated: Path, tmp_path: Path) -> None:
    exp_dir = gated
    exp = core.read_json(exp_dir / "experiment.json")
    d = core.read_json(exp_dir / "decision.json")
    row = results_index.experiment_row(exp_dir)
    assert Path(exp["config_full"]["pack"]).name in row["pack"] and exp["pack_digest"][:12] in row["pack"], row
    assert exp["agent_fingerprints"][CAND] in row["candidate_version"], row
    assert exp["agent_fingerprints"][BASE] in row["baseline_version"], row
    per = ", ".join(f"{p['stratum']} {p['passes']:g}/{p['n']}" for p in d["per_stratum"])
    assert per in row["decision"], row["decision"]
    assert f"{d['passes']:g}/{d['n']}" in row["decision"], row["decision"]
    assert row["tone"] == "ok" and "claude-code 2.0.14" in row["candidate_version"]
    page = results_index.render_index(exp_dir.parent.parent)
    assert exp["agent_fingerprints"][CAND] in page and per in _text(page)
    # a publishable decision beating the controls nowhere is not green; a per-stratum one names its counts
    nowhere = tmp_path / "experiments" / "n0wheren0wheren0"
    core.write_json(nowhere / "decision.json", _decision(
        headline=0.0, passes=0.0, per_stratum=[dict(p, passes=0.0) for p in PER_STRATUM],
        notes=[{"code": "DUMMY_BEATEN_NOWHERE", "sentence": "s"}]))
    row = results_index.experiment_row(nowhere)
    assert row["tone"] == "neutral" and "0/9" in row["decision"] and "xs 0/3" in row["decision"], row
    assert 'class="neutral"' in results_index.render_index(tmp_path)
    some = tmp_path / "experiments" / "s0mes0mes0mes0me"
    core.write_json(some / "decision.json", _decision())
    assert "xs 2/3, s 0/3, m 0/3" in results_index.experiment_row(some)["decision"]


# -------------------------------------------------------------------------- sealbench show


def test_show_names_the_experiment_it_shows_and_one_started_since(tmp_path: Path, capsys) -> None:
    exp_dir = _gate(tmp_path, build_spec())
    os.utime(exp_dir / "decision.json", (1_700_000_000, 1_700_000_000))
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "latest")]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0]
    assert exp_dir.name in head, head
    assert f"shows experiment {exp_dir.name} (through {tmp_path / 'latest'})" in " ".join(out.split()), out
    assert "card default" in out and f"candidate {CAND}" in out, out
    assert "no decision yet" not in out
    # a run of another config under way: its experiment has a record, not yet a decision
    spec = build_spec()
    spec["cfg"]["card_name"] = "other-card"
    running, _split, _hash = write_experiment(tmp_path, spec)
    assert running != exp_dir and not (running / "decision.json").exists()
    capsys.readouterr()
    assert cli.main(["show", str(tmp_path / "latest")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"experiment {running.name}" in out and "no decision yet" in out and "other-card" in out, out
    assert f"shows experiment {exp_dir.name}" in out, out


# ---------------------------------------------------------------- piped: full width, full ids


def test_piped_show_and_hash_keep_full_ids_and_long_lines(gated: Path, tmp_path: Path, capsys) -> None:
    from packgen import make_pack

    pack = make_pack(tmp_path / "pack", n=3)
    assert cli.main(["hash", str(pack)]) == 0
    out = capsys.readouterr().out
    digests = re.findall(r"\b[0-9a-f]{64}\b", out)
    assert len(digests) >= 3 + 2, out                      # every task's digest whole, the denylist, the pack
    assert "…" not in out, out
    d = core.read_json(gated / "decision.json")
    long = [x for x in d["allowed_sentences"] if len(x) > 120]
    assert long, d["allowed_sentences"]
    assert cli.main(["show", str(gated)]) == 0
    out = capsys.readouterr().out
    for sentence in long:
        assert sentence in out, "piped show wrapped a sentence at 80 columns"
    assert "…" not in out, out


def test_the_show_verdict_line_has_the_per_stratum_numbers() -> None:
    line = cli.verdict_text(_decision())
    assert line.startswith("PUBLISHABLE per stratum; no pooled headline (DUMMY_BEATEN_ON_SOME_STRATA)"), line
    assert "xs 2/3, s 0/3, m 0/3" in line, line
    assert report_md.banner_headline(_decision()).endswith("xs 2/3, s 0/3, m 0/3."), report_md.banner_headline(
        _decision())
