"""The ``sealbench`` command: what users run outside Snakemake.

    sealbench validate [--config config/config.yaml]   check config + pack, no work done
    sealbench hash PACK                                 task digests and the pack digest
    sealbench leak-check PACK                           the denylist check (exit 1 on a suspect)
    sealbench split PACK --seed N [--holdout-frac F] | --extend   freeze the split once; --extend adds new tasks
    sealbench show [results/latest]                     the decision and the strata table
    sealbench list [results]                            every experiment, newest first (results/index.html)
    sealbench check [results/latest]                    exit 0 only if the decision is publishable
    sealbench progress [--config F] [--results DIR]     current outputs per stage (stale ones named)
    sealbench try AGENT TASK [--epochs N] [--holdout]   one sealed attempt on one task, scored

    sealbench session start TASK --role human --who NAME  a person gets the agent's workspace and clock
    sealbench session check                             run the visible tests (recorded as an attempt)
    sealbench session steer "TEXT"                      record help the person received
    sealbench session submit                            stop the clock; write run.json + patch.diff
    sealbench session status                            elapsed/remaining time and attempts so far
    sealbench session shell [-c CMD]                    the sealed shell: the workspace in the agents' sandbox

    sealbench predictions import FILE --pack PACK [--out DIR] [--solver NAME]
                                                        score a SWE-bench predictions JSONL on a pack
    sealbench predictions export --results results --solver NAME --out FILE
                                                        a solver's epoch-1 patches as predictions JSONL
    sealbench pack mutate SOURCE [--out PACK] [--max-tasks N] [--seed S]
                                                        a private pack of mutants of a project (docs/packs.md)
    sealbench pack import-swebench INSTANCES.jsonl --repos DIR [--out PACK] [--requirements REPO=FILE]
                                                        a verified pack from SWE-bench-style instances

The pipeline itself is ``snakemake --cores 4 gate``.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent.clients import expand_config
from ..core import paths, project, results_index
from ..core.config_sources import add_config_args, config_of
from ..core.configuration import agents_to_run
from ..core.core import SealbenchError, read_json
from ..core.refusals import pooled_withheld_by, stratum_counts
from . import session_cli

#: The width of a console that is not a terminal (piped, redirected): wide enough that no id is
#: cut short and no sentence is wrapped (rich's default there is 80 columns).
PIPED_WIDTH = 100_000


def _console():
    """A rich console: the terminal's width on a terminal, else :data:`PIPED_WIDTH` (whatever
    ``COLUMNS`` says: a pipe has no columns)."""
    from rich.console import Console

    return Console() if sys.stdout.isatty() else Console(width=PIPED_WIDTH)


#: The test level and power the gate plans with (stats defaults).
ALPHA, POWER = 0.05, 0.8


def power_sentence(n: int, split_name: str, mde: float, psi: float) -> str:
    """What difference ``n`` scored tasks can detect, and how many the pre-registered MDE needs."""
    from ..stats import power

    need = power.required_n_miller(mde, psi, ALPHA, POWER)[1]
    head = (f"{n} {split_name} tasks detect Δ ≈ {power.observed_mde(n, psi, ALPHA, POWER):.2f}" if n > 0
            else f"no {split_name} tasks: no difference can be detected")
    text = f"{head} (ψ {psi:g}, α {ALPHA:g}, power {POWER:g}); the pre-registered MDE {mde:g} needs {need}."
    if 0 < n < need:
        text += " With fewer tasks than that, the gate names no winner (UNDERPOWERED)."
    return text


def _identity_lines(name: str, ident: dict, first: int = 5) -> list[str]:
    files = list(ident.get("files") or {})
    n = f"{len(files)} file" + ("" if len(files) == 1 else "s")
    head = f"{name} {ident['fingerprint']} (lineage {ident.get('lineage', name)}): covers {n}"
    lines = [head + (":" if files else " (only its command, env and paths as text)")]
    lines += [f"    {f}" for f in files[:first]]
    if len(files) > first:
        lines.append(f"    … and {len(files) - first} more (experiment.json: agent_identity.{name}.files)")
    for s in ident.get("skipped") or []:
        lines.append(f"    not covered: {s['token']} ({s['reason']})")
    return lines


def _decoys_line(plan, per_task: int) -> str:
    """What ``validate`` says of decoys before any run: the tasks none can be made for, named."""
    from ..scoring.decoys import twinnable

    if per_task <= 0:
        return "decoys: decoys_per_task is 0: no task will carry decoys, and the gate refuses a headline (DECOYS_NONE)"
    none = sorted(tid for tid, t in plan.tasks.items() if twinnable(t.dir) == 0)
    line = (f"decoys: {per_task} per task pre-registered; {len(plan.tasks) - len(none)} of {len(plan.tasks)} tasks "
            "have hidden-only tests a decoy can twin (which hold is known after run_dummy: controls.json decoys)")
    if none:
        line += (f"; none can be made for {', '.join(none[:10])}{' …' if len(none) > 10 else ''} (no hidden test the "
                 "agent did not also see has an expectation or an input a decoy can change without what the agent "
                 "is shown giving it away)")
    return line


def cmd_validate(args: argparse.Namespace) -> int:
    from ..provenance.identity import agent_identity
    from ..stages import hash_pack, split

    cfg = expand_config(config_of(args), args.config_where)
    plan = hash_pack.plan_pack(Path(cfg["pack"]), cfg["strata"])
    strata_of = {tid: t.stratum for tid, t in plan.tasks.items()}
    manifest = split.check(plan.pack, strata_of, cfg["seed"], cfg["holdout_frac"])  # never written here
    frozen = (plan.pack / split.MANIFEST).exists()
    print(f"{args.config_where}: valid. pack {plan.pack}: {len(plan.tasks)} tasks, digest {plan.pack_digest}")
    print(f"split: {'frozen' if frozen else 'not yet written'}; tune={len(manifest['tune'])} holdout={len(manifest['holdout'])}")
    scored = cfg["score_split"]
    print("power: " + power_sentence(len(manifest[scored]), scored, cfg["mde"], cfg["planning_discordance"]))
    print(_decoys_line(plan, cfg["decoys_per_task"]))
    from ..isolation.sandbox import bwrap_problem
    from .preflight import foreseeable_refusals, preflight_lines

    problem = bwrap_problem() if cfg["sandbox"] == "auto" else None
    from .preflight import holdout_ledgers, holdout_outlook

    identities = {name: agent_identity(name, spec) for name, spec in cfg["agents"].items()}
    foreseen = foreseeable_refusals(cfg, list(manifest[scored]), strata_of, problem)
    outlook = holdout_outlook(cfg, plan.pack_digest, plan.denylist_digest, plan.task_digests, manifest, identities,
                              holdout_ledgers(plan.pack, Path(paths.RESULTS), manifest))
    foreseen += outlook.refusals
    for line in preflight_lines(foreseen, scored):
        print(line)
    if outlook.refusals:  # the run's start quotes these lines and stops (preflight.start_check)
        print("  a run of this config stops before its first job on what the holdout's ledger decides "
              "(--config run_anyway=true at the end of the command runs it anyway)")
    if outlook.budget:
        print(outlook.budget)
    print("agents (fingerprint and what it covers, seen from this working directory):")
    for name, _spec in sorted(cfg["agents"].items()):
        for line in _identity_lines(name, identities[name]):
            print("  " + line)
    # the same check as the pipeline's start (agent_probe.start_check): an agent that cannot start stops it
    from ..agent.agent_probe import check_agents

    print("agents' start check (each first command, in the sandbox a run gets; the agent is not run):")
    probes = check_agents(cfg["agents"], cfg["sandbox"], Path.cwd(), Path(cfg["pack"]), Path(paths.RESULTS),
                          cfg["limits"])
    running = set(agents_to_run(cfg))
    for probe in probes:
        print("  " + probe.line() + ("" if probe.agent in running else " [defined, not run by this config]"))
    bad = [p.agent for p in probes if not p.ok and p.agent in running]
    if bad:
        print(f"sealbench: {', '.join(bad)} cannot start: fix {'their commands' if len(bad) > 1 else 'its command'}; "
              "the pipeline refuses to start until every agent passes this check", file=sys.stderr)
        return 1
    return 0


def cmd_hash(args: argparse.Namespace) -> int:
    from rich.table import Table

    from ..stages import hash_pack

    plan = hash_pack.plan_pack(Path(args.pack))
    table = Table(title=f"pack {args.pack}")
    for col in ("task", "stratum", "digest"):
        table.add_column(col)
    for tid in sorted(plan.tasks):
        table.add_row(tid, plan.tasks[tid].stratum, plan.task_digests[tid])
    _console().print(table)
    print(f"denylist {plan.denylist_digest}")
    print(f"PACK {plan.pack_digest}")
    return 0


def cmd_leak(args: argparse.Namespace) -> int:
    from ..stages import leak_check

    return leak_check.main(["--pack", str(args.pack), "--denylist", str(Path(args.pack) / "denylist.txt")])


def cmd_split(args: argparse.Namespace) -> int:
    from ..stages import split

    argv = ["--pack", str(args.pack)] + (["--seed", str(args.seed)] if args.seed is not None else []) \
        + (["--holdout-frac", str(args.holdout_frac)] if args.holdout_frac is not None else [])
    return split.main(argv + (["--extend"] if args.extend else []))


def _decision(path: Path) -> dict:
    path = Path(path)
    f = path / "decision.json" if path.is_dir() else path
    if not f.exists():
        raise SealbenchError(f"{f}: no decision here; run `snakemake --cores 4 gate` first")
    return read_json(f)


def verdict_text(d: dict) -> str:
    """What the decision allows, in words: a publishable headline with its number, a publishable
    decision without a pooled number (per stratum only, the notes that withheld it and the
    candidate's passes per stratum), or no headline and the refusal codes. Never "headline None"."""
    if not d.get("publishable"):
        codes = ", ".join(str(r.get("code")) for r in d.get("reasons") or [])
        return "NOT PUBLISHABLE; no headline" + (f" ({codes})" if codes else "")
    if d.get("headline") is None:
        codes = ", ".join(pooled_withheld_by(d))
        counts = stratum_counts(d)
        return ("PUBLISHABLE per stratum; no pooled headline" + (f" ({codes})" if codes else "")
                + (f": {counts}" if counts else ""))
    n, passes = d.get("n"), d.get("passes")
    return f"PUBLISHABLE; headline {d['headline']}" + (f" ({passes:g}/{n} tasks)" if isinstance(n, int)
                                                      and isinstance(passes, (int, float)) else "")


def cmd_show(args: argparse.Namespace) -> int:
    """The decision: verdict, reasons and notes, each agent's (and person's) most common failure
    on the scored split, the candidate's strata, the comparison, the allowed sentences and
    the agents' identities. Text from the decision is printed as text, never as markup."""
    from rich.markup import escape
    from rich.table import Table

    from ..report.report_html import runs_beside, show_lines

    d = _decision(args.results)
    con = _console()
    style = "green" if d["publishable"] else "red"
    con.print(f"experiment {escape(str(d['experiment']))}: [{style}]{escape(verdict_text(d))}[/{style}] "
              f"({escape(str(d['headline_metric']))})")
    for line in shown_lines(Path(args.results)):  # whose experiment this is, and one started since
        con.print("  " + line, markup=False, highlight=False, soft_wrap=True)
    for r in d["reasons"]:
        con.print(f"  [red]{escape(r['code'])}[/red] {escape(r['sentence'])}")
    for r in d.get("notes", []):
        con.print(f"  [yellow]{escape(r['code'])}[/yellow] {escape(r['sentence'])}")
    # decision.json's dominant_failures, or (an older decision) from tables/runs.parquet beside it
    split, failures = (d.get("comparison") or {}).get("split"), d.get("dominant_failures")
    if failures is None and split is not None and (runs := runs_beside(Path(args.results))) is not None:
        from ..report.summaries import dominant_failures

        failures = dominant_failures(runs, split)
    if failures:
        con.print(f"Most common failure per solver on the {split} split:", markup=False, highlight=False)
        for f in failures:
            con.print(f"  {f['sentence']}", markup=False, highlight=False, soft_wrap=True)
    t = Table(title="candidate per stratum")
    for col in ("stratum", "n", "passes", "rate", "95% interval", "timeouts"):
        t.add_column(col)
    for p in d["per_stratum"]:
        ci = "—" if p["ci_low"] is None else f"[{p['ci_low']:.2f}, {p['ci_high']:.2f}]"
        rate = "—" if p["pass_rate"] is None else f"{p['pass_rate']:.2f}"
        tr = "—" if p["timeout_rate"] is None else f"{p['timeout_rate']:.2f}"
        t.add_row(p["stratum"], str(p["n"]), f"{p['passes']:g}", rate, ci, tr)
    con.print(t)
    c = d["comparison"]
    if "delta" in c:
        con.print(f"{c['candidate']} - {c['baseline']}: delta {c['delta']:+.3f} "
                  f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}] ({c['method']}, n={c['matched_tasks']}): {c['verdict_label']}")
    for line in show_lines(d, Path(args.results)):  # the tasks won and lost against the baseline
        con.print(line, markup=False, highlight=False, soft_wrap=True)
    con.print("May publish:" if d["allowed_sentences"] else "May publish: nothing.")
    for s in d["allowed_sentences"]:
        con.print(f"  - {s}")
    _show_identities(con, Path(args.results))
    return 0


