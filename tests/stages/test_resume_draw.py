"""A job killed after its agent ended, before its outcome was noted, is not a second draw.

The window of tests/pipeline/test_resume.py, made deterministic with the stages themselves:
``run_agent.main`` draws a slot and its agent runs to its end (``ran`` on the draw record); the
kill is simulated by deleting the job's outputs (run.json, patch.diff) as Snakemake does for an
incomplete job; ``run_agent.main`` runs again for the same slot; ``hidden_score.main`` notes the
outcome; the draw record is checked as the gate checks it (``draws.draw_check``).

Beside it, the cases that must keep their verdict: a draw killed before its agent ended is drawn
again and disclosed (``REDRAWN_SLOTS``, not a refusal); a slot drawn again after its first draw's
outcome was noted gets that draw back (best-of-k), or, when its kept files are gone, is scored by
that outcome; a kept first draw that was edited is not restored (a fresh draw, refused ``REDRAWN``
as before).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from packgen import FIX_AGENT, make_pack  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.provenance import draws  # noqa: E402
from sealbench.stages import hash_pack, hidden_score, run_agent  # noqa: E402

pytestmark = pytest.mark.sandbox

ENVELOPE = {"max_wall_s": 60, "max_steps": 5, "max_output_tokens": 1000}
AGENT, FP, EPOCH = "me", "f" * 16, 1


class Killed(BaseException):
    """SIGKILL, as far as the stage can tell: nothing after it runs."""


class Slot:
    """One slot of one sealed task, with the job's paths and the draw record's two copies."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        pack = make_pack(tmp / "pack", n=1)
        task = pack / "tasks" / "t00"
        digest = core.task_digest(task)
        self.results = tmp / "results"
        self.sealed = self.results / "tasks" / "t00" / digest / "sealed"
        hash_pack.seal_task(task, digest, self.sealed, self.results / "tasks" / "t00" / digest / "sealed.json")
        self.run_dir = self.results / "tasks" / "t00" / digest / "runs" / AGENT / FP / str(EPOCH)
        self.score = self.results / "tasks" / "t00" / digest / "scores" / AGENT / FP / f"{EPOCH}.json"
        self.key = draws.slot_key("t00", digest, AGENT, FP, EPOCH)
        self.digest = digest
        self.copies = [pack / draws.DRAWS, self.results / draws.DRAWS]
        self.count = tmp / "agent-runs"  # one line per time the agent's command ran
        monkeypatch.setenv("SEALBENCH_PACK", str(pack))
        monkeypatch.setenv("SEALBENCH_RESULTS", str(self.results))

    def command(self, fix_from_run: int = 1) -> str:
        """An agent that leaves a different patch each draw (noise.txt), and fixes the bug from
        its ``fix_from_run``-th run on (1: always)."""
        fix = f'if [ "$(wc -l < {self.count} 2>/dev/null || echo 0)" -ge {fix_from_run - 1} ]; then ' \
              f"{FIX_AGENT}; fi"
        return f"head -c 16 /dev/urandom | od -An -tx1 > noise.txt; {fix}; echo ran >> {self.count}"

    def runs(self) -> int:
        return len(self.count.read_text().splitlines()) if self.count.exists() else 0

    def run_agent(self, command: str) -> int:
        return run_agent.main(["--sealed", str(self.sealed), "--run-dir", str(self.run_dir), "--agent", AGENT,
                               "--fingerprint", FP, "--spec", json.dumps({"command": command}),
                               "--epoch", str(EPOCH), "--envelope", json.dumps(ENVELOPE), "--sandbox", "off"])

    def hidden_score(self) -> int:
        return hidden_score.main(["--sealed", str(self.sealed), "--run-dir", str(self.run_dir),
                                  "--out", str(self.score), "--timeout", "120", "--sandbox", "off"])

    def kill_outputs(self) -> None:
        """What Snakemake does on resume with a job it never saw finish: its outputs deleted."""
        for name in ("run.json", "patch.diff"):
            (self.run_dir / name).unlink(missing_ok=True)

    def check(self) -> draws.DrawCheck:
        """The gate's look at this slot's scored row (the score record, as stratify reads it)."""
        rec = json.loads(self.score.read_text())
        row = {"split": "holdout", "role": "agent", "task_id": "t00", "task_digest": self.digest, "solver": AGENT,
               "fingerprint": FP, "epoch": EPOCH, "draw_id": rec["run"].get("draw"), "status": rec["status"],
               "hidden_pass": rec["hidden_pass"], "reason": rec["reason"], "redraw": None}
        return draws.draw_check(pd.DataFrame([row]), "holdout", self.copies, None, "p" * 64)


def codes(check: draws.DrawCheck) -> list[str]:
    return [r["code"] for r in check.reasons]


def notes(check: draws.DrawCheck) -> list[str]:
    return [n["code"] for n in check.notes]


