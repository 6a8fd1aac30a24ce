"""Red-team attacks on the gate after issue 11: ways to still get a headline, a named winner or
an allowed sentence that the seeds forbid.

Each attack was found working against the first issue-11 gate (commit 3b77a6e: the test
failed there at its last assertion, the attack itself) and passes since the gate was fixed. Experiments are built with
``test_gate_refusals``' builder; ledger runs go through ``append_ledger`` like
``gate.main`` (``ledger_decide`` of ``test_gate_seeds``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import (  # noqa: E402
    BASE,
    CAND,
    _set_status,
    build_spec,
    codes,
    decide,
    write_experiment,
)
from test_gate_seeds import holdout_ids, ledger_decide, notes, rename_candidate, set_agent, with_identity  # noqa: E402

from sealbench.core import core  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.provenance.ledger import _same_lineage, agent_lineage, append_ledger, read_ledger  # noqa: E402
from sealbench.stats import decision_rule  # noqa: E402


def winner_sentences(d: dict) -> list[str]:
    return [s for s in d["allowed_sentences"] if "passed more than" in s]


def winner_spec() -> dict:
    """A clean holdout where the candidate is a named winner: 6 wins, 0 losses over 9 tasks
    (2 per stratum), exact p 0.031, delta 0.667 >= mde 0.6, 9 tasks >= the 6 required."""
    spec = build_spec()
    set_agent(spec, CAND, {t for s in ("xs", "s", "m") for t in holdout_ids(spec, s)[:2]})
    set_agent(spec, BASE, set())
    spec["cfg"].update(mde=0.6, planning_discordance=0.6, min_kept_tasks=6)
    return spec


@pytest.mark.unit
def test_winner_spec_names_a_winner(tmp_path: Path) -> None:
    """The fixture the attacks below build on (not an attack)."""
    d = decide(tmp_path, winner_spec())
    assert d["publishable"] and d["comparison"]["verdict"] == decision_rule.VERDICT_CANDIDATE
    assert len(winner_sentences(d)) == 1


# --------------------------------------------------------------------- 1. self-exclusion probe


@pytest.mark.unit
def test_attack_stampless_probe_run_then_retune_is_not_holdout_tuned(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    probe = build_spec()
    for r in probe["runs"]:
        if r["solver"] == CAND and r["split"] == "holdout":
            passed = r["status"] == "pass"
            _set_status(r, "excluded")
            # as stratify writes it: the scored outcome stays on the row, the author can read it
            r["hidden_pass"] = r["visible_pass"] = passed
            r["reason"] = f"{'pass' if passed else 'fail'} before exclusion"
            r["excluded_reason"] = "stamp.json missing: the session cannot be checked"
            r.update(server_id=None, queue_ms=None, retries=None, quota_state=None, route_changed=None)
    ledger_decide(tmp_path / "a", probe, ledger)
    # the author reads the holdout diffs and outcomes, edits the prompt, adds the stamp
    tuned = build_spec()
    tuned["cfg"]["agents"][CAND]["command"] += " --prompt v2"
    d = ledger_decide(tmp_path / "b", tuned, ledger)
    assert "HOLDOUT_TUNED" in codes(d), (codes(d), notes(d))


# ------------------------------------------------------- 2. a new card_name on the same holdout


@pytest.mark.sandbox
def test_attack_new_card_name_on_same_holdout_lowers_the_floor(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = build_spec()
    spec["cfg"]["min_kept_tasks"] = 10
    assert "TOO_FEW_CLEAN_TASKS" in codes(ledger_decide(tmp_path / "a", spec, ledger))
    spec = build_spec()
    spec["cfg"].update(min_kept_tasks=6, card_name="take-two")
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert d["headline"] is None, ("same fingerprints, same holdout, floor lowered after seeing the gap",
                                   d["headline"], codes(d), notes(d))


@pytest.mark.sandbox
def test_attack_new_card_name_drops_the_server_pin(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)  # pins srv-1
    spec = build_spec()
    spec["cfg"]["card_name"] = "take-two"
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] in holdout_ids(spec, "xs"):
            r["server_id"] = "srv-fast-elsewhere"
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert d["server_pin"] is not None and len(d["server_pin"]["excluded"]) == 3, d["server_pin"]


# --------------------------------------------------------------- 3. the server pin and the stamp


@pytest.mark.sandbox
def test_attack_stamp_without_server_id_escapes_the_pin(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)  # pins srv-1
    spec = build_spec()
    moved = holdout_ids(spec, "xs")[:2]
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] in moved:
            r["server_id"] = None  # ran elsewhere (a fallback route); the stamp just leaves the server out
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert "SERVER_PINNED" in notes(d) and d["n"] == 7, (notes(d), d["n"])


# ----------------------------------------------- 4. exclusions on the baseline's side name a winner


@pytest.mark.sandbox
def test_attack_excluding_the_baselines_wins_names_a_winner(tmp_path: Path) -> None:
    spec = winner_spec()
    base_wins = {holdout_ids(spec, s)[2] for s in ("xs", "s", "m")}
    set_agent(spec, BASE, base_wins)
    honest = decide(tmp_path / "honest", spec)
    assert honest["comparison"]["wins"] == 6 and honest["comparison"]["losses"] == 3
    assert not winner_sentences(honest)
    for r in spec["runs"]:
        if r["solver"] == BASE and r["task_id"] in base_wins:
            _set_status(r, "excluded")
            r["reason"] = "pass before exclusion"
            r["queue_ms"] = 999_999
    d = decide(tmp_path / "attack", spec)
    assert not winner_sentences(d), (d["comparison_summary"], codes(d), winner_sentences(d))


# --------------------------------------------------------------------------- 5. lineage by bytes


@pytest.mark.unit
def test_attack_renamed_agent_with_its_script_copied_to_a_new_path(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    first = build_spec()
    with_identity(first, CAND, {"agents/acme.py": "a" * 64, "prompts/v1.md": "1" * 64})
    assert codes(ledger_decide(tmp_path / "a", first, ledger)) == []
    second = build_spec()
    rename_candidate(second, "zenith")
    second["cfg"]["agents"]["zenith"]["command"] = "python agents/zenith.py --prompt prompts/v2.md"
    with_identity(second, "zenith", {"agents/zenith.py": "a" * 64, "prompts/v2.md": "2" * 64})
    d = ledger_decide(tmp_path / "b", second, ledger)
    assert "HOLDOUT_TUNED" in codes(d), (codes(d), notes(d))


@pytest.mark.unit
def test_lineage_files_are_the_agents_own_only(tmp_path: Path) -> None:
    """Gate holds: a file under the interpreter's prefix (absolute path) is no lineage."""
    interp = str(Path(sys.prefix) / "bin" / "python")
    a = agent_lineage("a", {"files": {interp: "x" * 64, "agents/a.py": "1" * 64}})
    b = agent_lineage("b", {"files": {interp: "x" * 64, "agents/b.py": "2" * 64}})
    assert _same_lineage(a, b) is None