def _whose(row: dict) -> str:
    """An experiment's config in a few words (a row of results_index)."""
    cand = row["candidate"] + (f" ({row['candidate_version']})" if row.get("candidate_version") else "")
    base = row["baseline"] + (f" ({row['baseline_version']})" if row.get("baseline_version") else "")
    return f"card {row['card']}, candidate {cand}, baseline {base}, pack {row['pack']}, scored {row['scored']}"


def shown_lines(results: Path) -> list[str]:
    """Which experiment `sealbench show` shows (through which link), whose config it is, and any
    experiment recorded since that has no decision yet: during a run of another config,
    results/latest still points at the last decided experiment, and show says so instead of
    silently showing it."""
    results = Path(results)
    exp_dir = (results if results.is_dir() else results.parent).resolve()
    row = results_index.experiment_row(exp_dir)
    through = f" (through {results})" if results.is_symlink() or results.resolve() != exp_dir else ""
    out = [f"shows experiment {exp_dir.name}{through}, decided {row['date']} UTC: {_whose(row)}"]
    decided = exp_dir / "decision.json"
    if exp_dir.parent.name != "experiments" or not decided.is_file():
        return out
    since = decided.stat().st_mtime
    for other in sorted(exp_dir.parent.iterdir()):
        record = other / "experiment.json"
        if (other == exp_dir or not record.is_file() or (other / "decision.json").exists()
                or record.stat().st_mtime <= since):
            continue
        o = results_index.experiment_row(other)
        out.append(f"experiment {other.name} ({_whose(o)}), recorded {o['date']} UTC, has no decision yet: a run of "
                   f"its config may be under way; this shows experiment {exp_dir.name} until that run's gate "
                   "ends (then results/latest points at it)")
    return out


