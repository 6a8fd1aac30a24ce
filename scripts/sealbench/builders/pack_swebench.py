"""``sealbench pack import-swebench INSTANCES.jsonl --repos DIR``: a pack from SWE-bench-style
instances and local clones, every task verified by sealbench's own scoring (docs/packs.md,
"From SWE-bench-style instances").

Per instance (``swebench_instances.read_instances``, every line checked before any work), a task
``tasks/<instance_id>/`` with ``"tests_layout": "repo"``:

- ``repo/``: the files of ``base_commit`` in the local clone (``swebench_git.snapshot``; no
  ``.git``, never the network) without the test files the ``test_patch`` touches;
- ``hidden_tests/``: those files after the ``test_patch``, at their repository paths; the hidden
  command runs every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` id (``failing_tests``: the
  ``FAIL_TO_PASS`` count);
- ``visible_tests/``: the ones that exist at the base, as they are there; the visible command
  runs the ``PASS_TO_PASS`` ids defined in them (none: the files whole);
- ``support_files``: the other ``.py`` files of the test folders touched and every
  ``conftest.py`` from there up to the root (protected: the tests import them);
- ``oracle.patch``: ``patch`` (it must apply at the base); ``prompt.md``: ``problem_statement``
  only; the stratum from the fix's size (:data:`STRATUM_MAX_LINES`);
- ``"environment"``: ``environments/<owner>__<name>-<version|base>/`` per repository and version,
  its requirements detected at the base commit of its first instance (or ``--requirements``).

An instance that cannot be a task (a patch that does not apply, no test that exists at the base,
an id pytest cannot run, a test_patch that deletes files) is refused, named, with why; a task
that does not verify (``pack_common.verify_task``: the empty diff must fail, the oracle pass)
is removed and reported. A missing clone or base commit stops the import before any work.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..core.config_sources import add_config_args, config_of
from ..core.core import SealbenchError, harness_env
from ..isolation.sandbox import MODES as SANDBOX_MODES
from .pack_common import FailFast, TaskCheck, pytest_command, removal_cause
from .pack_requirements import detect_requirements, plugin_modules, pytest_addopts, read_requirements_file
from .swebench_git import GitError, apply_patch, changed_lines, find_clone, has_commit, patch_paths, snapshot
from .swebench_instances import Instance, read_instances, test_defined, test_file, test_id_problem

#: The largest fix (lines added + removed by ``patch``) of each stratum, smallest first; the
#: last stratum of the config takes every larger fix. With strata [xs, s, m]: ≤ 3, ≤ 10, more.
STRATUM_MAX_LINES = (3, 10, 30, 100)
DEFAULT_TIME_BOX_S = 3600
DENYLIST_NOTE = ("# Imported from public SWE-bench-style instances: a model may have seen these issues and "
                 "their fixes;\n# the leak check cannot catch a memorised public fix. A headline on this pack "
                 "is a public-benchmark number.\n")


class Refused(SealbenchError):
    """An instance that cannot become a task; the message says why."""


def stratum_for(lines: int, strata: list[str]) -> str:
    """The stratum of a fix of ``lines`` changed lines (:data:`STRATUM_MAX_LINES`)."""
    if not strata:
        raise SealbenchError("the config's 'strata' is empty; name at least one stratum")
    if len(strata) > len(STRATUM_MAX_LINES) + 1:
        raise SealbenchError(f"the config names {len(strata)} strata; import-swebench sizes fixes into at most "
                             f"{len(STRATUM_MAX_LINES) + 1} (≤ {', ≤ '.join(map(str, STRATUM_MAX_LINES))}, more)")
    for name, most in zip(strata, STRATUM_MAX_LINES):
        if lines <= most and name != strata[-1]:
            return name
    return strata[-1]


def locate_sources(instances: list[Instance], clones: Path) -> dict[str, Path]:
    """The clone of every repository, every base commit in it; else one error naming them all."""
    found, problems = {}, []
    for inst in instances:
        if inst.repo not in found:
            try:
                found[inst.repo] = find_clone(clones, inst.repo)
            except GitError as exc:
                found[inst.repo] = None
                problems.append(f"instance {inst.instance_id} (line {inst.line}): {exc}")
        clone = found[inst.repo]
        if clone is not None and not has_commit(clone, inst.base_commit):
            problems.append(f"instance {inst.instance_id} (line {inst.line}): base_commit {inst.base_commit} is not in "
                            f"the clone {clone}; update the clone (git fetch) — sealbench never fetches")
    if problems:
        raise SealbenchError("the instances cannot be imported; nothing was written:\n  " + "\n  ".join(problems))
    return found


@dataclass
class TaskPlan:
    """One task's folder contents, before it is written."""

    id: str
    meta: dict
    prompt: str
    repo: Path
    visible: dict[str, str]
    hidden: dict[str, str]
    oracle: str
    visible_args: list[str] = field(default_factory=list)   # the visible command's test ids or files
    hidden_args: list[str] = field(default_factory=list)

    def name_plugins(self, plugins: list[str]) -> None:
        """Both commands with the pytest plugins (modules) named: autoload is off in sealbench."""
        self.meta["visible_command"] = pytest_command(plugins, self.visible_args)
        self.meta["hidden_command"] = pytest_command(plugins, self.hidden_args)


