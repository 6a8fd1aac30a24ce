"""The agent contract as code (docs/contract.md §2): what an agent is given and what it may report.

One place for the environment variables, the report files and their typed fields, the clock
and the outcome statuses. ``run_agent`` (agents), ``session`` (people), ``stratify`` and the
gate read them from here, and the built-in agents write their reports with :func:`write_report`.
Everything an agent writes is untrusted: :func:`read_report` reads it with a size cap, no
symlinks, and leaves an ill-typed field null (never a default that hides the gap).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .untrusted import UntrustedFile, read_untrusted

# ---------------------------------------------------------------------- what the agent is given

#: Every variable an agent (or a person's session) gets, with what it holds.
ENV: dict[str, str] = {
    "SEALBENCH_TASK_ID": "the task's id",
    "SEALBENCH_PROMPT": "path of the task text (prompt.md)",
    "SEALBENCH_WORKSPACE": "the workspace (also the working directory): the repo with the visible tests only",
    "SEALBENCH_VISIBLE_CMD": "a command that runs the visible tests (sealed; the harness records each run)",
    "SEALBENCH_TIME_BOX_S": "the clock in seconds: min(task time_box_sec, envelope max_wall_s)",
    "SEALBENCH_MAX_STEPS": "the envelope's step cap (empty: none)",
    "SEALBENCH_MAX_OUTPUT_TOKENS": "the envelope's output-token cap (empty: none)",
    "SEALBENCH_TEMPERATURE": "the envelope's temperature (set only when the config declares it)",
    "SEALBENCH_MODEL": "the envelope's model id (set only when the config declares it)",
    "SEALBENCH_OUT": "a scratch folder for the reports below (copied out after the run)",
    "SEALBENCH_EPOCH": "the attempt number (1..epochs)",
    "SEALBENCH_ISOLATION": "how the agent is isolated: bwrap or none",
}

#: Set only when the envelope declares them.
OPTIONAL_ENV = {"SEALBENCH_TEMPERATURE": "temperature", "SEALBENCH_MODEL": "model"}


def time_box(time_box_sec: float, envelope: Mapping[str, Any]) -> float:
    """The clock an agent or a person gets: min(task ``time_box_sec``, envelope ``max_wall_s``)."""
    clock = float(time_box_sec)
    if envelope.get("max_wall_s") is not None:
        clock = min(clock, float(envelope["max_wall_s"]))
    return clock


def agent_env(task_id: str, prompt: Path, workspace: Path, visible_cmd: Path, clock: float,
              envelope: Mapping[str, Any], out: Path, epoch: int, isolation: str) -> dict[str, str]:
    """The contract's variables for one attempt (see :data:`ENV`)."""
    def cap(key: str) -> str:
        return "" if envelope.get(key) is None else str(envelope[key])

    env = {
        "SEALBENCH_TASK_ID": task_id,
        "SEALBENCH_PROMPT": str(prompt),
        "SEALBENCH_WORKSPACE": str(workspace),
        "SEALBENCH_VISIBLE_CMD": str(visible_cmd),
        "SEALBENCH_TIME_BOX_S": str(int(clock)),
        "SEALBENCH_MAX_STEPS": cap("max_steps"),
        "SEALBENCH_MAX_OUTPUT_TOKENS": cap("max_output_tokens"),
        **{var: str(envelope[key]) for var, key in OPTIONAL_ENV.items() if envelope.get(key) is not None},
        "SEALBENCH_OUT": str(out),
        "SEALBENCH_EPOCH": str(epoch),
        "SEALBENCH_ISOLATION": isolation,
    }
    assert set(env) <= set(ENV)
    return env


# ------------------------------------------------------------------ what the agent may report

#: ``$SEALBENCH_OUT/usage.json``: what the agent spent (tokens may also be metered by the bridge).
USAGE_FILE = "usage.json"
USAGE_KEYS: dict[str, Any] = {"tokens_in": int, "tokens_out": int, "cost_usd": (int, float), "steps": int}
#: ``$SEALBENCH_OUT/stamp.json``: the session stamp (seed 003), checked against ``health``.
STAMP_FILE = "stamp.json"
STAMP_KEYS: dict[str, Any] = {"server_id": str, "queue_ms": int, "retries": int, "quota_state": str,
                              "route_changed": bool}
#: ``$SEALBENCH_OUT/steers.jsonl``: one line per human intervention after the clock started.
STEERS_FILE = "steers.jsonl"
#: The ``server_id`` recorded for a run of an agent declared ``offline: true`` (no model
#: server, so no session to stamp) that wrote no ``stamp.json`` and reached no server.
OFFLINE_SERVER_ID = "offline"


def _typed(value: Any, typ: Any) -> Any:
    if isinstance(value, bool) and typ is not bool:
        return None
    return value if isinstance(value, typ) else None


def read_report(path: Path, keys: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """Read an agent report; unknown or ill-typed fields stay null. Returns (values, problem).
    A symlink, a special file or one over :data:`~sealbench.core.untrusted.REPORT_CAP` is not read."""
    values: dict[str, Any] = {k: None for k in keys}
    try:
        data = json.loads(read_untrusted(path).decode("utf-8"))
    except FileNotFoundError:
        return values, None
    except UntrustedFile as exc:
        return values, f"{exc}: not read"
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
    """Non-blank lines of ``steers.jsonl``; None when absent or not a readable regular file."""
    try:
        data = read_untrusted(path)
    except (FileNotFoundError, UntrustedFile):
        return None
    return sum(1 for line in data.decode("utf-8", "replace").splitlines() if line.strip())


def write_report(out: Path | str, name: str, values: Mapping[str, Any]) -> Path:
    """Write one report (``usage.json`` or ``stamp.json``) into ``$SEALBENCH_OUT``, atomically;
    its keys must be the contract's (for adapters: a typo is an error here, not a null later)."""
    keys = {USAGE_FILE: USAGE_KEYS, STAMP_FILE: STAMP_KEYS}[name]
    unknown = sorted(set(values) - set(keys))
    if unknown:
        raise ValueError(f"{name}: not contract fields: {', '.join(unknown)} (see sealbench.core.contract)")
    path = Path(out) / name
    tmp = path.with_name(f".{name}.tmp")
    tmp.write_text(json.dumps(dict(values), sort_keys=True))
    os.replace(tmp, path)
    return path


# ------------------------------------------------------------------------------ outcomes

PASS, FAIL, TIMEOUT, TAMPER, INFRA_FAIL, EXCLUDED = "pass", "fail", "timeout", "tamper", "infra_fail", "excluded"
#: Every status a scored row can have (docs/results.md "Run statuses").
STATUSES = (PASS, FAIL, TIMEOUT, TAMPER, INFRA_FAIL, EXCLUDED)
#: Statuses left out of the rates (the sensitivity rate counts them as failures).
ABSTAINED = (EXCLUDED, INFRA_FAIL)
