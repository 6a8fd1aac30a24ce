"""False winners at a true delta of 0, and power at a true delta of +0.15, of the gate's
paired comparison (``paired.paired_delta`` -> stratified t decision interval).

    python bench/false_winner.py [--packs 2000] [--seed 20261129] [--workers 2]

Simulation model (one simulated pack = n tasks, n/3 per stratum xs / s / m):

* each task i in stratum h draws a latent ease q_i ~ Beta(p_h * K, (1 - p_h) * K) with
  base pass probabilities p = 0.8 / 0.5 / 0.2 and concentration K = 2, so E[q_i] = p_h;
* the baseline passes with probability q_i, and the candidate independently given q_i
  with probability q_i (null block) or q_i + delta * (1 - q_i) / (1 - p_h) (power block:
  the failure probability shrinks in proportion, E[cand] - E[base] = delta in every
  stratum, and probabilities stay in [0, 1] for delta <= 1 - max p_h);
* expected discordance P(cand != base) = 2 * mean_h p_h (1 - p_h) * K / (K + 1) ~ 0.25
  under the null (independent draws would give 0.38; identical draws 0).

Each pack is scored with ``paired.paired_delta(strata, cand, base, n_resamples=2000)``
(the gate's own function, bootstrap resamples NOT lowered) and three calls are counted:
the stratified t decision interval excludes 0 (either direction), the blocked bootstrap
percentile interval excludes 0, the gate's rule without the power floor (``rule``: the
interval excludes 0, the exact McNemar p < 0.05 and |delta| >= MDE 0.1), and
``decision_rule.gate_call`` with ``n_required`` from ``required_n_miller(mde=0.1, psi=0.3)``
(which never names a winner when underpowered).

Prints a table and appends one JSON line to bench/results/false_winner.jsonl.
Not a test: nothing here fails when the rate is above 5%; the output says so instead.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.stats import decision_rule, paired, power, rate_intervals  # noqa: E402

STRATA = ("xs", "s", "m")
BASE_P = (0.8, 0.5, 0.2)
CONCENTRATION = 2.0
RESAMPLES = 2000
MDE, PSI = 0.1, 0.3
ALPHA = 0.05
NULL_NS = (12, 24, 48)
POWER_NS = (24, 48, 96)
POWER_DELTA = 0.15
LIMIT = 0.05


def simulate(rng: np.random.Generator, n: int, packs: int, delta: float) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``packs`` packs of ``n`` tasks: (stratum labels, cand[packs, n], base[packs, n]) as 0/1 floats."""
    if n % len(STRATA):
        raise ValueError(f"n={n} is not divisible by {len(STRATA)} strata")
    m = n // len(STRATA)
    labels = [h for h in STRATA for _ in range(m)]
    p = np.repeat(np.asarray(BASE_P), m)  # per task
    if delta > 1 - p.max():
        raise ValueError(f"delta={delta} would push a pass probability above 1")
    ease = rng.beta(p * CONCENTRATION, (1 - p) * CONCENTRATION, size=(packs, n))
    q_cand = ease + delta * (1 - ease) / (1 - p)
    base = (rng.random((packs, n)) < ease).astype(float)
    cand = (rng.random((packs, n)) < q_cand).astype(float)
    return labels, cand, base


def _interval_call(lo: float, hi: float) -> str:
    """The gate's rule applied to any interval: a winner only when it excludes 0."""
    if lo > 0:
        return decision_rule.VERDICT_CANDIDATE
    if hi < 0:
        return decision_rule.VERDICT_BASELINE
    return decision_rule.VERDICT_NONE


def _score_chunk(args: tuple) -> list[tuple]:
    labels, cand, base, seeds, n_required = args
    out = []
    for c, b, seed in zip(cand, base, seeds):
        res = paired.paired_delta(labels, c, b, n_resamples=RESAMPLES, seed=int(seed))
        call = decision_rule.gate_call(res, n_required, mde=MDE, alpha=ALPHA)
        rule = decision_rule.gate_call(res, None, mde=MDE, alpha=ALPHA)  # the gate's rule without the power floor
        out.append((
            call.interval_verdict,  # what the stratified t decision interval alone says
            _interval_call(*res.bootstrap_ci),
            call.verdict,
            res.discordance,
            res.se == 0.0,
            res.method,
            rule.verdict,
        ))
    return out


