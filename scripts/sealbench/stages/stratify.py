"""stratify: the tables every reader opens, for one experiment.

Reads:  experiment.json, the frozen split manifest, every task's sealed.json, leak result,
        controls.json and every agent score
Writes: tables/tasks.parquet, tables/runs.parquet, tables/strata.parquet (schemas: ``tables.py``)

Health envelope (seed "session stamp"): only what the harness observed excludes a run. The
session facts are the ones the bridge saw (run.json ``session_observed``: the endpoint, each
reply's model against the model its request asked for, the longest wait for a reply's first byte on the harness's clock, 429/5xx replies
and failed connects as retries, the quota state, a route change): an agent row whose observed
session is outside the envelope (not the required server: :func:`server_problem`, queue delay or retries over the caps,
a quota state not allowed, a route change: one requested model answered under two names; asking
for several models is the agent's choice, never a route change) gets status ``excluded`` with the reason; excluded
rows stay in ``runs.parquet`` and are left out of the rates. A run without a bridge has no
observed session: sandboxed (bubblewrap) and without an endpoint it provably reached no server
(``server_id`` ``offline``); unsandboxed, its server is unknown (null). Neither is excluded.
The agent's own ``stamp.json`` is its claim: a missing stamp, ``route_changed: true``, a bad
quota state or another server in it never takes a run out of the denominator; what it reports
outside the envelope is the row's ``stamp_notes`` and the row keeps its scored status (an agent
that stamps each failure "route changed" is counted as failing). The runs table's
``server_id``/``queue_ms``/``retries``/``quota_state``/``route_changed`` are the observed values
(a person's session: the values the session command recorded). An agent declared
``offline: true`` (config ``agents``) is checked, not trusted: a run that had an endpoint, whose
bridge relayed a server reply, or that ran unsandboxed (its network use cannot be ruled out) is
not offline and is excluded, the reason naming what it used (:func:`server_use`). ``infra_fail``
rows (the harness broke, not the solver: see ``hidden_score``) are left out of the rates too and
reported as the infra rate. A run killed at its clock (``run.json`` ``timed_out``) is
``timeout`` whatever was observed: timeout takes precedence over exclusion, so a timed-out run
always counts in the denominator as a failure. So does ``tamper`` (an exclusion must not hide
it from ``CANDIDATE_TAMPERED``). The gate also computes the rate with excluded and infra_fail
rows counted as failures and refuses a headline that depends on them (``EXCLUSIONS_DECIDE``).

Rates are per task: epochs are averaged per task first (the task is the unit), and intervals
are Wilson 95% on the per-task pass share.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..agent.bridge import same_model
from ..core import paths
from ..core.contract import ABSTAINED, INFRA_FAIL, OFFLINE_SERVER_ID, PASS, STAMP_KEYS, TIMEOUT
from ..core.core import SealbenchError, read_json
from ..core.processes import ended_in_error
from ..core.records import RunRecord, ScoreRecord
from ..core.tables import write_table
from ..provenance import draws
from ..scoring.verdict import Evidence, Verdict, decide
from ..stats.rate_intervals import rate_interval

RATE_EXCLUDED = frozenset(ABSTAINED)


def health_problems(stamp: Mapping[str, Any], health: Mapping[str, Any]) -> list[str]:
    """What an agent's own session stamp reports outside the health envelope (empty list: it
    reports nothing wrong). The stamp is the agent's claim: these go into ``stamp_notes``, never
    into an exclusion (:func:`observed_problems` decides those)."""
    if all(stamp.get(k) is None for k in STAMP_KEYS):
        return ["stamp.json missing: the session cannot be checked"]
    out = []
    req = health.get("required_server_id")
    if req is not None and stamp.get("server_id") != req:
        out.append(f"server {stamp.get('server_id')!r} is not the required {req!r}")
    mq = health.get("max_queue_ms")
    if mq is not None and (stamp.get("queue_ms") is None or stamp["queue_ms"] > mq):
        out.append(f"queue delay {stamp.get('queue_ms')} ms exceeds {mq} ms (or is unknown)")
    mr = health.get("max_retries")
    if mr is not None and (stamp.get("retries") is None or stamp["retries"] > mr):
        out.append(f"retries {stamp.get('retries')} exceed {mr} (or are unknown)")
    allowed = health.get("allowed_quota_states") or []
    if allowed and stamp.get("quota_state") not in allowed:
        out.append(f"quota state {stamp.get('quota_state')!r} is not one of {allowed}")
    if stamp.get("route_changed") is not False:
        out.append("the route changed during the session (or is unknown)")
    return out


#: How the harness knows a run's session: through its bridge, provably without a server
#: (sandboxed, no endpoint), or not at all (unsandboxed or an older run.json without a bridge record).
BRIDGE, NO_SERVER_RUN, UNOBSERVED = "bridge", "offline", "unobserved"


def observed_session(run: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(how it was observed, the runs table's session columns) from a run record: the bridge's
    ``session_observed``; a sandboxed run without an endpoint (and nothing relayed: :func:`server_use`)
    reached no server (``server_id`` :data:`~sealbench.core.contract.OFFLINE_SERVER_ID`); otherwise
    nothing is known.
    Never from the agent's stamp."""
    obs = run.get("session_observed")
    if isinstance(obs, Mapping):
        return BRIDGE, {"server_id": obs.get("server_id"), "queue_ms": obs.get("max_queue_ms"),
                        "retries": obs.get("retries"), "quota_state": obs.get("quota_state"),
                        "route_changed": obs.get("route_changed")}
    if not server_use(run):   # sandboxed, no endpoint, nothing relayed: provably no server
        return NO_SERVER_RUN, {"server_id": OFFLINE_SERVER_ID, "queue_ms": None, "retries": None,
                               "quota_state": None, "route_changed": False}
    return UNOBSERVED, {k: None for k in STAMP_KEYS}


