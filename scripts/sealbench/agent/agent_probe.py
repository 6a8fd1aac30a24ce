"""Before any job: can each agent's command start here? And what a command may name.

:func:`probe_agent` checks, in the same sandbox and environment a run gets and without running
the agent, that the command's first word is found and executable (and its ``#!`` interpreter,
its script, its ``python -m`` module); a failure is reported with the shell's exit code (127
not found, 126 not executable). :func:`start_check` runs it for the agents a pipeline schedules
(``onstart``) and ``sealbench validate`` prints it. :func:`refuse_hidden`: a command may not
name a path inside the pack or results/.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.core import ConfigError, harness_env
from ..core.processes import run_process
from ..core.shell_syntax import runtime_word
from ..core.untrusted import remove_tree
from ..isolation.sandbox import SandboxUnavailable, make_sandbox, never_mounted, resolve_level
from ..pack.workspace import scratch_dir
from .agent_command import CommandPlan, command_plan
from .agent_health import HEALTH_DIR


def worker_env(level: str, agent_env: Mapping[str, Any], contract_env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment, an allowlist (docs/contract.md §2): the harness's fixed variables
    (``core.harness_env``: a minimal PATH, HOME, locale; nothing of the harness's own environment),
    the contract's variables for this run, ``TMPDIR`` where the sandbox has its own /tmp, then
    what the agent's ``env:`` declares."""
    env = harness_env({
        **contract_env,
        # lets `python -m sealbench.agents.*` work without an install
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
    })
    if level == "bwrap":
        env["TMPDIR"] = "/tmp"
    env.update({k: str(v) for k, v in agent_env.items()})
    return env


# ---------------------------------------------------------------------------------------------
# What a command may name: never the pack or results/


def _within(p: Path, folder: Path) -> bool:
    return p == folder or folder in p.parents


def hidden_folders(hide: Iterable[Path | str | None]) -> list[Path]:
    out: list[Path] = []
    for h in hide:
        if h:
            out += [Path(os.path.abspath(h)), Path(os.path.realpath(h))]
    return out


def blocked(path: Path | str, hidden: list[Path]) -> bool:
    """Whether a path a command (or readonly_paths) names must not be mounted: inside a hidden
    folder (the pack, results/) or one of sealbench's scratch folders (``sandbox.never_mounted``)."""
    cands = (Path(os.path.abspath(path)), Path(os.path.realpath(path)))
    return any(_within(c, h) for c in cands for h in hidden) or never_mounted(path)


def refuse_hidden(agent: str, plan: CommandPlan, readonly_paths: Iterable[Path | str],
                  hide: Iterable[Path | str | None]) -> None:
    """Raise :class:`ConfigError` when the command (or ``readonly_paths``) names a path inside a
    folder no agent may see (the pack, results/): mounting it would show it to the agent."""
    hidden = hidden_folders(hide)
    named = [(n.word, Path(n.path)) for n in plan.named if n.role != "interpreter"]
    named += [(str(r), Path(plan.base) / Path(r).expanduser()) for r in readonly_paths]
    for word, p in named:
        for cand in (Path(os.path.abspath(p)), Path(os.path.realpath(p))):
            folder = next((h for h in hidden if _within(cand, h)), None)
            if folder is not None:
                raise ConfigError(
                    f"agent '{agent}': its command or readonly_paths name '{word}', inside {folder}, which no "
                    "agent may see (the pack and results/ are never mounted in the sandbox). Move what the "
                    "agent needs out of it, or drop the word")


# ---------------------------------------------------------------------------------------------
# The start check: can the agent's first command start here? (nothing of the agent is run)

