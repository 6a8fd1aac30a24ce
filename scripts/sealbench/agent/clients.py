"""Named client presets: the coding agents people compare, from two lines of config.

An agent entry can name its client instead of a command (docs/agents.md, "Client presets: …")::

    agents:
      claude:
        client: claude-code          # codex, gemini-cli, aider, mini-swe-agent
        model: MODEL                 # as the model server or gateway knows it
        endpoint: "127.0.0.1:PORT"   # the model server or gateway, outside the sandbox
        version: "2.1.197"           # optional: CLIENTS[...].version otherwise

:func:`expand_agent` (called by ``validate_config``) turns such an entry into an ordinary agent
entry (docs/contract.md §2): the client installed into its own pinned environment
(:func:`install`: an npm prefix or a venv under :func:`clients_root`, never the workspace, mounted
read-only in the sandbox), a command that writes the client's configuration into the sandbox's
private ``$HOME`` (the provider pointed at the endpoint the bridge lets through, telemetry and
update checks off, the client's own sandbox and approvals off because sealbench's sandbox is the
sandbox, a dummy credential: a real key stays outside, in the gateway) and runs it
non-interactively on ``$SEALBENCH_PROMPT``.

Identity: the install folder is the agent's ``code_paths`` and ``readonly_paths``, so the
fingerprint covers the installed client's every file (native binaries included) and nothing else
installed on the machine; another version is another folder, so an upgrade is a new agent version.
``client``, ``version`` (as installed, read back from the installed package) and ``model`` stay in
the entry and are recorded on the card.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.core import ConfigError

#: Where clients are installed: ``$SEALBENCH_CLIENTS``, else ``~/.cache/sealbench/clients``.
CLIENTS_ENV = "SEALBENCH_CLIENTS"
#: Written last into an install folder: a folder without it is an unfinished install.
MARKER = "sealbench-client.json"
#: The dummy credential the clients are given: the sandbox never holds a real key.
DUMMY_KEY = "sealbench-no-key-inside-the-sandbox"
_VERSION = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+([-.+][0-9A-Za-z.-]+)?$")


@dataclass(frozen=True)
class Recipe:
    """How one client runs against ``base_url``: the shell command (run in the workspace), its
    environment, and files it needs in ``$HOME`` (path relative to ``$HOME`` -> content)."""

    command: str
    env: dict[str, str] = field(default_factory=dict)
    home_files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Client:
    """A client sealbench knows how to install and run."""

    name: str                #: the preset's name (``client:``)
    installer: str           #: ``npm`` (a prefix) or ``pip`` (a venv)
    package: str             #: the registry's package name
    version: str             #: the version pinned by sealbench (``version:`` overrides it)
    bin: str                 #: the executable, relative to the install folder
    wire: str                #: the API it speaks (config ``api``: the gateway's key header; what the bridge meters)
    base_path: str = ""      #: appended to ``http://HOST:PORT`` for the client's base URL


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("claude-code", "npm", "@anthropic-ai/claude-code", "2.1.197", "node_modules/.bin/claude",
           "anthropic-messages"),
    Client("codex", "npm", "@openai/codex", "0.171.0", "node_modules/.bin/codex", "openai-responses", "/v1"),
    Client("gemini-cli", "npm", "@google/gemini-cli", "0.61.0", "node_modules/.bin/gemini", "gemini"),
    Client("aider", "pip", "aider-chat", "0.86.2", "venv/bin/aider", "openai-chat", "/v1"),
    Client("mini-swe-agent", "pip", "mini-swe-agent", "2.4.6", "venv/bin/mini", "openai-chat", "/v1"),
)}


def clients_root() -> Path:
    """Where clients are installed (:data:`CLIENTS_ENV`, else ``~/.cache/sealbench/clients``)."""
    raw = os.environ.get(CLIENTS_ENV)
    return Path(raw).expanduser().absolute() if raw else Path.home() / ".cache" / "sealbench" / "clients"


def install_dir(client: Client, version: str, root: Path | None = None) -> Path:
    return (root or clients_root()) / f"{client.name}-{version}"


def installed(folder: Path) -> dict[str, Any] | None:
    """The marker of a finished install, or None."""
    try:
        return json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None


def _installed_version(client: Client, folder: Path) -> str | None:
    """The version the registry actually installed, read from the installed package."""
    if client.installer == "npm":
        try:
            return json.loads((folder / "node_modules" / client.package / "package.json").read_text())["version"]
        except (OSError, ValueError, KeyError):
            return None
    want = re.sub(r"[-_.]+", "_", client.package).lower()
    for dist in (folder / "venv").glob("lib/python*/site-packages/*.dist-info"):
        name, _, version = dist.name[:-len(".dist-info")].rpartition("-")
        if re.sub(r"[-_.]+", "_", name).lower() == want:
            return version
    return None


def _run(argv: list[str], log: Path, what: str) -> None:
    with open(log, "ab") as fh:
        fh.write(("$ " + shlex.join(argv) + "\n").encode())
        fh.flush()
        res = subprocess.run(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if res.returncode != 0:
        lines = [ln for ln in log.read_text("utf-8", "replace").splitlines() if ln.strip()]
        said = next((ln for ln in reversed(lines) if re.search(r"error|ERR!|not compatible|requires", ln, re.I)),
                    lines[-1] if lines else "")
        raise ConfigError(f"{what} failed (exit {res.returncode}): {said.strip()[:300]} (log: {log})")


def install(client: Client, version: str, root: Path | None = None) -> Path:
    """Install ``client`` at exactly ``version`` into its own folder (once: a finished install is
    kept; an unfinished one is removed and done again), and return the folder. npm installs with
    ``--engine-strict`` (a client that needs a newer Node fails here, naming the Node it needs,
    rather than npm silently installing an older release), its install scripts run (Claude Code's
    places its native binary); pip into a venv of this interpreter. The installed version is read back and must be the one asked for.
    Raises :class:`ConfigError` with the installer's own error line."""
    folder = install_dir(client, version, root)
    if installed(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)         # two jobs installing one client: one installs
        if installed(folder):
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        log = folder.parent / f"{folder.name}.install.log"
        log.unlink(missing_ok=True)
        what = f"installing client {client.name} {version}"
        if client.installer == "npm":
            npm = shutil.which("npm")
            if npm is None:
                raise ConfigError(f"{what}: npm is not on PATH (install Node.js with npm, or use another client)")
            _run([npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--no-save", "--engine-strict",
                  f"{client.package}@{version}"], log, what)
        else:
            _run([sys.executable, "-m", "venv", str(folder / "venv")], log, what)
            _run([str(folder / "venv" / "bin" / "python"), "-m", "pip", "install", "-q",
                  f"{client.package}=={version}"], log, what)
        got = _installed_version(client, folder)
        if got != version:
            raise ConfigError(f"{what}: the registry installed {got or 'nothing readable'} instead (log: {log})")
        if not (folder / client.bin).exists():
            raise ConfigError(f"{what}: {client.bin} is missing after the install (log: {log})")
        (folder / MARKER).write_text(json.dumps({"client": client.name, "package": client.package,
                                                 "version": got, "installer": client.installer}, indent=1) + "\n")
    return folder


