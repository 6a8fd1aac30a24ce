"""A pack's slices: how a frozen split grows, and why numbers from two slices are not compared.

Slice 1 is the split as ``split`` first froze it (the seeded, stratified shuffle). Each
``sealbench split --extend`` appends one record to the manifest's ``slices`` list (slice 2,
3, …): the tasks it added on each side, the date, the pack digest at that slice, the seed,
the fraction and the method. A new task's side is a seeded hash of its own id
(:func:`hash_side`), so it does not depend on the order or the number of the other new
tasks, and no task already split ever changes side.

A number is about one denominator: a card pre-registered (first scored) on slice k and
scored again on slice k+1 is refused (``CARD_ON_EARLIER_SLICE``, :func:`slice_reasons`);
a new card started on the new slice compares only with numbers from that slice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.refusals import refusal

#: How an extension assigns a task (recorded in every slice record; a record naming another
#: method is refused, so the assignment can always be recomputed).
METHOD = "sha256('<seed>:<task_id>'): first 16 hex digits / 16**16 < holdout_frac -> holdout"

SIDES = ("tune", "holdout")
#: the frozen split, in the pack
MANIFEST = "split_manifest.json"


def hash_u(seed: int, task_id: str) -> float:
    """The task's seeded uniform number in [0, 1): its id and the seed, nothing else."""
    digest = hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()
    return int(digest[:16], 16) / 16 ** 16


def hash_side(seed: int, holdout_frac: float, task_id: str) -> str:
    """``holdout`` or ``tune`` for a task added by an extension (:data:`METHOD`)."""
    return "holdout" if hash_u(seed, task_id) < float(holdout_frac) else "tune"


def records(manifest: Mapping) -> list[dict]:
    """The manifest's extension records (slice 2, 3, …); none for a pack never extended."""
    return list(manifest.get("slices") or [])


def current_slice(manifest: Mapping) -> int:
    """The slice the manifest describes: 1 plus the number of extensions."""
    return 1 + len(records(manifest))


def slice_of_task(manifest: Mapping) -> dict[str, int]:
    """{task id: the slice that added it} for the tasks added by extensions (slice 1: the rest)."""
    return {t: int(r["slice"]) for r in records(manifest) for side in SIDES for t in r["added"][side]}


