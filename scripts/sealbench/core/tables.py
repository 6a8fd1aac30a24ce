"""The one definition of every result table (docs/contract.md §4); the run statuses are
``contract.STATUSES`` (the status column lists them).

The column tables of docs/results.md are checked against these schemas by ``tests/repo/test_docs.py``.
``pd.read_parquet`` reads each table back with the dtypes :func:`pandas_dtypes` names (the
nullable ``Int64``/``boolean`` where a column may hold a null; ``tests/core/test_table_dtypes.py``).
pyarrow is imported lazily so the per-task stages stay light.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .contract import STATUSES

#: Roles of solvers.
ROLES = ("control", "agent", "human")

# (column, pyarrow type name, nullable, description)
TASKS_COLUMNS: list[tuple[str, str, bool, str]] = [
    ("task_id", "string", False, "task id (= folder name)"),
    ("stratum", "string", False, "size/difficulty bucket"),
    ("split", "string", False, "`tune` or `holdout` from the frozen split manifest"),
    ("task_digest", "string", False, "sha256 of the task folder (relative paths + bytes)"),
    ("title", "string", False, "meta.json title"),
    ("time_box_sec", "int64", False, "the task's clock"),
    ("leak_suspect", "bool", False, "the leak check matched a denylist line, a public 13-gram or identifier, or hidden-test text in prompt.md or repo/"),
    ("leak_checks", "string", False, "which contamination checks ran on the task, `;`-separated"),
    ("oracle_ok", "bool", False, "the gold patch passed on every oracle run"),
    ("oracle_passes", "int64", False, "how many oracle runs passed"),
    ("oracle_runs", "int64", False, "how many oracle runs were made"),
    ("weak_test", "bool", False, "the task passes with the empty diff (its tests do not test the bug)"),
    ("stub_passes", "bool", False, "the task passes with the no-op stub edit"),
    ("flaky", "bool", False, "oracle runs disagreed"),
    ("control_infra_fail", "bool", False, "a control run ended in infra_fail"),
    ("import_outside", "string", True, "a control's tests imported the package under test from outside the workspace: `package from path` (null: from inside)"),
    ("decoys", "int64", True, "decoy tests the task's hidden suite carries (copies of tests that find the bug with one expectation changed; every scored patch must fail them); null: not known (a table not made by stratify)"),
    ("decoys_why_none", "string", True, "why the task carries no decoy (null: it carries some)"),
    ("decoys_input", "int64", True, "of its decoys, those with an input changed, not an expected value (one that passes is a failure, not tamper); null: not known"),
]

RUNS_COLUMNS: list[tuple[str, str, bool, str]] = [
    ("task_id", "string", False, "task id"),
    ("stratum", "string", False, "size/difficulty bucket"),
    ("split", "string", False, "`tune` or `holdout`"),
    ("solver", "string", False, "agent name or control (`empty_diff`, `stub`, `oracle`)"),
    ("role", "string", False, "`control`, `agent` or `human`"),
    ("fingerprint", "string", False, "digest of the solver's command and env"),
    ("epoch", "int64", False, "attempt number, from 1"),
    ("status", "string", False, " ".join(f"`{st}`" for st in STATUSES)),
    ("visible_pass", "bool", True, "visible command exit 0 on the scoring workspace (null: not run)"),
    ("hidden_pass", "bool", True, "hidden command exit 0 on the scoring workspace (null: not run)"),
    ("time_to_green_s", "float64", True, "seconds from clock start to the first green visible attempt, if the final state is green"),
    ("wall_s", "float64", True, "wall time of the worker"),
    ("time_box_s", "float64", True, "the clock the worker had"),
    ("end_reason", "string", True, "why the worker ended: `exit`, `time_box`, `control`"),
    ("exit_code", "int64", True, "the worker's exit code (null: the harness ended it, at the clock, a stop or a limit)"),
    ("signal", "string", True, "the signal that ended the worker (`SIGTERM`, `SIGKILL`...): the one the harness sent at "
                               "the clock, a stop or a limit, or one it died of; null for a plain exit"),
    ("agent_error", "bool", True, "the agent crashed: it ended on its own with a non-zero exit or a signal (not at "
                                  "the clock, a stop or a limit), whatever its patch scored; false for controls"),
    ("steps", "int64", True, "reported by the agent in usage.json (null: unknown)"),
    ("tokens_in", "int64", True, "input tokens: metered from the server's replies (every input token the server counted: "
                                 "uncached + cache creation + cache read), or reported by the agent (see tokens_source; null: unknown)"),
    ("tokens_out", "int64", True, "output tokens, reasoning included: metered from the server's replies, or reported by the "
                                  "agent (see tokens_source; null: unknown)"),
    ("tokens_cache_creation", "int64", True, "metered: of tokens_in, those the server wrote to its prompt cache (Anthropic "
                                             "`cache_creation_input_tokens`); null: not metered"),
    ("tokens_cache_read", "int64", True, "metered: of tokens_in, those the server read from its prompt cache (Anthropic "
                                         "`cache_read_input_tokens`, OpenAI `cached_tokens`, Gemini `cachedContentTokenCount`); "
                                         "null: not metered"),
    ("tokens_source", "string", True, "`metered` (the harness read the server's replies through the bridge, each with its usage), "
                                      "`metered_incomplete` (the bridge's count, but a reply carried no usage or was cut short: a lower "
                                      "bound; the agent's own numbers are never used then) or `agent` (no bridge: the agent's usage.json)"),
    ("cost_usd", "float64", True, "reported by the agent (null: unknown)"),
    ("steer_count", "int64", True, "lines in steers.jsonl (null: file absent = unknown)"),
    ("visible_attempts", "int64", True, "runs of SEALBENCH_VISIBLE_CMD"),
    ("patch_bytes", "int64", True, "size of the worker's patch"),
    ("isolation", "string", True, "`bwrap` (sandboxed), `none` (unsandboxed), `human` (a person's own machine); for controls, the isolation their scoring ran in"),
    ("workspace", "string", True, "`overlay` (copy-on-write layers over the sealed task) or `copy`: the agent's workspace; for controls, their scoring workspace (null: not recorded)"),
    ("over_envelope", "bool", True, "reported steps or output tokens (metered ones when the bridge metered them, even "
                                     "incomplete) exceed the envelope; null: usage unknown, or not over but with "
                                     "`metered_incomplete` tokens under max_output_tokens (within cannot be confirmed)"),
    ("tamper_paths", "string", True, "protected paths the patch touched (test folders, test config), `;`-separated"),
    ("gold_like", "bool", True, "the patch is >= 0.95 similar to the gold patch"),
    ("gold_similarity", "float64", True, "similarity of the patch to the gold patch (0..1)"),
    ("stdout_truncated_bytes", "int64", True, "worker stdout bytes dropped over the cap"),
    ("stderr_truncated_bytes", "int64", True, "worker stderr bytes dropped over the cap"),
    ("reason", "string", True, "why the row is not a pass, in words"),
    ("excluded_reason", "string", True, "why the row was excluded: what the harness observed (the bridge's session "
                                        "outside the health envelope, an `offline: true` agent that used a server)"),
    ("stamp_notes", "string", True, "what the agent's own stamp.json reported outside the health envelope (missing, "
                                    "route changed, quota, server...): its claim, a note that never excludes the row "
                                    "(null: nothing reported)"),
    ("server_id", "string", True, "observed by the harness: the endpoint (`host:port`) the bridge forwarded to once "
                                  "the server answered (run.json `session_observed` has the model names), `offline` for a sandboxed run "
                                  "without an endpoint, the session's for a person (null: not observed)"),
    ("queue_ms", "int64", True, "observed at the bridge: the longest time from a request's first byte to its reply's "
                                "first byte (null: not observed)"),
    ("retries", "int64", True, "observed at the bridge: 429 and 5xx replies plus failed connects to the server "
                               "(null: not observed)"),
    ("quota_state", "string", True, "observed at the bridge: `exhausted` once a 429 came, `ok` when replies came "
                                    "(null: no reply or not observed)"),
    ("route_changed", "bool", True, "observed at the bridge: two server identities in one run, or the server "
                                    "unreachable after it had answered; false for a run that reached no server "
                                    "(null: not observed)"),
    ("task_digest", "string", False, "digest of the task the row was scored on"),
    ("pack_digest", "string", False, "digest of the pack"),
    ("draw_id", "string", True, "the run's draw on the draw record (draws.jsonl); null: a control, a human session, or a run made before the record"),
    ("redraw", "string", True, "the slot was drawn more than once: what the gate did (the first draw's outcome scored, or the first draw interrupted); null: one draw"),
]

STRATA_COLUMNS: list[tuple[str, str, bool, str]] = [
    ("solver", "string", False, "solver name"),
    ("role", "string", False, "`control`, `agent` or `human`"),
    ("split", "string", False, "`tune` or `holdout`"),
    ("stratum", "string", False, "stratum label (config order)"),
    ("n", "int64", False, "tasks in the cell (epochs averaged per task)"),
    ("passes", "float64", False, "sum over tasks of the per-task pass share"),
    ("pass_rate", "float64", True, "passes / n"),
    ("ci_low", "float64", True, "Wilson 95% lower bound"),
    ("ci_high", "float64", True, "Wilson 95% upper bound"),
    ("timeout_rate", "float64", True, "share of runs that ended at the time box"),
    ("infra_rate", "float64", True, "share of runs that ended in infra_fail"),
    ("excluded_rate", "float64", True, "share of runs left out of the rate: health exclusions plus infra_fail"),
]

TABLES = {"tasks": TASKS_COLUMNS, "runs": RUNS_COLUMNS, "strata": STRATA_COLUMNS}


#: The pandas dtype of each (declared type, nullable): a column that may hold a null reads back
#: as pandas' nullable ``Int64``/``boolean``, never as float or object.
PANDAS_DTYPES: dict[tuple[str, bool], str] = {
    ("string", False): "object", ("string", True): "object",
    ("int64", False): "int64", ("int64", True): "Int64",
    ("float64", False): "float64", ("float64", True): "float64",
    ("bool", False): "bool", ("bool", True): "boolean",
}


def pandas_dtypes(table: str) -> dict[str, str]:
    """The dtype of each column of ``table`` as ``pd.read_parquet`` returns it."""
    return {name: PANDAS_DTYPES[(t, nullable)] for name, t, nullable, _ in TABLES[table]}


def _pandas_metadata(table: str) -> bytes:
    """The ``pandas`` schema metadata pyarrow reads back into :func:`pandas_dtypes` (no library
    versions in it: the same rows give the same bytes under any pandas)."""
    import json

    pandas_type = {"string": "unicode", "int64": "int64", "float64": "float64", "bool": "bool"}
    cols = [{"name": name, "field_name": name, "pandas_type": pandas_type[t],
             "numpy_type": PANDAS_DTYPES[(t, nullable)], "metadata": None} for name, t, nullable, _ in TABLES[table]]
    return json.dumps({"index_columns": [], "column_indexes": [], "columns": cols}, sort_keys=True).encode()


def arrow_schema(table: str) -> Any:
    """The table's pyarrow schema: types and nullability as declared, and the pandas dtypes."""
    import pyarrow as pa

    types = {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_()}
    return pa.schema([pa.field(name, types[t], nullable=nullable) for name, t, nullable, _ in TABLES[table]],
                     metadata={b"pandas": _pandas_metadata(table)})


