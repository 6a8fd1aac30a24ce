# The console at the end of a run: the decision in short on success, one sentence on failure
# (sealbench.core.run_console). The plan record is logged at the end of onstart (common.smk). What
# the console shows in between is the `sealbench` logger plugin's (profiles/default/config.yaml).

from sealbench.core import run_console  # noqa: E402


onsuccess:
    run_console.log_decision(exp_dir(), paths.latest())


onerror:
    run_console.log_stopped()
