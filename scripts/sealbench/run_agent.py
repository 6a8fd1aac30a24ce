"""run_agent: one agent attempt on one task, in a fresh workspace, under the task's clock.

Reads:  a sealed task; the agent's command/env from the config; the envelope
Writes: results/tasks/<id>/<digest>/runs/<agent>/<fingerprint>/<epoch>/
          run.json      the run record (times, why it ended, usage/stamp/steers or null)
          patch.diff    the workspace's diff against its one commit
          agent.stdout / agent.stderr, attempts.jsonl (visible-command attempts), out/ (SEALBENCH_OUT)

The agent is a shell command (CONTRACTS §2) run with the workspace as cwd, stdin from
/dev/null and the SEALBENCH_* variables. Its clock is min(task time_box_sec, envelope
max_wall_s); at the clock its whole process group is killed. ``usage.json``, ``stamp.json``
and ``steers.jsonl`` are read when present; a missing file is recorded as unknown (null).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Mapping

from .core import SealbenchError, harness_env, read_json, write_json
from .workspace import make_workspace, run_process, scratch_dir, workspace_patch

USAGE_KEYS = {"tokens_in": int, "tokens_out": int, "cost_usd": (int, float), "steps": int}
STAMP_KEYS = {"server_id": str, "queue_ms": int, "retries": int, "quota_state": str, "route_changed": bool}


def _typed(value: Any, typ: Any) -> Any:
    if isinstance(value, bool) and typ is not bool:
        return None
    return value if isinstance(value, typ) else None


def read_report(path: Path, keys: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Read an agent report; unknown or ill-typed fields stay null. Returns (values, problem)."""
    values: dict[str, Any] = {k: None for k in keys}
    if not path.exists():
        return values, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return values, f"{path.name}: unreadable ({exc})"
    if not isinstance(data, dict):
        return values, f"{path.name}: not a JSON object"
    problems = []
    for k, typ in keys.items():
        if k in data:
            v = _typed(data[k], typ)
            if v is None and data[k] is not None:
                problems.append(f"{k} has the wrong type")
            values[k] = v
    return values, ("; ".join(f"{path.name}: {p}" for p in problems) or None)


def count_steers(path: Path) -> int | None:
    if not path.exists():
        return None
    return sum(1 for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip())


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


def write_visible_wrapper(run_dir: Path, ws: Path, command: str, clock_start: float) -> Path:
    """A script that runs the visible command at the workspace root and logs each attempt."""
    script = run_dir / "visible.sh"
    log = run_dir / "attempts.jsonl"
    py = shlex.quote(sys.executable)
    scripts_dir = shlex.quote(str(Path(__file__).resolve().parents[1]))
    script.write_text(
        "#!/bin/sh\n# sealbench: runs the task's visible command and records the attempt\n"
        f"PYTHONPATH={scripts_dir} exec {py} -m sealbench.run_agent visible "
        f"--ws {shlex.quote(str(ws))} --log {shlex.quote(str(log))} --clock-start {clock_start!r} "
        f"--command {shlex.quote(command)}\n"
    )
    script.chmod(0o755)
    return script


def visible_main(ws: Path, log: Path, clock_start: float, command: str) -> int:
    """Run the visible command (output passes through) and append (time, exit code) to the log."""
    t0 = time.time()
    proc = subprocess.run(["bash", "-c", command], cwd=ws, env=harness_env())
    t1 = time.time()
    with open(log, "a") as fh:
        fh.write(json.dumps({"start_s": round(t0 - clock_start, 3), "end_s": round(t1 - clock_start, 3),
                             "exit": proc.returncode}) + "\n")
    return proc.returncode


