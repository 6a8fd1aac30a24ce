"""One scoring command run with sealbench's report plugin, and its verdict (docs/sealed-runs.md).

:func:`_run_check` runs a task's visible or hidden command as plain pytest would run it, with one
addition: the report plugin (``report_site/sealbench_report.py``, loaded by name with
``-p sealbench_report`` through ``PYTEST_ADDOPTS``; hence ``code_digests.RUNTIME_LOADS`` lists it
under this module), which streams each test's report to the harness through a pipe
(:class:`CommandOutcome`). :func:`classify_exit` names the exit codes that mean the harness broke;
:func:`judge` gives one command's verdict from its stream by the verdict table (``verdict.py``),
with the decoys the hidden suite carries (``decoys.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.core import harness_env
from ..core.processes import run_process, tail_text
from ..pack.task_layout import task_pythonpath
from .decoys import decoy_ids, pack_ids
from .sealed_report import (
    JUnitSummary,
    collected_ids,
    failure_lines,
    import_outside,
    imported_from,
    parse_stream,
    renamed,
    stream_facts,
    test_outcomes,
)
from .verdict import SHELL_INFRA_CODES, CommandEvidence, Evidence, Verdict, decide, judge_stream

#: pytest's exit codes that mean the harness, not the patch, broke (internal error, usage
#: error, no tests collected).
PYTEST_INFRA_CODES = {3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}


@dataclass
class CommandOutcome:
    command: str
    returncode: int | None
    wall_s: float
    timed_out: bool
    infra_reason: str | None
    log_tail: str
    #: test counts of the real tests (decoys excluded) from the report stream; None: no stream
    junit: JUnitSummary | None = None
    #: why the report stream could not be read
    junit_error: str | None = None
    #: the resource limit the command hit, in words (``limits.Guard``); a hit is a ``fail``
    limit_hit: str | None = None
    #: whether the test runner started (the report plugin loaded); None: not known.
    #: False with ``infra_reason``/no report is a harness or pack problem (``infra_fail``);
    #: True means whatever broke after, broke under the tested code (``fail``/``tamper``)
    runner_started: bool | None = None
    #: what the stream showed (started, finished, problem, verdict kind, passed count, the
    #: decoys that passed and failed, collected ids, each test's outcome and failure line)
    report: dict = field(default_factory=dict)
    #: the stream's records (kept out of :meth:`ScoreResult.to_dict`; also saved as
    #: ``<name>.seal.jsonl`` beside the logs)
    stream: list | None = field(default=None, repr=False)
    #: the test ids the gold patch's runs collected (None: not known)
    expected_ids: list | None = field(default=None, repr=False)
    #: decoy id -> twin id in this command's suite (empty: no decoys)
    decoys: dict = field(default_factory=dict, repr=False)
    #: the ids of the decoys with an input changed (``decoys.py``): one that passes is a failure, not tamper
    input_decoys: list = field(default_factory=list, repr=False)


_MISSING_RUNNER = re.compile(r"No module named '?pytest'?\b|ModuleNotFoundError: No module named '?_?pytest")


def classify_exit(command: str, rc: int | None, output: str = "") -> str | None:
    """Infra reason for an exit code, or None when the code is the test outcome."""
    if rc is None:
        return "no exit code"
    if rc in SHELL_INFRA_CODES:
        return SHELL_INFRA_CODES[rc]
    if "pytest" in command and rc in PYTEST_INFRA_CODES:
        return PYTEST_INFRA_CODES[rc]
    if "pytest" in command and rc != 0 and _MISSING_RUNNER.search(output):
        return "the test runner (pytest) is not installed for this interpreter"
    return None


#: The report plugin, and the folder that makes it importable (nothing else is in it).
REPORT_PLUGIN = "sealbench_report"
REPORT_SITE = Path(__file__).resolve().parent / "report_site"
#: The most of a report stream kept (bytes); a longer stream is a ``fail``.
STREAM_CAP = 32 << 20


def _report_env(fd: int, import_paths: Sequence[str], packages: Sequence[str]) -> dict[str, str]:
    """The plugin's variables: the task's import folders then the plugin's folder on
    ``PYTHONPATH``, ``-p sealbench_report`` added to ``PYTEST_ADDOPTS``, the stream's fd and the
    packages whose origin it reports. The plugin removes its own from the environment as it
    loads, and ``PYTEST_ADDOPTS`` once pytest is configured."""
    base = os.environ.get("PYTEST_ADDOPTS", "").strip()
    return {"PYTEST_ADDOPTS": f"{base} -p {REPORT_PLUGIN}".strip(),
            "PYTHONPATH": os.pathsep.join([*import_paths, str(REPORT_SITE)]),
            "SEALBENCH_REPORT_FD": str(fd), "SEALBENCH_REPORT_PACKAGES": json.dumps(list(packages))}


def _read_stream(fd: int, sink: dict) -> None:
    chunks, size = [], 0
    with os.fdopen(fd, "rb", buffering=0) as fh:
        while True:
            b = fh.read(1 << 16)
            if not b:
                break
            if size < STREAM_CAP:
                chunks.append(b)
            size += len(b)
    sink["data"], sink["size"] = b"".join(chunks), size


def _fresh_log(path: Path) -> None:
    """Remove whatever stands where a log file is about to be written, unless it is a plain file:
    code that ran earlier without a sandbox may have planted a folder (the write would crash the
    harness) or a link (the write would land elsewhere) there."""
    if path.is_symlink() or (path.exists() and not path.is_file()):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _run_check(command: str, ws: Path, logdir: Path, name: str, timeout_s: float,
               sandbox: object | None = None, *, import_paths: tuple[str, ...] = (),
               packages: tuple[str, ...] = (), task_env: Mapping[str, str] | None = None,
               expected_ids: Sequence[str] | None = None,
               decoys: Sequence[tuple[str, ...]] = ()) -> CommandOutcome:
    """Run one task command with the report plugin. ``import_paths`` (workspace-relative) go
    first on ``PYTHONPATH``; the stream says where each of ``packages`` (the code under test) was
    imported from. ``task_env``: the task's test environment (environments.BuiltEnv.command_env),
    or none. ``expected_ids``: the test ids the gold patch's runs of this command collected
    (None: not known); any other set is ``tamper``. ``decoys``: (file, decoy, twin, kind, the
    twin's pack name) of each decoy in the suite (``decoys.from_records``; each must fail, one that
    passes is ``tamper``); a twin renamed in the suite is reported by its pack name, so
    ``expected_ids`` (the gold runs' own reports) name it so too."""
    logdir.mkdir(parents=True, exist_ok=True)
    for suffix in (".stdout", ".stderr", ".seal.jsonl"):
        _fresh_log(logdir / f"{name}{suffix}")
    kwargs = {} if sandbox is None else {"sandbox": sandbox}
    root = str(Path(ws).resolve())
    out_r, out_w = os.pipe()
    sink: dict = {}
    reader = threading.Thread(target=_read_stream, args=(out_r, sink), daemon=True)
    try:
        reader.start()
        env = harness_env({**(task_env or {}),
                           **_report_env(out_w, task_pythonpath(Path(root), import_paths), packages)})
        res = run_process(command, ws, env, timeout_s,
                          logdir / f"{name}.stdout", logdir / f"{name}.stderr", pass_fds=(out_w,), **kwargs)
    finally:
        try:
            os.close(out_w)
        except OSError:
            pass
    reader.join(timeout=30)
    tail = tail_text(logdir / f"{name}.stdout") + tail_text(logdir / f"{name}.stderr", 2000)
    infra = None if res.timed_out else classify_exit(command, res.returncode, tail)
    data = sink.get("data", b"")
    (logdir / f"{name}.seal.jsonl").write_bytes(data)
    recs, unreadable = parse_stream(data)
    # a twin renamed in the decoyed suite is reported by its pack name (decoys.pack_ids): from here
    # on (outcomes, collection, the gold runs' ids, the verdict) the run reads as the pack's tests
    # and its decoys; the stream saved above keeps the names the suite ran under
    recs = renamed(recs, pack_ids([*(collected_ids(recs) or ()), *test_outcomes(recs)], decoys)) if decoys else recs
    if sink.get("size", 0) > STREAM_CAP:
        unreadable = f"the report stream exceeds {STREAM_CAP} bytes"
    elif reader.is_alive():
        unreadable = "the report stream was still open 30 s after the command ended"
    # decoy ids from what the run collected and what the gold patch's runs did (a run that hides its
    # collection still has its decoys judged)
    known = [*(collected_ids(recs) or ()), *(expected_ids or ()), *test_outcomes(recs)]
    inputs = set(decoy_ids(dict.fromkeys(known), decoys, "input")) if decoys else set()
    decoys = decoy_ids(dict.fromkeys(known), decoys) if decoys else {}
    sv = judge_stream(recs, res.returncode, expected=0, expected_ids=expected_ids, decoys=decoys,
                      input_decoys=inputs)
    report = {"records": len(recs), "started": sv.started, "finished": sv.finished, "problem": sv.problem,
              "kind": sv.kind, "passed": sv.passed, "unreadable": unreadable,
              "decoys": len(decoys), "decoys_passed": sv.decoys_passed, "decoys_failed": sv.decoys_failed,
              "input_decoys_passed": sv.input_decoys_passed,
              "imports": imported_from(recs), "import_outside": import_outside(recs, root),
              "collected": collected_ids(recs), "outcomes": test_outcomes(recs), "failures": failure_lines(recs)}
    return CommandOutcome(command, res.returncode, res.wall_s, res.timed_out, infra, tail, sv.summary,
                          unreadable, getattr(res, "limit_hit", None), runner_started=sv.started,
                          report=report, stream=recs,
                          expected_ids=None if expected_ids is None else list(expected_ids), decoys=decoys,
                          input_decoys=sorted(inputs))


def judge(name: str, out: CommandOutcome, expected: int = 0) -> tuple[str, str | None]:
    """(status, why not pass) of one scoring command: :func:`command_verdict`."""
    v = command_verdict(name, out, expected)
    return v.status, v.reason


def command_verdict(name: str, out: CommandOutcome, expected: int = 0) -> Verdict:
    """Verdict of one scoring command (``pass`` | ``fail`` | ``tamper`` | ``infra_fail``, the rule
    and why not pass), by the verdict table (``verdict.RULES``) on what the command did and what
    its report stream shows.

    The report stream decides (decoys included); the exit code only where the stream says so,
    printed output never. A command whose runner never started is ``infra_fail``; once it
    started, whatever the tested code breaks is ``fail`` (``tamper``: a decoy passed, or not the
    gold patch's collection). ``expected`` is how many real tests must pass (the hidden suite:
    ``failing_tests``, or what the gold patch ran).
    """
    facts = (None if out.stream is None else
             stream_facts(out.stream, out.returncode, expected, out.expected_ids, out.decoys,
                           out.input_decoys))
    return decide(Evidence(command=CommandEvidence(
        name, facts, command=out.command, limit_hit=out.limit_hit, timed_out=out.timed_out,
        unreadable=out.junit_error, infra_reason=out.infra_reason)))
