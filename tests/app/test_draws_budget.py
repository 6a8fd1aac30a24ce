"""Nothing done after a run starts moves the number (issue 26, points 1, 2 and 4).

- every draw on the record (``draws.py``): a slot drawn again after its folder was deleted is
  scored by its first draw, or refused, and the sentence counts it; the record lives twice;
- a holdout's budget (``holdout_budget``): every version counts by fingerprint, the headline
  interval is corrected for those before, the first past the budget is ``HOLDOUT_EXHAUSTED``;
  a helper file two agents share does not make one the other;
- ``humans`` is pre-registered; declaring a new agent ``offline`` is not a moved knob.

Each attack has an honest case beside it that must keep its verdict. The experiments are
synthetic (tests/gate/test_gate_refusals.py's builder); the pipeline's own re-roll is in
tests/pipeline/test_pipeline.py (test_attack_a_reroll_…).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import BASE, CAND, _ledger_decide, build_spec, codes, write_experiment  # noqa: E402

from sealbench.gate import gate  # noqa: E402
from sealbench.provenance import draws  # noqa: E402

# ------------------------------------------------------------------------------ the draw record


def _cand_holdout_rows(spec: dict) -> list[dict]:
    return [r for r in spec["runs"] if r["solver"] == CAND and r["split"] == "holdout"]


def _slot(row: dict) -> str:
    return draws.slot_key(row["task_id"], row["task_digest"], row["solver"], row["fingerprint"], row["epoch"])


def _drawn(spec: dict, copies: list[Path]) -> None:
    """Put every agent row of the spec on the record as one draw, ran and scored as it is."""
    for r in spec["runs"]:
        if r["role"] != "agent":
            continue
        d = draws.start_draw(_slot(r), copies)
        draws.note_ran(_slot(r), d, "exit", copies)
        draws.note_outcome(_slot(r), d, r["status"], r["status"] == "pass", copies)
        r["draw_id"] = d


def _reroll(spec: dict, copies: list[Path]) -> list[str]:
    """The attack: every failing candidate holdout run drawn again, and passing this time (the
    old folder deleted, the same command run again). Returns the slots."""
    slots = []
    for r in _cand_holdout_rows(spec):
        if r["status"] == "pass":
            continue
        d = draws.start_draw(_slot(r), copies)
        draws.note_ran(_slot(r), d, "exit", copies)
        draws.note_outcome(_slot(r), d, "pass", True, copies)
        r.update(draw_id=d, status="pass", hidden_pass=True, visible_pass=True, reason=None)
        slots.append(_slot(r))
    return slots


def _decide(root: Path, spec: dict, copies: list[Path]) -> dict:
    decision, card, _ = gate.decide(*write_experiment(root, spec), draw_copies=copies)
    decision["_card"] = card
    return decision


def _copies(tmp_path: Path) -> list[Path]:
    return [tmp_path / "pack" / "draws.jsonl", tmp_path / "results" / "draws.jsonl"]


@pytest.mark.sandbox
def test_a_reroll_of_failed_runs_is_scored_by_the_first_draws(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    spec = build_spec()
    _drawn(spec, copies)
    honest = _decide(tmp_path / "honest", copy.deepcopy(spec), copies)
    assert honest["publishable"] and not honest["draw_record"]["redrawn"]
    before = honest["passes"]
    slots = _reroll(spec, copies)
    assert slots
    d = _decide(tmp_path / "reroll", spec, copies)
    assert d["passes"] == before, "the redrawn passes must not count: the first draws failed"
    assert "REDRAWN_SLOTS" in [n["code"] for n in d["notes"]]
    assert len(d["draw_record"]["redrawn"]) == len(slots)
    headline = d["allowed_sentences"][0]
    assert f"{len(slots)} run slot(s) were drawn again after a scored draw" in headline
    assert d["_card"]["draw_record"]["redrawn_slots"] == len(slots)
    assert set(d["draw_heads"]) == {str(c.resolve()) for c in copies}  # cited beside decision.json


@pytest.mark.sandbox
def test_a_reroll_with_the_pack_copied_without_its_record_is_still_seen(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    spec = build_spec()
    _drawn(spec, copies)
    before = _decide(tmp_path / "first", copy.deepcopy(spec), copies)["passes"]
    # the pack copied elsewhere without draws.jsonl; the same results folder
    moved = [tmp_path / "pack2" / "draws.jsonl", copies[1]]
    _reroll(spec, moved)
    d = _decide(tmp_path / "reroll", spec, moved)
    assert d["passes"] == before
    notes = {n["code"]: n["sentence"] for n in d["notes"]}
    assert "REDRAWN_SLOTS" in notes and "RECORD_COPY_DIFFERS" in notes
    assert str(moved[0]) in notes["RECORD_COPY_DIFFERS"]


@pytest.mark.sandbox
def test_a_first_draw_that_ended_without_a_recorded_outcome_is_refused(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    spec = build_spec()
    for r in spec["runs"]:
        if r["role"] == "agent":
            d = draws.start_draw(_slot(r), copies)
            draws.note_ran(_slot(r), d, "exit", copies)
            if not (r["solver"] == CAND and r["split"] == "holdout" and r["status"] != "pass"):
                draws.note_outcome(_slot(r), d, r["status"], r["status"] == "pass", copies)
            r["draw_id"] = d
    slots = _reroll(spec, copies)
    d = _decide(tmp_path / "x", spec, copies)
    assert "REDRAWN" in codes(d) and not d["publishable"]
    refused = next(r for r in d["reasons"] if r["code"] == "REDRAWN")
    assert len(refused["evidence"]) == len(slots)


@pytest.mark.sandbox
def test_an_interrupted_first_draw_is_counted_not_refused(tmp_path: Path) -> None:
    """Honest: Ctrl-C killed the agent of one slot; the same command drew it again."""
    copies = _copies(tmp_path)
    spec = build_spec()
    row = next(r for r in _cand_holdout_rows(spec) if r["status"] == "pass")
    for r in spec["runs"]:
        if r["role"] != "agent":
            continue
        if r is row:
            draws.start_draw(_slot(r), copies)  # killed before its agent ended: no "ran", no outcome
        d = draws.start_draw(_slot(r), copies)
        draws.note_ran(_slot(r), d, "exit", copies)
        draws.note_outcome(_slot(r), d, r["status"], r["status"] == "pass", copies)
        r["draw_id"] = d
    clean = build_spec()
    d = _decide(tmp_path / "x", spec, copies)
    assert d["publishable"], codes(d)
    assert d["passes"] == _decide(tmp_path / "y", clean, [])["passes"]
    assert "first draw was interrupted" in d["allowed_sentences"][0]


@pytest.mark.sandbox
def test_a_scored_draw_missing_from_both_copies_is_refused_and_old_runs_are_not(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    spec = build_spec()
    _drawn(spec, copies)
    for c in copies:
        c.unlink()  # both copies deleted (or replaced by an empty record)
    d = _decide(tmp_path / "x", spec, copies)
    assert "DRAW_RECORD_UNREADABLE" in codes(d)
    # honest: runs made before the record existed carry no draw id
    old = build_spec()
    d2 = _decide(tmp_path / "y", old, copies)
    assert d2["publishable"] and "DRAW_RECORD_UNREADABLE" not in codes(d2)


@pytest.mark.sandbox
def test_a_damaged_copy_or_a_cited_line_gone_is_refused(tmp_path: Path) -> None:
    copies = _copies(tmp_path)
    spec = build_spec()
    _drawn(spec, copies)
    lines = copies[0].read_text().splitlines()
    copies[0].write_text("\n".join(lines[:3] + lines[4:]) + "\n")  # one line removed from the middle
    d = _decide(tmp_path / "x", spec, copies)
    assert "DRAW_RECORD_UNREADABLE" in codes(d)
    # a decision cites the heads; the record later replaced by a shorter one is seen
    copies2 = [tmp_path / "p2" / "draws.jsonl", tmp_path / "r2" / "draws.jsonl"]
    spec2 = build_spec()
    _drawn(spec2, copies2)
    root = tmp_path / "r2"
    first, _, _ = gate.decide(*write_experiment(root, spec2), draw_copies=copies2)
    assert first["publishable"]
    exp_dir = next((root / "experiments").iterdir())
    (exp_dir / draws.DRAWS_CITATION).write_text(json.dumps({"pack_digest": first["digests"]["pack"],
                                                            "heads": first["draw_heads"]}))
    for c in copies2:
        kept = c.read_text().splitlines()
        c.write_text("\n".join(kept[:-1]) + "\n")  # the last line (an outcome) cut off
    again, _, _ = gate.decide(*write_experiment(root, spec2), draw_copies=copies2)
    assert "DRAW_RECORD_UNREADABLE" in codes(again)


@pytest.mark.unit
def test_run_agent_and_hidden_score_put_the_draw_on_the_record_before_the_agent_starts(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    """The draw line is written before the command runs: the agent itself sees it on disk."""
    from sealbench.stages import run_agent

    pack, results = tmp_path / "pack", tmp_path / "results"
    pack.mkdir()
    monkeypatch.setenv("SEALBENCH_PACK", str(pack))
    monkeypatch.setenv("SEALBENCH_RESULTS", str(results))
    seen: list[str] = []

    def fake_run_agent(sealed, run_dir, agent, fp, command, env, epoch, envelope, options):
        seen.append((pack / "draws.jsonl").read_text())
        Path(run_dir).mkdir(parents=True, exist_ok=True)
        rec = {"task_id": "t1", "solver": agent, "epoch": epoch, "end_reason": "exit", "exit_code": 0, "wall_s": 1,
               "patch_bytes": 0, "draw": options.draw}
        return rec

    monkeypatch.setattr(run_agent, "run_agent", fake_run_agent)
    sealed = results / "tasks" / "t1" / ("a" * 64) / "sealed"
    rc = run_agent.main(["--sealed", str(sealed), "--run-dir", str(tmp_path / "run"), "--agent", "me",
                         "--fingerprint", "f" * 16, "--spec", json.dumps({"command": "true"}), "--epoch", "1",
                         "--envelope", "{}"])
    assert rc == 0
    assert seen and json.loads(seen[0].splitlines()[0])["kind"] == "draw"
    rec = draws.read_draws([pack / "draws.jsonl", results / "draws.jsonl"])
    slot = draws.slot_key("t1", "a" * 64, "me", "f" * 16, 1)
    assert len(rec.slots[slot]) == 1 and rec.slots[slot][0] in rec.ran


# ------------------------------------------------------------------------------ the budget


def _as_candidate(spec: dict, name: str, command: str) -> dict:
    spec = copy.deepcopy(spec)
    spec["cfg"]["agents"][name] = {"command": command}
    spec["cfg"]["agents"].pop(CAND)
    spec["cfg"]["candidate"] = name
    for r in spec["runs"]:
        if r["solver"] == CAND:
            r["solver"], r["fingerprint"] = name, f"fp-{name}"
    return spec


@pytest.mark.unit
def test_versions_under_new_names_and_paths_exhaust_the_budget(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    first = _ledger_decide(tmp_path / "a", build_spec(), ledger)
    assert first["publishable"] and first["headline_interval"]["versions"] == 1
    assert first["headline_interval"]["confidence"] == 0.95 and "Bonferroni" not in first["allowed_sentences"][0]
    # a retuned candidate under a new name and path: version 3 of 3
    second = _ledger_decide(tmp_path / "b", _as_candidate(build_spec(), "fresh", "python /opt/x/fresh.py"), ledger)
    assert second["publishable"], codes(second)
    hi = second["headline_interval"]
    assert hi["versions"] == 3 and hi["corrected"] and abs(hi["confidence"] - (1 - 0.05 / 3)) < 1e-6
    assert hi["low"] < first["headline_interval"]["low"], "the corrected interval is wider"
    assert "Bonferroni-corrected for the 3 agent versions" in second["allowed_sentences"][0]
    assert "98.33% intervals, Bonferroni-corrected" in second["allowed_sentences"][0]
    assert set(hi["per_stratum"]) == {"xs", "s", "m"}
    # one more, again new name, new path: past the budget
    third = _ledger_decide(tmp_path / "c", _as_candidate(build_spec(), "again", "python /opt/y/again.py"), ledger)
    assert "HOLDOUT_EXHAUSTED" in codes(third) and not third["publishable"]
    # a rerun of the second scoring is not a new version: still publishable
    rerun = _ledger_decide(tmp_path / "d", _as_candidate(build_spec(), "fresh", "python /opt/x/fresh.py"), ledger)
    assert rerun["publishable"] and "HOLDOUT_EXHAUSTED" not in codes(rerun)


@pytest.mark.unit
def test_the_budget_is_pre_registered(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    _ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    spec["cfg"]["holdout_budget"] = 10
    assert "PREREGISTRATION_CHANGED" in codes(_ledger_decide(tmp_path / "b", spec, ledger))


def _identity(tmp_path: Path, name: str, files: dict[str, str]) -> dict:
    out = {}
    for rel, text in files.items():
        p = tmp_path / "agents" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        import hashlib
        out[str(p)] = hashlib.sha256(text.encode()).hexdigest()
    return {"files": out, "lineage": None}


@pytest.mark.unit
def test_a_helper_file_shared_with_the_baseline_is_not_tuning(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    helper = "def call(): return 1\n"
    spec = build_spec()
    spec["agent_identity"] = {CAND: _identity(tmp_path, CAND, {"cand.py": "A", "helper.py": helper}),
                              BASE: _identity(tmp_path, BASE, {"base.py": "B", "helper.py": helper})}
    assert _ledger_decide(tmp_path / "a", spec, ledger)["publishable"]
    # a new candidate of the user's own that uses the same helper; the baseline unchanged
    new = _as_candidate(build_spec(), "mine", "python mine.py")
    new["agent_identity"] = {"mine": _identity(tmp_path, "mine", {"mine.py": "M", "helper.py": helper}),
                             BASE: spec["agent_identity"][BASE]}
    d = _ledger_decide(tmp_path / "b", new, ledger)
    assert "HOLDOUT_TUNED" not in codes(d), codes(d)
    # the attack it must still catch: the candidate edited in place under its own name
    edited = build_spec()
    edited["cfg"]["agents"][CAND]["command"] += " --tuned"
    edited["agent_identity"] = {CAND: _identity(tmp_path, CAND, {"cand.py": "A2", "helper.py": helper}),
                                BASE: spec["agent_identity"][BASE]}
    assert "HOLDOUT_TUNED" in codes(_ledger_decide(tmp_path / "c", edited, ledger))


@pytest.mark.unit
def test_renamed_copy_of_the_same_files_is_still_tuning(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    spec = build_spec()
    spec["agent_identity"] = {CAND: _identity(tmp_path, CAND, {"a/cand.py": "A", "a/util.py": "U"})}
    _ledger_decide(tmp_path / "a", spec, ledger)
    new = _as_candidate(build_spec(), "renamed", "python b/cand.py --x")
    new["agent_identity"] = {"renamed": _identity(tmp_path, "renamed", {"b/cand.py": "A", "b/util.py": "U"})}
    assert "HOLDOUT_TUNED" in codes(_ledger_decide(tmp_path / "b", new, ledger))


# ------------------------------------------------------------------------------ pre-registered humans


@pytest.mark.unit
def test_dropping_a_person_after_a_result_is_a_moved_preregistration(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    spec = build_spec()
    spec["cfg"]["humans"] = ["alice", "bob"]
    assert _ledger_decide(tmp_path / "a", spec, ledger)["publishable"]
    same = build_spec()
    same["cfg"]["humans"] = ["alice", "bob"]
    assert "PREREGISTRATION_CHANGED" not in codes(_ledger_decide(tmp_path / "b", same, ledger))
    dropped = build_spec()
    dropped["cfg"]["humans"] = ["alice"]
    d = _ledger_decide(tmp_path / "c", dropped, ledger)
    assert "PREREGISTRATION_CHANGED" in codes(d)
    assert "humans" in next(r for r in d["reasons"] if r["code"] == "PREREGISTRATION_CHANGED")["sentence"]


@pytest.mark.unit
def test_declaring_a_new_agent_offline_moves_nothing_pinned(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    assert _ledger_decide(tmp_path / "a", build_spec(), ledger)["publishable"]
    mine = _as_candidate(build_spec(), "mine", "python /opt/mine.py")
    mine["cfg"]["agents"]["mine"]["offline"] = True
    d = _ledger_decide(tmp_path / "b", mine, ledger)
    assert "PREREGISTRATION_CHANGED" not in codes(d), codes(d)
    # the dial it must still catch: the baseline, which reached the holdout, declared offline afterwards
    base_now = _as_candidate(build_spec(), "mine", "python /opt/mine.py")
    base_now["cfg"]["agents"]["mine"]["offline"] = True
    base_now["cfg"]["agents"][BASE]["offline"] = True
    assert "PREREGISTRATION_CHANGED" in codes(_ledger_decide(tmp_path / "c", base_now, ledger))


@pytest.mark.unit
def test_the_bundled_agents_are_declared_offline_so_the_server_rule_is_on() -> None:
    """Issue 26: the foreign-server rule was off in the bundled config (no agent declared
    offline, so a bundled agent's run that reached a server was not excluded)."""
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert {n for n, a in cfg["agents"].items() if a.get("offline") is True} == set(cfg["agents"])


@pytest.mark.unit
def test_a_pack_that_cannot_hold_the_record_starts_no_agent(tmp_path: Path, monkeypatch, capsys) -> None:
    """No draw on the record, no run: a read-only pack stops the job in one sentence."""
    from sealbench.stages import run_agent

    pack, results = tmp_path / "pack", tmp_path / "results"
    pack.mkdir()
    (pack / "draws.jsonl").mkdir()  # cannot be opened for appending, even as root
    monkeypatch.setenv("SEALBENCH_PACK", str(pack))
    monkeypatch.setenv("SEALBENCH_RESULTS", str(results))
    started = []
    monkeypatch.setattr(run_agent, "run_agent", lambda *a, **k: started.append(a))
    sealed = results / "tasks" / "t1" / ("a" * 64) / "sealed"
    rc = run_agent.main(["--sealed", str(sealed), "--run-dir", str(tmp_path / "run"), "--agent", "me",
                         "--fingerprint", "f" * 16, "--spec", json.dumps({"command": "true"}), "--epoch", "1",
                         "--envelope", "{}"])
    assert rc == 1 and not started
    assert "the agent was not started" in capsys.readouterr().err


# ------------------------------------------------------------------------------ validate foresees them


def _foresee(spec: dict, ledger: Path) -> list[str]:
    """What `sealbench validate` foresees from the ledger for ``spec``'s config (the identities
    the pipeline would compute: fingerprint and files)."""
    from sealbench.app import preflight
    from sealbench.provenance import identity

    cfg = spec["cfg"]
    idents = {a: {**(spec.get("agent_identity") or {}).get(a, {}),
                  "fingerprint": identity.agent_fingerprint(a, cfg["agents"][a])} for a in cfg["agents"]}
    manifest = {"seed": cfg["seed"], "holdout_frac": cfg["holdout_frac"],
                "tune": sorted(t["task_id"] for t in spec["tasks"] if t["split"] == "tune"),
                "holdout": sorted(t["task_id"] for t in spec["tasks"] if t["split"] == "holdout")}
    found = preflight.foreseeable_ledger_refusals(cfg, "p" * 64, "d" * 64,
                                                  {t["task_id"]: t["task_digest"] for t in spec["tasks"]},
                                                  manifest, idents, [ledger])
    return [r["code"] for r in found]


@pytest.mark.unit
def test_validate_foresees_what_the_ledger_already_decides(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    assert _foresee(build_spec(), ledger) == []          # no ledger yet: nothing foreseen
    _ledger_decide(tmp_path / "a", build_spec(), ledger)
    assert _foresee(build_spec(), ledger) == []          # the same config again: nothing
    moved = build_spec()
    moved["cfg"]["min_kept_tasks"] -= 1
    assert _foresee(moved, ledger) == ["PREREGISTRATION_CHANGED"]
    tuned = build_spec()
    tuned["cfg"]["agents"][CAND]["command"] += " --tuned"
    assert "HOLDOUT_TUNED" in _foresee(tuned, ledger)
    _ledger_decide(tmp_path / "b", _as_candidate(build_spec(), "fresh", "python /opt/x/fresh.py"), ledger)
    assert "HOLDOUT_EXHAUSTED" in _foresee(_as_candidate(build_spec(), "again", "python /opt/y/a.py"), ledger)
    # an honest user's first agent of their own, declared offline: foreseen clean
    assert _foresee(_as_candidate(build_spec(), "fresh", "python /opt/x/fresh.py"), ledger) == []


@pytest.mark.unit
def test_a_new_candidate_names_its_own_baseline_and_the_old_one_keeps_its_pin(tmp_path: Path) -> None:
    """Issue 27: an honest user's own agent compared with the built-in candidate (the first
    scoring's candidate becomes the baseline) is no moved pre-registration; the same candidate
    moving to another baseline after its result still is."""
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    assert _ledger_decide(tmp_path / "a", build_spec(), ledger)["publishable"]
    mine = _as_candidate(build_spec(), "mine", "python /opt/mine.py")
    mine["cfg"]["agents"]["base2"] = {"command": "python -m base2"}
    for r in mine["runs"]:
        if r["solver"] == BASE:
            r["solver"], r["fingerprint"] = "base2", "fp-base2"
    mine["cfg"]["baseline"] = "base2"
    mine["cfg"]["agents"].pop(BASE)
    d = _ledger_decide(tmp_path / "b", mine, ledger)
    assert "PREREGISTRATION_CHANGED" not in codes(d), [r["sentence"] for r in d["reasons"]]
    # the first candidate moving to the other baseline after its result: a dial
    moved = build_spec()
    moved["cfg"]["agents"]["base2"] = {"command": "python -m base2"}
    for r in moved["runs"]:
        if r["solver"] == BASE:
            r["solver"], r["fingerprint"] = "base2", "fp-base2"
    moved["cfg"]["baseline"] = "base2"
    moved["cfg"]["agents"].pop(BASE)
    d2 = _ledger_decide(tmp_path / "c", moved, ledger)
    assert "PREREGISTRATION_CHANGED" in codes(d2)
    assert "baseline" in next(r for r in d2["reasons"] if r["code"] == "PREREGISTRATION_CHANGED")["sentence"]


# ------------------------------------------- two packs scored into one results folder (the default)


def _other_pack(spec: dict) -> dict:
    """A second pack of the user's own: other task ids, its own split."""
    spec = copy.deepcopy(spec)
    for t in spec["tasks"]:
        t["task_id"] = "own-" + t["task_id"]
    for r in spec["runs"]:
        r["task_id"] = "own-" + r["task_id"]
    return spec


def _gate_in(results: Path, pack: Path, name: str, spec: dict, monkeypatch) -> dict:
    """Run the gate stage as the pipeline does: the experiment under results/experiments/, the
    pack's split manifest in the pack, every draw written through the job's own copies."""
    import shutil

    exp_dir, split_path, pack_hash = write_experiment(results / "x" / name, spec)
    exp = results / "experiments" / name
    exp.parent.mkdir(parents=True, exist_ok=True)
    exp_dir.rename(exp)
    pack.mkdir(exist_ok=True)
    shutil.copyfile(split_path, pack / "split_manifest.json")
    monkeypatch.setenv("SEALBENCH_PACK", str(pack))
    monkeypatch.setenv("SEALBENCH_RESULTS", str(results))
    _drawn(spec, draws.record_paths())
    argv = ["--experiment-dir", str(exp), "--split", str(split_path), "--pack-hash", str(pack_hash),
            "--ledger", str(pack / "ledger.jsonl")]
    assert gate.main(argv) == 0
    return json.loads((exp / "decision.json").read_text())


@pytest.mark.sandbox
def test_a_second_pack_in_the_same_results_folder_keeps_its_own_history(tmp_path: Path, monkeypatch) -> None:
    """After the bundled suite, a user's own pack scored into the same results/ was refused
    DENOMINATOR_MOVED naming the suite's tasks: the results copy of the ledger mixed every pack's
    holdout. Each holdout keeps its own ledger copy; the draw record's results copy is shared, its
    slots name their tasks, and the gate reads only its own runs' slots."""
    results = tmp_path / "results"
    suite = _gate_in(results, tmp_path / "suite", "suite", build_spec(), monkeypatch)
    assert suite["publishable"], codes(suite)
    mine = _gate_in(results, tmp_path / "mine", "mine", _other_pack(build_spec()), monkeypatch)
    assert mine["publishable"], codes(mine)
    said = set(codes(mine)) | {n["code"] for n in mine["notes"]}
    assert not {"DENOMINATOR_MOVED", "RECORD_COPY_DIFFERS", "DRAW_RECORD_UNREADABLE"} & said, said
    # the honest case beside it (issue 26): the suite's pack copied without its ledger and draw
    # record, scored into the same results folder, still has the suite's history
    spec = _as_candidate(build_spec(), "fresh", "python /opt/x/fresh.py")
    again = _gate_in(results, tmp_path / "suite-copy", "fresh", spec, monkeypatch)
    assert again["headline_interval"]["versions"] == 3, again["headline_interval"]   # the suite's 2 and this