def _text(path: Path, what: str) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{what} {path.name} is not UTF-8 text ({exc.reason}); test trees hold text files") from exc


def support_files(repo: Path, test_files: list[str], oracle_paths: set[str]) -> list[str]:
    """The files the tests import that stay in ``repo/``: the non-test ``.py`` files of each test
    folder touched, and every ``conftest.py`` from those folders up to the root; never a file the
    fix changes."""
    out: set[str] = set()
    folders = {PurePosixPath(f).parent for f in test_files}
    for folder in folders:
        for p in sorted((repo / folder).glob("*.py")) if (repo / folder).is_dir() else []:
            if not (p.name.startswith("test_") or p.stem.endswith("_test")):
                out.add((folder / p.name).as_posix())
        for up in [folder, *folder.parents]:
            if (repo / up / "conftest.py").is_file():
                out.add((up / "conftest.py").as_posix())
    return sorted(p.removeprefix("./") for p in out if p.removeprefix("./") not in oracle_paths)


def _loc(repo: Path) -> int:
    return sum(len(p.read_bytes().splitlines()) for p in repo.rglob("*.py") if p.is_file())


def plan_task(inst: Instance, clone: Path, work: Path, strata: list[str], time_box_s: int) -> TaskPlan:
    """The task of one instance, built in ``work`` (a fresh folder); :class:`Refused` with why."""
    base, post, repo = work / "base", work / "post", work / "repo"
    snap = snapshot(clone, inst.base_commit, base)
    try:
        touched, fix = patch_paths(inst.test_patch), patch_paths(inst.patch)
    except ValueError as exc:
        raise Refused(f"patch or test_patch is not a unified diff ({exc})") from exc
    if touched.deleted:
        raise Refused(f"the test_patch deletes or renames {', '.join(touched.deleted)}; tests at repository paths "
                      "can add and change files, not remove them")
    tests = sorted(set(touched.changed) | set(touched.added))
    if not tests:
        raise Refused("the test_patch changes no file")
    why = apply_patch(base, inst.patch, check_only=True)
    if why:
        raise Refused(f"the patch does not apply with git apply at base_commit {inst.base_commit[:12]}: {why}")
    shutil.copytree(base, post)
    why = apply_patch(post, inst.test_patch)
    if why:
        raise Refused(f"the test_patch does not apply with git apply at base_commit {inst.base_commit[:12]}: {why}")
    fix_paths = set(fix.changed) | set(fix.added) | set(fix.deleted)
    if fix_paths & set(tests):
        raise Refused(f"the patch changes test files the test_patch also changes ({', '.join(sorted(fix_paths & set(tests)))})")
    ids = inst.fail_to_pass + inst.pass_to_pass
    post_files = {p.relative_to(post).as_posix() for p in post.rglob("*") if p.is_file()}
    for tid in ids:
        why = test_id_problem(tid, post_files)
        if why:
            raise Refused(why)
    at_base = [f for f in tests if (base / f).is_file()]
    if not at_base:
        raise Refused(f"no test can be visible: the test_patch only adds files ({', '.join(tests)}), "
                      "none of which exists at the base commit")
    visible = {f: _text(base / f, "visible test file") for f in at_base}
    hidden = {f: _text(post / f, "hidden test file") for f in tests}
    shutil.copytree(base, repo)
    for f in at_base:
        (repo / f).unlink()
    seen = [t for t in inst.pass_to_pass if test_file(t) in visible and test_defined(t, visible[test_file(t)])]
    size = changed_lines(inst.patch)
    created = f", created_at {inst.created_at}" if inst.created_at else ""
    title = next((ln.strip() for ln in inst.problem_statement.splitlines() if ln.strip()), inst.instance_id)
    meta = {
        "id": inst.instance_id, "title": title, "stratum": stratum_for(size, strata), "language": "python",
        "time_box_sec": int(time_box_s), "visible_command": pytest_command([], seen or at_base),
        "hidden_command": pytest_command([], list(ids)),
        "failing_tests": len(inst.fail_to_pass), "loc": _loc(repo),
        "notes": (f"imported from SWE-bench-style instance {inst.instance_id} of {inst.repo}@{inst.base_commit[:12]}"
                  f"{created}; fix: {size} changed lines"),
        "tests_layout": "repo", "support_files": support_files(repo, tests, fix_paths),
        "environment": inst.env_name,
    }
    if not meta["support_files"]:
        del meta["support_files"]
    if snap.left_out:
        meta["notes"] += f"; not in repo/ (symlinks, submodules): {', '.join(snap.left_out)}"
    prompt = inst.problem_statement if inst.problem_statement.endswith("\n") else inst.problem_statement + "\n"
    return TaskPlan(inst.instance_id, meta, prompt, repo, visible, hidden, inst.patch, seen or at_base, list(ids))