#: Run by the harness's own interpreter inside the sandbox (``-I -S``: nothing of the agent's
#: Python path is imported); argv[1] is JSON. Prints one line, exits 0, 126 or 127 like a shell.
_PROBE = r"""
import json, os, shutil, subprocess, sys
a = json.loads(sys.argv[1])
def done(code, msg):
    print(msg)
    sys.exit(code)
w, shown = a["word"], a["shown"]
if "/" in w:
    p = w
    if not os.path.exists(p):
        done(127, f"no such file: {shown}")
    if os.path.isdir(p):
        done(126, f"{shown} is a folder, not a program")
    if not os.access(p, os.X_OK):
        done(126, f"{shown} is not executable (chmod +x it, or name its interpreter: python {shown})")
else:
    p = shutil.which(w)
    if p is None:
        done(127, f"command not found: {w}")
try:
    with open(p, "rb") as fh:
        bang = fh.readline(256)
except OSError as e:
    done(126, f"{shown} cannot be read here ({e.strerror})")
if bang.startswith(b"#!"):
    parts = bang[2:].decode("utf-8", "replace").split()
    if not parts or not os.access(parts[0], os.X_OK):
        done(126, f"{shown}: its #! interpreter {parts[0] if parts else '(none)'} is not here (bad interpreter)")
    if os.path.basename(parts[0]) == "env":
        rest = [x for x in parts[1:] if not x.startswith("-") and "=" not in x]
        if rest and shutil.which(rest[0]) is None:
            done(127, f"{shown}: its #! interpreter '{rest[0]}' is not on the agent's PATH")
s = a.get("script")
if s is not None:
    if not os.path.isfile(s):
        done(127, f"no such file: {a['script_shown']} ({w} cannot open its script)")
    if not os.access(s, os.R_OK):
        done(126, f"{a['script_shown']} cannot be read ({w} cannot open its script)")
m = a.get("module")
if m:
    top = m.split(".")[0]
    code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 3)"
    try:
        r = subprocess.run([p, "-c", code, top], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        done(126, f"{w} could not be run to look for module {top}: {e}")
    if r.returncode == 3:
        done(127, f"no module named '{top}' for {w} (python -m {m} cannot start)")
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        done(126, f"{w} fails at start: {last}")
done(0, (f"{shown} is executable" if "/" in w else f"{w} is {p}") + (f", {a['script_shown']} readable" if s else "")
     + (f", module {m.split('.')[0]} found" if m else ""))
"""


@dataclass(frozen=True)
class Probe:
    """The start check of one agent: ``ok``, or why its command cannot start (``reason``) and the
    exit the shell would give (126/127; None when it was refused without running anything)."""

    agent: str
    command: str
    ok: bool
    reason: str
    exit_code: int | None = None
    isolation: str | None = None

    def line(self) -> str:
        if self.ok:
            return f"start check {self.agent}: ok ({self.reason})"
        code = f" (exit {self.exit_code})" if self.exit_code is not None else ""
        return f"start check {self.agent}: FAILED: {self.reason}{code}; command: {self.command}"


def probe_agent(agent: str, spec: Mapping[str, Any], sandbox_mode: str = "auto", base: Path | str | None = None,
                hide: Iterable[Path | str | None] = (), limits: Mapping[str, Any] | None = None) -> Probe:
    """Whether ``spec``'s command can start, checked in the sandbox a run gets (same mounts, same
    environment, an empty workspace) without running the agent: its first command found on the
    agent's PATH or at the path it names, executable, its ``#!`` interpreter present; for a
    Python, its script readable or its ``-m`` module found. A command naming a path inside
    ``hide`` is refused."""
    command = spec["command"]
    base = Path(os.path.abspath(base if base is not None else Path.cwd()))
    agent_env = {k: str(v) for k, v in (spec.get("env") or {}).items()}
    readonly = tuple(Path(base) / Path(r).expanduser() for r in spec.get("readonly_paths") or [])
    try:
        plan = command_plan(agent, {"command": command, "env": agent_env}, base)
        refuse_hidden(agent, plan, spec.get("readonly_paths") or [], hide)
        level = resolve_level(sandbox_mode)
    except (ConfigError, SandboxUnavailable) as exc:
        return Probe(agent, command, False, str(exc))
    plan = plan.without(lambda n: never_mounted(n.path))
    readonly = tuple(r for r in readonly if not never_mounted(r))
    syntax = shell_syntax_error(command)
    if syntax is not None:
        return Probe(agent, command, False, f"bash cannot read the command: {syntax}", 2, level)
    if plan.first is None:
        return Probe(agent, command, True, "shell builtins only: nothing to start", 0, level)
    said: list[str] = []
    for first in plan.entries:  # the first command, or each case branch's: one of them runs first
        res = _probe_start(agent, command, first, plan, readonly, agent_env, level, hide, limits)
        if not res.ok:
            return res
        said.append(res.reason)
    return Probe(agent, command, True, "; ".join(dict.fromkeys(said)), 0, level)