def server_problem(req: str, sid: Any, raw: Mapping[str, Any] | None) -> str | None:
    """Why the observed server is not ``health.required_server_id`` (None: it is, or nothing
    says otherwise). A session whose bridge read the requests (``answers`` in it) matches when
    the required id is its endpoint, or when every reply to a request for the required model
    named that model (:func:`~sealbench.agent.bridge.same_model`): requests for other models are the
    agent's choice and never put a run outside. An older record is compared by its
    ``server_id``."""
    if raw is None or not isinstance(raw.get("answers"), Mapping):
        return None if sid is None or sid == req else f"the bridge observed server {sid!r}, not the required {req!r}"
    if raw.get("endpoint") == req:
        return None
    named = [m for asked, got in raw["answers"].items() if asked == req for m in got if not same_model(req, m)]
    if named:
        return f"the bridge observed requests for {req!r} answered as {', '.join(map(repr, sorted(named)))}"
    return None


#: The health envelope's caps on numbers the bridge observed: (config key, runs column, what the
#: bridge observed, with the value and the cap). Unknown on either side is never over.
OBSERVED_CAPS = (("max_queue_ms", "queue_ms", "a queue delay of {} ms (request to the reply's first byte) over {} ms"),
                 ("max_retries", "retries", "{} retries (429/5xx replies and failed connects) over {}"))


def observed_problems(obs: Mapping[str, Any], health: Mapping[str, Any],
                      raw: Mapping[str, Any] | None = None) -> list[str]:
    """Why a session the bridge observed is outside the health envelope (empty: healthy). A fact
    the bridge did not see (no reply: no server, no wait, no quota) is nothing outside it.
    ``obs`` holds the runs table's columns (:func:`observed_session`), ``raw`` the run's
    ``session_observed`` (for the server pin: :func:`server_problem`)."""
    out = []
    req = health.get("required_server_id")
    if req is not None:
        why = server_problem(req, obs.get("server_id"), raw)
        if why:
            out.append(why)
    for cap_key, key, what in OBSERVED_CAPS:
        cap, value = health.get(cap_key), obs.get(key)
        if cap is not None and value is not None and value > cap:
            out.append("the bridge observed " + what.format(value, cap))
    allowed, quota = health.get("allowed_quota_states") or [], obs.get("quota_state")
    if allowed and quota is not None and quota not in allowed:
        out.append(f"the bridge observed quota state {quota!r}, not one of {allowed}")
    if obs.get("route_changed") is True:
        out.append("the bridge observed a route change (one requested model answered under two model names in "
                   "one run, or the server unreachable after it had answered)")
    return out


