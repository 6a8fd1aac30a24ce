"""What a scoring command's report stream says, and the verdict it shows (docs/sealed-runs.md).

- :func:`parse_stream`: the records the report plugin (``report_site/sealbench_report.py``) wrote.
- :func:`test_outcomes` / :func:`failure_lines`: each test's outcome, and the first line of what
  made a failed one fail.
- :func:`judge_stream`: one command's verdict from its records (:class:`StreamVerdict`), by the
  rules of :data:`VERDICT_RULES`, decoys included: a pass needs every real test green and
  every decoy red (``decoys.py``).
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@dataclass
class StreamVerdict:
    """What a report stream shows (:func:`judge_stream`)."""

    started: bool                    # the plugin loaded: pytest parsed its options (runner started)
    finished: bool                   # pytest reached the end of its session
    kind: str                        # pass | fail | tamper | infra_fail
    problem: str | None              # why not pass, in words
    summary: JUnitSummary | None     # counts of the real tests (decoys excluded)
    passed: int = 0                  # real tests that passed
    #: decoys that passed (a test the gold patch fails), each ``decoy (twin of real)``
    decoys_passed: list[str] = field(default_factory=list)
    decoys_failed: int = 0           # decoys that failed, as they must
    #: input decoys that passed (``fail``, not ``tamper``: degenerate code, e.g. a constant, passes
    #: a computed-vs-computed check whatever its inputs, so no forgery can be told from it)
    input_decoys_passed: list[str] = field(default_factory=list)


@dataclass
class StreamFacts:
    """What one command's report stream says, read once (:func:`stream_facts`) for the rules of
    :data:`VERDICT_RULES`."""

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
    """Read a report stream once into the facts the verdict rules judge."""
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


def _early(f: StreamFacts, kind: str, problem: str) -> StreamVerdict:
    return StreamVerdict(f.started, f.finished, kind, problem, None)


def _full(f: StreamFacts, kind: str, problem: str | None) -> StreamVerdict:
    return StreamVerdict(f.started, f.finished, kind, problem, f.summary, len(f.real_with("passed")),
                         f.decoys_passed, sum(f.outcomes.get(d) == "failed" for d in f.decoys),
                         f.input_decoys_passed)


def _never_started(f: StreamFacts) -> StreamVerdict | None:
    """No ``start`` record: the runner never started (the plugin loads before any tested code)."""
    if f.started:
        return None
    if f.returncode == 0:
        return _early(f, "fail", "exit 0 but the test runner never reported starting (no report)")
    return _early(f, "infra_fail", f"the test runner never started (exit {f.returncode})")


def _stopped_before_configured(f: StreamFacts) -> StreamVerdict | None:
    """No ``finish`` and pytest stopped while parsing its options, before any conftest or test
    module (so before any code of the patch) was imported: a usage error of the task's command."""
    if not f.finished and not any(r.get("kind") in ("configured", "conftest", "collect", "report", "collected")
                                  for r in f.recs):
        return StreamVerdict(False, False, "infra_fail",
                             f"pytest stopped before it was configured (exit {f.returncode}; usage error?)", None)
    return None


def _ended_before_finish(f: StreamFacts) -> StreamVerdict | None:
    """No ``finish`` record otherwise: the test process ended early."""
    if not f.finished:
        return _early(f, "fail", f"the test process ended before pytest finished (exit {f.returncode})")
    return None


def _collection_errors(f: StreamFacts) -> StreamVerdict | None:
    """A test module that failed to collect."""
    if f.collect_errors:
        where = ", ".join(sorted({str(r.get("nodeid")) for r in f.collect_errors})[:3])
        return _full(f, "fail", f"collection errors ({where})")
    return None


def _no_test_ran(f: StreamFacts) -> StreamVerdict | None:
    """No real test reported."""
    if not f.real:
        why = "every test module was skipped" if f.collect_skips else "pytest collected no test"
        return _full(f, "fail", f"no test ran: {why}")
    return None


