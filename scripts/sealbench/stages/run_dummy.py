"""run_dummy: the control solvers that prove the grader works, on one task.

Reads:  a sealed task (results/tasks/<id>/<digest>/sealed/)
Writes: results/tasks/<id>/<digest>/controls/controls.json and the control patches

Controls:
- ``empty_diff``: no change. It must fail; a task it passes is a ``weak_test`` (its tests do
  not test the bug).
- ``stub``: touches a source file without changing behaviour (appends a comment). It must fail.
  The file is a source file of the task's language the tamper rules accept (never a test, a
  test-config file or ``conftest.py``: :func:`stub_target`), so the stub scores a source edit.
- ``oracle``: the gold patch, scored ``oracle_runs`` times. It must pass every time; results
  that differ between runs mark the task ``flaky``.
If any of this does not hold, the grader is broken and the gate publishes nothing.

Decoys (:mod:`sealbench.scoring.decoys`): before the controls, up to ``decoys_per_task`` decoy
tests are made for the task's hidden suite — candidates are written into a copy of
``hidden_tests/`` and the suite is run under the empty diff and the gold patch; a candidate is
kept only where its twin fails without the fix and passes with it, and the decoy fails under
both (under the empty diff the way its twin fails). The controls (the stub among them) then run on
the decoyed suite (``controls/decoys/hidden_tests/``, which ``hidden_score`` scores every patch
against); a decoy that does not fail on every one of those runs is dropped and the controls run
again. ``controls.json`` ``decoys`` says which were made, their twins, and why a task has none. A control
whose tests imported the package under test from outside the workspace is ``infra_fail`` and
``import_outside`` names it (the task is refused: ``TASK_IMPORTS_OUTSIDE``).
"""

from __future__ import annotations

import argparse
import re
import sys
import traceback
from collections.abc import Mapping
from pathlib import Path

from ..core.contract import INFRA_FAIL, PASS
from ..core.core import SealbenchError, control_fingerprint, read_json
from ..core.records import ControlsRecord, write_record
from ..core.untrusted import remove_tree
from ..isolation.environments import BuiltEnv
from ..isolation.gitdiff import Change, git_mode, tree_patch
from ..pack.task_layout import protected_paths
from ..pack.workspace import check_snapshot
from ..scoring import decoys as decoy_tests
from ..scoring.collection import missing_modules
from ..scoring.scoring import ScoreResult, score_patch
from ..scoring.sealed_report import failure_lines, test_outcomes
from ..scoring.tamper_rules import path_rule, protected_reason
from ..scoring.verdict import mark_controls
from .sandboxed import add_isolation_args, env_arg, env_card, limits_arg, run_guarded, scoring_sandbox

#: Comment syntax per language for the stub edit (a trailing comment changes no behaviour).
COMMENT = {"python": "#", "ruby": "#", "shell": "#", "bash": "#", "r": "#", "perl": "#",
           "javascript": "//", "typescript": "//", "go": "//", "rust": "//", "java": "//",
           "c": "//", "cpp": "//", "c++": "//", "csharp": "//", "kotlin": "//", "swift": "//"}
SOURCE_SUFFIX = {"python": (".py",), "javascript": (".js", ".mjs", ".cjs"), "typescript": (".ts",), "go": (".go",),
                 "rust": (".rs",), "java": (".java",), "ruby": (".rb",), "c": (".c", ".h"),
                 "cpp": (".cpp", ".cc", ".cxx", ".hpp", ".h"), "c++": (".cpp", ".cc", ".cxx", ".hpp", ".h"),
                 "shell": (".sh",), "bash": (".sh",), "r": (".r",), "perl": (".pl", ".pm"), "csharp": (".cs",),
                 "kotlin": (".kt",), "swift": (".swift",)}
