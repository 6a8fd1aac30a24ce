"""The holdout's memory: ``PACK/ledger.jsonl``, one hash-chained line per holdout scoring.

What reached the holdout (agent fingerprints and lineage), its pre-registration (every knob
that decides the result) and its servers are pinned at the first scored run; the gate
refuses a scoring that contradicts them (``ledger_reasons``).
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from ..core.configuration import envelope_digest
from ..core.core import canonical_json, sha256_text
from ..core.refusals import ALPHA, refusal
from .slices import current_slice, entry_slice

LEDGER = "ledger.jsonl"


#: Beside decision.json: the ledger line that records the decision ({"path", "line"}).
LEDGER_CITATION = "ledger_line.json"


#: Config keys that can change the decision: pinned at the holdout's first scored run, whatever
#: the card name (seed 003: "lowering that floor after seeing the gap would convert a written
#: control into a marketing dial"; a new card name on a holdout already seen is no fresh start).
#: Under the same card, envelope and health are ENVELOPE_CHANGED; the rest PREREGISTRATION_CHANGED.
PREREGISTERED = ("mde", "planning_discordance", "min_kept_tasks", "interval_method", "strata", "score_split",
                 "epochs", "baseline", "oracle_runs", "decoys_per_task", "score_timeout_s", "limits", "stop_on_green",
                 "envelope", "health", "humans", "holdout_budget")


_ENVELOPE_KEYS = ("envelope", "health")


#: Knobs pinned per candidate, not per holdout: a new candidate names the baseline it is compared
#: with at its own first scored run (its look is counted by the budget); the same candidate
#: moving to another baseline afterwards is PREREGISTRATION_CHANGED.
PER_CANDIDATE = ("baseline", "candidate")


#: The server label of a scored row whose stamp names no server.
NO_SERVER = "<none>"


def preregistration(cfg: Mapping, exp: Mapping | None = None) -> dict:
    """Every knob that can change the decision, with its value (the fixed alpha, and the
    denylist digest: deleting a denylist line after LEAK_SUSPECT is a knob too)."""
    out = {**{k: cfg.get(k) for k in PREREGISTERED}, "alpha": ALPHA}
    # whose baseline `baseline` is: each candidate pins its own (PER_CANDIDATE)
    out["candidate"] = cfg.get("candidate")
    # `offline: true` decides whether a run that used a server is excluded: a knob like the others
    out["offline_agents"] = sorted(a for a, spec in (cfg.get("agents") or {}).items() if spec.get("offline"))
    if exp is not None:
        out["denylist_digest"] = exp.get("denylist_digest")
    return out


def _system_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}
    roots |= {os.path.realpath(r) for r in list(roots)}
    return tuple(sorted(r.rstrip("/") + "/" for r in roots if r))


_SEALBENCH_PKG = os.path.realpath(Path(__file__).resolve().parents[1]) + "/"


_SEALBENCH_AGENTS = _SEALBENCH_PKG + "agents/"


def _own_file(label: str, base: Path) -> bool:
    """Is a covered file the agent's own code, not the machine's (interpreter, system, the
    project's venv) nor sealbench's shared harness modules?"""
    path = label if label.startswith("/") else os.path.join(base, label)
    real = os.path.realpath(path)
    for cand in {path if path.endswith("/") else path, real}:
        if cand.startswith(_system_roots()):
            return False
        if cand.startswith(_SEALBENCH_PKG) and not cand.startswith(_SEALBENCH_AGENTS):
            return False
    if os.path.realpath(sys.executable) == real:
        return False
    # a venv interpreter named relative to the project (.venv/bin/python -> /usr/...)
    return not (os.path.basename(path).startswith("python") and real.startswith(_system_roots()))


def agent_lineage(name: str, identity: Mapping | None, base: Path | None = None) -> dict:
    """What ties versions of one agent together: its name, its declared ``lineage:`` and the
    files its fingerprint covered that are its own (not the interpreter's, the system's or
    sealbench's shared modules), with their content digests (a script copied to a new path is
    the same code)."""
    identity = identity or {}
    base = Path(base) if base is not None else Path.cwd()
    files = identity.get("files") or {}
    own = {f: files[f] for f in sorted(files) if _own_file(f, base)}
    return {"name": name, "lineage": identity.get("lineage") or name, "files": own}


def ledger_entry(exp: Mapping, manifest: Mapping, agents: Mapping[str, str],
                 servers: list[str] | None = None) -> dict:
    """What a holdout scoring leaves in the pack's ledger (``time`` and ``prev`` are added when
    it is appended).

    ``agents``: name -> fingerprint of the agents that reached the holdout (ran on it);
    ``servers``: the server labels of their rows (pinned at the holdout's first one)."""
    cfg = exp["config_full"]
    identities = exp.get("agent_identity") or {}
    prereg = preregistration(cfg, exp)
    # the slice of a grown pack (split --extend); slice 1 is left out, as in lines written before slices
    grown = {"slice": current_slice(manifest)} if current_slice(manifest) > 1 else {}
    return {
        **grown,
        "card_name": cfg.get("card_name", "default"),
        "pack_digest": exp["pack_digest"],
        "denylist_digest": exp.get("denylist_digest"),
        "split_manifest_digest": exp["split_manifest_digest"],
        "holdout": {t: exp["task_digests"][t] for t in sorted(manifest["holdout"]) if t in exp["task_digests"]},
        "envelope_digest": envelope_digest(cfg),
        "agents": dict(sorted(agents.items())),
        "lineage": {n: agent_lineage(n, identities.get(n)) for n in sorted(agents)},
        "preregistration": prereg,
        "preregistration_digest": sha256_text(canonical_json(prereg)),
        "servers": sorted(servers or []),
        "experiment": exp["exp_id"],
    }


def line_hash(line: str) -> str:
    """The digest of one ledger line as written (the chain links and decisions cite it)."""
    return sha256_text(line.strip())


def read_ledger(path: Path) -> list[dict]:
    """Entries of ``ledger.jsonl`` (each with its line digest under ``_line``); raises
    ValueError naming the line if one is damaged or the hash chain is broken (a line edited,
    removed from the middle or inserted)."""
    if not Path(path).exists():
        return []
    out = []
    prev: str | None = None
    chained = False
    for i, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{path}:{i}: not a JSON line ({exc.msg}); was the ledger truncated or edited?") from exc
        if not isinstance(entry, dict) or not {"holdout", "agents", "envelope_digest", "card_name"} <= set(entry):
            raise ValueError(f"{path}:{i}: not a ledger entry (missing fields)")
        if "prev" in entry or chained:
            chained = True
            if entry.get("prev") != prev:
                raise ValueError(f"{path}:{i}: the hash chain is broken (this line does not follow the one before "
                                 "it): a line was edited, removed or inserted")
        prev = line_hash(line)
        out.append(dict(entry, _line=prev))
    return out


def bare_entry(entry: Mapping) -> dict:
    return {k: v for k, v in entry.items() if k not in ("time", "prev", "_line")}


def _files_of(lin: Mapping) -> dict:
    files = lin.get("files") or {}
    return dict.fromkeys(files, None) if isinstance(files, list) else dict(files)  # older entries: names only


def common_files(entries: list[Mapping]) -> set[str]:
    """Paths and digests of files that two agents of one scoring both cover (a shared helper, a
    wrapper, one program run in two settings): such a file is no evidence that one agent is a
    version of another."""
    out: set[str] = set()
    for e in entries:
        seen: dict[str, str] = {}
        for name, lin in (e.get("lineage") or {}).items():
            for path, digest in _files_of(lin).items():
                for key in (path, digest):
                    if key and seen.setdefault(key, name) != name:
                        out.add(key)
    return out


def _same_lineage(a: Mapping, b: Mapping, common: set[str] = frozenset()) -> str | None:
    """Why two ledger lineages are one agent (None: they are not): by name, by declared
    lineage, or by code — an own file at the same path, or the same bytes under another path —
    leaving out the files two agents of one scoring share (``common``): one helper or wrapper
    two agents use does not make one the other."""
    if a["name"] == b["name"]:
        return "same name"
    if a.get("lineage") and a.get("lineage") == b.get("lineage"):
        return f"same declared lineage '{a['lineage']}'"
    fa = {f: d for f, d in _files_of(a).items() if f not in common and d not in common}
    fb = {f: d for f, d in _files_of(b).items() if f not in common and d not in common}
    shared = sorted(set(fa) & set(fb))
    if shared:
        return "same code file " + ", ".join(shared[:3])
    same_bytes = sorted(f"{x} = {y}" for x, dx in fa.items() for y, dy in fb.items() if dx and dx == dy)
    if same_bytes:
        return "same code (identical bytes: " + ", ".join(same_bytes[:3]) + ")"
    return None


def _lineage_of(entry: Mapping, name: str) -> dict:
    return (entry.get("lineage") or {}).get(name) or {"name": name, "lineage": name, "files": {}}


def _changed_knobs(first: Mapping, now: Mapping, keys) -> list[str]:
    """The knobs that moved (a knob the first line did not record — written by an older
    sealbench — was not pinned)."""
    return [f"{k}: {json.dumps(first.get(k), sort_keys=True)} then {json.dumps(now.get(k), sort_keys=True)}"
            for k in keys if k in first and first.get(k) != now.get(k)]


def _candidate_of(entry: Mapping) -> str | None:
    """The candidate of a scoring: recorded in its pre-registration, or (lines written before it
    was) the one agent of the scoring that is not its baseline."""
    prereg = entry.get("preregistration") or {}
    if prereg.get("candidate"):
        return prereg["candidate"]
    others = [a for a in entry.get("agents") or {} if a != prereg.get("baseline")]
    return others[0] if len(others) == 1 else None


def _declared_by_both(pinned: Mapping, entry: Mapping) -> tuple[dict, dict]:
    """The two pre-registrations with ``offline_agents`` narrowed to the agents both scorings
    ran: declaring a new agent offline moves nothing that was pinned; changing the declaration of
    an agent that reached the holdout does."""
    both = set(pinned.get("agents") or {}) & set(entry.get("agents") or {})
    first, now = dict(pinned["preregistration"]), dict(entry.get("preregistration") or {})
    for d in (first, now):
        if isinstance(d.get("offline_agents"), list):
            d["offline_agents"] = sorted(a for a in d["offline_agents"] if a in both)
    return first, now


def _same_holdout(a: Mapping, b: Mapping) -> bool:
    return bool(set(a["holdout"]) & set(b["holdout"]))


def _moved(prior: list[dict], entry: Mapping) -> list[str]:
    """The holdout tasks removed or edited since the first look on each slice up to this one,
    and, against the first look on this slice, any task added (the tasks a later slice added
    are not a moved denominator: ``slices.slice_reasons`` speaks for them)."""
    now, here = entry["holdout"], entry_slice(entry)
    firsts: dict[int, Mapping] = {}
    for e in prior:
        if e.get("kind") != "slice" and entry_slice(e) <= here:
            firsts.setdefault(entry_slice(e), e)
    moved: set[str] = set()
    for k, e in firsts.items():
        first = e["holdout"]
        moved |= {t for t in first if t not in now or first[t] != now[t]}
        if k == here:
            moved |= set(now) - set(first)
    return sorted(moved)


def ledger_reasons(prior: list[dict], entry: Mapping) -> list[dict]:
    """The holdout's memory: refuse when this scoring contradicts an earlier one."""
    reasons = []
    tuned = set()
    current = set(entry["agents"].values())
    known = {fp for e in prior for fp in (e.get("agents") or {}).values()}
    common = common_files([*prior, entry])
    for e in prior:
        for pname, pfp in e["agents"].items():
            if pfp in current:  # that version is here unchanged: nothing was replaced
                continue
            for name, fp in entry["agents"].items():
                if fp in known:  # this version reached the holdout before as it is: it is no new version
                    continue
                why = _same_lineage(_lineage_of(e, pname), _lineage_of(entry, name), common)
                if why:
                    tuned.add(f"{name}: {pfp} ({pname}) then {fp} — {why}")
    tuned = sorted(tuned)
    if tuned:
        reasons.append(refusal("HOLDOUT_TUNED", "An agent reached this holdout before with another fingerprint ("
                               + "; ".join(tuned) + "): its command, settings or code changed after it saw the "
                               "holdout, under its old name or a new one. Score the new version on a fresh holdout.",
                               tuned))
    moved = _moved(prior, entry)
    if moved:
        reasons.append(refusal("DENOMINATOR_MOVED", f"The holdout changed since its first scored run "
                               f"(tasks added, removed or edited: {', '.join(moved)}).", moved))
    card = [e for e in prior if e["card_name"] == entry["card_name"]]
    pinned = next((e for e in prior if isinstance(e.get("preregistration"), dict) and _same_holdout(e, entry)), None)
    now = entry.get("preregistration") or {}
    env = sorted({e["envelope_digest"][:12] for e in card if e["envelope_digest"] != entry["envelope_digest"]})
    if env:
        knobs = _changed_knobs(pinned["preregistration"], now, _ENVELOPE_KEYS) if pinned else []
        reasons.append(refusal("ENVELOPE_CHANGED", f"Card '{entry['card_name']}' was scored before under another "
                               f"envelope ({'; '.join(knobs) or ', '.join(env)}): a new envelope is a new experiment "
                               "— score it on a fresh holdout.", knobs or env))
    if pinned is not None:
        skip = (_ENVELOPE_KEYS if env else ()) + PER_CANDIDATE
        first, now = _declared_by_both(pinned, entry)
        knobs = _changed_knobs(first, now, [k for k in sorted(set(first) | set(now)) if k not in skip])
        mine = next((e for e in prior if isinstance(e.get("preregistration"), dict) and _same_holdout(e, entry)
                     and _candidate_of(e) == _candidate_of(entry)), None)
        if mine is not None:
            knobs += _changed_knobs(mine["preregistration"], now, ["baseline"])
        if knobs:
            other = pinned["card_name"] != entry["card_name"]
            reasons.append(refusal("PREREGISTRATION_CHANGED",
                                   f"This holdout was pre-registered at its first scored run (card "
                                   f"'{pinned['card_name']}', experiment {pinned.get('experiment')}) and a knob that "
                                   f"decides the result moved since: {'; '.join(knobs)}. Moving a control after "
                                   "seeing the result turns it into a dial"
                                   + (", and a new card name on a holdout already seen is no fresh start" if other
                                      else "") + ": put the pinned value back, or score on a fresh holdout.", knobs))
    return reasons


def holdout_reuse(prior: list[dict], entry: Mapping, cand: str) -> dict | None:
    """How many other agent versions reached this holdout before the candidate first did
    (multiple comparisons): every fingerprint counts, the baseline's included, as in the budget
    and the headline interval's correction (:func:`holdout_versions`)."""
    if cand not in entry["agents"]:
        return None
    versions = holdout_versions(prior, entry)
    k = versions[cand]["before"]
    if not k:
        return None
    mine = entry["agents"][cand]
    others = sorted({fp for e in prior if _same_holdout(e, entry) for fp in (e.get("agents") or {}).values()
                     if fp != mine})
    return {"other_fingerprints": others, "count": k, "alpha": ALPHA / (k + 1),
            "sentence": f"This holdout was scored before for {k} other agent version(s); with {k + 1} versions "
                        "compared on one holdout the best of them is favoured by chance (multiple comparisons: a "
                        f"winner needs exact p < {ALPHA}/{k + 1})."}


def holdout_versions(prior: list[dict], entry: Mapping) -> dict[str, dict]:
    """Every agent version (fingerprint) of this scoring: how many versions had reached the
    holdout before it first did (``before``) and how many had reached it once it had (``through``,
    itself and those first seen with it included). Any look counts (a scored run, a ``try``),
    whatever the version's name, path or bytes: the count is of fingerprints."""
    seen: dict[str, tuple[int, int]] = {}
    for e in [*(e for e in prior if e.get("kind") != "slice" and _same_holdout(e, entry)), entry]:
        new = sorted({fp for fp in (e.get("agents") or {}).values() if fp not in seen})
        count = len(seen)
        for fp in new:
            seen[fp] = (count, count + len(new))
    return {name: {"fingerprint": fp, "before": seen[fp][0], "through": seen[fp][1]}
            for name, fp in sorted(entry["agents"].items())}


def budget_reasons(versions: Mapping[str, Mapping], budget: int | None) -> list[dict]:
    """``HOLDOUT_EXHAUSTED`` for the versions of this scoring that reached the holdout past its
    pre-registered budget (``holdout_budget``; None: no budget)."""
    if budget is None:
        return []
    past = sorted(f"{n} ({v['fingerprint'][:12]}, version {v['through']})" for n, v in versions.items()
                  if v["through"] > budget)
    if not past:
        return []
    return [refusal("HOLDOUT_EXHAUSTED", f"This holdout's pre-registered budget is {budget} agent version(s), and "
                    f"{', '.join(past)} reached it past that: every version scored or tried on a holdout is one more "
                    "look, whatever its name or path. Its number is no longer a fresh one: score it on a fresh "
                    "holdout, a fresh pack of new tasks (`sealbench split --extend` does not make one: the tasks it "
                    "adds join a holdout the earlier versions saw, and they still count).", past)]


def pinned_servers(prior: list[dict], entry: Mapping) -> tuple[list[str], str | None]:
    """The server labels of the holdout's first scored run that recorded any (and its experiment)."""
    for e in prior:
        if e.get("servers") and _same_holdout(e, entry):
            return list(e["servers"]), e.get("experiment")
    return [], None


def append_ledger(path: Path, entry: Mapping, prior: list[dict]) -> str:
    """Append ``entry`` (with the time and the digest of the line before it) unless an identical
    entry is already there; returns the digest of the line that records it."""
    for e in prior:
        if bare_entry(e) == bare_entry(entry):
            return e["_line"]
    prev = prior[-1]["_line"] if prior else None
    line = json.dumps(dict(bare_entry(entry), time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), prev=prev),
                      sort_keys=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return line_hash(line)


def citations(experiments: Path, name: str) -> list[tuple[Path, dict]]:
    """Each experiment folder's citation file ``name`` (beside its decision.json), read; an
    unreadable one is skipped (it cites nothing)."""
    out = []
    for f in sorted(Path(experiments).glob(f"*/{name}")):
        try:
            cited = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(cited, dict):
            out.append((f.parent, cited))
    return out


def lost_ledger_lines(ledger: Path, prior: list[dict], experiments: Path) -> list[str]:
    """Experiments in ``experiments/`` whose decision cited a line of this ledger
    (``ledger_line.json``) that is no longer in it (the ledger was deleted, truncated or replaced)."""
    have = {e["_line"] for e in prior}
    where = os.path.realpath(ledger)
    lost = []
    for d, cited in citations(experiments, LEDGER_CITATION):
        if cited.get("path") == where and cited.get("line") and cited["line"] not in have:
            lost.append(d.name)
    return lost
