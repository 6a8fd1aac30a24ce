"""The scored slice: the experiment's tables (tasks, runs, strata) and the candidate's
aggregates on the split being scored, the one object the gate's rules read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.core import read_json
from .summaries import per_task_scores


@dataclass
class Slice:
    """What the rules read: the experiment's tables and the candidate's aggregates on the
    scored split (built once by :func:`load_slice`; ``runs`` already carries the server pin)."""

    exp: dict
    cfg: dict
    manifest: dict
    tasks: Any
    runs: Any
    strata: Any
    split: str
    cand: str
    base: str
    slice_tasks: Any = None
    split_runs: Any = None
    cand_rows: Any = None
    cand_strata: Any = None
    cand_scores: dict = field(default_factory=dict)
    clean: set = field(default_factory=set)

    def aggregate(self) -> Slice:
        """Compute the candidate's aggregates on the split from ``runs`` (call after the pin)."""
        self.slice_tasks = self.tasks[self.tasks.split == self.split]
        # the split's runs, filtered once: what reads one split's runs reads these (the same rows
        # in the same order, with their labels, as filtering ``runs`` by the split again)
        self.split_runs = self.runs[self.runs.split == self.split]
        self.cand_rows = self.split_runs[self.split_runs.solver == self.cand]
        self.cand_strata = self.strata[(self.strata.solver == self.cand)
                                       & (self.strata.split == self.split)].set_index("stratum")
        self.cand_scores = per_task_scores(self.split_runs, self.cand, self.split)
        unclean = set(self.slice_tasks.task_id[self.slice_tasks.weak_test | self.slice_tasks.flaky])
        self.clean = {t for t in self.cand_scores if t not in unclean}
        return self


def load_slice(exp_dir: Path, split_path: Path) -> Slice:
    """Read experiment.json, the split manifest and the tables (not yet aggregated)."""
    import pandas as pd

    exp = read_json(exp_dir / "experiment.json")
    cfg = exp["config_full"]
    return Slice(exp=exp, cfg=cfg, manifest=read_json(split_path),
                 tasks=pd.read_parquet(exp_dir / "tables" / "tasks.parquet"),
                 runs=pd.read_parquet(exp_dir / "tables" / "runs.parquet"),
                 strata=pd.read_parquet(exp_dir / "tables" / "strata.parquet"),
                 split=cfg["score_split"], cand=cfg["candidate"], base=cfg["baseline"])
