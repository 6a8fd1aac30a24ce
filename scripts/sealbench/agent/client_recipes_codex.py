"""How to run the Codex CLI (``codex exec``, checked with 0.171.0) unattended against an endpoint.

``codex_recipe(model, base_url)`` gives (shell command, environment, files relative to ``$HOME``).
Self-contained (standard library only) so it can be merged with the other clients' recipes.

The run's assumptions (sealbench's sandbox): ``$HOME`` is a private, writable, empty folder
(``/tmp``, a tmpfs); the cwd is the workspace (a git repository); ``$SEALBENCH_PROMPT`` names a
file holding the task, ``$SEALBENCH_VISIBLE_CMD`` the visible test command (may be empty); no
network but the endpoint. ``base_url`` is OpenAI-style, ``/v1`` included: Codex posts to
``{base_url}/responses`` (Responses API, SSE).

What the recipe does, and why:

- Everything goes into ``$HOME/.codex/config.toml`` (``CODEX_HOME`` defaults to ``~/.codex``;
  the command exports it, so a ``CODEX_HOME`` from outside cannot hide the file): a custom
  model provider ``sealbench`` (``OPENAI_BASE_URL`` is ignored by recent versions; a custom
  provider never needs ``auth.json`` or a ChatGPT login) whose key comes from
  ``DUMMY_LLM_API_KEY``, a dummy: the real key stays outside the sandbox.
- ``--dangerously-bypass-approvals-and-sandbox``: no approval prompts and no sandbox of Codex's
  own (``-s workspace-write`` starts Codex's own bwrap, which cannot nest in ours; sealbench's
  sandbox is the sandbox). ``--full-auto`` no longer exists.
- Nothing phones home: ``check_for_update_on_startup = false``, ``analytics.enabled = false``,
  ``feedback.enabled = false``, ``otel`` exporters (logs, traces, metrics: the metrics default
  is Statsig) ``none``, ``web_search = "disabled"`` (a hosted tool the endpoint may not have),
  ``features.plugins = false`` (else each run syncs the plugin marketplace: ``github.com``,
  ``api.github.com``, ``chatgpt.com``), ``features.remote_plugin`` and ``features.apps`` off (the
  ChatGPT connectors).
- Retries are few and bounded, so a dead endpoint ends the run in seconds: by default (feature
  ``unbounded_connection_retries``, on) a refused connection is "Reconnecting... waiting for
  network" forever (backoff doubling to a cap; ``request_max_retries`` does not apply), so the
  feature is off; then ``request_max_retries`` / ``stream_max_retries`` bound the retries and
  ``stream_idle_timeout_ms`` a stalled stream.
- ``--strict-config``: a key this version does not know (a renamed switch that would leave
  something on) stops the run instead of being ignored.
- The prompt goes in on stdin (``-``), the visible test command appended to it; ``--json``
  prints the run's events (JSONL, with ``turn.completed`` usage) on stdout; ``-o`` writes the
  last agent message to ``$HOME/codex-last-message.txt`` (outside the workspace).
- The binary: ``bin`` (the preset's install; the npm launcher needs ``node``, the native musl
  binary in ``@openai/codex-linux-x64/vendor/.../bin/codex`` does not).

What Codex writes: nothing in the workspace of its own (no ``.codex/`` folder, no
``AGENTS.md``; the commands the model runs are another matter); under ``$CODEX_HOME`` its state
(``sessions/…/rollout-*.jsonl``, ``*.sqlite``, ``installation_id``, ``shell_snapshots/``).
With ``CODEX_HOME`` under the temp folder it warns once ("Refusing to create helper binaries
under temporary dir") and carries on without its PATH helper aliases: harmless.
"""

from __future__ import annotations

import json
import shlex

#: The environment variable holding the (dummy) key Codex sends as ``Authorization: Bearer``.
KEY_ENV = "DUMMY_LLM_API_KEY"
PROVIDER = "sealbench"
CONFIG_PATH = ".codex/config.toml"  # relative to $HOME
#: Bounded retries: a run against a dead endpoint fails within seconds.
REQUEST_MAX_RETRIES = 2
STREAM_MAX_RETRIES = 2
STREAM_IDLE_TIMEOUT_MS = 300_000


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


def codex_config(model: str, base_url: str) -> str:
    """The ``config.toml`` for a run against ``base_url`` with ``model``."""
    return f"""\
# written by sealbench (client_recipes_codex.py)
model = {_toml_str(model)}
model_provider = "{PROVIDER}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[features]
plugins = false
remote_plugin = false
apps = false
unbounded_connection_retries = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"

[model_providers.{PROVIDER}]
name = "{PROVIDER}"
base_url = {_toml_str(base_url.rstrip("/"))}
wire_api = "responses"
env_key = "{KEY_ENV}"
request_max_retries = {REQUEST_MAX_RETRIES}
stream_max_retries = {STREAM_MAX_RETRIES}
stream_idle_timeout_ms = {STREAM_IDLE_TIMEOUT_MS}
"""


def codex_command(bin: str = "codex") -> str:
    """The shell command: the prompt (and the visible tests' command) piped into ``codex exec``."""
    return ('export CODEX_HOME="$HOME/.codex"; '
            '{ cat "$SEALBENCH_PROMPT"; '
            'if [ -n "${SEALBENCH_VISIBLE_CMD:-}" ]; then '
            'printf \'\\n\\nRun the visible tests with: %s\\n\' "$SEALBENCH_VISIBLE_CMD"; fi; } '
            f'| {shlex.quote(bin)} exec '
            "--dangerously-bypass-approvals-and-sandbox --skip-git-repo-check --strict-config "
            '--color never --json -o "$HOME/codex-last-message.txt" -')


def codex_recipe(model: str, base_url: str, bin: str = "codex") -> tuple[str, dict[str, str], dict[str, str]]:
    """(shell command, environment, files relative to ``$HOME`` → content) for one Codex run.

    ``bin``: the ``codex`` executable. The command reads ``$HOME``, ``$SEALBENCH_PROMPT`` and
    ``$SEALBENCH_VISIBLE_CMD`` at run time and sets ``CODEX_HOME=$HOME/.codex`` (where the config
    file goes); run it with ``bash -c`` in the workspace. The environment's values are literal.
    """
    env = {KEY_ENV: "sealbench-dummy-key", "NO_COLOR": "1"}
    return codex_command(bin), env, {CONFIG_PATH: codex_config(model, base_url)}
