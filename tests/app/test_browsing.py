"""Browsing the results (issue 13, point 6): report.html carries every table and line of
report.md plus per-task outcomes with working links to each run's patch and logs; the tasks
the candidate won and lost against the baseline (report and `sealbench show`); results/index.html
and `sealbench list` over every experiment, old ones and none included."""

from __future__ import annotations

import html as htmlmod
import json
import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from test_gate_refusals import BASE, CAND, build_spec, unsandboxed_agent, write_experiment  # noqa: E402

from sealbench.app import cli  # noqa: E402
from sealbench.core import core, paths  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.report import report_html, report_md  # noqa: E402

pytestmark = pytest.mark.unit

HUMAN = "ana"


# ------------------------------------------------------------------------------ builders


def _rich_spec() -> dict:
    """The clean experiment with two epochs (so pass@k exists) and a person on the holdout."""
    spec = build_spec()
    spec["cfg"]["epochs"] = 2
    extra = []
    for r in spec["runs"]:
        if r["role"] == "agent":
            extra.append(dict(r, epoch=2))
    for t in spec["tasks"]:
        if t["split"] == "holdout":
            row = dict(next(r for r in spec["runs"] if r["task_id"] == t["task_id"] and r["solver"] == CAND),
                       solver=HUMAN, role="human", fingerprint="human-ana", epoch=1, isolation="human",
                       tokens_in=None, tokens_out=None, cost_usd=None, time_to_green_s=600.0)
            extra.append(row)
    spec["runs"] += extra
    return spec


def _lose_one(spec: dict) -> None:
    """The baseline passes m03 (holdout) where the candidate fails: one lost task."""
    for r in spec["runs"]:
        if r["task_id"] == "m03" and r["solver"] == BASE:
            r.update(status="pass", visible_pass=True, hidden_pass=True, reason=None)


def _gate(root: Path, spec: dict) -> Path:
    """Write the experiment under ``root`` (a results folder) and run the gate stage on it."""
    exp_dir, split_path, pack_hash = write_experiment(root, spec)
    assert gate.main(["--experiment-dir", str(exp_dir), "--split", str(split_path), "--pack-hash", str(pack_hash),
                      "--latest", str(root / "latest")]) == 0
    return exp_dir


def _fake_run_files(root: Path, runs: pd.DataFrame) -> None:
    """The files a real run leaves under results/tasks/ for every row of runs.parquet."""
    res = str(root)
    for r in runs.itertuples():
        t, d, s, fp, e = r.task_id, r.task_digest, r.solver, r.fingerprint, int(r.epoch)
        if r.role == "agent":
            run = Path(paths.run_dir(t, d, s, fp, e, res))
            run.mkdir(parents=True, exist_ok=True)
            (run / "patch.diff").write_text("--- a/x\n+++ b/x\n")
            (run / "agent.stdout").write_text("ran\n")
            Path(paths.score(t, d, s, fp, e, res)).with_suffix(".logs").mkdir(parents=True, exist_ok=True)
        elif r.role == "human":
            run = Path(paths.session_dir(t, d, s, e, res))
            run.mkdir(parents=True, exist_ok=True)
            (run / "patch.diff").write_text("--- a/x\n+++ b/x\n")
            Path(paths.session_score(t, d, s, e, res)).with_suffix(".logs").mkdir(parents=True, exist_ok=True)
        else:
            ctl = Path(paths.controls_dir(t, d, res))
            (ctl / "logs" / f"{s}-{e}").mkdir(parents=True, exist_ok=True)
            (ctl / f"{s}.patch").write_text("")


# ------------------------------------------------------------------- markdown vs html


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _md_parts(md: str) -> tuple[list[str], list[tuple[str, bool, list[str], list[list[str]]]], list[str]]:
    """report.md as (headings, tables as (heading, directly under it, header, rows), other lines)."""
    headings, tables, lines = [], [], []
    heading, last, in_code = "", "", False
    md_lines = md.splitlines()
    i = 0
    while i < len(md_lines):
        line = md_lines[i]
        if line.startswith("```"):
            in_code = not in_code
        elif in_code:
            pass
        elif m := re.match(r"^#{1,4} (.*)$", line):
            heading = m.group(1).strip()
            headings.append(heading)
            last = "heading"
        elif line.startswith("|"):
            block = []
            while i < len(md_lines) and md_lines[i].startswith("|"):
                block.append(_cells(md_lines[i]))
                i += 1
            tables.append((heading, last == "heading", block[0], block[2:]))
            last = "table"
            continue
        elif line.strip():
            lines.append(line.strip())
            last = "text"
        i += 1
    return headings, tables, lines