def server_use(run: Mapping[str, Any]) -> list[str]:
    """What in a run record (run.json) shows the agent reached a model server, or could have
    without the harness seeing it: an endpoint, replies or tokens metered at the bridge, or
    no sandbox (outside bubblewrap the agent's network is not cut). Empty: provably offline."""
    out = []
    if run.get("endpoint"):
        out.append(f"the run had the endpoint {run['endpoint']}")
    metered = run.get("usage_metered") or {}
    replies = metered.get("responses") or 0
    tokens = (metered.get("tokens_in") or 0) + (metered.get("tokens_out") or 0)
    if replies or tokens or str(run.get("tokens_source") or "").startswith("metered"):
        out.append(f"the bridge relayed {replies} server repl{'y' if replies == 1 else 'ies'} ({tokens} tokens metered)")
    if run.get("isolation") != "bwrap":
        out.append(f"the run was not sandboxed (isolation {run.get('isolation') or 'none'}), so its network use "
                   "cannot be ruled out")
    return out


def metered_cache(run: Mapping[str, Any]) -> dict[str, int | None]:
    """The runs table's ``tokens_cache_creation`` / ``tokens_cache_read``: the parts of the
    metered ``tokens_in`` the server wrote to and read from its prompt cache (run.json
    ``usage_metered``); null when the tokens are not metered or the record predates them."""
    metered = run.get("usage_metered") if str(run.get("tokens_source") or "").startswith("metered") else None
    metered = metered if isinstance(metered, Mapping) else {}
    return {"tokens_cache_creation": metered.get("tokens_cache_creation"),
            "tokens_cache_read": metered.get("tokens_cache_read")}


def envelope_flag(run: Mapping[str, Any], usage: Mapping[str, Any]) -> bool | None:
    """The runs table's ``over_envelope``: true when a reported or metered number is over the
    envelope; null when none is known, or when the run is not over but cannot be said to be
    within it (metered tokens incomplete under the cap: run.json ``envelope_unconfirmed``)."""
    if run.get("over_envelope"):
        return True
    if (usage.get("steps") is None and usage.get("tokens_out") is None) or run.get("envelope_unconfirmed"):
        return None
    return False


def declared_offline(experiment: Mapping, solver: str) -> bool:
    """The agent's config entry says ``offline: true`` (schema default: false)."""
    agents = (experiment.get("config_full") or {}).get("agents") or {}
    return (agents.get(solver) or {}).get("offline") is True


def session_problems(run: Mapping[str, Any], health: Mapping[str, Any], offline: bool) -> list[str]:
    """Why an agent row is excluded, from what the harness observed only: the bridge's session
    outside the envelope (:func:`observed_problems`), and an agent declared ``offline: true``
    whose run used a server anyway (:func:`server_use`, the reason naming what it used)."""
    out = []
    if offline:
        used = server_use(run)
        if used:
            out.append(f"declared offline: true, but {' and '.join(used)}: not an offline run")
    kind, obs = observed_session(run)
    if kind == BRIDGE:
        out += observed_problems(obs, health, run.get("session_observed"))
    return out


def stamp_notes(run: Mapping[str, Any], stamp: Mapping[str, Any], health: Mapping[str, Any]) -> str | None:
    """What the agent's own stamp reported outside the envelope (:func:`health_problems`), as
    the runs table's ``stamp_notes``; null when nothing. A run that provably reached no server
    and wrote no stamp has no session to stamp: nothing to note."""
    kind, _ = observed_session(run)
    if kind == NO_SERVER_RUN and all(stamp.get(k) is None for k in STAMP_KEYS):
        return None
    return "; ".join(health_problems(stamp, health)) or None


