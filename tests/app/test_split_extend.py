"""Issue 13 (5), "packs grow": ``sealbench split --extend`` adds new tasks as a new slice.

Before: adding one task to a pack made every command refuse ("the denominator moved"), and
deleting the manifest reshuffled the holdout. Now a new task (in the pack, not in the frozen
manifest) goes to tune or holdout by a seeded hash of its own id (independent of the other new
tasks and of their order); every task already split keeps its side; a removed task is refused,
named; the manifest records the extension as slice k+1 and the pack's ledger gets a line for
it. The gate then refuses a card pre-registered on an earlier slice and scored on the grown
pack (``CARD_ON_EARLIER_SLICE``: numbers from slice k and slice k+1 have different
denominators), while a new card started on the new slice publishes as before.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import _run, _task, _task_of, build_spec, codes, write_experiment  # noqa: E402

from packgen import make_pack, write_task  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.core import core  # noqa: E402
from sealbench.gate import gate  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.provenance.ledger import append_ledger, read_ledger  # noqa: E402
from sealbench.stages import split  # noqa: E402

pytestmark = pytest.mark.unit

SEED, FRAC = 7, 0.5


def _strata(pack: Path) -> dict[str, str]:
    return {t.id: t.stratum for t in packs.load_pack(pack)}


def _frozen_pack(root: Path, n: int = 12) -> Path:
    pack = make_pack(root, n=n)
    split.ensure(pack, _strata(pack), SEED, FRAC)
    return pack


def _add(pack: Path, *ids: str, stratum: str = "s") -> None:
    for tid in ids:
        write_task(pack / "tasks", tid, stratum)


def _side(manifest: dict, tid: str) -> str:
    return "holdout" if tid in manifest["holdout"] else "tune"


# ------------------------------------------------------------------------- split --extend

def test_old_tasks_keep_their_side_and_new_ones_form_slice_2(tmp_path: Path) -> None:
    pack = _frozen_pack(tmp_path / "p")
    before = json.loads((pack / split.MANIFEST).read_text())
    _add(pack, "n01", "n02", "n03")
    manifest, added = split.extend(pack, _strata(pack), SEED, FRAC)
    assert added == ["n01", "n02", "n03"]
    assert set(before["tune"]) <= set(manifest["tune"]) and set(before["holdout"]) <= set(manifest["holdout"])
    assert set(manifest["tune"]) | set(manifest["holdout"]) == set(_strata(pack))
    on_disk = json.loads((pack / split.MANIFEST).read_text())
    assert on_disk["tune"] == manifest["tune"] and on_disk["holdout"] == manifest["holdout"]
    (rec,) = on_disk["slices"]
    assert rec["slice"] == 2
    assert sorted(rec["added"]["tune"] + rec["added"]["holdout"]) == ["n01", "n02", "n03"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", rec["date"]), rec
    assert rec["seed"] == SEED and rec["holdout_frac"] == FRAC and rec["method"]
    # the pack digest at that slice is the pack's digest as hash_pack computes it
    digests = {t.id: core.task_digest(t.dir) for t in packs.load_pack(pack)}
    assert rec["pack_digest"] == core.pack_digest(digests, core.denylist_digest(pack))
    # the extended manifest is accepted by every later check (the pipeline's plan and split job)
    assert split.check(pack, _strata(pack), SEED, FRAC)["holdout"] == manifest["holdout"]
    assert split.ensure(pack, _strata(pack), SEED, FRAC)[1] is False


def test_a_new_tasks_side_does_not_depend_on_the_other_new_tasks(tmp_path: Path) -> None:
    one = _frozen_pack(tmp_path / "one")
    many = _frozen_pack(tmp_path / "many")
    steps = _frozen_pack(tmp_path / "steps")
    others = [f"z{i:02d}" for i in range(20)]
    _add(one, "n01")
    _add(many, *others, "n01")
    m_one, _ = split.extend(one, _strata(one), SEED, FRAC)
    m_many, _ = split.extend(many, _strata(many), SEED, FRAC)
    assert _side(m_one, "n01") == _side(m_many, "n01")
    # one task at a time (two slices) gives every task the side it gets all at once
    for tid in others + ["n01"]:
        _add(steps, tid)
        m_steps, added = split.extend(steps, _strata(steps), SEED, FRAC)
        assert added == [tid]
    assert {t: _side(m_steps, t) for t in others} == {t: _side(m_many, t) for t in others}
    assert len(m_steps["slices"]) == 21 and m_steps["slices"][-1]["slice"] == 22
    # both sides are used, roughly at the holdout fraction
    share = sum(_side(m_many, t) == "holdout" for t in others) / len(others)
    assert 0.2 <= share <= 0.8, share


def test_a_removed_task_is_refused_by_name_and_nothing_is_written(tmp_path: Path) -> None:
    pack = _frozen_pack(tmp_path / "p")
    before = (pack / split.MANIFEST).read_bytes()
    gone = json.loads(before)["holdout"][0]
    shutil.rmtree(pack / "tasks" / gone)
    _add(pack, "n01")
    with pytest.raises(split.SplitError) as err:
        split.extend(pack, _strata(pack), SEED, FRAC)
    msg = str(err.value)
    assert gone in msg and str(pack / split.MANIFEST) in msg and "removed" in msg, msg
    assert (pack / split.MANIFEST).read_bytes() == before
    assert not (pack / "ledger.jsonl").exists()


def test_extend_with_nothing_new_says_so(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    pack = _frozen_pack(tmp_path / "p")
    before = (pack / split.MANIFEST).read_bytes()
    manifest, added = split.extend(pack, _strata(pack), SEED, FRAC)
    assert added == [] and "slices" not in manifest
    rc = cli.main(["split", str(pack), "--seed", str(SEED), "--holdout-frac", str(FRAC), "--extend"])
    out = capsys.readouterr().out
    assert rc == 0 and "nothing new" in out, out
    assert (pack / split.MANIFEST).read_bytes() == before
    assert not (pack / "ledger.jsonl").exists()


def test_plain_split_on_a_grown_pack_refuses_and_names_extend(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture) -> None:
    pack = _frozen_pack(tmp_path / "p")
    _add(pack, "n01")
    rc = cli.main(["split", str(pack), "--seed", str(SEED), "--holdout-frac", str(FRAC)])
    err = capsys.readouterr().err
    assert rc == 1 and "n01" in err and "sealbench split" in err and "--extend" in err, err
    with pytest.raises(split.SplitError, match="--extend"):
        split.check(pack, _strata(pack), SEED, FRAC)
    # the CLI's --extend then adds it; the split job (what the split rule runs) keeps it frozen
    assert cli.main(["split", str(pack), "--seed", str(SEED), "--holdout-frac", str(FRAC), "--extend"]) == 0
    out = capsys.readouterr().out
    assert "slice 2" in out and "n01" in out, out
    copy_ = tmp_path / "out" / "split_manifest.json"
    assert split.main(["--pack", str(pack), "--seed", str(SEED), "--holdout-frac", str(FRAC),
                       "--out", str(copy_)]) == 0
    written = json.loads(copy_.read_text())
    assert written["slices"][0]["slice"] == 2 and written["digest"] == split.manifest_digest(written)


def test_resplitting_is_still_refused(tmp_path: Path) -> None:
    pack = _frozen_pack(tmp_path / "p")
    _add(pack, "n01")
    with pytest.raises(split.SplitError, match="resplit"):
        split.extend(pack, _strata(pack), SEED + 1, FRAC)
    with pytest.raises(split.SplitError, match="no frozen split"):
        split.extend(make_pack(tmp_path / "fresh"), _strata(tmp_path / "fresh"), SEED, FRAC)


def test_a_hand_moved_extension_task_is_refused(tmp_path: Path) -> None:
    pack = _frozen_pack(tmp_path / "p")
    _add(pack, *[f"n{i:02d}" for i in range(6)])
    manifest, _ = split.extend(pack, _strata(pack), SEED, FRAC)
    rec = manifest["slices"][0]["added"]
    moved = (rec["holdout"] or rec["tune"])[0]
    into, out_of = ("tune", "holdout") if moved in rec["holdout"] else ("holdout", "tune")
    man = copy.deepcopy(manifest)
    for obj in (man, man["slices"][0]["added"]):
        obj[out_of] = sorted(set(obj[out_of]) - {moved})
        obj[into] = sorted(set(obj[into]) | {moved})
    (pack / split.MANIFEST).write_text(json.dumps(man, indent=2))
    with pytest.raises(split.SplitError) as err:
        split.check(pack, _strata(pack), SEED, FRAC)
    assert moved in str(err.value) and str(pack / split.MANIFEST) in str(err.value)


def test_the_ledger_gets_the_slice(tmp_path: Path) -> None:
    pack = _frozen_pack(tmp_path / "p")
    _add(pack, "n01", "n02")
    manifest, _ = split.extend(pack, _strata(pack), SEED, FRAC)
    (entry,) = read_ledger(pack / "ledger.jsonl")
    assert entry["kind"] == "slice" and entry["slice"] == 2
    assert sorted(entry["added"]["tune"] + entry["added"]["holdout"]) == ["n01", "n02"]
    assert entry["pack_digest"] == manifest["slices"][0]["pack_digest"]
    assert entry["split_manifest_digest"] == split.manifest_digest(manifest)
    assert set(entry["holdout"]) == set(manifest["holdout"])
    _add(pack, "n03")
    split.extend(pack, _strata(pack), SEED, FRAC)
    assert [e["slice"] for e in read_ledger(pack / "ledger.jsonl")] == [2, 3]


# ------------------------------------------------------------------------------- the gate

SLICE2 = {"slice": 2, "added": {"tune": ["s07"], "holdout": ["xs07"]}, "date": "2026-11-30",
          "pack_digest": "q" * 64, "seed": 20261129, "holdout_frac": 0.5, "method": "test"}


def _grown(spec: dict) -> dict:
    """The spec on slice 2: one task added to the holdout (the candidate passes it), one to tune."""
    spec = copy.deepcopy(spec)
    for tid, stratum, side in (("xs07", "xs", "holdout"), ("s07", "s", "tune")):
        t = _task(tid, stratum, side)
        spec["tasks"].append(t)
        spec["runs"] += [_run(t, "empty_diff", "control", 1, "fail"), _run(t, "stub", "control", 1, "fail")]
        spec["runs"] += [_run(t, "oracle", "control", e, "pass") for e in (1, 2, 3)]
        spec["runs"] += [_run(t, "cand_agent", "agent", 1, "pass"), _run(t, "base_agent", "agent", 1, "fail")]
    spec["slices"] = [dict(SLICE2)]
    return spec


def _decide(root: Path, spec: dict, ledger: Path) -> tuple[dict, dict]:
    """Decide as the gate job does (the split copy carries the manifest's slices) and append."""
    exp_dir, split_path, pack_hash = write_experiment(root, spec)
    if spec.get("slices"):
        man = json.loads(split_path.read_text())
        man["slices"] = spec["slices"]
        core.write_json(split_path, man)
    decision, card, _ = gate.decide(exp_dir, split_path, pack_hash, ledger=ledger)
    entry = decision.pop("ledger_entry")
    if entry is not None:
        append_ledger(ledger, entry, read_ledger(ledger))
    return decision, card


def test_gate_refuses_a_card_preregistered_on_slice_1_scored_on_slice_2(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    first, _ = _decide(tmp_path / "a", build_spec(), ledger)
    assert codes(first) == [] and first["publishable"]
    d, card = _decide(tmp_path / "b", _grown(build_spec()), ledger)
    assert "CARD_ON_EARLIER_SLICE" in codes(d) and d["publishable"] is False and d["headline"] is None
    # the slice is the one reason: the added tasks are no moved denominator
    assert "DENOMINATOR_MOVED" not in codes(d), d["reasons"]
    (r,) = [r for r in d["reasons"] if r["code"] == "CARD_ON_EARLIER_SLICE"]
    s = r["sentence"]
    assert "'default'" in s and "slice 1" in s and "slice 2" in s, s
    assert "2 task" in s and "not comparable" in s and "card_name" in s, s
    assert card["dataset"]["split"]["slice"] == 2
    assert json.loads(ledger.read_text().splitlines()[-1])["slice"] == 2


def test_a_new_card_on_slice_2_publishes(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    _decide(tmp_path / "a", build_spec(), ledger)
    _decide(tmp_path / "b", _grown(build_spec()), ledger)  # the old card, refused on slice 2
    spec = _grown(build_spec())
    spec["cfg"]["card_name"] = "grown-pack"
    d, _ = _decide(tmp_path / "c", spec, ledger)
    assert codes(d) == [] and d["publishable"] is True and d["headline"] is not None, d["reasons"]
    # and it stays publishable on a rerun of the same card on the same slice
    d2, _ = _decide(tmp_path / "d", spec, ledger)
    assert codes(d2) == []


def test_an_extension_does_not_hide_an_edited_or_dropped_holdout_task(tmp_path: Path) -> None:
    ledger = tmp_path / "pack" / "ledger.jsonl"
    ledger.parent.mkdir()
    _decide(tmp_path / "a", build_spec(), ledger)
    spec = _grown(build_spec())
    spec["cfg"]["card_name"] = "grown-pack"
    _task_of(spec, "xs01")["task_digest"] = "e" * 64  # an old holdout task edited on the way
    d, _ = _decide(tmp_path / "b", spec, ledger)
    assert "DENOMINATOR_MOVED" in codes(d) and "xs01" in json.dumps(d["reasons"])


def test_extend_takes_the_frozen_seed_and_fraction_when_not_given(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture) -> None:
    """`split --extend` needs nothing but the pack: the seed and fraction are the frozen
    manifest's (giving others is still a refused resplit); a plain split still needs --seed."""
    pack = _frozen_pack(tmp_path / "p")
    _add(pack, "n01", "n02")
    assert cli.main(["split", str(pack), "--extend"]) == 0
    out = capsys.readouterr().out
    assert "slice 2" in out and "n01" in out, out
    (rec,) = json.loads((pack / split.MANIFEST).read_text())["slices"]
    assert rec["seed"] == SEED and rec["holdout_frac"] == FRAC
    _add(pack, "n03")
    assert cli.main(["split", str(pack), "--extend", "--seed", str(SEED + 1)]) == 1
    assert "seed" in capsys.readouterr().err
    fresh = make_pack(tmp_path / "q", n=12)
    assert cli.main(["split", str(fresh)]) == 1
    err = capsys.readouterr().err
    assert "--seed" in err and not (fresh / split.MANIFEST).exists(), err
