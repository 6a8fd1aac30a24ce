"""The holdout's memory: what its ledger says about this scoring — a damaged or shortened
ledger, the servers the holdout was first scored on (rows from others become excluded), the
ledger's refusals (with a card pre-registered on an earlier slice of a grown pack), the reuse
of the holdout — and the entry to append.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.contract import ABSTAINED, EXCLUDED, INFRA_FAIL, TAMPER, TIMEOUT
from ..core.refusals import ALPHA, note_for, refusal
from ..provenance.ledger import (
    LEDGER,
    NO_SERVER,
    _same_holdout,
    bare_entry,
    budget_reasons,
    holdout_reuse,
    holdout_versions,
    ledger_entry,
    ledger_reasons,
    lost_ledger_lines,
    pinned_servers,
    read_ledger,
)
from ..provenance.slices import results_records, slice_reasons
from ..report.scored_slice import Slice


@dataclass
class Memory:
    """What the holdout's ledger says about this scoring (:func:`holdout_memory`)."""

    reasons: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    runs: Any = None
    entry: dict | None = None
    reuse: dict | None = None
    server_pin: dict | None = None
    #: per agent of this scoring: versions on the holdout before it / through it (ledger.holdout_versions)
    versions: dict | None = None

    @property
    def alpha(self) -> float:
        return self.reuse["alpha"] if self.reuse else ALPHA


def _server_labels(rows: Any) -> Any:
    """Each row's server id as a string (``NO_SERVER`` when none was recorded). ``server_id`` is
    the server the harness observed (``stratify.observed_session``: the bridge's, ``offline``
    for a sandboxed run without an endpoint), never the agent's stamp: a stamp cannot move a row
    in or out of the pin, and two offline agents are the same server."""
    return rows.server_id.where(rows.server_id.notna(), NO_SERVER).astype(str)


def results_copy(exp_dir: Path, manifest: dict | None) -> Path:
    """The ledger's copy in the results folder, one per holdout (``results/holdouts/<key>/
    ledger.jsonl``, beside experiments/): packs scored into one results folder keep apart."""
    return results_records(Path(exp_dir).parent.parent, manifest) / LEDGER


def merge_copies(pack: list[dict], kept: list[dict]) -> tuple[list[dict], dict[str, list[dict]]]:
    """The holdout's history from both copies (an entry in either counts once, in time order),
    and what each copy lacks (``{"pack": [...], "results": [...]}``)."""
    have = {json.dumps(bare_entry(e), sort_keys=True) for e in pack}
    kept_keys = {json.dumps(bare_entry(e), sort_keys=True) for e in kept}
    extra = [e for e in kept if json.dumps(bare_entry(e), sort_keys=True) not in have]
    lacking = {"pack": extra, "results": [e for e in pack if json.dumps(bare_entry(e), sort_keys=True)
                                          not in kept_keys]}
    if not extra:
        return pack, lacking
    merged = sorted([*pack, *extra], key=lambda e: str(e.get("time") or ""))
    return merged, lacking


