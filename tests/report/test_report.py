"""The HTML report: self-contained, complete, escaped, deterministic, written atomically."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core import tables  # noqa: E402
from sealbench.report import report_html  # noqa: E402
from sealbench.stats import rate_intervals  # noqa: E402

pytestmark = pytest.mark.unit

STRATA = ["xs", "s", "m"]
SPLITS = ["tune", "holdout"]
SOLVERS = [("empty_diff", "control"), ("stub", "control"), ("oracle", "control"),
           ("cand_agent", "agent"), ("base_agent", "agent"), ("ana", "human")]
EVIL = "<script>alert('x')</script> & \"quoted\""


def _typed(rows: list[dict], table: str) -> pd.DataFrame:
    cols = tables.TABLES[table]
    data = {name: [r.get(name) for r in rows] for name, *_ in cols}
    df = pd.DataFrame(data)
    for name, typ, _nullable, _ in cols:
        if typ == "float64":
            df[name] = df[name].astype("float64")
        elif typ == "int64":
            df[name] = df[name].astype("Int64")
    return df


def make_frames() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    tasks, runs = [], []
    i = 0
    for split in SPLITS:
        for stratum in STRATA:
            for k in range(3):
                tid = f"{stratum}{k}-{split}"
                title = EVIL if i == 0 else f"Task {tid}"
                tasks.append({"task_id": tid, "stratum": stratum, "split": split, "task_digest": f"{i:064x}",
                              "title": title, "time_box_sec": 600, "leak_suspect": False, "oracle_ok": True,
                              "oracle_passes": 3, "oracle_runs": 3, "weak_test": False, "stub_passes": False,
                              "flaky": False, "control_infra_fail": False})
                for solver, role in SOLVERS:
                    epochs = 2 if role == "agent" else 1
                    for ep in range(1, epochs + 1):
                        if solver == "oracle":
                            ok = True
                        elif role == "control":
                            ok = False
                        elif solver == "cand_agent":
                            ok = (i + ep) % 2 == 0
                        elif solver == "base_agent":
                            ok = i % 3 == 0
                        else:
                            ok = i % 2 == 1
                        green = None if (role == "control" or not ok and (i + ep) % 3) else float(5 + 7 * i + ep)
                        if role == "human" and green is not None:
                            green *= 40
                        runs.append({"task_id": tid, "stratum": stratum, "split": split, "solver": solver,
                                     "role": role, "fingerprint": "f" * 16, "epoch": ep,
                                     "status": "pass" if ok else ("timeout" if (i + ep) % 7 == 0 else "fail"),
                                     "visible_pass": ok, "hidden_pass": ok, "time_to_green_s": green,
                                     "isolation": None if role == "control" else ("human" if role == "human" else "bwrap"),
                                     "task_digest": f"{i:064x}", "pack_digest": "p" * 64})
                i += 1
    runs_df = _typed(runs, "runs")
    strata_rows = []
    for solver, role in SOLVERS:
        for split in SPLITS:
            for stratum in STRATA:
                sub = runs_df[(runs_df.solver == solver) & (runs_df.split == split) & (runs_df.stratum == stratum)]
                shares = sub.groupby("task_id").status.apply(lambda s: float((s == "pass").mean()))
                n, passes = len(shares), float(shares.sum())
                lo, hi = rate_intervals.wilson_interval(int(round(passes)), n)
                strata_rows.append({"solver": solver, "role": role, "split": split, "stratum": stratum, "n": n,
                                    "passes": passes, "pass_rate": passes / n, "ci_low": lo, "ci_high": hi,
                                    "timeout_rate": 0.0, "infra_rate": 0.0, "excluded_rate": 0.0})
    return _typed(tasks, "tasks"), runs_df, _typed(strata_rows, "strata")


DECISION = {
    "experiment": "0123456789abcdef", "publishable": False, "headline": None,
    "headline_metric": "cand_agent hidden-test pass rate on the holdout split (per-task, epochs averaged)",
    "n": 9, "passes": 4.5, "per_stratum": [{"stratum": s, "n": 3} for s in STRATA], "timeouts": 1, "exclusions": 0,
    "reasons": [
        {"code": "UNSANDBOXED", "meaning": "agent runs were not sandboxed", "sentence": "2 runs ran without bwrap.",
         "evidence": ["cand_agent:none"]},
        {"code": "STRATUM_TOO_SMALL", "meaning": "a stratum has fewer than 2 tasks", "sentence": "m has n=1.",
         "evidence": ["m (n=1)"]},
    ],
    "notes": [{"code": "UNDERPOWERED", "sentence": "9 paired tasks; the MDE needs 228."}],
    "allowed_sentences": [],
    "refused_sentences": [{"sentence": "cand_agent clears 50%.", "why": "the gate refused a headline: UNSANDBOXED"}],
    "comparison": {"candidate": "cand_agent", "baseline": "base_agent", "split": "holdout", "matched_tasks": 9,
                   "unit": "task (epochs averaged per task)", "unmatched_task_ids": [],
                   "delta": 0.111111, "ci_low": -0.2, "ci_high": 0.4, "se": 0.12, "df": 6, "method": "stratified_t",
                   "note": "", "bootstrap_ci": [-0.15, 0.35], "bootstrap_se": 0.1, "mcnemar_p": 0.6875, "wins": 4,
                   "losses": 2, "observed_mde": 0.37, "verdict": "NO_WINNER",
                   "verdict_label": "NO_WINNER + UNDERPOWERED",
                   "power": {"mde": 0.1, "planning_discordance": 0.3, "required_n_miller": 228,
                             "required_n_connor": 234}},
    "digests": {"pack": "p" * 64, "tasks": {"xs0-tune": "0" * 64}},
    "toolchain": {"python": "3.11.7", "packages": ["pandas==2.3.3"]},
}

CARD = {
    "name": "sealbench-0123456789abcdef",
    "dataset": {"pack_digest": "p" * 64, "n_tasks": 18, "strata": {"m": 6, "s": 6, "xs": 6},
                "split": {"seed": 1, "holdout_frac": 0.5, "tune": 9, "holdout": 9}, "score_split": "holdout"},
    "oracle": {"scoring": "visible and hidden exit 0", "commands": [{"commands": "pytest", "tasks": ["xs0-tune"]}],
               "gold_patch_runs": 3, "oracle_sanity": 1.0},
    "metric_family": ["hidden pass rate per stratum (n, Wilson 95%)", "time to green"],
    "envelope": {"max_wall_s": 600, "max_steps": 60, "max_output_tokens": 8192, "health": {"max_retries": 3}},
    "isolation": {"mode": "auto", "levels": ["bwrap"]},
    "contamination": {"posture": "filename_scan", "suspects": 0, "training_guarantee": "none"},
}


@pytest.fixture(scope="module")
def page() -> str:
    tasks, runs, strata = make_frames()
    return report_html.render_html(DECISION, CARD, tasks, runs, strata)


def test_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.I), "external resource"
    assert not re.search(r"<script", page, re.I), "no script at all"
    assert not re.search(r"<link\b", page, re.I)
    assert "url(" not in page and "@import" not in page
    assert "http://" not in page and "https://" not in page


def test_three_plots_with_titles_and_text(page: str) -> None:
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert len(svgs) == 3
    for svg in svgs:
        assert re.search(r"<svg\b[^>]*>\s*<title\b", svg), "each SVG starts with a <title>"
        assert "<text" in svg
        assert 'viewBox="0 0 900 ' in svg
    plot1, plot2, plot3 = svgs
    for solver, _ in SOLVERS:  # every solver, controls included, in plot 1
        assert f">{solver} (" in plot1, solver
    assert "tune" in plot1 and "holdout (scored split)" in plot1 and "n=3" in plot1
    assert "cand_agent only (candidate)" in plot2 and "base_agent only (baseline)" in plot2
    assert ">ana (human)<" in plot3 and ">cand_agent (candidate)<" in plot3
    assert "empty_diff" not in plot3, "controls have no time to green"
    assert "no green" in plot3 and "median" in plot3


def test_every_solver_reason_and_sentence(page: str) -> None:
    for solver, _ in SOLVERS:
        assert solver in page
    for r in DECISION["reasons"]:
        assert r["code"] in page and r["sentence"] in page
    assert "UNDERPOWERED" in page and "NOT PUBLISHABLE" in page
    assert "cand_agent clears 50%." in page
    for s in ("0.6875", "stratified_t", "228", "NO_WINNER + UNDERPOWERED", "+0.111", "[-0.200, +0.400]",
              "[-0.150, +0.350]", "≥ 0.5 counts as a pass"):
        assert s in page, s
    for key in ("dataset", "oracle", "metric_family", "envelope", "isolation", "contamination"):
        assert f"<dt>{key}</dt>" in page


def test_paired_counts_round_epoch_means() -> None:
    _, runs, _ = make_frames()
    rows, unmatched = report_html.paired_counts(runs, "cand_agent", "base_agent", "holdout", STRATA)
    assert unmatched == []
    assert [s for s, _ in rows] == STRATA + ["all"]
    total = rows[-1][1]
    assert sum(total.values()) == 9
    # cand_agent has two epochs alternating pass/fail: share 0.5 on every task, counted as a pass
    assert total["base_only"] == 0 and total["neither"] == 0
    assert total["both"] == 3 and total["cand_only"] == 6


def test_escapes_text(page: str) -> None:
    assert EVIL not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quoted&quot;" in page


def test_deterministic() -> None:
    a = report_html.render_html(DECISION, CARD, *make_frames())
    b = report_html.render_html(json.loads(json.dumps(DECISION)), json.loads(json.dumps(CARD)), *make_frames())
    assert a == b


def test_empty_tables_still_render() -> None:
    tasks, runs, strata = make_frames()
    page = report_html.render_html({"experiment": "x", "publishable": False}, {}, tasks.iloc[:0], runs.iloc[:0],
                              strata.iloc[:0])
    assert len(re.findall(r"<svg\b", page)) == 3 and "NOT PUBLISHABLE" in page


def test_write_report_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tasks, runs, strata = make_frames()
    (tmp_path / "tables").mkdir()
    for name, df in (("tasks", tasks), ("runs", runs), ("strata", strata)):
        df.to_parquet(tmp_path / "tables" / f"{name}.parquet")
    (tmp_path / "decision.json").write_text(json.dumps(DECISION))
    (tmp_path / "card.json").write_text(json.dumps(CARD))
    calls = []
    real = report_html.atomic_write_text

    def spy(path, text):
        calls.append(Path(path))
        return real(path, text)

    monkeypatch.setattr(report_html, "atomic_write_text", spy)
    out = report_html.write_report(tmp_path)
    assert out == tmp_path / "report.html" and calls == [out]
    assert out.read_text(encoding="utf-8").count("<svg") == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.json", "decision.json", "report.html", "tables"]

    # a failing write leaves the previous report intact and no temporary file behind
    def boom(self, *a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(report_html, "atomic_write_text", real)
    before = out.read_bytes()
    monkeypatch.setattr("os.replace", lambda *a, **k: boom(None))
    with pytest.raises(OSError):
        report_html.write_report(tmp_path)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["card.json", "decision.json", "report.html", "tables"]


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert report_html.main([str(tmp_path)]) == 1
    assert "lacks decision.json" in capsys.readouterr().err


def test_per_task_outcomes_without_a_results_folder(page: str) -> None:
    """Rendered from the tables alone: every task and worker, the tasks won and lost computed from
    runs.parquet as the gate computes them (the fixture's decision has no ids), and no links."""
    from sealbench.report import summaries

    sec = re.search(r'<section id="outcomes">(.*?)</section>', page, re.S).group(1)
    _, runs, _ = make_frames()
    won, lost = summaries.won_lost(summaries.per_task_scores(runs, "cand_agent", "holdout"),
                                   summaries.per_task_scores(runs, "base_agent", "holdout"))
    assert won and lost
    assert f"Tasks won by cand_agent over base_agent ({len(won)}): {', '.join(won)}" in sec
    assert f"Tasks lost by cand_agent to base_agent ({len(lost)}): {', '.join(lost)}" in sec
    for solver, _role in SOLVERS:
        assert f"<th>{solver}</th>" in sec
    assert "href=" not in sec and "No links" in sec
