"""Issue 35 (4): decide at planning what planning can decide.

A run whose refusal the holdout's ledger already decides (a budget spent, a retuned version, a
moved denominator or pre-registration) says so at its start, in the words ``sealbench validate``
prints, and stops before its first job unless ``run_anyway: true``; a dry run (``-n``) says so and
goes on; an experiment already decided is not stopped (it has nothing left to run). ``validate``
says how many more versions the holdout takes, and what gives more (and what does not:
``split --extend`` grows the holdout but the versions that saw it still count).

The ledgers are written by the gate's own decisions on synthetic experiments
(tests/gate/test_gate_refusals.py's builder); the pipeline's stop itself is in
tests/pipeline/test_plan_stop_pipeline.py.
"""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "app"))

from test_draws_budget import _as_candidate  # noqa: E402
from test_gate_refusals import CAND, _ledger_decide, build_spec, codes  # noqa: E402
from test_split_extend import _decide as _decide_sliced  # noqa: E402
from test_split_extend import _grown  # noqa: E402

from sealbench.app import experiment, preflight  # noqa: E402
from sealbench.gate.holdout_memory import results_copy  # noqa: E402
from sealbench.provenance import identity  # noqa: E402

pytestmark = pytest.mark.unit


def _manifest(spec: dict) -> dict:
    cfg = spec["cfg"]
    return {"seed": cfg["seed"], "holdout_frac": cfg["holdout_frac"],
            "tune": sorted(t["task_id"] for t in spec["tasks"] if t["split"] == "tune"),
            "holdout": sorted(t["task_id"] for t in spec["tasks"] if t["split"] == "holdout")}


def _outlook(spec: dict, ledgers: list[Path]) -> preflight.HoldoutOutlook:
    """What validate and the run's start foresee for ``spec``'s config from ``ledgers``."""
    cfg = spec["cfg"]
    idents = {a: {"fingerprint": identity.agent_fingerprint(a, cfg["agents"][a])} for a in cfg["agents"]}
    return preflight.holdout_outlook(cfg, "p" * 64, "d" * 64, {t["task_id"]: t["task_digest"] for t in spec["tasks"]},
                                     _manifest(spec), idents, ledgers)


def _mine(n: int) -> dict:
    """The user's own agent number ``n`` as the candidate (a new name, a new command)."""
    return _as_candidate(build_spec(), f"mine{n}", f"python /home/me/agent{n}.py")


def _spent(tmp_path: Path) -> Path:
    """A holdout whose budget (3) the bundled two agents and one of the user's own took."""
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir(parents=True)
    assert codes(_ledger_decide(tmp_path / "a", build_spec(), ledger)) == []
    assert codes(_ledger_decide(tmp_path / "b", _mine(1), ledger)) == []
    return ledger


def _check(refusals: list[dict], *, dry: bool = False, run_anyway: bool = False,
           decided: bool = False) -> preflight.StartCheck:
    return preflight.start_check(refusals, dry=dry, run_anyway=run_anyway, decided=decided)


def test_a_second_agent_of_ones_own_stops_the_run_at_its_start_in_validates_words(tmp_path: Path) -> None:
    ledger = _spent(tmp_path)
    foreseen = _outlook(_mine(2), [ledger]).refusals
    assert [r["code"] for r in foreseen] == ["HOLDOUT_EXHAUSTED"]
    check = _check(foreseen)
    assert check.stop
    # the very line `sealbench validate` prints for it (preflight_lines), quoted whole
    (validate_line,) = [ln for ln in preflight.preflight_lines(foreseen, "holdout") if "HOLDOUT_EXHAUSTED" in ln]
    assert validate_line in check.message.splitlines(), check.message
    assert "mine2" in validate_line and "version 4" in validate_line, validate_line
    assert "before the first job" in check.message and "--config run_anyway=true" in check.message, check.message


def test_a_retuned_version_of_ones_own_stops_too(tmp_path: Path) -> None:
    ledger = _spent(tmp_path)
    retuned = _mine(1)
    retuned["cfg"]["agents"]["mine1"]["command"] += " --tuned"
    foreseen = _outlook(retuned, [ledger]).refusals
    assert "HOLDOUT_TUNED" in [r["code"] for r in foreseen]
    assert _check(foreseen).stop