#: Folders of tests and fixtures (any depth) and files that are tests, test helpers or build
#: scripts rather than the code under test: the stub never edits them.
TEST_FOLDERS = {"test", "tests", "testing", "__tests__", "spec", "specs", "fixtures"}
NOT_SOURCE = re.compile(r"^(test_.*|.*_test|.*_tests|.*\.test|.*\.spec|setup|noxfile|fabfile|conftest)\.[^.]+$",
                        re.IGNORECASE)


def stub_target(repo: Path, language: str, task_paths: Mapping[str, str] | None = None) -> Path | None:
    """The file the stub edits: the first (by path) source file of ``language`` in ``repo``
    that the tamper rules accept unchanged (:func:`tamper_rules.protected_reason`,
    :func:`tamper_rules.path_rule`) — with the task's own protected paths ``task_paths`` (its
    support files, its tests at repository paths: ``task_layout.protected_paths``) — and that
    is not a test, a test helper, a build script or under a test folder. For a language without known suffixes, any such file. None: no
    such file."""
    suffixes = SOURCE_SUFFIX.get(language)
    for p in sorted(q for q in repo.rglob("*") if q.is_file() and not q.is_symlink()):
        rel = p.relative_to(repo).as_posix()
        parts = rel.split("/")
        if suffixes is not None and p.suffix.lower() not in suffixes:
            continue
        if any(d.lower() in TEST_FOLDERS or d.startswith(".") for d in parts[:-1]) or parts[-1].startswith("."):
            continue
        if NOT_SOURCE.match(parts[-1]):
            continue
        original = p.read_bytes() if parts[-1].lower() in ("setup.cfg", "pyproject.toml") else None
        if protected_reason(rel, original, None, task_paths) or path_rule(rel, repo):
            continue
        return p  # the first by path, as before: the same file wherever that one was allowed
    return None


def stub_patch(sealed: Path, meta: dict) -> tuple[bytes, str]:
    """Append a comment line to the file :func:`stub_target` picks; return (patch, path).
    A repo with no such file is an error naming the task (the stub would test no source edit).
    The patch is written straight from the two versions of that file (no workspace)."""
    lang = meta["language"].lower()
    source = stub_target(Path(sealed) / "repo", lang, protected_paths(Path(sealed), meta))
    if source is None:
        kind = f"{lang} source file" if lang in SOURCE_SUFFIX else "source file"
        raise SealbenchError(f"task {meta['id']}: the stub control found no {kind} in repo/ that is not a test, "
                             "a test-config file or otherwise protected by the tamper rules (conftest.py, pytest "
                             "configuration, tests/, visible_tests/, hidden_tests/ …): it cannot test a source edit")
    rel = source.relative_to(Path(sealed) / "repo")
    marker = COMMENT.get(lang)
    data = source.read_bytes()
    sep = b"" if data.endswith(b"\n") or not data else b"\n"
    addition = (f"{marker} sealbench stub: no behaviour change\n" if marker else "\n").encode()
    mode = git_mode(source.stat().st_mode | 0o600)
    return tree_patch([Change(rel.as_posix(), data, data + sep + addition, mode, mode)]), rel.as_posix()


#: how often the controls run again after a decoy that did not fail everywhere was dropped
DECOY_RETRIES = 2


def _outcomes(res: ScoreResult) -> dict[str, decoy_tests.Outcome]:
    """Each hidden test's outcome in one scored run (empty: the hidden command did not run)."""
    recs = (res.hidden.stream or []) if res.hidden is not None else []
    crashes = failure_lines(recs)
    return {n: decoy_tests.Outcome(o, crashes.get(n, "")) for n, o in test_outcomes(recs).items()}