# ---------------------------------------------------------------------------------------------
# The whole import


@dataclass
class Outcome:
    """What became of one instance."""

    id: str
    status: str                  # imported | refused | not verified
    stratum: str | None = None
    fix_lines: int | None = None
    why: str | None = None
    decoys: int | None = None    # decoy tests the pipeline's controls can make for it (imported ones)


def requirement_overrides(pairs: list[str], instances: list[Instance]) -> dict[str, Path]:
    """``--requirements REPO=FILE`` pairs, each naming a repository of the instances and a file."""
    out, repos = {}, {i.repo for i in instances}
    for pair in pairs:
        repo, sep, file = pair.partition("=")
        if not sep or not file:
            raise SealbenchError(f"--requirements {pair!r}: write it REPO=FILE, e.g. acme/mathlib=reqs.txt")
        if repo not in repos:
            raise SealbenchError(f"--requirements {pair!r}: no instance is of {repo} (they are of "
                                 f"{', '.join(sorted(repos))})")
        if not Path(file).is_file():
            raise SealbenchError(f"--requirements {pair!r}: {file} is not a file")
        from ..isolation.environments import env_from_requirements

        req = read_requirements_file(Path(file), Path(file).parent, "")
        env_from_requirements(req.text(), Path(file), "override")  # a line pip cannot take offline: named
        out[repo] = Path(file)
    return out


def declare_env(pack: Path, inst: Instance, plan: TaskPlan, base: Path, override: Path | None,
                env_root: Path, sandbox: str = "auto") -> list[str]:
    """Write ``environments/<env_name>/requirements.txt``, detected at this instance's base (or
    the override); returns the ``-p`` modules of the pytest plugins it names (the environment is
    built under ``env_root`` to find them, as verification builds it anyway)."""
    from ..isolation import environments

    support = [(plan.repo / f).read_text("utf-8", "replace") for f in plan.meta.get("support_files", [])]
    test_text = "\n".join([*plan.visible.values(), *plan.hidden.values(), *support])
    req = (read_requirements_file(override, base, test_text) if override is not None
           else detect_requirements(base, test_text))
    target = pack / environments.NAMED_DIR / inst.env_name / environments.REQUIREMENTS
    spec = environments.env_from_requirements(req.text(), override or target, inst.env_name)  # bad lines: named
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(req.text(), encoding="utf-8")
    if not req.plugins:
        return []
    built = environments.build_env(spec, env_root, sandbox=sandbox)
    return plugin_modules(str(built.python), req.plugins, harness_env(built.command_env()))


