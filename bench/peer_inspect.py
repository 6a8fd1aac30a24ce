"""A peer, side by side: the same scoring work through sealbench and through inspect-ai.

    python bench/run_all.py --only peer [--quick]

``bench_peer(state, n)`` runs the sealbench pipeline (``snakemake gate``, bench_overhead's flags,
sandbox ``required``) on an ``n``-task pack from ``bench/make_pack.py`` and times it; reads the
scored runs from the runs table (controls and agent attempts: one row per patch scored on a
fresh copy of the task); then runs the same (task, patch) pairs as one ``inspect eval`` (one
sample per scored run, a local sandbox, no model call, 2 workers) and as a plain 2-process pool
(the "ideal pool"), each doing per scored run: copy the sealed repo, ``git apply`` the patch,
copy the visible tests in and run the visible command, copy the hidden tests in and run the
hidden command (sealbench runs both commands per scored run; so do the peers). inspect-ai's
pass/fail per sample is checked against sealbench's ``hidden_pass`` per run.

The inspect task file is generated in the temporary workdir (never committed). inspect-ai is
the optional extra ``bench`` (``pip install -e '.[bench]'``); without it the row says so.
"""

from __future__ import annotations

import concurrent.futures as cf
import importlib.util
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from make_pack import make_pack, write_config
from run_all import BATCH_SIZE, _copy, _run, loadavg, row, smk, tmpdir

INSTALL = "pip install -e '.[bench]' (inspect-ai==0.3.285)"
TARGETS = {14: 1.0, 200: 0.5}
SCORED = ("pass", "fail", "tamper", "timeout")   # statuses of a run whose patch was scored

#: The inspect-ai task: one sample per scored run; the solver copies the sealed task into the
#: sample's local sandbox, applies the patch with git apply, runs the visible then the hidden
#: command; the scorer reads their exit codes. No model is called.
TASK_FILE = '''\
import json
import shlex

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, accuracy, scorer
from inspect_ai.solver import solver
from inspect_ai.util import sandbox

SAMPLES = {samples!r}


@solver
def apply_and_test():
    async def solve(state, generate):
        m, sb = state.metadata, sandbox()
        sealed = shlex.quote(m["sealed"])
        await sb.exec(["bash", "-c", f"cp -r {{sealed}}/repo/. ."])
        applied = True
        if m["patch_bytes"]:
            applied = (await sb.exec(["git", "apply", "--binary", "--whitespace=nowarn", m["patch"]])).returncode == 0
        vis = hid = None
        if applied:
            await sb.exec(["bash", "-c", f"cp -r {{sealed}}/visible_tests visible_tests"])
            vis = (await sb.exec(["bash", "-c", m["visible_command"]], timeout=60)).returncode
            await sb.exec(["bash", "-c", f"cp -r {{sealed}}/hidden_tests hidden_tests"])
            hid = (await sb.exec(["bash", "-c", m["hidden_command"]], timeout=60)).returncode
        state.store.set("codes", {{"applied": applied, "visible": vis, "hidden": hid}})
        return state
    return solve


@scorer(metrics=[accuracy()])
def exit_codes():
    async def score(state, target):
        c = state.store.get("codes")
        ok = c["hidden"] == 0
        return Score(value="C" if ok else "I", answer=json.dumps(c), metadata=c)
    return score


@task
def peer():
    return Task(dataset=[Sample(id=s["id"], input="score this patch", metadata=s) for s in SAMPLES],
                solver=apply_and_test(), scorer=exit_codes(), sandbox="local")


@solver
def nothing():
    async def solve(state, generate):
        return state
    return solve


@task
def empty():
    return Task(dataset=[Sample(id="noop", input="nothing")], solver=nothing(), scorer=None, sandbox="local")
'''


def say(n: int, what: str) -> None:
    """A progress line on stderr (a 200-task run takes a while; the table prints at the end)."""
    print(f"  [peer N={n}] {what} (load {loadavg()})", file=sys.stderr, flush=True)


def inspect_missing() -> str | None:
    return None if importlib.util.find_spec("inspect_ai") else f"inspect-ai is not installed: {INSTALL}"


