"""The refusals a config and a pack's split decide before any job runs (``sealbench validate``).

Some of the gate's refusals (``refusal_rules.py``) do not depend on what the agents do: scoring
the tune split, a blank envelope cap, a scored split with fewer tasks than ``min_kept_tasks`` or
a stratum with fewer than 2 scored tasks (exclusions can only remove tasks), runs without the
sandbox. The holdout's ledger (the pack's, and its copy in results/) decides more before any run:
an agent version tuned on the holdout, a moved denominator, envelope or pre-registration, a
budget spent (:func:`foreseeable_ledger_refusals`). Each is named here with the gate's code, in
the gate's terms, so a pack that can never publish with a config costs no run to find out.
Everything else is decided by the runs.

What the ledger decides also stops a pipeline run at its start (:func:`start_check`, called by
workflow/rules/common.smk before the run lock and the first job), in the same words, unless the
config's ``run_anyway``: running would only spend the agents' runs on a refused number and put
their looks on the holdout's record. ``validate`` also says the holdout's budget before the
first run (:func:`budget_sentence`): how many versions reached it, how many this run brings, and
how many more versions of one's own agents it then takes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

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


class HoldoutOutlook(NamedTuple):
    """What the holdout's ledger decides before any run: the refusals (the gate's, in its words)
    and the budget line ``validate`` prints ("" when the config does not score the holdout)."""

    refusals: list[dict]
    budget: str


def holdout_ledgers(pack: Path, results: Path, manifest: Mapping | None) -> list[Path]:
    """The holdout's two ledger copies: the pack's ``ledger.jsonl`` and the copy the gate keeps
    in the results folder (``results/holdouts/<key>/ledger.jsonl``, holdout_memory.results_copy)."""
    from ..provenance.ledger import LEDGER
    from ..provenance.slices import results_records

    return [Path(pack) / LEDGER, results_records(Path(results), manifest) / LEDGER]


def foreseeable_ledger_refusals(cfg: Mapping, pack_digest: str, denylist_digest: str,
                                task_digests: Mapping[str, str], manifest: Mapping,
                                identities: Mapping[str, Mapping], ledgers: list) -> list[dict]:
    """The holdout's memory, before any run: what the pack's ledger (and its copy in results/)
    already decides for this config's candidate and baseline — a version tuned on the holdout
    (``HOLDOUT_TUNED``), a moved denominator, envelope or pre-registration, a budget already
    spent (``HOLDOUT_EXHAUSTED``) — as the gate would find it if they run on the holdout."""
    return holdout_outlook(cfg, pack_digest, denylist_digest, task_digests, manifest, identities, ledgers).refusals


def holdout_outlook(cfg: Mapping, pack_digest: str, denylist_digest: str, task_digests: Mapping[str, str],
                    manifest: Mapping, identities: Mapping[str, Mapping], ledgers: list) -> HoldoutOutlook:
    """:func:`foreseeable_ledger_refusals`, and the budget line: how many agent versions have
    reached this holdout, how many this config's run brings, and how many more it takes."""
    if cfg["score_split"] != "holdout":
        return HoldoutOutlook([], "")
    from ..gate.holdout_memory import merge_copies
    from ..provenance.ledger import budget_reasons, holdout_versions, ledger_entry, ledger_reasons, read_ledger
    from ..stages.split import manifest_digest

    try:
        copies = [read_ledger(Path(p)) for p in ledgers]
    except ValueError as exc:
        return HoldoutOutlook([refusal("LEDGER_UNREADABLE", f"{exc} Restore it from version control; never edit "
                                                            "it.", None)], "")
    prior: list[dict] = []
    for c in copies:
        prior = merge_copies(prior, c)[0] if prior else c
    who = [a for a in dict.fromkeys([cfg["candidate"], cfg["baseline"]]) if a in identities]
    exp = {"config_full": cfg, "agent_identity": dict(identities), "pack_digest": pack_digest,
           "denylist_digest": denylist_digest, "split_manifest_digest": manifest_digest(manifest),
           "task_digests": dict(task_digests), "exp_id": None}
    entry = ledger_entry(exp, manifest, {a: identities[a]["fingerprint"] for a in who})
    out: list[dict] = []
    if prior:
        out = ledger_reasons(prior, entry)
        out += budget_reasons(holdout_versions(prior, entry), cfg.get("holdout_budget"))
    here = set(entry["holdout"])
    seen = {fp for e in prior if e.get("kind") != "slice" and here & set(e.get("holdout") or {})
            for fp in (e.get("agents") or {}).values()}
    return HoldoutOutlook(out, budget_sentence(cfg.get("holdout_budget"), seen, entry["agents"]))


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def budget_sentence(budget: int | None, seen: set[str], agents: Mapping[str, str]) -> str:
    """What ``validate`` says of the holdout's budget before a run: how many agent versions
    (``seen``: their fingerprints) reached it, which of this run's ``agents`` (name ->
    fingerprint) are new, how many more versions of one's own agents it then takes, and what
    gives more (``split --extend`` does not: the versions that saw the holdout still count)."""
    if budget is None:
        return ("holdout budget: no budget (holdout_budget: null): any number of agent versions may reach this "
                "holdout; each headline interval is Bonferroni-corrected for the versions before it.")
    head = (f"holdout budget: {budget} agent versions may reach this holdout (holdout_budget, pre-registered at "
            "its first scored run; counted by fingerprint, scored or tried with --holdout: a new agent, or one "
            "changed byte of one, is one more version); "
            + ("none has reached it yet" if not seen else f"{len(seen)} {'has' if len(seen) == 1 else 'have'} reached it"))
    new = sorted(n for n, fp in agents.items() if fp not in seen)
    after = len(seen | set(agents.values()))
    brings = (f"this config's run brings {_names(new)}: {after} of {budget}" if new
              else f"this config's agents reached it before: still {after} of {budget}")
    if after > budget:
        return f"{head}, and {brings}, past it (HOLDOUT_EXHAUSTED above)."
    left = budget - after
    return (f"{head}, and {brings}. After it, this holdout takes {left} more version{'' if left == 1 else 's'} "
            "of your own agents. For more, raise holdout_budget before its first scored run, or score on a fresh "
            "pack (new tasks: docs/packs.md); sealbench split --extend adds tasks to this holdout, not versions: "
            "the ones that saw it still count.")


