"""gate: the decision — which sentences may be published, or none — with its reasons.

Reads:  experiment.json, tables/{tasks,runs,strata}.parquet, the split manifest, PACK_HASH.txt
Writes: decision.json, card.json, report.md in the experiment folder; points results/latest at it

The gate refuses a headline (``publishable: false``) when any control is missing or broken,
each refusal a code plus a sentence a reviewer understands (see ``REFUSALS``). It never fills
a gap with a default: an unknown stays unknown and is named.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from . import sandbox as _sandbox
from .core import SealbenchError, canonical_json, envelope_digest, read_json, sha256_text, write_json, atomic_write_text
from . import stats
from .report import write_report
from .stratify import rate_interval

#: Statuses left out of the rates (the sensitivity rate counts them as failures).
ABSTAINED = ("excluded", "infra_fail")

#: Every refusal code with what it means (documented in the README).
REFUSALS: dict[str, str] = {
    "LEAK_SUSPECT": "a task matches the denylist or public benchmark text, or its prompt or repo quotes its hidden "
                    "tests; the pack is not private",
    "ORACLE_FAILED": "the gold patch did not pass every run on some task: the grader is broken",
    "DUMMY_PASSED": "a control (empty diff or stub) passed some task: the grader rewards doing nothing",
    "CONTROL_INFRA_FAIL": "a control could not be scored: the grader's health is unknown",
    "WEAK_TEST_IN_SLICE": "a scored task passes without any change",
    "FLAKY_IN_SLICE": "a scored task's gold patch gave different results on reruns",
    "TUNE_SPLIT": "the score is on the tune split, where prompts and tools were fitted",
    "STRATUM_TOO_SMALL": "a stratum has fewer than 2 scored tasks",
    "ENVELOPE_INCOMPLETE": "the pre-registered envelope (clock, steps, output tokens) has a blank",
    "TOO_FEW_CLEAN_TASKS": "fewer clean tasks than min_kept_tasks remain after exclusions",
    "NO_CANDIDATE_ROWS": "the candidate has no scored rows in the slice",
    "UNSANDBOXED": "agent runs in the slice were not sandboxed: they could have read the hidden tests",
    "OVER_ENVELOPE": "the candidate reported more steps or output tokens than the pre-registered envelope",
    "HOLDOUT_TUNED": "an agent (by name, declared lineage or code file) reached the holdout with more than one "
                     "fingerprint (tuned on the holdout)",
    "DENOMINATOR_MOVED": "the holdout's task set or task digests changed after a scored run",
    "ENVELOPE_CHANGED": "the envelope changed under the same card name after a scored run",
    "LEDGER_UNREADABLE": "the pack's ledger.jsonl is damaged, so the holdout's history cannot be checked",
    "PREREGISTRATION_CHANGED": "a knob that decides the result (MDE, discordance, min_kept_tasks, interval, strata, "
                               "epochs, baseline, limits...) changed under the same card name after a scored run",
    "CANDIDATE_TAMPERED": "the candidate was scored tamper on some run (touched tests or test configuration, "
                          "shadowed a module, or forged the test report): none of its numbers is trusted",
    "EXCLUSIONS_DECIDE": "with excluded and infra_fail runs counted as failures the verdict changes or the "
                         "headline moves by more than its interval's half-width: abstaining decides the result",
}

#: Non-blocking observations (the decision may still be publishable).
NOTES: dict[str, str] = {
    "UNDERPOWERED": "the slice is smaller than the pre-registered MDE needs: no winner is named",
    "UNBALANCED_STRATA": "the easiest stratum holds more than half the tasks: no pooled headline, per-stratum rates only",
    "TAMPER": "some runs touched tests or test configuration and were scored tamper",
    "HOLDOUT_REUSED": "other agent versions reached this holdout before: multiple comparisons favour the best by chance",
    "SERVER_PINNED": "rows from a server other than the card's pinned servers were excluded",
    "BELOW_MDE": "the interval excludes 0 but |delta| is smaller than the pre-registered MDE: no winner is named",
    "EXACT_TEST_NOT_SIGNIFICANT": "the interval excludes 0 but the exact McNemar test on the discordant tasks "
                                  "does not (p >= 0.05): no winner is named",
    "ZERO_WIDTH_INTERVAL": "the decision interval has zero width (every task in each stratum had the same paired "
                           "outcome): it shows no spread, not certainty",
    "DUMMY_BEATEN_ONLY_ON_EASY": "the candidate beats the do-nothing controls on some strata but not on others: "
                                 "no pooled headline, per-stratum rates and dummy deltas only",
}

#: The significance level of every decision (interval confidence 1 - ALPHA, exact test p < ALPHA).
ALPHA = 0.05

LEDGER = "ledger.jsonl"
#: Beside decision.json: the ledger line that records the decision ({"path", "line"}).
LEDGER_CITATION = "ledger_line.json"


# ------------------------------------------------------------------------------ ledger

#: Config keys that can change the decision: pinned at the holdout's first scored run, whatever
#: the card name (seed 003: "lowering that floor after seeing the gap would convert a written
#: control into a marketing dial"; a new card name on a holdout already seen is no fresh start).
#: Under the same card, envelope and health are ENVELOPE_CHANGED; the rest PREREGISTRATION_CHANGED.
PREREGISTERED = ("mde", "planning_discordance", "min_kept_tasks", "interval_method", "strata", "score_split",
                 "epochs", "baseline", "oracle_runs", "score_timeout_s", "limits", "stop_on_green",
                 "envelope", "health")
_ENVELOPE_KEYS = ("envelope", "health")
#: The server label of a scored row whose stamp names no server.
NO_SERVER = "<none>"


def preregistration(cfg: Mapping, exp: Mapping | None = None) -> dict:
    """Every knob that can change the decision, with its value (the fixed alpha, and the
    denylist digest: deleting a denylist line after LEAK_SUSPECT is a knob too)."""
    out = {**{k: cfg.get(k) for k in PREREGISTERED}, "alpha": ALPHA}
    if exp is not None:
        out["denylist_digest"] = exp.get("denylist_digest")
    return out


def _system_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}
    roots |= {os.path.realpath(r) for r in list(roots)}
    return tuple(sorted(r.rstrip("/") + "/" for r in roots if r))


_SEALBENCH_PKG = os.path.realpath(Path(__file__).resolve().parent) + "/"
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
    return {
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


def _bare(entry: Mapping) -> dict:
    return {k: v for k, v in entry.items() if k not in ("time", "prev", "_line")}


def _same_lineage(a: Mapping, b: Mapping) -> str | None:
    """Why two ledger lineages are one agent (None: they are not)."""
    if a["name"] == b["name"]:
        return "same name"
    if a.get("lineage") and a.get("lineage") == b.get("lineage"):
        return f"same declared lineage '{a['lineage']}'"
    fa, fb = a.get("files") or {}, b.get("files") or {}
    if isinstance(fa, list):  # older entries: names only
        fa = dict.fromkeys(fa, None)
    if isinstance(fb, list):
        fb = dict.fromkeys(fb, None)
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
    return [f"{k}: {json.dumps(first.get(k), sort_keys=True)} then {json.dumps(now.get(k), sort_keys=True)}"
            for k in keys if first.get(k) != now.get(k)]


def _same_holdout(a: Mapping, b: Mapping) -> bool:
    return bool(set(a["holdout"]) & set(b["holdout"]))


def ledger_reasons(prior: list[dict], entry: Mapping) -> list[dict]:
    """The holdout's memory: refuse when this scoring contradicts an earlier one."""
    reasons = []
    tuned = set()
    current = set(entry["agents"].values())
    for e in prior:
        for pname, pfp in e["agents"].items():
            if pfp in current:  # that version is here unchanged: nothing was replaced
                continue
            for name, fp in entry["agents"].items():
                why = _same_lineage(_lineage_of(e, pname), _lineage_of(entry, name))
                if why:
                    tuned.add(f"{name}: {pfp} ({pname}) then {fp} — {why}")
    tuned = sorted(tuned)
    if tuned:
        reasons.append(_reason("HOLDOUT_TUNED", "An agent reached this holdout before with another fingerprint ("
                               + "; ".join(tuned) + "): its command, settings or code changed after it saw the "
                               "holdout, under its old name or a new one. Score the new version on a fresh holdout.",
                               tuned))
    if prior and prior[0]["holdout"] != entry["holdout"]:
        first, now = prior[0]["holdout"], entry["holdout"]
        moved = sorted(set(first) ^ set(now)) + sorted(t for t in set(first) & set(now) if first[t] != now[t])
        reasons.append(_reason("DENOMINATOR_MOVED", f"The holdout changed since its first scored run "
                               f"(tasks added, removed or edited: {', '.join(moved)}).", moved))
    card = [e for e in prior if e["card_name"] == entry["card_name"]]
    pinned = next((e for e in prior if isinstance(e.get("preregistration"), dict) and _same_holdout(e, entry)), None)
    now = entry.get("preregistration") or {}
    env = sorted({e["envelope_digest"][:12] for e in card if e["envelope_digest"] != entry["envelope_digest"]})
    if env:
        knobs = _changed_knobs(pinned["preregistration"], now, _ENVELOPE_KEYS) if pinned else []
        reasons.append(_reason("ENVELOPE_CHANGED", f"Card '{entry['card_name']}' was scored before under another "
                               f"envelope ({'; '.join(knobs) or ', '.join(env)}): a new envelope is a new experiment "
                               "— score it on a fresh holdout.", knobs or env))
    if pinned is not None:
        skip = _ENVELOPE_KEYS if env else ()
        knobs = _changed_knobs(pinned["preregistration"], now,
                               [k for k in sorted(set(pinned["preregistration"]) | set(now)) if k not in skip])
        if knobs:
            other = pinned["card_name"] != entry["card_name"]
            reasons.append(_reason("PREREGISTRATION_CHANGED",
                                   f"This holdout was pre-registered at its first scored run (card "
                                   f"'{pinned['card_name']}', experiment {pinned.get('experiment')}) and a knob that "
                                   f"decides the result moved since: {'; '.join(knobs)}. Moving a control after "
                                   "seeing the result turns it into a dial"
                                   + (", and a new card name on a holdout already seen is no fresh start" if other
                                      else "") + ": put the pinned value back, or score on a fresh holdout.", knobs))
    return reasons


