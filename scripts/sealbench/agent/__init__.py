"""agent: Running one agent: its command and what the sandbox mounts, probing and stopping it, the
loopback bridge that meters its requests, and human sessions with their sealed shell.

Modules:

- ``agent_command``: how an agent's command runs in the sandbox: the paths it names mounted read-
  only, relative words made absolute
- ``agent_health``: the early stop: an agent version whose first runs all failed at start runs no
  further
- ``agent_probe``: before any job: can each agent's first command start here (127/126), and what a
  command may not name
- ``clients``: named client presets (Claude Code, Codex CLI, Gemini CLI, aider, mini-swe-agent):
  installed into their own pinned folders, expanded to the commands they stand for
- ``client_recipes_claude``, ``client_recipes_codex``, ``client_recipes_gemini``: how each client
  runs non-interactively against an endpoint (command, environment, files in ``$HOME``), as
  measured against the real clients
- ``gateway``: a real provider behind the endpoint, its key added outside the sandbox
- ``bridge``: the one loopback endpoint a sandboxed agent may reach; meters tokens
- ``client_recipes_codex``: how to run the Codex CLI unattended against an endpoint: its command,
  environment and config file
- ``session``: human sessions ([humans.md](humans.md))
- ``session_shell``: a human session's sealed shell: the agents' sandbox around the workspace, the
  session commands through a control socket ([humans.md](humans.md#the-sealed-shell))
"""