def scorer(sealed: Path, meta: dict, out_dir: Path, timeout_s: float, box: object | None,
           task_env: dict | None = None):
    """``score(logname, patch, hidden_tests, spec=(), run=None, commands=("hidden",))``: one
    patch scored on the task with ``hidden_tests`` in place of its hidden tests (None: its own),
    judged with the decoys ``spec``, its hidden command running the decoys ``run`` (default
    ``spec``: ``decoys.command_for``; ``command``: that command, given); logs under
    ``out_dir/logs/<logname>``."""
    seed = decoy_tests.seed_of(sealed)

    def score(logname: str, patch: bytes, hidden_tests: Path | None, spec=(), run=None,
              commands: tuple[str, ...] = ("hidden",), command: str | None = None) -> ScoreResult:
        command = command or decoy_tests.command_for(meta["hidden_command"], list(spec if run is None else run), seed)
        return score_patch(sealed, meta, patch, out_dir / "logs" / logname, timeout_s, sandbox=box, task_check=True,
                           task_env=task_env, hidden_tests=hidden_tests, decoys=spec, commands=commands,
                           hidden_command=command if command != meta["hidden_command"] else None)

    return score


def make_decoys(sealed: Path, meta: dict, out_dir: Path, patches: dict[str, bytes], wanted: int,
                score) -> tuple[list[decoy_tests.Candidate], dict]:
    """Decoy candidates for the task, run under the empty diff and the gold patch
    (``score``: :func:`scorer`'s), and the ones kept (:func:`decoys.select`), with the record of
    how they were made."""
    record: dict = {"per_task": wanted, "made": 0, "tests": [], "why_none": None, "rejected": {}}
    if wanted <= 0:
        record["why_none"] = "decoys_per_task is 0: no decoys were asked for"
        return [], record
    seed = decoy_tests.seed_of(sealed)
    # a candidate for every test that could be a twin (which of them find the bug, the trial runs tell)
    cands = decoy_tests.task_candidates(sealed, wanted)
    if not cands:
        record["why_none"] = ("no hidden test that the agent did not also see as a visible test has an expectation "
                              "or an input a decoy can change (a literal compared with, an assertEqual argument, a "
                              "parametrized expected value, an argument of a computed side) that the prompt, the "
                              "visible tests or the test's own words would not give away")
        return [], record
    trial = out_dir / "decoys-trial" / "hidden_tests"
    decoy_tests.write_suite(sealed / "hidden_tests", trial, cands)
    every = [c.spec for c in cands]
    # the empty diff and the gold patch: the stub (no behaviour change) meets the decoys in the
    # controls' own runs of the decoyed suite, where a decoy it does not fail is dropped
    runs = {name: score(f"decoys-{name}", patches[name], trial, (), every) for name in ("empty_diff", "oracle")}
    broken = [f"{n}: {r.reason}" for n, r in runs.items()
              if r.hidden is None or r.hidden.report.get("collected") is None]
    if broken:
        record["why_none"] = "the suite with decoy candidates could not be run: " + "; ".join(broken)[:500]
        return [], record
    collected = runs["oracle"].hidden.report["collected"]
    chosen, why = decoy_tests.select(cands, collected, _outcomes(runs["empty_diff"]), [_outcomes(runs["oracle"])],
                                     [], wanted, seed)
    record["rejected"] = why
    record["trial_collected"] = collected      # for the hidden command's decoy ids (_command); not kept
    if not chosen:
        record["why_none"] = ("no candidate held: " + "; ".join(sorted(set(why.values())))) if why else \
            "no candidate held"
    return chosen, record