def holdout_reuse(prior: list[dict], entry: Mapping, cand: str) -> dict | None:
    """How many other agent versions reached this holdout before (multiple comparisons)."""
    mine = set(entry["agents"].values())
    others = sorted({fp for e in prior if _same_holdout(e, entry) for fp in e["agents"].values() if fp not in mine})
    if not others or cand not in entry["agents"]:
        return None
    k = len(others)
    return {"other_fingerprints": others, "count": k, "alpha": ALPHA / (k + 1),
            "sentence": f"This holdout was scored before for {k} other agent version(s); with {k + 1} versions "
                        "compared on one holdout the best of them is favoured by chance (multiple comparisons: a "
                        f"winner needs exact p < {ALPHA}/{k + 1})."}


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
        if _bare(e) == _bare(entry):
            return e["_line"]
    prev = prior[-1]["_line"] if prior else None
    line = json.dumps(dict(_bare(entry), time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), prev=prev),
                      sort_keys=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return line_hash(line)


def lost_ledger_lines(ledger: Path, prior: list[dict], experiments: Path) -> list[str]:
    """Experiments in ``experiments/`` whose decision cited a line of this ledger
    (``ledger_line.json``) that is no longer in it (the ledger was deleted, truncated or replaced)."""
    have = {e["_line"] for e in prior}
    where = os.path.realpath(ledger)
    lost = []
    for d in sorted(Path(experiments).glob(f"*/{LEDGER_CITATION}")):
        try:
            cited = json.loads(d.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(cited, dict):
            continue
        if cited.get("path") == where and cited.get("line") and cited["line"] not in have:
            lost.append(d.parent.name)
    return lost


def _reason(code: str, sentence: str, evidence: Any = None) -> dict:
    return {"code": code, "meaning": REFUSALS[code], "sentence": sentence, "evidence": evidence}


def _note(code: str, sentence: str) -> dict:
    return {"code": code, "meaning": NOTES[code], "sentence": sentence}


def _signed(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.2f}"


def comparison_why(comparison: Mapping, cfg: Mapping) -> str:
    """Why no winner is named, in words (the comparison half of the banner)."""
    if "delta" not in comparison:
        return comparison.get("note") or "no paired comparison was computed"
    why = []
    if comparison.get("interval_verdict") == stats.VERDICT_NONE:
        why.append(f"the 95% interval [{comparison['ci_low']:+.3f}, {comparison['ci_high']:+.3f}] includes 0")
    if comparison.get("underpowered"):
        why.append(f"{comparison['matched_tasks']} paired tasks detect about {comparison['observed_mde']:.2f}; the "
                   f"pre-registered MDE {cfg['mde']} needs {comparison['power']['required_n_miller']}")
    if comparison.get("below_mde"):
        why.append(f"|delta| {abs(comparison['delta']):.3f} is below the pre-registered MDE {cfg['mde']}")
    if comparison.get("exact_test_disagrees"):
        why.append(f"the exact McNemar p is {comparison['mcnemar_p']:.3f}, not below "
                   f"{comparison.get('alpha', ALPHA):.4g} ({comparison['wins']} wins, {comparison['losses']} losses)")
    return "; ".join(why) or comparison.get("verdict_label", "no winner")


def comparison_summary(comparison: Mapping, cfg: Mapping) -> str:
    """The comparison half of the banner: the winner, or "no winner" and why."""
    v = comparison.get("verdict")
    if v == stats.VERDICT_CANDIDATE:
        return f"winner: {comparison['candidate']} over {comparison['baseline']}"
    if v == stats.VERDICT_BASELINE:
        return f"winner: {comparison['baseline']} over {comparison['candidate']}"
    return "no winner (" + comparison_why(comparison, cfg) + ")"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def _fmt(x: float | None, nd: int = 3) -> float | None:
    """Round for JSON; None and NaN (pandas' null) stay null."""
    return None if x is None or x != x else round(float(x), nd)


def per_task_scores(runs, solver: str, split: str, abstained_as_failures: bool = False,
                    abstained_as_passes: bool = False) -> dict[str, float]:
    """Per-task pass share for a solver on a split (epochs averaged; excluded/infra rows left
    out, or counted as failures with ``abstained_as_failures`` — the sensitivity rate — or as
    passes with ``abstained_as_passes``: the worst case for a claim against this solver)."""
    sub = runs[(runs.solver == solver) & (runs.split == split)]
    if not (abstained_as_failures or abstained_as_passes):
        sub = sub[~sub.status.isin(ABSTAINED)]
    won = sub.status.eq("pass") | (sub.status.isin(ABSTAINED) if abstained_as_passes else False)
    share = won.groupby(sub.task_id).mean()
    return {str(tid): float(v) for tid, v in share.items()}


def abstention_counts(rows) -> dict:
    """Runs, excluded and infra_fail rows of one solver on the slice, and their share."""
    total = int(len(rows))
    ex, inf = int((rows.status == "excluded").sum()), int((rows.status == "infra_fail").sum())
    return {"runs": total, "excluded": ex, "infra_fail": inf, "rate": _fmt((ex + inf) / total, 6) if total else None}


def _abstained_words(c: Mapping) -> str:
    parts = [f"{c[k]} {k}" for k in ("excluded", "infra_fail") if c[k]]
    return " and ".join(parts) if parts else "0 excluded or infra_fail"


def _verdict_of(cand_scores: Mapping[str, float], base_scores: Mapping[str, float], strata_of: Mapping[str, str],
                n_req: int, mde: float, alpha: float = 0.05) -> tuple[str, float | None]:
    """(verdict, delta) of the paired comparison on the matched tasks (NO_WINNER under 2)."""
    common = sorted(set(cand_scores) & set(base_scores))
    if len(common) < 2:
        return stats.VERDICT_NONE, None
    res = stats.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                             [base_scores[t] for t in common])
    return stats.gate_call(res, n_req, mde=mde, alpha=alpha).verdict, res.delta


