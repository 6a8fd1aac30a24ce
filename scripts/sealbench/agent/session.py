"""Human sessions: a person gets the same workspace, visible command and clock as an agent.

The pipeline scores humans and agents side by side, so a human session ends in exactly the
run record (``run.json``) and ``patch.diff`` an agent run writes (see ``run_agent``), with
``role: "human"`` and ``solver: <who>``. Time spent over the box is a timeout, as for an agent
(a person cannot be killed at the box, so the record says ``timed_out`` instead).

Commands (``sealbench session ...``; the functions of the same name are the API):

- ``start TASK --role human --who NAME``: validates the config and the pack, builds the
  workspace (docs/contract.md §1) in a scratch folder outside the project tree, starts the clock.
- ``check``: runs the task's visible command at the workspace root, in the sandbox an agent's
  visible runs get (the pack and results/ not mounted), and records the attempt.
- ``steer "TEXT"``: records one human intervention (help the person received).
- ``submit``: stops the clock, takes the patch, writes the run record, removes the workspace.
- ``status``: the session, its elapsed/remaining time and attempts so far.
- ``shell``: the sealed shell the person works in (``session_shell``).

Reads:  the config (``config/config.yaml``), the pack's task folder (``meta.json``,
        ``prompt.md``, ``repo/``, ``visible_tests/``; never the hidden tests or gold patch)
Writes: <results>/sessions/current                    the id of the last started session
        <results>/sessions/<session_id>/session.json  the session (status ``open``/``submitted``)
        <results>/sessions/<session_id>/prompt.md     read-only copy of the task prompt
        <results>/sessions/<session_id>/attempts.jsonl  one line per visible attempt
        <results>/sessions/<session_id>/visible_logs/  each visible run's output
        <results>/sessions/<session_id>/out/steers.jsonl  one line per steer
        <results>/tasks/<task_id>/<task_digest>/sessions/<who>/<epoch>/
            run.json, patch.diff, attempts.jsonl, prompt.md, out/steers.jsonl
        a scratch folder ``sealbench-session-*`` in ``$SEALBENCH_TMPDIR`` or the system temp
        dir (the workspace, its shadow git folder and ``.sealbench-session.json``, which names
        the project, results/ and the session for commands run in the workspace), removed at submit.

``session_id`` is ``<task>-<who>-<n>`` (n counts that person's sessions on that task);
``epoch`` is 1 + the number of run records already submitted by that person for that task
snapshot (task digest).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import contract, paths
from ..core.configuration import load_config_file
from ..core.contract import STEERS_FILE, USAGE_KEYS
from ..core.core import (
    SealbenchError,
    atomic_write_text,
    harness_env,
    pytest_options,
    read_json,
    sha256_text,
    task_digest,
    write_json,
)
from ..core.processes import run_process
from ..core.project import SESSION_MARKER
from ..core.records import RunRecord, write_record
from ..core.untrusted import remove_tree
from ..pack.packs import load_pack
from ..pack.task_layout import import_paths, pythonpath_env
from ..pack.workspace import (
    Workspace,
    WorkspaceError,
    make_workspace,
    scratch_dir,
    workspace_patch,
)
from ..scoring.visible import sealed_green

ROLES = ("human",)
WHO_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SCRATCH_PREFIX = "sealbench-session-"
START_HINT = "start one with `sealbench session start TASK --role human --who NAME`"

#: The run record's constant parts for a person (docs/contract.md §2: unknown stays null).
HUMAN_COMMAND = "human session"
HUMAN_STAMP = {"server_id": "human", "queue_ms": 0, "retries": 0, "quota_state": "n/a", "route_changed": False}


class SessionError(SealbenchError):
    """A session command cannot proceed; the message says what to do instead."""


def _now() -> float:
    """The session clock (wall time, seconds since the epoch); tests replace it."""
    return time.time()


# --------------------------------------------------------------------------------------------
# Where things live


def sessions_dir(results: Path) -> Path:
    return Path(results).absolute() / "sessions"


def current_file(results: Path) -> Path:
    return sessions_dir(results) / "current"


def human_fingerprint(who: str) -> str:
    """A person is their own method: sha256("human:" + who), first 16 hex digits."""
    return sha256_text("human:" + who)[:16]


def time_box(meta: dict, envelope: dict) -> float:
    """The clock, exactly as ``run_agent``: min(task time_box_sec, envelope max_wall_s)."""
    return contract.time_box(meta["time_box_sec"], envelope)


@dataclass(frozen=True)
class Session:
    """An on-disk session: its folder and its ``session.json``."""

    dir: Path
    data: dict

    @property
    def id(self) -> str:
        return self.data["session_id"]

    @property
    def is_open(self) -> bool:
        return self.data["status"] == "open"

    @property
    def attempts_path(self) -> Path:
        return self.dir / "attempts.jsonl"

    @property
    def steers_path(self) -> Path:
        return self.dir / "out" / STEERS_FILE

    def elapsed(self, now: float | None = None) -> float:
        end = self.data.get("submitted_at") or (_now() if now is None else now)
        return round(end - self.data["started_at"], 3)

    def remaining(self, now: float | None = None) -> float:
        return round(self.data["time_box_s"] - self.elapsed(now), 3)

    def workspace(self) -> Workspace:
        return Workspace.from_dict(self.data["ws"])


def _load(results: Path, session_id: str) -> Session:
    if not SESSION_ID_RE.match(session_id):
        raise SessionError(f"'{session_id}' is not a session id (like `<task>-<who>-<n>`)")
    d = sessions_dir(results) / session_id
    f = d / "session.json"
    if not f.is_file():
        raise SessionError(f"no session '{session_id}' in {sessions_dir(results)}; "
                           f"`sealbench session status` shows the current one, or {START_HINT}")
    return Session(d, read_json(f))


def resolve(results: Path, session_id: str | None = None) -> Session:
    """The session named by ``session_id``, else the one ``<results>/sessions/current`` names."""
    if session_id:
        return _load(results, session_id)
    cur = current_file(results)
    if not cur.is_file():
        raise SessionError(f"no open session in {sessions_dir(results)}: {START_HINT}")
    sid = cur.read_text(encoding="utf-8").strip()
    if not sid:
        raise SessionError(f"no open session ({cur} is empty): {START_HINT}")
    return _load(results, sid)


def _require_open(s: Session) -> None:
    if not s.is_open:
        raise SessionError(
            f"session {s.id} was already submitted (run record in {s.data.get('run_dir')}); "
            f"nothing more can be recorded in it: {START_HINT} for a new attempt")
    if not Path(s.data["workspace"]).is_dir():
        raise SessionError(f"session {s.id}: its workspace {s.data['workspace']} is gone (removed outside "
                           "sealbench?); this session cannot continue. Start a new one.")


def open_sessions(results: Path) -> list[Session]:
    out = []
    root = sessions_dir(results)
    if not root.is_dir():
        return out
    for f in sorted(root.glob("*/session.json")):
        try:
            data = read_json(f)
        except SealbenchError:
            continue
        if data.get("status") == "open":
            out.append(Session(f.parent, data))
    return out


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _append_jsonl(path: Path, obj: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _remove_scratch(path: Path) -> None:
    """Remove a session's scratch folder, and only a folder this module made."""
    path = Path(path)
    if path.name.startswith(SCRATCH_PREFIX) and path.is_dir():
        remove_tree(path)   # whatever was left in the workspace: iterative, no link followed