def test_a_kill_after_the_agent_ended_restores_its_draw_instead_of_drawing_again(tmp_path, monkeypatch) -> None:
    s = Slot(tmp_path, monkeypatch)
    assert s.run_agent(s.command()) == 0 and s.runs() == 1
    first_patch = (s.run_dir / "patch.diff").read_bytes()
    first_run = json.loads((s.run_dir / "run.json").read_text())
    assert first_run["draw"] in draws.read_draws(s.copies).ran, "the agent ended: its draw ran"
    s.kill_outputs()  # killed after the agent ended, before Snakemake saw the job finish
    assert s.run_agent(s.command()) == 0
    s.kill_outputs()  # and killed again, after the restore, before scoring: restored again
    assert s.run_agent(s.command()) == 0 and s.hidden_score() == 0
    check = s.check()
    assert "REDRAWN" not in codes(check) and not check.reasons, check.reasons
    assert "REDRAWN_SLOTS" not in notes(check) and check.draws == 1
    assert s.runs() == 1, "the agent was not started again: the slot's first draw is what is scored"
    assert (s.run_dir / "patch.diff").read_bytes() == first_patch
    again = json.loads((s.run_dir / "run.json").read_text())
    restored = again.pop("restored")
    assert again == first_run, "the run record is the first draw's, and says it was restored"
    assert restored["draw"] == first_run["draw"] and "interrupted" in restored["why"]
    assert json.loads(s.score.read_text())["run"]["draw"] == first_run["draw"]


def test_a_kill_before_the_agent_ended_is_a_disclosed_redraw(tmp_path, monkeypatch) -> None:
    """Honest, unchanged: the job killed before its draw was seen ending (run.json already
    written, the ``ran`` line not) is drawn again, counted as interrupted, never refused."""
    s = Slot(tmp_path, monkeypatch)
    real = draws.note_ran

    def killed(*a, **k):
        raise Killed()

    monkeypatch.setattr(draws, "note_ran", killed)
    with pytest.raises(Killed):
        s.run_agent(s.command())
    monkeypatch.setattr(draws, "note_ran", real)
    assert s.runs() == 1 and not draws.read_draws(s.copies).ran
    s.kill_outputs()
    assert s.run_agent(s.command()) == 0
    assert s.runs() == 2 and "restored" not in json.loads((s.run_dir / "run.json").read_text())
    assert s.hidden_score() == 0
    check = s.check()
    assert not check.reasons, check.reasons
    assert "REDRAWN_SLOTS" in notes(check) and check.interrupted == 1 and check.draws == 2


def test_best_of_k_after_a_noted_outcome_gets_the_first_draw_back(tmp_path, monkeypatch) -> None:
    """The attack: the first draw fails and is scored; its folder and score deleted, the same
    command again. The slot's scored draw is restored (the agent is not run again) and scores as
    it did: no second draw to choose from."""
    s = Slot(tmp_path, monkeypatch)
    cmd = s.command(fix_from_run=2)  # fails the first time, fixes the bug the second
    assert s.run_agent(cmd) == 0 and s.hidden_score() == 0
    assert json.loads(s.score.read_text())["status"] == "fail"
    s.kill_outputs()
    s.score.unlink()
    assert s.run_agent(cmd) == 0 and s.runs() == 1, "a scored first draw is restored: the slot is not drawn again"
    assert s.hidden_score() == 0 and json.loads(s.score.read_text())["status"] == "fail"
    check = s.check()
    assert not check.reasons and "REDRAWN_SLOTS" not in notes(check) and check.draws == 1


def test_a_scored_draw_whose_kept_files_are_gone_is_drawn_again_and_scored_by_its_outcome(
        tmp_path, monkeypatch, capsys) -> None:
    """Best-of-k where the restore cannot help (the kept files deleted from both copies): the
    slot is drawn again (and passes), and the first draw's recorded outcome is what counts."""
    s = Slot(tmp_path, monkeypatch)
    cmd = s.command(fix_from_run=2)
    assert s.run_agent(cmd) == 0 and s.hidden_score() == 0
    for copy in s.copies:
        for blob in (copy.parent / draws.KEPT_DIR).iterdir():
            blob.chmod(0o644)
            blob.unlink()
    s.kill_outputs()
    s.score.unlink()
    assert s.run_agent(cmd) == 0 and s.runs() == 2
    assert "could not be restored" in capsys.readouterr().err
    assert s.hidden_score() == 0 and json.loads(s.score.read_text())["status"] == "pass"
    check = s.check()
    assert check.runs.iloc[0]["status"] == "fail" and check.first_scored == 1, check.runs.iloc[0].to_dict()
    assert "REDRAWN_SLOTS" in notes(check)


def test_deleting_an_unscored_finished_draw_gets_the_same_draw_back(tmp_path, monkeypatch) -> None:
    """The attack the refusal stood for: the first draw ended, its patch looked bad, its folder
    was deleted before scoring. Its own result is restored (the agent is not run again) and scored."""
    s = Slot(tmp_path, monkeypatch)
    cmd = s.command(fix_from_run=2)
    assert s.run_agent(cmd) == 0
    import shutil

    shutil.rmtree(s.run_dir)
    assert s.run_agent(cmd) == 0 and s.runs() == 1
    assert s.hidden_score() == 0 and json.loads(s.score.read_text())["status"] == "fail"
    assert not s.check().reasons