def _show_identities(con, results: Path) -> None:
    """Each agent's fingerprint and the files it covered, from the experiment beside the decision."""
    f = (results if results.is_dir() else results.parent) / "experiment.json"
    exp = read_json(f) if f.exists() else {}
    idents = exp.get("agent_identity")
    if not idents:
        fps = ", ".join(f"{a} {fp}" for a, fp in sorted((exp.get("agent_fingerprints") or {}).items()))
        con.print(f"Agent identities: not recorded in this experiment{' (fingerprints: ' + fps + ')' if fps else ''}.",
                  markup=False, highlight=False, soft_wrap=True)
        return
    con.print("Agent identities (fingerprint and the files it covers):")
    for name, ident in sorted(idents.items()):
        for line in _identity_lines(name, ident):
            con.print("  " + line, markup=False, highlight=False, soft_wrap=True)


def cmd_check(args: argparse.Namespace) -> int:
    d = _decision(args.results)
    if d["publishable"]:
        print(f"publishable: headline {d['headline']}" if d.get("headline") is not None
              else "publishable per stratum only: " + verdict_text(d).split("; ", 1)[1])
        return 0
    print("not publishable: " + "; ".join(f"{r['code']}: {r['sentence']}" for r in d["reasons"]), file=sys.stderr)
    return 1