def task_decoys(sealed: Path, meta: dict, out_dir: Path, wanted: int, timeout_s: float, box: object | None,
                task_env: dict | None = None) -> tuple[decoy_tests.Suite, dict]:
    """Decoys for a task scored outside the pipeline (a builder's verification, a predictions
    file): made as :func:`run_controls` makes them, then checked once more on the gold patch with
    the decoyed suite (a decoy that does not fail is dropped). Returns the decoyed suite
    (:class:`decoys.Suite`, empty: none) and the record of how it was made (``why_none`` when
    none)."""
    sealed, out_dir = Path(sealed), Path(out_dir)
    oracle = (sealed / "oracle.patch").read_bytes()
    try:
        stub = stub_patch(sealed, meta)[0]
    except SealbenchError as exc:
        return decoy_tests.Suite(), {"made": 0, "why_none": f"no stub control: {exc}"}

    score = scorer(sealed, meta, out_dir, timeout_s, box, task_env)
    chosen, record = make_decoys(sealed, meta, out_dir, {"empty_diff": b"", "oracle": oracle, "stub": stub}, wanted,
                                 score)
    suite = decoy_tests.suite_dir(out_dir)
    if chosen:
        decoy_tests.write_suite(sealed / "hidden_tests", suite, chosen)
        gold = _outcomes(score("decoys-check", oracle, suite, [c.spec for c in chosen],
                               command=_command(meta, chosen, sealed, record, keep=True)))
        collected = list(gold)
        chosen = [c for c in chosen if all(gold.get(d, decoy_tests.Outcome("missing")).outcome == "failed"
                                           for d in decoy_tests.decoy_ids(collected, [c.spec]))]
        decoy_tests.write_suite(sealed / "hidden_tests", suite, chosen)
    record.update(made=len(chosen), tests=decoy_tests.describe(chosen),
                  hidden_command=_command(meta, chosen, sealed, record))
    if chosen:
        record["why_none"] = None
    return decoy_tests.Suite(suite if chosen else None, tuple(c.spec for c in chosen), record["hidden_command"]), \
        record


def _command(meta: dict, chosen: list, sealed: Path, record: dict, keep: bool = False) -> str | None:
    """The hidden command that runs ``chosen`` (None: the task's own runs them), its decoy ids in
    their twins' form (``record``'s trial collection, which it then drops unless ``keep``)."""
    trial = record.get("trial_collected") if keep else record.pop("trial_collected", None)
    cmd = decoy_tests.command_for(meta["hidden_command"], [c.spec for c in chosen], decoy_tests.seed_of(sealed),
                                  trial)
    return None if cmd == meta["hidden_command"] else cmd


