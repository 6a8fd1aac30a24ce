"""What a scoring command's report stream says (docs/sealed-runs.md).

- :func:`parse_stream`: the records the report plugin (``report_site/sealbench_report.py``) wrote.
- :func:`test_outcomes` / :func:`failure_lines`: each test's outcome, and the first line of what
  made a failed one fail.
- :func:`renamed`: the records with some test ids replaced (a decoyed suite's renamed twins,
  reported by their pack names: ``decoys.pack_ids``).
- :func:`stream_facts`: what one command's stream says, read once (:class:`StreamFacts`); the
  verdict it shows is decided by the stream rules of the one verdict table (``verdict.py``,
  ``judge_stream``), decoys included: a pass needs every real test green and every decoy red
  (``decoys.py``).
- :func:`imported_from` / :func:`import_outside`: where the stream says the task's packages
  were imported from, and the first one from outside the workspace.

Nothing in the stream is trusted to resist the tested code, which runs in the same process: the
rules judge what any honest pytest run shows (and refuse nothing an honest suite does); forgery
is caught by the decoys, which a forger cannot tell from the real tests it must flip.
Running a command is ``sealed_command.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass
class JUnitSummary:
    """Test counts of one command's real tests (decoys excluded)."""

    tests: int
    failures: int
    errors: int
    skipped: int

    @property
    def ran(self) -> int:
        return self.tests - self.skipped


def parse_stream(data: bytes) -> tuple[list[dict], str | None]:
    """The records of a report stream (JSON lines), and why it is unreadable (None: readable)."""
    recs = []
    for i, line in enumerate(ln for ln in data.splitlines() if ln.strip()):
        try:
            rec = json.loads(line)
        except ValueError:
            return recs, f"record {i + 1} is not JSON"
        if not isinstance(rec, dict) or "kind" not in rec:
            return recs, f"record {i + 1} is not a sealbench record"
        recs.append(rec)
    return recs, None


def collected_ids(recs: list[dict]) -> list[str] | None:
    """The test ids the stream says were collected (decoys included); None: no collection."""
    for r in recs:
        if r.get("kind") == "collected" and isinstance(r.get("nodeids"), list):
            return sorted(str(n) for n in r["nodeids"])
    return None


def renamed(recs: list[dict], names: Mapping[str, str]) -> list[dict]:
    """The records with each test id of ``names`` (id -> the id to report it by) replaced, where
    the stream names tests (``collected``, ``report``); the records themselves are not changed."""
    if not names:
        return recs
    out = []
    for r in recs:
        if r.get("kind") == "report" and str(r.get("nodeid")) in names:
            r = {**r, "nodeid": names[str(r.get("nodeid"))]}
        elif r.get("kind") == "collected" and isinstance(r.get("nodeids"), list):
            r = {**r, "nodeids": [names.get(str(n), n) for n in r["nodeids"]]}
        out.append(r)
    return out


def test_outcomes(recs: list[dict]) -> dict[str, str]:
    """Each reported test's outcome as pytest judges it: ``failed`` (a phase failed: its call, a
    subTest, its setup or teardown), ``xfailed``/``xpassed``, ``skipped``, or ``passed``."""
    phases: dict[str, dict[str, str]] = {}
    failed: set[str] = set()
    xfail: dict[str, str] = {}
    for r in recs:
        if r.get("kind") != "report":
            continue
        nid, outcome = str(r.get("nodeid")), str(r.get("outcome"))
        if r.get("xfail"):
            xfail[nid] = "xfailed" if outcome == "skipped" else "xpassed"
        if outcome == "failed" and not r.get("xfail"):
            failed.add(nid)
        if not r.get("subtest"):
            phases.setdefault(nid, {})[str(r.get("when"))] = outcome
    out = {}
    for nid, ph in phases.items():
        if nid in failed:
            out[nid] = "failed"
        elif nid in xfail:
            out[nid] = xfail[nid]
        elif "skipped" in ph.values():
            out[nid] = "skipped"
        elif ph.get("call") == "passed":
            out[nid] = "passed"
        else:
            out[nid] = "unfinished"
    return out


def failure_lines(recs: list[dict]) -> dict[str, str]:
    """Each failed test's first failure, ``Type: first line`` (``AssertionError: assert 3 == 5``;
    the type is what ended the phase, where the plugin saw it)."""
    out: dict[str, str] = {}
    for r in recs:
        if r.get("kind") == "report" and r.get("outcome") == "failed":
            crash, kind = str(r.get("crash") or ""), str(r.get("exception") or "")
            out.setdefault(str(r.get("nodeid")), f"{kind}: {crash}" if kind and not crash.startswith(kind) else crash)
    return out


def imported_from(recs: list[dict]) -> dict[str, list[str]]:
    """Package -> the files or folders it was imported from, over the stream's ``imports``
    records (after collection, at the session's end)."""
    out: dict[str, list[str]] = {}
    for r in recs:
        if r.get("kind") == "imports" and isinstance(r.get("modules"), dict):
            for name, where in r["modules"].items():
                for p in where if isinstance(where, list) else [where]:
                    if isinstance(p, str) and p not in out.setdefault(str(name), []):
                        out[str(name)].append(p)
    return out