class StartCheck(NamedTuple):
    """What a run's start does with the refusals the holdout's ledger decides: ``stop`` before the
    first job, and the ``message`` it says ("" when nothing is foreseen)."""

    stop: bool
    message: str


def start_check(refusals: list[dict], *, dry: bool, run_anyway: bool, decided: bool) -> StartCheck:
    """The start of a pipeline run with ``refusals`` foreseen by the holdout's ledger
    (:func:`foreseeable_ledger_refusals`, as ``validate`` says them): a real run stops before its
    first job, unless ``run_anyway`` (config field ``run_anyway``); a dry run (``-n``) says so and
    goes on; an experiment already ``decided`` (its decision.json exists) has nothing left to run
    and adds nothing to the ledger, so it is not stopped."""
    if not refusals or decided:
        return StartCheck(False, "")
    quoted = "\n".join(preflight_lines(refusals, "holdout")[1:])  # validate's lines, word for word
    why = (f"the holdout's ledger already decides that this run's headline is refused ({len(refusals)} refusal(s), "
           "as `sealbench validate` says them):\n" + quoted)
    if dry:
        return StartCheck(False, f"sealbench: a real run of this config stops before its first job: {why}\n"
                                 "(a dry run is not stopped; config field run_anyway: true runs it anyway)")
    cost = ("Running it would spend the agents' runs on a number the gate must refuse, and put their looks at this "
            "holdout on its record (draws.jsonl, ledger.jsonl).")
    if run_anyway:
        return StartCheck(False, f"sealbench: running anyway (run_anyway: true): {why}\n{cost}")
    return StartCheck(True, f"{why}\n{cost} Stopped before the first job. To run it anyway (the decision will say "
                            "the same): add --config run_anyway=true at the end of the command.")


def start_refusals(cfg: Mapping, planned: Any, identities: Mapping[str, Mapping], results: Path) -> list[dict]:
    """:func:`foreseeable_ledger_refusals` for the pipeline's plan (``planned``:
    experiment.PlannedPack) and its results folder ``results``, as ``validate`` finds them."""
    pack, _strata, manifest = planned
    return foreseeable_ledger_refusals(cfg, pack.pack_digest, pack.denylist_digest, pack.task_digests, manifest,
                                       identities, holdout_ledgers(pack.pack, results, manifest))