def score(labels, cand, base, seeds, n_required: int, pool: ProcessPoolExecutor | None, workers: int) -> list[tuple]:
    if pool is None:
        return _score_chunk((labels, cand, base, seeds, n_required))
    chunks = np.array_split(np.arange(len(cand)), workers * 4)
    jobs = [(labels, cand[ix], base[ix], seeds[ix], n_required) for ix in chunks if len(ix)]
    return [row for part in pool.map(_score_chunk, jobs) for row in part]


def summarise(n: int, rows: list[tuple], delta: float) -> dict:
    k = len(rows)
    t_calls = [r[0] for r in rows]
    b_calls = [r[1] for r in rows]
    g_calls = [r[2] for r in rows]
    t_any = sum(c != decision_rule.VERDICT_NONE for c in t_calls)
    t_cand = sum(c == decision_rule.VERDICT_CANDIDATE for c in t_calls)
    t_base = sum(c == decision_rule.VERDICT_BASELINE for c in t_calls)
    b_any = sum(c != decision_rule.VERDICT_NONE for c in b_calls)
    b_cand = sum(c == decision_rule.VERDICT_CANDIDATE for c in b_calls)
    g_any = sum(c != decision_rule.VERDICT_NONE for c in g_calls)
    g_cand = sum(c == decision_rule.VERDICT_CANDIDATE for c in g_calls)
    degenerate = sum(1 for r in rows if r[0] != decision_rule.VERDICT_NONE and r[4])
    r_any = sum(r[6] != decision_rule.VERDICT_NONE for r in rows)
    r_cand = sum(r[6] == decision_rule.VERDICT_CANDIDATE for r in rows)
    fallback = sum(1 for r in rows if r[5] != "stratified_t")
    out = {
        "n": n, "packs": k, "true_delta": delta,
        "t_winner": t_any, "t_winner_rate": t_any / k, "t_names_candidate": t_cand,
        "t_names_candidate_rate": t_cand / k, "t_names_baseline": t_base,
        "t_winner_se0": degenerate, "paired_t_fallbacks": fallback,
        "boot_winner": b_any, "boot_winner_rate": b_any / k,
        "boot_names_candidate": b_cand, "boot_names_candidate_rate": b_cand / k,
        "gate_winner": g_any, "gate_winner_rate": g_any / k,
        "rule_winner": r_any, "rule_winner_rate": r_any / k, "rule_names_candidate": r_cand,
        "rule_names_candidate_rate": r_cand / k,
        "gate_names_candidate": g_cand, "gate_names_candidate_rate": g_cand / k,
        "mean_discordance": float(np.mean([r[3] for r in rows])),
        "observed_mde": power.observed_mde(n, PSI),
    }
    if delta == 0:
        out["t_winner_cp95"] = list(rate_intervals.clopper_pearson_interval(t_any, k))
    else:
        out["t_power_cp95"] = list(rate_intervals.clopper_pearson_interval(t_cand, k))
    return out


def percent(key: str) -> Callable[[dict], str]:
    return lambda r: f"{100 * r[key]:.2f}%"


def interval(key: str) -> Callable[[dict], str]:
    return lambda r: f"[{100 * r[key][0]:.2f}%, {100 * r[key][1]:.2f}%]"