def _text(fragment: str) -> str:
    return " ".join(htmlmod.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def _html_headings(page: str) -> list[tuple[int, str, int, int]]:
    """(level, text, start, end) of every h1-h4 of the page."""
    return [(int(m.group(1)), _text(m.group(2)), m.start(), m.end())
            for m in re.finditer(r"<h([1-4])\b[^>]*>(.*?)</h\1>", page, re.S)]


def _html_segment(page: str, heading: str) -> str:
    """The page from the heading whose text is (or starts with) ``heading`` to the next heading."""
    hs = _html_headings(page)
    found = [k for k, h in enumerate(hs) if h[1] == heading] or [k for k, h in enumerate(hs)
                                                                  if h[1].startswith(heading)]
    assert found, f"report.html has no heading '{heading}' (report.md has one)"
    k = found[0]
    end = hs[k + 1][2] if k + 1 < len(hs) else len(page)
    return page[hs[k][3]:end]


def _strip_md(line: str) -> str:
    line = re.sub(r"^- ", "", line)
    return " ".join(line.replace("**", "").replace("~~", "").replace("`", "").split())


@pytest.fixture(scope="module")
def rich(tmp_path_factory) -> tuple[str, str, Path]:
    """(report.md, report.html) of one gated experiment with every optional table present."""
    root = tmp_path_factory.mktemp("rich")
    spec = _rich_spec()
    _lose_one(spec)
    exp_dir, split_path, pack_hash = write_experiment(root, spec)
    decision, card, _ = gate.decide(exp_dir, split_path, pack_hash)
    decision["public_minus_holdout"] = {"delta": 0.1, "public_rate": 0.6, "holdout_rate": 0.5}
    tables = {t: pd.read_parquet(exp_dir / "tables" / f"{t}.parquet") for t in ("tasks", "runs", "strata")}
    md = report_md.render_report(decision, card, tables["strata"], tables["tasks"])
    page = report_html.render_html(decision, card, tables["tasks"], tables["runs"], tables["strata"])
    return md, page, exp_dir


def test_the_fixture_has_every_optional_table_of_report_md(rich) -> None:
    md, _page, _ = rich
    for heading in ("## pass@k and pass^k", "## The candidate against the do-nothing controls",
                    "## Humans beside agents", "## Tokens and cost per passing task", "Public minus holdout"):
        assert heading in md, heading


def test_every_table_of_report_md_sits_under_a_heading(rich) -> None:
    """So a table's heading names it (and the next test can find its twin in report.html)."""
    _md, _page, _ = rich
    for heading, under, header, _rows in _md_parts(_md)[1]:
        assert under, f"report.md: the table {header} is not directly under a heading (it follows '{heading}')"


def test_report_html_has_every_heading_table_and_line_of_report_md(rich) -> None:
    md, page, _ = rich
    headings, tables, lines = _md_parts(md)
    for h in headings:
        if h.startswith("sealbench report"):
            assert _text(page).count(h) >= 1, h
        else:
            _html_segment(page, h)
    for heading, _under, header, rows in tables:
        seg = _html_segment(page, heading)
        ths = [_text(x) for x in re.findall(r"<th\b[^>]*>(.*?)</th>", seg, re.S)]
        tds = {_text(x) for x in re.findall(r"<td\b[^>]*>(.*?)</td>", seg, re.S)}
        missing = [h for h in header if h not in ths]
        assert not missing, f"report.html's '{heading}' lacks the columns {missing} of report.md's table"
        for row in rows:
            for c in row:
                assert c in tds, f"report.html's '{heading}' lacks the cell {c!r} of report.md's row {row}"
    text = _text(page)
    for line in lines:
        plain = _strip_md(line)
        if m := re.match(r"^([A-Z_]+): (.*)$", plain):  # a reason or note: its code and its sentence
            assert m.group(1) in text and " ".join(m.group(2).split()) in text, line
        else:
            assert plain in text, f"report.html lacks report.md's line: {line}"


def test_report_md_names_the_won_and_lost_tasks(rich) -> None:
    md, page, _ = rich
    assert re.search(r"won.*xs05", md) and re.search(r"lost.*m03", md)
    assert re.search(r"won.*xs05", _text(page)) and re.search(r"lost.*m03", _text(page))


# ------------------------------------------------------------------- per-task outcomes


def test_per_task_outcomes_link_each_run_to_its_patch_and_logs(tmp_path: Path) -> None:
    spec = _rich_spec()
    _lose_one(spec)
    exp_dir, split_path, pack_hash = write_experiment(tmp_path, spec)
    runs = pd.read_parquet(exp_dir / "tables" / "runs.parquet")
    _fake_run_files(tmp_path, runs)
    assert gate.main(["--experiment-dir", str(exp_dir), "--split", str(split_path), "--pack-hash", str(pack_hash),
                      "--latest", str(tmp_path / "latest")]) == 0
    page = (exp_dir / "report.html").read_text(encoding="utf-8")
    m = re.search(r'<section id="outcomes">(.*?)</section>', page, re.S)
    assert m, "report.html has no per-task outcome section (id 'outcomes')"
    sec = m.group(1)
    hrefs = re.findall(r'href="([^"]+)"', sec)
    assert hrefs
    for h in hrefs:
        assert not re.match(r"^([a-z]+:|/)", h), f"not a relative link: {h}"
        assert (exp_dir / htmlmod.unescape(h)).exists(), f"broken link from report.html: {h}"
    res = os.path.relpath(tmp_path, exp_dir)
    for r in runs.itertuples():
        if r.role == "agent":
            want = paths.run_patch(r.task_id, r.task_digest, r.solver, r.fingerprint, int(r.epoch), res)
        elif r.role == "human":
            want = paths.session_dir(r.task_id, r.task_digest, r.solver, int(r.epoch), res) + "/patch.diff"
        else:
            want = f"{paths.controls_dir(r.task_id, r.task_digest, res)}/{r.solver}.patch"
        assert want in hrefs, f"no link to {want}"
    for status in ("pass", "fail"):
        assert f">{status}<" in sec
    for solver in (CAND, BASE, HUMAN, "oracle", "stub", "empty_diff"):
        assert solver in sec
    # which tasks the candidate won or lost, beside the outcome of each
    text = _text(sec)
    assert re.search(r"won.*xs05", text) and re.search(r"lost.*m03", text)


def test_outcome_links_are_left_out_when_the_files_are_gone(tmp_path: Path) -> None:
    exp_dir = _gate(tmp_path, build_spec())  # no run files under results/tasks/
    page = (exp_dir / "report.html").read_text(encoding="utf-8")
    m = re.search(r'<section id="outcomes">(.*?)</section>', page, re.S)
    assert m and "href=" not in m.group(1)


# ---------------------------------------------------------------------- sealbench show


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_show_prints_the_won_and_lost_task_ids(tmp_path: Path, capsys) -> None:
    spec = build_spec()
    _lose_one(spec)
    exp_dir = _gate(tmp_path, spec)
    d = json.loads((exp_dir / "decision.json").read_text())
    assert d["comparison"]["wins"] == 1 and d["comparison"]["losses"] == 1
    assert cli.main(["show", str(exp_dir)]) == 0
    out = capsys.readouterr().out
    won = [ln for ln in out.splitlines() if re.search(r"\bwon\b", ln, re.I)]
    lost = [ln for ln in out.splitlines() if re.search(r"\blost\b", ln, re.I)]
    assert won and "xs05" in won[0] and "m03" not in won[0], out
    assert lost and "m03" in lost[0] and "xs05" not in lost[0], out


def test_show_says_none_when_nothing_was_lost_even_for_an_older_decision(tmp_path: Path, capsys) -> None:
    exp_dir = _gate(tmp_path, build_spec())
    d = json.loads((exp_dir / "decision.json").read_text())
    for k in ("won_task_ids", "lost_task_ids"):  # an older decision: computed from tables/runs.parquet
        d["comparison"].pop(k, None)
    core.write_json(exp_dir / "decision.json", d)
    assert cli.main(["show", str(exp_dir)]) == 0
    out = capsys.readouterr().out
    won = [ln for ln in out.splitlines() if re.search(r"\bwon\b", ln, re.I)]
    lost = [ln for ln in out.splitlines() if re.search(r"\blost\b", ln, re.I)]
    assert won and "xs05" in won[0], out
    assert lost and "none" in lost[0], out


# ------------------------------------------------------- results/index.html, sealbench list


def _two_experiments(root: Path) -> tuple[Path, Path]:
    first = _gate(root, build_spec())
    spec = build_spec()
    unsandboxed_agent(spec)
    spec["cfg"]["mde"] = 0.2  # another config: another experiment, under another card
    spec["cfg"]["card_name"] = "second-card"
    second = _gate(root, spec)
    assert first != second
    os.utime(first / "decision.json", (1_700_000_000, 1_700_000_000))  # 2023-11-14
    os.utime(second / "decision.json", (1_800_000_000, 1_800_000_000))  # 2027-01-15
    return first, second


def test_list_and_index_over_two_experiments_newest_first(tmp_path: Path, capsys) -> None:
    first, second = _two_experiments(tmp_path)
    assert cli.main(["list", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    a, b = out.index(second.name), out.index(first.name)
    assert a < b, "newest first"
    row_old = next(ln for ln in out.splitlines() if first.name in ln)
    row_new = next(ln for ln in out.splitlines() if second.name in ln)
    for row in (row_old, row_new):
        assert CAND in row and BASE in row and "p" * 12 in row
    assert "2023-11-14" in row_old and "2027-01-15" in row_new
    assert "publishable" in row_old.lower() and "UNSANDBOXED" in row_new
    d_old = json.loads((first / "decision.json").read_text())
    assert "default" in row_old and "second-card" in row_new  # the card: config card_name
    assert d_old["publishable"] and f"{d_old['headline']:.3f}" in row_old

    # the gate wrote results/index.html beside results/latest; regenerate it from the same rows
    from sealbench.core import results_index

    index = tmp_path / "index.html"
    assert index.is_file(), "the gate writes results/index.html"
    results_index.write_index(tmp_path)
    page = index.read_text(encoding="utf-8")
    text = _text(page)
    assert text.index(second.name) < text.index(first.name)
    assert "UNSANDBOXED" in text and "2023-11-14" in text and "second-card" in text
    hrefs = re.findall(r'href="([^"]+)"', page)
    for exp in (first, second):
        for name in ("report.html", "decision.json"):
            assert f"experiments/{exp.name}/{name}" in hrefs
    for h in hrefs:
        assert not re.match(r"^([a-z]+:|/)", h) and (tmp_path / htmlmod.unescape(h)).exists(), h
    assert not re.search(r"<script|https?://", page.replace("http://www.w3.org", ""))


def test_list_and_index_with_an_old_format_experiment(tmp_path: Path, capsys) -> None:
    from sealbench.core import results_index

    good = _gate(tmp_path, build_spec())
    old = tmp_path / "experiments" / "0ld0ld0ld0ld0ld0"
    core.write_json(old / "decision.json", {"experiment": old.name, "publishable": False, "headline": None,
                                            "reasons": [{"code": "LEAK_SUSPECT", "sentence": "m03 leaked."}]})
    undecided = tmp_path / "experiments" / "notdecidedyet000"
    undecided.mkdir()
    (undecided / "experiment.json").write_text("{}")
    broken = tmp_path / "experiments" / "brokenbrokenbrok"
    broken.mkdir()
    (broken / "decision.json").write_text("{not json")
    assert cli.main(["list", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for exp in (good, old, undecided, broken):
        assert exp.name in out
    row = next(ln for ln in out.splitlines() if old.name in ln)
    assert "LEAK_SUSPECT" in row and "—" in row
    results_index.write_index(tmp_path)
    text = _text((tmp_path / "index.html").read_text(encoding="utf-8"))
    for exp in (good, old, undecided, broken):
        assert exp.name in text
    assert "—" in text and "LEAK_SUSPECT" in text


def test_list_and_index_with_no_experiment(tmp_path: Path, capsys) -> None:
    from sealbench.core import results_index

    assert cli.main(["list", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "no experiment" in out.lower()
    (tmp_path / "results").mkdir()
    results_index.write_index(tmp_path / "results")
    assert "no experiment" in _text((tmp_path / "results" / "index.html").read_text(encoding="utf-8")).lower()