def scored_runs(wd: Path) -> list[dict]:
    """The scored runs of the pipeline run in ``wd``: one dict per runs-table row whose patch was
    scored, with the sealed task, the patch file and sealbench's verdict."""
    import pandas as pd

    tables = sorted((wd / "results" / "experiments").glob("*/tables/runs.parquet"))
    runs = pd.read_parquet(tables[-1])
    out = []
    for r in runs.to_dict("records"):
        if r["status"] not in SCORED:
            continue
        task = wd / "results" / "tasks" / r["task_id"] / r["task_digest"]
        if r["role"] == "control":
            patch = task / "controls" / f"{r['solver']}.patch"
        else:
            patch = task / "runs" / r["solver"] / r["fingerprint"] / str(int(r["epoch"])) / "patch.diff"
        meta = json.loads((task / "sealed" / "meta.json").read_text())
        out.append({"id": f"{r['task_id']}-{r['solver']}-{int(r['epoch'])}-{len(out)}", "sealed": str(task / "sealed"),
                    "patch": str(patch), "patch_bytes": patch.stat().st_size, "visible_command": meta["visible_command"],
                    "hidden_command": meta["hidden_command"], "status": r["status"],
                    "hidden_pass": None if r["hidden_pass"] is None else bool(r["hidden_pass"])})
    return out


def scoring_seconds(wd: Path) -> float:
    """Sum of the scoring steps' own times (run_dummy: the controls; hidden_score: the agent
    attempts) as the batch logs print them (one process per batch, so serial within it)."""
    total = 0.0
    for log in (wd / "results" / "batches").glob("*/batch.log"):
        for line in log.read_text().splitlines():
            if (": run_dummy ran (" in line or ": hidden_score ran (" in line) and line.endswith(" s)"):
                total += float(line.rsplit("(", 1)[1].split()[0])
    return total


# ------------------------------------------------------------------------------ the ideal pool

def ideal_one(sample: dict, scratch: str) -> bool | None:
    """What one inspect sample does, in a plain worker: copy, git apply, visible, hidden."""
    from sealbench.core.core import harness_env

    sealed = Path(sample["sealed"])
    env = harness_env({"GIT_CEILING_DIRECTORIES": scratch})
    ws = Path(tempfile.mkdtemp(dir=scratch))
    try:
        _copy(sealed / "repo", ws)
        if sample["patch_bytes"]:
            if subprocess.run(["git", "apply", "--binary", "--whitespace=nowarn", sample["patch"]], cwd=ws, env=env,
                              capture_output=True).returncode != 0:
                return None
        _copy(sealed / "visible_tests", ws / "visible_tests")
        _run(sample["visible_command"], ws, env)
        _copy(sealed / "hidden_tests", ws / "hidden_tests")
        return _run(sample["hidden_command"], ws, env) == 0
    finally:
        shutil.rmtree(ws, ignore_errors=True)


def ideal_pool(samples: list[dict], workers: int = 2) -> tuple[float, list]:
    scratch = tmpdir("peer-ideal")
    try:
        t0 = time.perf_counter()
        with cf.ProcessPoolExecutor(workers) as pool:
            res = list(pool.map(ideal_one, samples, [str(scratch)] * len(samples), chunksize=4))
        return time.perf_counter() - t0, res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ------------------------------------------------------------------------------ inspect-ai

def inspect_env() -> dict:
    from sealbench.core.core import harness_env

    # the same environment the pipeline gives task commands (this interpreter first on PATH, no
    # plugin autoload)
    return harness_env()


def inspect_eval(task_file: Path, name: str, log_dir: Path, workers: int = 2) -> tuple[float, subprocess.CompletedProcess]:
    inspect = Path(sys.executable).with_name("inspect")
    cmd = [str(inspect) if inspect.exists() else "inspect", "eval", f"{task_file}@{name}", "--model", "mockllm/model",
           "--max-samples", str(workers), "--max-subprocesses", str(workers), "--max-sandboxes", str(workers),
           "--log-dir", str(log_dir), "--log-format", "json", "--display", "plain", "--no-fail-on-error"]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=task_file.parent, env=inspect_env(),
                         stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, res


def inspect_verdicts(log_dir: Path) -> dict[str, dict]:
    logs = sorted(log_dir.glob("*.json"))
    if not logs:
        return {}
    log = json.loads(logs[-1].read_text())
    out = {}
    for s in log.get("samples") or []:
        sc = next(iter((s.get("scores") or {}).values()), None)
        out[str(s["id"])] = {"pass": None if sc is None else sc.get("value") == "C",
                             "codes": None if sc is None else sc.get("metadata"), "error": s.get("error")}
    return out