def run_controls(sealed: Path, out_dir: Path, oracle_runs: int = 3, timeout_s: float = 300,
                 sandbox_mode: str = "auto", limits: dict | None = None, env: BuiltEnv | None = None,
                 decoys_per_task: int = 2) -> dict:
    """Run every control on one sealed task and write ``controls.json`` (see module docstring).
    ``env``: the task's test environment (its commands run in it; none: sealbench's interpreter).
    ``decoys_per_task``: how many decoys the hidden suite carries (pre-registered)."""
    sealed, out_dir = Path(sealed).resolve(), Path(out_dir).absolute()
    check_snapshot(sealed)   # a repo/ with history: the task is broken (controls infra_fail)
    level, box = scoring_sandbox(sealed, sandbox_mode, limits, env)
    meta = read_json(sealed / "meta.json")
    out_dir.mkdir(parents=True, exist_ok=True)
    stub, stub_path = stub_patch(sealed, meta)
    patches = {"empty_diff": b"", "stub": stub, "oracle": (sealed / "oracle.patch").read_bytes()}
    for name, data in patches.items():
        (out_dir / f"{name}.patch").write_bytes(data)
    task_env = env.command_env() if env else None

    score = scorer(sealed, meta, out_dir, timeout_s, box, task_env)
    chosen, decoy_record = make_decoys(sealed, meta, out_dir, patches, decoys_per_task, score)
    suite = decoy_tests.suite_dir(out_dir)
    plan = [("empty_diff", 1), ("stub", 1)] + [("oracle", i) for i in range(1, oracle_runs + 1)]
    for attempt in range(DECOY_RETRIES + 1):
        if chosen:
            decoy_tests.write_suite(sealed / "hidden_tests", suite, chosen)
        elif suite.parent.exists():
            remove_tree(suite.parent)
        spec = [c.spec for c in chosen]
        command = _command(meta, chosen, sealed, decoy_record, keep=True)
        scored = [(solver, epoch, score(f"{solver}-{epoch}", patches[solver], suite if chosen else None, spec,
                                        commands=("visible", "hidden"), command=command))
                  for solver, epoch in plan]
        # a decoy must fail on every control run; one that did not is dropped and the controls run again
        unsure = {c for c in chosen for _s, _e, res in scored
                  if any(_outcomes(res).get(d, decoy_tests.Outcome("missing")).outcome != "failed"
                         for d in decoy_tests.decoy_ids(res.hidden.report.get("collected") or ()
                                                        if res.hidden else (), [c.spec]))}
        if not unsure or attempt == DECOY_RETRIES:
            break
        for c in unsure:
            decoy_record["rejected"][f"{c.file}::{c.qualname}"] = "it did not fail on every control run"
        chosen = [c for c in chosen if c not in unsure]
    results = []
    for solver, epoch, res in scored:
        results.append({
            "solver": solver, "epoch": epoch, "fingerprint": control_fingerprint(solver),
            "status": res.status, "visible_pass": res.visible_pass, "hidden_pass": res.hidden_pass,
            "reason": res.reason, "patch_bytes": len(patches[solver]),
            "visible_wall_s": res.visible.wall_s if res.visible else None,
            "hidden_wall_s": res.hidden.wall_s if res.hidden else None,
            "log_tail": (res.hidden.log_tail if res.hidden else "")[-1500:],
            "hidden_ran": res.hidden.junit.ran if res.hidden and res.hidden.junit else None,
            "collected": {k: o.report.get("collected") for k, o in (("visible", res.visible), ("hidden", res.hidden))
                          if o is not None},
            "decoys_failed": res.hidden.report.get("decoys_failed") if res.hidden else None,
            "import_outside": res.import_outside,
            "missing_modules": missing_modules(res),
            "workspace": res.workspace,
        })
    oracle_ids = _agreed_ids([r for r in results if r["solver"] == "oracle"])
    decoy_record.update(made=len(chosen), tests=decoy_tests.describe(chosen),
                        ids=decoy_tests.decoy_ids((oracle_ids or {}).get("hidden") or (), [c.spec for c in chosen]),
                        hidden_command=_command(meta, chosen, sealed, decoy_record))
    if chosen:
        decoy_record["why_none"] = None
    elif decoy_record["why_none"] is None:
        decoy_record["why_none"] = "every decoy made was dropped: none failed on every control run"
    # every control failed collecting on a missing module: the task's set-up, not a verdict
    missing = mark_controls(results, env.describe() if env else None)
    oracle = [r for r in results if r["solver"] == "oracle"]
    oracle_passes = sum(r["status"] == PASS for r in oracle)
    record = {
        "task_id": meta["id"],
        "stub_file": stub_path,
        "results": results,
        "oracle_runs": len(oracle),
        "oracle_passes": oracle_passes,
        "oracle_ok": oracle_passes == len(oracle),
        "flaky": len({r["status"] for r in oracle}) > 1,
        "weak_test": any(r["status"] == PASS for r in results if r["solver"] == "empty_diff"),
        "stub_passes": any(r["status"] == PASS for r in results if r["solver"] == "stub"),
        "control_infra_fail": any(r["status"] == INFRA_FAIL for r in results),
        # the package under test imported from outside the workspace ("pkg from path"): the
        # task's environment or import_paths is wrong (refused: TASK_IMPORTS_OUTSIDE)
        "import_outside": next((r["import_outside"] for r in results if r["import_outside"]), None),
        # hidden tests the gold patch ran (decoys excluded): a scored patch must run at least as many
        "oracle_hidden_ran": min((r["hidden_ran"] for r in oracle if r["hidden_ran"] is not None), default=None),
        # the test ids the gold patch's runs collected, per command, where every run agrees
        # (decoys included): a scored patch's run must collect exactly these (else tamper)
        "oracle_ids": oracle_ids,
        # the decoy tests the hidden suite carries (decoys.py): every scored patch must fail them
        "decoys": decoy_record,
        "isolation": level,
        # the scoring workspaces of the controls: overlays over the sealed copy, or copies
        "workspace": next((r["workspace"] for r in results if r.get("workspace")), None),
    }
    if missing:
        record["missing_modules"] = missing
    if env is not None:
        record["environment"] = env_card(env)
    record = write_record(ControlsRecord, out_dir / "controls.json", record)
    return record