def build_tasks(experiment: Mapping, split_of: Mapping[str, str], sealed: Iterable[Mapping],
                leaks: Iterable[Mapping], controls: Iterable[Mapping]) -> list[dict]:
    leak_by = {r["task_id"]: r for r in leaks}
    ctl_by = {r["task_id"]: r for r in controls}
    rows = []
    for rec in sorted(sealed, key=lambda r: r["task_id"]):
        tid = rec["task_id"]
        meta_stratum = experiment["strata_of"][tid]
        c = ctl_by[tid]
        rows.append({
            "task_id": tid, "stratum": meta_stratum, "split": split_of[tid], "task_digest": rec["task_digest"],
            "title": rec.get("title") or experiment.get("titles", {}).get(tid) or "",
            "time_box_sec": int(rec.get("time_box_sec") or 0),
            "leak_suspect": bool(leak_by[tid]["suspect"]), "leak_checks": ";".join(leak_by[tid].get("checks") or []),
            "oracle_ok": bool(c["oracle_ok"]),
            "oracle_passes": int(c["oracle_passes"]), "oracle_runs": int(c["oracle_runs"]),
            "weak_test": bool(c["weak_test"]), "stub_passes": bool(c["stub_passes"]), "flaky": bool(c["flaky"]),
            "control_infra_fail": bool(c["control_infra_fail"]),
            "import_outside": c.get("import_outside"),
            "decoys": int((c.get("decoys") or {}).get("made") or 0),
            "decoys_input": sum(1 for d in (c.get("decoys") or {}).get("tests") or () if d.get("kind") == "input"),
            "decoys_why_none": (None if (c.get("decoys") or {}).get("made")
                                else (c.get("decoys") or {}).get("why_none")
                                or "its controls record no decoys (made before decoys existed: run run_dummy again)"),
        })
    return rows


def _nulls() -> dict[str, Any]:
    return {k: None for k in ("time_to_green_s", "wall_s", "time_box_s", "end_reason", "exit_code", "steps",
                              "tokens_in", "tokens_out", "tokens_cache_creation", "tokens_cache_read", "cost_usd", "steer_count", "visible_attempts",
                              "excluded_reason", "stamp_notes", "server_id", "queue_ms", "retries", "quota_state", "route_changed",
                              "isolation", "workspace", "over_envelope", "tamper_paths", "gold_like", "gold_similarity",
                              "stdout_truncated_bytes", "stderr_truncated_bytes", "tokens_source", "draw_id", "redraw")}