def import_seconds(reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import inspect_ai"], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# ------------------------------------------------------------------------------ the bench

def bench_peer(state: dict, n: int = 14, workers: int = 2) -> dict:
    target = TARGETS.get(n, 1.0)
    tgt = f"<= {target:.1f}x inspect, per run"
    missing = inspect_missing()
    if missing:
        return row(f"peer N={n}", "inspect-ai missing", tgt, None, f"N={n}: {missing}; nothing was run")
    lb = loadavg()
    wd = tmpdir(f"peer{n}")
    state.setdefault("cleanup", []).append(wd)
    make_pack(wd / "pack", n)
    write_config(wd / "cfg.yaml", wd / "pack", batch_size=BATCH_SIZE, sandbox="required")
    # (a) sealbench, from scratch
    seal_s, res = smk(wd, "--cores", str(workers), "gate")
    if res.returncode != 0:
        return row(f"peer N={n}", "pipeline failed", tgt, False, res.stderr[-500:], load_before=lb)
    scoring_s = scoring_seconds(wd)
    say(n, f"sealbench `snakemake gate` {seal_s:.1f} s")
    # (b) the (task, patch) pairs sealbench scored
    samples = scored_runs(wd)
    k = len(samples)
    # (c) inspect-ai: its fixed start (import; an eval of one sample doing nothing), then the pairs
    peer = wd / "peer"
    peer.mkdir()
    task_file = peer / "peer_task.py"
    task_file.write_text(TASK_FILE.format(samples=samples))
    imp_s = import_seconds()
    empty_s, empty = inspect_eval(task_file, "empty", peer / "logs-empty", workers)
    insp_s, ires = inspect_eval(task_file, "peer", peer / "logs", workers)
    verdicts = inspect_verdicts(peer / "logs")
    say(n, f"{k} scored runs; import inspect_ai {imp_s:.1f} s, empty eval {empty_s:.1f} s, inspect eval {insp_s:.1f} s")
    if ires.returncode != 0 or len(verdicts) != k:
        return row(f"peer N={n}", "inspect eval failed", tgt, False,
                   f"N={n}, {k} scored runs, {len(verdicts)} samples logged; exit {ires.returncode}: "
                   f"{(ires.stderr or ires.stdout)[-600:]}", load_before=lb)
    errors = sum(1 for v in verdicts.values() if v["error"])
    disagree = [s["id"] for s in samples if verdicts[s["id"]]["pass"] != bool(s["hidden_pass"])]
    # (d) the ideal pool: the same per-run work in a plain process pool
    ideal_s, ideal_res = ideal_pool(samples, workers)
    say(n, f"ideal pool {ideal_s:.1f} s")
    ideal_disagree = sum(1 for s, r in zip(samples, ideal_res) if bool(r) != bool(s["hidden_pass"]))
    per = {name: 1000 * secs / k for name, secs in (("sealbench", seal_s), ("inspect", insp_s), ("ideal", ideal_s))}
    ratio = seal_s / insp_s
    marginal = 1000 * (insp_s - empty_s) / k
    return row(f"peer N={n}", f"{ratio:.2f}x ({per['sealbench']:.0f} / {per['inspect']:.0f} ms/run)", tgt, ratio <= target,
               f"N={n}, {k} scored runs (controls + agent attempts), sandbox required, batch_size={BATCH_SIZE}, "
               f"{workers} workers each side; sealbench `snakemake gate` from scratch {seal_s:.1f} s "
               f"({per['sealbench']:.0f} ms/run; its scoring steps alone {scoring_s:.1f} s summed; the wall also "
               f"seals, runs the agents, stratifies, decides); inspect-ai eval {insp_s:.1f} s ({per['inspect']:.0f} "
               f"ms/run; fixed start: `import inspect_ai` {imp_s:.1f} s, empty eval {empty_s:.1f} s; marginal "
               f"{marginal:.0f} ms/sample; {errors} sample errors); ideal pool {ideal_s:.1f} s ({per['ideal']:.0f} "
               f"ms/run); sealbench/ideal {seal_s / ideal_s:.2f}x, inspect/ideal {insp_s / ideal_s:.2f}x; "
               f"verdict disagreements inspect vs sealbench hidden_pass: {len(disagree)}"
               + (f" ({', '.join(disagree[:5])})" if disagree else "") + f", ideal vs sealbench: {ideal_disagree}",
               load_before=lb, n=n, scored_runs=k, sealbench_s=seal_s, sealbench_scoring_steps_s=scoring_s,
               inspect_s=insp_s, inspect_import_s=imp_s, inspect_empty_eval_s=empty_s, inspect_marginal_ms=marginal,
               inspect_sample_errors=errors, ideal_s=ideal_s, ratio=ratio, ratio_sealbench_ideal=seal_s / ideal_s,
               ratio_inspect_ideal=insp_s / ideal_s, disagreements=len(disagree), ideal_disagreements=ideal_disagree,
               empty_eval_exit=empty.returncode)
