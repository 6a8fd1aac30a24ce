"""``sealbench try AGENT TASK``: one sealed attempt of one agent on one task, outside the DAG.

What an evaluation engineer runs before the full pipeline (as ``inspect eval --limit 1`` or
SWE-bench's ``--instance_ids``): the attempt runs exactly as a ``run_agent`` job does — a
sandboxed copy of the task with only the visible tests, the task's clock, the agent contract —
and is scored exactly as a ``hidden_score`` job does: the patch on a pristine copy, the tests
restored from the sealed task, the tamper rules, and the decoys of the pipeline's controls of
this task version where they have run (``controls/decoys/``; a try makes no controls). It prints the agent's output tail, the visible
and hidden result, the patch and the run folder,
``results/tries/<task>/<task digest>/<agent>/<fingerprint>/<n>/``. The pipeline never reads
tries: a try is not a result.

Tune tasks only: a task on the holdout is refused unless ``--holdout`` is given, and a holdout
try is a look at the holdout — it is appended to the pack's ledger (``kind: try``), so a later,
changed version of the agent scored on that holdout is ``HOLDOUT_TUNED`` and the try counts as
one more comparison there. A try never freezes a split: on a pack without a frozen split the
sides are the ones the pipeline's first run will freeze (the config's seed and fraction,
computed, never written); a pack that cannot be split (fewer than ``split.MIN_TASKS`` tasks: a
freshly imported one) has no holdout, so its tasks are on no side (``unsplit``): a try there
needs no ``--holdout`` and writes no ledger line — a task tried then may land on the holdout
once the pack grows and its split is frozen, which the ledger cannot know (the summary says so).

A try is not a scored run, and what goes wrong in one is one sentence
(:class:`~sealbench.core.core.SealbenchError`, the CLI's exit 2), never a traceback: a fault of the
harness (a pack folder nested deeper than Python's recursion limit, a results folder that
cannot be written) names what the try was doing and where. What the agent does is its
attempt's result (a workspace nested past ``untrusted.MAX_DEPTH`` is an empty patch, a crash is
its exit code): scored and printed as any other.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.configuration import envelope_digest
from ..core.contract import PASS
from ..core.core import SealbenchError, read_json
from ..core.untrusted import UntrustedTree, walk_tree
from ..isolation.environments import build_env, declared_env
from ..provenance.identity import agent_identity
from ..provenance.ledger import LEDGER, agent_lineage, append_ledger, read_ledger
from ..provenance.slices import current_slice
from ..stages.hash_pack import plan_pack, seal_task
from ..stages.hidden_score import score_run
from ..stages.run_agent import RunOptions, run_agent
from ..stages.split import MANIFEST, MIN_TASKS, SplitError, manifest_digest
from ..stages.split import check as check_split

#: Lines of the agent's output and of the patch printed (the files hold all of it).
TAIL_LINES = 30
PATCH_LINES = 60
#: The side of a task of a pack that has no split and cannot have one yet: neither tune nor holdout.
UNSPLIT = "unsplit"


@dataclass
class Try:
    """One finished try: where it is and how it scored."""

    run_dir: Path
    split: str
    score: dict[str, Any]
    #: Why the task is on no side (``split == UNSPLIT``): the split that cannot be made, in words.
    unsplit_why: str | None = None

    @property
    def status(self) -> str:
        return str(self.score["status"])


def _side(manifest: dict, task: str) -> str:
    return "holdout" if task in manifest["holdout"] else "tune"


def _next_number(folder: Path) -> int:
    taken = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.is_dir() else []
    return max(taken, default=0) + 1


def _close_matches(word: str, choices: list[str]) -> str:
    near = difflib.get_close_matches(word, choices, n=3)
    return f" (did you mean {', '.join(near)}?)" if near else ""


class _Doing:
    """What the try is doing now (words, and the folder it reads or writes), for the one
    sentence that a fault becomes."""

    def __init__(self) -> None:
        self.words, self.folder = "starting", None

    def __call__(self, words: str, folder: Path | None = None) -> None:
        self.words, self.folder = words, folder


def _too_deep(folder: Path | None) -> str:
    """The part of ``folder`` that nests too deep, in words (walked iteratively)."""
    if folder is None:
        return "a folder nests deeper than Python's recursion limit"
    try:
        for _ in walk_tree(folder):
            pass
    except (UntrustedTree, OSError) as exc:
        return f"{folder}/{exc}"
    return f"a folder under {folder} nests deeper than Python's recursion limit"


def fault_sentence(agent: str, task: str, doing: str, folder: Path | None, exc: Exception) -> str:
    """One sentence for a fault of the harness during a try (never the agent's doing: that is scored)."""
    if isinstance(exc, RecursionError):
        why = _too_deep(folder)
    elif isinstance(exc, OSError):
        names = " → ".join(str(f) for f in (exc.filename, exc.filename2) if f)
        why = f"{names + ': ' if names else ''}{exc.strerror or exc}"
    else:
        why = f"{type(exc).__name__}: {exc}"
    why = " ".join(str(why).split())  # one line
    return f"try of {agent} on {task} stopped while {doing}: {why}. Nothing of this try was scored."


def try_task(agent: str, task: str, cfg: dict, results: Path = Path("results"), epochs: int = 1,
             holdout: bool = False) -> list[Try]:
    """Run ``epochs`` sealed attempts of ``agent`` on ``task`` under the (validated) config ``cfg``
    and score them. Raises :class:`SealbenchError` naming what is wrong before anything runs, and
    turns any other fault of the harness into one (:func:`fault_sentence`)."""
    doing = _Doing()
    try:
        return _try_task(agent, task, cfg, Path(results), epochs, holdout, doing)
    except SealbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - a try ends in one sentence, whatever broke
        raise SealbenchError(fault_sentence(agent, task, doing.words, doing.folder, exc)) from exc


def _sides(plan, task: str, cfg: dict) -> tuple[dict | None, str, str | None]:
    """(manifest, the task's side, why it is on none). A frozen split is checked; without one,
    the split the first run will freeze is computed (never written); a pack that cannot be
    split has no holdout: every task is :data:`UNSPLIT`."""
    strata_of = {tid: t.stratum for tid, t in plan.tasks.items()}
    if (plan.pack / MANIFEST).exists():
        manifest = check_split(plan.pack, strata_of, cfg["seed"], cfg["holdout_frac"])
        return manifest, _side(manifest, task), None
    try:
        manifest = check_split(plan.pack, strata_of, cfg["seed"], cfg["holdout_frac"])  # never written here
    except SplitError as exc:
        n = len(plan.tasks)
        return None, UNSPLIT, (f"{n} task{'s' if n != 1 else ''}; a split needs at least {MIN_TASKS}"
                               if n < MIN_TASKS else SealbenchError.__str__(exc))
    return manifest, _side(manifest, task), None


def _try_task(agent: str, task: str, cfg: dict, results: Path, epochs: int, holdout: bool,
              doing: _Doing) -> list[Try]:
    if agent not in cfg["agents"]:
        raise SealbenchError(f"config: no agent '{agent}' under 'agents'{_close_matches(agent, list(cfg['agents']))}; "
                             f"configured: {', '.join(sorted(cfg['agents'])) or 'none'}")
    if epochs < 1:
        raise SealbenchError(f"--epochs must be at least 1 (got {epochs})")
    doing("reading the pack", Path(cfg["pack"]))
    plan = plan_pack(Path(cfg["pack"]), cfg["strata"])
    if task not in plan.tasks:
        raise SealbenchError(f"{plan.pack}: no task '{task}'{_close_matches(task, sorted(plan.tasks))}")
    manifest, side, unsplit_why = _sides(plan, task, cfg)
    if side == "holdout" and not holdout:
        tune = ", ".join(sorted(manifest["tune"])[:5])
        raise SealbenchError(f"'{task}' is on the holdout: a try there is a look at the holdout and is written to "
                             f"the pack's ledger. Try a tune task ({tune}, …) or pass --holdout.")
    spec = cfg["agents"][agent]
    ident = agent_identity(agent, spec)
    fp = ident["fingerprint"]
    digest = plan.task_digests[task]
    res = str(results)
    base = Path(paths.try_dir(task, digest, agent, fp, res))
    sealed = Path(paths.try_sealed(task, digest, res))
    if not (sealed / "meta.json").exists():
        doing(f"sealing the task into {sealed}", plan.tasks[task].dir)
        seal_task(plan.tasks[task].dir, digest, sealed, sealed.with_name("sealed.json"))
    # the task's test environment, built once like the pipeline's (results/envs/<spec digest>/)
    env_spec = declared_env(plan.pack, plan.tasks[task].meta)
    doing("building the task's test environment", Path(res) / "envs")
    env = build_env(env_spec, Path(res) / "envs", sandbox=cfg["sandbox"]) if env_spec is not None else None
    options = RunOptions(sandbox_mode=cfg["sandbox"], stop_on_green=cfg["stop_on_green"],
                         cap_bytes=cfg["log_cap_bytes"], hide=(plan.pack.absolute(), Path(results).absolute()),
                         endpoint=spec.get("endpoint"),
                         readonly_paths=tuple(Path(p) for p in spec.get("readonly_paths") or []), limits=cfg["limits"],
                         visible_timeout_s=cfg["score_timeout_s"], env=env.path if env else None)
    if side == "holdout":
        doing("recording the look in the pack's ledger", plan.pack)
        _record_look(plan, manifest, cfg, agent, fp, ident)
    # the pipeline's controls of this task version, where they ran: their decoys score the try too
    controls = Path(paths.controls(task, digest, res))
    tries = []
    for epoch in range(1, epochs + 1):
        run_dir = base / str(_next_number(base))
        doing(f"running attempt {epoch} (its folder {run_dir})", run_dir)
        run_agent(sealed, run_dir, agent, fp, spec["command"], spec.get("env") or {}, epoch, cfg["envelope"], options)
        doing(f"scoring attempt {epoch} (its folder {run_dir})", run_dir)
        score = score_run(sealed, run_dir, run_dir / "score.json", cfg["score_timeout_s"], cfg["sandbox"],
                          controls=controls if controls.is_file() else None, limits=cfg["limits"], env=env)
        tries.append(Try(run_dir, side, score, unsplit_why))
    return tries


def _record_look(plan, manifest: dict, cfg: dict, agent: str, fp: str, ident: dict) -> None:
    """Append the holdout try to the pack's ledger before the agent runs (a look is a look)."""
    ledger = plan.pack / LEDGER
    entry = {
        "kind": "try", "card_name": cfg.get("card_name", "default"), "pack_digest": plan.pack_digest,
        "denylist_digest": plan.denylist_digest, "split_manifest_digest": manifest_digest(manifest),
        "holdout": {t: plan.task_digests[t] for t in sorted(manifest["holdout"]) if t in plan.task_digests},
        "envelope_digest": envelope_digest(cfg), "agents": {agent: fp},
        "lineage": {agent: agent_lineage(agent, ident)},
        "preregistration": None,  # a try pins no decision knob: the first scored run does
        "servers": [], "experiment": None,
    }
    if current_slice(manifest) > 1:  # a grown pack (split --extend): the look is on this slice
        entry["slice"] = current_slice(manifest)
    try:
        prior = read_ledger(ledger)
    except ValueError as exc:
        raise SealbenchError(f"{ledger}: {exc}; a holdout try must be recorded, so nothing was run") from exc
    append_ledger(ledger, entry, prior)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def describe(t: Try) -> str:
    """What the user reads after a try."""
    run = read_json(t.run_dir / "run.json")
    s = t.score
    out = [f"── {run['solver']} on {run['task_id']} ({t.split}), attempt {t.run_dir.name} ──",
           f"agent: {run['end_reason']}, exit {run.get('exit_code')}, {run['wall_s']:.1f}s of "
           f"{run['time_box_s']:.0f}s, {len(run.get('attempts') or [])} visible run(s)"]
    for stream in ("stdout", "stderr"):
        tail = _tail(t.run_dir / f"agent.{stream}", TAIL_LINES)
        if tail.strip():
            out += [f"agent {stream} (last {TAIL_LINES} lines):", *("  " + ln for ln in tail.splitlines())]
    if run.get("report_problems"):
        out.append("contract: " + "; ".join(map(str, run["report_problems"])))
    patch = (t.run_dir / "patch.diff").read_text(encoding="utf-8", errors="replace")
    lines = patch.splitlines()
    out.append(f"patch ({len(patch.encode())} bytes, {len(lines)} lines):" if lines else "patch: empty")
    out += ["  " + ln for ln in lines[:PATCH_LINES]]
    if len(lines) > PATCH_LINES:
        out.append(f"  … {len(lines) - PATCH_LINES} more lines in patch.diff")
    vis = {True: "pass", False: "fail", None: "not run"}
    out.append(f"score: visible {vis[s.get('visible_pass')]}, hidden {vis[s.get('hidden_pass')]} → "
               f"{s['status'].upper()}" + (f" ({s['reason']})" if s.get("reason") else ""))
    hidden = ((s.get("score") or {}).get("hidden") or {}).get("report") or {}
    out.append(f"decoys: {hidden['decoys']}, from the pipeline's controls of this task (each must fail: "
               f"{hidden.get('decoys_failed')} did)" if hidden.get("decoys") else
               "decoys: none (a try scores against the decoys of the pipeline's controls once they have run "
               "for this task; until then a forged pass is not caught)")
    out.append(f"run folder: {t.run_dir}")
    return "\n".join(out)


def summary(tries: list[Try]) -> str:
    passed = sum(t.status == PASS for t in tries)
    line = f"{passed}/{len(tries)} attempt(s) passed"
    if tries and tries[0].split == "holdout":
        line += "; this look at the holdout is in the pack's ledger"
    elif tries and tries[0].split == UNSPLIT:
        line += (f"; the pack has no frozen split and cannot have one yet ({tries[0].unsplit_why}), so this task "
                 "is on no side and the try is not in the pack's ledger: once the split is frozen, a task tried "
                 "now may be on the holdout")
    return line


def as_json(tries: list[Try]) -> str:
    return json.dumps([{"run_dir": str(t.run_dir), "split": t.split, "status": t.status,
                        "reason": t.score.get("reason")} for t in tries], indent=2)