# ------------------------------------------------------------------------------------------------
# Recipes: each client's configuration and non-interactive command


def _prompt(check: bool = True) -> str:
    """The task as the command line gives it: prompt.md, and how to check the work."""
    tail = "\n\nCheck your work with: $SEALBENCH_VISIBLE_CMD" if check else ""
    return f'"$(cat "$SEALBENCH_PROMPT"){tail}"'


RECIPES: dict[str, Any] = {}


def recipe(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """The client's :class:`Recipe` for ``model`` behind ``base_url``."""
    return RECIPES[client.name](client, folder, model, base_url)


def _home_writes(files: Mapping[str, str]) -> str:
    """Shell that writes ``files`` under ``$HOME`` (the sandbox's private /tmp) before the client starts."""
    parts = []
    for rel, text in sorted(files.items()):
        parent = os.path.dirname(rel)
        if parent:
            parts.append(f'mkdir -p "$HOME"/{shlex.quote(parent)}')
        parts.append(f'printf %s {shlex.quote(text)} > "$HOME"/{shlex.quote(rel)}')
    return " && ".join(parts)


def _claude_code(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """Claude Code in print mode, every permission granted (sealbench's sandbox is the sandbox):
    :func:`sealbench.agent.client_recipes_claude.claude_code_recipe`."""
    from .client_recipes_claude import claude_code_recipe

    command, env, files = claude_code_recipe(model, base_url, binary=str(folder / client.bin))
    return Recipe(command, env, files)


def _codex(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """Codex ``exec`` with a provider of its own pointed at the endpoint (Codex ignores
    ``OPENAI_BASE_URL``), its own sandbox and approvals off (its bwrap cannot nest in sealbench's),
    retries bounded, plugins and telemetry off: :func:`sealbench.agent.client_recipes_codex.codex_recipe`."""
    from .client_recipes_codex import codex_recipe

    command, env, files = codex_recipe(model, base_url, bin=str(folder / client.bin))
    return Recipe(command, env, files)


def _gemini_cli(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """Gemini CLI headless, ``--yolo``, API-key auth and the workspace trusted, telemetry and
    update checks off: :func:`sealbench.agent.client_recipes_gemini.gemini_recipe`."""
    from .client_recipes_gemini import gemini_recipe

    command, env, files = gemini_recipe(model, base_url, bin=str(folder / client.bin))
    return Recipe(command, env, files)


#: How often mini-swe-agent tries one model call (its ``MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT``).
MINI_MODEL_ATTEMPTS = 3
#: The width mini-swe-agent's console (rich) renders at: wider than any line it prints.
MINI_COLUMNS = 4000


def _mini_swe_agent(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """mini-swe-agent through sealbench's adapter (:mod:`sealbench.agents.mini`: usage.json and
    stamp.json from mini's trajectory), running the ``mini`` of the preset's own venv."""
    return Recipe(f"python -m sealbench.agents.mini --model {shlex.quote(model)} --api-base {shlex.quote(base_url)} "
                  f"--api-key {DUMMY_KEY} --mini {shlex.quote(str(folder / client.bin))}",
                  # mini tries a failed model call 10 times by default, waiting 4 s to 60 s between
                  # tries: against a dead endpoint, the whole time box. 3 tries: it ends in seconds
                  # with its own error (and an agent whose first runs all end so stops: agent_health).
                  # COLUMNS: mini prints through rich, which wraps at 80 columns without a terminal
                  # ("... Connection\nerror."): one line a message, so its last line is its own words
                  env={"MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT": str(MINI_MODEL_ATTEMPTS),
                       "COLUMNS": str(MINI_COLUMNS)})


def _aider(client: Client, folder: Path, model: str, base_url: str) -> Recipe:
    """aider, one message, every confirmation answered yes, its own test run on the visible tests
    (``--auto-test``: aider runs no command the model proposes, so this is how it checks its work);
    nothing of its own in the workspace: its histories go to ``$HOME``, no repository map (its tag
    cache), no ``.gitignore`` line, no commits. Nothing from the network: litellm reads its bundled
    price map, and aider's own copy of that map (``~/.aider/caches``, fetched from GitHub when
    missing or empty) is seeded from the installed litellm's; update checks and analytics off."""
    flags = ["--model", f"openai/{model}", "--openai-api-base", base_url, "--openai-api-key", DUMMY_KEY,
             "--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore", "--map-tokens", "0",
             "--no-check-update", "--analytics-disable", "--no-show-model-warnings", "--no-pretty",
             "--no-fancy-input", "--no-detect-urls", "--no-show-release-notes", "--auto-test"]
    history = ('--chat-history-file "$HOME/.aider.chat.history.md" --input-history-file '
               '"$HOME/.aider.input.history" --llm-history-file "$HOME/.aider.llm.history"')
    prices = (f'mkdir -p "$HOME/.aider/caches" && cp {shlex.quote(str(folder / "venv" / "lib"))}/python*/'
              'site-packages/litellm/model_prices_and_context_window_backup.json '
              '"$HOME/.aider/caches/model_prices_and_context_window.json"')
    return Recipe(f"{prices} && {shlex.quote(str(folder / client.bin))} {shlex.join(flags)} {history} "
                  f'--test-cmd "$SEALBENCH_VISIBLE_CMD" --message {_prompt(check=False)}',
                  env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_ANALYTICS": "false"})


RECIPES.update({"claude-code": _claude_code, "codex": _codex, "gemini-cli": _gemini_cli,
                "mini-swe-agent": _mini_swe_agent, "aider": _aider})


# ------------------------------------------------------------------------------------------------
# Expansion


_PRESET_KEYS = ("client", "version", "model")


def expand_agent(name: str, entry: Mapping[str, Any], where: str = "config", *,
                 root: Path | None = None, do_install: bool = True) -> dict[str, Any]:
    """An agent entry with ``client:`` as the ordinary entry it stands for (an entry without one is
    returned as it is). Idempotent: an expanded entry expands to itself, so a config written with
    the results validates again; a ``command`` the user wrote beside ``client`` is an error."""
    if "client" not in entry:
        return dict(entry)
    field_ = f"{where}: field 'agents.{name}"
    client = CLIENTS.get(str(entry["client"]))
    if client is None:
        raise ConfigError(f"{field_}.client': '{entry['client']}' is not a client preset "
                          f"(known: {', '.join(CLIENTS)}); or write the agent's own 'command' instead")
    version = str(entry.get("version") or client.version)
    if not _VERSION.match(version):
        raise ConfigError(f"{field_}.version': '{version}' is not an exact version (e.g. {client.version})")
    if not entry.get("model") or not entry.get("endpoint"):
        missing = [k for k in ("model", "endpoint") if not entry.get(k)]
        raise ConfigError(f"{field_}': a client preset needs {' and '.join(repr(k) for k in missing)} "
                          f"(the model as the server knows it; the server's loopback host:port)")
    folder = install(client, version, root) if do_install else install_dir(client, version, root)
    host, port = str(entry["endpoint"]).rsplit(":", 1)
    base_url = f"http://{host}:{port}{client.base_path}"
    made = recipe(client, folder, str(entry["model"]), base_url)
    setup = _home_writes(made.home_files)
    command = f"{setup} && {made.command}" if setup else made.command
    if entry.get("command") not in (None, command):
        raise ConfigError(f"{field_}.command': an agent with 'client: {client.name}' runs the preset's command; "
                          "remove 'command' (or 'client', to run a command of your own)")
    env = dict(made.env)
    for key, value in (entry.get("env") or {}).items():
        if key in made.env and str(value) != made.env[key]:
            raise ConfigError(f"{field_}.env.{key}': set by the {client.name} preset ({made.env[key]!r})")
        env[key] = str(value)
    out = dict(entry)
    out.update(client=client.name, version=version, model=str(entry["model"]), command=command, env=env,
               api=client.wire,
               readonly_paths=list(dict.fromkeys([*(entry.get("readonly_paths") or []), str(folder)])),
               code_paths=list(dict.fromkeys([*(entry.get("code_paths") or []), str(folder)])))
    return out


def expand_config(cfg: Mapping[str, Any], where: str = "config") -> dict[str, Any]:
    """A validated config (``validate_config``) with every client preset expanded
    (:func:`expand_agent`; clients installed once). Raises :class:`ConfigError` listing every
    preset that is wrong or cannot be installed."""
    errors, agents = [], {}
    for name, entry in cfg["agents"].items():
        try:
            agents[name] = expand_agent(name, entry, where)
        except ConfigError as exc:
            errors.append(str(exc))
    if errors:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(errors))
    return {**cfg, "agents": agents}
