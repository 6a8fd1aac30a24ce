"""Which earlier results are still current, and what moved since the others were made.

An output of a per-task job (sealing, leak check, controls, an attempt, its score) is *current*
when the step the plan makes now would make it the same way: the same arguments, code and
toolchain. One made by another step is *stale*: the next run makes it again. Two readers ask:

* a run, at its start (``workflow/rules/common.smk``, onstart), before the first job: when
  earlier results are made again, the console says how many and what moved — which packages,
  old → new version and why each counts; which of sealbench's files; which settings —
  (:func:`moved_lines`); and when the experiment is new for the same pack, agents and settings,
  what of it moved (:func:`experiment_lines`);
* ``sealbench progress``: it counts only current outputs, and names the stale ones as stale
  (:func:`survey`).

What made an output is read where the run keeps it: for the per-task rules, Snakemake's record of
the job's ``params`` (its argv, code and toolchain digests: :func:`step_params`; in a run,
``workflow.persistence``, elsewhere ``.snakemake/metadata``: :func:`metadata_reader`); for a
batch's steps (``batch_size`` > 1), the step's marker ``.done/<step key>``, which holds the
step's arguments and digests (``stages/task_batch.py``). Snakemake reruns a job exactly when
these differ, so both readers agree with the run.

To name what a digest stood for, the toolchains and code the jobs were made with are kept by
digest in ``results/.sealbench/made_with.json`` (:func:`remember`, at each run's start): a
toolchain digest → its packages, each with why it is covered; a code digest → the digest of
each file it covers. A digest not kept there (made before sealbench kept them) is said to be
unrecorded.

No stage imports this module (it is the workflow's and the command line's).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.code_digests import code_closure, code_digest
from ..core.core import atomic_write_text, canonical_json
from ..isolation.toolchain import toolchain_changes
from ..stages import steps

#: The store of toolchains and code by digest, in the results folder's state (paths.state_dir).
STORE = "made_with.json"
#: How many of each the store keeps (the newest): enough for every run a results folder still holds.
KEEP_TOOLCHAINS, KEEP_CODE = 32, 256

#: The per-task rules and the stage each runs (workflow/rules/*.smk; steps.STAGES).
PER_TASK_RULES = ("hash_pack", "leak_check", "run_dummy", "run_agent", "hidden_score")
#: The modules whose code a per-task step's ``code`` digest covers (``stages.<stage>``).
STAGE_MODULES = tuple(f"stages.{s}" for s in steps.STAGES)

_TOOLCHAIN_VALUE = re.compile(r"^[0-9a-f]{64}(:[0-9a-f]+)?$")
_CODE_VALUE = re.compile(r"^[0-9a-f]{16}(:.*)?$")

#: What a moved part is called on the console.
KIND_WORDS = {"toolchain": "the toolchain the tests and agents run", "code": "sealbench's code",
              "argv": "the settings", "other": "the job's parameters", "unknown": "what made them"}


# ------------------------------------------------------------------ the store of digests


def code_files(*modules: str) -> dict[str, str]:
    """{file relative to the package: sha256 (12 hex)} of the code ``modules`` run."""
    here = Path(__file__).resolve().parents[1]
    return {rel: hashlib.sha256((here / rel).read_bytes()).hexdigest()[:12] for rel in code_closure(*modules)}


def load_store(state_dir: Path | str) -> dict[str, Any]:
    """The store (empty when absent or unreadable: it only names what moved)."""
    try:
        data = json.loads((Path(state_dir) / STORE).read_text())
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    for key in ("toolchains", "step_toolchains", "code"):
        if not isinstance(data.get(key), dict):
            data[key] = {}
    return data


def with_experiments(store: dict[str, Any], results: Path | str, newest: int = 20) -> dict[str, Any]:
    """``store`` with the toolchains of the ``newest`` experiment records under ``results`` that it
    lacks (``experiments/<id>/experiment.json`` keeps its toolchains whole): results made before
    the store was kept can still be named."""
    exps = Path(results) / "experiments"
    try:
        files = sorted((e / "experiment.json" for e in exps.iterdir() if (e / "experiment.json").is_file()),
                       key=lambda f: f.stat().st_mtime, reverse=True)[:newest]
    except OSError:
        return store
    for f in reversed(files):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for digest_key, tc_key in (("toolchain_digest", "toolchain"), ("analysis_toolchain_digest", "analysis_toolchain"),
                                   ("harness_toolchain_digest", "harness_toolchain")):
            d, tc = rec.get(digest_key), rec.get(tc_key)
            if isinstance(d, str) and isinstance(tc, dict) and d not in store["toolchains"]:
                store["toolchains"][d] = _slim(tc)
    return store


def _slim(tc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: tc.get(k) for k in ("python", "implementation", "packages", "why", "startup_files")}


def _put(table: dict, key: str, value: Any, keep: int) -> None:
    table.pop(key, None)
    table[key] = value  # the newest last
    while len(table) > keep:
        table.pop(next(iter(table)))


def including(store: dict[str, Any], record: Mapping[str, Any], step_toolchains: Mapping[str, str | None] = (),
              modules: Iterable[str] = ()) -> dict[str, Any]:
    """``store`` with the experiment ``record``'s toolchains (the per-task one, the harness's, the
    analysis'), what each of ``step_toolchains`` stands for ({a step's toolchain value: the
    environment's spec digest, or None}: with an environment the value digests the harness's
    toolchain and the environment) and the files of the code of each of ``modules`` (and of the
    experiment id's code) added, the newest last."""
    tcs, steps_tc, code = store["toolchains"], store["step_toolchains"], store["code"]
    for digest_key, tc_key in (("toolchain_digest", "toolchain"), ("harness_toolchain_digest", "harness_toolchain"),
                               ("analysis_toolchain_digest", "analysis_toolchain")):
        if record.get(digest_key) and isinstance(record.get(tc_key), Mapping):
            _put(tcs, record[digest_key], _slim(record[tc_key]), KEEP_TOOLCHAINS)
    for value, env in dict(step_toolchains).items():
        harness = record.get("harness_toolchain_digest") if env else record.get("toolchain_digest")
        _put(steps_tc, value, {"toolchain": harness, "environment": env}, KEEP_TOOLCHAINS * 4)
    for m in modules:
        _put(code, code_digest(m), {"modules": [m], "files": code_files(m)}, KEEP_CODE)
    if record.get("code"):
        from .experiment import ID_STAGES

        _put(code, record["code"], {"modules": list(ID_STAGES), "files": code_files(*ID_STAGES)}, KEEP_CODE)
    return store


def step_toolchains(c: steps.StepConfig, envs: Iterable[str]) -> dict[str, str | None]:
    """{the toolchain value of a step: the environment's spec digest, or None} for the plan's
    steps (``envs``: its environments' spec digests)."""
    return {c.toolchain_digest: None, **{steps.step_toolchain(c, sd): sd for sd in sorted(set(envs))}}


def remember(state_dir: Path | str, record: Mapping[str, Any], step_tcs: Mapping[str, str | None] = (),
             modules: Iterable[str] = ()) -> None:
    """Keep what :func:`including` adds in the store under ``state_dir``. Written at a run's
    start; a store that cannot be written is skipped (it only names what moved)."""
    store = including(load_store(state_dir), record, step_tcs, modules)
    try:
        Path(state_dir).mkdir(parents=True, exist_ok=True)
        atomic_write_text(Path(state_dir) / STORE, json.dumps(store, sort_keys=False))
    except OSError:
        pass


# ------------------------------------------------------------------ what made an output


def step_params(step: steps.Step, env_digest: str | None = None) -> dict[str, str]:
    """The per-task rule's params of ``step`` as Snakemake records them (workflow/rules/*.smk):
    its argv, code and (steps that run tests) toolchain — with a task environment, the built
    environment's digest after it (``env_digest``, common.smk step_toolchain)."""
    out = {"argv": step.shell_args, "code": step.code}
    if step.toolchain is not None:
        out["toolchain"] = step.toolchain + (f":{env_digest}" if env_digest else "")
    return out


def _values(recorded: Iterable[Any]) -> set[str]:
    out = set()
    for r in recorded:
        try:
            v = ast.literal_eval(r) if isinstance(r, str) else r
        except (ValueError, SyntaxError):
            v = r
        out.add(str(v))
    return out


def _kind(value: str) -> str:
    if _TOOLCHAIN_VALUE.match(value):
        return "toolchain"
    if _CODE_VALUE.match(value):
        return "code"
    return "argv"


def params_moved(expected: Mapping[str, str], recorded: Iterable[Any] | None) -> dict[str, tuple[str | None, str]]:
    """What differs between the params a step has now (``expected``: :func:`step_params`) and
    those its output was made with (``recorded``: Snakemake's list of ``repr`` of each, or None
    when Snakemake keeps none: it then reruns nothing for params, and neither do we):
    {kind: (old value or None, new value)}; empty: current."""
    if recorded is None:
        return {}
    old = _values(recorded)
    now = set(expected.values())
    if old == now:
        return {}
    left = old - now
    moved: dict[str, tuple[str | None, str]] = {}
    for kind, value in expected.items():
        if value not in old:
            was = [v for v in left if _kind(v) == kind]
            moved[kind] = (was[0] if len(was) == 1 else None, value)
    if not moved:  # a parameter the step no longer has
        moved["other"] = (", ".join(sorted(left)) or None, "")
    return moved


def marker_moved(step: Mapping[str, Any], done_dir: Path) -> dict[str, tuple[str | None, str]]:
    """A batch step (task_batch's keyed step: its toolchain with the environment's digest):
    {} when its marker is there; else what moved since the newest marker of a step with the same
    module and outputs ({kind: (old, new)}; ``unknown`` when no marker says: one written before
    markers held their step, steps.marker_text)."""
    if (done_dir / steps.step_key(step)).exists():
        return {}
    best, best_t = None, -1.0
    try:
        entries = list(os.scandir(done_dir))
    except OSError:
        entries = []
    for e in entries:
        try:
            data = json.loads(Path(e.path).read_text() or "null")
            t = e.stat().st_mtime
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("module") == step["module"] and \
                list(data.get("outputs") or []) == list(step["outputs"]) and t > best_t:
            best, best_t = data, t
    if best is None:
        return {"unknown": (None, "")}
    moved: dict[str, tuple[str | None, str]] = {}
    for kind in ("argv", "code", "toolchain"):
        now, was = step.get(kind), best.get(kind)
        if kind == "argv":
            now, was = shlex.join(now), (shlex.join(was) if isinstance(was, list) else None)
        if now is not None and was != now:
            moved[kind] = (was, now)
    return moved or {"unknown": (None, "")}


# ------------------------------------------------------------------ the plan's steps, surveyed


@dataclass(frozen=True)
class Planned:
    """One per-task step of the plan: its stage, the step and its task's environment (spec digest)."""

    stage: str
    step: steps.Step
    env: str | None = None


def planned_steps(c: steps.StepConfig, task_digests: Mapping[str, str], agents: Mapping[str, Mapping[str, Any]],
                  epochs: Iterable[int], envs: Mapping[str, str | None] | None = None,
                  batched: bool = False) -> list[Planned]:
    """Every per-task step of the plan, as the per-task rules run them (``batched``: as a batch
    runs them; its leak check does not record a suspect, it fails the batch)."""
    envs = envs or {}
    out = []
    for t, d in sorted(task_digests.items()):
        env = envs.get(t)
        out += [Planned("hash_pack", steps.hash_pack(c, t, d)),
                Planned("leak_check", steps.leak_check(c, t, d, record=not batched)),
                Planned("run_dummy", steps.run_dummy(c, t, d, env), env)]
        for a, spec in sorted(agents.items()):
            for e in epochs:
                out.append(Planned("run_agent", steps.run_agent(c, t, d, a, spec, e, env), env))
                out.append(Planned("hidden_score", steps.hidden_score(c, t, d, a, spec["fingerprint"], e, env), env))
    return out


@dataclass
class Survey:
    """Per stage: outputs current, stale, missing; and the stale ones with what moved."""

    current: Counter = field(default_factory=Counter)
    stale: Counter = field(default_factory=Counter)
    missing: Counter = field(default_factory=Counter)
    moved: list[tuple[str, dict[str, tuple[str | None, str]]]] = field(default_factory=list)

    @property
    def n_stale(self) -> int:
        return sum(self.stale.values())


def env_digests(envs: Iterable[str | None], results: str) -> dict[str, str | None]:
    """{spec digest: the built environment's digest, or None while it is not built}."""
    from ..core import paths
    from ..isolation.environments import load_env

    out: dict[str, str | None] = {}
    for sd in {e for e in envs if e}:
        try:
            out[sd] = load_env(Path(paths.env_dir(sd, results))).digest
        except Exception:  # noqa: BLE001 - not built (yet): its steps' toolchain is not known
            out[sd] = None
    return out


def survey(planned: Iterable[Planned], params_of: Callable[[str], list | None] | None,
           batched: bool = False, built: Mapping[str, str | None] | None = None) -> Survey:
    """Each planned step's output: current, stale (with what moved) or missing. ``params_of``:
    Snakemake's recorded params of an output path (per-task rules); ``batched``: read the
    batches' markers instead; ``built``: each environment's digest (:func:`env_digests`)."""
    s = Survey()
    built = built or {}
    for p in planned:
        if not all(os.path.exists(o) for o in p.step.outputs):
            s.missing[p.stage] += 1
            continue
        env_digest = built.get(p.env) if p.env else None
        if batched:
            keyed = p.step.as_batch_step()
            if p.env:
                keyed["toolchain"] = f"{keyed['toolchain']}:{env_digest}"
            moved = marker_moved(keyed, Path(p.step.done_dir))
        else:
            moved = params_moved(step_params(p.step, env_digest), params_of(p.step.outputs[0]) if params_of else None)
        if moved:
            s.stale[p.stage] += 1
            s.moved.append((p.stage, moved))
        else:
            s.current[p.stage] += 1
    return s


def metadata_reader(workdir: Path | str = ".") -> Callable[[str], list | None]:
    """Snakemake's recorded params of an output, read from its file-backend metadata
    (``WORKDIR/.snakemake/metadata/``, one file per output named by the output's path in
    url-safe base64, cut into folders at the file system's name limit; record format 6 keeps
    the params as ``repr`` strings). None when there is no record (or another format): Snakemake
    then reruns nothing for params."""
    workdir = Path(workdir).absolute()
    meta = workdir / ".snakemake" / "metadata"
    try:
        max_len = os.pathconf(meta, "PC_NAME_MAX") or 255
    except (OSError, ValueError):
        max_len = 255

    def read(path: str) -> list | None:
        p = Path(path)
        if p.is_absolute() and p.is_relative_to(workdir):
            path = str(p.relative_to(workdir))
        b64 = base64.urlsafe_b64encode(str(path).encode()).decode()
        parts = [b64[i:i + max_len - 1] for i in range(0, len(b64), max_len - 1)]
        parts = ["@" + x for x in parts[:-1]] + parts[-1:]
        try:
            rec = json.loads(meta.joinpath(*parts).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(rec, dict) or int(rec.get("record_format_version") or 0) < 6:
            return None
        params = rec.get("params")
        return params if isinstance(params, list) else None

    return read


# ------------------------------------------------------------------ naming what moved


def _argv_changes(old: str | None, new: str, limit: int = 3) -> list[str]:
    """``--oracle-runs 3 → 5``: the options whose values differ between two argvs."""
    if old is None:
        return ["settings that were not recorded"]

    def options(text: str) -> dict[str, str]:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        out, key = {}, None
        for w in words:
            if w.startswith("--"):
                key = w
                out[key] = ""
            elif key is not None:
                out[key] = (out[key] + " " + w).strip()
        return out

    a, b = options(old), options(new)
    diff = []
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            va, vb = a.get(k, "(none)") or "(set)", b.get(k, "(none)") or "(set)"
            short = lambda v: v if len(v) <= 40 else v[:37] + "…"  # noqa: E731
            diff.append(f"{k} {short(va)} → {short(vb)}")
    return diff[:limit] + ([f"… {len(diff) - limit} more"] if len(diff) > limit else []) or ["the arguments"]


def _code_changes(old: str | None, new: str, store: Mapping[str, Any], limit: int = 4) -> list[str]:
    """The files that differ between two code digests (a leak check's also names the corpus)."""
    if old is None:
        return ["code that was not recorded"]
    out = []
    (o, _, ocorp), (n, _, ncorp) = old.partition(":"), new.partition(":")
    if ocorp != ncorp:
        out.append("the public corpus of the contamination check")
    if o != n:
        a, b = (store["code"].get(o) or {}).get("files"), (store["code"].get(n) or {}).get("files")
        if a is None or b is None:
            out.append("its files (the earlier code was not recorded)")
        else:
            files = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            out += [f if f in a and f in b else f"{f} ({'added' if f in b else 'removed'})" for f in files[:limit]]
            if len(files) > limit:
                out.append(f"… and {len(files) - limit} more files")
    return out


def _toolchain_of(value: str | None, store: Mapping[str, Any]) -> tuple[dict | None, str | None, str | None]:
    """(the toolchain, the environment's spec digest, the built environment's digest) a step's
    toolchain value stands for."""
    if value is None:
        return None, None, None
    head, _, built = value.partition(":")
    entry = store["step_toolchains"].get(head) or {"toolchain": head, "environment": None}
    return store["toolchains"].get(entry.get("toolchain") or ""), entry.get("environment"), built or None


def _toolchain_changes(old: str | None, new: str, store: Mapping[str, Any]) -> list[str]:
    (otc, _oenv, obuilt), (ntc, nenv, nbuilt) = _toolchain_of(old, store), _toolchain_of(new, store)
    out = []
    if nenv and obuilt and nbuilt and obuilt != nbuilt:
        out.append(f"the task environment {nenv[:12]}… was rebuilt with other versions (its lock)")
    if ntc is None:
        return out or ["a toolchain that was not recorded"]
    if old is None or otc is None:
        return out + ["a toolchain that was not recorded (made before sealbench kept them)"]
    if otc != ntc:
        out += toolchain_changes(otc, ntc)
    return out


def what_moved(kind: str, old: str | None, new: str, store: Mapping[str, Any]) -> list[str]:
    """One phrase per change (a package with its versions and why it counts, a file, a setting)."""
    if kind == "toolchain":
        return _toolchain_changes(old, new, store)
    if kind == "code":
        return _code_changes(old, new, store)
    if kind == "argv":
        return _argv_changes(old, new)
    if kind == "unknown":
        return ["not recorded (made before sealbench kept it)"]
    return ["a parameter the job no longer has"]


def stage_counts(stages: Counter) -> str:
    """``run_dummy 12, run_agent 24``: counts per stage, in the stages' order."""
    order = {s: i for i, s in enumerate(PER_TASK_RULES)}
    return ", ".join(f"{s} {n}" for s, n in sorted(stages.items(), key=lambda kv: order.get(kv[0], 99)))


def moved_groups(s: Survey, store: Mapping[str, Any]) -> list[tuple[str, list[str], Counter]]:
    """The stale outputs grouped by what moved: (kind, phrases, outputs per stage)."""
    groups: dict[tuple[str, tuple[str, ...]], Counter] = {}
    cache: dict[tuple, list[str]] = {}
    for stage, moved in s.moved:
        for kind, (old, new) in sorted(moved.items()):
            key = (kind, old, new)
            if key not in cache:
                cache[key] = what_moved(kind, old, new, store) or [KIND_WORDS[kind]]
            groups.setdefault((kind, tuple(cache[key])), Counter())[stage] += 1
    order = {k: i for i, k in enumerate(KIND_WORDS)}
    return [(k, list(phrases), n) for (k, phrases), n in sorted(groups.items(), key=lambda kv: order[kv[0][0]])]


def moved_lines(s: Survey, store: Mapping[str, Any], batched: bool = False, limit: int = 4,
                head: str | None = None) -> list[str]:
    """What a run says before its first job when earlier results are made again (nothing when none):

    ``sealbench: 36 earlier results are out of date and are made again (jobs run_dummy 12, ...); what
    made them moved since:``
    ``  the toolchain the tests and agents run (run_dummy 12, ...):``
    ``    iniconfig 2.3.1 → 2.1.0 (imported by sealbench's scoring)``

    ``head``: another first line (``sealbench progress`` says them stale)."""
    if not s.n_stale:
        return []
    unit = "steps of the batches" if batched else "jobs"
    out = [head or (f"sealbench: {s.n_stale} earlier results are out of date and are made again "
                    f"({unit} {stage_counts(s.stale)}); what made them moved since:")]
    groups = moved_groups(s, store)
    for kind, phrases, stages in groups[:limit]:  # one change a line: a console line has a width
        out.append(f"  {KIND_WORDS[kind]} ({stage_counts(stages)}):")
        out += [f"    {p}" for p in phrases]
    if len(groups) > limit:
        out.append(f"  … and {len(groups) - limit} other changes (`sealbench progress` lists them)")
    return out


# ------------------------------------------------------------------ the experiment


def same_config(prev: Mapping[str, Any], exp: Mapping[str, Any]) -> bool:
    """Whether two experiment records are of the same pack, agents and settings."""
    return (prev.get("pack_digest") == exp.get("pack_digest")
            and prev.get("agent_fingerprints") == exp.get("agent_fingerprints")
            and canonical_json(prev.get("config")) == canonical_json(json.loads(json.dumps(exp.get("config"),
                                                                                           default=str))))


def experiment_changes(prev: Mapping[str, Any], exp: Mapping[str, Any],
                       store: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """What of the experiment id moved between two records of the same config (same_config):
    (kind, what, the changes named); the kinds of :data:`KIND_WORDS` where they are the same thing."""
    out: list[tuple[str, str, list[str]]] = []
    if prev.get("toolchain_digest") != exp.get("toolchain_digest"):
        out.append(("toolchain", KIND_WORDS["toolchain"], toolchain_changes(prev.get("toolchain"), exp["toolchain"])))
    if prev.get("analysis_toolchain_digest") != exp.get("analysis_toolchain_digest"):
        moved = (toolchain_changes(prev.get("analysis_toolchain"), exp["analysis_toolchain"])
                 if prev.get("analysis_toolchain") else ["not recorded before (kept since this version of sealbench)"])
        out.append(("analysis", "the toolchain of the tables and the gate", moved))
    if prev.get("code") != exp.get("code"):
        out.append(("code", KIND_WORDS["code"], _code_changes(prev.get("code"), exp["code"], store)))
    for key, words in (("split_manifest_digest", "the split"), ("human_sessions", "the human sessions"),
                       ("environments", "the task environments"),
                       ("harness_toolchain_digest", "the harness toolchain of tasks with environments")):
        if canonical_json(prev.get(key)) != canonical_json(exp.get(key)):
            out.append((key, words, []))
    return out


def experiment_lines(prev: Mapping[str, Any] | None, exp: Mapping[str, Any], store: Mapping[str, Any],
                     named: Iterable[str] = ()) -> list[str]:
    """When this run's experiment is new but the last decided one (``prev``, results/latest) is of
    the same pack, agents and settings: its id, the earlier one's, and what moved — but for the
    kinds already ``named`` (by :func:`moved_lines`): nothing when that leaves nothing."""
    if not prev or prev.get("exp_id") == exp.get("exp_id") or not same_config(prev, exp):
        return []
    changes = experiment_changes(prev, exp, store)
    moved = [c for c in changes if c[0] not in set(named)]
    if changes and not moved:
        return []
    out = [f"sealbench: experiment {exp['exp_id']} replaces {prev.get('exp_id')} for this pack, agents and "
           "settings (the tables and the decision are made again); moved since:"]
    for _kind, what, phrases in moved or [("", "what makes its id (see experiment.json)", [])]:
        out.append(f"  {what}" + (":" if phrases else ""))
        out += [f"    {p}" for p in phrases]
    return out


# ------------------------------------------------------------------ at a run's start


def start_lines(record: Mapping[str, Any], c: steps.StepConfig, planned: list[Planned],
                params_of: Callable[[str], list | None] | None, batched: bool, state_dir: Path | str,
                latest: Path | str, env_specs: Iterable[str] = ()) -> list[str]:
    """At a run's start, before the first job (common.smk onstart): keep what this run's jobs are
    made with (:func:`remember`), then say what earlier results are made again and why
    (:func:`moved_lines`) and, for a new experiment of the last decided one's config, what of it
    moved (:func:`experiment_lines`). Never raises: the console only."""
    try:
        envs = sorted(set(env_specs))
        remember(state_dir, record, step_toolchains(c, envs), STAGE_MODULES)
        store = with_experiments(load_store(state_dir), c.results)
        s = survey(planned, params_of, batched, env_digests(envs, c.results))
        lines = moved_lines(s, store, batched)
        prev = None
        f = Path(latest) / "experiment.json"
        if f.is_file():
            prev = json.loads(f.read_text())
        named = {kind for _stage, moved in s.moved for kind in moved}
        return lines + experiment_lines(prev, record, store, named)
    except Exception as exc:  # noqa: BLE001 - the console only, never a reason to stop a run
        return [f"sealbench: what moved since earlier results could not be read ({type(exc).__name__}: {exc})"]