def build_runs(experiment: Mapping, tasks: list[dict], controls: Iterable[Mapping], scores: Iterable[Mapping],
               health: Mapping[str, Any]) -> list[dict]:
    task_by = {t["task_id"]: t for t in tasks}
    pack_digest = experiment["pack_digest"]
    rows: list[dict] = []
    for c in sorted(controls, key=lambda r: r["task_id"]):
        t = task_by[c["task_id"]]
        for r in c["results"]:
            row = _nulls()
            row.update({
                "task_id": t["task_id"], "stratum": t["stratum"], "split": t["split"], "solver": r["solver"],
                "role": "control", "fingerprint": r["fingerprint"], "epoch": int(r["epoch"]), "status": r["status"],
                "visible_pass": r["visible_pass"], "hidden_pass": r["hidden_pass"], "end_reason": "control",
                "patch_bytes": r["patch_bytes"], "reason": r["reason"], "task_digest": t["task_digest"],
                "pack_digest": pack_digest, "agent_error": False, "isolation": c.get("isolation"),
                "workspace": r.get("workspace") or c.get("workspace"),
            })
            rows.append(row)
    for s in sorted(scores, key=lambda r: (r["task_id"], r["solver"], r["epoch"])):
        t = task_by[s["task_id"]]
        run = s["run"]
        usage, stamp = run.get("usage") or {}, run.get("stamp") or {}
        row = _nulls()
        row.update({
            "task_id": t["task_id"], "stratum": t["stratum"], "split": t["split"], "solver": s["solver"],
            "role": run.get("role", "agent"), "fingerprint": s["fingerprint"], "epoch": int(s["epoch"]),
            "status": s["status"], "visible_pass": s["visible_pass"], "hidden_pass": s["hidden_pass"],
            "time_to_green_s": s["time_to_green_s"], "wall_s": run.get("wall_s"), "time_box_s": run.get("time_box_s"),
            "end_reason": run.get("end_reason"), "exit_code": run.get("exit_code"),
            "signal": run.get("signal"),
            "agent_error": ended_in_error(run.get("end_reason"), run.get("exit_code"), run.get("signal")),
            "steps": usage.get("steps"), "tokens_in": usage.get("tokens_in"), "tokens_out": usage.get("tokens_out"),
            "tokens_source": run.get("tokens_source"),
            # the cache parts of tokens_in: the bridge's count only (an agent's usage.json has none)
            **metered_cache(run),
            "cost_usd": None if usage.get("cost_usd") is None else float(usage["cost_usd"]),
            "steer_count": run.get("steer_count"), "visible_attempts": len(run.get("attempts") or []),
            "patch_bytes": run.get("patch_bytes"), "reason": s.get("reason"),
            "task_digest": t["task_digest"], "pack_digest": pack_digest, "draw_id": run.get("draw"),
            "isolation": "human" if run.get("role") == "human" else run.get("isolation", "none"),
            "workspace": run.get("workspace"),
            "over_envelope": envelope_flag(run, usage),
            "tamper_paths": ";".join(s.get("tamper_paths") or []) or None,
            "gold_like": s.get("gold_like"), "gold_similarity": s.get("gold_similarity"),
            "stdout_truncated_bytes": run.get("stdout_truncated_bytes"),
            "stderr_truncated_bytes": run.get("stderr_truncated_bytes"),
        })
        if row["role"] == "human":
            # a person's session: its stamp is the one the session command wrote, not the person's
            row.update({k: stamp.get(k) for k in STAMP_KEYS})
            problems = []
        else:
            # the session as the harness observed it; the agent's stamp is a note, never an exclusion
            row.update(observed_session(run)[1])
            # a run the harness could not run or score wrote nothing of its own: nothing to note
            row["stamp_notes"] = None if row["status"] == INFRA_FAIL else stamp_notes(run, stamp, health)
            problems = session_problems(run, health, declared_offline(experiment, s["solver"]))
        # the row's status by the verdict table: a run killed at its clock is a timeout whatever
        # the score record says (never a pass); an exclusion by the observed session never turns a
        # timeout, an infra_fail or a tamper into an abstention
        v = decide(Evidence(record=Verdict(s["status"], s.get("rule") or "", s.get("reason")),
                            run=RunRecord.from_dict(run, f"score record of {s['task_id']} {s['solver']}#{s['epoch']}"
                                                    ": run"),
                            session_problems=tuple(problems)))
        row["status"], row["reason"] = v.status, v.reason
        if v.rule == "session_excluded":
            row["excluded_reason"] = "; ".join(problems)
        rows.append(row)
    return rows


#: The runs columns :func:`build_strata` reads.
STRATA_INPUTS = ("solver", "role", "split", "stratum", "task_id", "status")


def _strata_inputs(runs: Any) -> Any:
    """The columns build_strata reads, as a DataFrame, from row dicts, a mapping of columns or a
    DataFrame (the runs table in any of the forms ``tables.write_table`` takes)."""
    import pandas as pd

    if isinstance(runs, pd.DataFrame):
        return runs.loc[:, list(STRATA_INPUTS)]
    if isinstance(runs, Mapping):
        return pd.DataFrame({c: runs[c] for c in STRATA_INPUTS})
    return pd.DataFrame({c: [r[c] for r in runs] for c in STRATA_INPUTS})


