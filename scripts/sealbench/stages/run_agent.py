"""run_agent: one agent attempt on one task, in a fresh workspace, under the task's clock.

Reads:  a sealed task; the agent's command/env from the config; the envelope
Writes: results/tasks/<id>/<digest>/runs/<agent>/<fingerprint>/<epoch>/
          run.json      the run record (times, why it ended, usage/stamp/steers or null)
          patch.diff    the workspace's diff against its one commit
          agent.stdout / agent.stderr (capped), attempts.jsonl (visible runs, written by the
          harness), visible_logs/, out/ (SEALBENCH_OUT)

Each attempt is a draw of its slot on the draw record (``provenance/draws.py``): ``draw`` before
the agent starts, ``ran`` (with run.json and patch.diff kept, content-addressed) once all of it is
on disk. A slot whose draw ran to its end and has no outcome yet (this job was killed after the
agent ended, before Snakemake saw it finish) is not drawn again: that draw's run.json (with
``restored``) and patch.diff (byte for byte) are written back from the record (:func:`restore_draw`).

The agent is a shell command (docs/contract.md §2) run with the workspace as cwd, stdin from
/dev/null and the SEALBENCH_* variables, inside the sandbox (``sandbox.py``) where it works.
Its clock is min(task time_box_sec, envelope max_wall_s); at the clock — or at the first green
visible run under ``stop_on_green`` — its whole process tree is killed. ``SEALBENCH_VISIBLE_CMD``
asks the harness to run the visible suite (``visible.py``), so the attempt log cannot be forged.
Each visible run has its own clock (min(the time left, ``score_timeout_s``)); one the agent abandons
(it asks for a new one, its client goes away, the agent's command ends) is cancelled, logged as such.
``usage.json``, ``stamp.json`` and ``steers.jsonl`` are read when present (regular files
only, capped: ``untrusted.py``); a missing file is recorded as unknown (null). Whatever else the
agent leaves is walked and removed by ``untrusted.py`` too (iterative, no link followed, capped):
a workspace nested past the caps is taken as an empty patch (``patch_error``: the run's ``fail``),
what ``out/`` holds past them is named in ``report_problems``. When the agent
reaches its server through the bridge, the tokens are the ones the server's replies carried
(``tokens_source: metered``; the agent's own numbers stay in ``usage_agent``), and stay so when a
reply carried no usage (``tokens_source: metered_incomplete``: a lower bound); otherwise they are
the agent's (``tokens_source: agent``). Usage over the envelope is recorded as ``over_envelope``;
incomplete metered tokens under the cap as ``envelope_unconfirmed`` (never silently within).
What the bridge saw of the session (servers, waits, retries, quota: ``bridge.ObservedSession``)
is ``session_observed`` (null without a bridge); ``stamp`` is only the agent's claim.

The files and folders the command's words name (resolved from the project folder, the working
directory, as the fingerprint resolves them: ``agent_command.command_plan``) are mounted read-only at
the same absolute paths, and each relative word naming one is made absolute in the command the
sandbox runs (``command_run``; ``command`` is the config's, as written). Never mounted: a path
inside the pack or results/ (the start check refuses such a command; a run that gets one anyway
lists it in ``agent_paths_withheld``) or in sealbench's scratch folders (``sandbox.never_mounted``).

Before any job (``sealbench validate``, the pipeline's start) :func:`probe_agent` checks, in the
same sandbox and without running the agent, that its first command can start (found, executable,
its ``#!`` interpreter present, Python's script readable or its module found); :func:`start_check`
does it for every agent. Each finished run of an agent in the pipeline's layout is noted in
``results/.sealbench/agent-health/<agent>-<fingerprint>.json``: when its first
:data:`START_FAILURE_RUNS` runs all ended the same harness-visible way at start (exit 126/127,
or a non-zero exit within :data:`START_WINDOW_S` s with no patch, no usage and no visible run),
its later runs do not start the agent: they write an ``infra_fail`` record (``end_reason``
``harness_error``) whose ``error`` says so in one sentence.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..agent import bridge as bridge_module
from ..agent.agent_command import CommandPlan, command_plan
from ..agent.agent_health import health_file, note_health, read_health, start_failure, stopped_record
from ..agent.agent_probe import blocked, hidden_folders, worker_env
from ..agent.bridge import UnixToTcp, parse_endpoint
from ..agent.gateway import Gateway, upstream_key
from ..core import contract, paths
from ..core.contract import (
    STAMP_FILE,
    STAMP_KEYS,
    STEERS_FILE,
    USAGE_FILE,
    USAGE_KEYS,
    count_steers,
    read_report,
    time_box,
)
from ..core.core import SealbenchError, atomic_write_bytes, read_json
from ..core.processes import run_process
from ..core.records import RunRecord, write_record
from ..core.untrusted import copy_untrusted_tree
from ..isolation.environments import load_env
from ..isolation.layers import OVERLAY, remove_tree, workspace_kind
from ..isolation.limits import limit_mechanisms
from ..isolation.sandbox import make_sandbox, resolve_level
from ..pack.task_layout import import_paths, pythonpath_env
from ..pack.workspace import WorkspaceError, make_workspace, scratch_dir, workspace_patch
from ..provenance import draws
from ..scoring.visible import VisibleServer, sealed_green, write_client_script
from .sandboxed import add_isolation_args, env_card, limits_arg, run_guarded


def read_attempts(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


@dataclass(frozen=True)
class RunOptions:
    """How attempts are run (from the config): isolation, caps and the human-protocol stop."""

    sandbox_mode: str = "auto"          #: auto | required | off (see sandbox.py)
    stop_on_green: bool = False         #: end the session at the first green visible run
    cap_bytes: int | None = 1 << 20     #: kept bytes per output stream
    hide: tuple[Path, ...] = ()         #: extra folders hidden from the worker (the pack, results/)
    endpoint: str | None = None         #: the one loopback host:port the agent may reach
    #: a real provider behind the endpoint (agent.gateway): its URL, the harness variable holding
    #: its key (never passed into the sandbox), and the API it speaks (which header the key goes in)
    upstream: str | None = None
    key_env: str | None = None
    api: str | None = None
    readonly_paths: tuple[Path, ...] = ()  #: extra read-only paths the agent needs
    limits: Mapping[str, Any] | None = None  #: resource limits (config ``limits``; None: limits.DEFAULT_LIMITS)
    base: Path | None = None            #: the project folder relative command words name (None: the cwd)
    #: each visible run's own cap (config ``score_timeout_s``; None: the time left on the clock only)
    visible_timeout_s: float | None = None
    #: the task's test environment folder (results/envs/…): the visible runs use it; None: sealbench's
    env: Path | None = None
    #: this attempt's draw on the record (``draws.start_draw``; None: not recorded, e.g. a try)
    draw: str | None = None
    #: the slot it was drawn for (``draws.slot_key``)
    slot: str | None = None


#: The model traffic the bridge relayed, one JSON line per reply (agent.bridge.Transcript), in the run folder.
TRANSCRIPT_FILE = "transcript.jsonl"


def over_envelope(usage: Mapping[str, Any], envelope: Mapping[str, Any]) -> list[str]:
    """Why reported usage exceeds the envelope (empty: within it or unknown)."""
    out = []
    for key, cap_key in (("steps", "max_steps"), ("tokens_out", "max_output_tokens")):
        value, cap = usage.get(key), envelope.get(cap_key)
        if value is not None and cap is not None and value > cap:
            out.append(f"{key} {value} > {cap_key} {cap}")
    return out


#: ``tokens_source`` of a run (run.json, runs.parquet): the bridge's count, every reply with its usage;
#: the bridge's count with at least one reply that carried none (a lower bound); the agent's usage.json.
METERED, METERED_INCOMPLETE, AGENT = "metered", "metered_incomplete", "agent"


def choose_tokens(usage_agent: Mapping[str, Any], metered: bridge_module.MeteredUsage | None) -> tuple[dict, str]:
    """The run's usage and ``tokens_source``. Once the agent had a bridge, its tokens are what
    the bridge metered, whatever the agent says: ``metered`` when every reply carried its usage,
    ``metered_incomplete`` when one or more did not (the count is then a lower bound). The
    agent's own tokens are used only without a bridge (``agent``); its other numbers (steps,
    cost) are always its own. ``tokens_in`` is every input token the server counted (uncached,
    cache creation and cache read: their parts are ``usage_metered``'s ``tokens_cache_*``);
    replies to side calls (``bridge.side_call``: token counting, model listings, probes) never
    make the count incomplete."""
    usage = dict(usage_agent)
    if metered is None:
        return usage, AGENT
    usage["tokens_in"], usage["tokens_out"] = metered.tokens_in, metered.tokens_out
    return usage, (METERED if metered.without_usage() == 0 else METERED_INCOMPLETE)


def envelope_unconfirmed(usage: Mapping[str, Any], envelope: Mapping[str, Any], tokens_source: str | None,
                         metered: Mapping[str, Any] | None) -> list[str]:
    """Why a run not over the envelope cannot be said to be within it: metered output tokens
    that are incomplete (``metered_incomplete``) and under ``max_output_tokens``. A run whose
    incomplete count is already over the cap is over (:func:`over_envelope`); nothing here then."""
    cap, tok = envelope.get("max_output_tokens"), usage.get("tokens_out")
    if tokens_source != METERED_INCOMPLETE or cap is None or (tok is not None and tok > cap):
        return []
    m = metered or {}
    generation = (m.get("responses") or 0) - (m.get("responses_side") or 0)   # side calls say no usage
    missing = generation - (m.get("responses_with_usage") or 0)
    return [f"tokens_out {tok} is a lower bound ({missing} of {generation} server replies carried no "
            f"usage): within max_output_tokens {cap} cannot be confirmed"]


def run_agent(sealed: Path, run_dir: Path, agent: str, fingerprint: str, command: str,
              agent_env: Mapping[str, Any], epoch: int, envelope: Mapping[str, Any],
              options: RunOptions | None = None) -> dict:
    """Run one attempt (see module docstring) and write ``run.json`` and ``patch.diff``."""
    options = options or RunOptions()
    sealed, run_dir = Path(sealed).resolve(), Path(run_dir).absolute()
    hide = (sealed.parent, run_dir.parent, *options.hide)
    # what the command names is mounted, except the pack, results/ and sealbench's scratch (the
    # start check refuses such a command before any job; a run that gets one anyway shows nothing)
    plan = command_plan(agent, {"command": command, "env": dict(agent_env)}, options.base)
    hidden = hidden_folders(hide)
    withheld = [n.word for n in plan.named if blocked(n.path, hidden)]
    plan = plan.without(lambda n: blocked(n.path, hidden))
    options = replace(options, readonly_paths=tuple(r for r in options.readonly_paths if not blocked(r, hidden)))
    level = resolve_level(options.sandbox_mode)
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / "out"
    left = remove_tree(out)
    if left:
        raise OSError(f"{out}: an earlier attempt's output could not be removed: {'; '.join(left)}")
    out.mkdir()
    for stale in ("attempts.jsonl", "patch.diff", "run.json", "agent.stdout", "agent.stderr"):
        (run_dir / stale).unlink(missing_ok=True)
    health = health_file(run_dir, agent, fingerprint)
    stopped = read_health(health).get("stopped") if health is not None else None
    if stopped:
        record = stopped_record(sealed, run_dir, agent, fingerprint, epoch, command, stopped, health)
        if options.draw:
            record["draw"] = options.draw
            record = write_record(RunRecord, run_dir / "run.json", record)
        return record
    scratch = scratch_dir("run")
    try:
        record = _run_in(scratch, level, sealed, run_dir, agent, fingerprint, plan, agent_env, epoch,
                         envelope, options, hide)
        if withheld:
            record["agent_paths_withheld"] = withheld
        if options.draw:
            record["draw"] = options.draw
        if withheld or options.draw:
            record = write_record(RunRecord, run_dir / "run.json", record)
    finally:
        remove_tree(scratch)   # whatever the agent left there (iterative, no link followed); leftovers are only disk
    if health is not None:
        note_health(health, record, start_failure(record, run_dir))
    return record


def _run_in(scratch: Path, level: str, sealed: Path, run_dir: Path, agent: str, fingerprint: str, plan: CommandPlan,
            agent_env: Mapping[str, Any], epoch: int, envelope: Mapping[str, Any], options: RunOptions,
            hide: tuple[Path, ...]) -> dict:
    meta = read_json(sealed / "meta.json")
    # SEALBENCH_OUT is scratch of the harness, never a folder under results/: what the agent
    # leaves there is copied into run_dir/out afterwards by read_untrusted's rules (regular
    # files only, no symlink followed, capped), so nothing it plants is followed on the host.
    out = scratch / "out"
    out.mkdir()
    ws = make_workspace(sealed, scratch / "ws", scratch / "private", workspace_kind(level))
    ctl = scratch / "ctl"
    ctl.mkdir()
    prompt = ctl / "prompt.md"
    shutil.copyfile(sealed / "prompt.md", prompt)
    shutil.copyfile(sealed / "prompt.md", run_dir / "prompt.md")
    prompt.chmod(0o444)
    clock = time_box(meta["time_box_sec"], envelope)
    command = plan.command
    command_run = plan.command_for(ws.root)  # relative words naming the agent's files made absolute
    overlay = ws.kind == OVERLAY
    worker_box = make_sandbox(level, writable=[out] if overlay else [ws.root, out], hide=hide,
                              readable=[ctl, *options.readonly_paths, *plan.mounts], limits=options.limits)
    tests_box = make_sandbox(level, writable=[] if overlay else [ws.root], hide=hide, limits=options.limits)
    if overlay:  # the worker holds the live mount; each visible run mounts the workspace as it stands
        worker_box, tests_box = worker_box.with_overlay(ws.overlay()), tests_box.with_overlay(ws.view(ws.root))
    task_env, env_vars = None, {}
    if options.env is not None:  # the task's commands run in its environment; the agent keeps its own python
        built = load_env(options.env)
        tests_box = tests_box.with_readable(built.path)
        worker_box = worker_box.with_readable(built.path)
        task_env, env_vars = built.command_env(), {"SEALBENCH_TASK_PYTHON": str(built.python)}
    stop = threading.Event()
    started = time.time()
    server = VisibleServer(ctl / "visible.sock", meta["visible_command"], ws.root, started, started + clock,
                           run_dir / "attempts.jsonl", run_dir / "visible_logs", sandbox=tests_box,
                           cap_bytes=options.cap_bytes, on_green=stop.set if options.stop_on_green else None,
                           seal_check=lambda n: sealed_green(sealed, meta, ws, run_dir / "visible_logs" / f"sealed-{n}",
                                                             max(5.0, started + clock - time.time()), tests_box,
                                                             task_env),
                           run_timeout_s=options.visible_timeout_s,
                           task_env={**(task_env or {}), **pythonpath_env(ws.root, import_paths(sealed / "repo", meta))})
    (run_dir / "visible_logs").mkdir(exist_ok=True)
    visible = write_client_script(ctl / "visible", ctl / "visible.sock")
    env = worker_env(level, agent_env,
                      {**contract.agent_env(meta["id"], prompt, ws.root, visible, clock, envelope, out, epoch, level),
                       **env_vars})
    bridge = gateway = None
    worker_cmd = command_run
    if options.endpoint:
        host, port = parse_endpoint(options.endpoint)
        if options.upstream:    # the key is read here, outside, and added by the gateway
            gateway = Gateway(options.upstream, upstream_key(options.key_env), options.api or "",
                              port=0 if level == "bwrap" else port)   # unsandboxed: at the endpoint itself
        if level == "bwrap":
            bridge = UnixToTcp(str(ctl / "endpoint.sock"), *(("127.0.0.1", gateway.port) if gateway else (host, port)),
                               transcript=run_dir / TRANSCRIPT_FILE)
            if gateway is not None:
                bridge.session.endpoint = options.upstream    # the server is the provider, not the gateway
            worker_cmd = (f"exec {shlex.quote(sys.executable)} -S {shlex.quote(str(Path(bridge_module.__file__).resolve()))} "
                          f"{host} {port} {shlex.quote(str(ctl / 'endpoint.sock'))} -- bash -c {shlex.quote(command_run)}")
    try:
        res = run_process(worker_cmd, ws.root, env, clock, run_dir / "agent.stdout", run_dir / "agent.stderr",
                          sandbox=worker_box, cap_bytes=options.cap_bytes, stop_event=stop)
    finally:
        server.close()
        if bridge is not None:
            bridge.close()
        if gateway is not None:
            gateway.close()
    # an agent stopped for filling the disk leaves no patch (git would have to read it all)
    disk_hit = bool(res.limit_hit) and ("workspace limit" in res.limit_hit or "file-size limit" in res.limit_hit)
    patch_error = None
    try:
        patch = b"" if disk_hit else workspace_patch(ws)
    except WorkspaceError as exc:
        # the workspace cannot be taken as a patch (nested past untrusted.MAX_DEPTH, a file
        # that cannot be read, …): the agent left it so, so its attempt is scored as an empty
        # patch (a fail), never as an error of the harness (infra_fail would take the attempt
        # out of the rate)
        patch, patch_error = b"", str(exc)[-2000:]
    (run_dir / "patch.diff").write_bytes(patch)
    out_skipped = copy_untrusted_tree(out, run_dir / "out")
    out = run_dir / "out"
    usage, usage_problem = read_report(out / USAGE_FILE, USAGE_KEYS)
    stamp, stamp_problem = read_report(out / STAMP_FILE, STAMP_KEYS)
    usage_agent = dict(usage)
    metered = bridge.metered() if bridge is not None else None
    # with a bridge the tokens are what it metered (the agent's own report is kept beside them
    # as usage_agent), flagged incomplete when a reply said nothing of its usage
    usage, tokens_source = choose_tokens(usage_agent, metered)
    usage_metered = None if metered is None else metered.as_dict()
    # the session as the harness saw it at the bridge (servers, waits, retries, quota): what can
    # exclude the run (stratify); the agent's stamp.json is only its claim
    session_observed = None if bridge is None else bridge.observed().as_dict()
    attempts = read_attempts(run_dir / "attempts.jsonl")
    end_reason = "green" if res.end_reason == "stopped" else res.end_reason
    record = {
        "task_id": meta["id"], "solver": agent, "fingerprint": fingerprint, "epoch": epoch, "role": "agent",
        "command": command, "command_run": command_run, "agent_paths": [str(m) for m in plan.mounts],
        "time_box_s": clock, "task_time_box_s": meta["time_box_sec"],
        "wall_s": res.wall_s, "exit_code": res.returncode, "end_reason": end_reason, "timed_out": res.timed_out,
        "signal": res.signal,
        "base_commit": ws.base_commit, "workspace": ws.kind, "patch_bytes": len(patch), "patch_error": patch_error,
        "usage": usage, "stamp": stamp, "steer_count": count_steers(out / STEERS_FILE),
        "report_problems": [p for p in (usage_problem, stamp_problem) if p] + [f"out/{p}" for p in out_skipped],
        "usage_agent": usage_agent, "tokens_source": tokens_source,
        "usage_metered": usage_metered, "session_observed": session_observed,
        "attempts": attempts, "stdout_bytes": res.stdout_bytes, "stderr_bytes": res.stderr_bytes,
        "stdout_truncated_bytes": res.stdout_truncated_bytes, "stderr_truncated_bytes": res.stderr_truncated_bytes,
        "log_cap_bytes": res.cap_bytes, "isolation": res.isolation, "endpoint": options.endpoint,
        "over_envelope": over_envelope(usage, envelope),
        "envelope_unconfirmed": envelope_unconfirmed(usage, envelope, tokens_source, usage_metered),
        "stop_on_green": options.stop_on_green,
        "envelope": dict(envelope),
        "limit_hit": res.limit_hit, "limits": worker_box.limits.to_dict(), "limit_mechanisms": limit_mechanisms(),
    }
    if options.env is not None:
        record["environment"] = env_card(load_env(options.env))
    record = write_record(RunRecord, run_dir / "run.json", record)
    return record


#: ``restored.why`` in a run record written back from the draw record (:func:`restore_draw`): the
#: draw was not scored (the job interrupted after its agent ended) ...
RESTORED_WHY = ("the job was interrupted after this draw's agent ended and before the job was seen to finish; "
                "its result was restored from the draw record instead of drawing the slot again")
#: ... or it was (its results deleted, or made in another working folder on the same pack).
RESTORED_SCORED_WHY = ("this slot's draw ran and was scored before (the draw record travels with the pack: its "
                       "results were deleted, or made in another working folder); its result was restored from "
                       "the draw record instead of drawing the slot again")


def restore_draw(run_dir: Path, kept: draws.Kept) -> dict:
    """Write back the result of the slot's draw that ran (``draws.restorable``): ``patch.diff``
    byte for byte, and ``run.json`` as it was with ``restored`` added (the draw, why, and the
    kept files' digests). The agent is not started; what else the first draw left in ``run_dir``
    (logs, ``out/``) is left as it is."""
    run_dir = Path(run_dir)
    record = json.loads(kept.files["run.json"].decode("utf-8"))
    if not isinstance(record, dict) or record.get("draw") != kept.draw:
        raise ValueError(f"the kept run.json of draw {kept.draw} is not that draw's run record")
    atomic_write_bytes(run_dir / "patch.diff", kept.files["patch.diff"])
    why = RESTORED_SCORED_WHY if kept.outcome is not None else RESTORED_WHY
    record["restored"] = {"draw": kept.draw, "why": why, "kept": dict(kept.digests)}
    return write_record(RunRecord, run_dir / "run.json", record)


def harness_failure(sealed: Path, run_dir: Path, agent: str, fingerprint: str, epoch: int,
                    exc: BaseException, draw: str | None = None) -> dict:
    """run.json (and an empty patch) for an attempt the harness could not run: hidden_score
    turns it into ``infra_fail``; nothing about the agent is invented."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        task_id = read_json(Path(sealed) / "meta.json")["id"]
    except Exception:  # noqa: BLE001 - the record must be written whatever broke
        task_id = Path(sealed).parent.parent.name
    (run_dir / "patch.diff").write_bytes(b"")
    record = {
        "task_id": task_id, "solver": agent, "fingerprint": fingerprint, "epoch": epoch, "role": "agent",
        "command": None, "time_box_s": None, "wall_s": None, "exit_code": None, "end_reason": "harness_error",
        "timed_out": False, "patch_bytes": 0, "usage": {k: None for k in USAGE_KEYS},
        "stamp": {k: None for k in STAMP_KEYS}, "session_observed": None, "steer_count": None, "tokens_source": None,
        "attempts": [], "isolation": None,
        "over_envelope": [], "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:],
        "draw": draw,
    }
    record = write_record(RunRecord, run_dir / "run.json", record)
    return record


def parser() -> argparse.ArgumentParser:
    """This stage's command line; :mod:`sealbench.stages.steps` writes the argv the workflow passes."""
    ap = argparse.ArgumentParser(prog="sealbench.stages.run_agent", description=__doc__.splitlines()[0])
    ap.add_argument("--sealed", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fingerprint", required=True)
    ap.add_argument("--spec", required=True, help="JSON: {command, env?}")
    ap.add_argument("--epoch", type=int, required=True)
    ap.add_argument("--envelope", required=True, help="JSON: the config's envelope")
    ap.add_argument("--stop-on-green", action="store_true")
    ap.add_argument("--log-cap-bytes", type=int, default=1 << 20)
    ap.add_argument("--hide", type=Path, action="append", default=[], help="a folder the worker must not see")
    add_isolation_args(ap, timeout=False)
    ap.add_argument("--visible-timeout", type=float, default=None,
                    help="each visible run's own cap in seconds (the config's score_timeout_s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # the draw goes on the record (pack and results/) before anything of the attempt runs
    sealed_at = Path(args.sealed).absolute()
    slot = draws.slot_key(sealed_at.parent.parent.name, sealed_at.parent.name, args.agent, args.fingerprint,
                          args.epoch)
    kept = {name: Path(args.run_dir) / name for name in draws.KEPT_FILES}
    # the slot's draw already ran (this job was killed after its agent ended, before Snakemake saw
    # it finish; or its results were deleted, or made in another working folder on this pack): its
    # result comes back from the record; the slot is not drawn again
    # (a kept run record this sealbench no longer reads cannot be restored either)
    try:
        first = draws.restorable(slot)
        rec = restore_draw(args.run_dir, first) if first is not None else None
    except (draws.NotRestorable, OSError, ValueError, SealbenchError) as exc:
        first = None
        print(f"run_agent: slot {slot} was drawn before and that draw's agent ran to its end, but it could not be "
              f"restored ({exc}); the slot is drawn again: the gate scores it by that draw's outcome if it was "
              "scored, and refuses it (REDRAWN) if not.", file=sys.stderr)
    if first is not None:
        before = ("it was scored before (its results deleted, or made in another working folder)"
                  if first.outcome is not None else "the job was interrupted after its agent ended")
        print(f"run_agent {rec.get('task_id')} {rec.get('solver')}#{rec.get('epoch')}: restored draw {first.draw} "
              f"({first.end_reason}): {before}; not drawn again")
        return 0
    try:
        draw = draws.start_draw(slot)
    except OSError as exc:
        print(f"run_agent: the draw could not be put on the record, so the agent was not started: {exc}. "
              f"The pack folder (${paths.PACK_ENV}) and results/ must be writable: "
              f"{draws.DRAWS} in each records every run before it starts.", file=sys.stderr)
        return 1

    def attempt() -> dict:
        spec = json.loads(args.spec)
        options = RunOptions(sandbox_mode=args.sandbox, stop_on_green=args.stop_on_green,
                             cap_bytes=args.log_cap_bytes, hide=(*paths.locations_to_hide(), *(p.absolute() for p in args.hide)),
                             endpoint=spec.get("endpoint"), upstream=spec.get("upstream"),
                             key_env=spec.get("key_env"), api=spec.get("api"),
                             readonly_paths=tuple(Path(p) for p in spec.get("readonly_paths") or []),
                             limits=limits_arg(args), base=Path.cwd(),
                             visible_timeout_s=args.visible_timeout, env=args.env, draw=draw, slot=slot)
        return run_agent(args.sealed, args.run_dir, args.agent, args.fingerprint, spec["command"],
                         spec.get("env") or {}, args.epoch, json.loads(args.envelope), options)

    ran = run_guarded("run_agent", attempt, lambda exc: harness_failure(args.sealed, args.run_dir, args.agent,
                                                                        args.fingerprint, args.epoch, exc, draw))
    if ran is None:
        return 1
    rec, broke = ran
    if broke:  # the harness broke on this attempt: recorded; the other jobs go on
        draws.note_ran(slot, draw, "harness_error", kept=kept)
        print(f"run_agent: HARNESS ERROR on {rec['task_id']}: {rec['error']}", file=sys.stderr)
        return 0
    # last: the draw "ran" once everything of it is on disk (run.json and patch.diff kept on the
    # record with it); a job killed before this line is an interrupted draw (drawn again, counted
    # in the sentence), one killed after it is restored on resume (above), never drawn again
    if rec.get("stopped"):
        print(f"run_agent {rec['task_id']} {rec['solver']}#{rec['epoch']}: not started, {rec['error']}")
        draws.note_ran(slot, draw, "not started", kept=kept)
        return 0
    print(f"run_agent {rec['task_id']} {rec['solver']}#{rec['epoch']}: {rec['end_reason']} "
          f"exit={rec['exit_code']} wall={rec['wall_s']}s patch={rec['patch_bytes']}B")
    draws.note_ran(slot, draw, rec.get("end_reason"), kept=kept)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