def holdout_key(manifest: Mapping) -> str:
    """The holdout's name among the packs scored into one results folder: a digest of the frozen
    split's seed and its first tasks (both sides, before any slice ``--extend`` added). It stays
    when a task's bytes change (``DENOMINATOR_MOVED`` must see that) and when the pack is copied
    with its manifest; another pack's split has another."""
    later = slice_of_task(manifest)
    first = sorted(t for side in SIDES for t in manifest.get(side, []) if t not in later)
    text = json.dumps({"seed": manifest.get("seed"), "tasks": first}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def results_records(results: Path, manifest: Mapping | None) -> Path:
    """The folder of one holdout's copies in a results folder (``results/holdouts/<key>/``: the
    ledger's and the draw record's); ``results`` itself for a pack not split yet."""
    return Path(results) / "holdouts" / holdout_key(manifest) if manifest else Path(results)


def record_problems(manifest: Mapping, seed: int, holdout_frac: float) -> list[str]:
    """What is wrong with the manifest's ``slices`` field, each naming the field (empty: fine).

    Checks the shape, the numbering (2, 3, … in order), that each record names the
    manifest's seed, fraction and :data:`METHOD`, that no task is added twice, that each
    added task is on that side of the manifest's lists and that its side is the hash's."""
    raw = manifest.get("slices", [])
    if not isinstance(raw, list):
        return ["field 'slices' must be a list of slice records"]
    problems: list[str] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(raw):
        where = f"field 'slices[{i}]'"
        if not isinstance(rec, dict):
            problems.append(f"{where} must be an object")
            continue
        missing = [k for k in ("slice", "added", "date", "pack_digest", "seed", "holdout_frac", "method")
                   if k not in rec]
        if missing:
            problems += [f"{where}: missing field '{k}'" for k in missing]
            continue
        if rec["slice"] != i + 2:
            problems.append(f"{where}.slice is {rec['slice']!r}; the extensions are numbered 2, 3, … in order")
        frac_ok = isinstance(rec["holdout_frac"], (int, float)) and abs(rec["holdout_frac"] - holdout_frac) < 1e-12
        if rec["seed"] != seed or not frac_ok or rec["method"] != METHOD:
            problems.append(f"{where}: seed, holdout_frac and method must be the manifest's ({seed}, "
                            f"{holdout_frac}) and {METHOD!r}")
        added = rec["added"]
        if not isinstance(added, dict) or any(not isinstance(added.get(s), list) for s in SIDES):
            problems.append(f"{where}.added must hold the lists 'tune' and 'holdout'")
            continue
        if not added["tune"] and not added["holdout"]:
            problems.append(f"{where}.added is empty: a slice adds at least one task")
        for side in SIDES:
            for tid in added[side]:
                if not isinstance(tid, str):
                    problems.append(f"{where}.added.{side} must list task ids (strings)")
                    continue
                if tid in seen:
                    problems.append(f"{where}.added.{side}: {tid} was already added by slice {seen[tid]}")
                seen[tid] = int(rec["slice"]) if isinstance(rec["slice"], int) else -1
                if tid not in manifest[side]:
                    problems.append(f"{where}.added.{side}: {tid} is not in the manifest's '{side}' list")
                want = hash_side(seed, holdout_frac, tid)
                if want != side:
                    problems.append(f"{where}.added.{side}: {tid} is on the {side} side, but the seeded hash "
                                    f"puts it in {want} (was the file edited by hand?)")
    return problems


def added_since(manifest: Mapping, first: int) -> dict[str, list[str]]:
    """The tasks the slices after ``first`` added, by side."""
    out: dict[str, list[str]] = {s: [] for s in SIDES}
    for rec in records(manifest):
        if int(rec["slice"]) > first:
            for s in SIDES:
                out[s] += list(rec["added"][s])
    return {s: sorted(v) for s, v in out.items()}


def entry_slice(entry: Mapping) -> int:
    """The slice a ledger line was written on (lines from before extensions existed: slice 1)."""
    value = entry.get("slice", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def slice_reasons(prior: list[Mapping], entry: Mapping, manifest: Mapping) -> list[dict]:
    """``CARD_ON_EARLIER_SLICE``: this card's first scored run (its pre-registration) was on
    another slice of the pack than this scoring's. A card whose first scoring is on the current
    slice, including a new card started there, is not refused."""
    now = entry_slice(entry)
    card = entry["card_name"]
    first = next((e for e in prior if e.get("kind") not in ("slice", "try") and e.get("card_name") == card
                  and isinstance(e.get("preregistration"), dict)), None)
    if first is None or entry_slice(first) == now:
        return []
    then = entry_slice(first)
    if then < now:
        added = added_since(manifest, then)
        n_hold, n_tune = len(added["holdout"]), len(added["tune"])
        what = (f"the pack has since grown to slice {now}: {n_hold + n_tune} task(s) added "
                f"({n_hold} to the holdout, {n_tune} to tune"
                + (f": {', '.join(added['holdout'][:5])}{', …' if n_hold > 5 else ''} in the holdout" if n_hold else "")
                + ")")
        evidence: Any = {"card_slice": then, "slice": now, "added": added}
    else:
        what = (f"this scoring is on slice {now}, an earlier state of the pack (was split_manifest.json "
                "replaced by an older copy?)")
        evidence = {"card_slice": then, "slice": now}
    sentence = (f"Card '{card}' was pre-registered on slice {then} of this pack (its first scored run, "
                f"experiment {first.get('experiment')}); {what}. Numbers from slice {then} are not comparable "
                f"with numbers from slice {now}: the holdout, and so the denominator, is a different set of "
                f"tasks. This card's result is not published on slice {now}. To measure the grown pack, start "
                f"a new card on slice {now} (a new card_name in the config); its numbers compare only with "
                f"other slice-{now} numbers.")
    return [refusal("CARD_ON_EARLIER_SLICE", sentence, evidence)]
