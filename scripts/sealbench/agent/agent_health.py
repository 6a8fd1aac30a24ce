"""Early stop: an agent version whose first runs all failed the same way at start runs no further.

Each run_agent job notes how its run ended in ``results/.sealbench/agent-health/<agent>-<fp>.json``
(under a file lock: jobs run in parallel). When the first :data:`START_FAILURE_RUNS` finished
runs all ended with the same start failure (exit 126/127, or a non-zero exit within
:data:`START_WINDOW_S` with no patch, usage, visible run or server reply; through the bridge with
no reply from the model server at all, however late), later runs of that
version do not start the agent: they are recorded as a harness error with one sentence saying
why, while other agents go on.
"""

from __future__ import annotations

import fcntl
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.contract import STAMP_KEYS, USAGE_KEYS
from ..core.core import read_json, write_json
from ..core.records import RunRecord, write_record

# ---------------------------------------------------------------------------------------------
# Early stop: an agent whose first runs all failed the same way at start runs no further

#: How many first finished runs of one agent version decide whether it starts at all.
START_FAILURE_RUNS = 3
#: A non-zero exit this soon, with no patch, no usage and no visible run, is a failure at start.
START_WINDOW_S = 5.0
#: Where the per-agent records live, under results/.sealbench/.
HEALTH_DIR = Path(".sealbench") / "agent-health"
#: Lines after an error that are not the error: Node's ``Node.js v20.1.0`` banner, ``    at f
#: (file:1:2)`` stack frames, the ``^`` under a source line, a traceback's frame lines.
_EPILOGUE = re.compile(r"^\s*(Node\.js v[0-9.]+|at \S.*|\^+|File \".*\", line \d+.*)\s*$")
#: A retry's progress or a warning: the error, if any, came before it.
_PROGRESS = re.compile(r"^(Retrying\b|Reconnecting\b|WARNING:|Warning:)")
_NOISE_CHARS = re.compile(r"\s+")
_BASH_PREFIX = re.compile(r"^(?:\S*/)?(?:ba)?sh: (?:line \d+: )?")


def health_file(run_dir: Path, agent: str, fingerprint: str) -> Path | None:
    """The agent version's record, for a run folder in the pipeline's layout
    (``results/tasks/<id>/<digest>/runs/<agent>/<fp>/<epoch>``); None for any other folder."""
    parents = Path(run_dir).parents
    if len(parents) < 7 or parents[5].name != "tasks" or parents[2].name != "runs" \
            or parents[1].name != agent or parents[0].name != fingerprint:
        return None
    return parents[6] / HEALTH_DIR / f"{agent}-{fingerprint}.json"