def holdout_memory(s: Slice, ledger: Path | None, exp_dir: Path) -> Memory:
    """Read the ledger (refusing a damaged or shortened one), pin the holdout's servers (rows
    from others become excluded), and check this scoring against what reached the holdout."""
    mem = Memory(runs=s.runs)
    if ledger is None or s.split != "holdout":
        return mem
    copy = results_copy(exp_dir, s.manifest)
    try:
        prior = read_ledger(ledger)
        kept = read_ledger(copy)
    except ValueError as exc:
        mem.reasons.append(refusal("LEDGER_UNREADABLE", f"{exc} Restore it from version control (or from the "
                                   "other copy); never edit it.", str(ledger)))
        return mem
    prior, lacking = merge_copies(prior, kept)
    lost = lost_ledger_lines(ledger, prior, Path(exp_dir).parent)
    if lost:
        mem.reasons.append(refusal("LEDGER_UNREADABLE", f"{ledger} no longer holds the lines that earlier "
                                   f"decisions in this results folder cite (experiments {', '.join(lost[:5])}): "
                                   "the ledger was deleted, truncated or replaced. Restore it from version "
                                   "control; never edit it.", lost))
    runs, split, cfg = s.runs, s.split, s.cfg
    agent_rows = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin([s.cand, s.base])]
    # an agent that ran on the holdout reached it, even when its rows were excluded (an
    # excluded run still saw the tasks); only a harness failure is no visit
    reached = agent_rows[agent_rows.status != INFRA_FAIL]
    agents = {n: fp for n, fp in s.exp["agent_fingerprints"].items() if (reached.solver == n).any()}
    probe = ledger_entry(s.exp, s.manifest, agents, [])
    servers, pinned_at = pinned_servers(prior, probe) if cfg["health"].get("required_server_id") is None \
        else ([], None)
    if servers:
        runs = runs.copy()
        rows = runs[(runs.split == split) & (runs.role == "agent")]
        lab = _server_labels(rows)
        # a tampering or timed-out run keeps its status (as stratify keeps it under an exclusion):
        # excluding it would hide the tampering and move a failure out of the denominator
        foreign_ix = rows.index[~lab.isin(servers) & ~rows.status.isin((*ABSTAINED, TAMPER, TIMEOUT))]
        why = (f"server {{}} is not among the servers of this holdout's first scored run ({', '.join(servers)}, "
               f"experiment {pinned_at}); name the servers in health.required_server_id before the first run "
               "to change that")
        ev = sorted(f"{runs.at[i, 'solver']}:{runs.at[i, 'task_id']}#{runs.at[i, 'epoch']}@{lab[i]}"
                    for i in foreign_ix)
        runs.loc[foreign_ix, "reason"] = [why.format(repr(lab[i])) for i in foreign_ix]
        runs.loc[foreign_ix, "status"] = EXCLUDED
        mem.server_pin = {"servers": servers, "pinned_at": pinned_at, "excluded": ev}
        if ev:
            mem.notes.append(note_for("SERVER_PINNED", f"{len(ev)} run(s) came from a server this holdout was not "
                                                       f"first scored on ({', '.join(ev[:5])}"
                                                       f"{', …' if len(ev) > 5 else ''}) and are excluded: its "
                                                       f"servers are {', '.join(servers)}."))
    mem.runs = runs
    scored = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin(list(agents))
                  & ~runs.status.isin(ABSTAINED)]
    entry = ledger_entry(s.exp, s.manifest, agents, sorted(set(_server_labels(scored))))
    earlier = [e for e in prior if bare_entry(e) != bare_entry(entry)]
    lacks = [f"{ledger if which == 'pack' else copy} lacks {n} line(s) about this holdout that the other copy holds"
             for which, lines in lacking.items() if (n := sum(_same_holdout(e, entry) for e in lines))
             and (which == "pack" or Path(copy).exists())]
    if lacks:
        mem.notes.append(note_for("RECORD_COPY_DIFFERS", "The holdout's ledger copies differ: " + "; ".join(lacks)
                                  + ". Both were read: the holdout's history is what either holds."))
    mem.reasons.extend(ledger_reasons(earlier, entry))
    mem.versions = holdout_versions(prior, entry)  # a rerun keeps the place its first scoring took
    mem.reasons.extend(budget_reasons(mem.versions, cfg.get("holdout_budget")))
    # a card pre-registered on an earlier slice of a grown pack (split --extend)
    mem.reasons.extend(slice_reasons(earlier, entry, s.manifest))
    mem.reuse = holdout_reuse(prior, entry, s.cand)  # the place its first scoring took, as the budget
    if mem.reuse:
        mem.notes.append(note_for("HOLDOUT_REUSED", mem.reuse["sentence"]))
    # a scoring in which no agent ran did not reach the holdout: nothing to record
    mem.entry = entry if agents else None
    return mem
