"""core: The core every other layer builds on: content digests, atomic writes and the shared errors,
the results layout (paths), the config (its schema, defaults and sources), the agent contract as
code, the table schemas, refusal codes, process and socket helpers, reading what untrusted code
wrote, which sealbench code each stage runs (code digests), and the project and results index a
command works on. It imports nothing of sealbench above it.

Modules:

- ``code_digests``: which sealbench files each stage runs (derived from its imports) and their
  digest
- ``config_sources``: the `sealbench` commands' config: `--configfile`/`--config` merged by
  Snakemake's own functions
- ``configuration``: the config: defaults from the schema, validation, which agents run
- ``contract``: the agent contract as code: the `SEALBENCH_*` variables,
  `usage.json`/`stamp.json`/`steers.jsonl` and their typed fields, the clock, the run statuses (used
  by `run_agent`, `session`, `stratify`, the gate and the built-in agents)
- ``core``: configs, content digests, atomic writes: the shared core every stage imports
- ``paths``: the results layout: where every job writes and every reader looks; `$SEALBENCH_PACK`,
  `$SEALBENCH_RESULTS`
- ``processes``: the process runner: a command under a wall clock, its process tree killed at the
  time box, capped output
- ``project``: where a `sealbench` command works: the project found from any folder inside it or
  from a session's workspace, or one sentence saying what was looked for
- ``records``: the run, score and controls records as typed, versioned dataclasses (what the
  verdict table reads), read with an error naming the file and the field
- ``refusals``: every refusal code and note with what it means
- ``results_index``: `results/index.html` and `sealbench list`: every experiment, newest first; the
  `results/latest` link (`point_latest`)
- ``run_console``: what a run says at its start and end: the plan (jobs, tasks, the log file) and
  the decision in short ([Console](#console))
- ``shell_syntax``: The shell grammar an agent's command is read with: which words bash runs as
  commands.
- ``tables``: the one definition of every result table (parquet columns and types); the status
  column's values are ``contract``'s
- ``unix_rpc``: A unix-socket service between the harness (outside the sandbox) and a tiny client
  inside it.
- ``untrusted``: reading what sandboxed code could have written: regular files only, capped; the one
  walk (`walk_tree`) and removal (`remove_tree`) of folders it wrote: iterative, no link followed
"""
