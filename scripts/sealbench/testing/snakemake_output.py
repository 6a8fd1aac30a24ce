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


def jobs_to_run(out: str) -> int:
    """How many jobs a run or a dry run planned: the total of Snakemake's 'Job stats' table, or,
    on the compact console of a run (the sealbench logger plugin), the number on its first line."""
    counts = job_counts(out)
    if counts:
        return sum(counts.values())
    m = re.search(r"^sealbench: (\d+) jobs to run", out, re.M)
    return int(m.group(1)) if m else 0