def sensitivity(runs, cfg: Mapping, cand: str, base: str, split: str, strata_of: Mapping[str, str],
                cand_scores: Mapping[str, float], comparison: Mapping, cand_strata, pooled: bool,
                public: Mapping | None, public_sens: Mapping | None) -> tuple[dict, dict | None]:
    """The candidate's rate with its excluded and infra_fail rows counted as failures (per task,
    epochs averaged, like the headline), the comparison verdict with both solvers' such rows
    counted as failures, and the refusal (``EXCLUSIONS_DECIDE``) when either differs from the
    published one by more than chance: the verdict changes, the public-vs-holdout sentence
    flips, or the rate moves by more than the half-width of the headline's 95% interval (per
    stratum when there is no pooled headline). Returns (record, reason or None)."""
    rows = runs[(runs.split == split) & (runs.solver.isin([cand, base]))]
    counts = {s: abstention_counts(rows[rows.solver == s]) for s in (cand, base)}
    method = cfg.get("interval_method", "wilson")
    passes, n = float(sum(cand_scores.values())), len(cand_scores)
    rate = passes / n if n else None
    verdict = comparison.get("verdict") or stats.VERDICT_NONE
    any_abstained = any(c["excluded"] + c["infra_fail"] for c in counts.values())
    if any_abstained:
        cand_all = per_task_scores(runs, cand, split, abstained_as_failures=True)
        # the worst case for the verdict claimed: the winner's left-out rows as failures and
        # the loser's as passes (excluding the other side's wins must not make a winner)
        # (no winner claimed: both sides' left-out rows as failures, as before)
        c_w, b_w = cand_all, per_task_scores(runs, base, split, abstained_as_failures=True)
        if verdict == stats.VERDICT_BASELINE:
            c_w = per_task_scores(runs, cand, split, abstained_as_passes=True)
        elif verdict == stats.VERDICT_CANDIDATE:
            b_w = per_task_scores(runs, base, split, abstained_as_passes=True)
        verdict_s, delta_s = _verdict_of(c_w, b_w, strata_of, comparison["power"]["required_n_miller"],
                                         cfg["mde"], comparison.get("alpha", ALPHA))
    else:
        cand_all, verdict_s, delta_s = dict(cand_scores), verdict, comparison.get("delta")
    passes_s, n_s = float(sum(cand_all.values())), len(cand_all)
    rate_s = passes_s / n_s if n_s else None
    lo, hi = rate_interval(passes, n, method)
    half = None if lo is None else (hi - lo) / 2
    moved: list[str] = []
    if any_abstained and rate is not None and rate_s is not None:
        if pooled:
            if rate - rate_s > half + 1e-12:
                moved.append(f"{cand}'s rate is {rate_s:.2f} ({passes_s:g}/{n_s}), not {rate:.2f} ({passes:g}/{n}): "
                             f"a move of {rate - rate_s:.2f}, more than the half-width {half:.2f} of the headline's "
                             "95% interval")
        else:
            for stratum in cfg["strata"]:
                ids = [t for t in cand_all if strata_of.get(t) == stratum]
                if not ids or stratum not in cand_strata.index or cand_strata.loc[stratum, "ci_low"] != \
                        cand_strata.loc[stratum, "ci_low"]:
                    continue
                r0 = float(cand_strata.loc[stratum, "pass_rate"])
                r1 = sum(cand_all[t] for t in ids) / len(ids)
                hw = (float(cand_strata.loc[stratum, "ci_high"]) - float(cand_strata.loc[stratum, "ci_low"])) / 2
                if r0 - r1 > hw + 1e-12:
                    moved.append(f"{cand}'s {stratum} rate is {r1:.2f}, not {r0:.2f}: a move of {r0 - r1:.2f}, "
                                 f"more than the half-width {hw:.2f} of its 95% interval")
    if verdict_s != verdict:
        moved.append(f"the comparison with {base} would be {verdict_s}, not {verdict}")
    if public is not None and public_sens is not None and public["allowed"] != public_sens["allowed"]:
        moved.append("the public-minus-holdout sentence would " + ("not " if public["allowed"] else "")
                     + "be allowed")
    record = {
        "definition": "excluded and infra_fail rows counted as failures (per task, epochs averaged); for the "
                      "verdict, the worst case for the verdict claimed: the winner's such rows as failures, the "
                      "other side's as passes",
        "rate": _fmt(rate_s, 6), "passes": passes_s, "n": n_s, "headline_rate": _fmt(rate, 6),
        "headline_half_width": _fmt(half, 6), "excluded": counts[cand]["excluded"],
        "infra_fail": counts[cand]["infra_fail"], "verdict": verdict_s, "delta": _fmt(delta_s, 6),
        "decides": bool(moved),
    }
    reason = None
    if moved:
        whose = f"its {_abstained_words(counts[cand])} runs"
        if counts[base]["excluded"] + counts[base]["infra_fail"]:
            whose += f" (and {base}'s {_abstained_words(counts[base])})"
        sentence = (f"With {whose} counted as failures, " + "; ".join(moved) + ". Runs left out of the rate decide "
                    "this result, and an agent can abstain on its failures (a forged stamp, a dropped route): fix what "
                    "excluded them (session stamps, server, quota, the harness) and rerun.")
        reason = _reason("EXCLUSIONS_DECIDE", sentence,
                         {"rate": record["headline_rate"], "rate_with_exclusions_as_failures": record["rate"],
                          "half_width": record["headline_half_width"], "verdict": verdict,
                          "verdict_with_exclusions_as_failures": verdict_s, "abstained": counts})
    return record, reason


def exclusion_note(counts: Mapping[str, Mapping], cand: str, base: str, delta_s: float | None,
                   verdict_s: str) -> str | None:
    """The sentence stated beside the delta when candidate and baseline abstained at different rates."""
    c, b = counts[cand], counts[base]
    if c["rate"] == b["rate"]:
        return None
    def one(name: str, x: Mapping) -> str:
        return (f"{name} {x['excluded'] + x['infra_fail']} of {x['runs']} runs "
                f"({_pct(x['rate'])}: {_abstained_words(x)})")
    tail = "" if delta_s is None else f"; with them counted as failures the delta is {delta_s:+.3f} ({verdict_s})"
    return f"Exclusion rates differ: {one(cand, c)} vs {one(base, b)}{tail}."


def _median(values) -> float | None:
    vals = [float(v) for v in values if v is not None and v == v]
    return None if not vals else float(statistics.median(vals))


def roles_table(runs, split: str) -> list[dict]:
    """Humans beside agents on one split: n, hidden pass rate, median time-to-green, steers, timeouts.

    ``hidden_pass_rate``: per task (epochs averaged), excluded and infra_fail rows left out.
    ``scored_attempts``: the rows that are not excluded or infra_fail. ``greens``: the scored
    attempts that went green *within their clock*: a ``time_to_green_s`` no later than the
    attempt's ``time_box_s``, on an attempt that was neither stopped at its clock (``timeout``)
    nor scored ``tamper``. ``median_time_to_green_s``: the median over **all** scored attempts,
    every attempt that did not go green within its clock counted as +infinity (seed 000:
    timeouts are failures, not discarded); null when there is no scored attempt or when at
    least half of them never went green (the median is infinite: not reached). A median over
    the greens alone made 1 green and 9 timeouts "faster" than 10 greens (issue 11).
    """
    out = []
    inf = float("inf")
    sub = runs[(runs.split == split) & (runs.role.isin(["agent", "human"]))]
    for (solver, role), g in sorted(sub.groupby(["solver", "role"]), key=lambda kv: (kv[0][1], kv[0][0])):
        scored = g[~g.status.isin(ABSTAINED)]
        per_task = scored.status.eq("pass").groupby(scored.task_id).mean()
        steers = g.steer_count
        times = []  # one per scored attempt: seconds to a green within the clock, or +inf
        for ttg, status, box in zip(scored.time_to_green_s, scored.status, scored.time_box_s):
            green = (ttg is not None and ttg == ttg and status not in ("timeout", "tamper")
                     and (box is None or box != box or float(ttg) <= float(box)))
            times.append(float(ttg) if green else inf)
        med = _median(times)
        out.append({
            "solver": solver, "role": role, "tasks": int(per_task.size), "runs": int(len(g)),
            "hidden_pass_rate": _fmt(per_task.mean() if per_task.size else None, 6),
            "scored_attempts": len(times),
            "median_time_to_green_s": None if med is None or med == inf else _fmt(med, 3),
            "greens": sum(t != inf for t in times),
            "steers": None if steers.isna().any() else int(steers.sum()),
            "timeouts": int((g.status == "timeout").sum()),
            "time_box_s": sorted(float(x) for x in g.time_box_s.dropna().unique()),
        })
    return out


def cost_per_pass(runs, split: str, strata_order: list[str]) -> list[dict]:
    """Tokens and cost per passing task, per solver and stratum (null when unknown or no pass)."""
    out = []
    sub = runs[(runs.split == split) & (runs.role.isin(["agent", "human"]))]
    for (solver, stratum), g in sub.groupby(["solver", "stratum"]):
        passes = int((g.status == "pass").sum())
        tok_known = g.tokens_in.notna().all() and g.tokens_out.notna().all()
        tok_missing = int((g.tokens_in.isna() | g.tokens_out.isna()).sum())
        cost_known = g.cost_usd.notna().all()
        tokens = int(g.tokens_in.sum() + g.tokens_out.sum()) if tok_known else None
        cost = float(g.cost_usd.sum()) if cost_known else None
        out.append({"solver": solver, "stratum": stratum, "runs": int(len(g)), "passes": passes,
                    "tokens": tokens, "cost_usd": _fmt(cost, 6),
                    # seed 002: tokens missing -> pass/fail only, labelled as incomplete
                    "tokens_status": "complete" if tok_known else f"incomplete ({tok_missing} of {len(g)} runs "
                                                                  "without tokens)",
                    "tokens_per_pass": None if tokens is None or not passes else round(tokens / passes, 1),
                    "cost_per_pass_usd": None if cost is None or not passes else round(cost / passes, 6)})
    order = {s: i for i, s in enumerate(strata_order)}
    return sorted(out, key=lambda r: (r["solver"], order.get(r["stratum"], 99), r["stratum"]))


def _mean_over_tasks(fn, pairs: Counter, k: int) -> float:
    """The mean of ``fn(n, c, k)`` over tasks with n >= k, from a Counter of (n, c) pairs:
    each value computed once, then averaged over every task exactly (``fmean`` sums exactly)."""
    return statistics.fmean([v for (n, c), m in pairs.items() if n >= k for v in [fn(n, c, k)] * m])