def config_differences(exp: dict, cfg: dict, pack_digest: str, fps: dict) -> list[str]:
    """What of an experiment record (experiment.json) is not this config's: its pack (digest),
    its agents (fingerprints) or its settings (the config the experiment id covers:
    experiment.config_for_id)."""
    import json

    from ..core.core import canonical_json
    from .experiment import config_for_id

    mine = config_for_id(cfg)
    out = []
    if exp.get("pack_digest") != pack_digest:
        out.append("pack")
    if exp.get("agent_fingerprints") != fps:
        out.append("agents")
    if canonical_json(exp.get("config")) != canonical_json(json.loads(json.dumps(mine, default=str))):
        out.append("settings")
    return out


def latest_sentence(cfg: dict, results: Path, pack_digest: str, fps: dict, exp_id: str | None = None) -> str:
    """The progress line on the decision: is results/latest this config's experiment? (A run of
    this config, even one with nothing to do, points it there; planning does not.) ``exp_id``:
    the experiment the plan makes now, when known: a decision of this config made with what
    has moved since (another toolchain, sealbench's code) is named as such."""
    latest = Path(paths.latest(str(results)))
    f = latest / "decision.json"
    if not f.exists():
        return f"decision: not yet ({f})"
    exp_file = latest / "experiment.json"
    try:
        exp = read_json(exp_file)
    except (OSError, SealbenchError):
        return f"decision: {f} is written, but {exp_file} cannot be read: whose experiment it is is unknown"
    name = latest.resolve().name
    differ = config_differences(exp, cfg, pack_digest, fps)
    if not differ and exp_id and exp_id != name:
        return (f"decision: results/latest is experiment {name}, of this config's pack, agents and settings but made "
                f"with what has moved since (the current experiment is {exp_id}): the next run decides again")
    if not differ:
        return f"decision: written ({f}): experiment {name}, this config's (its pack, agents and settings)"
    return (f"decision: results/latest is experiment {name}, not this config's (its {', '.join(differ)} differ); "
            "a run of this config (`snakemake --cores N gate`, also when nothing is to be done) points it at "
            "this config's experiment")