def build_strata(runs: Any, strata_order: list[str], method: str = "wilson") -> list[dict]:
    """Per (solver, split, stratum): n tasks, per-task pass share, 95% interval, rates.

    ``runs``: row dicts, a mapping of columns or a DataFrame. Each cell's ``passes`` is the sum
    of its per-task shares in the order the tasks first appear (the same floating-point sum
    whatever form the rows come in)."""
    import numpy as np
    import pandas as pd

    df = _strata_inputs(runs)
    if not len(df):
        return []
    keys = ["solver", "role", "split", "stratum"]
    values = {k: df[k].to_numpy(dtype=object) for k in keys}
    # every column as codes in first-appearance order (None is a value of its own, as in a dict key)
    cell = np.zeros(len(df), dtype=np.int64)
    for k in keys:
        codes, uniques = pd.factorize(values[k], use_na_sentinel=False)
        cell = cell * max(1, len(uniques)) + codes
    cell, cells = pd.factorize(cell)
    first_row = np.unique(cell, return_index=True)[1]  # cells are numbered as they first appear
    status_codes, statuses = pd.factorize(df["status"].to_numpy(dtype=object), use_na_sentinel=False)

    def has(wanted) -> Any:
        return np.isin(status_codes, [i for i, st in enumerate(statuses) if st in wanted])

    abstained = has(RATE_EXCLUDED)
    n_cells = len(cells)

    def count(mask: Any) -> list[int]:
        return np.bincount(cell[mask], minlength=n_cells).tolist()

    totals, timeouts, infra, excluded = (count(np.ones(len(df), bool)), count(has({TIMEOUT})),
                                         count(has({INFRA_FAIL})), count(abstained))
    # the per-task pass share of each (cell, task) among the rows not left out, in first-appearance order
    kept = ~abstained
    task_codes, tasks = pd.factorize(df["task_id"].to_numpy(dtype=object), use_na_sentinel=False)
    pair, pairs = pd.factorize(cell[kept] * max(1, len(tasks)) + task_codes[kept])
    size = np.bincount(pair)
    won = np.bincount(pair[has({PASS})[kept]], minlength=len(pairs))
    share = won / size  # exactly sum(v) / len(v) of the 0/1 outcomes
    pair_cell = pairs // max(1, len(tasks))
    by_cell = np.argsort(pair_cell, kind="stable")  # stable: tasks keep their order within a cell
    bounds = np.searchsorted(pair_cell[by_cell], np.arange(n_cells + 1))
    shares = share[by_cell].tolist()
    order = {s: i for i, s in enumerate(strata_order)}
    labels = [tuple(values[k][r] for k in keys) for r in first_row]
    out = []
    for c in sorted(range(n_cells), key=lambda c: (labels[c][1] != "agent", labels[c][0], labels[c][2],
                                                   order.get(labels[c][3], 99), labels[c][3])):
        solver, role, split, stratum = labels[c]
        per_task = shares[bounds[c]:bounds[c + 1]]
        n = len(per_task)
        passes = float(sum(per_task))
        lo, hi = rate_interval(passes, n, method)
        total = totals[c]
        out.append({
            "solver": solver, "role": role, "split": split, "stratum": stratum, "n": n, "passes": passes,
            "pass_rate": passes / n if n else None, "ci_low": lo, "ci_high": hi,
            "timeout_rate": timeouts[c] / total,
            "infra_rate": infra[c] / total,
            # infra failures are left out of the denominator and counted as exclusions
            "excluded_rate": excluded[c] / total,
        })
    return out


def per_task_files(experiment: Mapping, results: Path) -> dict[str, list[Path]]:
    """The per-task files an experiment reads (sealed records, leak reports, controls, agent
    scores), at the content-addressed paths the per-task rules write. Read from experiment.json
    rather than the command line, which cannot hold 10,000 tasks x agents x epochs paths."""
    cfg = experiment["config_full"]
    epochs = range(1, int(cfg["epochs"]) + 1)
    agents = sorted(experiment["agent_fingerprints"].items())
    out: dict[str, list[str]] = {"sealed": [], "leaks": [], "controls": [], "scores": []}
    res = str(results)
    for tid, dig in sorted(experiment["task_digests"].items()):  # strings: 200,000 pathlib joins take seconds
        out["sealed"].append(paths.sealed_record(tid, dig, res))
        out["leaks"].append(paths.leak_report(tid, dig, experiment["denylist_digest"], res))
        out["controls"].append(paths.controls(tid, dig, res))
        out["scores"] += [paths.score(tid, dig, a, fp, e, res) for a, fp in agents for e in epochs]
    return {k: [Path(p) for p in v] for k, v in out.items()}


