"""split: a seeded tune/holdout split, stratified by stratum, frozen once in the pack.

Reads:  the pack's task ids and strata; PACK/split_manifest.json if it exists
Writes: PACK/split_manifest.json (only when absent; grown only by --extend, never reshuffled)
        results/split/<key>/split_manifest.json (the copy the aggregates read)

Rules: at least 12 tasks; per stratum, round(n_h * holdout_frac) tasks go to the holdout
(chosen by a seeded shuffle), topped up to at least 5 holdout tasks overall. Once written,
the manifest is the contract: another seed or fraction is refused (resplitting after seeing
holdout results is how fitted numbers happen), a manifest whose ids no longer match the
pack is an error (the denominator moved), and every check recomputes the split from the
manifest's own seed and fraction and refuses lists that differ (a hand edit that keeps the
seed), naming the tasks that moved.

Packs grow (``--extend``, :func:`extend`): each task in the pack but not in the manifest goes
to tune or holdout by a seeded hash of its own id (``slices.hash_side``), every task already
split keeps its side, and the manifest records the extension as the next slice (its tasks,
date, pack digest, seed and method) with a line in the pack's ledger. A removed task is
refused, named. The checks recompute slice 1 from the seed and each later slice from the hash.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from ..core import paths
from ..core.core import (
    SealbenchError,
    canonical_json,
    denylist_digest,
    pack_digest,
    read_json,
    sha256_text,
    task_digest,
    write_json,
)
from ..pack.packs import load_pack
from ..provenance import slices
from ..provenance.ledger import LEDGER, append_ledger, read_ledger

MIN_TASKS = 12
MIN_HOLDOUT = 5
MANIFEST = slices.MANIFEST


class SplitError(SealbenchError):
    """The split cannot be made or the frozen one does not fit the pack."""

    def __str__(self) -> str:
        return "split: " + super().__str__()


def make_split(strata_of: Mapping[str, str], seed: int, holdout_frac: float) -> dict:
    """Compute the manifest for ``{task_id: stratum}`` (pure; see module docstring)."""
    ids = sorted(strata_of)
    if len(ids) < MIN_TASKS:
        raise SplitError(
            f"the pack has {len(ids)} tasks; a holdout needs at least {MIN_TASKS} "
            "(with fewer, no split is meaningful: add tasks before splitting)"
        )
    by_stratum: dict[str, list[str]] = {}
    for tid in ids:
        by_stratum.setdefault(strata_of[tid], []).append(tid)
    holdout: set[str] = set()
    leftovers: list[tuple[str, list[str]]] = []
    for stratum in sorted(by_stratum):
        members = list(by_stratum[stratum])
        rng = random.Random(f"{seed}:{stratum}")
        rng.shuffle(members)
        k = int(round(len(members) * holdout_frac + 1e-9))
        k = min(k, len(members) - 1) if len(members) > 1 else k
        holdout.update(members[:k])
        leftovers.append((stratum, members[k:]))
    # Top up to the minimum, taking from the strata with the most tune tasks, deterministically.
    while len(holdout) < MIN_HOLDOUT:
        leftovers.sort(key=lambda s: (-len(s[1]), s[0]))
        stratum, rest = leftovers[0]
        if not rest:
            raise SplitError(f"cannot reach {MIN_HOLDOUT} holdout tasks")
        holdout.add(rest.pop(0))
    tune = sorted(set(ids) - holdout)
    return {
        "seed": seed,
        "holdout_frac": holdout_frac,
        "stratified_by": "stratum",
        "tune": tune,
        "holdout": sorted(holdout),
        "frozen": True,
        "note": "Written once by sealbench split. Do not edit; commit it with the pack.",
    }


def _check_fields(manifest: object, path: Path, seed: int, holdout_frac: float) -> dict:
    """The manifest's own fields: types, no task twice, and the config's seed and fraction."""
    if not isinstance(manifest, dict):
        raise SplitError(f"{path}: must be a JSON object")
    for key, typ in (("seed", int), ("holdout_frac", (int, float)), ("tune", list), ("holdout", list)):
        if key not in manifest:
            raise SplitError(f"{path}: missing field '{key}' (was it edited by hand?)")
        if not isinstance(manifest[key], typ) or isinstance(manifest[key], bool):
            raise SplitError(f"{path}: field '{key}' has the wrong type")
    tune, hold = manifest["tune"], manifest["holdout"]
    if not all(isinstance(x, str) for x in tune + hold):
        raise SplitError(f"{path}: fields 'tune'/'holdout' must list task ids (strings)")
    overlap = sorted(set(tune) & set(hold))
    if overlap:
        raise SplitError(f"{path}: tasks in both tune and holdout: {overlap}")
    dup = sorted({x for x in tune + hold if (tune + hold).count(x) > 1})
    if dup:
        raise SplitError(f"{path}: duplicate task ids: {dup}")
    if manifest["seed"] != seed or abs(float(manifest["holdout_frac"]) - float(holdout_frac)) > 1e-12:
        raise SplitError(
            f"{path}: refusing to resplit: the frozen split used seed={manifest['seed']}, "
            f"holdout_frac={manifest['holdout_frac']} but the config asks for seed={seed}, "
            f"holdout_frac={holdout_frac}. A holdout is frozen once; set the config back, or start "
            "a new pack (a new experiment) if you really mean a new split."
        )
    return manifest


def validate_manifest(manifest: object, path: Path, strata_of: Mapping[str, str],
                      seed: int, holdout_frac: float) -> dict:
    """Check a frozen manifest against the pack and the config; raise :class:`SplitError`."""
    manifest = _check_fields(manifest, path, seed, holdout_frac)
    tune, hold = manifest["tune"], manifest["holdout"]
    pack_ids, man_ids = set(strata_of), set(tune) | set(hold)
    if pack_ids != man_ids:
        missing = sorted(pack_ids - man_ids)
        gone = sorted(man_ids - pack_ids)
        if gone:
            hint = (" A pack only grows: a task of the frozen split cannot be removed (restore it from version "
                    "control); a pack without it is a new pack with its own split.")
        else:
            hint = (f" New tasks are added, never resplit: `sealbench split {path.parent} --extend --seed {seed} "
                    f"--holdout-frac {holdout_frac}` adds them as slice {slices.current_slice(manifest) + 1} "
                    "(every task already split keeps its side).")
        raise SplitError(
            f"{path}: the frozen split no longer matches the pack (the denominator moved): "
            f"tasks not in the manifest: {missing or 'none'}; in the manifest but not in the pack: {gone or 'none'}."
            + hint
        )
    if len(hold) < MIN_HOLDOUT:
        raise SplitError(f"{path}: only {len(hold)} holdout tasks; at least {MIN_HOLDOUT} are needed")
    recompute(manifest, path, strata_of)
    return manifest


def recompute(manifest: Mapping, path: Path, strata_of: Mapping[str, str]) -> None:
    """Refuse a manifest whose lists are not what its own seed and fraction make on this pack.

    The split is a pure function of the task ids, their strata, the seed and the fraction
    (:func:`make_split`), so a frozen manifest is recomputed every time it is checked and
    compared list by list. A hand edit that keeps the seed (one holdout task swapped into tune)
    is refused here, naming the tasks that moved; so is a manifest whose pack changed a task's
    stratum after the split was frozen (the seeded split of this pack is no longer the frozen
    one)."""
    seed, frac = manifest["seed"], manifest["holdout_frac"]
    problems = slices.record_problems(manifest, seed, frac)  # each later slice: its records, the hash
    if problems:
        raise SplitError(f"{path}: " + "; ".join(problems) + ". Restore the file from version control.")
    later = slices.slice_of_task(manifest)
    try:  # slice 1: the seeded, stratified split of the tasks no extension added
        made = make_split({t: s for t, s in strata_of.items() if t not in later}, seed, frac)
    except SplitError as exc:
        raise SplitError(f"{path}: recomputing the split from seed={seed}, holdout_frac={frac} failed: "
                         f"{SealbenchError.__str__(exc)}") from exc
    hold, want = set(manifest["holdout"]) - set(later), set(made["holdout"])
    if hold == want and set(manifest["tune"]) - set(later) == set(made["tune"]):
        return
    into_holdout = sorted(hold - want)  # the seed puts these in tune
    into_tune = sorted(want - hold)     # the seed puts these in the holdout
    raise SplitError(
        f"{path}: the lists are not the split that seed={seed}, holdout_frac={frac} makes on this pack "
        f"(was the file edited by hand, or a task's stratum changed after the split was frozen?): "
        f"tasks moved into the holdout: {into_holdout or 'none'}; tasks moved into tune: {into_tune or 'none'}. "
        "A frozen split is the seeded one or none: restore the file from version control; if a stratum "
        "really changed, this is a new pack (a new experiment) and needs a new split."
    )


def check(pack: Path, strata_of: Mapping[str, str], seed: int, holdout_frac: float) -> dict:
    """What ``ensure`` would do, without writing: the manifest (existing or to be made)."""
    path = Path(pack) / MANIFEST
    if path.exists():
        return validate_manifest(read_json(path), path, strata_of, seed, holdout_frac)
    return make_split(strata_of, seed, holdout_frac)


def ensure(pack: Path, strata_of: Mapping[str, str], seed: int, holdout_frac: float) -> tuple[dict, bool]:
    """Return the frozen manifest, writing it into the pack if absent (never overwriting).

    Returns (manifest, created).
    """
    path = Path(pack) / MANIFEST
    if path.exists():
        return validate_manifest(read_json(path), path, strata_of, seed, holdout_frac), False
    manifest = make_split(strata_of, seed, holdout_frac)
    text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".split_manifest.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    try:
        os.link(tmp, path)  # fails if another process wrote it first: never overwrite
    except FileExistsError:
        return validate_manifest(read_json(path), path, strata_of, seed, holdout_frac), False
    finally:
        os.unlink(tmp)
    return manifest, True


def extend(pack: Path, strata_of: Mapping[str, str], seed: int, holdout_frac: float,
           today: str | None = None) -> tuple[dict, list[str]]:
    """Grow the frozen split by the pack's new tasks, as the next slice; returns (manifest, new ids).

    Refuses a pack without a frozen split, another seed or fraction (a resplit), a removed task
    (named) and a frozen part that fails its checks; with nothing new, changes nothing and
    returns ``[]``. Otherwise rewrites the manifest with the new tasks on their hashed sides and
    one more slice record, then appends the slice to the pack's ledger."""
    pack = Path(pack)
    path = pack / MANIFEST
    if not path.exists():
        raise SplitError(f"{path}: no frozen split to extend; `sealbench split {pack} --seed N` freezes the first "
                         "one (slice 1)")
    manifest = _check_fields(read_json(path), path, seed, holdout_frac)
    old = set(manifest["tune"]) | set(manifest["holdout"])
    removed = sorted(old - set(strata_of))
    if removed:
        raise SplitError(f"{path}: refusing to extend: {len(removed)} task(s) of the frozen split were removed "
                         f"from the pack: {', '.join(removed)}. A pack only grows: a removed task moves the "
                         "denominator of every number it was in. Restore it from version control; a pack "
                         "without it is a new pack (a new experiment) with its own split.")
    validate_manifest(manifest, path, {t: strata_of[t] for t in old}, seed, holdout_frac)
    new = sorted(set(strata_of) - old)
    if not new:
        return manifest, []
    ledger = pack / LEDGER
    try:  # read first: an extension that cannot be recorded is not made
        prior = read_ledger(ledger)
    except ValueError as exc:
        raise SplitError(f"{exc} The extension must be recorded in the ledger, so nothing was changed; restore "
                         "the ledger from version control.") from exc
    added = {side: [t for t in new if slices.hash_side(manifest["seed"], manifest["holdout_frac"], t) == side]
             for side in slices.SIDES}
    digests = {t: task_digest(pack / "tasks" / t) for t in sorted(strata_of)}
    record = {"slice": slices.current_slice(manifest) + 1, "added": added, "tasks": len(strata_of),
              "date": today or time.strftime("%Y-%m-%d", time.gmtime()),
              "pack_digest": pack_digest(digests, denylist_digest(pack)),
              "seed": manifest["seed"], "holdout_frac": manifest["holdout_frac"], "method": slices.METHOD}
    grown = dict(manifest, tune=sorted(set(manifest["tune"]) | set(added["tune"])),
                 holdout=sorted(set(manifest["holdout"]) | set(added["holdout"])),
                 slices=[*slices.records(manifest), record],
                 note="Written once by sealbench split, grown only by sealbench split --extend (slices). "
                      "Do not edit; commit it with the pack.")
    validate_manifest(grown, path, strata_of, seed, holdout_frac)  # what every later check does
    fd, tmp = tempfile.mkstemp(prefix=".split_manifest.", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(json.dumps(grown, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)
    append_ledger(ledger, {
        "kind": "slice", "slice": record["slice"], "added": added, "date": record["date"],
        "pack_digest": record["pack_digest"], "denylist_digest": denylist_digest(pack),
        "split_manifest_digest": manifest_digest(grown), "seed": record["seed"],
        "holdout_frac": record["holdout_frac"], "method": slices.METHOD,
        "holdout": {t: digests[t] for t in grown["holdout"]},
        # no scoring: no card, envelope, agent or pre-registration (the gate's checks skip this line)
        "card_name": None, "envelope_digest": None, "agents": {}, "preregistration": None, "servers": [],
        "experiment": None,
    }, prior)
    return grown, new


def describe_extension(pack: Path, manifest: Mapping, new: list[str]) -> list[str]:
    """What ``split --extend`` prints."""
    path = Path(pack) / MANIFEST
    k = slices.current_slice(manifest)
    sizes = f"tune={len(manifest['tune'])} holdout={len(manifest['holdout'])}"
    if not new:
        return [f"split: nothing new to extend: every task of {pack} is in the frozen split "
                f"(slice {k}; {sizes}); nothing was changed."]
    added = manifest["slices"][-1]["added"]
    return [f"split: extended {path} to slice {k}: {len(new)} new task(s); holdout +{len(added['holdout'])} "
            f"({', '.join(added['holdout']) or 'none'}), tune +{len(added['tune'])} "
            f"({', '.join(added['tune']) or 'none'}); every task already split kept its side; {sizes}.",
            f"split: slice {k} is recorded in {Path(pack) / LEDGER}; commit it and split_manifest.json with the pack.",
            f"split: numbers from slice {k - 1} are not comparable with slice {k}: a card pre-registered on an "
            f"earlier slice is refused here (CARD_ON_EARLIER_SLICE); start a new card_name on slice {k}."]


def manifest_digest(manifest: Mapping) -> str:
    """The split's digest: its lists, seed and fraction, and its slice records once it has any
    (a manifest never extended keeps the digest it always had)."""
    body = {"tune": sorted(manifest["tune"]), "holdout": sorted(manifest["holdout"]),
            "seed": manifest["seed"], "holdout_frac": manifest["holdout_frac"]}
    if slices.records(manifest):
        body["slices"] = slices.records(manifest)
    return sha256_text(canonical_json(body))


def ids_key(strata_of: Mapping[str, str]) -> str:
    """Digest of the task set and strata: the split job reruns only when these change."""
    return hashlib.sha256(canonical_json(sorted(strata_of.items())).encode()).hexdigest()[:16]


#: The holdout share when a split is first frozen without --holdout-frac.
DEFAULT_FRAC = 0.4


def _frozen_choice(pack: Path, seed: int | None, frac: float | None) -> tuple[int, float]:
    """``--extend``'s seed and fraction: the frozen manifest's where not given (a different one
    given is refused later as a resplit, naming both)."""
    path = Path(pack) / MANIFEST
    if not path.exists():
        raise SplitError(f"split --extend: {path} does not exist: there is no frozen split to extend; "
                         "freeze one first with `sealbench split PACK --seed N`")
    frozen = read_json(path)
    return (frozen["seed"] if seed is None else seed,
            frozen["holdout_frac"] if frac is None else frac)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.stages.split", description=__doc__.splitlines()[0])
    ap.add_argument("--pack", type=Path, help=f"the pack (default: ${paths.PACK_ENV}, as the workflow runs it)")
    ap.add_argument("--seed", type=int, help="the split's seed (with --extend: default the frozen split's)")
    ap.add_argument("--holdout-frac", type=float,
                    help=f"share of each stratum in the holdout (default {DEFAULT_FRAC}; with --extend: the frozen split's)")
    ap.add_argument("--strata", nargs="*", help="allowed stratum labels")
    ap.add_argument("--out", type=Path, help="where to copy the manifest for downstream jobs")
    ap.add_argument("--extend", action="store_true",
                    help="add the pack's new tasks to the frozen split as the next slice (old tasks keep their side)")
    args = ap.parse_args(argv)
    try:
        args.pack = args.pack or paths.pack_root()
        tasks = load_pack(args.pack, args.strata or None)
        strata_of = {t.id: t.stratum for t in tasks}
        if args.extend:
            args.seed, args.holdout_frac = _frozen_choice(args.pack, args.seed, args.holdout_frac)
            manifest, new = extend(args.pack, strata_of, args.seed, args.holdout_frac)
            if args.out:
                write_json(args.out, dict(manifest, digest=manifest_digest(manifest)))
            print("\n".join(describe_extension(args.pack, manifest, new)))
            return 0
        if args.seed is None:
            raise SplitError(f"split: {args.pack}: give --seed N (and --holdout-frac F, default {DEFAULT_FRAC}) to "
                             "freeze the split; with --extend, the frozen split's seed and fraction are used")
        manifest, created = ensure(args.pack, strata_of, args.seed,
                                   DEFAULT_FRAC if args.holdout_frac is None else args.holdout_frac)
        if args.out:
            write_json(args.out, dict(manifest, digest=manifest_digest(manifest)))
        verb = "wrote" if created else "kept frozen"
        print(f"split: {verb} {args.pack / MANIFEST}: tune={len(manifest['tune'])} holdout={len(manifest['holdout'])}")
        if created:
            print("split: commit split_manifest.json with the pack; it will not be rewritten.")
    except SealbenchError as exc:
        print(str(exc) if isinstance(exc, SplitError) else f"split: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