# --------------------------------------------------------------------------------------------
# The commands


def start_session(task_id: str, who: str, role: str = "human", config: Path = Path("config/config.yaml"),
                  results: Path = Path("results")) -> Session:
    """Build the workspace, copy the prompt, start the clock and write ``session.json``."""
    if role not in ROLES:
        raise SessionError(f"role '{role}' is not supported by `sealbench session` (only: {', '.join(ROLES)}); "
                           "agents run through the pipeline (`snakemake --cores 4 gate`)")
    if not WHO_RE.match(who or ""):
        raise SessionError(f"--who '{who}': a name must match ^[A-Za-z][A-Za-z0-9_]*$ "
                           "(a letter, then letters, digits or _), e.g. --who ana_r")
    cfg = load_config_file(Path(config))
    pack = Path(str(cfg["pack"])).absolute()
    tasks = {t.id: t for t in load_pack(pack, cfg["strata"])}
    if task_id not in tasks:
        raise SessionError(f"task '{task_id}' is not in pack {pack} (tasks: {', '.join(sorted(tasks))})")
    task = tasks[task_id]
    for s in open_sessions(results):
        if s.data["who"] == who and s.data["task_id"] == task_id:
            raise SessionError(
                f"{who} already has an open session on {task_id}: {s.id} (workspace {s.data['workspace']}); "
                f"continue it (`sealbench session check --session {s.id}`) or end it "
                f"(`sealbench session submit --session {s.id}`) first")
    digest = task_digest(task.dir)
    envelope = dict(cfg["envelope"])
    root = sessions_dir(results)
    root.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        sdir = root / f"{task_id}-{who}-{n}"
        try:
            sdir.mkdir()
            break
        except FileExistsError:
            n += 1
    scratch = scratch_dir("session")
    try:
        ws = make_workspace(task.dir, scratch / "ws", scratch / "private")   # a copy: the person's editor works on it
        prompt = sdir / "prompt.md"
        shutil.copyfile(task.dir / "prompt.md", prompt)
        prompt.chmod(0o444)
        (sdir / "out").mkdir()
        (sdir / "out" / STEERS_FILE).touch()
        data = {
            "session_id": sdir.name, "task_id": task_id, "task_digest": digest, "pack": str(pack),
            "who": who, "role": role, "started_at": _now(), "time_box_s": time_box(task.meta, envelope),
            "task_time_box_s": task.meta["time_box_sec"], "envelope": envelope,
            "base_commit": ws.base_commit, "workspace": str(ws.root), "ws": ws.to_dict(),
            "scratch": str(scratch), "visible_command": task.meta["visible_command"],
            "import_paths": import_paths(task.dir / "repo", task.meta),
            "prompt": str(prompt), "results": str(Path(results).absolute()), "status": "open",
            # the sandbox the visible runs and the sealed shell get, as an agent's (config sandbox, limits)
            "sandbox": cfg["sandbox"], "limits": cfg["limits"],
        }
        write_json(sdir / "session.json", data)
        # beside the workspace: the commands run in it find the project, results/ and this session
        write_json(scratch / SESSION_MARKER, {"project": str(Path.cwd()), "results": data["results"],
                                              "session_id": sdir.name})
    except BaseException:
        _remove_scratch(scratch)
        if (sdir / "prompt.md").exists():
            (sdir / "prompt.md").chmod(0o644)
        remove_tree(sdir)
        raise
    atomic_write_text(current_file(results), sdir.name + "\n")
    return Session(sdir, data)


