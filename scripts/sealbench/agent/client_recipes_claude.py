"""How to run Claude Code (2.1.x, checked with 2.1.197) non-interactively against a sealbench
endpoint: the command line, its environment and the files it wants in ``$HOME``.

Self-contained (standard library only) so it can be merged into the client presets.

The recipe, as a shell command run in the workspace with ``$HOME`` a fresh private folder (the
sandbox's /tmp)::

    { cat "$SEALBENCH_PROMPT"; printf '\\n\\nCheck your work with: %s\\n' "$SEALBENCH_VISIBLE_CMD"; } |
      claude -p --dangerously-skip-permissions --model MODEL --output-format json

- The task goes in on stdin, not as an argument: a prompt that starts with ``-`` would be taken
  for an option, and with a prompt argument and a non-terminal stdin the client still waits 3 s
  for stdin data ("Warning: no stdin data received in 3s, proceeding without it") and would add
  whatever comes to the prompt.
- ``--output-format json``: stdout is ONE JSON object (``type: result``, ``is_error``,
  ``result`` = the final text or the error, ``num_turns``, ``usage`` with the four token
  counts summed over the session, ``modelUsage`` per model, ``total_cost_usd`` from its own price
  table). Exit status 0 on success, 1 on an API error (the error text is in ``result``; stderr
  stays empty).
- ``--dangerously-skip-permissions`` refuses to run as root unless ``IS_SANDBOX=1``; sealbench's
  sandbox runs as uid 1000, tests on a root CI machine do not, so the variable is always set.

Environment (``claude_code_recipe``): ``ANTHROPIC_BASE_URL`` = the endpoint WITHOUT ``/v1``
(the client requests ``$ANTHROPIC_BASE_URL/v1/messages?beta=true``); ``ANTHROPIC_API_KEY`` a
dummy (sent as ``x-api-key``; ``ANTHROPIC_AUTH_TOKEN`` would be sent as ``Authorization: Bearer``);
every model alias and the small fast model (titles, summaries) pointed at MODEL so no request
names a model the endpoint does not serve; telemetry, error reporting, the auto-updater and all
nonessential traffic off (with ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` the client's own
debug log shows no host but the endpoint); ``CLAUDE_CODE_MAX_RETRIES`` small, because the client
retries a failed request 10 times with exponential backoff by default (a refused connection had
not given up after 150 s) — with 4 it exits 1 after ~13 s, with 0 after ~3 s. A real endpoint's
429/529 get the same few retries: raise ``max_retries`` for long runs against a busy model.

Files in ``$HOME`` before the run: ``.claude.json`` (onboarding done) and
``.claude/settings.json`` (the bypass-permissions prompt already accepted).

What it writes (observed with 2.1.197): nothing in the workspace but what its tools do. In
``$HOME``: ``.claude.json`` (rewritten several times per run: machine and user ids, start
counters, migrations) and a backup in ``.claude/backups/``; the session transcript
``.claude/projects/<cwd with / -> ->/<session id>.jsonl``, an empty ``memory/`` beside it;
``.claude/shell-snapshots/``, ``.claude/session-env/<session id>/``, ``.claude/sessions/``.
"""

from __future__ import annotations

import json
import shlex

DUMMY_KEY = "sealbench-no-key-inside-the-sandbox"
MAX_RETRIES = 4


def claude_code_recipe(model: str, base_url: str, prompt_file_var: str = "SEALBENCH_PROMPT", *,
                       binary: str = "claude", visible_cmd_var: str = "SEALBENCH_VISIBLE_CMD",
                       max_retries: int = MAX_RETRIES) -> tuple[str, dict[str, str], dict[str, str]]:
    """(shell command, environment, files to write relative to ``$HOME`` -> content) that run
    Claude Code non-interactively on the task in the file named by ``$<prompt_file_var>``, with
    every permission granted (the sandbox is the sandbox), against ``model`` behind
    ``base_url`` (``http://host:port``, a trailing ``/v1`` is dropped: the client adds it).

    The command runs in the workspace; ``binary`` is the client's path (default: ``claude`` on
    ``PATH``). ``max_retries``: how often the client retries a failed request (its default is 10
    with exponential backoff)."""
    base = base_url.rstrip("/")
    if base.endswith("/v1"):
        base = base[:-3]
    feed = (f'{{ cat "${{{prompt_file_var}}}"; '
            f"printf '\\n\\nCheck your work with: %s\\n' \"${{{visible_cmd_var}}}\"; }}")
    flags = ["-p", "--dangerously-skip-permissions", "--model", model, "--output-format", "json"]
    command = f"{feed} | {shlex.quote(binary)} {shlex.join(flags)}"
    env = {
        "ANTHROPIC_BASE_URL": base,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        # every model the client may pick on its own is the one the endpoint serves
        "ANTHROPIC_MODEL": model,
        "ANTHROPIC_SMALL_FAST_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model,
        "CLAUDE_CODE_SUBAGENT_MODEL": model,
        # nothing but the endpoint
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
        # --dangerously-skip-permissions as root (CI machines); the sandbox is uid 1000
        "IS_SANDBOX": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
    }
    # neither is needed in print mode; they are what an interactive first start would leave (2.1.197
    # migrates the older ``bypassPermissionsModeAccepted`` / ``autoUpdates`` of .claude.json to
    # these settings), and a missing .claude.json logs "Failed to save config" once
    files = {".claude.json": json.dumps({"hasCompletedOnboarding": True}, indent=1) + "\n",
             ".claude/settings.json": json.dumps({"skipDangerousModePermissionPrompt": True}, indent=1) + "\n"}
    return command, env, files