def pass_at_k_table(runs, split: str, epochs: int) -> dict:
    """Unbiased pass@k and pass^k per agent, averaged over tasks (only when epochs > 1)."""
    if epochs < 2:
        return {}
    out = {}
    sub = runs[(runs.split == split) & (runs.role == "agent") & (~runs.status.isin(["excluded", "infra_fail"]))]
    for solver, g in sub.groupby("solver"):
        counts = g.status.eq("pass").groupby(g.task_id).agg(["size", "sum"])
        # tasks share few (n, c) pairs: compute each once
        pairs = Counter(zip(counts["size"].astype(int), counts["sum"].astype(int)))
        ks = list(range(1, epochs + 1))
        at = [_mean_over_tasks(stats.pass_at_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
        hat = [_mean_over_tasks(stats.pass_hat_k, pairs, k) for k in ks if any(n >= k for n, _ in pairs)]
        out[solver] = {"k": ks[:len(at)], "pass_at_k": [round(x, 6) for x in at], "pass_hat_k": [round(x, 6) for x in hat]}
    return out


def stratum_deltas(common: list[str], strata_of: Mapping[str, str], cand_scores: Mapping[str, float],
                   base_scores: Mapping[str, float], order: list[str]) -> list[dict]:
    """The paired delta per stratum on the matched tasks (seed 003: stratum means stay visible)."""
    out = []
    for s in order:
        ids = [t for t in common if strata_of.get(t) == s]
        if ids:
            c, b = sum(cand_scores[t] for t in ids), sum(base_scores[t] for t in ids)
            out.append({"stratum": s, "n": len(ids), "candidate_rate": _fmt(c / len(ids), 6),
                        "baseline_rate": _fmt(b / len(ids), 6), "delta": _fmt((c - b) / len(ids), 6)})
    return out


def dummy_deltas(runs, cand_scores: Mapping[str, float], split: str, strata_of: Mapping[str, str],
                 order: list[str]) -> list[dict]:
    """Per stratum: the candidate's rate minus each do-nothing control's rate on the same tasks
    (seed 002: "stratum table + dummy deltas")."""
    out = []
    for s in order:
        ids = sorted(t for t in cand_scores if strata_of.get(t) == s)
        if not ids:
            continue
        row: dict[str, Any] = {"stratum": s, "n": len(ids), "candidate_rate": _fmt(sum(cand_scores[t] for t in ids) / len(ids), 6)}
        for ctl in ("empty_diff", "stub"):
            sc = per_task_scores(runs[runs.task_id.isin(ids)], ctl, split)
            got = [t for t in ids if t in sc]
            rate = sum(sc[t] for t in got) / len(got) if got else None
            row[f"{ctl}_rate"] = _fmt(rate, 6)
            row[f"delta_vs_{ctl}"] = None if rate is None else _fmt(row["candidate_rate"] - rate, 6)
        known = [row[f"delta_vs_{c}"] for c in ("empty_diff", "stub") if row[f"delta_vs_{c}"] is not None]
        row["beats_dummies"] = bool(known) and min(known) > 0
        out.append(row)
    return out


def decide(exp_dir: Path, split_path: Path, pack_hash_path: Path,
           ledger: Path | None = None) -> tuple[dict, dict, str]:
    """Compute (decision, card, report markdown) for one experiment folder.

    With ``ledger`` (the pack's ledger.jsonl) and a holdout score, the holdout's history is
    checked; the entry to append is returned in ``decision["ledger_entry"]``."""
    import pandas as pd

    exp = read_json(exp_dir / "experiment.json")
    cfg = exp["config_full"]
    manifest = read_json(split_path)
    tasks = pd.read_parquet(exp_dir / "tables" / "tasks.parquet")
    runs = pd.read_parquet(exp_dir / "tables" / "runs.parquet")
    strata = pd.read_parquet(exp_dir / "tables" / "strata.parquet")
    split = cfg["score_split"]
    cand, base = cfg["candidate"], cfg["baseline"]
    slice_tasks = tasks[tasks.split == split]
    reasons: list[dict] = []
    notes: list[dict] = []

    # --- the holdout's memory, read first: it pins the servers and sets the exact test's alpha --
    prior: list[dict] | None = None
    server_pin = None
    ledger_entry_out = None
    reuse = None
    if ledger is not None and split == "holdout":
        try:
            prior = read_ledger(ledger)
        except ValueError as exc:
            reasons.append(_reason("LEDGER_UNREADABLE", f"{exc} Restore it from version control; never edit it.",
                                   str(ledger)))
        else:
            lost = lost_ledger_lines(ledger, prior, Path(exp_dir).parent)
            if lost:
                reasons.append(_reason("LEDGER_UNREADABLE", f"{ledger} no longer holds the lines that earlier "
                                       f"decisions in this results folder cite (experiments {', '.join(lost[:5])}): "
                                       "the ledger was deleted, truncated or replaced. Restore it from version "
                                       "control; never edit it.", lost))
    if prior is not None:
        def labels(rows):
            return rows.server_id.where(rows.server_id.notna(), NO_SERVER).astype(str)

        agent_rows = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin([cand, base])]
        # an agent that ran on the holdout reached it, even when its rows were excluded (a run
        # without a stamp still saw the tasks); only a harness failure is no visit
        reached = agent_rows[agent_rows.status != "infra_fail"]
        agents = {n: fp for n, fp in exp["agent_fingerprints"].items() if (reached.solver == n).any()}
        probe = ledger_entry(exp, manifest, agents, [])
        servers, pinned_at = pinned_servers(prior, probe) if cfg["health"].get("required_server_id") is None \
            else ([], None)
        if servers:
            runs = runs.copy()
            rows = runs[(runs.split == split) & (runs.role == "agent")]
            lab = labels(rows)
            foreign_ix = rows.index[~lab.isin(servers) & ~rows.status.isin(ABSTAINED)]
            why = (f"server {{}} is not among the servers of this holdout's first scored run ({', '.join(servers)}, "
                   f"experiment {pinned_at}); name the servers in health.required_server_id before the first run "
                   "to change that")
            ev = sorted(f"{runs.at[i, 'solver']}:{runs.at[i, 'task_id']}#{runs.at[i, 'epoch']}@{lab[i]}"
                        for i in foreign_ix)
            runs.loc[foreign_ix, "reason"] = [why.format(repr(lab[i])) for i in foreign_ix]
            runs.loc[foreign_ix, "status"] = "excluded"
            server_pin = {"servers": servers, "pinned_at": pinned_at, "excluded": ev}
            if ev:
                notes.append(_note("SERVER_PINNED", f"{len(ev)} run(s) came from a server this holdout was not "
                                                    f"first scored on ({', '.join(ev[:5])}"
                                                    f"{', …' if len(ev) > 5 else ''}) and are excluded: its servers "
                                                    f"are {', '.join(servers)}."))
        scored = runs[(runs.split == split) & (runs.role == "agent") & runs.solver.isin(list(agents))
                      & ~runs.status.isin(ABSTAINED)]
        entry = ledger_entry(exp, manifest, agents, sorted(set(labels(scored))))
        earlier = [e for e in prior if _bare(e) != _bare(entry)]
        reasons.extend(ledger_reasons(earlier, entry))
        reuse = holdout_reuse(earlier, entry, cand)
        if reuse:
            notes.append(_note("HOLDOUT_REUSED", reuse["sentence"]))
        # a scoring in which no agent ran did not reach the holdout: nothing to record
        ledger_entry_out = entry if agents else None
    holdout_reuse_out = reuse
    alpha = reuse["alpha"] if reuse else ALPHA

    # --- controls and pack health ------------------------------------------------------
    leak = tasks[tasks.leak_suspect]
    if len(leak):
        reasons.append(_reason("LEAK_SUSPECT", f"{len(leak)} task(s) match the denylist or public text, or quote "
                                               f"their hidden tests: {', '.join(leak.task_id)}.",
                               list(leak.task_id)))
    bad_oracle = tasks[~tasks.oracle_ok]
    if len(bad_oracle):
        reasons.append(_reason("ORACLE_FAILED",
                               f"The gold patch failed on {len(bad_oracle)} task(s) ({', '.join(bad_oracle.task_id)}); "
                               "the grader is broken there, so no score from this pack is published.",
                               list(bad_oracle.task_id)))
    ctl = runs[(runs.role == "control") & (runs.solver.isin(["empty_diff", "stub"])) & (runs.status == "pass")]
    if len(ctl):
        ev = sorted(f"{r.solver}:{r.task_id}" for r in ctl.itertuples())
        reasons.append(_reason("DUMMY_PASSED", f"A do-nothing control passed {len(ctl)} time(s) ({', '.join(ev)}); "
                                               "those tests do not test the bug.", ev))
    ctl_infra = tasks[tasks.control_infra_fail]
    if len(ctl_infra):
        reasons.append(_reason("CONTROL_INFRA_FAIL", f"Controls could not be scored on {', '.join(ctl_infra.task_id)}; "
                                                     "fix the harness (see the run_dummy logs).", list(ctl_infra.task_id)))
    for code, col, words in (("WEAK_TEST_IN_SLICE", "weak_test", "pass with the empty diff"),
                             ("FLAKY_IN_SLICE", "flaky", "gave different gold-patch results on reruns")):
        bad = slice_tasks[slice_tasks[col]]
        if len(bad):
            reasons.append(_reason(code, f"{len(bad)} {split} task(s) {words}: {', '.join(bad.task_id)}.", list(bad.task_id)))
    if split == "tune":
        reasons.append(_reason("TUNE_SPLIT", "The score is on the tune split; only the frozen holdout is a measurement. "
                                             "Set score_split: holdout.", split))
    missing_env = [k for k in ("max_wall_s", "max_steps", "max_output_tokens") if cfg["envelope"].get(k) is None]
    if missing_env:
        reasons.append(_reason("ENVELOPE_INCOMPLETE", f"The envelope leaves {', '.join(missing_env)} blank; "
                                                      "write the caps down before the run.", missing_env))

    # --- the candidate's rates per stratum -----------------------------------------------
    cand_rows = runs[(runs.solver == cand) & (runs.split == split)]
    cand_strata = strata[(strata.solver == cand) & (strata.split == split)].set_index("stratum")
    small = []
    for s in cfg["strata"]:
        n = int(cand_strata.loc[s, "n"]) if s in cand_strata.index else 0
        if n < 2:
            small.append(f"{s} (n={n})")
    if small:
        reasons.append(_reason("STRATUM_TOO_SMALL", f"Stratum {', '.join(small)} has fewer than 2 scored {split} tasks; "
                                                    "a rate on it is not a measurement.", small))
    cand_scores = per_task_scores(runs, cand, split)
    unclean = set(slice_tasks.task_id[slice_tasks.weak_test | slice_tasks.flaky])
    clean = {t for t in cand_scores if t not in unclean}
    if len(cand_rows) == 0:
        reasons.append(_reason("NO_CANDIDATE_ROWS", f"{cand} has no rows on the {split} split.", cand))
    if len(clean) < cfg["min_kept_tasks"]:
        reasons.append(_reason("TOO_FEW_CLEAN_TASKS", f"Only {len(clean)} clean {split} task(s) remain for {cand}; "
                                                      f"min_kept_tasks is {cfg['min_kept_tasks']}.", len(clean)))
    compared = runs[(runs.split == split) & (runs.role == "agent") & (runs.solver.isin([cand, base]))]
    loose = compared[compared.isolation != "bwrap"]
    if len(loose):
        ev = sorted({f"{r.solver}:{r.isolation}" for r in loose.itertuples()})
        reasons.append(_reason("UNSANDBOXED", f"{len(loose)} agent run(s) on the {split} split ran without the "
                                              f"sandbox ({', '.join(ev)}); the sandbox needs unprivileged user "
                                              "namespaces: with sandbox: required the run stops and names the "
                                              "setting to enable.",
                               ev))
    over = cand_rows[cand_rows.over_envelope.eq(True)]
    if len(over):
        reasons.append(_reason("OVER_ENVELOPE", f"{len(over)} {cand} run(s) exceeded the envelope "
                                                f"({', '.join(sorted(over.task_id))}).", sorted(over.task_id)))
    cand_tamper = cand_rows[cand_rows.status == "tamper"]
    if len(cand_tamper):
        ev = sorted(f"{r.task_id}#{r.epoch}" for r in cand_tamper.itertuples())
        reasons.append(_reason("CANDIDATE_TAMPERED", f"{cand} was scored tamper on {len(cand_tamper)} {split} run(s) "
                                                     f"({', '.join(ev)}): its patches touched tests or test configuration, "
                                                     "shadowed a module or forged the test report (see the reasons in "
                                                     "runs.parquet). A rate for an agent caught tampering is not published.",
                               ev))
    tampered = runs[(runs.split == split) & (runs.status == "tamper")]
    if len(tampered):
        notes.append({"code": "TAMPER", "sentence": f"{len(tampered)} run(s) touched tests or test configuration and "
                                                    "were scored tamper (not pass): "
                      + ", ".join(sorted(f"{r.solver}:{r.task_id}" for r in tampered.itertuples()))})
    n_c = len(cand_scores)
    scheduled = int(len(cand_rows))
    passes = sum(cand_scores.values())
    rate = passes / n_c if n_c else None
    timeouts = int((cand_rows.status == "timeout").sum())
    excluded = cand_rows[cand_rows.status.isin(["excluded", "infra_fail"])]

    # --- paired comparison ---------------------------------------------------------------
    base_scores = per_task_scores(runs, base, split)
    common = sorted(set(cand_scores) & set(base_scores))
    strata_of = exp["strata_of"]
    comparison: dict[str, Any] = {
        "candidate": cand, "baseline": base, "split": split, "unit": "task (epochs averaged per task)",
        "matched_tasks": len(common),
        "unmatched_task_ids": sorted(set(cand_scores) ^ set(base_scores)),
    }
    n_req_raw, n_req = stats.required_n_miller(cfg["mde"], cfg["planning_discordance"])
    comparison["power"] = {"mde": cfg["mde"], "planning_discordance": cfg["planning_discordance"],
                           "required_n_miller": n_req,
                           "required_n_connor": stats.required_n_connor(cfg["mde"], cfg["planning_discordance"])[1]}
    verdict_label = "NOT_COMPUTED"
    if len(common) >= 2:
        res = stats.paired_delta([strata_of[t] for t in common], [cand_scores[t] for t in common],
                                 [base_scores[t] for t in common])
        call = stats.gate_call(res, n_req, mde=cfg["mde"], alpha=alpha)
        verdict_label = call.label
        comparison.update({
            "delta": _fmt(res.delta, 6), "ci_low": _fmt(res.ci_low, 6), "ci_high": _fmt(res.ci_high, 6),
            "se": _fmt(res.se, 6), "df": res.df, "method": res.method, "note": res.note,
            "bootstrap_ci": [_fmt(x, 6) for x in res.bootstrap_ci], "bootstrap_se": _fmt(res.bootstrap_se, 6),
            "mcnemar_p": _fmt(res.mcnemar_p, 6), "wins": res.wins, "losses": res.losses,
            "observed_mde": _fmt(stats.observed_mde(len(common), cfg["planning_discordance"]), 4),
            "verdict": call.verdict, "interval_verdict": call.interval_verdict, "underpowered": call.underpowered,
            "below_mde": call.below_mde, "exact_test_disagrees": call.exact_disagrees,
            "zero_width_interval": call.degenerate_interval,
            "stratum_deltas": stratum_deltas(common, strata_of, cand_scores, base_scores, cfg["strata"]),
        })
        if call.interval_verdict != stats.VERDICT_NONE and call.below_mde and not call.underpowered:
            notes.append(_note("BELOW_MDE", f"The delta {res.delta:+.3f} is smaller than the pre-registered MDE "
                                            f"{cfg['mde']}: a difference too small to have been planned for is not a "
                                            "ranking. No winner is named."))
        if call.exact_disagrees:
            notes.append(_note("EXACT_TEST_NOT_SIGNIFICANT",
                               f"{res.wins} win(s) and {res.losses} loss(es) over {len(common)} paired tasks: the "
                               f"exact McNemar p is {res.mcnemar_p:.3f}, not below {alpha:.4g}, although the "
                               f"{res.method.replace('_', ' ')} interval [{res.ci_low:+.3f}, {res.ci_high:+.3f}] "
                               "excludes 0. No winner is named."))
        if call.degenerate_interval:
            what = ("no task was discordant" if res.wins + res.losses == 0 else
                    "every task in each stratum had the same paired outcome")
            comparison["interval_note"] = (f"zero-width interval: {what}; the interval shows no spread, not "
                                           f"certainty (exact McNemar p {res.mcnemar_p:.3f} on {res.wins} win(s) / "
                                           f"{res.losses} loss(es))")
            notes.append(_note("ZERO_WIDTH_INTERVAL", comparison["interval_note"][0].upper()
                               + comparison["interval_note"][1:] + "."))
        if call.underpowered:
            notes.append({"code": "UNDERPOWERED", "sentence":
                          f"{len(common)} paired tasks detect a difference of about "
                          f"{comparison['observed_mde']:.2f}; the pre-registered MDE of {cfg['mde']} needs "
                          f"{n_req} tasks. No winner is named."})
    else:
        comparison["note"] = "fewer than 2 matched tasks: no interval"
    comparison["verdict_label"] = verdict_label
    comparison["alpha"] = alpha

    # --- no pooled headline over unbalanced strata ----------------------------------------
    # Neither rule trusts the order of `strata` (easiest first is the author's word): any
    # stratum over half the tasks, and any stratum where the dummies are not beaten, withhold it.
    present = [s for s in cfg["strata"] if (slice_tasks.stratum == s).any()]
    shares = {s: float((slice_tasks.stratum == s).mean()) for s in present}
    big = max(shares, key=lambda s: shares[s]) if shares else None
    # one stratum is not an imbalance: there is nothing for a pooled rate to hide
    unbalanced = big is not None and shares[big] > 0.5 and len(present) > 1
    if unbalanced:
        notes.append(_note("UNBALANCED_STRATA", f"{shares[big]:.0%} of the {split} tasks are in stratum "
                                                f"'{big}': a pooled rate would mostly measure it. Quote the "
                                                "per-stratum rates, never one pooled number."))
    dummies = dummy_deltas(runs, cand_scores, split, strata_of, cfg["strata"])
    beaten = [d for d in dummies if d["beats_dummies"]]
    not_beaten = [d for d in dummies if not d["beats_dummies"]]
    easy_only = len(dummies) > 1 and bool(beaten) and bool(not_beaten)
    if easy_only:
        won = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in beaten)
        lost_ = ", ".join(f"{d['stratum']} {d['candidate_rate']:.2f}" for d in not_beaten)
        notes.append(_note("DUMMY_BEATEN_ONLY_ON_EASY",
                           f"{cand} beats the do-nothing controls only on {won}; on {lost_} it is no better than "
                           "them. A pooled rate would be the other strata's: publish the stratum table and the "
                           "dummy deltas, never one pooled number."))
    no_pooled = unbalanced or easy_only

    # --- abstention must not pay: the rate with exclusions counted as failures -------------
    public_sens = None
    if cfg.get("public_results"):
        cand_all = per_task_scores(runs, cand, split, abstained_as_failures=True)
        public_sens = public_comparison(cfg, exp, cand, sum(cand_all.values()) / len(cand_all) if cand_all else None,
                                        True)
    sens, sens_reason = sensitivity(runs, cfg, cand, base, split, strata_of, cand_scores, comparison, cand_strata,
                                    not no_pooled, public_comparison(cfg, exp, cand, rate, True), public_sens)
    if sens_reason is not None:
        reasons.append(sens_reason)
    counts = {s: abstention_counts(runs[(runs.split == split) & (runs.solver == s)]) for s in (cand, base)}
    comparison["exclusion_rates"] = counts
    comparison["exclusion_note"] = exclusion_note(counts, cand, base, sens["delta"], sens["verdict"])

    publishable = not reasons
    headline = round(rate, 6) if (publishable and rate is not None and not no_pooled) else None
    per_stratum = []
    for s in cfg["strata"]:
        if s in cand_strata.index:
            r = cand_strata.loc[s]
            per_stratum.append({"stratum": s, "n": int(r.n), "passes": float(r.passes), "pass_rate": _fmt(r.pass_rate, 6),
                                "ci_low": _fmt(r.ci_low, 6), "ci_high": _fmt(r.ci_high, 6),
                                "timeout_rate": _fmt(r.timeout_rate, 6)})
    env = cfg["envelope"]
    steer_known = cand_rows.steer_count.notna().all() if len(cand_rows) else False
    allowed: list[str] = []
    refused: list[dict] = []
    if publishable:
        strata_txt = "; ".join(f"{p['stratum']} {p['passes']:g}/{p['n']}" for p in per_stratum)
        pooled = "" if no_pooled else f"passed {passes:g} of {n_c} {split} tasks ({_pct(rate)}) on hidden tests, "
        allowed.append(
            f"On this sealed pack (digest {exp['pack_digest'][:12]}), {cand} {pooled}"
            f"{'passed hidden tests ' if no_pooled else ''}under a clock of at most {env['max_wall_s']} s per task, "
            f"{env['max_steps']} steps and {env['max_output_tokens']} output tokens; per stratum: {strata_txt}; "
            f"timeouts {timeouts} (counted as failures), exclusions {len(excluded)} of {scheduled} scheduled runs"
            + (f" (with them counted as failures: {sens['passes']:g} of {sens['n']}, {_pct(sens['rate'])})"
               if len(excluded) else "") + "."
            + (f" {holdout_reuse_out['sentence']}" if holdout_reuse_out else "")
        )
        if len(dummies) > 1 or no_pooled:
            allowed.append(f"Against the do-nothing controls on the same {split} tasks, per stratum: " + "; ".join(
                f"{d['stratum']} {d['candidate_rate']:.2f} (empty diff {_signed(d['delta_vs_empty_diff'])}, "
                f"stub {_signed(d['delta_vs_stub'])}, n={d['n']})" for d in dummies) + ".")
        if comparison.get("verdict") in (stats.VERDICT_CANDIDATE, stats.VERDICT_BASELINE):
            winner, loser = (cand, base) if comparison["verdict"] == stats.VERDICT_CANDIDATE else (base, cand)
            allowed.append(
                f"On these {len(common)} {split} tasks, {winner} passed more than {loser}: delta "
                f"{comparison['delta']:+.3f} (95% {comparison['method'].replace('_', ' ')} interval "
                f"[{comparison['ci_low']:+.3f}, {comparison['ci_high']:+.3f}], exact McNemar p "
                f"{comparison['mcnemar_p']:.3f} < {alpha:.4g})"
                + (f". {comparison['exclusion_note']}" if comparison["exclusion_note"] else ".")
                + (f" {holdout_reuse_out['sentence']}" if holdout_reuse_out else "")
            )
        else:
            refused.append({"sentence": f"{cand} is better than {base}.", "why": comparison_why(comparison, cfg)})
    else:
        refused.append({"sentence": f"{cand} clears {_pct(rate)}.",
                        "why": "the gate refused a headline: " + ", ".join(r["code"] for r in reasons)})
    public = public_comparison(cfg, exp, cand, rate, publishable)
    if public is not None:
        (allowed if public["allowed"] else refused).append(
            public["sentence"] if public["allowed"] else {"sentence": public["sentence"], "why": public["why"]})
    roles = roles_table(runs, split)
    allowed_h, refused_h = human_sentences(roles, runs, cand, split, publishable)
    allowed += allowed_h
    refused += refused_h
    if not steer_known:
        refused.append({"sentence": f"{cand} ran unsupervised.", "why": "steers were not recorded (steers.jsonl absent)"})
    refused.append({"sentence": "AI is better at coding than most software developers.",
                    "why": "never allowed from this protocol: a local pack and local humans are not the profession"})

    digests = {
        "pack": exp["pack_digest"], "denylist": exp["denylist_digest"], "tasks": exp["task_digests"],
        "split_manifest": exp["split_manifest_digest"],
        "config": sha256_text(canonical_json(exp["config"])), "envelope": envelope_digest(cfg),
        "agent_fingerprints": exp["agent_fingerprints"], "code": exp["code"],
        "toolchain": exp["toolchain_digest"], "pack_hash_file": (Path(pack_hash_path).read_text().splitlines() or [""])[-1],
    }
    decision = {
        "experiment": exp["exp_id"], "publishable": publishable, "headline": headline,
        "headline_metric": f"{cand} hidden-test pass rate on the {split} split (per-task, epochs averaged)",
        "n": n_c, "passes": passes, "per_stratum": per_stratum, "timeouts": timeouts,
        "exclusions": len(excluded), "scheduled": scheduled,
        "exclusion_rate_scheduled": _fmt(len(excluded) / scheduled, 6) if scheduled else None,
        "dummy_deltas": dummies, "holdout_reuse": holdout_reuse_out, "server_pin": server_pin,
        "pooled_headline_withheld": bool(publishable and no_pooled),
        "comparison_summary": comparison_summary(comparison, cfg),
        "sensitivity": sens, "reasons": reasons, "notes": notes, "allowed_sentences": allowed,
        "refused_sentences": refused, "comparison": comparison, "roles": roles,
        "cost_per_pass": cost_per_pass(runs, split, cfg["strata"]),
        "pass_at_k": pass_at_k_table(runs, split, int(cfg["epochs"])),
        "interval_method": cfg.get("interval_method", "wilson"),
        "public_minus_holdout": public, "ledger_entry": ledger_entry_out, "digests": digests,
        "toolchain": {"python": exp["toolchain"]["python"], "packages": exp["toolchain"]["packages"]},
    }
    card = build_card(exp, manifest, tasks, runs)
    card.update(card_claim(exp, decision))
    report = render_report(decision, card, strata, tasks)
    return decision, card, report


