"""The results layout, defined once: where every job writes and every reader looks.

Each function returns a path under ``results`` (a string, relative to the working directory
unless ``results`` is absolute). Strings, not :class:`~pathlib.Path`: stratify builds hundreds
of thousands of them. Passing wildcard names gives the Snakemake pattern of the same file, so
the rules and :mod:`sealbench.stages.steps` share one definition::

    >>> score("{task}", "{tdigest}", "{agent}", "{fp}", "{epoch}")
    'results/tasks/{task}/{tdigest}/scores/{agent}/{fp}/{epoch}.json'
    >>> score("t1", "ab" * 32, "repair", "0123456789abcdef", 1).startswith("results/tasks/t1/")
    True

Everything of one task lives under ``tasks/<id>/<task digest>/`` — a changed byte in the task
gives a new folder, so only that task's jobs run again. Experiment-level files live under
``experiments/<experiment id>/``.

Where the pack is (``SEALBENCH_PACK``) and where results are (``SEALBENCH_RESULTS``) reach the
jobs as environment variables set by the workflow, never as job parameters: a copied or moved
pack with the same content reuses every result (docs/pipeline.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from .core import SealbenchError

#: The results folder, relative to the working directory (the workflow's ``-d``).
RESULTS = "results"

#: Environment variable naming the pack folder for the jobs (set by the workflow).
PACK_ENV = "SEALBENCH_PACK"
#: Environment variable naming the results folder for the jobs (hidden from agents).
RESULTS_ENV = "SEALBENCH_RESULTS"


# --------------------------------------------------------------------------------------------
# one task at one digest


def task_base(task: str, tdigest: str, results: str = RESULTS) -> str:
    return f"{results}/tasks/{task}/{tdigest}"


def sealed_dir(task: str, tdigest: str, results: str = RESULTS) -> str:
    """The verified, read-only copy of the task (hash_pack seal)."""
    return f"{task_base(task, tdigest, results)}/sealed"


def sealed_record(task: str, tdigest: str, results: str = RESULTS) -> str:
    return f"{task_base(task, tdigest, results)}/sealed.json"


def leak_report(task: str, tdigest: str, ddigest: str, results: str = RESULTS) -> str:
    """leak_check's report, per denylist digest (an edited denylist reruns only leak_check)."""
    return f"{task_base(task, tdigest, results)}/leak-{ddigest}.json"


def controls(task: str, tdigest: str, results: str = RESULTS) -> str:
    return f"{controls_dir(task, tdigest, results)}/controls.json"


def controls_dir(task: str, tdigest: str, results: str = RESULTS) -> str:
    """controls.json and the control patches (run_dummy)."""
    return f"{task_base(task, tdigest, results)}/controls"


def run_dir(task: str, tdigest: str, agent: str, fp: str, epoch: int | str, results: str = RESULTS) -> str:
    """One agent attempt: run.json, patch.diff, logs and the agent's out/ folder."""
    return f"{task_base(task, tdigest, results)}/runs/{agent}/{fp}/{epoch}"


def run_record(task: str, tdigest: str, agent: str, fp: str, epoch: int | str, results: str = RESULTS) -> str:
    return f"{run_dir(task, tdigest, agent, fp, epoch, results)}/run.json"


def run_patch(task: str, tdigest: str, agent: str, fp: str, epoch: int | str, results: str = RESULTS) -> str:
    return f"{run_dir(task, tdigest, agent, fp, epoch, results)}/patch.diff"


def score(task: str, tdigest: str, agent: str, fp: str, epoch: int | str, results: str = RESULTS) -> str:
    """hidden_score's record of one agent attempt."""
    return f"{task_base(task, tdigest, results)}/scores/{agent}/{fp}/{epoch}.json"


def sessions_of(task: str, tdigest: str, who: str, results: str = RESULTS) -> str:
    """The submitted sessions of one person on one task (``<epoch>/`` folders)."""
    return f"{task_base(task, tdigest, results)}/sessions/{who}"


def session_dir(task: str, tdigest: str, who: str, epoch: int | str, results: str = RESULTS) -> str:
    return f"{sessions_of(task, tdigest, who, results)}/{epoch}"


def session_score(task: str, tdigest: str, who: str, epoch: int | str, results: str = RESULTS) -> str:
    return f"{task_base(task, tdigest, results)}/scores/human_{who}/{epoch}.json"


def task_log(task: str, tdigest: str, name: str, results: str = RESULTS) -> str:
    """The log of one per-task job (``name`` says which, e.g. ``run_dummy``)."""
    return f"{task_base(task, tdigest, results)}/logs/{name}.log"


def done_markers(task: str, tdigest: str, results: str = RESULTS) -> str:
    """task_batch's markers of finished steps."""
    return f"{task_base(task, tdigest, results)}/.done"


def try_sealed(task: str, tdigest: str, results: str = RESULTS) -> str:
    """The sealed copy ``sealbench try`` runs on (never read by the pipeline)."""
    return f"{results}/tries/{task}/{tdigest}/sealed"


def try_dir(task: str, tdigest: str, agent: str, fp: str, results: str = RESULTS) -> str:
    """The tries of one agent version on one task (``<n>/`` folders, like a run folder)."""
    return f"{results}/tries/{task}/{tdigest}/{agent}/{fp}"


