"""Gemini CLI (``@google/gemini-cli``, checked with 0.61.0): how to run it non-interactively against
a Gemini-API endpoint sealbench chooses (a gateway, or :mod:`sealbench.testing.scripted_gemini`).

:func:`gemini_recipe` gives (shell command, environment, files to write under ``$HOME``). The
command runs in the workspace (cwd) with ``$HOME`` private and writable (``/tmp`` in the sandbox),
the task in the file ``$SEALBENCH_PROMPT`` and the visible test command in
``$SEALBENCH_VISIBLE_CMD``. What each piece is for (all read from the 0.61.0 bundle and checked
against a live run; see ``tests/clients/test_gemini_scripted.py``):

- ``GOOGLE_GEMINI_BASE_URL``: honoured by this version (the ``@google/genai`` SDK 1.30 under it
  appends ``/v1beta/models/<model>:streamGenerateContent?alt=sse``), but on its own it selects the
  auth type ``gateway``, which the non-interactive auth check rejects: exit 41, "Invalid auth method
  selected.". Hence ``security.auth.selectedType = "gemini-api-key"`` in the settings plus a dummy
  ``GEMINI_API_KEY`` (sent as the ``x-goog-api-key`` header; the base URL still applies).
- Folder trust: in headless mode an untrusted workspace is a fatal error in 0.61 (older versions
  silently dropped ``--yolo``). Off twice: ``security.folderTrust.enabled = false`` and
  ``GEMINI_CLI_TRUST_WORKSPACE=true``.
- ``privacy.usageStatisticsEnabled = false``: without it the client resolves
  ``play.googleapis.com`` (Clearcut usage logging) on every run, even with the base URL moved.
  ``telemetry.enabled = false`` / ``GEMINI_TELEMETRY_ENABLED=false``, ``general.enableAutoUpdate``
  and ``general.enableAutoUpdateNotification`` false (the 0.61 names; ``disableAutoUpdate`` /
  ``disableUpdateNag`` are the old ones and are ignored), ``ide.enabled = false``.
- ``general.maxAttempts``: the main-model retry budget, backoff 5 s doubling to 30 s. The default
  10 keeps a client pointed at a dead port retrying for about 3.5 minutes; 3 gives up after about
  15 s (exit 1, "Error when talking to Gemini API ... fetch failed sending request").
- ``advanced.ignoreLocalEnv = true``: the workspace's ``.env`` is not read (its ``.gemini/.env``
  still is, but it never overrides a variable already set, and every variable here is set).
  Settings precedence is defaults < user (``$HOME/.gemini/settings.json``, written here) <
  workspace (a task repository's own ``.gemini/settings.json``: read, the workspace being trusted)
  < system (``GEMINI_CLI_SYSTEM_SETTINGS_PATH``). A system file would pin these settings against a
  repository's, but 0.61 skips it ("Security Warning: Skipping system settings file") unless the
  file and every directory above it are owned by root and not group/other-writable, which a file
  under the sandbox's ``/tmp`` (mode 1777) never is; so a repository's settings can override
  these (sealbench's sandbox still holds: only the endpoint is reachable).
- ``GEMINI_CLI_NO_RELAUNCH=true``: otherwise ``gemini`` re-spawns itself in a second node process
  (to raise its heap limit); one process is lighter and its pid is the client's.
- ``GEMINI_SANDBOX=false``: its own sandbox off (sealbench's sandbox is the sandbox); ``--yolo``
  approves every tool call.
- ``-m MODEL``: pinned, so no routing side call (with the default ``auto`` model the client first
  asks a flash-lite classifier via ``generateContent`` with a JSON schema, then picks a model).
- The prompt goes in on stdin with ``-p ''`` (headless; stdin + prompt are joined), so a long task
  text does not hit the 128 KiB limit of one command-line argument.

What it writes: in the workspace, nothing (a run leaves ``git status`` showing only the agent's
edits); under ``$HOME/.gemini``: ``projects.json``, ``history/<project>/``, ``tmp/<project>/chats``
(the session transcript) and ``tmp/<project>/logs``. On an API error it writes a report to
``$TMPDIR`` (``/tmp/gemini-client-error-*.json``; ``/tmp`` is ``$HOME`` in the sandbox).
"""

from __future__ import annotations

import json
import shlex

#: The dummy credential: the sandbox never holds a real key.
DUMMY_KEY = "sealbench-no-key-inside-the-sandbox"
#: The settings file, relative to ``$HOME``.
USER_SETTINGS = ".gemini/settings.json"


def gemini_settings(max_attempts: int = 3) -> dict:
    """The user settings (``$HOME/.gemini/settings.json``)."""
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False, "logPrompts": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                    "maxAttempts": max_attempts, "checkpointing": {"enabled": False}},
        "ide": {"enabled": False},
        "model": {"skipNextSpeakerCheck": True},
        "advanced": {"ignoreLocalEnv": True, "autoConfigureMemory": False},
    }


def gemini_recipe(model: str, base_url: str, *, bin: str = "gemini", max_attempts: int = 3,
                  check: bool = True) -> tuple[str, dict[str, str], dict[str, str]]:
    """(shell command, environment, files relative to ``$HOME`` -> content) to run Gemini CLI on
    the task in ``$SEALBENCH_PROMPT`` against ``base_url`` (``http://HOST:PORT``, no API version),
    model ``model``. ``bin``: the ``gemini`` executable; ``check``: append the line naming
    ``$SEALBENCH_VISIBLE_CMD`` to the prompt."""
    settings = json.dumps(gemini_settings(max_attempts), indent=1) + "\n"
    tail = "printf '\\n\\nCheck your work with: %s\\n' \"$SEALBENCH_VISIBLE_CMD\"; " if check else ""
    command = (f'{{ cat "$SEALBENCH_PROMPT"; {tail}}} | '
               f"{shlex.quote(bin)} --yolo -m {shlex.quote(model)} -p ''")
    env = {
        "GEMINI_API_KEY": DUMMY_KEY,
        "GOOGLE_GEMINI_BASE_URL": base_url,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_SANDBOX": "false",
        "GEMINI_TELEMETRY_ENABLED": "false",
        "NO_COLOR": "1",
    }
    return command, env, {USER_SETTINGS: settings}