@dataclass
class Progress:
    """What ``sealbench progress`` reads: the plan's experiment record, its per-task steps
    surveyed (sealbench.app.staleness: current, stale, missing) and the store that names what moved."""

    record: dict
    survey: Any
    store: dict
    batched: bool
    expected: dict


def progress_of(cfg: dict, results: Path, workdir: Path | None = None) -> Progress:
    """Plan ``cfg`` as a run would (reading, never writing, the caches under ``results``) and
    survey its per-task outputs: an output counts as done only when it is current (made with the
    arguments, code and toolchain the plan has now: Snakemake's record of the job in
    ``WORKDIR/.snakemake``, a batch's marker)."""
    from ..core.core import HashCache
    from ..isolation.toolchain import ToolchainCache
    from ..provenance.identity import AGENT_CACHE_NAME
    from . import experiment as E
    from . import staleness

    res = str(results)
    state = Path(paths.state_dir(res))
    planned = E.plan_pack(cfg, state)
    identities = E.agent_identities(cfg, Path.cwd(), HashCache(state / AGENT_CACHE_NAME))
    record = E.experiment_record(cfg, planned, identities, ToolchainCache(state / "toolchain-cache.json"),
                                 E.human_sessions(planned.pack.task_digests, cfg["humans"], res))
    c = E.step_config(cfg, record, res)
    agents = E.scheduled_agents(cfg, identities)
    epochs = list(range(1, int(cfg["epochs"]) + 1))
    batched = int(cfg.get("batch_size") or 1) > 1
    envs = {t: E.task_env(planned.pack, t) for t in planned.pack.task_digests}
    steps_ = staleness.planned_steps(c, planned.pack.task_digests, agents, epochs, envs, batched)
    built = staleness.env_digests(envs.values(), res)
    survey = staleness.survey(steps_, staleness.metadata_reader(workdir or Path.cwd()), batched, built)
    expected = dict(Counter(p.stage for p in steps_))
    store = staleness.including(staleness.with_experiments(staleness.load_store(state), res), record,
                                staleness.step_toolchains(c, [e for e in envs.values() if e]), staleness.STAGE_MODULES)
    return Progress(record, survey, store, batched, expected)


def progress_counts(cfg: dict, results: Path, progress: Progress | None = None) -> list[tuple[str, int, int, int]]:
    """(stage, done, stale, expected) for the current pack and config: done counts only outputs
    that are current; stale ones (made with another toolchain, code or settings) the next run
    makes again."""
    p = progress or progress_of(cfg, results)
    return [(stage, p.survey.current[stage], p.survey.stale[stage], p.expected.get(stage, 0))
            for stage in ("hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score")]