# --------------------------------------------------------------------------------------------
# pack, split, batches, experiments


def pack_hash(pdigest: str, results: str = RESULTS) -> str:
    return f"{results}/packs/{pdigest}/PACK_HASH.txt"


def task_digests_tsv(pdigest: str, results: str = RESULTS) -> str:
    return f"{results}/packs/{pdigest}/task_digests.tsv"


def split_manifest(key: str, results: str = RESULTS) -> str:
    """The frozen split for one task set (``key`` digests the ids and strata)."""
    return f"{results}/split/{key}/split_manifest.json"


def pack_log(pdigest: str, name: str, results: str = RESULTS) -> str:
    return f"{results}/packs/{pdigest}/{name}.log"


def task_list(key: str, results: str = RESULTS) -> str:
    """The plan's tasks and their digests (``task_id``, ``task_digest`` per line, a header first),
    written by the local rule ``task_list``, content-addressed by ``key``: the pack-level jobs read
    it instead of thousands of paths on their command line (one shell argument is at most 128 KiB)."""
    return f"{results}/plans/{key}.tsv"


def task_list_log(key: str, results: str = RESULTS) -> str:
    return f"{results}/plans/{key}.log"


def read_task_list(path: str | Path) -> list[tuple[str, str]]:
    """``(task_id, task_digest)`` per row of a :func:`task_list` (or a ``task_digests.tsv``)."""
    rows = Path(path).read_text().splitlines()[1:]
    return [(r.split("\t")[0], r.split("\t")[1]) for r in rows if r.strip()]


def leak_verdict(results: str = RESULTS) -> str:
    """The pack-level leak verdict (no task suspect). One path, not content-addressed: the
    controls and agent runs wait for it (``ancient``), so rewriting it never reruns them."""
    return f"{results}/leak_check/verdict.json"


def leak_verdict_log(results: str = RESULTS) -> str:
    return f"{results}/leak_check/verdict.log"


def split_log(key: str, results: str = RESULTS) -> str:
    return f"{results}/split/{key}/split.log"


def batch_dir(key: str, results: str = RESULTS) -> str:
    return f"{results}/batches/{key}"


def batch_file(key: str, name: str, results: str = RESULTS) -> str:
    """One file of a batch: ``spec.json``, ``done.json``, ``spec.log``, ``batch.log``."""
    return f"{batch_dir(key, results)}/{name}"


def batch_prepared(results: str = RESULTS) -> str:
    """The record of the batch that sealed and leak-checked every task (``steps.prepare_spec``).
    One path, not content-addressed: the batches wait for it (``ancient``), as the per-task
    rules wait for :func:`leak_verdict`, so rewriting it never reruns them."""
    return f"{results}/batches/prepared.json"


def batch_prepared_log(results: str = RESULTS) -> str:
    return f"{results}/batches/prepare.log"


def experiment_dir(exp: str, results: str = RESULTS) -> str:
    return f"{results}/experiments/{exp}"


def experiment_record(exp: str, results: str = RESULTS) -> str:
    return f"{experiment_dir(exp, results)}/experiment.json"


def experiment_file(exp: str, name: str, results: str = RESULTS) -> str:
    """A file of the experiment: ``decision.json``, ``card.json``, ``report.md``, ``report.html``."""
    return f"{experiment_dir(exp, results)}/{name}"


def experiment_log(exp: str, name: str, results: str = RESULTS) -> str:
    return f"{experiment_dir(exp, results)}/logs/{name}.log"


def table(exp: str, name: str, results: str = RESULTS) -> str:
    """One of the experiment's parquet tables (``tasks``, ``runs``, ``strata``)."""
    return f"{experiment_dir(exp, results)}/tables/{name}.parquet"


def latest(results: str = RESULTS) -> str:
    """The link to the current, decided experiment."""
    return f"{results}/latest"


def env_dir(sdigest: str, results: str = RESULTS) -> str:
    """A task test environment, by its spec digest (``environments.build_env``)."""
    return f"{results}/envs/{sdigest}"


def env_record(sdigest: str, results: str = RESULTS) -> str:
    """The built environment's ``env.json`` (name, digest, installer, python, lock)."""
    return f"{env_dir(sdigest, results)}/env.json"


def env_log(sdigest: str, results: str = RESULTS) -> str:
    return f"{results}/envs/logs/{sdigest}.log"


def state_dir(results: str = RESULTS) -> str:
    """sealbench's own state: stat caches, the run lock."""
    return f"{results}/.sealbench"


# --------------------------------------------------------------------------------------------
# where the pack is, for a job


def pack_root() -> Path:
    """The pack folder a job reads, from ``$SEALBENCH_PACK`` (set by the workflow)."""
    value = os.environ.get(PACK_ENV)
    if not value:
        raise SealbenchError(f"the pack's location is not set: the workflow exports {PACK_ENV} to every job; "
                             "from a shell, give the path explicitly (e.g. --task-dir, --denylist, --pack)")
    return Path(value)


def locations_to_hide() -> tuple[Path, ...]:
    """The folders no agent may see: the pack and results/, as named by the workflow."""
    return tuple(Path(v).absolute() for v in (os.environ.get(PACK_ENV), os.environ.get(RESULTS_ENV)) if v)