def check(session_id: str | None = None, results: Path = Path("results")) -> tuple[int, dict]:
    """Run the visible command at the workspace root in the session's sandbox (its output then
    printed; kept in ``visible_logs/``) and append ``{"start_s", "end_s", "exit"}`` to
    ``attempts.jsonl``. Returns (exit code, attempt)."""
    s = resolve(results, session_id)
    _require_open(s)
    box = session_sandbox(s)
    n = len(read_jsonl(s.attempts_path)) + 1
    logs = s.dir / "visible_logs"
    t0 = _now()
    task_env = pythonpath_env(Path(s.data["workspace"]), s.data.get("import_paths") or [])
    res = run_process(s.data["visible_command"], Path(s.data["workspace"]),
                      harness_env({**pytest_options(), **task_env}), max(5.0, float(s.data["time_box_s"])), logs / f"visible-{n}.stdout", logs / f"visible-{n}.stderr",
                      sandbox=box)
    t1 = _now()
    for log, stream in ((logs / f"visible-{n}.stdout", sys.stdout), (logs / f"visible-{n}.stderr", sys.stderr)):
        stream.write(log.read_bytes().decode("utf-8", "replace"))
        stream.flush()
    rc = res.returncode if res.end_reason == "exit" and res.returncode is not None else 124
    started = s.data["started_at"]
    attempt = {"start_s": round(t0 - started, 3), "end_s": round(t1 - started, 3), "exit": rc}
    if rc == 0:
        # the same rule as for agents: green only if the workspace as it stands passes the
        # visible tests restored from the pack, under the tamper rules (visible.sealed_green)
        task_dir = Path(s.data["pack"]) / "tasks" / s.data["task_id"]
        try:
            green, why = sealed_green(task_dir, read_json(task_dir / "meta.json"), s.workspace(),
                                      s.dir / "visible_logs" / f"sealed-{n}", max(5.0, s.remaining()), box)
        except Exception as exc:  # noqa: BLE001 - a check that broke is not a green
            green, why = False, f"the sealed check could not run: {type(exc).__name__}: {exc}"
        attempt.update(sealed_green=green, sealed_reason=why)
    _append_jsonl(s.attempts_path, attempt)
    return rc, attempt


