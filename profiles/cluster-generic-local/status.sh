#!/usr/bin/env bash
# Status command of the cluster-generic-local profile: prints `running`, `success` or
# `failed` for a job id printed by submit.sh (the contract of
# snakemake-executor-plugin-cluster-generic's --cluster-generic-status-cmd).
#
# Without a status command the plugin waits for marker files that the job script touches
# when it ends; a job killed by a signal (OOM killer, `kill`) touches none and the workflow
# would wait forever. Here a job whose process is gone without an exit code is `failed`.
set -uo pipefail

id="$1"
logdir="${SEALBENCH_CLUSTER_LOGDIR:-$PWD/.snakemake/cluster-generic-local}"
base="$logdir/$id"

verdict() {  # the recorded exit code -> success/failed
    if [ "$(cat "$base.exit")" = "0" ]; then echo success; else echo failed; fi
}

if [ -f "$base.exit" ]; then verdict; exit 0; fi
pid="$(cat "$base.pid" 2>/dev/null || true)"
if [ -z "$pid" ]; then
    echo failed   # submit.sh writes the pid file before it prints the id: unknown job
    exit 0
fi
alive=no
if [ -r "/proc/$pid/cmdline" ]; then
    # the process must still be this job (its command line holds the id), not a reused pid
    if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$id"; then alive=yes; fi
elif kill -0 "$pid" 2>/dev/null; then
    alive=yes
fi
if [ "$alive" = yes ]; then echo running; exit 0; fi
# Gone: it may have written its exit code between the first check and now.
if [ -f "$base.exit" ]; then verdict; else echo failed; fi
