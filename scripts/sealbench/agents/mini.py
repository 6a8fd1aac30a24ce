"""sealbench adapter for mini-swe-agent (the ``mini`` CLI, 2.x) against an OpenAI-compatible server.

Usage (the agent command in the config; the server is the agent's ``endpoint``)::

    python -m sealbench.agents.mini --model NAME --api-base http://127.0.0.1:PORT/v1 \\
        [--text-mode] [--cost-limit X] [--api-key KEY]

Reads
    * the agent-contract variables: SEALBENCH_PROMPT (the task text), SEALBENCH_VISIBLE_CMD,
      SEALBENCH_MAX_STEPS, SEALBENCH_OUT (and runs in SEALBENCH_WORKSPACE, the cwd);
    * ``$SEALBENCH_OUT/traj.json``, the trajectory mini writes after every step.

Executes
    ``mini`` (found next to ``sys.executable``, else on PATH) non-interactively, stdin from
    /dev/null, with ``MSWEA_CONFIGURED=1`` (no first-run wizard), ``LITELLM_LOCAL_MODEL_COST_MAP=True``
    (litellm downloads nothing) and a private, empty ``MSWEA_GLOBAL_CONFIG_DIR`` (a user's global
    ``.env`` cannot change the run)::

        mini -m openai/NAME -t TASK -y --exit-immediately -c mini.yaml
             -c model.model_kwargs.api_base=URL -c model.model_kwargs.api_key=x
             -c model.cost_tracking=ignore_errors -c agent.step_limit=$SEALBENCH_MAX_STEPS
             [-c agent.cost_limit=X] -o $SEALBENCH_OUT/traj.json

    ``--text-mode`` (a server without tool calls) uses ``-c mini_textbased.yaml`` and
    ``--model-class litellm_textbased`` instead. TASK is the prompt plus one line telling mini to
    check its work with ``$SEALBENCH_VISIBLE_CMD``.

Writes into SEALBENCH_OUT
    * ``usage.json``: ``tokens_in`` / ``tokens_out`` = the sum of ``prompt_tokens`` /
      ``completion_tokens`` of ``extra.response.usage`` over every message of the trajectory,
      format-error turns included (mini keeps the response of a rejected turn there too);
      ``steps`` = ``info.model_stats.api_calls``; ``cost_usd`` = ``info.model_stats.instance_cost``
      — except that mini never records a computed cost <= 0, so an ``instance_cost`` of 0.0 after
      one or more calls means "litellm had no price for this model" and is written as null
      (unknown), not as free. Rewritten (atomically) while mini runs, so a run killed at the time
      box still reports the totals of mini's last saved step. No trajectory: no usage.json.
    * ``stamp.json``: ``server_id`` = the api base, ``queue_ms`` 0, ``retries`` 0, ``quota_state``
      "ok", ``route_changed`` false. These are facts about a loopback server that this adapter
      names itself (no queue, no quota, no routing between sealbench and it); they say nothing
      about what a server behind that address might do.
    * ``steers.jsonl``: empty (non-interactive: nobody steers).
    * ``mini_exit.json``: mini's exit code and its ``info.exit_status`` (e.g. ``Submitted``,
      ``LimitsExceeded``, ``RepeatedFormatError``, or an exception name).
    * ``traj.json``: mini's trajectory.

Exits with mini's exit code (2 if ``mini`` is not installed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from ..core import contract
from ..core.core import write_json

SNAPSHOT_EVERY_S = 1.0


def find_mini(given: str | None = None) -> str | None:
    """The ``mini`` executable: ``given`` (``--mini``: the mini-swe-agent client preset's own
    venv), else next to this interpreter (a venv's bin/), else on PATH."""
    if given:
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    here = Path(sys.executable).parent / "mini"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("mini")


def task_text(prompt_path: str | None) -> str:
    prompt = Path(prompt_path).read_text(encoding="utf-8", errors="replace").strip() if prompt_path else ""
    return (f"{prompt}\n\nTo check your work, run `$SEALBENCH_VISIBLE_CMD` (the visible tests) at the "
            "repository root; do not edit the files under visible_tests/.")


def mini_argv(mini: str, args: argparse.Namespace, task: str, traj: Path, env: dict[str, str]) -> list[str]:
    model = args.model if args.model.startswith("openai/") else f"openai/{args.model}"
    argv = [mini, "-m", model, "-t", task, "-y", "--exit-immediately"]
    if args.text_mode:
        argv += ["--model-class", "litellm_textbased", "-c", "mini_textbased.yaml"]
    else:
        argv += ["-c", "mini.yaml"]
    argv += ["-c", f"model.model_kwargs.api_base={args.api_base}",
             "-c", f"model.model_kwargs.api_key={args.api_key}",
             "-c", "model.cost_tracking=ignore_errors"]
    steps = env.get("SEALBENCH_MAX_STEPS", "").strip()
    if steps.isdigit():
        argv += ["-c", f"agent.step_limit={int(steps)}"]
    if args.cost_limit is not None:
        argv += ["-c", f"agent.cost_limit={args.cost_limit}"]
    return argv + ["-o", str(traj)]


def usage_from_trajectory(traj: dict[str, Any]) -> dict[str, Any]:
    """usage.json from a mini trajectory (see the module docstring)."""
    tokens_in = tokens_out = 0
    for msg in traj.get("messages") or []:
        extra = msg.get("extra") if isinstance(msg, dict) else None
        response = extra.get("response") if isinstance(extra, dict) else None
        usage = response.get("usage") if isinstance(response, dict) else None
        if isinstance(usage, dict):
            tokens_in += int(usage.get("prompt_tokens") or 0)
            tokens_out += int(usage.get("completion_tokens") or 0)
    stats = (traj.get("info") or {}).get("model_stats") or {}
    steps = stats.get("api_calls")
    cost = stats.get("instance_cost")
    if not isinstance(cost, (int, float)) or isinstance(cost, bool) or (cost == 0 and (steps or 0) > 0):
        cost = None
    return {"tokens_in": tokens_in, "tokens_out": tokens_out,
            "cost_usd": None if cost is None else float(cost),
            "steps": steps if isinstance(steps, int) and not isinstance(steps, bool) else None}


def read_trajectory(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, or caught mid-write: try again later
    return data if isinstance(data, dict) else None


def report(traj_path: Path, out: Path) -> dict | None:
    """Rewrite usage.json from the trajectory if it can be read; returns the trajectory."""
    traj = read_trajectory(traj_path)
    if traj is not None:
        contract.write_report(out, contract.USAGE_FILE, usage_from_trajectory(traj))
    return traj


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.agents.mini", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="model name as the server knows it (sent as openai/NAME)")
    ap.add_argument("--api-base", required=True, help="e.g. http://127.0.0.1:8000/v1 (the agent's endpoint)")
    ap.add_argument("--api-key", default="x", help="sent as the bearer key (a loopback server ignores it)")
    ap.add_argument("--text-mode", action="store_true",
                    help="server without tool calls: mini_textbased.yaml + --model-class litellm_textbased")
    ap.add_argument("--cost-limit", type=float, default=None, help="agent.cost_limit in USD (0 = none)")
    ap.add_argument("--mini", default=None, help="the mini executable (default: next to this Python, else on PATH)")
    args = ap.parse_args(argv)

    out = Path(os.environ.get("SEALBENCH_OUT") or ".").absolute()
    out.mkdir(parents=True, exist_ok=True)
    # Facts about a loopback server, named by this adapter (see the module docstring).
    contract.write_report(out, contract.STAMP_FILE, {"server_id": args.api_base, "queue_ms": 0, "retries": 0,
                                                     "quota_state": "ok", "route_changed": False})
    (out / contract.STEERS_FILE).write_text("")
    mini = find_mini(args.mini)
    if mini is None:
        where = args.mini or f"next to {sys.executable} nor on PATH"
        print(f"sealbench.agents.mini: the `mini` command was not found ({where}): pip install mini-swe-agent",
              file=sys.stderr)
        write_json(out / "mini_exit.json", {"returncode": 2, "exit_status": None, "error": "mini not found"})
        return 2

    traj_path = out / "traj.json"
    traj_path.unlink(missing_ok=True)
    config_dir = tempfile.mkdtemp(prefix="mini-config-")
    env = dict(os.environ)
    env.update({"MSWEA_CONFIGURED": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "MSWEA_GLOBAL_CONFIG_DIR": config_dir})
    cmd = mini_argv(mini, args, task_text(env.get("SEALBENCH_PROMPT")), traj_path, env)

    done = threading.Event()

    def snapshot() -> None:  # keep usage.json current in case the clock kills us
        while not done.wait(SNAPSHOT_EVERY_S):
            report(traj_path, out)

    watcher = threading.Thread(target=snapshot, daemon=True)
    watcher.start()
    try:
        rc = subprocess.call(cmd, stdin=subprocess.DEVNULL, env=env)
    finally:
        done.set()
        watcher.join()
        shutil.rmtree(config_dir, ignore_errors=True)
    traj = report(traj_path, out)
    info = (traj or {}).get("info") or {}
    write_json(out / "mini_exit.json", {"returncode": rc, "exit_status": info.get("exit_status"),
                                               "mini_version": info.get("mini_version")})
    if traj is None:
        print(f"sealbench.agents.mini: mini wrote no readable trajectory ({traj_path}); usage unknown",
              file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