def import_outside(recs: list[dict], root: str | Path) -> dict | None:
    """The first package the stream shows imported from outside ``root`` (the workspace), as
    ``{"package", "path"}``; None: every one came from inside (or none was imported)."""
    base = os.path.realpath(str(root))
    for name, where in imported_from(recs).items():
        for p in where:
            # realpath, not Path.resolve: a link loop the tested code left is not an exception
            rp = os.path.realpath(p) if p.startswith("/") else ""
            if not rp or not (rp == base or rp.startswith(base.rstrip("/") + "/")):
                return {"package": name, "path": p}
    return None


@dataclass
class StreamFacts:
    """What one command's report stream says, read once (:func:`stream_facts`) for the stream
    rules of the verdict table (``verdict.RULES``)."""

    recs: list[dict]                          # the records, in stream order
    returncode: int | None                    # the command's exit code
    expected: int                             # how many real tests must pass
    expected_ids: Sequence[str] | None        # the tests the gold patch's runs collected (decoys included)
    decoys: Mapping[str, str]                 # decoy id -> its real twin's id
    starts: list[dict]                        # the ``start`` records
    finish_at: int | None                     # index of the first ``finish`` record (None: none)
    collect_errors: list[dict]                # ``collect`` records of a module that failed
    collect_skips: list[dict]                 # ``collect`` records of a module that was skipped
    outcomes: dict[str, str]                  # every reported test -> its outcome (:func:`test_outcomes`)
    real: dict[str, str]                      # the real tests' outcomes (decoys left out)
    collected: list[str] | None               # :func:`collected_ids`
    input_decoys: frozenset[str] = frozenset()   # the decoys with an input changed (``decoys.py``)

    @property
    def started(self) -> bool:
        return bool(self.starts)

    @property
    def finished(self) -> bool:
        return self.finish_at is not None

    @property
    def runner_started(self) -> bool:
        """The runner started and got past parsing its options: a ``start`` record, then a
        ``finish`` or any record pytest writes once configured (a conftest, a collection, a
        report). False: no code of the patch ran (a usage error stops pytest before that)."""
        return self.started and (self.finished or any(
            r.get("kind") in ("configured", "conftest", "collect", "report", "collected") for r in self.recs))

    @property
    def finish(self) -> dict:
        assert self.finish_at is not None
        return self.recs[self.finish_at]

    def real_with(self, *outcomes: str) -> set[str]:
        return {n for n, o in self.real.items() if o in outcomes}

    @property
    def summary(self) -> JUnitSummary:
        return JUnitSummary(len(self.real), len(self.real_with("failed") - self._errors), len(self._errors),
                            len(self.real_with("skipped", "xfailed")))

    @property
    def _errors(self) -> set[str]:
        return {str(r.get("nodeid")) for r in self.recs if r.get("kind") == "report" and r.get("outcome") == "failed"
                and r.get("when") != "call" and str(r.get("nodeid")) in self.real}

    @property
    def decoys_passed(self) -> list[str]:
        """Value decoys that passed (an expected value changed: no honest code computes it)."""
        return [f"{d} (twin of {t})" for d, t in sorted(self.decoys.items())
                if self.outcomes.get(d) == "passed" and d not in self.input_decoys]

    @property
    def input_decoys_passed(self) -> list[str]:
        """Input decoys that passed: the patch gives equal values for inputs the gold patch tells apart."""
        return [f"{d} (twin of {t})" for d, t in sorted(self.decoys.items())
                if self.outcomes.get(d) == "passed" and d in self.input_decoys]


def stream_facts(recs: list[dict], returncode: int | None, expected: int = 0,
                 expected_ids: Sequence[str] | None = None, decoys: Mapping[str, str] | None = None,
                 input_decoys: Iterable[str] = ()) -> StreamFacts:
    """Read a report stream once into the facts the verdict table's stream rules judge."""
    fin_idx = [i for i, r in enumerate(recs) if r.get("kind") == "finish"]
    outcomes = test_outcomes(recs)
    decoys = dict(decoys or {})
    return StreamFacts(
        recs=recs, returncode=returncode, expected=expected, expected_ids=expected_ids, decoys=decoys,
        starts=[r for r in recs if r.get("kind") == "start"],
        finish_at=fin_idx[0] if fin_idx else None,
        collect_errors=[r for r in recs if r.get("kind") == "collect" and r.get("outcome") == "failed"],
        collect_skips=[r for r in recs if r.get("kind") == "collect" and r.get("outcome") == "skipped"],
        outcomes=outcomes, real={n: o for n, o in outcomes.items() if n not in decoys},
        collected=collected_ids(recs), input_decoys=frozenset(input_decoys) & frozenset(decoys))