EDIT_CODES = {"HOLDOUT_TUNED", "DENOMINATOR_MOVED", "ENVELOPE_CHANGED", "LEDGER_UNREADABLE", "TUNE_SPLIT"}


def public_comparison(cfg: Mapping, exp: Mapping, cand: str, rate: float | None, publishable: bool) -> dict | None:
    """Public-minus-holdout accuracy of the candidate, when a public-pack experiment is given.

    The sentence "public-set accuracy was higher than holdout accuracy" is allowed only when
    both runs were made without edits (no ledger or split refusal on either side), with the
    same candidate fingerprint, and this decision is publishable."""
    if not cfg.get("public_results"):
        return None
    pub_dir = Path(cfg["public_results"])
    pub = read_json(pub_dir / "decision.json")
    pub_exp = read_json(pub_dir / "experiment.json") if (pub_dir / "experiment.json").exists() else {}
    pub_rate = None if not pub.get("n") else pub["passes"] / pub["n"]
    fp_here = exp["agent_fingerprints"].get(cand)
    fp_there = (pub_exp.get("agent_fingerprints") or {}).get(cand)
    delta = None if pub_rate is None or rate is None else round(pub_rate - rate, 6)
    why = []
    if not publishable:
        why.append("this decision is not publishable")
    edits = sorted({r["code"] for r in pub.get("reasons", []) if r["code"] in EDIT_CODES})
    if edits:
        why.append(f"the public run was edited or fitted ({', '.join(edits)})")
    if fp_here is None or fp_here != fp_there:
        why.append(f"the candidate's fingerprint differs between the runs ({fp_there} vs {fp_here})")
    if delta is None:
        why.append("a rate is missing")
    elif delta <= 0:
        why.append(f"it was not higher (public {pub_rate:.3f} vs holdout {rate:.3f})")
    sentence = "Public-set accuracy was higher than holdout accuracy"
    if delta is not None:
        sentence += f" ({cand}: public {pub_rate:.0%} vs holdout {rate:.0%}, delta {delta:+.3f})"
    return {"public_experiment": pub.get("experiment"), "public_pack_digest": (pub.get("digests") or {}).get("pack"),
            "public_rate": _fmt(pub_rate, 6), "holdout_rate": _fmt(rate, 6), "delta": delta,
            "allowed": not why, "sentence": sentence + ".", "why": "; ".join(why) or None}