def arrow_table(data: Any, table: str) -> Any:
    """``data`` as a pyarrow table with the declared schema. ``data`` is either

    - a list of row dicts: a key a row lacks is null, ``None`` is null;
    - a mapping of column name to column (a list, a numpy array, a pyarrow array): a column
      left out is all null, ``None`` in a list is null (as in a row);
    - a pandas DataFrame: a column left out is all null, and its missing values (``None``,
      ``NaN``, ``pd.NA``) are null, as ``pd.read_parquet`` hands them back.

    Columns stay columns: a mapping or a DataFrame is never turned into row dicts."""
    import pyarrow as pa

    schema = arrow_schema(table)
    names = set(schema.names)
    if isinstance(data, Mapping) or _is_frame(data):
        frame = _is_frame(data)
        cols = {str(k): data[k] for k in data.columns} if frame else dict(data)
        extra = set(cols) - names
        if extra:
            raise ValueError(f"{table}: columns carry undeclared names {sorted(extra)}")
        lengths = {len(v) for v in cols.values()}
        if len(lengths) > 1:
            raise ValueError(f"{table}: columns differ in length {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        return pa.Table.from_arrays([pa.array(cols[f.name], type=f.type, from_pandas=frame) if f.name in cols
                                     else pa.nulls(n, f.type) for f in schema], schema=schema)
    extra = set().union(*data) - names
    if extra:
        raise ValueError(f"{table}: rows carry undeclared columns {sorted(extra)}")
    return pa.Table.from_pylist(data, schema=schema)  # a key a row lacks is null


def _is_frame(data: Any) -> bool:
    return hasattr(data, "columns") and hasattr(data, "dtypes") and hasattr(data, "iloc")


def write_table(rows: Any, table: str, path: Any) -> None:
    """Write ``rows`` (row dicts, a mapping of columns or a DataFrame: :func:`arrow_table`) as a
    parquet file with the declared schema (atomically)."""
    import io

    import pyarrow.parquet as pq

    from .core import atomic_write_bytes

    buf = io.BytesIO()
    pq.write_table(arrow_table(rows, table), buf, compression="zstd")
    atomic_write_bytes(path, buf.getvalue())