def read_health(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _json_error(text: str) -> str | None:
    """The last error a client reported as a JSON event line on its output (Codex ``--json``:
    ``{"type": "turn.failed", "error": {"message": …}}`` or ``{"type": "error", "message": …}``;
    Claude Code's ``{"type": "result", "is_error": true, "result": …}``), or None."""
    found = None
    for line in text.splitlines():
        line = line.strip()
        if not (line.startswith("{") and '"type"' in line):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind, error = event.get("type"), event.get("error")
        if kind == "turn.failed" and isinstance(error, dict) and error.get("message"):
            found = str(error["message"])
        elif kind == "error" and event.get("message"):
            found = str(event["message"])
        elif kind == "result" and event.get("is_error") and event.get("result"):
            found = str(event["result"])
    return found


def _how_it_ended(run_dir: Path) -> str:
    """The agent's own last error, in words that are the same on every task: an error event a
    client printed as JSON (:func:`_json_error`), else the last line it printed (stderr first)
    that is not a runtime's epilogue, a retry's progress or a warning."""
    try:
        stdout = (run_dir / "agent.stdout").read_text(errors="replace")
    except OSError:
        stdout = ""
    said = _json_error(stdout)
    if said:
        return _NOISE_CHARS.sub(" ", said).strip()[:300]
    for name in ("agent.stderr", "agent.stdout"):
        try:
            text = (run_dir / name).read_text(errors="replace")
        except OSError:
            continue
        # a runtime's epilogue is not the error: Node's version banner, stack frames, the caret
        # line; nor is a retry's progress ("Retrying in 16.0 seconds...") or a warning
        lines = [ln.strip() for ln in text.splitlines()
                 if ln.strip() and not _EPILOGUE.match(ln) and not _PROGRESS.match(ln.strip())]
        if lines:
            line = _BASH_PREFIX.sub("", lines[-1])
            line = re.sub(r"/\S*/sealbench-run-[^/\s'\"]+/ws/?", "", line)  # this run's workspace
            for pat, fmt in ((r"^(.+): command not found$", "command not found: {}"),
                             (r"^(.+): No such file or directory$", "no such file: {}"),
                             (r"^(.+): Permission denied$", "permission denied: {}")):
                m = re.match(pat, line)
                if m:
                    line = fmt.format(m.group(1))
                    break
            return line[:300]
    return "no output"


def start_failure(record: Mapping[str, Any], run_dir: Path) -> str | None:
    """How a finished run failed at start, in words (None: it did not): exit 126/127, or a
    non-zero exit within START_WINDOW_S s — with no patch, no usage, no visible run, no clock or
    limit hit and no reply from its server. Through the bridge (an ``endpoint``) with no reply at
    all, also a later exit or the time box: the model server never answered (a client pointed at a
    dead port retries for a while before it gives up, or until the clock ends it)."""
    metered = record.get("usage_metered")
    if metered and metered.get("responses"):
        return None                         # its server answered: it started
    # through the bridge with no reply at all: the model server never answered, so the agent never
    # started its work, however long its client retried (to its own end or to the time box)
    unanswered = metered is not None
    code = record.get("exit_code")
    if code == 0 or record.get("limit_hit") or record.get("patch_bytes"):
        return None
    if (not unanswered) if record.get("timed_out") else code is None:
        return None
    # what the agent itself reported: a bridge's count of no replies (zeros) is no sign it started;
    # where the bridge saw no reply at all, only tokens the agent says it spent are (mini-swe-agent
    # counts the call that failed as a step, with 0 tokens)
    own = (record.get("usage_agent") if str(record.get("tokens_source") or "").startswith("metered")
           else record.get("usage")) or {}
    spent = any(own.get(k) for k in ("tokens_in", "tokens_out"))
    if record.get("attempts") or spent or (not unanswered and any(v is not None for v in own.values())):
        return None
    if not unanswered and code not in (126, 127) and (record.get("wall_s") or 0) > START_WINDOW_S:
        return None
    return _how_it_ended(run_dir)


def _quoted(text: str) -> str:
    return f'"{text}"' if "'" in text else f"'{text}'"


def note_health(path: Path, record: Mapping[str, Any], failure: str | None) -> dict:
    """Add a finished run to its agent version's record (only its first START_FAILURE_RUNS count)
    under a lock, since runs finish in parallel; decide the stop once they are in."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read_health(path) or {"agent": record["solver"], "fingerprint": record["fingerprint"],
                                      "command": record.get("command"), "first_runs": [], "stopped": None}
        runs = state["first_runs"]
        if len(runs) < START_FAILURE_RUNS:
            # through the bridge with no reply, how the client ended (its exit, or the clock) is
            # not part of the way it failed: a client retrying a dead port ends either way
            unanswered = failure is not None and record.get("usage_metered") is not None
            runs.append({"task_id": record.get("task_id"), "epoch": record.get("epoch"),
                         "exit_code": "no reply" if unanswered else record.get("exit_code"),
                         "wall_s": record.get("wall_s"), "start_failure": failure})
            ways = {(r["exit_code"], r["start_failure"]) for r in runs}
            if len(runs) == START_FAILURE_RUNS and len(ways) == 1 and failure is not None:
                how = "no reply from its model server" if unanswered else f"exit {record.get('exit_code')}"
                state["stopped"] = (f"stopped: the first {START_FAILURE_RUNS} runs of {state['agent']} all ended "
                                    f"{_quoted(failure)} ({how}); "
                                    f"fix the {'endpoint or the ' if unanswered else ''}command and rerun")
            write_json(path, state)
        return state


def stopped_record(sealed: Path, run_dir: Path, agent: str, fingerprint: str, epoch: int, command: str,
                    sentence: str, health: Path) -> dict:
    """run.json (and an empty patch) of a run not started because the agent's first runs all
    failed at start: ``harness_error``, so hidden_score records ``infra_fail`` with the sentence."""
    try:
        task_id = read_json(sealed / "meta.json")["id"]
    except Exception:  # noqa: BLE001 - the record must be written whatever broke
        task_id = sealed.parent.parent.name
    (run_dir / "patch.diff").write_bytes(b"")
    record = {
        "task_id": task_id, "solver": agent, "fingerprint": fingerprint, "epoch": epoch, "role": "agent",
        "command": command, "time_box_s": None, "wall_s": 0.0, "exit_code": None, "end_reason": "harness_error",
        "timed_out": False, "patch_bytes": 0, "usage": {k: None for k in USAGE_KEYS},
        "stamp": {k: None for k in STAMP_KEYS}, "steer_count": None, "tokens_source": None, "attempts": [],
        "isolation": None, "over_envelope": [], "error": sentence,
        "stopped": {"health": str(health), "first_runs": read_health(health).get("first_runs", [])},
    }
    record = write_record(RunRecord, run_dir / "run.json", record)
    return record