def human_sentences(roles: list[dict], runs, cand: str, split: str, publishable: bool) -> tuple[list[str], list[dict]]:
    """The seed's human-clock sentences (seed 000's table): allowed only when their conditions hold.

    Both compare the candidate with each person on the tasks both attempted on this split (the
    shared tasks) and nowhere else; their numbers (rates, passes, timeouts, steers) are those of
    :func:`roles_table` on that slice.

    *Attempts.* Seed 000 never allows "faster" when "you reran only the agent", and its matched
    clock gives both sides the same session; summing passes over epochs let an agent at 1 pass
    in 3 attempts per task "match" a person at 1 in 1 (issue 11). So, rather than restating
    rates per attempt when the attempt counts differ, both sentences are refused whenever the
    number of attempts (rows of any status: a rerun is a rerun, whatever it scored) differs on
    any shared task, naming the counts. With the same attempts per task on both sides, each
    task's pass rate (passes / attempts, epochs averaged) is a per-attempt rate on the same
    footing. An excluded or infra_fail attempt on a shared task refuses both sentences too:
    leaving it out would compare different attempts, counting it as a failure would charge one
    side for the harness.

    *Matched.* The mean per-task hidden pass rate over the shared tasks: "matched" when the
    candidate's is at least the person's, else "did not match" (also a fact worth stating);
    the sentence gives both rates, the attempts per task, the passes, steers and timeouts
    (timeouts are failures).

    *Faster.* :func:`roles_table`'s median time-to-green on the shared tasks: over every scored
    attempt, an attempt that did not go green within its clock counted as +infinity. Allowed
    only when the candidate's median is finite (most of its attempts went green) and below the
    person's, which may be infinite ("never").
    """
    allowed: list[str] = []
    refused: list[dict] = []
    agent = next((r for r in roles if r["solver"] == cand), None)
    humans = [r for r in roles if r["role"] == "human"]
    if not humans or agent is None:
        refused.append({"sentence": f"On this sealed pack, {cand} matched our developers under the same clock.",
                        "why": "no human session was scored on this split under the same snapshot and clock"})
        refused.append({"sentence": f"{cand} was faster to a green visible suite than our developers.",
                        "why": "no human time-to-green to compare with"})
        return allowed, refused
    for h in humans:
        who = h["solver"]
        shared = sorted(set(runs[(runs.solver == who) & (runs.split == split)].task_id)
                        & set(runs[(runs.solver == cand) & (runs.split == split)].task_id))
        same_clock = bool(h["time_box_s"]) and h["time_box_s"] == agent["time_box_s"]
        why_not = []
        if not publishable:
            why_not.append("the gate refused a headline")
        if not shared:
            why_not.append(f"{who} and {cand} share no scored task")
        if not same_clock:
            why_not.append(f"the clocks differ ({who}: {h['time_box_s']}, {cand}: {agent['time_box_s']})")
        if h["steers"] is None or agent["steers"] is None:
            why_not.append("steers were not recorded for both")
        a = runs[(runs.solver == cand) & (runs.split == split) & (runs.task_id.isin(shared))]
        b = runs[(runs.solver == who) & (runs.split == split) & (runs.task_id.isin(shared))]
        a_n, b_n = a.groupby("task_id").size(), b.groupby("task_id").size()
        moved = [t for t in shared if int(a_n.get(t, 0)) != int(b_n.get(t, 0))]

        def times(counts) -> str:
            lo, hi = int(counts.min()), int(counts.max())
            return f"{lo} time{'' if lo == 1 else 's'}" if lo == hi else f"{lo} to {hi} times"
        if moved:
            per = ", ".join(f"{t}: {cand} {int(a_n.get(t, 0))} vs {who} {int(b_n.get(t, 0))}"
                            for t in moved[:5])
            why_not.append(f"{cand} was run {times(a_n)} per task and {who} {times(b_n)} ({per}"
                           + (f", and {len(moved) - 5} more" if len(moved) > 5 else "") + "): seed 000 never "
                           "allows these sentences when one side was rerun and the other not; compare per attempt, "
                           "with the same number of attempts per task on both sides")
        a_abs, b_abs = int(a.status.isin(ABSTAINED).sum()), int(b.status.isin(ABSTAINED).sum())
        if a_abs or b_abs:
            why_not.append(f"{a_abs} of {cand}'s and {b_abs} of {who}'s attempts on the shared tasks were excluded or "
                           "infra_fail: left out, the sides would not be compared on the same attempts; fix what "
                           "excluded them and rerun")
        clock_min = f"{agent['time_box_s'][0] / 60:g}-minute" if agent["time_box_s"] else "same"
        matched = f"On this sealed pack, {cand} matched {who} under a {clock_min} clock"
        faster = f"{cand} was faster to a green visible suite than {who} on these tasks"
        if why_not:
            refused.append({"sentence": matched + ".", "why": "; ".join(why_not)})
            refused.append({"sentence": faster + ".", "why": "; ".join(why_not)})
            continue
        # the same slice through roles_table: one definition of rates, greens and medians
        sl = {r["solver"]: r for r in roles_table(runs[(runs.split == split) & runs.solver.isin([cand, who])
                                                       & runs.task_id.isin(shared)], split)}
        ra, rb = sl[cand], sl[who]
        a_rate = float(a.status.eq("pass").groupby(a.task_id).mean().mean())
        b_rate = float(b.status.eq("pass").groupby(b.task_id).mean().mean())
        a_pass, b_pass = int((a.status == "pass").sum()), int((b.status == "pass").sum())
        attempts = times(a_n).replace("time", "attempt")
        verb = "matched" if a_rate >= b_rate - 1e-9 else "did not match"
        allowed.append(f"On this sealed pack, {cand} {verb} {who} under a {clock_min} clock: mean per-task hidden pass "
                       f"rate {a_rate:.2f} vs {b_rate:.2f} on the same {len(shared)} {split} tasks, {attempts} per "
                       f"task each ({a_pass} vs {b_pass} passes in {len(a)} attempts each; steers: {cand} "
                       f"{ra['steers']}, {who} {rb['steers']}; timeouts {ra['timeouts']} vs {rb['timeouts']}, "
                       "counted as failures).")
        a_med, b_med = ra["median_time_to_green_s"], rb["median_time_to_green_s"]
        a_never, b_never = ra["scored_attempts"] - ra["greens"], rb["scored_attempts"] - rb["greens"]

        def secs(m) -> str:
            return "never" if m is None else f"{m:.0f} s"
        if a_med is None:
            refused.append({"sentence": faster + ".",
                            "why": f"at least half of {cand}'s attempts never went green within the clock "
                                   f"({a_never} of {ra['scored_attempts']}: timeouts, tamper or no green visible "
                                   "suite), so its median time-to-green, timeouts counted as never, is not reached"})
        elif b_med is None or a_med < b_med:
            allowed.append(f"{faster}: median time-to-green {secs(a_med)} vs {secs(b_med)} over all "
                           f"{ra['scored_attempts']} scored attempts each on the same {len(shared)} {split} tasks, an "
                           "attempt that did not go green within its clock (a timeout, tamper, or no green visible "
                           f"suite) counted as +infinity ({a_never} vs {b_never} such attempts; timeouts "
                           f"{ra['timeouts']} vs {rb['timeouts']}).")
        else:
            refused.append({"sentence": faster + ".", "why": f"it was not: median {secs(a_med)} vs {secs(b_med)}, "
                                                             "timeouts counted as never green"})
    return allowed, refused


