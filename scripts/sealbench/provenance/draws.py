"""The draw record: every agent run on the record before it starts, and its outcome when scored.

A *slot* is one agent version on one task at one epoch: ``task/task_digest/agent/fingerprint/epoch``
(the run folder's own address, :func:`paths.run_dir`). Each time run_agent is about to start the
agent on a slot it appends a ``draw`` line with a fresh draw id (written into ``run.json`` as
``draw``); when the agent has ended it appends ``ran``; hidden_score appends ``outcome`` with the
status it scored. The record is append-only and hash-chained (each line carries the digest of the
line before it), and it is kept twice, written together: ``PACK/draws.jsonl`` (it travels with the
pack) and ``results/draws.jsonl`` (it stays with the results). Deleting one copy loses nothing:
the gate reads both (:func:`read_draws`) and says which copy lacked what.

A draw that ran to its end keeps what scoring reads of it (``run.json`` and ``patch.diff``),
content-addressed beside each copy (``draws.kept/<sha256>``, outside every job's outputs), and
its ``ran`` line names their digests (``kept``). A job killed after its agent ended and before
Snakemake saw it finish has its outputs deleted on resume; run_agent then finds the slot's draw
ran with no outcome noted (:func:`restorable`), checks the kept files against the digests on the
record and writes them back instead of drawing again: the slot keeps its one draw, and its run
record says it was restored (``restored``). Kept files that are gone or do not match their
digests are not restored: the slot is drawn again, and the gate refuses it as below.

Why: deleting the folders of failed runs and running the same command again draws those slots
anew. Without a record that is best-of-k, undisclosed. With it, the gate sees the slot drawn
twice (:func:`redraws`) and scores the recorded outcome of the first draw that ran to its end; a
first draw that ran to its end but whose outcome is not on the record is refused (``REDRAWN``),
naming the slots (an honest resume never gets there: that draw is restored, not drawn again); draws
the harness never saw end (a Ctrl-C, a job killed while its agent ran) are disclosed and counted
in the headline sentence.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..core.core import atomic_write_bytes, sha256_text

#: The record's file name, in the pack and in the results folder.
DRAWS = "draws.jsonl"

#: Beside each copy of the record: the kept files of draws that ran, each named by its sha256.
KEPT_DIR = "draws.kept"

#: What a draw that ran keeps: what hidden_score reads of a run (run_agent's two outputs).
KEPT_FILES = ("run.json", "patch.diff")

#: Line kinds, in the order a slot's draw goes through them.
DRAW, RAN, OUTCOME = "draw", "ran", "outcome"


def slot_key(task: str, task_digest: str, agent: str, fingerprint: str, epoch: int | str) -> str:
    """One slot's name in the record (the run folder's address below ``tasks/``)."""
    return f"{task}/{task_digest}/{agent}/{fingerprint}/{int(epoch)}"


def record_paths() -> list[Path]:
    """The two copies a job writes: ``$SEALBENCH_PACK/draws.jsonl`` and
    ``$SEALBENCH_RESULTS/draws.jsonl`` (empty outside the workflow: nothing to record in). The
    results copy is one file for every pack scored into the folder: a slot names its task and
    the task's digest, and the gate reads only its own runs' slots. (An agent's run does not wait
    for the split, so no per-holdout name is known when it is drawn.)"""
    from ..core.paths import PACK_ENV, RESULTS_ENV

    out = []
    for var in (PACK_ENV, RESULTS_ENV):
        value = os.environ.get(var)
        if value:
            out.append(Path(value) / DRAWS)
    return out


def line_hash(line: str) -> str:
    return sha256_text(line.strip())


def _last_line(fd: int) -> str | None:
    """The last non-empty line of an open file (read backwards from its end)."""
    size = os.lseek(fd, 0, os.SEEK_END)
    if size == 0:
        return None
    chunk, pos, tail = 1 << 14, size, b""
    while pos > 0:
        step = min(chunk, pos)
        pos -= step
        tail = os.pread(fd, step, pos) + tail
        lines = [x for x in tail.split(b"\n") if x.strip()]
        if len(lines) > 1 or (pos == 0 and lines):
            return lines[-1].decode("utf-8", "replace")
    return None


def append(paths: Iterable[Path], entry: Mapping) -> None:
    """Append ``entry`` to every copy, each under an exclusive lock and chained to that copy's
    own last line (``prev``); fsynced before returning, so a draw is on the record before the
    agent starts."""
    for path in paths:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            last = _last_line(fd)
            line = json.dumps({**entry, "prev": line_hash(last) if last else None}, sort_keys=True)
            os.write(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)


def start_draw(slot: str, paths: Iterable[Path] | None = None) -> str | None:
    """Put a new draw of ``slot`` on the record; returns its id (None outside the workflow)."""
    paths = list(record_paths() if paths is None else paths)
    if not paths:
        return None
    draw = uuid.uuid4().hex
    append(paths, {"kind": DRAW, "slot": slot, "draw": draw, "time_ns": time.time_ns()})
    return draw


def kept_path(copy: Path, digest: str) -> Path:
    """Where the copy of the record at ``copy`` keeps the file whose sha256 is ``digest``."""
    return Path(copy).parent / KEPT_DIR / digest


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def keep(paths: Iterable[Path], data: bytes) -> str:
    """Keep ``data`` beside every copy of the record (written whole and fsynced, read-only);
    returns its sha256. A file already kept under that name is left as it is."""
    digest = sha256_bytes(data)
    for copy in paths:
        target = kept_path(copy, digest)
        if target.is_file() and sha256_bytes(target.read_bytes()) == digest:
            continue
        atomic_write_bytes(target, data)
        target.chmod(0o444)
    return digest


def note_ran(slot: str, draw: str | None, end_reason: str | None, paths: Iterable[Path] | None = None,
             kept: Mapping[str, Path] | None = None) -> None:
    """The agent of ``draw`` ended (green, exited, timed out…): the draw is no longer interrupted.
    ``kept`` (name -> file: run_agent's ``run.json`` and ``patch.diff``) are kept first and their
    digests go on the ``ran`` line, so a job killed from here on can be restored (:func:`restorable`)."""
    paths = list(record_paths() if paths is None else paths)
    if draw and paths:
        digests = {name: keep(paths, Path(f).read_bytes()) for name, f in sorted((kept or {}).items())
                   if Path(f).is_file()}
        entry = {"kind": RAN, "slot": slot, "draw": draw, "end_reason": end_reason, "time_ns": time.time_ns()}
        if digests:
            entry["kept"] = digests
        append(paths, entry)


def note_outcome(slot: str, draw: str | None, status: str, hidden_pass: bool | None,
                 paths: Iterable[Path] | None = None) -> None:
    """hidden_score's verdict on ``draw``."""
    paths = list(record_paths() if paths is None else paths)
    if draw and paths:
        append(paths, {"kind": OUTCOME, "slot": slot, "draw": draw, "status": status, "hidden_pass": hidden_pass,
                       "time_ns": time.time_ns()})


# ------------------------------------------------------------------------------ reading it


def read_copy(path: Path) -> list[dict]:
    """The lines of one copy, verified; raises ValueError naming the line when a line is not
    JSON or the chain is broken (a line edited, removed or inserted)."""
    path = Path(path)
    if not path.exists():
        return []
    out, prev = [], None
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{i}: not a JSON line ({exc.msg}); was the draw record truncated or edited?") \
                from exc
        if not isinstance(entry, dict) or entry.get("kind") not in (DRAW, RAN, OUTCOME) or not entry.get("draw"):
            raise ValueError(f"{path}:{i}: not a draw record line (kind, slot, draw)")
        if entry.get("prev") != prev:
            raise ValueError(f"{path}:{i}: the hash chain is broken (this line does not follow the one before it): "
                             "a line was edited, removed or inserted")
        prev = line_hash(line)
        out.append(entry)
    return out


@dataclass
class Record:
    """Both copies of the draw record, merged: per slot its draws in the order they were made."""

    slots: dict[str, list[str]] = field(default_factory=dict)      #: slot -> draw ids, first first
    ran: dict[str, str | None] = field(default_factory=dict)        #: draw -> end reason
    kept: dict[str, dict[str, str]] = field(default_factory=dict)   #: draw -> {kept file name: sha256}
    outcome: dict[str, dict] = field(default_factory=dict)          #: draw -> its last outcome line
    seen: dict[str, set[str]] = field(default_factory=dict)         #: copy path -> the draw ids it holds
    heads: dict[str, str | None] = field(default_factory=dict)      #: copy path -> digest of its last line
    problems: list[str] = field(default_factory=list)              #: damaged copies, named


def read_draws(copies: Iterable[Path]) -> Record:
    """Read and merge the copies (a damaged copy is named in ``problems`` and left out)."""
    rec = Record()
    seen = rec.seen
    starts: dict[str, tuple[int, str]] = {}
    for path in copies:
        key = str(path)
        try:
            lines = read_copy(path)
        except ValueError as exc:
            rec.problems.append(str(exc))
            continue
        text = [ln for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()] \
            if Path(path).exists() else []
        rec.heads[key] = line_hash(text[-1]) if text else None
        seen[key] = set()
        for e in lines:
            d = e["draw"]
            seen[key].add(d)
            if e["kind"] == DRAW:
                if d not in starts or e.get("time_ns", 0) < starts[d][0]:
                    starts[d] = (int(e.get("time_ns") or 0), e["slot"])
            elif e["kind"] == RAN:
                rec.ran[d] = e.get("end_reason")
                if isinstance(e.get("kept"), dict):
                    rec.kept[d] = {str(k): str(v) for k, v in e["kept"].items()}
            elif e["kind"] == OUTCOME:
                rec.outcome[d] = e
    for d, (_t, slot) in sorted(starts.items(), key=lambda kv: (kv[1][0], kv[0])):
        rec.slots.setdefault(slot, []).append(d)
    return rec


def counted_draw(rec: Record, ids: list[str]) -> str | None:
    """Of a slot's draws (first first), the one that counts: the first whose agent ran to its end."""
    return next((d for d in ids if d in rec.ran), None)


@dataclass
class Kept:
    """A slot's first draw that ran to its end, and its kept files."""

    slot: str
    draw: str
    end_reason: str | None
    files: dict[str, bytes]     #: kept file name -> its bytes, checked against the record's digest
    digests: dict[str, str]     #: kept file name -> sha256 (as on the ``ran`` line)
    outcome: dict | None = None  #: its outcome line when it was scored (None: not scored)


class NotRestorable(Exception):
    """The slot's draw that ran has no outcome on the record, but cannot be restored (the message
    says why): drawing the slot again is what the gate refuses (``REDRAWN``)."""


def restorable(slot: str, paths: Iterable[Path] | None = None) -> Kept | None:
    """What run_agent restores instead of drawing ``slot`` again: the slot's first draw that ran
    to its end, when its kept files are whole (each one's sha256 is the one its ``ran`` line names,
    in either copy's ``draws.kept/``), scored or not. A slot is drawn once: the job killed after its
    agent ended, the run folder deleted, or the same pack run from another working folder (its own
    results/; the pack's copy of the record travels with the pack) all get that draw back, and
    the agent is not run again. None: no draw of the slot ran to its end. Raises
    :class:`NotRestorable` when the draw that ran cannot be had (its kept files gone or edited,
    recorded before draws were kept) or the record cannot be read: the slot is then drawn again,
    which the gate discloses (scored, by its first outcome) or refuses (unscored, ``REDRAWN``)."""
    paths = list(record_paths() if paths is None else paths)
    if not paths:
        return None
    rec = read_draws(paths)
    if rec.problems:
        raise NotRestorable("the draw record is damaged: " + "; ".join(rec.problems))
    draw = counted_draw(rec, rec.slots.get(slot) or [])
    if draw is None:
        return None
    digests = rec.kept.get(draw) or {}
    missing = [name for name in KEPT_FILES if name not in digests]
    if missing:
        raise NotRestorable(f"its ran line keeps no {', '.join(missing)} (recorded before draws were kept)")
    files: dict[str, bytes] = {}
    for name, digest in digests.items():
        for copy in paths:
            target = kept_path(copy, digest)
            data = target.read_bytes() if target.is_file() else None
            if data is not None and sha256_bytes(data) == digest:
                files[name] = data
                break
        else:
            raise NotRestorable(f"its kept {name} (sha256 {digest[:12]}…) is gone from "
                                f"{', '.join(str(Path(c).parent / KEPT_DIR) for c in paths)} or does not match "
                                "its digest")
    return Kept(slot, draw, rec.ran.get(draw), files, dict(digests), rec.outcome.get(draw))


@dataclass
class Redraw:
    """One slot of the scored rows that was drawn more than once."""

    slot: str
    draws: int                 #: how many draws the record holds for the slot
    first: str                 #: the draw that counts: the first that ran to its end before the scored one,
                               #: else the slot's first draw
    first_outcome: dict | None  #: its recorded outcome (None: never scored)
    first_ran: bool            #: the harness saw its agent end


def redraws(rec: Record, scored: Mapping[str, str | None]) -> tuple[list[Redraw], list[str]]:
    """For the scored rows (slot -> the row's draw id), the slots drawn more than once, and the
    rows whose draw the record does not hold (made while the record was kept elsewhere, or after
    it was deleted). A slot's draw that counts is the first that ran to its end: draws before
    it were interrupted, so an interrupted first draw does not let a later draw replace a draw
    that ran. Only draws made before the scored one are looked at."""
    out, unknown = [], []
    for slot, draw in sorted(scored.items()):
        ids = rec.slots.get(slot) or []
        if draw is not None and draw not in ids:
            unknown.append(slot)
            continue
        if len(ids) > 1:
            before = ids[:ids.index(draw)] if draw is not None else ids
            first = counted_draw(rec, before) or ids[0]
            out.append(Redraw(slot, len(ids), first, rec.outcome.get(first), first in rec.ran))
    return out, unknown


# ------------------------------------------------------------------------------ the gate's step


#: Beside decision.json: the heads of the draw record's copies the decision read ({path: digest}).
DRAWS_CITATION = "draws_head.json"


@dataclass
class DrawCheck:
    """What the draw record says about the scored rows (:func:`draw_check`)."""

    runs: object = None                                  #: the runs, first draws' outcomes substituted
    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    redrawn: list = field(default_factory=list)           #: ["solver:task#epoch (k draws, what was scored)"]
    heads: dict = field(default_factory=dict)             #: copy path -> digest of its last line
    draws: int = 0                                        #: draws on the record for the scored rows' slots
    first_scored: int = 0                                 #: redrawn slots scored by their first draw
    interrupted: int = 0                                  #: redrawn slots whose first draw never ended
    by_solver: dict = field(default_factory=dict)         #: solver -> redrawn slots


def _cited_lost(experiments: Path, rec_lines: Mapping[str, set[str]], pack_digest: str) -> list[str]:
    """Earlier decisions on this pack digest that cited a line a copy no longer holds."""
    from .ledger import citations

    lost = []
    for folder, cited in citations(experiments, DRAWS_CITATION):
        if cited.get("pack_digest") != pack_digest:
            continue
        for path, head in (cited.get("heads") or {}).items():
            if head and path in rec_lines and head not in rec_lines[path]:
                lost.append(f"{folder.name} ({path})")
    return lost


def _line_digests(path: Path) -> set[str]:
    if not Path(path).exists():
        return set()
    return {line_hash(ln) for ln in Path(path).read_text(encoding="utf-8").splitlines() if ln.strip()}


def draw_check(runs, split: str | None, copies: list[Path], experiments: Path | None, pack_digest: str) -> DrawCheck:
    """Check the scored split's agent rows against the draw record.

    A row whose slot was drawn before its own draw is replaced by the first draw's recorded
    outcome (``redraw`` says so); a first draw that ran to its end with no recorded outcome is
    ``REDRAWN`` (refused, slots named); a first draw never seen ending (interrupted) is counted.
    A damaged copy, a scored draw neither copy holds, or a cited line gone is
    ``DRAW_RECORD_UNREADABLE``. A copy lacking lines the other holds is noted. ``split`` None:
    every split (stratify substitutes in the tables; the gate then finds the rows already
    substituted, ``redraw`` set, and only counts them)."""
    from ..core.refusals import note_for, refusal

    out = DrawCheck(runs=runs)
    if not copies:
        return out
    rec = read_draws(copies)
    out.heads = {str(os.path.realpath(k)): v for k, v in rec.heads.items()}
    if rec.problems:
        out.reasons.append(refusal("DRAW_RECORD_UNREADABLE", "The draw record is damaged: " + "; ".join(rec.problems)
                                   + ". Restore it from the other copy or from version control; never edit it.",
                                   rec.problems))
    if experiments is not None:
        lines = {str(os.path.realpath(p)): _line_digests(p) for p in copies}
        lost = _cited_lost(experiments, lines, pack_digest)
        if lost:
            out.reasons.append(refusal("DRAW_RECORD_UNREADABLE", "Earlier decisions on this pack cited draw record "
                                       f"lines that are gone ({', '.join(lost[:5])}): the record was truncated, "
                                       "replaced or deleted since. Restore it; never edit it.", lost))
    rows = runs[((runs.split == split) if split is not None else True) & (runs.role == "agent")]
    slot_of = {i: slot_key(r.task_id, r.task_digest, r.solver, r.fingerprint, r.epoch) for i, r in rows.iterrows()}
    # a draw id is a string; a row without one holds None or NaN (no pandas here: this module is
    # part of the per-task stages' code, and pandas is not part of their toolchain)
    drawn = {slot_of[i]: (r.draw_id if isinstance(r.draw_id, str) and r.draw_id else None)
             for i, r in rows.iterrows()}
    out.draws = sum(len(rec.slots.get(sl) or []) for sl in drawn)
    redrawn, unknown = redraws(rec, drawn)
    if unknown:
        out.reasons.append(refusal("DRAW_RECORD_UNREADABLE", f"{len(unknown)} scored run(s) were drawn without "
                                   f"their draw being on the record that is here ({', '.join(unknown[:5])}"
                                   f"{', …' if len(unknown) > 5 else ''}): the record was replaced or deleted "
                                   f"(both copies: {', '.join(str(c) for c in copies)}). Restore it; never edit it.",
                                   unknown))
    mine = {d for sl in drawn for d in rec.slots.get(sl) or []}
    lacks = [f"{c} lacks {len(mine - ids)} of the {len(mine)} draws of these runs"
             for c, ids in sorted(rec.seen.items()) if mine - ids]
    if lacks and len(rec.seen) > 1:
        out.notes.append(note_for("RECORD_COPY_DIFFERS", "The draw record's copies differ: " + "; ".join(lacks)
                                  + ". Both were read: a draw in either counts."))
    runs = runs.copy() if redrawn else runs
    index_of = {slot_of[i]: i for i in slot_of}
    refused = []
    for r in redrawn:
        i = index_of[r.slot]
        if drawn[r.slot] == r.first:
            continue
        who = f"{runs.at[i, 'solver']}:{runs.at[i, 'task_id']}#{runs.at[i, 'epoch']}"
        out.by_solver[runs.at[i, "solver"]] = out.by_solver.get(runs.at[i, "solver"], 0) + 1
        done = runs.at[i, "redraw"]
        if isinstance(done, str) and done:  # substituted in the tables already (stratify)
            out.redrawn.append(f"{who} ({done})")
            if done.startswith("first of"):
                out.first_scored += 1
            else:
                out.interrupted += 1
            continue
        if r.first_outcome is not None:
            first = r.first_outcome
            runs.at[i, "reason"] = (f"drawn {r.draws} times: the first draw is scored ({first['status']}); this "
                                    f"draw scored {runs.at[i, 'status']}")
            runs.at[i, "status"] = first["status"]
            runs.at[i, "hidden_pass"] = first.get("hidden_pass")
            runs.at[i, "redraw"] = f"first of {r.draws} draws scored ({first['status']})"
            out.redrawn.append(f"{who} ({r.draws} draws; the first, {first['status']}, is scored)")
            out.first_scored += 1
        elif r.first_ran:
            refused.append(f"{who} ({r.draws} draws)")
        else:
            runs.at[i, "redraw"] = f"drawn {r.draws} times; the first draw was interrupted before its agent ended"
            out.redrawn.append(f"{who} ({r.draws} draws; the first was interrupted before its agent ended)")
            out.interrupted += 1
    out.runs = runs
    if refused:
        out.reasons.append(refusal("REDRAWN", f"{len(refused)} slot(s) were drawn again after their first draw ran "
                                   f"to its end, and the first draw's outcome is not on the record "
                                   f"({', '.join(refused[:5])}{', …' if len(refused) > 5 else ''}): the first draw "
                                   "cannot be scored and a later one would be best-of-k. Score this agent version "
                                   "on a fresh pack, or restore the first draws' score records, or put back their "
                                   f"kept files ({KEPT_DIR}/ beside the record) and delete these runs' folders: "
                                   "the first draws are then restored and scored.", refused))
    if out.redrawn:
        out.notes.append(note_for("REDRAWN_SLOTS", f"{len(out.redrawn)} slot(s) of the {split or 'any'} split were drawn more "
                                  f"than once ({'; '.join(out.redrawn[:5])}{'; …' if len(out.redrawn) > 5 else ''})."))
    return out

