"""card.json: the fields that make a score citeable (dataset, oracle, metric family, envelope),
the isolation and contamination posture, and the claim with the solvers it is about.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..isolation import limits as _limits
from ..provenance.ledger import preregistration
from ..provenance.slices import current_slice, records


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
    card = _card(exp, manifest, tasks, runs)
    if exp.get("environments"):
        # the task test environments the scores depend on (PACK/environment/, PACK/environments/<name>/):
        # name, digest (python + lock), installer, python, how it was built (sandbox: bwrap, or none:
        # unsandboxed), the whole lock and the tasks using each
        card["environments"] = [{k: e.get(k) for k in ("name", "digest", "spec_digest", "installer", "python",
                                                        "sandbox", "requirements", "tasks", "lock")}
                                for e in exp["environments"]]
    return card


def _decoy_coverage(cfg: Mapping, tasks) -> dict:
    """The decoys the hidden suites carry: pre-registered per task, and the coverage reached
    (``tasks_known``: tasks whose count is known; a table not made by stratify has none)."""
    known = tasks[tasks.decoys.notna()] if "decoys" in tasks else tasks.iloc[0:0]
    inputs = known["decoys_input"].fillna(0) if "decoys_input" in known else 0
    return {"per_task": cfg.get("decoys_per_task"), "tasks": int(len(tasks)), "tasks_known": int(len(known)),
            "tasks_covered": int((known.decoys > 0).sum()), "decoys": int(known.decoys.sum()),
            # a task whose decoys all change an input fails a forger there but cannot refuse it (tamper)
            "tasks_with_value_decoys": int((known.decoys > inputs).sum()),
            "uncovered": sorted(str(t) for t in known.task_id[known.decoys == 0])}


def _card(exp: Mapping, manifest: Mapping, tasks, runs) -> dict:
    cfg = exp["config_full"]
    deny_lines = exp["denylist_lines"]
    return {
        "name": f"sealbench-{exp['exp_id']}",
        "dataset": {
            "pack_digest": exp["pack_digest"], "denylist_digest": exp["denylist_digest"],
            "split_manifest_digest": exp["split_manifest_digest"], "n_tasks": int(len(tasks)),
            "strata": {s: int((tasks.stratum == s).sum()) for s in cfg["strata"]},
            "split": {"seed": manifest["seed"], "holdout_frac": manifest["holdout_frac"],
                      "tune": len(manifest["tune"]), "holdout": len(manifest["holdout"]),
                      # the slice of a grown pack (split --extend): numbers compare only within one slice
                      "slice": current_slice(manifest),
                      "slices": [{k: r[k] for k in ("slice", "added", "date", "pack_digest")}
                                 for r in records(manifest)]},
            "score_split": cfg["score_split"],
        },
        "oracle": {
            "scoring": "patch applied to a pristine repo/ without its changes to protected paths (the test files, "
                       "the support files the tests import, pytest configuration, conftest.py, interpreter start-up "
                       "hooks, .pth files; a patch touching one is scored tamper); the test files restored from the "
                       "sealed pack, read-only; each command run as plain pytest with a report plugin, the hidden "
                       "suite carrying decoy tests (copies of tests that find the bug with one expectation changed, "
                       "which correct code fails; a decoy that passes is tamper); pass = every real visible and "
                       "hidden test passed and every decoy failed, the gold patch's collection, no collection error, "
                       "not every test skipped, and at least as many hidden tests passed as the task's "
                       "failing_tests and as the gold patch ran",
            # the decoys the hidden suites carry: pre-registered per task, and the coverage they reached
            "decoys": _decoy_coverage(cfg, tasks),
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
            "levels": sorted({str(x) for x in runs.loc[runs.role == "agent", "isolation"].dropna().unique()}),
            # copy-on-write overlays over the sealed task, or copies (where overlays cannot be mounted)
            "workspaces": {role: sorted({str(x) for x in runs.loc[runs.role == role, "workspace"].dropna().unique()})
                           for role in ("agent", "control") if "workspace" in runs},
            "sandbox": "bubblewrap: allowlisted read-only system and interpreter, workspace and SEALBENCH_OUT "
                       "writable, private /tmp, unprivileged uid without capabilities or user namespaces, PID "
                       "namespace, no network; pack, results/, home, project and scratch folders not mounted",
            # resource limits of every sandboxed command; mechanisms as found where the gate runs
            "limits": {**_limits.Limits.of(cfg.get("limits")).to_dict(), "mechanisms": _limits.limit_mechanisms()},
        },
        # what the scores depend on besides the code: the interpreter and the covered packages
        # (sealbench.isolation.toolchain: what the per-task stages, agents and tasks import, what those require)
        "toolchain": {"digest": exp["toolchain_digest"],
                      **{k: exp["toolchain"].get(k) for k in ("python", "implementation", "packages",
                                                               "startup_files", "covers")}},
        # what the tables and the decision are made with (pandas, scipy, ...): in the experiment id, of no
        # per-task job (sealbench.isolation.toolchain.analysis_toolchain)
        "analysis_toolchain": {"digest": exp.get("analysis_toolchain_digest"),
                               **{k: (exp.get("analysis_toolchain") or {}).get(k) for k in ("packages", "covers")}},
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
            # a client preset (agent.clients): which client, the version installed, the model asked for
            **({"client": {"name": spec["client"], "version": spec.get("version"), "model": spec.get("model")}}
               if spec.get("client") else {}),
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