def contamination_posture(tasks) -> str:
    """What actually ran on every task: ``ngram_scan`` (public 13-gram check), ``filename_scan``
    (denylist only) or ``unchecked``."""
    per_task = [set(str(cs).split(";")) for cs in tasks.leak_checks] if len(tasks) else []
    if per_task and all("ngram13:humaneval" in c for c in per_task):
        return "ngram_scan"
    if per_task and all("denylist" in c for c in per_task):
        return "filename_scan"
    return "unchecked"


def build_card(exp: Mapping, manifest: Mapping, tasks, runs) -> dict:
    """The four fields that make a score citeable (seed "four fields") plus contamination posture."""
    cfg = exp["config_full"]
    deny_lines = exp["denylist_lines"]
    return {
        "name": f"sealbench-{exp['exp_id']}",
        "dataset": {
            "pack_digest": exp["pack_digest"], "denylist_digest": exp["denylist_digest"],
            "split_manifest_digest": exp["split_manifest_digest"], "n_tasks": int(len(tasks)),
            "strata": {s: int((tasks.stratum == s).sum()) for s in cfg["strata"]},
            "split": {"seed": manifest["seed"], "holdout_frac": manifest["holdout_frac"],
                      "tune": len(manifest["tune"]), "holdout": len(manifest["holdout"])},
            "score_split": cfg["score_split"],
        },
        "oracle": {
            "scoring": "patch applied to a pristine repo/; visible_tests/ and hidden_tests/ restored from the sealed "
                       "pack; pass = visible_command and hidden_command both exit 0",
            "commands": exp["oracle_commands"],
            "gold_patch_runs": cfg["oracle_runs"],
            "oracle_sanity": float(tasks.oracle_ok.mean()) if len(tasks) else None,
        },
        "metric_family": ["hidden pass rate per stratum (n, Wilson 95%)", "timeout rate", "infra_fail rate",
                          "exclusion rate", "pass rate with exclusions and infra_fail counted as failures "
                          "(EXCLUSIONS_DECIDE when it decides)", "paired delta vs baseline (stratified t 95%)", "McNemar exact p",
                          "time to green", "steps, tokens, cost (as reported)"],
        "envelope": {**cfg["envelope"], "health": cfg["health"]},
        "isolation": {
            "mode": cfg.get("sandbox", "auto"),
            "levels": sorted({str(x) for x in runs[runs.role == "agent"].isolation.dropna()}),
            "sandbox": "bubblewrap: allowlisted read-only system and interpreter, workspace and SEALBENCH_OUT "
                       "writable, private /tmp, unprivileged uid without capabilities or user namespaces, PID "
                       "namespace, no network; pack, results/, home, project and scratch folders not mounted",
            # resource limits of every sandboxed command; mechanisms as found where the gate runs
            "limits": {**_sandbox.Limits.of(cfg.get("limits")).to_dict(), "mechanisms": _sandbox.limit_mechanisms()},
        },
        "contamination": {
            "posture": contamination_posture(tasks),
            "checks": sorted({c for cs in tasks.leak_checks for c in str(cs).split(";") if c}),
            "denylist_lines": deny_lines, "suspects": int(tasks.leak_suspect.sum()),
            "training_guarantee": "none",
        },
    }


