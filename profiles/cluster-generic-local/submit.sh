#!/usr/bin/env bash
# Submit command of the cluster-generic-local profile: "submits" one Snakemake job script by
# starting it in the background on this machine, and prints a job id, as sbatch/qsub would.
#
# Called by snakemake-executor-plugin-cluster-generic as `submit.sh JOBSCRIPT` from the
# workflow's working directory. Must print only the job id on stdout and must return at
# once: the job's stdout/stderr go to a log file, never to this script's stdout (the plugin
# reads that pipe until it closes).
#
# Files, all in $SEALBENCH_CLUSTER_LOGDIR (default .snakemake/cluster-generic-local/):
#   ID.log   the job's output (the node-side snakemake's log)
#   ID.pid   the process id of the background job (read by status.sh)
#   ID.exit  the job script's exit code, written when it ends (read by status.sh)
set -euo pipefail

jobscript="$1"
logdir="${SEALBENCH_CLUSTER_LOGDIR:-$PWD/.snakemake/cluster-generic-local}"
mkdir -p "$logdir"
id="local-$(date +%s%N)-$$"

# setsid (where available): the job gets its own session, so a Ctrl-C in the terminal of the
# main snakemake does not kill it (as on a real cluster). The exit code is written atomically.
setsid="$(command -v setsid || true)"
nohup $setsid bash -c 'bash "$1"; rc=$?; echo "$rc" > "$2.exit.tmp" && mv "$2.exit.tmp" "$2.exit"' \
    "sealbench-job-$id" "$jobscript" "$logdir/$id" > "$logdir/$id.log" 2>&1 < /dev/null &
echo "$!" > "$logdir/$id.pid"
echo "$id"