def first_draws(runs: list[dict], pack_digest: str, copies: list[Path] | None = None) -> Any:
    """The runs with every slot drawn more than once scored by its first draw (``draws.py``;
    ``redraw`` says so), from the draw record's copies (``$SEALBENCH_PACK`` and
    ``$SEALBENCH_RESULTS``; none outside the workflow: the rows as they are)."""
    copies = draws.record_paths() if copies is None else copies
    if not copies or not runs:
        return runs
    import pandas as pd

    return draws.draw_check(pd.DataFrame(runs), None, copies, None, pack_digest).runs


def stratify(experiment_path: Path, split_path: Path, sealed: list[Path], leaks: list[Path],
             controls: list[Path], scores: list[Path], out_dir: Path) -> dict[str, int]:
    experiment = read_json(experiment_path)
    manifest = read_json(split_path)
    split_of = {tid: "tune" for tid in manifest["tune"]}
    split_of.update({tid: "holdout" for tid in manifest["holdout"]})
    sealed_recs = [read_json(p) for p in sealed]
    for rec, p in zip(sealed_recs, sealed):
        meta = read_json(Path(p).parent / "sealed" / "meta.json")
        rec["title"], rec["time_box_sec"] = meta["title"], meta["time_box_sec"]
    tasks = build_tasks(experiment, split_of, sealed_recs, [read_json(p) for p in leaks],
                        [read_json(p) for p in controls])
    health = experiment["config_full"]["health"]
    runs = build_runs(experiment, tasks, [read_json(p) for p in controls],
                      [ScoreRecord.read(p).to_dict() for p in scores], health)
    runs = first_draws(runs, experiment["pack_digest"])
    strata = build_strata(runs, experiment["config_full"]["strata"],
                          experiment["config_full"].get("interval_method", "wilson"))
    out_dir = Path(out_dir)
    write_table(tasks, "tasks", out_dir / "tasks.parquet")
    write_table(runs, "runs", out_dir / "runs.parquet")
    write_table(strata, "strata", out_dir / "strata.parquet")
    return {"tasks": len(tasks), "runs": len(runs), "strata": len(strata)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.stages.stratify", description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", type=Path, required=True)
    ap.add_argument("--split", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--sealed", type=Path, nargs="*", default=[])
    ap.add_argument("--leaks", type=Path, nargs="*", default=[])
    ap.add_argument("--controls", type=Path, nargs="*", default=[])
    ap.add_argument("--scores", type=Path, nargs="*", default=[])
    ap.add_argument("--batches", type=Path, nargs="*", default=[],
                    help="task_batch done.json files; their per-task files are added to the lists above")
    ap.add_argument("--results", type=Path,
                    help="read every task's files from this results folder at the experiment's digests")
    args = ap.parse_args(argv)
    try:
        # task files first (from the results folder or the batches, in task order), then the ones named
        found: dict[str, list[Path]] = {"sealed": [], "leaks": [], "controls": [], "scores": []}
        if args.results is not None:
            found = per_task_files(read_json(args.experiment), args.results)
        for b in args.batches:
            done = read_json(b)
            for key in found:
                found[key] += [Path(x) for x in done[key]]
        for key in found:
            setattr(args, key, found[key] + getattr(args, key))
        if not args.sealed:
            raise SealbenchError("no task records given (--sealed or --batches)")
        counts = stratify(args.experiment, args.split, args.sealed, args.leaks, args.controls, args.scores, args.out_dir)
    except SealbenchError as exc:
        print(f"stratify: {exc}", file=sys.stderr)
        return 1
    print("stratify: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