def test_honest_first_agent_of_ones_own_and_a_rerun_are_not_stopped(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    _ledger_decide(tmp_path / "a", build_spec(), ledger)
    first_own = _outlook(_mine(1), [ledger])
    assert first_own.refusals == [] and _check(first_own.refusals) == preflight.StartCheck(False, "")
    _ledger_decide(tmp_path / "b", _mine(1), ledger)
    assert _outlook(_mine(1), [ledger]).refusals == []  # the same version again: no new look


def test_a_dry_run_says_so_and_goes_on(tmp_path: Path) -> None:
    foreseen = _outlook(_mine(2), [_spent(tmp_path)]).refusals
    dry = _check(foreseen, dry=True)
    assert not dry.stop and "HOLDOUT_EXHAUSTED" in dry.message and "a real run" in dry.message, dry.message


def test_run_anyway_runs_and_says_what_the_gate_will_refuse(tmp_path: Path) -> None:
    foreseen = _outlook(_mine(2), [_spent(tmp_path)]).refusals
    anyway = _check(foreseen, run_anyway=True)
    assert not anyway.stop and "HOLDOUT_EXHAUSTED" in anyway.message and "anyway" in anyway.message, anyway.message


def test_an_experiment_already_decided_is_not_stopped(tmp_path: Path) -> None:
    """Its decision exists: nothing is left to run, and no new line goes into the ledger."""
    foreseen = _outlook(_mine(2), [_spent(tmp_path)]).refusals
    assert _check(foreseen, decided=True) == preflight.StartCheck(False, "")


def test_run_anyway_is_not_part_of_the_experiment() -> None:
    """The override changes whether a run starts, not what it measures: the same experiment id."""
    cfg = build_spec()["cfg"]
    assert cfg["run_anyway"] is False  # a schema default
    assert experiment.config_for_id(cfg) == experiment.config_for_id(dict(cfg, run_anyway=True))


def test_the_run_and_validate_read_the_results_copy_the_gate_writes(tmp_path: Path) -> None:
    """A pack copied without its ledger keeps its history in results/holdouts/<key>/: validate and
    the run's start read that copy (validate read results/ledger.jsonl, which nothing writes)."""
    spec = build_spec()
    man = _manifest(spec)
    pack, results = tmp_path / "pack", tmp_path / "results"
    copies = preflight.holdout_ledgers(pack, results, man)
    assert copies == [pack / "ledger.jsonl", results_copy(results / "experiments" / "x", man)]
    copies[1].parent.mkdir(parents=True)
    _ledger_decide(tmp_path / "a", build_spec(), copies[1])  # the history only in the results copy
    _ledger_decide(tmp_path / "b", _mine(1), copies[1])
    assert [r["code"] for r in _outlook(_mine(2), copies).refusals] == ["HOLDOUT_EXHAUSTED"]


# ------------------------------------------------------------------------------ the budget, said first


def test_validate_says_how_many_versions_of_ones_own_the_holdout_takes(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    fresh = _outlook(build_spec(), [ledger]).budget
    assert "3 agent versions" in fresh and "none has reached it yet" in fresh, fresh
    assert f"base_agent and {CAND}" in fresh and "1 more version of your own" in fresh, fresh
    assert "fresh pack" in fresh and "holdout_budget" in fresh and "split --extend" in fresh, fresh
    _ledger_decide(tmp_path / "a", build_spec(), ledger)
    again = _outlook(build_spec(), [ledger]).budget
    assert "2 have reached it" in again and "1 more version of your own" in again, again
    assert "0 more versions of your own" in _outlook(_mine(1), [ledger]).budget
    past = _outlook(_mine(2), [_spent(tmp_path / "s")]).budget
    assert "past it" in past and "HOLDOUT_EXHAUSTED" in past, past
    off = build_spec()
    off["cfg"]["holdout_budget"] = None
    assert "no budget" in _outlook(off, [ledger]).budget
    tune = build_spec()
    tune["cfg"]["score_split"] = "tune"
    assert _outlook(tune, [ledger]) == preflight.HoldoutOutlook([], "")


def test_split_extend_gives_no_room_and_the_refusal_does_not_say_it_does(tmp_path: Path) -> None:
    """A grown holdout still holds the tasks every earlier version saw: the versions count on,
    under a new card too. So HOLDOUT_EXHAUSTED's sentence (validate's, the gate's, the run's start)
    names a fresh pack, not `split --extend`."""
    ledger = _spent(tmp_path)
    grown = _grown(_mine(2))
    grown["cfg"]["card_name"] = "grown-pack"
    decision, _ = _decide_sliced(tmp_path / "g", copy.deepcopy(grown), ledger)
    assert "HOLDOUT_EXHAUSTED" in codes(decision)
    (r,) = [r for r in decision["reasons"] if r["code"] == "HOLDOUT_EXHAUSTED"]
    assert "split --extend" in r["sentence"] and "fresh pack" in r["sentence"], r["sentence"]
    assert "does not" in r["sentence"].split("split --extend")[1][:80], r["sentence"]


def test_the_budget_line_docs_cli_shows_is_validates_for_the_bundled_config() -> None:
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    line = preflight.budget_sentence(cfg["holdout_budget"], set(), {a: f"fp-{a}" for a in cfg["agents"]})
    assert line in (ROOT / "docs" / "cli.md").read_text(), line
