"""Tests that cannot be collected because a module is missing: the task's environment, not a patch.

When every control of a task (empty diff, stub, each gold-patch run) fails because pytest cannot
import a test module or a ``conftest.py`` (``ModuleNotFoundError: No module named 'X'``), the
harness ran the task without a dependency its tests need. That is a broken task set-up, not a
failing patch: run_dummy marks those control rows ``infra_fail`` (``verdict.mark_controls``) with a reason naming the
module and what to do (declare it in the pack's environment, docs/contract.md §1), so the gate
refuses the task as a broken grader (``control_infra_fail``) rather than as ``ORACLE_FAILED``.
An agent's patch that fails the same way on such a task is ``infra_fail`` too
(hidden_score); on a task whose controls collected fine it stays ``fail`` (the patch broke it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_MISSING = re.compile(r"No module named '([^']+)'")
#: pytest's words for an import failure before any test ran (collection or a conftest)
_COLLECTING = ("ERROR collecting", "during collection", "ImportError while importing test module",
               "ImportError while loading conftest")


def _texts(outcome: Any) -> Iterable[str]:
    """What the sealed report and the log say about collection failures of one command."""
    for rec in getattr(outcome, "stream", None) or []:
        if isinstance(rec, dict) and rec.get("kind") == "collect" and rec.get("outcome") != "passed":
            yield str(rec.get("text") or "")
    tail = getattr(outcome, "log_tail", "") or ""
    if any(w in tail for w in _COLLECTING):
        yield tail


def missing_modules(result: Any) -> list[str]:
    """The modules a scored patch's commands could not import while collecting its tests
    (sorted; empty: collection did not fail on a missing module). ``result`` is a
    :class:`sealbench.scoring.scoring.ScoreResult`."""
    names: set[str] = set()
    for outcome in (getattr(result, "visible", None), getattr(result, "hidden", None)):
        if outcome is None:
            continue
        for text in _texts(outcome):
            names.update(_MISSING.findall(text))
    return sorted(names)