def run_agent(sealed: Path, run_dir: Path, agent: str, fingerprint: str, command: str,
              agent_env: Mapping[str, Any], epoch: int, envelope: Mapping[str, Any]) -> dict:
    """Run one attempt (see module docstring) and write ``run.json`` and ``patch.diff``."""
    sealed, run_dir = Path(sealed).resolve(), Path(run_dir).absolute()
    run_dir.mkdir(parents=True, exist_ok=True)
    out = run_dir / "out"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    for stale in ("attempts.jsonl", "patch.diff"):
        (run_dir / stale).unlink(missing_ok=True)
    scratch = scratch_dir("run")
    try:
        return _run_in(scratch, sealed, run_dir, agent, fingerprint, command, agent_env, epoch, envelope)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in(scratch: Path, sealed: Path, run_dir: Path, agent: str, fingerprint: str, command: str,
            agent_env: Mapping[str, Any], epoch: int, envelope: Mapping[str, Any]) -> dict:
    meta = read_json(sealed / "meta.json")
    out = run_dir / "out"
    ws = make_workspace(sealed, scratch / "ws", scratch / "shadow.git")
    prompt = run_dir / "prompt.md"
    shutil.copyfile(sealed / "prompt.md", prompt)
    prompt.chmod(0o444)
    clock = float(meta["time_box_sec"])
    if envelope.get("max_wall_s"):
        clock = min(clock, float(envelope["max_wall_s"]))
    started = time.time()
    visible = write_visible_wrapper(run_dir, ws.root, meta["visible_command"], started)
    env = harness_env({
        "SEALBENCH_TASK_ID": meta["id"],
        "SEALBENCH_PROMPT": str(prompt),
        "SEALBENCH_WORKSPACE": str(ws.root),
        "SEALBENCH_VISIBLE_CMD": str(visible),
        "SEALBENCH_TIME_BOX_S": str(int(clock)),
        "SEALBENCH_MAX_STEPS": "" if envelope.get("max_steps") is None else str(envelope["max_steps"]),
        "SEALBENCH_MAX_OUTPUT_TOKENS": "" if envelope.get("max_output_tokens") is None else str(envelope["max_output_tokens"]),
        "SEALBENCH_OUT": str(out),
        "SEALBENCH_EPOCH": str(epoch),
        # lets `python -m sealbench.agents.*` work without an install
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    })
    env.update({k: str(v) for k, v in agent_env.items()})
    res = run_process(command, ws.root, env, clock, run_dir / "agent.stdout", run_dir / "agent.stderr")
    patch = workspace_patch(ws)
    (run_dir / "patch.diff").write_bytes(patch)
    usage, usage_problem = read_report(out / "usage.json", USAGE_KEYS)
    stamp, stamp_problem = read_report(out / "stamp.json", STAMP_KEYS)
    attempts = read_attempts(run_dir / "attempts.jsonl")
    record = {
        "task_id": meta["id"], "solver": agent, "fingerprint": fingerprint, "epoch": epoch, "role": "agent",
        "command": command, "time_box_s": clock, "task_time_box_s": meta["time_box_sec"],
        "wall_s": res.wall_s, "exit_code": res.returncode, "end_reason": res.end_reason, "timed_out": res.timed_out,
        "base_commit": ws.base_commit, "patch_bytes": len(patch),
        "usage": usage, "stamp": stamp, "steer_count": count_steers(out / "steers.jsonl"),
        "report_problems": [p for p in (usage_problem, stamp_problem) if p],
        "attempts": attempts, "stdout_bytes": res.stdout_bytes, "stderr_bytes": res.stderr_bytes,
        "envelope": dict(envelope),
    }
    write_json(run_dir / "run.json", record)
    return record


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["visible"]:
        vp = argparse.ArgumentParser(prog="sealbench.run_agent visible")
        vp.add_argument("--ws", type=Path, required=True)
        vp.add_argument("--log", type=Path, required=True)
        vp.add_argument("--clock-start", type=float, required=True)
        vp.add_argument("--command", required=True)
        a = vp.parse_args(argv[1:])
        return visible_main(a.ws, a.log, a.clock_start, a.command)
    ap = argparse.ArgumentParser(prog="sealbench.run_agent", description=__doc__.splitlines()[0])
    ap.add_argument("--sealed", type=Path, required=True)
    ap.add_argument("--run-dir", type=Path, required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--fingerprint", required=True)
    ap.add_argument("--spec", required=True, help="JSON: {command, env?}")
    ap.add_argument("--epoch", type=int, required=True)
    ap.add_argument("--envelope", required=True, help="JSON: the config's envelope")
    args = ap.parse_args(argv)
    try:
        spec = json.loads(args.spec)
        rec = run_agent(args.sealed, args.run_dir, args.agent, args.fingerprint, spec["command"],
                        spec.get("env") or {}, args.epoch, json.loads(args.envelope))
    except SealbenchError as exc:
        print(f"run_agent: {exc}", file=sys.stderr)
        return 1
    print(f"run_agent {rec['task_id']} {rec['solver']}#{rec['epoch']}: {rec['end_reason']} "
          f"exit={rec['exit_code']} wall={rec['wall_s']}s patch={rec['patch_bytes']}B")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