def session_sandbox(s: Session):
    """The sandbox a session's visible runs get, as an agent's (``run_agent``'s tests sandbox): the
    workspace writable; the pack, results/ and the project not mounted; the config's ``sandbox``
    level and ``limits`` (recorded at start). The sealed shell is ``session_shell``."""
    from ..isolation.sandbox import make_sandbox, resolve_level

    return make_sandbox(resolve_level(s.data.get("sandbox", "auto")), writable=[Path(s.data["workspace"])],
                        hide=[Path(s.data["pack"]), Path(s.data["results"])], limits=s.data.get("limits"))


def steer(text: str, session_id: str | None = None, results: Path = Path("results")) -> dict:
    """Record one human intervention after the clock started (for a person: help received)."""
    if not text or not text.strip():
        raise SessionError('a steer needs a text saying what help was given, e.g. '
                           '`sealbench session steer "pointed at the tariff module"`')
    s = resolve(results, session_id)
    _require_open(s)
    line = {"t_s": s.elapsed(), "text": text}
    _append_jsonl(s.steers_path, line)
    return line


def _next_epoch(base: Path) -> int:
    done = [p for p in base.iterdir() if p.name.isdigit() and (p / "run.json").is_file()] if base.is_dir() else []
    return 1 + len(done)


def submit(session_id: str | None = None, results: Path = Path("results")) -> dict:
    """Stop the clock, write ``run.json`` + ``patch.diff`` (the agent run format), close the
    session and remove its workspace. Returns the run record."""
    s = resolve(results, session_id)
    _require_open(s)
    submitted_at = _now()
    d = s.data
    wall = round(submitted_at - d["started_at"], 3)
    try:
        patch = workspace_patch(s.workspace())
    except WorkspaceError as exc:
        raise SessionError(f"session {s.id}: could not take the patch of {d['workspace']}: {exc}; "
                           "the session stays open (nothing was written)") from exc
    base = Path(paths.sessions_of(d["task_id"], d["task_digest"], d["who"], str(d["results"])))
    epoch = _next_epoch(base)
    run_dir = base / str(epoch)
    left = remove_tree(run_dir)   # a leftover of an interrupted submit (no run.json): replace it
    if left:
        raise SessionError(f"session {s.id}: {run_dir} could not be replaced: {'; '.join(left)}")
    (run_dir / "out").mkdir(parents=True)
    (run_dir / "patch.diff").write_bytes(patch)
    for name in ("attempts.jsonl", "prompt.md", "out/steers.jsonl"):
        if (s.dir / name).exists():
            shutil.copyfile(s.dir / name, run_dir / name)
    steers = [ln for ln in (s.steers_path.read_text(encoding="utf-8", errors="replace").splitlines()
                            if s.steers_path.exists() else []) if ln.strip()]
    timed_out = wall > d["time_box_s"]
    record = {
        "task_id": d["task_id"], "solver": d["who"], "fingerprint": human_fingerprint(d["who"]),
        "epoch": epoch, "role": "human", "command": HUMAN_COMMAND,
        "time_box_s": d["time_box_s"], "task_time_box_s": d["task_time_box_s"],
        "wall_s": wall, "exit_code": 0, "end_reason": "time_box" if timed_out else "submit",
        "timed_out": timed_out, "base_commit": d["base_commit"], "workspace": d["ws"]["kind"], "patch_bytes": len(patch),
        "usage": {k: None for k in USAGE_KEYS}, "stamp": dict(HUMAN_STAMP),
        "steer_count": len(steers), "report_problems": [], "attempts": read_jsonl(s.attempts_path),
        "stdout_bytes": 0, "stderr_bytes": 0, "envelope": dict(d["envelope"]),
        # a person works on their own machine: no sandbox, no output capture, no stop at green
        "stdout_truncated_bytes": 0, "stderr_truncated_bytes": 0, "log_cap_bytes": None,
        "isolation": "human", "endpoint": None, "over_envelope": [], "envelope_unconfirmed": [],
        "stop_on_green": False,
        # a person's tokens are not metered and their machine has no sandbox limits
        "usage_agent": {k: None for k in USAGE_KEYS}, "tokens_source": None, "usage_metered": None,
        "session_observed": None,  # no bridge: the session command writes the person's stamp
        "limit_hit": None, "limits": None, "limit_mechanisms": None, "patch_error": None,
        # no command ran: nothing was mounted, nothing ended on a signal
        "command_run": None, "agent_paths": [], "signal": None,
        "who": d["who"], "session_id": s.id,
    }
    record = write_record(RunRecord, run_dir / "run.json", record)
    write_json(s.dir / "session.json", dict(d, status="submitted", submitted_at=submitted_at, run_dir=str(run_dir)))
    _remove_scratch(Path(d["scratch"]))
    return dict(record, run_dir=str(run_dir))


