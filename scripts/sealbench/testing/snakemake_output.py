"""Reading Snakemake's terminal output (for the tests and the benchmarks)."""

from __future__ import annotations

import re


def job_counts(out: str) -> dict[str, int]:
    """Jobs per rule from Snakemake's 'Job stats' table (the ``total`` line left out)."""
    counts: dict[str, int] = {}
    m = re.search(r"Job stats:\n(.*?)\n\n", out, re.S)
    if not m:
        return counts
    for line in m.group(1).splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit() and parts[0] != "total":
            counts[parts[0]] = int(parts[1])
    return counts