@pytest.mark.unit
def test_bug_venv_interpreter_links_unrelated_agents(tmp_path: Path) -> None:
    """A project's venv interpreter named relative to the project (``.venv/bin/python``, a link
    to the system's) ties no two agents together. The project is made here, whatever environment
    the tests run in (a venv at the repository's .venv, one elsewhere, conda's): issue 35.5."""
    venv_bin = tmp_path / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(os.path.realpath(sys.executable))
    a = agent_lineage("a", {"files": {".venv/bin/python": "x" * 64, "agents/a.py": "1" * 64}}, tmp_path)
    b = agent_lineage("b", {"files": {".venv/bin/python": "x" * 64, "agents/b.py": "2" * 64}}, tmp_path)
    assert _same_lineage(a, b) is None
    # honest case beside it: the agent's own script, copied under another name, still ties them
    c = agent_lineage("c", {"files": {".venv/bin/python": "x" * 64, "agents/c.py": "1" * 64}}, tmp_path)
    assert _same_lineage(a, c) is not None


# ------------------------------------------------------------------- 6. the denylist is a dial


def _write_with_denylist(root: Path, spec: dict, denylist_digest: str) -> tuple[Path, Path, Path]:
    """write_experiment, then the pack as it is after editing denylist.txt: the denylist digest
    and so the pack digest change, the task digests (the holdout) do not."""
    exp_dir, split_path, pack_hash = write_experiment(root, spec)
    exp = core.read_json(exp_dir / "experiment.json")
    exp["denylist_digest"] = denylist_digest
    exp["pack_digest"] = core.pack_digest(exp["task_digests"], denylist_digest)
    core.write_json(exp_dir / "experiment.json", exp)
    return exp_dir, split_path, pack_hash


