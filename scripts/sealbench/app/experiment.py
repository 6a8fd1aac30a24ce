"""The plan of a run and its experiment: what ``workflow/rules/common.smk`` computes before any
job, as plain functions of the config and the paths they need.

* :func:`plan_pack`: the pack validated and digested, and its split checked (planning writes
  nothing: the hash cache is read, saved at the run's start);
* :func:`agent_identities` and :func:`scheduled_agents`: each agent the run schedules, with its
  fingerprint (:func:`sealbench.provenance.identity.agent_identity`);
* :func:`experiment_record`: everything that makes this result this result, and its id (the
  experiment folder's name): the pack and split digests, the config without the keys that only
  schedule the work (:data:`EXECUTION_ONLY_KEYS`), the code of every stage, the toolchain (what
  the per-task jobs run) and the analysis toolchain (what the tables and the decision are made
  with), the agents' fingerprints, the submitted human sessions and (only for a pack with test
  environments) the environments;
* the task environments (:func:`env_specs`, :func:`task_env`), the plan's task list
  (:func:`task_list_text`), the batches (:func:`batch_of_task`, :func:`batch_threads`) and the
  small files the ``run:`` rules write from them (experiment record, task list, batch spec).

No stage imports this module (it is the workflow's, not a job's), so changing it names no new
experiment and reruns no job.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..core import paths
from ..core.code_digests import code_digest
from ..core.configuration import agents_to_run
from ..core.core import HashCache, atomic_write_text, canonical_json, sha256_text, write_json
from ..isolation.environments import load_env, pack_requirements
from ..isolation.toolchain import ToolchainCache, analysis_toolchain, toolchain, toolchain_digest
from ..provenance.identity import agent_identity
from ..stages import hash_pack, leak_check, split, steps

#: Config keys that change how the work is scheduled (or whether it starts), not what is measured:
#: not in the experiment id.
EXECUTION_ONLY_KEYS = ("pack", "batch_size", "run_anyway")

#: The stage modules whose code (with all they import: code_digests.code_closure) the experiment id covers.
ID_STAGES = ("stages.hash_pack", "stages.leak_check", "stages.split", "stages.run_dummy", "stages.run_agent", "stages.hidden_score", "stages.stratify", "gate.gate",
             "agent.session")


class PlannedPack(NamedTuple):
    """The pack as planned: its plan (tasks, digests), each task's stratum, the split manifest."""

    pack: hash_pack.PackPlan
    strata_of: dict[str, str]
    manifest: dict[str, Any]


def plan_pack(cfg: Mapping[str, Any], state_dir: Path) -> PlannedPack:
    """Validate and digest the pack ``cfg['pack']`` (the stat cache ``state_dir/hashcache.json``
    read, not written) and check its split against ``seed`` and ``holdout_frac``. Raises
    :class:`~sealbench.core.core.SealbenchError` naming the file and the field."""
    p = hash_pack.plan_pack(Path(cfg["pack"]), cfg["strata"], Path(state_dir) / "hashcache.json",
                            write_caches=False)
    strata_of = {tid: t.stratum for tid, t in p.tasks.items()}
    manifest = split.check(p.pack, strata_of, cfg["seed"], cfg["holdout_frac"])
    return PlannedPack(p, strata_of, manifest)


def agent_identities(cfg: Mapping[str, Any], base: Path, cache: HashCache) -> dict[str, dict[str, Any]]:
    """Each scheduled agent's identity (its fingerprint and the files it covers), files resolved
    from ``base`` (the working directory) through the stat cache ``cache`` (a re-plan reads only
    what changed). Raises :class:`~sealbench.core.core.ConfigError` naming the agent's field."""
    return {name: agent_identity(name, cfg["agents"][name], base, cache) for name in agents_to_run(cfg)}


def scheduled_agents(cfg: Mapping[str, Any], identities: Mapping[str, Mapping[str, Any]]) -> dict[str, dict]:
    """The agents the run schedules (configuration.agents_to_run): each one's config entry with
    its ``fingerprint``; other entries under ``agents`` do not run."""
    return {name: dict(cfg["agents"][name], fingerprint=identities[name]["fingerprint"])
            for name in agents_to_run(cfg)}


