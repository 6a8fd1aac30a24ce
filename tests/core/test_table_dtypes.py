"""The result tables read back in pandas with the types tables.py declares (issue 13, point 8c).

`pd.read_parquet` of tasks/runs/strata.parquet gives int64 and bool for the integer and boolean
columns that never hold a null, and the nullable dtypes Int64 and boolean for those that may —
never float (an integer column with a null) or object (a boolean column with a null). Each table
is written as stratify writes it (tables.write_table) with nulls in every nullable column.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core import tables  # noqa: E402

pytestmark = pytest.mark.unit

#: the pandas dtype each declared (type, nullable) must read back as
WANT = {("int64", False): "int64", ("int64", True): "Int64", ("bool", False): "bool", ("bool", True): "boolean",
        ("float64", False): "float64", ("float64", True): "float64", ("string", False): "object",
        ("string", True): "object"}

SAMPLE = {"string": "x", "int64": 3, "float64": 1.5, "bool": True}


def _rows(table: str) -> list[dict]:
    """Two rows: every column set, then every nullable column null (the others set)."""
    cols = tables.TABLES[table]
    full = {name: SAMPLE[t] for name, t, _n, _d in cols}
    holes = {name: (None if nullable else SAMPLE[t]) for name, t, nullable, _d in cols}
    return [full, holes]


@pytest.mark.parametrize("table", sorted(tables.TABLES))
def test_each_table_reads_back_with_its_declared_dtypes(table: str, tmp_path: Path) -> None:
    path = tmp_path / f"{table}.parquet"
    tables.write_table(_rows(table), table, path)
    df = pd.read_parquet(path)
    got = {c: str(df[c].dtype) for c in df.columns}
    want = {name: WANT[(t, nullable)] for name, t, nullable, _d in tables.TABLES[table]}
    assert got == want, {c: (got.get(c), want[c]) for c in want if got.get(c) != want[c]}
    # the declared schema is the one written (types and nullability) …
    schema = pq.read_schema(path)
    assert [(f.name, str(f.type), f.nullable) for f in schema] == \
        [(f.name, str(f.type), f.nullable) for f in tables.arrow_schema(table)]
    # … and the values are unchanged: nulls stay missing, the rest as written
    assert df.iloc[1].isna().tolist() == [nullable for _n, _t, nullable, _d in tables.TABLES[table]]
    assert [df.iloc[0][name] for name, *_ in tables.TABLES[table]] == \
        [SAMPLE[t] for _n, t, _nl, _d in tables.TABLES[table]]


def test_the_dtypes_come_from_the_one_schema_definition() -> None:
    for table, cols in tables.TABLES.items():
        assert tables.pandas_dtypes(table) == {name: WANT[(t, nullable)] for name, t, nullable, _d in cols}


def test_without_pandas_metadata_the_same_values_come_back(tmp_path: Path) -> None:
    """Readers that ignore pandas' metadata (pyarrow, polars, duckdb) see the same arrow table."""
    path = tmp_path / "runs.parquet"
    rows = _rows("runs")
    tables.write_table(rows, "runs", path)
    assert pq.read_table(path).to_pylist() == [{name: r.get(name) for name, *_ in tables.RUNS_COLUMNS} for r in rows]


@pytest.mark.parametrize("table", sorted(tables.TABLES))
def test_columns_and_frames_write_the_same_bytes_as_rows(table: str, tmp_path: Path) -> None:
    """write_table takes row dicts, a mapping of columns or a DataFrame: the same values give the
    same file, a column left out is null, and a table read back writes back unchanged."""
    rows = _rows(table)
    names = [name for name, *_ in tables.TABLES[table]]
    tables.write_table(rows, table, tmp_path / "rows.parquet")
    want = (tmp_path / "rows.parquet").read_bytes()
    columns = {n: [r[n] for r in rows] for n in names}
    tables.write_table(columns, table, tmp_path / "columns.parquet")
    assert (tmp_path / "columns.parquet").read_bytes() == want
    frame = pd.read_parquet(tmp_path / "rows.parquet")
    tables.write_table(frame, table, tmp_path / "frame.parquet")
    assert (tmp_path / "frame.parquet").read_bytes() == want
    # a nullable column left out is null, in a mapping as in a row
    holes = [name for name, _t, nullable, _d in tables.TABLES[table] if nullable]
    tables.write_table([{k: v for k, v in rows[1].items() if k not in holes}] * 2, table, tmp_path / "r2.parquet")
    tables.write_table({n: [rows[1][n]] * 2 for n in names if n not in holes}, table, tmp_path / "c2.parquet")
    assert (tmp_path / "c2.parquet").read_bytes() == (tmp_path / "r2.parquet").read_bytes()
    tables.write_table([], table, tmp_path / "e1.parquet")
    tables.write_table({}, table, tmp_path / "e2.parquet")
    assert (tmp_path / "e1.parquet").read_bytes() == (tmp_path / "e2.parquet").read_bytes()


def test_undeclared_or_ragged_columns_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="undeclared"):
        tables.write_table([{"solver": "a", "colour": "red"}], "strata", tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="undeclared"):
        tables.write_table({"solver": ["a"], "colour": ["red"]}, "strata", tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="undeclared"):
        tables.write_table(pd.DataFrame({"solver": ["a"], "colour": ["red"]}), "strata", tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="length"):
        tables.write_table({"solver": ["a", "b"], "role": ["agent"]}, "strata", tmp_path / "x.parquet")
