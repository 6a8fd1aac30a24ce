"""The per-task steps, defined once: for a stage and a task, the module, its arguments, its
outputs and log, its code and toolchain digests and its resources.

The per-task rules (``workflow/rules/{hash_pack,leak_check,run_dummy,run_agent,hidden_score}.smk``)
run ``python -m sealbench.stages.<stage> <argv>`` with ``argv`` from here, and ``task_batch`` runs the
same steps in one process; so a step is the same whether it runs alone or in a batch.

The arguments hold what can change a step's result (config values, digests, paths under
results/ that the digests already name) and never where the pack is: jobs find the pack through
``$SEALBENCH_PACK`` (:func:`sealbench.core.paths.pack_root`), so a copied pack reruns nothing.
A rule's ``params`` are the argv, the code digest and the toolchain digest: Snakemake reruns a
job when one of them changes, and :func:`step_key` is the same for ``task_batch``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import paths
from ..core.code_digests import code_digest
from ..core.core import canonical_json, sha256_text

#: The stage modules a per-task step runs, in the order a task goes through them.
STAGES = ("hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score")


@dataclass(frozen=True)
class StepConfig:
    """What every step of one workflow shares: config values and digests fixed at planning."""

    oracle_runs: int
    score_timeout_s: int
    #: decoy tests per task (pre-registered; ``scoring/decoys.py``)
    decoys_per_task: int
    sandbox: str
    limits: str                  #: JSON of the config's ``limits``
    envelope: str                #: JSON of the config's ``envelope``
    stop_on_green: bool
    log_cap_bytes: int
    max_wall_s: int | None
    toolchain_digest: str
    denylist_digest: str
    corpus_sha: str              #: the public benchmark corpus leak_check reads ("" without one)
    results: str = paths.RESULTS
    #: the toolchain without the tasks' own imports (sealbench's stages and the agents): what a task
    #: with its own test environment depends on besides that environment
    harness_toolchain_digest: str = ""

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], *, toolchain_digest: str, denylist_digest: str,
                    corpus_sha: str, results: str = paths.RESULTS,
                    harness_toolchain_digest: str = "") -> StepConfig:
        return cls(oracle_runs=int(cfg["oracle_runs"]), score_timeout_s=int(cfg["score_timeout_s"]),
                   sandbox=str(cfg["sandbox"]), limits=json.dumps(cfg["limits"], sort_keys=True),
                   envelope=json.dumps(cfg["envelope"]), stop_on_green=bool(cfg["stop_on_green"]),
                   log_cap_bytes=int(cfg["log_cap_bytes"]), max_wall_s=cfg["envelope"].get("max_wall_s"),
                   toolchain_digest=toolchain_digest, denylist_digest=denylist_digest, corpus_sha=corpus_sha,
                   results=results, harness_toolchain_digest=harness_toolchain_digest,
                   decoys_per_task=int(cfg["decoys_per_task"]))


@dataclass(frozen=True)
class Step:
    """One per-task job: ``python -m sealbench.stages.<stage> <argv>``, its output to ``log``."""

    stage: str
    argv: tuple[str, ...]
    outputs: tuple[str, ...]
    log: str
    code: str                    #: digest of the sealbench code the stage runs
    toolchain: str | None        #: digest of the interpreter and packages (steps that run tests)
    mem_mb: int
    runtime_min: int
    done_dir: str = field(default="", compare=False)

    @property
    def shell_args(self) -> str:
        """``argv`` quoted for a shell command line."""
        import shlex

        return shlex.join(self.argv)

    def as_batch_step(self) -> dict[str, Any]:
        """The step as task_batch's spec holds it."""
        return {"module": self.stage, "argv": list(self.argv), "outputs": list(self.outputs), "log": self.log,
                "code": self.code, "toolchain": self.toolchain, "done_dir": self.done_dir}


#: The fields of a step that make its outputs what they are (its key digests them).
KEYED = ("module", "argv", "outputs", "code", "toolchain")


def step_key(step: Mapping[str, Any]) -> str:
    """Digest of everything that makes a step's outputs what they are (task_batch's marker name)."""
    return sha256_text(marker_text(step))[:32]


def marker_text(step: Mapping[str, Any]) -> str:
    """What task_batch writes into a step's marker: the keyed fields, so that a later plan can
    say what moved when the step's outputs are no longer current (sealbench.app.staleness)."""
    return canonical_json({k: step[k] for k in KEYED})


def _args(*words: Any) -> tuple[str, ...]:
    return tuple(str(w) for w in words)


def step_toolchain(c: StepConfig, env: str | None) -> str:
    """What a test-running step's results depend on besides its code: sealbench's toolchain for a
    task without an environment; for a task with one (``env``: its spec digest), the harness's
    toolchain without the tasks' imports and that environment — so a package installed into
    sealbench's own venv that the harness does not import reruns nothing of such a task (the
    rules add the built environment's lock digest, known once it is built)."""
    if env is None:
        return c.toolchain_digest
    return sha256_text(canonical_json({"harness": c.harness_toolchain_digest, "environment": env}))