def _solver_card(exp: Mapping, name: str) -> dict:
    """Who a solver is, in the card: its fingerprint, command and what the fingerprint covered."""
    cfg = exp["config_full"]
    spec = cfg["agents"].get(name)
    if spec is None:
        return {"name": name, "kind": "control"}
    ident = (exp.get("agent_identity") or {}).get(name) or {}
    files = ident.get("files") or {}
    return {"name": name, "kind": "agent", "fingerprint": exp["agent_fingerprints"].get(name),
            "command": spec["command"], "env": spec.get("env", {}), "endpoint": spec.get("endpoint"),
            "lineage": ident.get("lineage") or spec.get("lineage") or name,
            "covered_files": {k: files[k] for k in sorted(files)}}


def card_claim(exp: Mapping, decision: Mapping) -> dict:
    """What makes card.json self-contained: the claim, and the solvers it is about."""
    cfg = exp["config_full"]
    return {
        "candidate": _solver_card(exp, cfg["candidate"]),
        "baseline": _solver_card(exp, cfg["baseline"]),
        "headline": {"publishable": decision["publishable"], "value": decision["headline"],
                     "metric": decision["headline_metric"], "n": decision["n"], "passes": decision["passes"],
                     "per_stratum": decision["per_stratum"], "comparison": decision["comparison_summary"],
                     "experiment": decision["experiment"],
                     "refusals": [r["code"] for r in decision["reasons"]]},
        "preregistration": preregistration(cfg, exp),
    }


def _table(rows: list[list[Any]], header: list[str]) -> str:
    def cell(x: Any) -> str:
        if x is None or (isinstance(x, float) and x != x):
            return "—"
        if isinstance(x, float):
            return f"{x:.3f}"
        return str(x).replace("|", "\\|")
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def banner_headline(decision: Mapping) -> str:
    """The headline half of the banner: publishable or not, and in which form."""
    if not decision["publishable"]:
        return "Headline: not publishable (" + ", ".join(r["code"] for r in decision["reasons"]) + ")."
    if decision["headline"] is None:
        return "Headline: publishable per stratum only (no pooled number: " + ", ".join(
            n["code"] for n in decision["notes"] if n["code"] in ("UNBALANCED_STRATA", "DUMMY_BEATEN_ONLY_ON_EASY")) + ")."
    return f"Headline: publishable ({decision['headline']:.3f})."


def render_report(decision: Mapping, card: Mapping, strata, tasks) -> str:
    lines = [f"# sealbench report — experiment {decision['experiment']}", ""]
    lines += [f"**{banner_headline(decision)}**", "", f"**Comparison: {decision['comparison_summary']}.**",
              "", f"Headline value: {decision['headline'] if decision['headline'] is not None else 'none'} "
              f"({decision['headline_metric']}).", ""]
    if decision["reasons"]:
        lines += ["## Why not", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["reasons"]] + [""]
    if decision["notes"]:
        lines += ["## Notes", ""] + [f"- `{r['code']}`: {r['sentence']}" for r in decision["notes"]] + [""]
    lines += ["## Sentences you may publish", ""]
    lines += [f"- {s}" for s in decision["allowed_sentences"]] or ["- none"]
    lines += ["", "## Sentences you may not publish", ""]
    lines += [f"- ~~{r['sentence']}~~ — {r['why']}" for r in decision["refused_sentences"]]
    lines += ["", "## Pass rate per stratum (every solver, controls included)", ""]
    lines.append(_table([[r.solver, r.role, r.split, r.stratum, r.n, r.passes, r.pass_rate, r.ci_low, r.ci_high,
                          r.timeout_rate, r.infra_rate, r.excluded_rate] for r in strata.itertuples()],
                        ["solver", "role", "split", "stratum", "n", "passes", "rate", "ci_low", "ci_high",
                         "timeouts", "infra", "excluded"]))
    c = decision["comparison"]
    lines += ["", f"## Paired comparison: {c['candidate']} vs {c['baseline']} ({c['split']})", ""]
    if "delta" in c:
        lines.append(_table([[c["matched_tasks"], c["delta"], c["ci_low"], c["ci_high"], c["method"],
                              c["bootstrap_ci"][0], c["bootstrap_ci"][1], c["mcnemar_p"], c["wins"], c["losses"],
                              c["verdict_label"]]],
                            ["n", "delta", "ci_low", "ci_high", "method", "boot_low", "boot_high", "mcnemar_p",
                             "wins", "losses", "verdict"]))
    else:
        lines.append(c.get("note", ""))
    if c.get("interval_note"):
        lines += ["", f"Note: {c['interval_note']}."]
    if c.get("stratum_deltas"):
        lines += ["", "Per stratum (matched tasks):", ""]
        lines.append(_table([[x["stratum"], x["n"], x["candidate_rate"], x["baseline_rate"], x["delta"]]
                             for x in c["stratum_deltas"]], ["stratum", "n", "candidate", "baseline", "delta"]))
    if c.get("exclusion_note"):
        lines += ["", c["exclusion_note"]]
    lines += ["", f"Power: the pre-registered MDE {c['power']['mde']} needs {c['power']['required_n_miller']} tasks "
                  f"(Miller Eq. 9; Connor: {c['power']['required_n_connor']}).", ""]
    if decision.get("dummy_deltas"):
        lines += ["## The candidate against the do-nothing controls", ""]
        lines.append(_table([[x["stratum"], x["n"], x["candidate_rate"], x["empty_diff_rate"], x["delta_vs_empty_diff"],
                              x["stub_rate"], x["delta_vs_stub"]] for x in decision["dummy_deltas"]],
                            ["stratum", "n", "candidate", "empty diff", "delta", "stub", "delta"]))
        lines.append("")
    lines += ["## Humans beside agents", ""]
    lines.append(_table([[r["solver"], r["role"], r["tasks"], r["hidden_pass_rate"], r["median_time_to_green_s"],
                          r["steers"], r["timeouts"]] for r in decision.get("roles", [])],
                        ["solver", "role", "tasks", "hidden pass rate", "median time-to-green (s)", "steers",
                         "timeouts"]))
    lines += ["", "## Tokens and cost per passing task", ""]
    lines.append(_table([[r["solver"], r["stratum"], r["passes"],
                          r["tokens_per_pass"] if r["tokens_per_pass"] is not None else
                          ("incomplete" if r.get("tokens_status", "complete") != "complete" else None),
                          r["cost_per_pass_usd"], r.get("tokens_status")]
                         for r in decision.get("cost_per_pass", [])],
                        ["solver", "stratum", "passes", "tokens / pass", "cost / pass (USD)", "tokens"]))
    if decision.get("pass_at_k"):
        lines += ["", "## pass@k and pass^k", ""]
        lines.append(_table([[solver, k, a, h] for solver, t in decision["pass_at_k"].items()
                             for k, a, h in zip(t["k"], t["pass_at_k"], t["pass_hat_k"])],
                            ["solver", "k", "pass@k", "pass^k"]))
    if decision.get("public_minus_holdout"):
        p = decision["public_minus_holdout"]
        lines += ["", f"Public minus holdout: {p['delta']} (public {p['public_rate']}, holdout {p['holdout_rate']}).", ""]
    lines.append("")
    lines += ["## Tasks", ""]
    lines.append(_table([[t.task_id, t.stratum, t.split, t.oracle_ok, t.weak_test, t.flaky, t.leak_suspect,
                          t.task_digest[:12]] for t in tasks.itertuples()],
                        ["task", "stratum", "split", "oracle_ok", "weak_test", "flaky", "leak", "digest"]))
    lines += ["", "## Card", "", "```json", canonical_json(card), "```", ""]
    return "\n".join(lines)


def point_latest(latest: Path, exp_dir: Path) -> None:
    """Atomically point ``results/latest`` at the experiment folder (relative symlink)."""
    latest = Path(latest)
    target = os.path.relpath(exp_dir, latest.parent)
    tmp = latest.with_name(".latest.tmp")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(target, tmp)
    os.replace(tmp, latest)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.gate", description=__doc__.splitlines()[0])
    ap.add_argument("--experiment-dir", type=Path, required=True)
    ap.add_argument("--split", type=Path, required=True)
    ap.add_argument("--pack-hash", type=Path, required=True)
    ap.add_argument("--latest", type=Path)
    ap.add_argument("--ledger", type=Path, help="the pack's ledger.jsonl (holdout scorings are checked and appended)")
    args = ap.parse_args(argv)
    try:
        decision, card, report = decide(args.experiment_dir, args.split, args.pack_hash, args.ledger)
    except SealbenchError as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 1
    write_json(args.experiment_dir / "card.json", card)
    atomic_write_text(args.experiment_dir / "report.md", report)
    entry = decision.pop("ledger_entry", None)
    if args.ledger is not None and entry is not None:
        try:
            prior = read_ledger(args.ledger)
        except ValueError:
            prior = None  # a damaged ledger is refused (LEDGER_UNREADABLE) and never appended to
        if prior is not None:  # run-specific (a time, a path): beside decision.json, not in it
            write_json(args.experiment_dir / LEDGER_CITATION, {"path": os.path.realpath(args.ledger),
                                                               "line": append_ledger(args.ledger, entry, prior)})
    write_json(args.experiment_dir / "decision.json", decision)
    write_report(args.experiment_dir)  # the HTML report, from the files just written
    if args.latest:  # last: results/latest only ever points at a complete experiment
        point_latest(args.latest, args.experiment_dir)
    state = "PUBLISHABLE" if decision["publishable"] else "NOT PUBLISHABLE"
    print(f"gate: headline {state}; headline={decision['headline']}; reasons={[r['code'] for r in decision['reasons']]}; "
          f"comparison: {decision['comparison_summary']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
