"""Scale benchmarks of sealbench: one table, one JSON line per run.

    python bench/run_all.py [--quick] [--only NAME] [--keep]

NAME is one of: overhead, replan, incremental, hashing, setup, gate, peer (bench/peer_inspect.py). Each benchmark is also a
plain function (``bench_overhead(state, n=200)`` …) that returns a row for the table.

Every pipeline run is ``python -m snakemake -s Snakefile -d WORKDIR --configfile cfg.yaml``
on a pack from ``bench/make_pack.py`` in a temporary folder (never the project's results/),
with ``--scheduler greedy`` (as profiles/local sets it; the default ILP scheduler
is quadratic in ready jobs, see docs/scale.md). ``--quick`` uses smaller sizes, labelled
``QUICK`` in the table: those rows are not the target sizes.

Prints a table (figure, measured, target, met?, notes) and appends one JSON line to
bench/results/run_all.jsonl with the machine (cpu count, load average before/after, python,
snakemake). Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "bench"))

from make_pack import FIX_AGENT, NOOP_AGENT, make_pack, write_config  # noqa: E402

from sealbench.testing.snakemake_output import job_counts, jobs_to_run  # noqa: E402

SMK_FLAGS = ["--scheduler", "greedy"]
#: Tasks per job (config batch_size) for the pipeline runs: the granularity for many small tasks.
BATCH_SIZE = 20
PER_TASK_JOBS = {"hash_pack": 1, "leak_check": 1, "run_dummy": 1, "run_agent": 2, "hidden_score": 2}
AGGREGATE_JOBS = {"pack_digests": 1, "stratify": 1, "decide": 1, "gate": 1}  # + split on a first run
BENCHES = ("overhead", "replan", "incremental", "hashing", "setup", "gate", "peer")


# ------------------------------------------------------------------------------ helpers

def tmpdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=f"sealbench-bench-{prefix}-"))


def smk(workdir: Path, *args: str, snakefile: Path = ROOT / "Snakefile", configfile: bool = True):
    """Run snakemake like tests/pipeline/test_pipeline.py does; returns (seconds, CompletedProcess)."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(workdir)]
    if configfile:
        cmd += ["--configfile", str(workdir / "cfg.yaml")]
    cmd += [*SMK_FLAGS, *args]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    return time.perf_counter() - t0, res


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def reset_peak_rss() -> float | None:
    """Reset this process's peak resident set (Linux: ``5`` into /proc/self/clear_refs) and
    return the resident set now, in MB; None where that is not possible."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _proc_status_mb("VmRSS")
    except OSError:
        return None


def peak_rss_mb() -> float:
    """Peak resident set since the last :func:`reset_peak_rss` (VmHWM), else the process's
    ``ru_maxrss``, in MB."""
    try:
        return _proc_status_mb("VmHWM")
    except (OSError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _proc_status_mb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no {key} in /proc/self/status")


def row(figure: str, measured: str, target: str, met: bool | None, notes: str, **data) -> dict:
    return {"figure": figure, "measured": measured, "target": target, "met": met, "notes": notes,
            "load_before": data.pop("load_before", None), "load_after": loadavg(), "data": data}


def pipeline_workdir(state: dict, n: int) -> Path:
    """A workdir with a complete pipeline run on ``n`` tasks (the overhead run's, or a new one)."""
    wd = state.get("done", {}).get(n)
    if wd:
        return wd
    wd = tmpdir(f"pipe{n}")
    state.setdefault("cleanup", []).append(wd)
    make_pack(wd / "pack", n)
    write_config(wd / "cfg.yaml", wd / "pack", batch_size=BATCH_SIZE)
    secs, res = smk(wd, "--cores", "2", "gate")
    if res.returncode != 0:
        raise RuntimeError(f"pipeline run on {n} tasks failed:\n{res.stderr[-3000:]}")
    state.setdefault("done", {})[n] = wd
    state.setdefault("run_secs", {})[n] = secs
    return wd


# ------------------------------------------------------------------------------ 1. overhead

def _copy(src: Path, dst: Path) -> None:
    shutil.copytree(src, dst, dirs_exist_ok=True)


#: Set in the pool's workers when the ideal runs sandboxed (``bench_overhead(sandbox=True)``).
IDEAL_SANDBOX = {"on": False}


def _run(cmd: str, cwd: Path, env: dict, writable: tuple[Path, ...] = ()) -> int:
    argv = ["bash", "-c", cmd]
    if IDEAL_SANDBOX["on"]:  # the same bwrap recipe the pipeline uses, one launch per command
        from sealbench.isolation.sandbox import make_sandbox

        argv = make_sandbox("bwrap", writable=[cwd, *writable]).wrap(argv, cwd)
    return subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60).returncode


def _both(meta: dict, ws: Path, env: dict) -> bool:
    """The visible then the hidden command, both run whatever the first gave (as the pipeline's
    scoring runs both: its tables record each); True when both pass."""
    visible = _run(meta["visible_command"], ws, env)
    hidden = _run(meta["hidden_command"], ws, env)
    return visible == 0 and hidden == 0