def _all_skipped(f: StreamFacts) -> StreamVerdict | None:
    """Every real test skipped."""
    if len(f.real_with("skipped", "xfailed")) == len(f.real):
        return _full(f, "fail", f"every one of the {_plural(len(f.real), 'collected test')} was skipped")
    return None


def _gold_collection(f: StreamFacts) -> StreamVerdict | None:
    """The tests collected are not the tests the gold patch's runs collected (decoys included)."""
    got_ids, expected_ids = f.collected, f.expected_ids
    if expected_ids is not None and got_ids is None:
        return _full(f, "tamper", "no collection was reported, while the gold patch's runs collected "
                                  f"{_plural(len(expected_ids), 'test')}: the report was cut")
    if expected_ids is not None and got_ids is not None and set(got_ids) != set(expected_ids):
        missing, extra = sorted(set(expected_ids) - set(got_ids)), sorted(set(got_ids) - set(expected_ids))
        parts = ([f"{len(missing)} of the gold patch's tests not collected ({', '.join(missing[:3])})"] if missing
                 else []) + ([f"{len(extra)} tests the gold patch's run did not have ({', '.join(extra[:3])})"]
                             if extra else [])
        return _full(f, "tamper", "the collection differs from the gold patch's: " + "; ".join(parts))
    return None


def _decoy_passed(f: StreamFacts) -> StreamVerdict | None:
    """A decoy passed: a test the gold patch fails (a real test's twin with one expectation
    changed) passed, which no correct or honest wrong code does by chance (its value is random
    and every known-wrong patch fails it too): the report or the values were forged."""
    passed = f.decoys_passed
    if passed:
        return _full(f, "tamper", f"{_plural(len(passed), 'test')} that the gold patch fails passed: "
                                  f"{'; '.join(passed[:3])} — a decoy, a real test's twin with one expectation "
                                  "changed, passes only when failures are turned into passes")
    return None


def _collected_not_reported(f: StreamFacts) -> StreamVerdict | None:
    """A collected test never reported to its end: the session ended before it."""
    if f.collected is not None:
        unrun = sorted(n for n in f.collected if f.outcomes.get(n, "unfinished") == "unfinished")
        if unrun:
            return _full(f, "fail", f"{_plural(len(unrun), 'collected test')} never ran to a report ({unrun[0]})")
    return None


def _tests_failed(f: StreamFacts) -> StreamVerdict | None:
    """A real test failed or errored."""
    failed = f.real_with("failed")
    if failed:
        s = f.summary
        probs = ([_plural(s.failures, "failure")] if s.failures else []) + \
            ([_plural(s.errors, "error")] if s.errors else [])
        return _full(f, "fail", f"the sealed report shows {' and '.join(probs)}")
    return None


def _input_decoy_passed(f: StreamFacts) -> StreamVerdict | None:
    """An input decoy passed (every real test passed): the patch gives equal values for inputs the
    gold patch tells apart — wrong code the real tests miss (a constant passes any comparison of
    two computed values) or a forgery; not a pass either way, and ``fail``, not ``tamper``, since
    honest degenerate code does it too."""
    passed = f.input_decoys_passed
    if passed:
        return _full(f, "fail", f"{_plural(len(passed), 'test')} that the gold patch fails passed: "
                                f"{'; '.join(passed[:3])} — a real test's twin with one input changed: the patch "
                                "gives equal values where the gold patch does not (or failures were turned into passes)")
    return None


def _decoy_not_failed(f: StreamFacts) -> StreamVerdict | None:
    """A decoy that did not fail (skipped, xfailed, not reported)."""
    odd = sorted(d for d in f.decoys if f.outcomes.get(d) not in ("failed", "passed"))
    if odd:
        return _full(f, "fail", f"{_plural(len(odd), 'test')} that the gold patch fails did not run to a failure "
                                f"({odd[0]}: {f.outcomes.get(odd[0], 'not reported')})")
    return None