def _env_args(c: StepConfig, env: str | None) -> tuple[str, ...]:
    return () if env is None else ("--env", paths.env_dir(env, c.results))


def hash_pack(c: StepConfig, task: str, tdigest: str) -> Step:
    """Copy and verify one task from the pack at the digest planned."""
    sealed, record = paths.sealed_dir(task, tdigest, c.results), paths.sealed_record(task, tdigest, c.results)
    return Step("hash_pack", _args("seal", "--task", task, "--digest", tdigest, "--out", sealed, "--record", record),
                (sealed, record), paths.task_log(task, tdigest, "hash_pack", c.results), code_digest("stages.hash_pack"),
                None, 500, 10, paths.done_markers(task, tdigest, c.results))


def leak_check(c: StepConfig, task: str, tdigest: str, ddigest: str | None = None, record: bool = False) -> Step:
    """The task against the pack's denylist, the public corpus and its own hidden tests. With
    ``record`` (the per-task rule) a suspect is written to the report and the job succeeds: the
    pack-level ``leak_verdict`` rule then fails naming every suspect; in a batch (no ``record``)
    a suspect fails the batch before any control or agent runs."""
    d = ddigest or c.denylist_digest
    out = paths.leak_report(task, tdigest, d, c.results)
    return Step("leak_check", _args("--task", paths.sealed_dir(task, tdigest, c.results), "--expect-denylist-digest",
                                    d, "--out", out, *(["--record"] if record else [])),
                (out,), paths.task_log(task, tdigest, f"leak-{d}", c.results),
                code_digest("stages.leak_check") + ":" + c.corpus_sha, None, 500, 10,
                paths.done_markers(task, tdigest, c.results))