def test_an_edited_kept_draw_is_not_restored(tmp_path, monkeypatch, capsys) -> None:
    """The kept patch replaced by a better one: its digest no longer matches the record's, so
    nothing is restored; the slot is drawn again and the gate refuses it, as before."""
    s = Slot(tmp_path, monkeypatch)
    cmd = s.command(fix_from_run=2)
    assert s.run_agent(cmd) == 0
    ran = draws.read_draws(s.copies)
    kept = ran.kept[json.loads((s.run_dir / "run.json").read_text())["draw"]]
    for copy in s.copies:
        blob = draws.kept_path(copy, kept["patch.diff"])
        blob.chmod(0o644)
        blob.write_bytes(b"a better patch\n")
    s.kill_outputs()
    assert s.run_agent(cmd) == 0 and s.runs() == 2
    assert "could not be restored" in capsys.readouterr().err
    assert s.hidden_score() == 0
    assert "REDRAWN" in codes(s.check())


def test_the_first_draw_that_ran_counts_even_after_an_interrupted_one(tmp_path: Path) -> None:
    """Draw 1 interrupted, draw 2 ran and failed, draw 3 passed: draw 2's outcome is scored (the
    interrupted first draw does not let a later draw replace a scored one)."""
    copies = [tmp_path / "p" / draws.DRAWS, tmp_path / "r" / draws.DRAWS]
    key = draws.slot_key("t00", "a" * 64, AGENT, FP, EPOCH)
    draws.start_draw(key, copies)
    second = draws.start_draw(key, copies)
    draws.note_ran(key, second, "exit", copies)
    draws.note_outcome(key, second, "fail", False, copies)
    third = draws.start_draw(key, copies)
    draws.note_ran(key, third, "exit", copies)
    draws.note_outcome(key, third, "pass", True, copies)
    row = {"split": "holdout", "role": "agent", "task_id": "t00", "task_digest": "a" * 64, "solver": AGENT,
           "fingerprint": FP, "epoch": EPOCH, "draw_id": third, "status": "pass", "hidden_pass": True,
           "reason": None, "redraw": None}
    check = draws.draw_check(pd.DataFrame([row]), "holdout", copies, None, "p" * 64)
    assert check.runs.iloc[0]["status"] == "fail" and check.first_scored == 1
    # and with draw 2 never scored: refused, as a first draw that ran without its outcome
    copies2 = [tmp_path / "p2" / draws.DRAWS]
    draws.start_draw(key, copies2)
    second = draws.start_draw(key, copies2)
    draws.note_ran(key, second, "exit", copies2)
    third = draws.start_draw(key, copies2)
    draws.note_ran(key, third, "exit", copies2)
    check2 = draws.draw_check(pd.DataFrame([{**row, "draw_id": third}]), "holdout", copies2, None, "p" * 64)
    assert "REDRAWN" in codes(check2)


def test_attack_the_same_pack_from_another_results_folder_runs_no_agent_again(tmp_path, monkeypatch) -> None:
    """Issue 35.1: the pack run in one working folder, then the same pack, agent and config in
    another (its own results/, as docs/packs.md runs a pack). The slot's first draw ran and was
    scored; the pack's draw record (it travels with the pack) keeps its result. The second folder
    restores that draw: the agent is not run again, the slot has one draw (no REDRAWN_SLOTS), and
    it scores as it did."""
    s = Slot(tmp_path, monkeypatch)
    cmd = s.command(fix_from_run=2)  # a second draw would pass: a redraw could not hide as a restore
    assert s.run_agent(cmd) == 0 and s.hidden_score() == 0
    first_run = json.loads((s.run_dir / "run.json").read_text())
    assert json.loads(s.score.read_text())["status"] == "fail"
    # the other folder: its own results/, the same pack (and its draw record)
    other = tmp_path / "elsewhere" / "results"
    digest = s.digest
    monkeypatch.setenv("SEALBENCH_RESULTS", str(other))
    pack = Path(s.copies[0]).parent
    s.results, s.copies = other, [s.copies[0], other / draws.DRAWS]
    s.sealed = other / "tasks" / "t00" / digest / "sealed"
    hash_pack.seal_task(pack / "tasks" / "t00", digest, s.sealed, other / "tasks" / "t00" / digest / "sealed.json")
    s.run_dir = other / "tasks" / "t00" / digest / "runs" / AGENT / FP / str(EPOCH)
    s.score = other / "tasks" / "t00" / digest / "scores" / AGENT / FP / f"{EPOCH}.json"
    assert s.run_agent(cmd) == 0
    assert s.runs() == 1, "the agent ran again in the second folder"
    again = json.loads((s.run_dir / "run.json").read_text())
    restored = again.pop("restored")
    assert again == first_run and restored["draw"] == first_run["draw"] and "scored" in restored["why"]
    assert s.hidden_score() == 0 and json.loads(s.score.read_text())["status"] == "fail"
    check = s.check()
    assert not check.reasons and "REDRAWN_SLOTS" not in notes(check) and check.draws == 1, (check.reasons, check.notes)
