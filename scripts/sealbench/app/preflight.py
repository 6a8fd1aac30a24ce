"""The refusals a config and a pack's split decide before any job runs (``sealbench validate``).

Some of the gate's refusals (``refusal_rules.py``) do not depend on what the agents do: scoring
the tune split, a blank envelope cap, a scored split with fewer tasks than ``min_kept_tasks`` or
a stratum with fewer than 2 scored tasks (exclusions can only remove tasks), runs without the
sandbox. The holdout's ledger (the pack's, and its copy in results/) decides more before any run:
an agent version tuned on the holdout, a moved denominator, envelope or pre-registration, a
budget spent (:func:`foreseeable_ledger_refusals`). Each is named here with the gate's code, in
the gate's terms, so a pack that can never publish with a config costs no run to find out.
Everything else is decided by the runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from ..core.refusals import refusal

#: The envelope caps the gate requires (``refusal_rules._envelope_incomplete``).
ENVELOPE_CAPS = ("max_wall_s", "max_steps", "max_output_tokens")


def foreseeable_refusals(cfg: Mapping, scored: list[str], strata_of: Mapping[str, str],
                         sandbox_problem: str | None) -> list[dict]:
    """The gate's refusals that hold whatever the agents do, for ``cfg`` scoring the tasks
    ``scored`` (the ids on ``cfg['score_split']``; ``strata_of`` maps id → stratum), where
    ``sandbox_problem`` is why bubblewrap cannot run here (None when it can)."""
    split = cfg["score_split"]
    out: list[dict] = []
    if split == "tune":
        out.append(refusal("TUNE_SPLIT", "The config scores the tune split; only the frozen holdout is a "
                                         "measurement. Set score_split: holdout.", split))
    missing = [k for k in ENVELOPE_CAPS if cfg["envelope"].get(k) is None]
    if missing:
        out.append(refusal("ENVELOPE_INCOMPLETE", f"The envelope leaves {', '.join(missing)} blank; write the "
                                                  "caps down before the run.", missing))
    counts = Counter(strata_of[t] for t in scored)
    small = [f"{st} (n={counts.get(st, 0)})" for st in cfg["strata"] if counts.get(st, 0) < 2]
    if small:
        out.append(refusal("STRATUM_TOO_SMALL", f"Stratum {', '.join(small)} has fewer than 2 {split} tasks in "
                                                "the split; a rate on it is not a measurement. Add tasks to it "
                                                "(sealbench split --extend) or leave it out of strata.", small))
    if len(scored) < cfg["min_kept_tasks"]:
        out.append(refusal("TOO_FEW_CLEAN_TASKS", f"The split has {len(scored)} {split} task(s) and "
                                                  f"min_kept_tasks is {cfg['min_kept_tasks']}: even with no "
                                                  "exclusion too few remain. Grow the pack (sealbench split "
                                                  "--extend) or pre-register a lower min_kept_tasks.",
                           len(scored)))
    if cfg["sandbox"] == "off" or (cfg["sandbox"] == "auto" and sandbox_problem):
        why = "sandbox: off" if cfg["sandbox"] == "off" else f"sandbox: auto and {sandbox_problem}"
        out.append(refusal("UNSANDBOXED", f"Agents would run without the sandbox ({why}).", cfg["sandbox"]))
    return out


def preflight_lines(refusals: list[dict], split: str) -> list[str]:
    """What ``sealbench validate`` prints about them."""
    if not refusals:
        return [f"publishable: nothing in the config or the split stops a headline on the {split} split; "
                "nor does the holdout's ledger; the runs decide (controls, exclusions, tampering)."]
    lines = [f"publishable: this config cannot publish a headline on this pack, whatever the agents do "
             f"({len(refusals)} refusal(s) decided before any run):"]
    lines += [f"  {r['code']}: {r['sentence']}" for r in refusals]
    return lines


def foreseeable_ledger_refusals(cfg: Mapping, pack_digest: str, denylist_digest: str,
                                task_digests: Mapping[str, str], manifest: Mapping,
                                identities: Mapping[str, Mapping], ledgers: list) -> list[dict]:
    """The holdout's memory, before any run: what the pack's ledger (and its copy in results/)
    already decides for this config's candidate and baseline — a version tuned on the holdout
    (``HOLDOUT_TUNED``), a moved denominator, envelope or pre-registration, a budget already
    spent (``HOLDOUT_EXHAUSTED``) — as the gate would find it if they run on the holdout."""
    if cfg["score_split"] != "holdout":
        return []
    from pathlib import Path

    from ..gate.holdout_memory import merge_copies
    from ..provenance.ledger import budget_reasons, holdout_versions, ledger_entry, ledger_reasons, read_ledger
    from ..stages.split import manifest_digest

    try:
        copies = [read_ledger(Path(p)) for p in ledgers]
    except ValueError as exc:
        return [refusal("LEDGER_UNREADABLE", f"{exc} Restore it from version control; never edit it.", None)]
    prior: list[dict] = []
    for c in copies:
        prior = merge_copies(prior, c)[0] if prior else c
    if not prior:
        return []
    who = [a for a in dict.fromkeys([cfg["candidate"], cfg["baseline"]]) if a in identities]
    exp = {"config_full": cfg, "agent_identity": dict(identities), "pack_digest": pack_digest,
           "denylist_digest": denylist_digest, "split_manifest_digest": manifest_digest(manifest),
           "task_digests": dict(task_digests), "exp_id": None}
    entry = ledger_entry(exp, manifest, {a: identities[a]["fingerprint"] for a in who})
    out = ledger_reasons(prior, entry)
    out += budget_reasons(holdout_versions(prior, entry), cfg.get("holdout_budget"))
    return out