def print_table(rows: list[dict], columns: list[tuple[str, int, Callable[[dict], str]]]) -> None:
    """A right-aligned table of ``rows``: n and packs, then ``columns`` (title, width, cell), then
    the mean discordance; a rule of dashes under the header."""
    columns = [("n", 4, lambda r: str(r["n"])), ("packs", 6, lambda r: str(r["packs"])), *columns,
               ("mean disc", 10, lambda r: f"{r['mean_discordance']:.3f}")]
    hdr = " ".join(f"{title:>{width}}" for title, width, _ in columns)
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(" ".join(f"{cell(r):>{width}}" for _, width, cell in columns))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packs", type=int, default=2000, help="simulated packs per n (>= 1000 for the check)")
    ap.add_argument("--seed", type=int, default=20261129)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                    help="processes scoring packs (results do not depend on it)")
    args = ap.parse_args(argv)
    if args.packs < 1:
        ap.error("--packs must be >= 1")

    t0 = time.perf_counter()
    _, n_required = power.required_n_miller(MDE, PSI)
    root = np.random.SeedSequence(args.seed)
    blocks = [("null", 0.0, NULL_NS), ("power", POWER_DELTA, POWER_NS)]
    children = iter(root.spawn(sum(len(ns) for _, _, ns in blocks)))
    results: dict[str, list[dict]] = {}
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        for name, delta, ns in blocks:
            results[name] = []
            for n in ns:
                ss = next(children)
                data_rng = np.random.default_rng(ss)
                labels, cand, base = simulate(data_rng, n, args.packs, delta)
                seeds = data_rng.integers(0, 2**63 - 1, size=args.packs)  # one bootstrap seed per pack
                rows = score(labels, cand, base, seeds, n_required, pool, args.workers)
                results[name].append(summarise(n, rows, delta))
    finally:
        if pool is not None:
            pool.shutdown()
    elapsed = time.perf_counter() - t0

    exp_psi = 2 * float(np.mean([p * (1 - p) for p in BASE_P])) * CONCENTRATION / (CONCENTRATION + 1)
    print(f"false winners of the gate's paired comparison — {args.packs} simulated packs per n, seed {args.seed}")
    print(f"model: strata {'/'.join(STRATA)} equal sizes, base pass p = {'/'.join(map(str, BASE_P))}, latent ease "
          f"Beta(p*{CONCENTRATION:g}, (1-p)*{CONCENTRATION:g}), cand and base independent given it "
          f"(expected discordance {exp_psi:.3f})")
    print(f"paired_delta with n_resamples={RESAMPLES} (not lowered); gate n_required = {n_required} "
          f"(required_n_miller(mde={MDE}, psi={PSI}))")
    print()
    print("A. TRUE delta = 0: a named winner is a false winner (either direction)")
    print_table(results["null"], [("strat-t FW", 11, percent("t_winner_rate")),
                                  ("95% CP on FW rate", 19, interval("t_winner_cp95")),
                                  ("boot FW", 8, percent("boot_winner_rate")), ("rule FW", 8, percent("rule_winner_rate")),
                                  ("gate FW", 8, percent("gate_winner_rate"))])
    for r in results["null"]:
        if r["t_winner_se0"] or r["paired_t_fallbacks"]:
            print(f"  n={r['n']}: {r['t_winner_se0']} strat-t false winner(s) had se = 0 (every d equal within "
                  f"each stratum); {r['paired_t_fallbacks']} pack(s) fell back to paired t")
    print()
    print(f"B. TRUE delta = +{POWER_DELTA}: power = share of packs whose interval names the candidate")
    print_table(results["power"], [("strat-t power", 14, percent("t_names_candidate_rate")),
                                   ("95% CP on power", 19, interval("t_power_cp95")),
                                   ("boot power", 11, percent("boot_names_candidate_rate")),
                                   ("rule power", 11, percent("rule_names_candidate_rate")),
                                   ("gate power", 11, percent("gate_names_candidate_rate")),
                                   ("obs. MDE", 9, lambda r: f"{r['observed_mde']:.3f}")])
    print(f"  gate power is 0 by construction below n_required = {n_required}: it says NO_WINNER + UNDERPOWERED.")
    print(f"  rule = the gate's call without the power floor: interval excludes 0, exact McNemar p < {ALPHA}, "
          f"|delta| >= MDE {MDE}.")
    print()

    checks = {}
    for r in results["null"]:
        if r["n"] in (24, 48):
            checks[str(r["n"])] = {"rate": r["t_winner_rate"], "cp95_high": r["t_winner_cp95"][1],
                                   "met": r["t_winner_rate"] <= LIMIT and r["packs"] >= 1000}
    enough = args.packs >= 1000
    met = enough and all(c["met"] for c in checks.values())
    parts = ", ".join(f"n={n}: {100 * c['rate']:.2f}% (CP upper {100 * c['cp95_high']:.2f}%)" for n, c in checks.items())
    print(f"requirement: stratified-t false-winner rate <= {100 * LIMIT:.0f}% at n = 24 and 48 over >= 1000 packs: "
          f"{'MET' if met else 'NOT MET'} ({parts}"
          f"{'' if enough else f'; only {args.packs} packs per n'})")
    print(f"elapsed {elapsed:.1f} s on {args.workers} worker(s)")

    out = ROOT / "bench" / "results" / "false_winner.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"), "seed": args.seed, "packs": args.packs,
        "bootstrap_resamples": RESAMPLES, "strata": list(STRATA), "base_p": list(BASE_P),
        "concentration": CONCENTRATION, "expected_null_discordance": exp_psi,
        "n_required": n_required, "mde": MDE, "planning_discordance": PSI,
        "null": results["null"], "power": results["power"], "requirement_met": met, "checks": checks,
        "elapsed_s": round(elapsed, 2), "workers": args.workers, "cores": os.cpu_count(),
        "machine": platform.machine(), "python": platform.python_version(), "numpy": np.__version__,
    }
    with open(out, "a") as fh:
        fh.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
