"""A pytest plugin that records each test's outcome, for ``bench/honest_census.py``.

Loaded by name (``-p _census_outcomes``) in the census's plain runs; at the end of the session it
writes ``{nodeid: outcome}`` as JSON to the file ``$CENSUS_OUTCOMES`` names. It only listens
(``pytest_runtest_logreport``, ``pytest_collectreport``, ``pytest_sessionfinish``): nothing the
tested code sees changes.

A test's outcome folds its phases (:func:`fold`): ``failed`` when any phase or subTest failed,
``xfailed`` or ``skipped`` when one was skipped, ``xpassed`` for a non-strict unexpected pass,
else ``passed``. A collector that failed or was skipped is recorded as ``collect:<nodeid>`` ->
``error`` or ``skipped``. Beside it, ``$CENSUS_OUTCOMES.texts`` gets each skipped or failed
test's reason (a skip's reason, a failure's last lines). :func:`fold` and :func:`phase_outcome` are what the census also
applies to a sealed run's report stream, so both sides are counted alike.
"""

from __future__ import annotations

import json
import os

#: which outcome wins when phases disagree (the highest)
RANK = {"unfinished": -1, "passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 2, "failed": 3, "error": 3}


def phase_outcome(when: str, outcome: str, xfail: bool, subtest: bool = False) -> str | None:
    """What one report says of its test (None: nothing: a passed setup or teardown, a passed or
    skipped subTest)."""
    if outcome == "failed":
        return "failed"
    if subtest:
        return None
    if outcome == "skipped":
        return "xfailed" if xfail else "skipped"
    if when == "call":
        return "xpassed" if xfail else "passed"
    return None


def fold(prev: str | None, new: str | None) -> str:
    """The test's outcome so far after one more report."""
    if new is None:
        return prev or "unfinished"
    if prev is None or RANK[new] > RANK.get(prev, -1):
        return new
    return prev


class _Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.outcomes: dict[str, str] = {}
        self.texts: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:  # noqa: ANN001 - pytest's TestReport
        new = phase_outcome(str(report.when), str(report.outcome), hasattr(report, "wasxfail"),
                            type(report).__name__ != "TestReport")
        self.outcomes[report.nodeid] = fold(self.outcomes.get(report.nodeid), new)
        if new in ("skipped", "failed"):
            self.texts[report.nodeid] = _reason(report)

    def pytest_collectreport(self, report) -> None:  # noqa: ANN001 - pytest's CollectReport
        if report.outcome != "passed":
            self.outcomes[f"collect:{report.nodeid}"] = "error" if report.outcome == "failed" else "skipped"
            self.texts[f"collect:{report.nodeid}"] = _reason(report)

    def pytest_sessionfinish(self, session) -> None:  # noqa: ANN001, ARG002 - pytest's Session
        with open(self.path, "w") as fh:
            json.dump(self.outcomes, fh, sort_keys=True)
        with open(f"{self.path}.texts", "w") as fh:
            json.dump(self.texts, fh, sort_keys=True)


def _reason(report) -> str:  # noqa: ANN001 - pytest's TestReport or CollectReport
    """A skip's reason, or the last lines of a failure."""
    if isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
        return str(report.longrepr[2])
    return "\n".join(report.longreprtext.strip().splitlines()[-6:])


def pytest_configure(config) -> None:  # noqa: ANN001 - pytest's Config
    path = os.environ.get("CENSUS_OUTCOMES")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Recorder(path), "census-outcomes-recorder")
