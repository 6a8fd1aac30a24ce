"""One scoring command run under the seal, and its verdict (docs/sealed-runs.md#the-seal).

:func:`_run_check` runs a task's visible or hidden command with the seal's bootstrap
(``seal_site/sitecustomize.py``, the only folder on ``PYTHONPATH``, with ``PYTHONSAFEPATH=1``) and
pytest's seal plugin loaded by name (``-p sealbench.scoring.pytest_seal``, :data:`SEAL_PLUGIN`, through
``PYTEST_ADDOPTS``; hence ``code_digests.RUNTIME_LOADS`` lists both under this module), hands the
bootstrap a fresh secret (canaries, the record key, the sealed test files) and reads the signed
report stream from a pipe (:class:`CommandOutcome`).
:func:`classify_exit` names the exit codes that mean the harness broke; :func:`judge` gives one
command's verdict from its sealed report (``sealed_report.judge_stream``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.contract import FAIL, INFRA_FAIL, PASS, TAMPER
from ..core.core import harness_env
from ..core.processes import run_process, tail_text
from ..core.untrusted import copy_untrusted_file, remove_tree
from ..pack.task_layout import task_pythonpath
from .sealed_report import (
    JUnitSummary,
    collected_ids,
    import_outside,
    imported_from,
    judge_stream,
    make_canary_secret,
    parse_stream,
)

#: pytest's exit codes that mean the harness, not the patch, broke (internal error, usage
#: error, no tests collected).
PYTEST_INFRA_CODES = {3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected"}
SHELL_INFRA_CODES = {126: "command not executable", 127: "command not found (missing interpreter?)"}


@dataclass
class CommandOutcome:
    command: str
    returncode: int | None
    wall_s: float
    timed_out: bool
    infra_reason: str | None
    log_tail: str
    #: test counts of the real tests (canaries excluded) from the sealed report stream (the
    #: JUnit file pytest also writes is kept for the logs, never trusted); None: no stream
    junit: JUnitSummary | None = None
    #: why the sealed report stream could not be read
    junit_error: str | None = None
    #: the resource limit the command hit, in words (``limits.Guard``); a hit is a ``fail``
    limit_hit: str | None = None
    #: whether the test runner started (the sealed-report plugin loaded); None: not known.
    #: False with ``infra_reason``/no report is a harness or pack problem (``infra_fail``);
    #: True means whatever broke after, broke under the tested code (``fail``/``tamper``)
    runner_started: bool | None = None
    #: what the sealed report stream showed (started, finished, canaries ok/wrong/not run,
    #: canary names, problem, verdict kind, passed count); ``junit`` holds its test counts
    report: dict = field(default_factory=dict)
    #: the stream's records and the run's canary secret (kept out of :meth:`ScoreResult.to_dict`;
    #: the records are also saved as ``<name>.seal.jsonl`` beside the logs)
    stream: list | None = field(default=None, repr=False)
    secret: dict | None = field(default=None, repr=False)
    #: the test ids the gold patch's run collected (None: not known)
    expected_ids: list | None = field(default=None, repr=False)


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


#: The sealed-report plugin (``pytest_seal``) and the folder that makes it importable.
SEAL_PLUGIN = "sealbench.scoring.pytest_seal"
SCRIPTS_DIR = Path(__file__).resolve().parents[2]
#: the folder whose ``sitecustomize.py`` starts the seal in the scoring command's interpreter
SEAL_SITE = Path(__file__).resolve().parent / "seal_site"
#: The most of a JUnit report copied into the logs (bytes).
JUNIT_CAP = 16 << 20
#: The most of a sealed-report stream kept (bytes); a longer stream is a ``fail``.
STREAM_CAP = 32 << 20


def _seal_env(junit_path: Path, fds: str) -> dict[str, str]:
    """The seal's variables: its bootstrap alone on ``PYTHONPATH`` and no folder of the workspace
    put first on ``sys.path`` by the interpreter (``PYTHONSAFEPATH``); the bootstrap removes them
    (and the secret's fds) from the environment before any tested code runs."""
    base = os.environ.get("PYTEST_ADDOPTS", "").strip()
    ours = f"--junitxml={shlex.quote(str(junit_path))} -o junit_family=xunit2 -p {SEAL_PLUGIN}"
    return {"PYTEST_ADDOPTS": f"{base} {ours}".strip(), "PYTHONPATH": str(SEAL_SITE), "PYTHONSAFEPATH": "1",
            "SEALBENCH_SEAL": fds}


def _junit_env(junit_path: Path) -> dict[str, str]:
    base = os.environ.get("PYTEST_ADDOPTS", "").strip()
    ours = f"--junitxml={shlex.quote(str(junit_path))} -o junit_family=xunit2"
    return {"PYTEST_ADDOPTS": f"{base} {ours}".strip()}


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


def _run_check(command: str, ws: Path, logdir: Path, name: str, timeout_s: float,
               sandbox: object | None = None, junit_dir: Path | None = None, *,
               import_paths: tuple[str, ...] = (), packages: tuple[str, ...] = (),
               task_env: Mapping[str, str] | None = None,
               test_folders: Sequence[Path] | None = None,
               sealed_files: Sequence[str] = (), expected_ids: Sequence[str] | None = None) -> CommandOutcome:
    """Run one task command under the sealed report. ``import_paths`` (workspace-relative) go
    first on ``PYTHONPATH``; ``packages`` (the code under test) and the workspace root reach the
    plugin with the canary secret, and the stream says where each package was imported from.
    ``task_env``: the task's test environment (environments.BuiltEnv.command_env), or none.
    ``test_folders``: where the canary names' words come from when ``ws`` is an overlay's
    mount point (see ``make_canary_secret``). ``sealed_files``: the workspace paths of the sealed
    test files (the only code a test may run as). ``expected_ids``: the test ids the gold patch's
    run of this command collected (None: not known); any other set is ``tamper``."""
    logdir.mkdir(parents=True, exist_ok=True)
    junit_dir = junit_dir or logdir
    junit_dir.mkdir(parents=True, exist_ok=True)
    junit_path = junit_dir / f"{name}.junit.xml"
    if junit_path.is_dir() and not junit_path.is_symlink():   # a stale report must never count,
        remove_tree(junit_path)                                  # whatever an earlier run made of it
    else:
        junit_path.unlink(missing_ok=True)
    kwargs = {} if sandbox is None else {"sandbox": sandbox}
    secret = make_canary_secret(ws, test_folders)
    root = str(Path(ws).resolve())
    secret.update(packages=list(packages), root=root, key=secrets.token_hex(32),
                  paths=task_pythonpath(Path(root), import_paths),
                  sealed_files=[str(Path(root) / rel) for rel in sealed_files if rel.endswith(".py")])
    sec_r, sec_w = os.pipe()
    out_r, out_w = os.pipe()
    sink: dict = {}
    reader = threading.Thread(target=_read_stream, args=(out_r, sink), daemon=True)
    try:
        os.write(sec_w, json.dumps(secret).encode())
        os.close(sec_w)
        reader.start()
        env = harness_env({**(task_env or {}),
                           **_seal_env(junit_path, f"{sec_r}:{out_w}")})
        res = run_process(command, ws, env, timeout_s,
                          logdir / f"{name}.stdout", logdir / f"{name}.stderr", pass_fds=(sec_r, out_w), **kwargs)
    finally:
        for fd in (sec_r, out_w):
            try:
                os.close(fd)
            except OSError:
                pass
    reader.join(timeout=30)
    if junit_dir != logdir and (junit_path.exists() or junit_path.is_symlink()):
        # the tested code could have made it a link or a FIFO: copied only as a regular file
        refused = copy_untrusted_file(junit_path, logdir / junit_path.name, JUNIT_CAP)
        if refused:
            (logdir / f"{junit_path.name}.refused").write_text(refused + "\n")
    tail = tail_text(logdir / f"{name}.stdout") + tail_text(logdir / f"{name}.stderr", 2000)
    infra = None if res.timed_out else classify_exit(command, res.returncode, tail)
    data = sink.get("data", b"")
    (logdir / f"{name}.seal.jsonl").write_bytes(data)
    recs, unreadable = parse_stream(data, secret["key"])
    if sink.get("size", 0) > STREAM_CAP:
        unreadable = f"the report stream exceeds {STREAM_CAP} bytes"
    elif reader.is_alive():
        unreadable = "the report stream was still open 30 s after the command ended"
    sv = judge_stream(recs, secret["names"], secret["message"], res.returncode, expected=0,
                      expected_ids=expected_ids)
    report = {"records": len(recs), "started": sv.started, "finished": sv.finished, "canaries": sv.canaries,
              "canary_names": sorted(secret["names"].values()), "problem": sv.problem, "kind": sv.kind,
              "passed": sv.passed, "unreadable": unreadable,
              "imports": imported_from(recs), "import_outside": import_outside(recs, secret["root"]),
              "collected": collected_ids(recs)}
    return CommandOutcome(command, res.returncode, res.wall_s, res.timed_out, infra, tail, sv.summary,
                          unreadable, getattr(res, "limit_hit", None), runner_started=sv.started,
                          report=report, stream=recs, secret=secret,
                          expected_ids=None if expected_ids is None else list(expected_ids))


def judge(name: str, out: CommandOutcome, expected: int = 0) -> tuple[str, str | None]:
    """Verdict of one scoring command: (``pass`` | ``fail`` | ``tamper`` | ``infra_fail``, why
    not pass).

    The sealed report stream decides (:func:`judge_stream`); the exit code only where the
    stream says so, printed output and the JUnit file never. A command whose runner never
    started is ``infra_fail``; once it started, whatever the tested code breaks is ``fail``
    (or ``tamper`` when the report was forged). ``expected`` is how many tests must pass (the
    hidden suite: ``failing_tests``, or what the gold patch ran).
    """
    if out.limit_hit:
        return FAIL, f"{name} command {out.limit_hit}"
    if out.timed_out:
        return FAIL, f"{name} tests timed out"
    if out.junit_error:                       # the stream itself could not be read
        return (TAMPER if out.runner_started else FAIL), f"{name} tests: {out.junit_error}"
    if out.stream is None:
        return FAIL, f"{name} command: no sealed report"
    if out.secret is None:
        return FAIL, f"{name} command: no canary secret"
    v = judge_stream(out.stream, out.secret["names"], out.secret["message"], out.returncode, expected,
                     expected_ids=out.expected_ids)
    if v.kind == INFRA_FAIL:
        if out.infra_reason:
            return INFRA_FAIL, f"{name} command: {out.infra_reason} (exit {out.returncode})"
        if "pytest" not in out.command:
            return FAIL, (f"{name} command: not a pytest run, so no sealed report "
                            f"(exit {out.returncode}); sealbench vouches only for pytest suites")
        return INFRA_FAIL, f"{name} command: {v.problem}"
    if v.kind == TAMPER and not v.started and "pytest" not in out.command:
        return FAIL, (f"{name} command: not a pytest run, so no sealed report (exit {out.returncode}); "
                        "sealbench vouches only for pytest suites")
    if v.kind == PASS:
        return PASS, None
    problem = v.problem or ""
    return v.kind, (problem if problem.startswith("canary") else f"{name} tests: {problem}")