@dataclass
class Options:
    """What ``sealbench pack import-swebench`` was asked."""

    instances: Path
    repos: Path
    out: Path
    strata: list[str]
    requirements: list[str] = field(default_factory=list)    # REPO=FILE
    time_box: int = DEFAULT_TIME_BOX_S
    env_root: Path = Path("results/envs")
    sandbox: str = "auto"
    test_timeout: float = 300


def import_swebench(opts: Options, log=print) -> list[Outcome]:
    """Import every instance into ``opts.out`` (see the module docstring); one :class:`Outcome`
    per instance."""
    from ..isolation.environments import EnvironmentBuildError
    from .pack_common import PackBuildError, TaskFiles, verify_task, write_task

    instances = read_instances(opts.instances)
    overrides = requirement_overrides(list(opts.requirements), instances)
    pack = Path(opts.out)
    there = [i.instance_id for i in instances if (pack / "tasks" / i.instance_id).exists()]
    if there:
        raise SealbenchError(f"{pack}/tasks/ already holds {', '.join(there)}; nothing was written. Import into "
                             "another pack, or remove those folders first")
    clones_of = locate_sources(instances, opts.repos)
    (pack / "tasks").mkdir(parents=True, exist_ok=True)
    deny = pack / "denylist.txt"
    old = deny.read_text(encoding="utf-8") if deny.is_file() else ""
    if DENYLIST_NOTE not in old:
        deny.write_text(old + ("\n" if old and not old.endswith("\n") else "") + DENYLIST_NOTE, encoding="utf-8")
    outcomes: list[Outcome] = []
    plugins: dict[str, list[str]] = {}   # per environment, from its first instance
    stop = FailFast()                    # the first instances all removed for one cause: said, and stopped
    for inst in instances:
        size = changed_lines(inst.patch)
        with tempfile.TemporaryDirectory(prefix="sealbench-swe-") as tmp:
            try:
                plan = plan_task(inst, clones_of[inst.repo], Path(tmp), opts.strata, opts.time_box)
                if inst.env_name not in plugins:
                    plugins[inst.env_name] = declare_env(pack, inst, plan, Path(tmp) / "base",
                                                         overrides.get(inst.repo), opts.env_root, opts.sandbox)
                plan.name_plugins(plugins[inst.env_name])
                stop.config = pytest_addopts(Path(tmp) / "base")
                write_task(pack, TaskFiles(plan.id, plan.meta, plan.prompt, plan.repo, plan.visible, plan.hidden,
                                           plan.oracle), opts.strata)
            except (Refused, PackBuildError, EnvironmentBuildError) as exc:
                shutil.rmtree(pack / "tasks" / inst.instance_id, ignore_errors=True)
                outcomes.append(Outcome(inst.instance_id, "refused", None, size, str(exc)))
                log(f"{inst.instance_id}: refused: {exc}")
                continue
        try:
            check = verify_task(pack, inst.instance_id, timeout_s=opts.test_timeout, sandbox_mode=opts.sandbox,
                                env_root=opts.env_root, visible_may_pass=True)
        except EnvironmentBuildError as exc:
            check = TaskCheck(inst.instance_id, False, reason=str(exc))
        if not check.ok:
            shutil.rmtree(pack / "tasks" / inst.instance_id)
            outcomes.append(Outcome(inst.instance_id, "not verified", plan.meta["stratum"], size, check.reason))
            log(f"{inst.instance_id}: removed, it does not verify: {check.reason}")
            sentence = stop.removed(removal_cause(check))
            if sentence:
                _drop_unused_envs(pack, set(plugins))
                raise PackBuildError(f"{opts.instances}: {sentence}")
            continue
        stop.kept_one()
        outcomes.append(Outcome(inst.instance_id, "imported", plan.meta["stratum"], size,
                                None if check.decoys else check.decoys_why_none, check.decoys))
        log(f"{inst.instance_id}: imported ({plan.meta['stratum']}, {size} changed lines), verified")
    _drop_unused_envs(pack, set(plugins))
    return outcomes


