"""Issue 27, "honest work gets its number": results/latest, `sealbench show` and `progress`
describe the experiment of the config just run, also when nothing had to be done; `sealbench
try` works on any pack, split or not, and any fault in it is one sentence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import FIX_AGENT, NOOP_AGENT, STAMP, make_pack, write_config  # noqa: E402
from pipeline_runs import FinishedRun, copy_run, smk  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core.configuration import load_config_file  # noqa: E402
from sealbench.core.untrusted import remove_tree  # noqa: E402
from sealbench.pack.packs import load_pack  # noqa: E402
from sealbench.stages import split  # noqa: E402

#: An agent that leaves 5000 nested folders in its workspace (deeper than Python's recursion limit).
DEEP_AGENT = ("python3 -c \"import os; [(os.mkdir('x'), os.chdir('x')) for _ in range(5000)]\"; " + STAMP)
CRASH_AGENT = "kill -SEGV $$"


def sealbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    return subprocess.run([sys.executable, "-m", "sealbench.app.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def one_sentence(err: str) -> str:
    """The one line a fault prints: no traceback, one `sealbench:` line."""
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("sealbench: "), err[-3000:]
    return lines[0]


# ------------------------------------------------------------------------- show: the verdict line


def _decision(tmp_path: Path, **over) -> Path:
    d = {"experiment": "e" * 16, "publishable": True, "headline": None,
         "headline_metric": "fixer hidden-test pass rate on the holdout split (per-task, epochs averaged)",
         "pooled_headline_withheld": True, "reasons": [],
         "notes": [{"code": "UNBALANCED_STRATA", "sentence": "70% of the holdout tasks are in stratum xs"},
                   {"code": "HOLDOUT_REUSED", "sentence": "another note"}],
         "comparison": {}, "per_stratum": [], "allowed_sentences": [], "dominant_failures": []}
    d.update(over)
    folder = tmp_path / "exp"
    folder.mkdir(exist_ok=True)
    (folder / "decision.json").write_text(json.dumps(d))
    return folder


def _first_line(capsys) -> str:
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.unit
def test_attack_show_prints_no_headline_none_for_a_per_stratum_decision(tmp_path: Path, capsys, monkeypatch) -> None:
    """Publishable with the pooled number withheld: said as such, with the codes that withheld it."""
    monkeypatch.setenv("COLUMNS", "300")
    folder = _decision(tmp_path)
    assert cli.main(["show", str(folder)]) == 0
    line = _first_line(capsys)
    assert "None" not in line, line
    assert "PUBLISHABLE per stratum; no pooled headline (UNBALANCED_STRATA)" in line, line
    assert cli.main(["check", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "per stratum" in out, out


@pytest.mark.unit
def test_show_keeps_the_headline_and_the_refusal(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    folder = _decision(tmp_path, headline=0.667, pooled_headline_withheld=False, notes=[])
    assert cli.main(["show", str(folder)]) == 0
    assert "PUBLISHABLE; headline 0.667 (fixer hidden-test pass rate" in _first_line(capsys)
    folder = _decision(tmp_path, publishable=False, pooled_headline_withheld=False,
                       reasons=[{"code": "UNSANDBOXED", "sentence": "no sandbox"}], notes=[])
    assert cli.main(["show", str(folder)]) == 0
    line = _first_line(capsys)
    assert "NOT PUBLISHABLE; no headline (UNSANDBOXED)" in line and "None" not in line, line


# ------------------------------------------------------------------------- results/latest




@pytest.mark.pipeline
def test_attack_an_up_to_date_rerun_points_latest_at_its_own_experiment(tmp_path: Path,
                                                                         default_run: FinishedRun) -> None:
    """Config A, then config B (another candidate), then A again with nothing to do: latest is
    A's experiment, `show` and `progress` describe it; `-n` writes nothing."""
    # A is the default config: its first run is a copy of the session's default run
    tmp_path = copy_run(default_run, tmp_path / "w")
    a = write_config(tmp_path / "a.yaml", tmp_path / "pack")
    # B: A's agents unchanged (their runs are reused) and another candidate, whose runs are B's work
    b = write_config(tmp_path / "b.yaml", tmp_path / "pack",
                     agents={"fixer": {"command": FIX_AGENT}, "idle": {"command": NOOP_AGENT},
                             "fixer2": {"command": "sed -i 's/a - b/b + a/' calc.py; " + STAMP}},
                     candidate="fixer2", baseline="idle")
    latest = tmp_path / "results" / "latest"
    res = smk(tmp_path, "--cores", "2", "gate", configfile=a)
    assert res.returncode == 0, res.stderr[-4000:]
    exp_a = latest.resolve()
    res = smk(tmp_path, "--cores", "2", "gate", configfile=b)
    assert res.returncode == 0, res.stderr[-4000:]
    exp_b = latest.resolve()
    assert exp_b != exp_a
    # planning A writes nothing: latest stays on B
    res = smk(tmp_path, "-n", "gate", configfile=a)
    assert res.returncode == 0 and "Nothing to be done" in res.stdout + res.stderr, res.stderr[-3000:]
    assert latest.resolve() == exp_b
    ours = sealbench("progress", "--configfile", str(a), "--replace-workflow-config", "--results", "results",
                     cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert f"experiment {exp_b.name}" in ours.stdout and "not this config's" in ours.stdout, ours.stdout
    # the real run of A, nothing to do: latest moves back to A
    res = smk(tmp_path, "--cores", "1", "gate", configfile=a)
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "Nothing to be done" in out, out[-3000:]
    assert latest.resolve() == exp_a
    index = (tmp_path / "results" / "index.html").read_text()
    assert exp_a.name in index
    shown = sealbench("show", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"experiment {exp_a.name}" in shown.stdout.splitlines()[0] and "None" not in shown.stdout.splitlines()[0]
    ours = sealbench("progress", "--configfile", str(a), "--replace-workflow-config", "--results", "results",
                     cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr
    assert f"experiment {exp_a.name}" in ours.stdout and "this config's" in ours.stdout, ours.stdout
    assert "not this config's" not in ours.stdout, ours.stdout


# ------------------------------------------------------------------------- try: any pack


@pytest.fixture()
def small(tmp_path: Path, monkeypatch) -> Path:
    """A freshly imported one-task pack: no split, none possible (a split needs 12 tasks)."""
    monkeypatch.chdir(tmp_path)
    pack = make_pack(tmp_path / "pack", n=1)
    write_config(tmp_path / "cfg.yaml", pack,
                 agents={"fixer": {"command": "sed -i 's/a - b/a + b/' calc.py; " + STAMP},
                         "idle": {"command": "true; " + STAMP},
                         "deep": {"command": DEEP_AGENT}, "crash": {"command": CRASH_AGENT}})
    return tmp_path


@pytest.mark.sandbox
def test_attack_try_on_a_one_task_pack_runs_and_writes_nothing_to_the_pack(small: Path, capsys) -> None:
    before = sorted(p.relative_to(small) for p in (small / "pack").rglob("*"))
    rc = cli.main(["try", "fixer", "t00", "--config", str(small / "cfg.yaml")])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "fixer on t00 (unsplit)" in captured.out and "→ PASS" in captured.out, captured.out
    assert "no frozen split" in captured.out and "not in the pack's ledger" in captured.out, captured.out
    # a try is not a scored run: no split frozen, no ledger line, nothing added to the pack
    assert sorted(p.relative_to(small) for p in (small / "pack").rglob("*")) == before
    assert not (small / "pack" / split.MANIFEST).exists() and not (small / "pack" / "ledger.jsonl").exists()
    # --holdout changes nothing on a pack without a holdout
    assert cli.main(["try", "idle", "t00", "--config", str(small / "cfg.yaml"), "--holdout"]) == 0
    assert "→ FAIL" in capsys.readouterr().out
    assert sorted(p.relative_to(small) for p in (small / "pack").rglob("*")) == before


@pytest.mark.sandbox
def test_try_on_an_unfrozen_splittable_pack_keeps_the_split_it_will_get(tmp_path: Path, monkeypatch,
                                                                         capsys) -> None:
    """Honest case: 12 tasks, no manifest yet: the side is the one the first run will freeze
    (computed, not written); a would-be holdout task stays a look the ledger records."""
    monkeypatch.chdir(tmp_path)
    pack = make_pack(tmp_path / "pack")
    write_config(tmp_path / "cfg.yaml", pack)
    cfg = load_config_file(tmp_path / "cfg.yaml")
    sides = split.check(pack, {t.id: t.stratum for t in load_pack(pack)}, cfg["seed"], cfg["holdout_frac"])
    hold = sorted(sides["holdout"])[0]
    assert cli.main(["try", "fixer", hold, "--config", str(tmp_path / "cfg.yaml")]) == 2
    assert "is on the holdout" in capsys.readouterr().err
    assert cli.main(["try", "fixer", hold, "--config", str(tmp_path / "cfg.yaml"), "--holdout"]) == 0
    assert f"fixer on {hold} (holdout)" in capsys.readouterr().out
    assert [json.loads(x)["kind"] for x in (pack / "ledger.jsonl").read_text().splitlines()] == ["try"]
    assert not (pack / split.MANIFEST).exists()


# ------------------------------------------------------------------------- try: faults in one sentence


@pytest.mark.sandbox
def test_attack_a_deep_pack_folder_is_one_sentence(small: Path) -> None:
    """A task folder nested deeper than Python's recursion limit: one sentence, no traceback."""
    fd = os.open(small / "pack" / "tasks" / "t00" / "repo", os.O_RDONLY)
    try:
        for _ in range(1500):
            os.mkdir("y", dir_fd=fd)
            nxt = os.open("y", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    try:
        res = sealbench("try", "fixer", "t00", "--config", "cfg.yaml", cwd=small)
        assert res.returncode != 0
        line = one_sentence(res.stderr)
        assert "reading the pack" in line and "tasks/t00/repo/y" in line and "nests deeper than" in line, line
    finally:
        assert remove_tree(small / "pack" / "tasks" / "t00" / "repo" / "y") == []


@pytest.mark.sandbox
def test_attack_an_unwritable_results_folder_is_one_sentence(small: Path) -> None:
    res = sealbench("try", "fixer", "t00", "--config", "cfg.yaml", "--results", "/proc/no-such-results",
                    cwd=small)
    assert res.returncode != 0
    line = one_sentence(res.stderr)
    assert "/proc/no-such-results" in line, line


@pytest.mark.sandbox
def test_a_missing_task_is_one_sentence(small: Path) -> None:
    res = sealbench("try", "fixer", "t99", "--config", "cfg.yaml", cwd=small)
    assert res.returncode == 2 and "no task 't99'" in one_sentence(res.stderr)


@pytest.mark.sandbox
def test_deep_folder_and_crashing_agents_are_their_attempts_result(small: Path) -> None:
    """What an agent does is the try's result, never a harness fault: a workspace 5000 folders
    deep is scored as an empty patch, a command killed by a signal is recorded; both FAIL."""
    res = sealbench("try", "deep", "t00", "--config", "cfg.yaml", cwd=small)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "→ FAIL" in res.stdout and "nests deeper than" in res.stdout, res.stdout
    res = sealbench("try", "crash", "t00", "--config", "cfg.yaml", cwd=small)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert "exit 139" in res.stdout and "→ FAIL" in res.stdout, res.stdout