def cmd_progress(args: argparse.Namespace) -> int:
    from rich.progress_bar import ProgressBar
    from rich.table import Table

    from . import staleness

    cfg = expand_config(config_of(args), args.config_where)
    p = progress_of(cfg, args.results)
    rows = progress_counts(cfg, args.results, p)
    table = Table(title=f"sealbench progress ({cfg['pack']})")
    for col in ("stage", "done", "stale", "of", ""):
        table.add_column(col)
    for stage, done, stale, total in rows:
        table.add_row(stage, str(done), str(stale) if stale else "", str(total),
                      ProgressBar(total=max(total, 1), completed=done, width=30))
    _console().print(table)
    n = p.survey.n_stale
    if n:
        head = (f"stale: {n} output{'s' if n > 1 else ''} ({staleness.stage_counts(p.survey.stale)}) were made with what has "
                "moved since and count as not done; the next run makes them again:")
        for line in staleness.moved_lines(p.survey, p.store, p.batched, head=head):
            print(line)
    print(latest_sentence(cfg, args.results, p.record["pack_digest"], p.record["agent_fingerprints"],
                          p.record["exp_id"]))
    return 0


def cmd_try(args: argparse.Namespace) -> int:
    from . import try_task

    tries = try_task.try_task(args.agent, args.task, expand_config(config_of(args), args.config_where), args.results, args.epochs, args.holdout)
    for t in tries:
        print(try_task.describe(t))
    print(try_task.summary(tries))
    return 0


def _add_try(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("try", help="one sealed attempt of one agent on one (tune) task, scored; outside the DAG")
    p.add_argument("agent", help="an agent under 'agents' in the config")
    p.add_argument("task", help="a task id of the pack (a tune task unless --holdout)")
    p.add_argument("--epochs", type=int, default=1, help="attempts to run (default 1)")
    p.add_argument("--holdout", action="store_true",
                   help="allow a holdout task: the look is written to the pack's ledger")
    add_config_args(p)
    p.add_argument("--results", type=Path, default=Path("results"))
    p.set_defaults(func=cmd_try)


def _add_predictions(sub: argparse._SubParsersAction) -> None:
    from ..builders import predictions

    predictions.add_parsers(sub)


def _add_pack(sub: argparse._SubParsersAction) -> None:
    from ..builders import pack_mutate, pack_swebench

    p = sub.add_parser("pack", help="build a pack from real code (docs/packs.md)")
    pack_sub = p.add_subparsers(dest="pack_cmd", required=True)
    pack_mutate.add_parser(pack_sub)
    pack_swebench.add_parser(pack_sub)


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``sealbench``, every subcommand and option (tests/pipeline/test_doc_commands.py
    checks the commands the docs show against it)."""
    ap = argparse.ArgumentParser(prog="sealbench", description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("validate", help="check the config and the pack")
    add_config_args(p)
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("hash", help="task digests and the pack digest")
    p.add_argument("pack", type=Path)
    p.set_defaults(func=cmd_hash)
    p = sub.add_parser("leak-check", help="the denylist check")
    p.add_argument("pack", type=Path)
    p.set_defaults(func=cmd_leak)
    p = sub.add_parser("split", help="freeze the tune/holdout split once")
    p.add_argument("pack", type=Path)
    p.add_argument("--seed", type=int, help="required to freeze; --extend uses the frozen split's")
    p.add_argument("--holdout-frac", type=float, help="default 0.4 to freeze; --extend uses the frozen split's")
    p.add_argument("--extend", action="store_true", help="add the pack's new tasks as the next slice")
    p.set_defaults(func=cmd_split)
    for name, func, helptext in (("show", cmd_show, "print the decision"),
                                 ("check", cmd_check, "exit 0 only if publishable")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("results", type=Path, nargs="?", default=Path("results/latest"))
        p.set_defaults(func=func)
    session_cli.add_parsers(sub)
    results_index.add_parser(sub)
    p = sub.add_parser("progress", help="counts per stage of the current run (run it beside snakemake)")
    add_config_args(p)
    p.add_argument("--results", type=Path, default=Path("results"))
    p.set_defaults(func=cmd_progress)
    _add_try(sub)
    _add_predictions(sub)
    _add_pack(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    inside = session_cli.forwarded(list(sys.argv[1:] if argv is None else argv))  # in a sealed session shell
    if inside is not None:
        return inside
    args = ap.parse_args(argv)
    try:
        project.enter(args)  # from a folder inside the project or a session's workspace
        return int(args.func(args))
    except SealbenchError as exc:
        print(f"sealbench: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