@dataclass(frozen=True)
class Status:
    session: Session
    elapsed_s: float
    remaining_s: float
    attempts: list[dict]
    steer_count: int


def status(session_id: str | None = None, results: Path = Path("results")) -> Status:
    """The session (open or submitted), its elapsed/remaining time, attempts and steers."""
    s = resolve(results, session_id)
    return Status(s, s.elapsed(), s.remaining(), read_jsonl(s.attempts_path), len(read_jsonl(s.steers_path)))


# --------------------------------------------------------------------------------------------
# Text for the terminal (the CLI prints these)


def fmt_s(seconds: float) -> str:
    sign = "-" if seconds < 0 else ""
    seconds = abs(round(seconds))
    return f"{sign}{seconds // 60}m{seconds % 60:02d}s"


def clock_line(s: Session) -> str:
    el, rem = s.elapsed(), s.remaining()
    if rem >= 0:
        return f"elapsed {fmt_s(el)}, remaining {fmt_s(rem)} of the {fmt_s(s.data['time_box_s'])} time box"
    return (f"elapsed {fmt_s(el)}: OVER the {fmt_s(s.data['time_box_s'])} time box by {fmt_s(-rem)}; "
            "this session will be scored as a timeout — submit with `sealbench session submit`")


def describe_start(s: Session) -> str:
    d = s.data
    prompt = Path(d["prompt"]).read_text(encoding="utf-8")
    return (
        f"session {s.id} started for {d['who']} on {d['task_id']} (clock running)\n"
        f"workspace: {d['workspace']}\n"
        f"time box: {fmt_s(d['time_box_s'])} ({d['time_box_s']:g} s)\n"
        f"prompt ({d['prompt']}):\n"
        + "\n".join("    " + ln for ln in prompt.splitlines()) + "\n"
        f"visible command: {d['visible_command']}\n"
        "run `sealbench session check` to run the visible tests; "
        "`sealbench session submit` when you are done"
    )


def describe_status(st: Status) -> str:
    s, d = st.session, st.session.data
    head = f"session {s.id}: {d['who']} on {d['task_id']} ({d['status']})\nworkspace: {d['workspace']}"
    if s.is_open:
        clock = clock_line(s)
    else:
        clock = f"submitted after {fmt_s(st.elapsed_s)}; run record in {d.get('run_dir')}"
    tries = ", ".join(f"{'green' if a.get('exit') == 0 else 'exit ' + str(a.get('exit'))} at {fmt_s(a['end_s'])}"
                      for a in st.attempts) or "none yet"
    return f"{head}\n{clock}\nvisible attempts ({len(st.attempts)}): {tries}\nsteers: {st.steer_count}"


def describe_submit(rec: dict) -> str:
    over = (f"OVER the time box ({rec['wall_s']:.1f} s > {rec['time_box_s']:g} s): recorded as a timeout"
            if rec["timed_out"] else f"within the time box ({rec['wall_s']:.1f} s of {rec['time_box_s']:g} s)")
    return (f"submitted {rec['session_id']} as {rec['solver']} epoch {rec['epoch']}: {over}\n"
            f"run record: {Path(rec['run_dir']) / 'run.json'}\n"
            f"patch: {Path(rec['run_dir']) / 'patch.diff'} ({rec['patch_bytes']} bytes); "
            f"{len(rec['attempts'])} visible attempts, {rec['steer_count']} steers; workspace removed")
