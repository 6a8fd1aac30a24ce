"""Where two JSON values differ (sealbench.testing.json_diff): the lines a test or a benchmark
shows when two runs' records differ."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from sealbench.testing.json_diff import json_diff  # noqa: E402

pytestmark = pytest.mark.unit


def test_equal_values_have_no_difference() -> None:
    value = {"a": [1, {"b": None}], "c": "x"}
    assert json_diff(value, {"c": "x", "a": [1, {"b": None}]}) == []


def test_each_difference_is_one_line_at_its_path_naming_the_sides() -> None:
    local = {"n": 3, "only_local": 1, "reasons": [{"code": "A"}, {"code": "B"}], "tags": [1, 2]}
    slurm = {"n": 4, "only_slurm": 2, "reasons": [{"code": "A"}, {"code": "C"}], "tags": [1]}
    assert json_diff(local, slurm, ("local", "slurm")) == [
        "/n: local 3 != slurm 4",
        "/only_local: only in the local run",
        "/only_slurm: only in the slurm run",
        "/reasons[1]/code: local 'B' != slurm 'C'",
        "/tags: local [1, 2] != slurm [1]",
    ]
    assert json_diff(1, "1") == [": first 1 != second '1'"]