def _sandboxed_worker(on: bool) -> None:
    IDEAL_SANDBOX["on"] = on


def ideal_controls(task: str, oracle_runs: int, scratch: str) -> list[str]:
    """The controls' commands on fresh copies: empty diff, stub, gold patch x oracle_runs."""
    from sealbench.core.core import harness_env, read_json

    task, scratch = Path(task), Path(scratch)
    meta = read_json(task / "meta.json")
    env = harness_env({"GIT_CEILING_DIRECTORIES": str(scratch)})
    out = []
    for name in ["empty_diff", "stub"] + ["oracle"] * oracle_runs:
        ws = Path(tempfile.mkdtemp(dir=scratch))
        for sub in ("visible_tests", "hidden_tests"):
            _copy(task / sub, ws / sub)
        _copy(task / "repo", ws)
        if name == "stub":
            with open(ws / "calc.py", "a") as fh:
                fh.write("# stub: no behaviour change\n")
        elif name == "oracle":
            subprocess.run(["git", "apply", str(task / "oracle.patch")], cwd=ws, env=env, check=True,
                           capture_output=True)
        ok = _both(meta, ws, env)
        out.append(f"{name}:{'pass' if ok else 'fail'}")
        shutil.rmtree(ws)
    return out


def ideal_agent(task: str, command: str, scratch: str) -> str:
    """One agent command on a fresh copy, then its scoring commands (hidden tests copied in)."""
    from sealbench.core.core import harness_env, read_json

    task, scratch = Path(task), Path(scratch)
    meta = read_json(task / "meta.json")
    ws = Path(tempfile.mkdtemp(dir=scratch))
    outd = Path(tempfile.mkdtemp(dir=scratch))
    _copy(task / "repo", ws)
    _copy(task / "visible_tests", ws / "visible_tests")
    env = harness_env({"SEALBENCH_OUT": str(outd), "SEALBENCH_TASK_ID": meta["id"]})
    _run(command, ws, env, (outd,))
    _copy(task / "hidden_tests", ws / "hidden_tests")
    ok = _both(meta, ws, env)
    shutil.rmtree(ws)
    shutil.rmtree(outd)
    return "pass" if ok else "fail"


def ideal_pool(pack: Path, oracle_runs: int = 2, workers: int = 2, sandbox: bool = False) -> tuple[float, dict]:
    scratch = tmpdir("ideal")
    tasks = sorted((pack / "tasks").iterdir())
    t0 = time.perf_counter()
    with cf.ProcessPoolExecutor(workers, initializer=_sandboxed_worker, initargs=(sandbox,)) as pool:
        ctl = [pool.submit(ideal_controls, str(t), oracle_runs, str(scratch)) for t in tasks]
        fix = [pool.submit(ideal_agent, str(t), FIX_AGENT, str(scratch)) for t in tasks]
        idle = [pool.submit(ideal_agent, str(t), NOOP_AGENT, str(scratch)) for t in tasks]
        results = {"controls": [f.result() for f in ctl], "fixer": [f.result() for f in fix],
                   "idle": [f.result() for f in idle]}
    secs = time.perf_counter() - t0
    shutil.rmtree(scratch, ignore_errors=True)
    expected_ctl = ["empty_diff:fail", "stub:fail"] + ["oracle:pass"] * oracle_runs
    sane = (all(r == expected_ctl for r in results["controls"]) and set(results["fixer"]) == {"pass"}
            and set(results["idle"]) == {"fail"})
    return secs, {"sane": sane, "jobs": 3 * len(tasks)}


def bench_overhead(state: dict, n: int = 200, batch_size: int = BATCH_SIZE, sandbox: bool = False) -> dict:
    """The pipeline against an ideal 2-process pool doing the same commands, both unsandboxed
    (copy workspaces) or both in bwrap (the pipeline then uses overlay workspaces)."""
    lb = loadavg()
    wd = tmpdir(f"pipe{n}")
    state.setdefault("cleanup", []).append(wd)
    make_pack(wd / "pack", n)
    # oracle_runs: 2, fixer + idle; sandbox off unless asked
    write_config(wd / "cfg.yaml", wd / "pack", batch_size=batch_size, **({"sandbox": "required"} if sandbox else {}))
    secs, res = smk(wd, "--cores", "2", "gate")
    if res.returncode != 0:
        return row("overhead", "pipeline failed", "<= 1.3x", False, res.stderr[-500:], load_before=lb)
    jobs = jobs_to_run(res.stdout + res.stderr)  # a run prints the compact console (docs/pipeline.md#console)
    if not sandbox:
        state.setdefault("done", {})[n] = wd
        state.setdefault("run_secs", {})[n] = secs
    ideal, info = ideal_pool(wd / "pack", oracle_runs=2, workers=2, sandbox=sandbox)
    ratio = secs / ideal
    both = "bwrap both sides (pipeline: overlay workspaces)" if sandbox else "sandbox off both sides (copy workspaces)"
    return row(f"overhead {'bwrap' if sandbox else 'off'}", f"{ratio:.2f}x ({secs:.0f} s / {ideal:.0f} s)", "<= 1.3x", ratio <= 1.3,
               f"N={n}, batch_size={batch_size}, {jobs} snakemake jobs ({secs / jobs * 1000:.0f} ms wall/job at --cores 2) vs a 2-process pool "
               f"over {info['jobs']} jobs (controls | agent+scoring); {both}; ideal scores in the agent's "
               f"copy (no patch/git step) and runs both commands per scoring, as the pipeline does; ideal results sane={info['sane']}",
               load_before=lb, n=n, batch_size=batch_size, pipeline_s=secs, ideal_s=ideal, ratio=ratio, jobs=jobs, ideal_sane=info["sane"])