def _drop_unused_envs(pack: Path, declared: set[str]) -> None:
    """Remove the environments this import declared that no task of the pack names."""
    import json

    from ..isolation.environments import NAMED_DIR

    used = {json.loads(m.read_text("utf-8")).get("environment") for m in (pack / "tasks").glob("*/meta.json")}
    for name in declared - used:
        shutil.rmtree(pack / NAMED_DIR / name, ignore_errors=True)


def summary_table(outcomes: list[Outcome], pack: Path):
    """The import in one rich table."""
    from rich.table import Table

    kept = sum(o.status == "imported" for o in outcomes)
    table = Table(title=f"{pack}: {kept} of {len(outcomes)} instances imported and verified")
    for col in ("instance", "status", "stratum", "fix lines", "why not"):
        table.add_column(col, overflow="fold")
    for o in outcomes:
        color = {"imported": "green", "refused": "red"}.get(o.status, "yellow")
        table.add_row(o.id, f"[{color}]{o.status}[/{color}]", o.stratum or "—",
                      "—" if o.fix_lines is None else str(o.fix_lines), o.why or "")
    return table


def cmd_import(args: argparse.Namespace) -> int:
    """``sealbench pack import-swebench``: exit 0 when every instance became a verified task, 1
    when some were refused or removed (the pack holds the others)."""
    from rich.console import Console

    out = args.out or Path("packs") / Path(args.instances).stem
    opts = Options(args.instances, args.repos, out, list(config_of(args)["strata"]), args.requirements or [],
                   args.time_box, Path(args.env_root), args.sandbox, args.test_timeout)
    outcomes = import_swebench(opts, log=lambda line: print(line, file=sys.stderr))
    Console().print(summary_table(outcomes, out))
    kept = sum(o.status == "imported" for o in outcomes)
    print(f"{out}: {kept} of {len(outcomes)} instances imported and verified")   # one line, whatever the width
    covered = [o for o in outcomes if o.status == "imported" and o.decoys]
    if kept:
        bare = sorted(o.id for o in outcomes if o.status == "imported" and not o.decoys)
        print(f"decoys: {len(covered)} of {kept} imported tasks carry decoy tests ({100 * len(covered) / kept:.0f}%)"
              + (f"; none for {', '.join(bare[:8])}{' …' if len(bare) > 8 else ''}" if bare else ""))
    print(f"{out}/denylist.txt: these instances are public; see docs/packs.md before quoting a headline")
    return 0 if all(o.status == "imported" for o in outcomes) else 1


def add_parser(pack_sub: argparse._SubParsersAction) -> None:
    """``import-swebench`` under ``sealbench pack``."""
    p = pack_sub.add_parser("import-swebench", help="a verified pack from SWE-bench-style instances and local clones")
    p.add_argument("instances", type=Path, metavar="INSTANCES.jsonl")
    p.add_argument("--repos", type=Path, required=True, metavar="DIR",
                   help="local clones: DIR/<owner>__<name>, DIR/<name> or DIR/<owner>/<name> (never the network)")
    p.add_argument("--out", type=Path, default=None, metavar="PACK",
                   help="the pack to write into (default: packs/<INSTANCES stem>)")
    p.add_argument("--requirements", action="append", metavar="REPO=FILE",
                   help="the requirements of REPO's tasks from FILE instead of detecting them (repeatable)")
    p.add_argument("--time-box", type=int, default=DEFAULT_TIME_BOX_S, metavar="S",
                   help=f"time_box_sec of every task (default {DEFAULT_TIME_BOX_S})")
    p.add_argument("--test-timeout", type=float, default=300, help="seconds per command when verifying (default 300)")
    p.add_argument("--env-root", default="results/envs", help="where environments are built (default results/envs)")
    p.add_argument("--sandbox", default="auto", choices=SANDBOX_MODES)
    add_config_args(p)
    p.set_defaults(func=cmd_import)