@pytest.mark.unit
def test_attack_deleting_the_denylist_line_after_leak_suspect(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    spec = build_spec()
    next(t for t in spec["tasks"] if t["task_id"] == "m03")["leak_suspect"] = True
    d1, _, _ = gate.decide(*_write_with_denylist(tmp_path / "a", spec, "d" * 64), ledger=ledger)
    assert "LEAK_SUSPECT" in codes(d1)
    append_ledger(ledger, d1.pop("ledger_entry"), read_ledger(ledger))
    spec = build_spec()  # the same task no longer matches the (shorter) denylist
    d2, _, _ = gate.decide(*_write_with_denylist(tmp_path / "b", spec, "e" * 64), ledger=ledger)
    assert d2["publishable"] is False, (codes(d2), d2["headline"])


# ----------------------------------------------------------------- 7. the ledger is only a file


@pytest.mark.sandbox
def test_attack_deleting_the_ledger_forgets_the_preregistration(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    out = []
    for floor in (10, 6):
        spec = build_spec()
        spec["cfg"]["min_kept_tasks"] = floor
        exp_dir, split_path, pack_hash = write_experiment(tmp_path, spec)  # one results tree, as the pipeline
        assert gate.main(["--experiment-dir", str(exp_dir), "--split", str(split_path),
                          "--pack-hash", str(pack_hash), "--ledger", str(ledger)]) == 0
        out.append(core.read_json(exp_dir / "decision.json"))
        if floor == 10:
            assert ledger.read_text().strip()
            ledger.unlink()  # "the ledger blocked us; it is just a log"
    assert [r["code"] for r in out[0]["reasons"]] == ["TOO_FEW_CLEAN_TASKS"]
    assert out[1]["headline"] is None, ([r["code"] for r in out[1]["reasons"]], out[1]["headline"])


# --------------------------------------------------- 8. multiple comparisons and the winner sentence


@pytest.mark.sandbox
def test_attack_winner_after_holdout_reuse_omits_the_multiple_comparisons(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    other = winner_spec()
    set_agent(other, CAND, set())
    rename_candidate(other, "another_agent")
    other["cfg"]["agents"]["another_agent"]["command"] = "python -m another"
    ledger_decide(tmp_path / "a", other, ledger)
    d = ledger_decide(tmp_path / "b", winner_spec(), ledger)
    assert "HOLDOUT_REUSED" in notes(d)
    assert all("other agent version" in s for s in winner_sentences(d)), winner_sentences(d)


# --------------------------------------------------------------- 9. the strata order is a declaration


def _reverse_strata(spec: dict) -> None:
    spec["cfg"]["strata"] = ["m", "s", "xs"]  # "easiest first" is the author's word only


@pytest.mark.unit
def test_attack_reversed_strata_order_beats_the_dummy_rule(tmp_path: Path) -> None:
    spec = build_spec()
    set_agent(spec, CAND, set(holdout_ids(spec, "xs")))  # xs 3/3, s 0/3, m 0/3
    set_agent(spec, BASE, set())
    assert decide(tmp_path / "honest", spec)["headline"] is None
    _reverse_strata(spec)
    d = decide(tmp_path / "attack", spec)
    assert d["headline"] is None, (d["headline"], notes(d))


@pytest.mark.unit
def test_attack_reversed_strata_order_hides_an_unbalanced_pack(tmp_path: Path) -> None:
    spec = build_spec()
    for tid in ("s05", "m05"):  # holdout: xs 5, s 2, m 2
        for t in spec["tasks"]:
            if t["task_id"] == tid:
                t["stratum"] = "xs"
        for r in spec["runs"]:
            if r["task_id"] == tid:
                r["stratum"] = "xs"
    assert "UNBALANCED_STRATA" in notes(decide(tmp_path / "honest", spec))
    _reverse_strata(spec)
    d = decide(tmp_path / "attack", spec)
    assert d["headline"] is None, (d["headline"], notes(d))


# ------------------------------------------------------------------ attacks the gate already stops


@pytest.mark.sandbox
def test_holds_renamed_baseline_under_the_same_card(tmp_path: Path) -> None:
    """A weaker baseline under a new name: 'baseline' is pre-registered."""
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    cfg = spec["cfg"]
    cfg["agents"]["weak_base"] = {"command": "python -m base --lite"}
    del cfg["agents"][BASE]
    cfg["baseline"] = "weak_base"
    for r in spec["runs"]:
        if r["solver"] == BASE:
            r["solver"] = "weak_base"
    assert "PREREGISTRATION_CHANGED" in codes(ledger_decide(tmp_path / "b", spec, ledger))


@pytest.mark.unit
def test_holds_weakened_baseline_under_its_old_name(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    spec["cfg"]["agents"][BASE]["command"] += " --max-candidates 1"
    assert "HOLDOUT_TUNED" in codes(ledger_decide(tmp_path / "b", spec, ledger))


@pytest.mark.unit
def test_holds_setting_required_server_to_lift_the_pin_under_the_same_card(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    spec["cfg"]["health"]["required_server_id"] = "srv-elsewhere"
    assert "ENVELOPE_CHANGED" in codes(ledger_decide(tmp_path / "b", spec, ledger))


@pytest.mark.unit
def test_holds_foreign_server_rows_on_failures_count_in_the_sensitivity(tmp_path: Path) -> None:
    """The pin excludes the candidate's failing rows from another server; counted as failures
    they move the rate, so EXCLUSIONS_DECIDE refuses (abstaining by server does not pay)."""
    ledger = tmp_path / "ledger.jsonl"
    ledger_decide(tmp_path / "a", build_spec(), ledger)
    spec = build_spec()
    fails = [t for t in holdout_ids(spec) if not any(r["solver"] == CAND and r["task_id"] == t
                                                      and r["status"] == "pass" for r in spec["runs"])]
    for r in spec["runs"]:
        if r["solver"] == CAND and r["task_id"] in fails:
            r["server_id"] = "srv-elsewhere"
    d = ledger_decide(tmp_path / "b", spec, ledger)
    assert "SERVER_PINNED" in notes(d) and "EXCLUSIONS_DECIDE" in codes(d)


@pytest.mark.unit
def test_holds_epochs_split_pass_is_not_a_win_over_a_tie(tmp_path: Path) -> None:
    """epochs 2, both solvers 1/2 on every task: ties, not discordant pairs."""
    spec = build_spec()
    spec["cfg"]["epochs"] = 2
    extra = []
    for r in spec["runs"]:
        if r["role"] == "agent":
            _set_status(r, "pass")
            r2 = dict(r, epoch=2)
            _set_status(r2, "fail")
            extra.append(r2)
    spec["runs"] += extra
    c = decide(tmp_path, spec)["comparison"]
    assert c["wins"] == c["losses"] == 0 and c["verdict"] == decision_rule.VERDICT_NONE