def harness_failure(sealed: Path, out_dir: Path, exc: BaseException) -> dict:
    """controls.json for a task whose controls could not run: every control is unknown, so the
    task counts as a broken grader (the gate refuses CONTROL_INFRA_FAIL / ORACLE_FAILED)."""
    try:
        task_id = read_json(Path(sealed) / "meta.json")["id"]
    except Exception:  # noqa: BLE001 - the record must be written whatever broke
        task_id = Path(sealed).parent.parent.name
    record = {
        "task_id": task_id, "stub_file": None, "results": [], "oracle_runs": 0, "oracle_passes": 0,
        "oracle_ok": False, "flaky": False, "weak_test": False, "stub_passes": False, "control_infra_fail": True,
        "oracle_hidden_ran": None, "oracle_ids": None, "isolation": None, "import_outside": None,
        "decoys": {"per_task": None, "made": 0, "tests": [], "why_none": "the controls could not run"},
        "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:],
    }
    record = write_record(ControlsRecord, Path(out_dir) / "controls.json", record)
    return record


def _agreed_ids(oracle: list[dict]) -> dict[str, list[str]] | None:
    """The test ids each command collected in the gold patch's passing runs, when they all agree
    (None: no passing run, or runs that collected different tests)."""
    passing = [r.get("collected") or {} for r in oracle if r.get("status") == PASS]
    out: dict[str, list[str]] = {}
    for cmd in ("visible", "hidden"):
        seen = {tuple(ids) for ids in (c.get(cmd) for c in passing) if ids is not None}
        if len(seen) == 1 and len(passing) == sum(c.get(cmd) is not None for c in passing):
            out[cmd] = list(next(iter(seen)))
    return out or None


def parser() -> argparse.ArgumentParser:
    """This stage's command line; :mod:`sealbench.stages.steps` writes the argv the workflow passes."""
    ap = argparse.ArgumentParser(prog="sealbench.stages.run_dummy", description=__doc__.splitlines()[0])
    ap.add_argument("--sealed", type=Path, required=True)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--oracle-runs", type=int, default=3)
    ap.add_argument("--decoys", type=int, default=2, help="decoy tests per task (config decoys_per_task)")
    add_isolation_args(ap)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    ran = run_guarded("run_dummy",
                      lambda: run_controls(args.sealed, args.out_dir, args.oracle_runs, args.timeout, args.sandbox,
                                           limits_arg(args), env_arg(args), args.decoys),
                      lambda exc: harness_failure(args.sealed, args.out_dir, exc))
    if ran is None:
        return 1
    rec, broke = ran
    if broke:  # the harness broke on this task: recorded; the other tasks go on
        print(f"run_dummy: HARNESS ERROR on {rec['task_id']}: {rec['error']}", file=sys.stderr)
        return 0
    summary = ", ".join(f"{r['solver']}#{r['epoch']}={r['status']}" for r in rec["results"])
    d = rec["decoys"]
    print(f"run_dummy {rec['task_id']}: {summary}; decoys {d['made']}/{d['per_task']}"
          + (f" ({d['why_none']})" if d.get("why_none") else ""))
    for flag in ("weak_test", "flaky", "stub_passes"):
        if rec[flag]:
            print(f"run_dummy {rec['task_id']}: WARNING {flag}", file=sys.stderr)
    if not rec["oracle_ok"]:
        print(f"run_dummy {rec['task_id']}: WARNING the gold patch did not pass every run: the grader is broken "
              "for this task; the gate will refuse a headline", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