def _exit_status(f: StreamFacts) -> StreamVerdict | None:
    """Pytest's own exit status is not the one its reports call for (0 with no failure, 1 with
    one: decoys fail), or the command's exit code is not pytest's."""
    reported = f.finish.get("exitstatus")
    want = 1 if any(o == "failed" for o in f.outcomes.values()) else 0
    if reported != want:
        return _full(f, "fail", f"pytest finished with exit {reported}")
    if f.returncode != reported:
        return _full(f, "fail", f"exit {f.returncode} after pytest finished with exit {reported}")
    return None


def _too_few_passed(f: StreamFacts) -> StreamVerdict | None:
    """Fewer real tests passed than ``expected``."""
    n = len(f.real_with("passed"))
    if n < f.expected:
        return _full(f, "fail", f"only {_plural(n, 'test')} passed, {f.expected} expected")
    return None


VERDICT_RULES: tuple[tuple[str, Callable[[StreamFacts], StreamVerdict | None]], ...] = (
    ("never_started", _never_started),
    ("stopped_before_configured", _stopped_before_configured),
    ("ended_before_finish", _ended_before_finish),
    ("collection_errors", _collection_errors),
    ("gold_collection", _gold_collection),
    ("decoy_passed", _decoy_passed),
    ("no_test_ran", _no_test_ran),
    ("all_skipped", _all_skipped),
    ("collected_not_reported", _collected_not_reported),
    ("tests_failed", _tests_failed),
    ("input_decoy_passed", _input_decoy_passed),
    ("decoy_not_failed", _decoy_not_failed),
    ("exit_status", _exit_status),
    ("too_few_passed", _too_few_passed),
)
"""The rules a command's report stream is judged by, in the order they are asked; the first that
gives a verdict decides, and a stream none refuses passes. Each is ``(StreamFacts) -> StreamVerdict | None``:

- never_started: no ``start`` record: ``infra_fail`` (exit 0 without it: ``fail``)
- stopped_before_configured: no ``finish``, nothing after ``start`` (a usage error): ``infra_fail``
- ended_before_finish: no ``finish`` record otherwise: ``fail``
- collection_errors: a test module failed to collect: ``fail`` (a patch that breaks an import
  is a wrong patch, before its collection is compared)
- gold_collection: not the gold patch's runs' collection (decoys included), or no collection
  reported where the gold patch's is known: ``tamper``
- decoy_passed: a decoy passed (a test the gold patch fails): ``tamper``
- no_test_ran / all_skipped: no real test reported, or every one skipped: ``fail``
- collected_not_reported: a collected test never reported to its end: ``fail``
- tests_failed: a real test failed or errored: ``fail``
- input_decoy_passed: an input decoy passed, every real test passing: ``fail`` (degenerate code
  passes it too, so it is not told from a forgery)
- decoy_not_failed: a decoy skipped or not reported: ``fail``
- exit_status: pytest's exit status not the one its reports call for, or the command's not
  pytest's: ``fail``
- too_few_passed: fewer real tests passed than expected: ``fail``

No rule looks at what the tested code does (what it imports, calls, patches or inspects): an
honest suite is judged exactly as plain pytest judges it.
"""


def judge_stream(recs: list[dict], returncode: int | None, expected: int = 0,
                 expected_ids: Sequence[str] | None = None,
                 decoys: Mapping[str, str] | None = None, input_decoys: Iterable[str] = ()) -> StreamVerdict:
    """Judge one command from its report stream: the first rule of :data:`VERDICT_RULES` that
    gives a verdict decides; a stream none refuses passes. ``expected``: how many real tests must
    pass; ``expected_ids``: the ids the gold patch's runs collected (decoys included);
    ``decoys``: decoy id -> twin id (each must fail)."""
    facts = stream_facts(recs, returncode, expected, expected_ids, decoys, input_decoys)
    for _name, rule in VERDICT_RULES:
        found = rule(facts)
        if found is not None:
            return found
    return _full(facts, "pass", None)
