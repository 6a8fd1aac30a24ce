"""Issue 11 (11): a frozen split manifest is recomputed from its seed every time it is checked.

A hand-edited manifest that keeps the seed and the fraction (swap one tune task with one
holdout task) used to pass every check before the first scored run. The split is a pure
function of the pack's task ids, their strata, the seed and the fraction, so the lists must
be exactly what ``make_split`` gives; anything else is refused, naming the file and the tasks
that moved. What ``ensure`` writes, the bundled suite's committed manifest and the packs of
tests/packgen.py still pass.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from packgen import make_pack  # noqa: E402
from sealbench.pack import packs  # noqa: E402
from sealbench.stages import split  # noqa: E402

pytestmark = pytest.mark.unit

STRATA = {f"t{i:02d}": ("xs", "s", "m")[i % 3] for i in range(24)}


def _swap(path: Path) -> tuple[str, str]:
    """Swap one holdout task with a tune task of the same stratum, keeping seed, fraction,
    counts and per-stratum counts: the edit a hopeful reader would make."""
    man = json.loads(path.read_text())
    out = man["holdout"][0]
    into = next(t for t in man["tune"] if STRATA[t] == STRATA[out])
    man["holdout"] = sorted(set(man["holdout"]) - {out} | {into})
    man["tune"] = sorted(set(man["tune"]) - {into} | {out})
    path.write_text(json.dumps(man, indent=2, sort_keys=True) + "\n")
    return out, into


def swap_one_pair(pack: Path, strata_of: dict) -> tuple[str, str]:
    """Hand-edit the frozen manifest: swap one holdout task with a tune task of its stratum."""
    man = json.loads((pack / split.MANIFEST).read_text())
    out = man["holdout"][0]
    into = next(t for t in man["tune"] if strata_of[t] == strata_of[out])
    man["holdout"] = sorted(set(man["holdout"]) - {out} | {into})
    man["tune"] = sorted(set(man["tune"]) - {into} | {out})
    (pack / split.MANIFEST).write_text(json.dumps(man, indent=2, sort_keys=True) + "\n")
    return out, into


def test_hand_swapped_manifest_with_the_same_seed_is_refused(tmp_path: Path) -> None:
    m, created = split.ensure(tmp_path, STRATA, 5, 0.4)
    assert created
    assert split.check(tmp_path, STRATA, 5, 0.4)["holdout"] == m["holdout"]  # what ensure wrote passes
    assert split.ensure(tmp_path, STRATA, 5, 0.4) == (m, False)
    out, into = _swap(tmp_path / split.MANIFEST)
    for fn in (split.check, lambda *a: split.ensure(*a)[0]):
        with pytest.raises(split.SplitError) as err:
            fn(tmp_path, STRATA, 5, 0.4)
        msg = str(err.value)
        assert str(tmp_path / split.MANIFEST) in msg and "seed=5" in msg, msg
        assert out in msg and into in msg, msg
    # the file is never rewritten by the check
    assert into in json.loads((tmp_path / split.MANIFEST).read_text())["holdout"]


def test_manifest_moved_across_strata_is_refused(tmp_path: Path) -> None:
    split.ensure(tmp_path, STRATA, 5, 0.4)
    man = json.loads((tmp_path / split.MANIFEST).read_text())
    moved = man["tune"][0]
    man["tune"].remove(moved)
    man["holdout"] = sorted(man["holdout"] + [moved])
    (tmp_path / split.MANIFEST).write_text(json.dumps(man))
    with pytest.raises(split.SplitError, match=rf"{moved}"):
        split.check(tmp_path, STRATA, 5, 0.4)


def test_bundled_suite_manifest_is_its_seeded_split_and_an_edit_is_refused(tmp_path: Path) -> None:
    suite = ROOT / "suite"
    frozen = json.loads((suite / split.MANIFEST).read_text())
    strata_of = {t.id: t.stratum for t in packs.load_pack(suite)}
    got = split.check(suite, strata_of, frozen["seed"], frozen["holdout_frac"])
    assert got["holdout"] == frozen["holdout"] and got["tune"] == frozen["tune"]
    made = split.make_split(strata_of, frozen["seed"], frozen["holdout_frac"])
    assert (made["tune"], made["holdout"]) == (frozen["tune"], frozen["holdout"])
    # a copy with one task swapped (same seed) is refused
    pack = tmp_path / "suite"
    pack.mkdir()
    shutil.copy(suite / split.MANIFEST, pack / split.MANIFEST)
    out, into = swap_one_pair(pack, strata_of)
    with pytest.raises(split.SplitError) as err:
        split.check(pack, strata_of, frozen["seed"], frozen["holdout_frac"])
    assert out in str(err.value) and into in str(err.value)


def test_packgen_pack_split_round_trips_and_an_edit_is_refused(tmp_path: Path) -> None:
    pack = make_pack(tmp_path / "p")
    strata_of = {t.id: t.stratum for t in packs.load_pack(pack)}
    m, created = split.ensure(pack, strata_of, 7, 0.5)
    assert created and split.check(pack, strata_of, 7, 0.5)["holdout"] == m["holdout"]
    out, into = swap_one_pair(pack, strata_of)
    with pytest.raises(split.SplitError, match="moved"):
        split.check(pack, strata_of, 7, 0.5)