# ------------------------------------------------------------------------------ 2. re-plan

#: One constant param per floor rule, as every pipeline rule has params: Snakemake then
#: serialises params for its rerun trigger (and imports pandas to do so, about 0.45 s).
FLOOR_PARAMS = '    params: p="sealbench"\n'


def _touch_rule(name: str, output: str, inputs: str | None, params: bool) -> str:
    """One rule of a floor workflow: it only touches its output."""
    return (f"rule {name}:\n" + (f"    input: {inputs}\n" if inputs else "") + f'    output: "{output}"\n'
            + (FLOOR_PARAMS if params else "") + '    shell: "touch {output}"\n')


def floor_snakefile(n: int, batch_size: int = 1, params: bool = True) -> str:
    """A trivial workflow of the pipeline's shape and job count, touch rules only (each with one
    constant param when ``params``): one job per batch of ``batch_size`` tasks, or with
    ``batch_size`` 1 the seven per-task jobs, then the same aggregates."""
    if batch_size > 1:
        units = [f"b{i:05d}" for i in range((n + batch_size - 1) // batch_size)]
        per_unit = [("task_batch", "b/{b}/done.txt", None)]
        done = 'expand("b/{b}/done.txt", b=UNITS)'
        sealed = done
    else:
        units = [f"t{i:05d}" for i in range(n)]
        per_unit = [("hash_pack", "t/{b}/sealed.txt", None),
                    ("leak_check", "t/{b}/leak.txt", '"t/{b}/sealed.txt"'),
                    ("run_dummy", "t/{b}/controls.txt", '"t/{b}/sealed.txt", "t/{b}/leak.txt"'),
                    ("run_agent", "t/{b}/run-{a}.txt", '"t/{b}/sealed.txt", "t/{b}/leak.txt"'),
                    ("hidden_score", "t/{b}/score-{a}.txt", '"t/{b}/sealed.txt", "t/{b}/controls.txt", "t/{b}/run-{a}.txt"')]
        sealed = 'expand("t/{b}/sealed.txt", b=UNITS)'
        done = ('expand("t/{b}/sealed.txt", b=UNITS), expand("t/{b}/leak.txt", b=UNITS), '
                'expand("t/{b}/controls.txt", b=UNITS), expand("t/{b}/score-{a}.txt", b=UNITS, a=AGENTS)')
    rules = [("decide", "exp/decision.json", '"exp/tables.txt", "split/manifest.txt", "pack/PACK_HASH.txt"'),
             ("stratify", "exp/tables.txt", done + ', "split/manifest.txt"'),
             ("split", "split/manifest.txt", None),
             ("pack_digests", "pack/PACK_HASH.txt", sealed), *per_unit]
    head = f'UNITS = {units!r}\nAGENTS = ["fixer", "idle"]\n\nrule gate:\n    input: "exp/decision.json"\n\n'
    return head + "\n".join(_touch_rule(name, out, ins, params) for name, out, ins in rules)


def median_dry(wd: Path, reps: int, **kw) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(reps):
        secs, res = smk(wd, "-n", "gate", **kw)
        out = res.stdout + res.stderr
        times.append(secs)
    return statistics.median(times), out


def bench_replan(state: dict, n: int = 1000, reps: int = 3, use_n: int | None = None) -> dict:
    """``snakemake -n gate`` on an up-to-date workdir vs a trivial workflow with as many jobs.
    ``use_n``: measure on an already completed run of that size instead of building ``n``."""
    lb = loadavg()
    size = use_n if use_n in state.get("done", {}) else n
    wd = pipeline_workdir(state, size)
    pipe, out = median_dry(wd, reps)
    up_to_date = "Nothing to be done" in out
    jobs = -(-size // BATCH_SIZE) + len(AGGREGATE_JOBS) + 1  # batches + aggregates + split
    floors = {}
    for params in (True, False):
        fl = tmpdir("floor")
        state.setdefault("cleanup", []).append(fl)
        (fl / "Snakefile").write_text(floor_snakefile(size, BATCH_SIZE, params=params))
        _, res = smk(fl, "--cores", "2", "gate", snakefile=fl / "Snakefile", configfile=False)
        floor_jobs = sum(job_counts(res.stdout + res.stderr).values())
        secs, fout = median_dry(fl, reps, snakefile=fl / "Snakefile", configfile=False)
        floors[params] = (secs, floor_jobs, "Nothing to be done" in fout)
    floor, floor_jobs, floor_ok = floors[True]
    bare = floors[False][0]
    ratio = pipe / floor
    note = (f"N={size}" + ("" if size == n else f" (target N={n} not built: a full run of {n} tasks is "
                                                  f"~{n / size:.0f}x the {state['run_secs'][size]:.0f} s N={size} run)")
            + f"; batch_size={BATCH_SIZE}; pipeline up to date={up_to_date}; floor: {floor_jobs} touch jobs "
              f"(pipeline DAG {jobs} jobs), one constant param per rule as every pipeline rule has params "
              f"(Snakemake serialises params for its rerun trigger); against the same floor without params "
              f"({bare:.1f} s): {pipe / bare:.2f}x; same flags (-n, --scheduler greedy); median of {reps}")
    return row("re-plan", f"{ratio:.2f}x ({pipe:.1f} s / {floor:.1f} s)", "<= 1.5x", ratio <= 1.5, note,
               load_before=lb, n=size, target_n=n, pipeline_s=pipe, floor_s=floor, floor_no_params_s=bare,
               ratio=ratio, ratio_no_params=pipe / bare, up_to_date=up_to_date, floor_up_to_date=floor_ok,
               floor_jobs=floor_jobs)


# ------------------------------------------------------------------------------ 3. incremental

def bench_incremental(state: dict, n: int = 200) -> dict:
    """One byte of one task's hidden test: the plan must hold that task's batch job and the
    aggregates only, and inside the batch only that task's steps may run (the rest reused)."""
    lb = loadavg()
    wd = pipeline_workdir(state, n)
    tid = f"t{n // 2:05d}"
    hidden = wd / "pack" / "tasks" / tid / "hidden_tests" / "check_hidden.py"
    original = hidden.read_bytes()
    batches_before = {p.parent.name for p in (wd / "results" / "batches").glob("*/done.json")}
    hidden.write_bytes(original.replace(b"else 1)", b"else 2)"))  # one byte
    try:
        dry_s, res = smk(wd, "-n", "gate")
        run_s, run = smk(wd, "--cores", "2", "gate")
    finally:
        hidden.write_bytes(original)
    counts = job_counts(res.stdout + res.stderr)
    expected = {"task_batch": 1, **AGGREGATE_JOBS}
    new = [json.loads(p.read_text()) for p in (wd / "results" / "batches").glob("*/done.json")
           if p.parent.name not in batches_before]
    per_task = sum(PER_TASK_JOBS.values())
    inside = [(b["ran"], b["reused"], tid in b["tasks"]) for b in new]
    exact = (run.returncode == 0 and len(new) == 1 and inside[0][0] == per_task and inside[0][2]
             and inside[0][1] == per_task * (len(new[0]["tasks"]) - 1))
    matched = counts == expected and exact
    _, back = smk(wd, "-n", "gate")
    reverted = "Nothing to be done" in back.stdout + back.stderr
    return row("incremental", f"{sum(counts.values())} jobs; {inside[0][0] if inside else '?'} steps ran",
               f"= 1 batch + {len(AGGREGATE_JOBS)} aggregates; {per_task} steps (that task's)", matched,
               f"N={n}, batch_size={BATCH_SIZE}, 1 byte of {tid}'s hidden test; plan {counts}; inside the rerun batch "
               f"(ran, reused, holds {tid}) = {inside}; -n took {dry_s:.1f} s, the rerun {run_s:.1f} s; "
               f"after revert up to date={reverted}",
               load_before=lb, n=n, counts=counts, expected=expected, inside=inside, dry_s=dry_s, run_s=run_s,
               reverted_up_to_date=reverted)


# ------------------------------------------------------------------------------ 4. hashing

def bench_hashing(state: dict, tasks: int = 200, mb_per_task: int = 5, reps: int = 3) -> dict:
    from sealbench.core.core import HashCache, task_digest

    lb = loadavg()
    tmp = tmpdir("hash")
    try:
        t0 = time.perf_counter()
        make_pack(tmp / "pack", tasks, repo_kb=mb_per_task * 1024, pad_file_kb=64)
        gen = time.perf_counter() - t0
        tdirs = sorted((tmp / "pack" / "tasks").iterdir())
        files = [p for p in (tmp / "pack" / "tasks").rglob("*") if p.is_file()]
        total = sum(p.stat().st_size for p in files)
        shell_cmd = f"find {tmp / 'pack' / 'tasks'} -type f -print0 | xargs -0 sha256sum > /dev/null"
        subprocess.run(f"find {tmp / 'pack' / 'tasks'} -type f -print0 | xargs -0 cat > /dev/null",
                       shell=True, check=True)  # warm the page cache for both
        py, sh = [], []
        for _ in range(reps):  # interleaved, so load changes hit both
            t0 = time.perf_counter()
            for d in tdirs:
                task_digest(d, HashCache())  # empty cache: every file read and hashed
            py.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            subprocess.run(shell_cmd, shell=True, check=True)
            sh.append(time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    mb = total / 1e6
    py_mbs, sh_mbs = mb / statistics.median(py), mb / statistics.median(sh)
    ratio = py_mbs / sh_mbs
    return row("hashing", f"{ratio:.2f}x ({py_mbs:.0f} vs {sh_mbs:.0f} MB/s)", ">= 0.8x sha256sum", ratio >= 0.8,
               f"{mb:.0f} MB in {len(files)} files, {tasks} tasks; task_digest per task (empty HashCache) vs "
               f"find|xargs sha256sum; page cache warm; median of {reps}; generation {gen:.0f} s",
               load_before=lb, bytes=total, files=len(files), py_s=py, sha256sum_s=sh, py_mbs=py_mbs,
               sha256sum_mbs=sh_mbs, ratio=ratio)


# ------------------------------------------------------------------------------ 5. set-up

def bench_setup(state: dict, repo_mb: int = 50, reps: int = 10) -> dict:
    """Workspace + sandbox set-up per attempt on a sealed task of ``repo_mb`` (files of 4 KB):
    an overlay workspace (the default where bwrap can mount one) and, beside it, the copy
    fallback. The base layer (``.git`` of the snapshot), built once per sealed task, is timed
    apart: it is not paid per attempt."""
    from sealbench.core import core
    from sealbench.isolation.layers import COPY, OVERLAY, overlay_problem, remove_tree
    from sealbench.isolation.sandbox import bwrap_problem, make_sandbox
    from sealbench.pack.workspace import make_workspace
    from sealbench.stages import hash_pack

    lb = loadavg()
    tmp = tmpdir("setup")
    try:
        make_pack(tmp / "pack", 1, repo_kb=repo_mb * 1024, pad_file_kb=4)
        src = tmp / "pack" / "tasks" / "t00000"
        task = tmp / "results" / "sealed"
        hash_pack.seal_task(src, core.task_digest(src), task, tmp / "results" / "sealed.json")
        nfiles = sum(1 for p in (task / "repo").rglob("*") if p.is_file())
        problem = bwrap_problem()
        level = "none" if problem else "bwrap"
        kind = OVERLAY if level == "bwrap" and overlay_problem() is None else COPY
        t0 = time.perf_counter()
        first = make_workspace(task, tmp / "first" / "ws", tmp / "first" / "private", kind)
        layer_s = time.perf_counter() - t0
        times: dict[str, list[float]] = {"ws": [], "box": [], "bw": [], "copy": []}
        for i in range(reps):
            root, private, outd = tmp / f"ws{i}", tmp / f"private{i}", tmp / f"out{i}"
            t0 = time.perf_counter()
            ws = make_workspace(task, root, private, kind)
            times["ws"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            box = make_sandbox(level, writable=[outd] if kind == OVERLAY else [root, outd], hide=[tmp / "pack"])
            box = box.with_overlay(ws.overlay()) if kind == OVERLAY else box
            argv = box.wrap(["bash", "-c", "test -f .git/HEAD"], root)
            times["box"].append(time.perf_counter() - t0)
            if not problem:
                t0 = time.perf_counter()
                subprocess.run(argv, cwd=root, check=True, stdin=subprocess.DEVNULL, capture_output=True)
                times["bw"].append(time.perf_counter() - t0)
            if i < 3:  # the copy fallback, for comparison
                t0 = time.perf_counter()
                make_workspace(task, tmp / f"copy{i}", tmp / f"cprivate{i}", COPY)
                times["copy"].append(time.perf_counter() - t0)
                remove_tree(tmp / f"copy{i}")
                remove_tree(tmp / f"cprivate{i}")
            remove_tree(root)
            remove_tree(private)
        del first
    finally:
        remove_tree(tmp)
    med = {k: 1000 * statistics.median(v) if v else None for k, v in times.items()}
    total = med["ws"] + med["box"] + (med["bw"] or 0)
    return row(f"set-up {repo_mb} MB", f"{total:.0f} ms (workspace {med['ws']:.1f} + sandbox {med['box'] + (med['bw'] or 0):.0f})",
               "<= 100 ms" if repo_mb == 50 else "(figure)", total <= 100 if repo_mb == 50 else None,
               f"{kind} workspace; {repo_mb} MB sealed repo, {nfiles} files of 4 KB; make_workspace {med['ws']:.1f} ms; "
               f"sandbox argv {med['box']:.1f} ms" + (f" + bwrap mounting it and running a command {med['bw']:.0f} ms"
                                                       if med["bw"] is not None else f"; bwrap not run ({problem})")
               + f"; median of {reps}. Once per sealed task (not per attempt): base layer with .git {1000 * layer_s:.0f} ms. "
               f"Copy fallback: make_workspace {med['copy']:.0f} ms (median of {len(times['copy'])})",
               load_before=lb, repo_mb=repo_mb, files=nfiles, kind=kind, make_workspace_ms=med["ws"],
               sandbox_argv_ms=med["box"], bwrap_run_ms=med["bw"], total_ms=total, base_layer_ms=1000 * layer_s,
               copy_workspace_ms=med["copy"])


# ------------------------------------------------------------------------------ 6. stratify + gate

def synthetic_spec(n_tasks: int, n_agents: int = 4, epochs: int = 5, seed: int = 1) -> dict:
    """An experiment as plain data, built like tests/gate/test_gate_refusals.build_spec (bigger).

    ``tasks`` are row dicts (10,000 of them at most); ``runs`` is a DataFrame with the runs
    table's dtypes, built column by column (the same rows, in the same order, as one dict per
    run would give; the random draws are taken in task, agent, epoch order)."""
    import numpy as np
    import pandas as pd

    from sealbench.core import configuration, tables

    strata = ["xs", "s", "m"]
    agents = [f"agent{i}" for i in range(1, n_agents + 1)]
    cfg = {**configuration.config_defaults(), "pack": "pack", "seed": 20261129, "holdout_frac": 0.5, "score_split": "holdout",
           "agents": {a: {"command": f"python -m {a}"} for a in agents}, "candidate": agents[0],
           "baseline": agents[1], "epochs": epochs, "humans": [], "sandbox": "required", "oracle_runs": 3,
           "envelope": {"max_wall_s": 2700, "max_steps": 60, "max_output_tokens": 8192},
           "health": {"allowed_quota_states": ["ok", "unmetered"], "max_queue_ms": 60000, "max_retries": 3,
                      "required_server_id": None},
           "mde": 0.1, "planning_discordance": 0.3, "min_kept_tasks": 6, "strata": strata}
    rng = random.Random(seed)
    base_p = {"xs": 0.8, "s": 0.5, "m": 0.2}
    tasks = []
    for i in range(n_tasks):
        st = strata[i % 3]
        tid = f"{st}{i:05d}"
        tasks.append({"task_id": tid, "stratum": st, "split": "holdout" if (i // 3) % 2 == 0 else "tune",
                      "task_digest": f"{i:064x}", "title": f"task {tid}", "time_box_sec": 1800, "leak_suspect": False,
                      "leak_checks": "denylist", "oracle_ok": True, "oracle_passes": 3, "oracle_runs": 3,
                      "weak_test": False, "stub_passes": False, "flaky": False, "control_infra_fail": False})
    # per task: the empty diff, the stub, three oracle runs (controls), then each agent's epochs
    solvers = ["empty_diff", "stub", "oracle", "oracle", "oracle"] + [a for a in agents for _ in range(epochs)]
    per_task = len(solvers)
    agent_pass = [rng.random() < base_p[t["stratum"]] + 0.05 * (n_agents - k) / n_agents
                  for t in tasks for k in range(n_agents) for _ in range(epochs)]
    is_agent = np.tile(np.arange(per_task) >= 5, n_tasks)
    passed = np.tile(np.array([False, False, True, True, True] + [False] * (per_task - 5)), n_tasks)
    passed[is_agent] = agent_pass
    on_task = {k: np.repeat(np.array([t[k] for t in tasks], dtype=object), per_task)
               for k in ("task_id", "stratum", "split", "task_digest")}
    solver = np.tile(np.array(solvers, dtype=object), n_tasks)

    def agents_only(value, dtype):  # the agent rows' value, null on the control rows
        if dtype == "float64":
            return np.where(is_agent, value, np.nan)
        return pd.array(np.where(is_agent, value, None), dtype=dtype)

    dtypes = tables.pandas_dtypes("runs")
    cols = {**on_task, "solver": solver, "role": np.where(is_agent, "agent", "control").astype(object),
            "fingerprint": np.char.add("fp-", solver.astype(str)).astype(object),
            "epoch": np.tile(np.array([1, 1, 1, 2, 3] + list(range(1, epochs + 1)) * n_agents), n_tasks),
            "status": np.where(passed, "pass", "fail").astype(object),
            "visible_pass": pd.array(passed, dtype="boolean"), "hidden_pass": pd.array(passed, dtype="boolean"),
            "pack_digest": np.full(len(solver), "p" * 64, dtype=object),
            "patch_bytes": pd.array(np.where(is_agent, 300, 0), dtype="Int64"),
            "reason": np.where(passed, None, "hidden tests failed"),
            "end_reason": np.where(is_agent, "exit", "control").astype(object),
            "time_to_green_s": np.where(is_agent & passed, 60.0, np.nan)}
    for k, v in {"wall_s": 120.0, "time_box_s": 1800.0, "exit_code": 0, "steps": 12, "tokens_in": 5000,
                 "tokens_out": 900, "cost_usd": 0.01, "steer_count": 0, "visible_attempts": 2, "isolation": "bwrap",
                 "over_envelope": False, "server_id": "srv-1", "queue_ms": 100, "retries": 0, "quota_state": "ok",
                 "route_changed": False}.items():
        cols[k] = agents_only(v, dtypes[k])
    runs = pd.DataFrame({k: pd.Series(cols[k], dtype=dtypes[k]) for k in dtypes if k in cols})
    return {"cfg": cfg, "tasks": tasks, "runs": runs}


def bench_gate(state: dict, n_tasks: int = 10_000, n_agents: int = 4, epochs: int = 5) -> dict:
    """stratify.build_strata + writing the tables + gate.decide on a synthetic experiment,
    written the way tests/gate/test_gate_refusals.write_experiment does (the runs as columns: a
    DataFrame, as stratify's inputs could stay). Also the peak resident memory of that timed
    part (Linux VmHWM, reset just before it; elsewhere the process's ru_maxrss)."""
    from sealbench.core import core, tables
    from sealbench.gate import gate
    from sealbench.isolation.toolchain import toolchain_digest
    from sealbench.provenance import identity
    from sealbench.stages import split
    from sealbench.stages.stratify import build_strata
    from sealbench.stats import paired

    lb = loadavg()
    t0 = time.perf_counter()
    spec = synthetic_spec(n_tasks, n_agents, epochs)
    build_s = time.perf_counter() - t0
    cfg, tasks, runs = spec["cfg"], spec["tasks"], spec["runs"]
    root = tmpdir("gate")
    try:
        manifest = {"seed": cfg["seed"], "holdout_frac": cfg["holdout_frac"],
                    "tune": sorted(t["task_id"] for t in tasks if t["split"] == "tune"),
                    "holdout": sorted(t["task_id"] for t in tasks if t["split"] == "holdout")}
        split_path = root / "split" / "split_manifest.json"
        core.write_json(split_path, manifest)
        pack_hash = root / "packs" / ("p" * 64) / "PACK_HASH.txt"
        pack_hash.parent.mkdir(parents=True)
        pack_hash.write_text("# sealbench pack hash\n" + "p" * 64 + "\n")
        tc = {"python": "3.11.0", "implementation": "cpython", "executable": "/usr/bin/python3",
              "packages": ["numpy==2.0.0", "pandas==2.2.0"]}
        ident = {"pack_digest": "p" * 64, "split_manifest_digest": split.manifest_digest(manifest),
                 "config": {k: v for k, v in cfg.items() if k != "pack"}, "code": "c" * 16,
                 "toolchain_digest": toolchain_digest(tc),
                 "agent_fingerprints": {a: identity.agent_fingerprint(a, cfg["agents"][a]) for a in cfg["agents"]},
                 "human_sessions": []}
        exp = dict(ident, exp_id=core.sha256_text(core.canonical_json(ident))[:16], pack=cfg["pack"],
                   task_digests={t["task_id"]: t["task_digest"] for t in tasks},
                   oracle_commands=[{"commands": "visible: a | hidden: b", "tasks": sorted(manifest["holdout"])}],
                   denylist_lines=1, denylist_digest="d" * 64,
                   strata_of={t["task_id"]: t["stratum"] for t in tasks}, toolchain=tc, config_full=cfg)
        exp_dir = root / "experiments" / exp["exp_id"]
        core.write_json(exp_dir / "experiment.json", exp)

        rss_before = reset_peak_rss()
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        strata = build_strata(runs, cfg["strata"])
        strata_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        tables.write_table(tasks, "tasks", exp_dir / "tables" / "tasks.parquet")
        tables.write_table(runs, "runs", exp_dir / "tables" / "runs.parquet")
        tables.write_table(strata, "strata", exp_dir / "tables" / "strata.parquet")
        write_s = time.perf_counter() - t0

        # time the parts of decide by wrapping them (benchmark-side only; gate.py unchanged)
        parts: dict[str, float] = {}

        def timed(name, fn):
            def wrapper(*a, **k):
                t = time.perf_counter()
                try:
                    return fn(*a, **k)
                finally:
                    parts[name] = parts.get(name, 0.0) + time.perf_counter() - t
            return wrapper

        saved = {}
        for mod, name in ((paired, "paired_delta"), (gate, "per_task_scores"), (gate, "build_card"),
                          (gate, "render_report"), (gate, "roles_table"), (gate, "cost_per_pass"),
                          (gate, "pass_at_k_table")):
            saved[(mod, name)] = getattr(mod, name)
            setattr(mod, name, timed(name, saved[(mod, name)]))
        try:
            t0 = time.perf_counter()
            decision, card, report = gate.decide(exp_dir, split_path, pack_hash)
            decide_s = time.perf_counter() - t0
            cpu_s = time.process_time() - cpu0
            peak_mb = peak_rss_mb()
        finally:
            for (mod, name), fn in saved.items():
                setattr(mod, name, fn)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = strata_s + write_s + decide_s
    other = decide_s - sum(parts.values())
    mem_how = ("VmHWM, the peak reset just before build_strata; "
               f"{rss_before:.0f} MB resident then, the synthetic rows included") if rss_before is not None \
        else "ru_maxrss of the whole process"
    split_txt = ", ".join(f"{k} {v:.2f}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1]))
    return row("stratify+gate", f"{total:.2f} s", "<= 3 s", total <= 3,
               f"{n_tasks} tasks x {n_agents} agents x {epochs} epochs + controls = {len(runs)} run rows; "
               f"build_strata {strata_s:.2f} s, write tables {write_s:.2f} s, decide {decide_s:.2f} s "
               f"(inside decide: {split_txt}, rest {other:.2f}); CPU time {cpu_s:.2f} s; peak RSS of the timed part {peak_mb:.0f} MB "
               f"({mem_how}); rows built in memory (columns) in {build_s:.1f} s (not counted); "
               f"publishable={decision['publishable']} {[r['code'] for r in decision['reasons']]}",
               load_before=lb, runs=len(runs), build_strata_s=strata_s, write_tables_s=write_s, decide_s=decide_s,
               decide_parts_s=parts, decide_rest_s=other, total_s=total, cpu_s=cpu_s, peak_rss_mb=round(peak_mb, 1),
               rss_before_mb=None if rss_before is None else round(rss_before, 1))


# ------------------------------------------------------------------------------ 7. a peer

def bench_peer(state: dict, n: int = 14) -> dict:
    """The same scoring work through sealbench and inspect-ai: bench/peer_inspect.py."""
    from peer_inspect import bench_peer as peer

    return peer(state, n)


# ------------------------------------------------------------------------------ main

def machine() -> dict:
    from importlib import metadata

    return {"cpu_count": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version(),
            "snakemake": metadata.version("snakemake"), "platform": platform.platform()}


def run(names: list[str], quick: bool) -> tuple[list[dict], dict]:
    state: dict = {}
    sizes = dict(overhead=[{"n": 24}, {"n": 24, "sandbox": True}] if quick else [{"n": 200}, {"n": 200, "sandbox": True}],
                 replan={"n": 1000, "use_n": 24} if quick else {"n": 1000},
                 incremental={"n": 24} if quick else {"n": 200},
                 hashing={"tasks": 20} if quick else {},
                 setup=[{"repo_mb": 5}] if quick else [{"repo_mb": 50}, {"repo_mb": 200, "reps": 5}],
                 gate={"n_tasks": 1000} if quick else {},
                 peer=[{"n": 14}] if quick else [{"n": 14}, {"n": 200}])  # a list: one row per size
    funcs = {"overhead": bench_overhead, "replan": bench_replan, "incremental": bench_incremental,
             "hashing": bench_hashing, "setup": bench_setup, "gate": bench_gate, "peer": bench_peer}
    rows = []
    try:
        for name in names:
            for kw in (sizes[name] if isinstance(sizes[name], list) else [sizes[name]]):   # one row per size
                t0 = time.perf_counter()
                try:
                    r = funcs[name](state, **dict(kw))
                except Exception as exc:  # report and continue: one broken benchmark is one row
                    r = row(name, "error", "", None, f"{type(exc).__name__}: {str(exc)[-300:]}")
                r["secs"] = round(time.perf_counter() - t0, 1)
                if quick:
                    r["notes"] = "QUICK (not the target size): " + r["notes"]
                rows.append(r)
                print(f"  [{name}] done in {r['secs']} s: {r['measured']}", file=sys.stderr, flush=True)
    finally:
        if not state.get("keep"):
            for d in state.get("cleanup", []):
                shutil.rmtree(d, ignore_errors=True)
    return rows, state


def print_table(rows: list[dict], info: dict) -> None:
    print(f"sealbench scale benchmarks ({info['machine']['cpu_count']} cores, python {info['machine']['python']}, "
          f"snakemake {info['machine']['snakemake']}; load avg before {info['load_before']}, after {info['load_after']})")
    w = [14, 34, 30, 5]
    print(f"{'figure':<{w[0]}} {'measured':<{w[1]}} {'target':<{w[2]}} {'met?':<{w[3]}} notes")
    for r in rows:
        met = "-" if r["met"] is None else ("yes" if r["met"] else "NO")
        print(f"{r['figure']:<{w[0]}} {r['measured']:<{w[1]}} {r['target']:<{w[2]}} {met:<{w[3]}} "
              f"{r['notes']} [load {r['load_before']} -> {r['load_after']}; {r['secs']} s]")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run (not the target sizes)")
    ap.add_argument("--only", choices=BENCHES, action="append", help="run only this benchmark (repeatable)")
    args = ap.parse_args(argv)
    names = args.only or list(BENCHES)
    info = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"), "quick": args.quick, "only": args.only,
            "machine": machine(), "load_before": loadavg(), "scheduler_flags": SMK_FLAGS}
    t0 = time.perf_counter()
    rows, _ = run(names, args.quick)
    info["load_after"] = loadavg()
    info["total_s"] = round(time.perf_counter() - t0, 1)
    print_table(rows, info)
    out = ROOT / "bench" / "results" / "run_all.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(dict(info, rows=rows), default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