def run_dummy(c: StepConfig, task: str, tdigest: str, env: str | None = None) -> Step:
    """The controls: empty diff, stub, gold patch x oracle_runs (``env``: the task's environment's
    spec digest, or None)."""
    out_dir = paths.controls_dir(task, tdigest, c.results)
    return Step("run_dummy", _args("--sealed", paths.sealed_dir(task, tdigest, c.results), "--out-dir", out_dir,
                                   "--oracle-runs", c.oracle_runs, "--decoys", c.decoys_per_task,
                                   "--timeout", c.score_timeout_s,
                                   "--sandbox", c.sandbox, "--limits", c.limits, *_env_args(c, env)),
                (paths.controls(task, tdigest, c.results),), paths.task_log(task, tdigest, "run_dummy", c.results),
                code_digest("stages.run_dummy"), step_toolchain(c, env), 1000,
                10 + c.score_timeout_s * (5 + c.oracle_runs) * 2 // 60, paths.done_markers(task, tdigest, c.results))


def agent_runtime_min(c: StepConfig) -> int:
    """Cluster runtime request of one agent attempt: its clock plus set-up."""
    return 5 + int(c.max_wall_s or 3600) // 60


def run_agent(c: StepConfig, task: str, tdigest: str, agent: str, spec: Mapping[str, Any], epoch: int | str,
              env: str | None = None) -> Step:
    """One attempt of one agent (``spec`` is its config entry with its ``fingerprint``)."""
    fp = spec["fingerprint"]
    rdir = paths.run_dir(task, tdigest, agent, fp, epoch, c.results)
    command = json.dumps({k: v for k, v in spec.items() if k != "fingerprint"})
    return Step("run_agent",
                _args("--sealed", paths.sealed_dir(task, tdigest, c.results), "--run-dir", rdir, "--agent", agent,
                      "--fingerprint", fp, "--spec", command, "--epoch", epoch, "--envelope", c.envelope,
                      "--sandbox", c.sandbox, *(["--stop-on-green"] if c.stop_on_green else []),
                      "--log-cap-bytes", c.log_cap_bytes, "--limits", c.limits,
                      "--visible-timeout", c.score_timeout_s, *_env_args(c, env)),
                (paths.run_record(task, tdigest, agent, fp, epoch, c.results),
                 paths.run_patch(task, tdigest, agent, fp, epoch, c.results)),
                paths.task_log(task, tdigest, f"run_agent-{agent}-{fp}-{epoch}", c.results),
                code_digest("stages.run_agent"), step_toolchain(c, env), 2000,
                agent_runtime_min(c), paths.done_markers(task, tdigest, c.results))


def _hidden_score(c: StepConfig, task: str, tdigest: str, rdir: str, out: str, log: str, env: str | None) -> Step:
    return Step("hidden_score",
                _args("--sealed", paths.sealed_dir(task, tdigest, c.results), "--run-dir", rdir, "--out", out,
                      "--timeout", c.score_timeout_s, "--sandbox", c.sandbox, "--controls",
                      paths.controls(task, tdigest, c.results), "--limits", c.limits, *_env_args(c, env)),
                (out,), log, code_digest("stages.hidden_score"), step_toolchain(c, env), 1000,
                5 + 2 * c.score_timeout_s // 60, paths.done_markers(task, tdigest, c.results))


def hidden_score(c: StepConfig, task: str, tdigest: str, agent: str, fp: str, epoch: int | str,
                 env: str | None = None) -> Step:
    """An agent attempt's patch on a pristine copy, the sealed tests restored."""
    return _hidden_score(c, task, tdigest, paths.run_dir(task, tdigest, agent, fp, epoch, c.results),
                         paths.score(task, tdigest, agent, fp, epoch, c.results),
                         paths.task_log(task, tdigest, f"hidden_score-{agent}-{fp}-{epoch}", c.results), env)


def hidden_score_session(c: StepConfig, task: str, tdigest: str, who: str, epoch: int | str,
                         env: str | None = None) -> Step:
    """A submitted human session, scored like an agent attempt."""
    return _hidden_score(c, task, tdigest, paths.session_dir(task, tdigest, who, epoch, c.results),
                         paths.session_score(task, tdigest, who, epoch, c.results),
                         paths.task_log(task, tdigest, f"hidden_score-human-{who}-{epoch}", c.results), env)


def task_steps(c: StepConfig, task: str, tdigest: str, agents: Mapping[str, Mapping[str, Any]],
               epochs: list[int], env: str | None = None) -> tuple[list[Step], list[Step], dict[str, list[str]]]:
    """Every step of one task, as (prepare, work, files): sealing and the leak check first, then
    controls, attempts and scores; ``files`` are the per-task files stratify reads."""
    prepare = [hash_pack(c, task, tdigest), leak_check(c, task, tdigest)]
    work = [run_dummy(c, task, tdigest, env)]
    scores = []
    for a, spec in sorted(agents.items()):
        for e in epochs:
            work.append(run_agent(c, task, tdigest, a, spec, e, env))
            score_step = hidden_score(c, task, tdigest, a, spec["fingerprint"], e, env)
            work.append(score_step)
            scores += score_step.outputs
    files = {"sealed": [paths.sealed_record(task, tdigest, c.results)],
             "leaks": list(prepare[1].outputs), "controls": list(work[0].outputs), "scores": scores}
    return prepare, work, files


def batch_key(spec: Mapping[str, Any]) -> str:
    """A batch's key: the digest of its whole spec (members, digests, steps)."""
    return sha256_text(canonical_json(spec))[:16]


def batch_specs(c: StepConfig, task_digests: Mapping[str, str], agents: Mapping[str, Mapping[str, Any]],
                epochs: list[int], batch_size: int,
                envs: Mapping[str, str | None] | None = None) -> dict[str, dict[str, Any]]:
    """``{batch key: spec}`` for ``batch_size`` > 1: the tasks in id order, cut into runs of
    ``batch_size``; each member lists the same steps the per-task rules run (task_batch).
    ``envs``: each task's environment spec digest (a member with one lists it as ``env``)."""
    envs = envs or {}
    ids = sorted(task_digests)
    out: dict[str, dict[str, Any]] = {}
    for i in range(0, len(ids), batch_size):
        members: list[dict[str, Any]] = []
        summary: dict[str, list[str]] = {"sealed": [], "leaks": [], "controls": [], "scores": []}
        for t in ids[i:i + batch_size]:
            prepare, work, files = task_steps(c, t, task_digests[t], agents, epochs, envs.get(t))
            member = {"task": t, "digest": task_digests[t], "prepare": [s.as_batch_step() for s in prepare],
                      "work": [s.as_batch_step() for s in work]}
            if envs.get(t):
                member["env"] = envs[t]
            members.append(member)
            for k, v in files.items():
                summary[k] += v
        spec = {"tasks": members, "summary": summary}
        out[batch_key(spec)] = spec
    return out


def prepare_spec(c: StepConfig, task_digests: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """``(key, spec)`` of the batch that seals and leak-checks every task of the pack (no work
    steps): it runs before any batch runs a control or an agent, so that a leak suspect anywhere
    stops the run as the per-task rules' leak verdict does. Its steps are the batches' own
    ``prepare`` steps (the same keys): each batch then reuses them."""
    members = []
    for t in sorted(task_digests):
        prepare, _work, _files = task_steps(c, t, task_digests[t], {}, [])
        members.append({"task": t, "digest": task_digests[t], "prepare": [s.as_batch_step() for s in prepare],
                        "work": []})
    spec = {"tasks": members, "summary": {"sealed": [], "leaks": [], "controls": [], "scores": []}}
    return batch_key(spec), spec


def batch_threads(members: int, batches: int, cores: int) -> int:
    """Members one batch runs at a time when ``batches`` batches share ``cores`` cores: the
    cores each batch gets when all run at once (at least 1), never more than its ``members``."""
    return max(1, min(int(members), int(cores) // max(1, int(batches))))


def batch_runtime_min(c: StepConfig, spec: Mapping[str, Any], agents: int, epochs: int) -> int:
    """Cluster runtime request of a batch: the sum of its members' per-task requests."""
    per_task = (run_dummy(c, "t", "d").runtime_min
                + agents * epochs * (agent_runtime_min(c) + hidden_score(c, "t", "d", "a", "f", 1).runtime_min))
    return 5 + per_task * len(spec["tasks"])