def shell_syntax_error(command: str) -> str | None:
    """What ``bash -n`` says of ``command`` (the shell every run uses, reading without running
    anything), None when it reads it; None too when bash cannot be asked (the runs will say)."""
    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        r = subprocess.run([bash, "--norc", "--noprofile", "-n", "-c", command], stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=20, env={"PATH": os.defpath, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode == 0:
        return None
    lines = [ln.strip() for ln in r.stderr.splitlines() if ln.strip()]
    return re.sub(r"^\S*bash: (-c: )?", "", lines[0]) if lines else f"bash -n exited {r.returncode}"


def _probe_start(agent: str, command: str, first: Mapping[str, Any], plan: CommandPlan, readonly: tuple[Path, ...],
                 agent_env: Mapping[str, str], level: str, hide: Iterable[Path | str | None],
                 limits: Mapping[str, Any] | None) -> Probe:
    """The probe of one command that may run first (see :func:`probe_agent`)."""
    if runtime_word(first["word"]) or (first["python"] and first["script"] is None and first["module"] is None):
        return Probe(agent, command, True, f"{first['word']} not checked: its command is only known at run time",
                     0, level)
    word = first["word"]
    after_cd = first.get("after_cd")  # a `cd` came first: a relative path is not the project's, nor checked
    if after_cd and "/" in word and not os.path.isabs(word):
        return Probe(agent, command, True, f"{word} not checked: it is relative to the folder a cd went to", 0, level)
    if "/" in word:  # as the sandbox runs it: made absolute when it names the agent's file
        word = first["path"] or word
    args = {"word": word, "shown": first["word"], "script": None, "module": first["module"]}
    if first["script"] is not None and not (after_cd and not os.path.isabs(first["script"])):
        named = os.path.exists(first["script_path"] or "")
        args.update(script=first["script_path"] if named else first["script"], script_shown=first["script"])
    scratch = scratch_dir("probe")
    try:
        ws = scratch / "ws"
        ws.mkdir()
        box = make_sandbox(level, writable=[ws], hide=(*(h for h in hide if h), Path(plan.base)),
                           readable=[*readonly, *plan.mounts], limits=limits)
        env = worker_env(level, agent_env, {"SEALBENCH_WORKSPACE": str(ws), "SEALBENCH_ISOLATION": level})
        probe = f"exec {shlex.quote(sys.executable)} -I -S -c {shlex.quote(_PROBE)} {shlex.quote(json.dumps(args))}"
        res = run_process(probe, ws, env, 90, scratch / "probe.out", scratch / "probe.err", sandbox=box,
                          cap_bytes=1 << 16)
        said = (scratch / "probe.out").read_text(errors="replace").strip().splitlines()
        err = (scratch / "probe.err").read_text(errors="replace").strip().splitlines()
    finally:
        remove_tree(scratch)   # what the probed command left (iterative, no link followed)
    if res.returncode == 0:
        return Probe(agent, command, True, said[-1] if said else "starts", 0, level)
    why = said[-1] if said else (err[-1] if err else f"the check itself failed ({res.end_reason})")
    return Probe(agent, command, False, why, res.returncode, level)


def check_agents(agents: Mapping[str, Mapping[str, Any]], sandbox_mode: str, base: Path | str,
                 pack: Path | str, results: Path | str, limits: Mapping[str, Any] | None = None) -> list[Probe]:
    """:func:`probe_agent` for every configured agent, the pack and results/ hidden."""
    hide = (Path(os.path.abspath(pack)), Path(os.path.abspath(results)))
    return [probe_agent(name, spec, sandbox_mode, base, hide, limits) for name, spec in sorted(agents.items())]


def start_check(agents: Mapping[str, Mapping[str, Any]], sandbox_mode: str, base: Path | str, pack: Path | str,
                results: Path | str, limits: Mapping[str, Any] | None = None) -> str | None:
    """The pipeline's start: forget the agents' earlier start failures (a new run starts fresh)
    and probe every agent. None when all can start, else one message naming each that cannot."""
    folder = Path(results) / HEALTH_DIR
    if folder.is_dir():
        for f in folder.iterdir():
            if f.suffix == ".json":
                f.unlink(missing_ok=True)
    bad = [p for p in check_agents(agents, sandbox_mode, base, pack, results, limits) if not p.ok]
    if not bad:
        return None
    lines = [f"  {p.agent}: {p.reason}" + (f" (exit {p.exit_code})" if p.exit_code is not None else "")
             + f"\n      command: {p.command}" for p in bad]
    return (f"{len(bad)} agent{'s' if len(bad) > 1 else ''} cannot start (checked in the sandbox each run gets, "
            "without running the agent):\n" + "\n".join(lines) + "\nFix the command (a relative path is relative "
            "to this working directory; files it names are mounted read-only) and run again; `sealbench validate` "
            "runs the same check.")


