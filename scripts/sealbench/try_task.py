"""``sealbench try AGENT TASK``: one sealed attempt of one agent on one task, outside the DAG.

What an evaluation engineer runs before the full pipeline (as ``inspect eval --limit 1`` or
SWE-bench's ``--instance_ids``): the attempt runs exactly as a ``run_agent`` job does — a
sandboxed copy of the task with only the visible tests, the task's clock, the agent contract —
and is scored exactly as a ``hidden_score`` job does: the patch on a pristine copy, the tests
restored from the sealed task, the tamper rules. It prints the agent's output tail, the visible
and hidden result, the patch and the run folder,
``results/tries/<task>/<task digest>/<agent>/<fingerprint>/<n>/``. The pipeline never reads
tries: a try is not a result.

Tune tasks only: a task on the holdout is refused unless ``--holdout`` is given, and a holdout
try is a look at the holdout — it is appended to the pack's ledger (``kind: try``), so a later,
changed version of the agent scored on that holdout is ``HOLDOUT_TUNED`` and the try counts as
one more comparison there.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import paths
from .contract import PASS
from .configuration import envelope_digest
from .core import SealbenchError, read_json
from .environments import build_env, declared_env
from .hash_pack import plan_pack, seal_task
from .hidden_score import score_run
from .identity import agent_identity
from .ledger import LEDGER, agent_lineage, append_ledger, read_ledger
from .slices import current_slice
from .run_agent import RunOptions, run_agent
from .split import check as check_split
from .split import manifest_digest

#: Lines of the agent's output and of the patch printed (the files hold all of it).
TAIL_LINES = 30
PATCH_LINES = 60


@dataclass
class Try:
    """One finished try: where it is and how it scored."""

    run_dir: Path
    split: str
    score: dict[str, Any]

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


def try_task(agent: str, task: str, cfg: dict, results: Path = Path("results"), epochs: int = 1,
             holdout: bool = False) -> list[Try]:
    """Run ``epochs`` sealed attempts of ``agent`` on ``task`` under the (validated) config ``cfg``
    and score them. Raises :class:`SealbenchError` naming what is wrong before anything runs."""
    if agent not in cfg["agents"]:
        raise SealbenchError(f"config: no agent '{agent}' under 'agents'{_close_matches(agent, list(cfg['agents']))}; "
                             f"configured: {', '.join(sorted(cfg['agents'])) or 'none'}")
    if epochs < 1:
        raise SealbenchError(f"--epochs must be at least 1 (got {epochs})")
    plan = plan_pack(Path(cfg["pack"]), cfg["strata"])
    if task not in plan.tasks:
        raise SealbenchError(f"{plan.pack}: no task '{task}'{_close_matches(task, sorted(plan.tasks))}")
    strata_of = {tid: t.stratum for tid, t in plan.tasks.items()}
    manifest = check_split(plan.pack, strata_of, cfg["seed"], cfg["holdout_frac"])  # never written here
    side = _side(manifest, task)
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
        seal_task(plan.tasks[task].dir, digest, sealed, sealed.with_name("sealed.json"))
    # the task's test environment, built once like the pipeline's (results/envs/<spec digest>/)
    env_spec = declared_env(plan.pack, plan.tasks[task].meta)
    env = build_env(env_spec, Path(res) / "envs", sandbox=cfg["sandbox"]) if env_spec is not None else None
    options = RunOptions(sandbox_mode=cfg["sandbox"], stop_on_green=cfg["stop_on_green"],
                         cap_bytes=cfg["log_cap_bytes"], hide=(plan.pack.absolute(), Path(results).absolute()),
                         endpoint=spec.get("endpoint"),
                         readonly_paths=tuple(Path(p) for p in spec.get("readonly_paths") or []), limits=cfg["limits"],
                         visible_timeout_s=cfg["score_timeout_s"], env=env.path if env else None)
    if side == "holdout":
        _record_look(plan, manifest, cfg, agent, fp, ident)
    tries = []
    for epoch in range(1, epochs + 1):
        run_dir = base / str(_next_number(base))
        run_agent(sealed, run_dir, agent, fp, spec["command"], spec.get("env") or {}, epoch, cfg["envelope"], options)
        score = score_run(sealed, run_dir, run_dir / "score.json", cfg["score_timeout_s"], cfg["sandbox"],
                          limits=cfg["limits"], env=env)
        tries.append(Try(run_dir, side, score))
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
    out.append(f"run folder: {t.run_dir}")
    return "\n".join(out)


def summary(tries: list[Try]) -> str:
    passed = sum(t.status == PASS for t in tries)
    line = f"{passed}/{len(tries)} attempt(s) passed"
    if tries and tries[0].split == "holdout":
        line += "; this look at the holdout is in the pack's ledger"
    return line


def as_json(tries: list[Try]) -> str:
    return json.dumps([{"run_dir": str(t.run_dir), "split": t.split, "status": t.status,
                        "reason": t.score.get("reason")} for t in tries], indent=2)