def config_for_id(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The config the experiment id covers: without :data:`EXECUTION_ONLY_KEYS`, and with only
    the agents that run (an agent defined but not run is not this experiment)."""
    mine = {k: v for k, v in cfg.items() if k not in EXECUTION_ONLY_KEYS}
    mine["agents"] = {a: cfg["agents"][a] for a in agents_to_run(cfg)}
    return mine


def _agent_python_files(identities: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [f for ident in identities.values() for f in ident["files"] if f.endswith(".py")]


def harness_toolchain(identities: Mapping[str, Mapping[str, Any]], cache: ToolchainCache) -> dict[str, Any]:
    """The toolchain without the tasks' imports: what a task with its own environment depends on
    in sealbench's venv (the per-task stages and the agents)."""
    return toolchain(agent_files=_agent_python_files(identities), cache=cache)


def harness_toolchain_digest(identities: Mapping[str, Mapping[str, Any]], cache: ToolchainCache) -> str:
    return toolchain_digest(harness_toolchain(identities, cache))


def env_specs(pack: hash_pack.PackPlan) -> dict[str, tuple[str, str]]:
    """{spec digest: (requirements file relative to the pack, name)} of every environment a task uses."""
    return {t.env.digest: (pack_requirements(t.env, pack.pack), t.env.name) for t in pack.tasks.values() if t.env}


def task_env(pack: hash_pack.PackPlan, task: str) -> str | None:
    """The spec digest of the task's environment, or None (sealbench's own interpreter)."""
    env = pack.tasks[task].env
    return env.digest if env is not None else None


def human_sessions(task_digests: Mapping[str, str], humans: Iterable[str],
                   results: str = paths.RESULTS) -> list[tuple[str, str, str, str]]:
    """Submitted human sessions (sealbench session submit) of ``humans`` on the current task
    digests, in task order: (task, digest, who, epoch) of each epoch folder holding both
    ``run.json`` and ``patch.diff``."""
    out = []
    for t, d in sorted(task_digests.items()):
        for who in humans:
            base = Path(paths.sessions_of(t, d, who, results))
            if base.is_dir():
                for e in sorted(base.iterdir(), key=lambda d: d.name):
                    if e.name.isdigit() and (e / "run.json").exists() and (e / "patch.diff").exists():
                        out.append((t, d, who, e.name))
    return out


def experiment_record(cfg: Mapping[str, Any], planned: PlannedPack, identities: Mapping[str, Mapping[str, Any]],
                      toolchain_cache: ToolchainCache, sessions: Iterable[tuple[str, str, str, str]]) -> dict:
    """The experiment record: everything that makes this result this result, with its id
    (``exp_id``, the digest of the identity fields: the experiment folder's name)."""
    p, strata_of, manifest = planned
    # a task with its own test environment imports from it, not from sealbench's venv
    tc = toolchain(task_modules=sorted({m for tid, t in p.tasks.items() if t.env is None
                                        for m in toolchain_cache.task(t.dir, p.task_digests[tid])}),
                   agent_files=_agent_python_files(identities), cache=toolchain_cache)
    atc = analysis_toolchain(toolchain_cache)
    cfg_for_id = config_for_id(cfg)
    ident = {
        "pack_digest": p.pack_digest,
        "split_manifest_digest": split.manifest_digest(manifest),
        "config": cfg_for_id,
        # the code of every stage and of human sessions, with all they import (derived: core.code_closure)
        "code": code_digest(*ID_STAGES),
        # what the per-task jobs run (their toolchain param) and what the tables and the decision are
        # made with (pandas, scipy, ...: in the id, so an upgrade makes them again, but no task job)
        "toolchain_digest": toolchain_digest(tc),
        "analysis_toolchain_digest": toolchain_digest(atc),
        "agent_fingerprints": {a: s["fingerprint"] for a, s in scheduled_agents(cfg, identities).items()},
        "human_sessions": [list(x) for x in sessions],
    }
    envs = env_specs(p)
    if envs:  # only a pack with test environments: the bundled suite's id is as before
        ident["environments"] = {sd: name for sd, (_req, name) in sorted(envs.items())}
        htc = harness_toolchain(identities, toolchain_cache)
        ident["harness_toolchain_digest"] = toolchain_digest(htc)
    exp_id = sha256_text(canonical_json(ident))[:16]
    commands: dict[str, list[str]] = {}
    for tid, t in sorted(p.tasks.items()):
        key = f"visible: {t.meta['visible_command']} | hidden: {t.meta['hidden_command']}"
        commands.setdefault(key, []).append(tid)
    deny = leak_check.read_denylist(Path(cfg["pack"]) / "denylist.txt")
    extra = {"harness_toolchain": htc} if envs else {}
    return dict(ident, **extra, exp_id=exp_id, pack=str(cfg["pack"]), task_digests=p.task_digests,
                oracle_commands=[{"commands": k, "tasks": v} for k, v in commands.items()],
                denylist_lines=len(deny),
                denylist_digest=p.denylist_digest, strata_of=strata_of, toolchain=tc, analysis_toolchain=atc,
                config_full=dict(cfg, agents=cfg_for_id["agents"]), agent_identity=dict(identities))


def step_config(cfg: Mapping[str, Any], record: Mapping[str, Any], results: str = paths.RESULTS) -> steps.StepConfig:
    """What every per-task step of the experiment ``record`` shares (its toolchain digests, the
    denylist's, the public corpus')."""
    from ..leak.leak_corpus import corpus_info

    return steps.StepConfig.from_config(
        cfg, toolchain_digest=record["toolchain_digest"], denylist_digest=record["denylist_digest"],
        corpus_sha=str((corpus_info() or {}).get("sha256")), results=results,
        harness_toolchain_digest=record.get("harness_toolchain_digest", ""))


def write_experiment_record(record: Mapping[str, Any], exp: str, pack: hash_pack.PackPlan, out: Path, log: Path,
                            results: str = paths.RESULTS) -> None:
    """Write the record of experiment ``exp`` to ``out`` (with, for a pack with test
    environments, each environment as built under ``results``: the card names them, locks
    included) and one line to ``log``. Raises ValueError when ``exp`` is not the record's id."""
    if exp != record["exp_id"]:
        raise ValueError(f"experiment {exp} is not the current one ({record['exp_id']})")
    full = dict(record)
    envs = env_specs(pack)
    if envs:
        tasks_of: dict[str, list[str]] = {}
        for tid in sorted(pack.tasks):
            sd = task_env(pack, tid)
            if sd is not None:
                tasks_of.setdefault(sd, []).append(tid)
        full["environments"] = [dict(load_env(Path(paths.env_dir(sd, results))).card(), spec_digest=sd,
                                     requirements=envs[sd][0], tasks=tasks_of[sd])
                                for sd in sorted(envs)]
    write_json(Path(out), full)
    Path(log).write_text(f"experiment {exp}: {len(record['task_digests'])} tasks\n")


def task_list_text(task_digests: Mapping[str, str]) -> str:
    """The plan's (task, digest) list, in task order, as the file rule task_list writes
    (read back by paths.read_task_list)."""
    return "task_id\ttask_digest\n" + "".join(f"{t}\t{d}\n" for t, d in sorted(task_digests.items()))


def task_list_key(task_digests: Mapping[str, str]) -> str:
    """The task list's content address (its file is ``paths.task_list(key)``)."""
    return sha256_text(task_list_text(task_digests))[:16]


def write_task_list(key: str, task_digests: Mapping[str, str], out: Path, log: Path) -> None:
    """Write the plan's task list to ``out`` and one line to ``log``. Raises ValueError when
    ``key`` is not the current plan's."""
    if key != task_list_key(task_digests):
        raise ValueError(f"task list {key} is not the current plan's ({task_list_key(task_digests)})")
    atomic_write_text(Path(out), task_list_text(task_digests))
    Path(log).write_text(f"task list {key}: {len(task_digests)} tasks\n")


def step_for(stage: str, c: steps.StepConfig, w: Any, agents: Mapping[str, Mapping[str, Any]],
             env: str | None) -> steps.Step:
    """The step (sealbench.stages.steps, the one definition task_batch runs too) of the per-task rule
    ``stage`` for a job's wildcards ``w``: ``task`` and ``tdigest``, and the stage's own
    (leak_check: ``ddigest``; run_agent, hidden_score: ``agent``, ``fp``, ``epoch``;
    hidden_score_session: ``who``, ``epoch``); ``env``: the task's environment (:func:`task_env`).
    Raises ValueError when ``w.fp`` is not the agent's current fingerprint, or for another stage."""
    if stage == "hash_pack":
        return steps.hash_pack(c, w.task, w.tdigest)
    if stage == "leak_check":
        return steps.leak_check(c, w.task, w.tdigest, w.ddigest, record=True)
    if stage == "run_dummy":
        return steps.run_dummy(c, w.task, w.tdigest, env)
    if stage == "run_agent":
        spec = agents[w.agent]
        if spec["fingerprint"] != w.fp:
            raise ValueError(f"{w.agent}: fingerprint {w.fp} is not the current one ({spec['fingerprint']})")
        return steps.run_agent(c, w.task, w.tdigest, w.agent, spec, w.epoch, env)
    if stage == "hidden_score":
        return steps.hidden_score(c, w.task, w.tdigest, w.agent, w.fp, w.epoch, env)
    if stage == "hidden_score_session":
        return steps.hidden_score_session(c, w.task, w.tdigest, w.who, w.epoch, env)
    raise ValueError(f"no per-task step is named {stage!r}")


def save_caches(pack: hash_pack.PackPlan, *caches: HashCache | ToolchainCache) -> None:
    """Save the pack's hash caches and ``caches`` (at the run's start: planning writes nothing);
    one that cannot be written is skipped (the caches only save time)."""
    for save in (pack.save_caches, *(c.save for c in caches)):
        try:
            save()
        except OSError:
            pass


def batch_of_task(batches: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """{task: key of the batch it is a member of} (steps.batch_specs)."""
    return {m["task"]: key for key, spec in batches.items() for m in spec["tasks"]}


def batch_threads(members: int, n_batches: int, cores: int | None) -> int:
    """Members a batch runs at a time (its job's threads): on this machine (``cores``: the run's
    ``--cores``), the cores left over when every batch runs at once (steps.batch_threads) —
    ``--cores 4`` and one batch of 14 tasks: 4; two batches: 2 each; ten batches: 1 — never more
    than its members. ``cores`` None (a cluster executor, a job's own Snakemake, cores unknown):
    1. Not part of any output: the files are the same for any value."""
    return 1 if cores is None else steps.batch_threads(members, n_batches, cores)


def write_batch_spec(key: str, spec: Mapping[str, Any], out: Path, log: Path) -> None:
    """Write batch ``key``'s spec to ``out`` and one line to ``log``."""
    write_json(Path(out), spec)
    Path(log).write_text(f"batch {key}: {len(spec['tasks'])} tasks\n")
