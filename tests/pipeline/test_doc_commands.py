"""Every command the docs show runs as written (issue 27, point 4).

The commands are read out of README.md, config/README.md and docs/*.md: the lines of fenced
blocks that start with a command (or a `$ ` prompt), and the inline `code` spans that start with
`snakemake `, `sealbench `, `.venv/bin/` or `python -m sealbench`. Each is

- parsed by bash (`bash -n`), and by the real parser of its program: Snakemake's (every rule a
  command names must end up a target, not the value of a list option such as `--configfile`)
  or sealbench's (every subcommand and option a command or a synopsis line shows exists);
- run: `sealbench` and `python -m sealbench.…` commands as written (or with the one placeholder
  filled in, as listed in RUN) in a copy of the repository's files with a decided experiment in
  `results/`, and every `snakemake` command as its dry run (`-n`) there, one per argument shape;
  a block that changes folder (`cd`) runs as one script;
- or listed in ALLOWED with the reason it cannot run here.

A command the docs gain that is neither run nor listed fails
`test_every_doc_command_is_run_checked_or_allowed`.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))

from test_gate_refusals import build_spec, write_experiment  # noqa: E402

from packgen import make_pack  # noqa: E402
from sealbench.app import cli  # noqa: E402
from sealbench.gate import gate  # noqa: E402

DOC_FILES = (ROOT / "README.md", ROOT / "config" / "README.md", *sorted((ROOT / "docs").glob("*.md")))

#: Inline spans that are commands start with one of these.
INLINE_STARTS = ("snakemake ", "sealbench ", ".venv/bin/", "python -m sealbench", "python3 -m sealbench")
#: A line of a fenced block is a command when its first word is one of these (or it has a `$ ` prompt).
BLOCK_WORDS = {"sealbench", "snakemake", "python", "python3", "pip", "mkdir", "cd", "cp", "bash", "sh", "git"}
#: Blocks of data, not commands.
DATA_LANGS = {"yaml", "yml", "json", "toml", "text"}
#: A placeholder the reader fills in: an upper-case word (PACK, N, K=V, EXP_DIR, INSTANCES.jsonl),
#: an optional part in brackets, alternatives, an ellipsis, an angle-bracketed or starred name.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*(?:$|[=.])|[\[\]…|<>*]|\.\.\.")


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    text: str  # one simple command: a `&&` chain split, the `$ ` prompt and the trailing comment dropped
    line: str  # the whole command line (the chain) it is part of
    block: str  # the whole fenced block it is in ("" for an inline span)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _strip_comment(line: str) -> str:
    return re.sub(r"\s+#\s.*$", "", line).strip()


def _simple(line: str) -> list[str]:
    return [part.strip() for part in re.split(r"\s&&\s", line) if part.strip()]


@functools.cache
def doc_commands() -> tuple[DocCommand, ...]:
    out: list[DocCommand] = []
    fence = re.compile(r"^(`{3,})([\w-]*)\n(.*?)^\1[ \t]*$", re.S | re.M)
    for path in DOC_FILES:
        text = path.read_text()
        for m in fence.finditer(text):
            lang, body = m.group(2).lower(), m.group(3)
            if lang in DATA_LANGS:
                continue
            first = text[:m.start(3)].count("\n") + 1
            lines = body.splitlines()
            i = 0
            while i < len(lines):
                raw, n = lines[i], i
                i += 1
                prompt = raw.startswith("$ ")
                line = raw[2:] if prompt else raw
                words = line.split()
                if not words or not (prompt or words[0] in BLOCK_WORDS or words[0].startswith(".venv/bin/")):
                    continue
                line = _strip_comment(line)
                # continued: a trailing backslash, or (a synopsis) the next line indented under it
                while i < len(lines) and (line.endswith("\\") or (lines[i][:1] == " " and lines[i].strip())):
                    line = line.rstrip("\\").rstrip() + " " + _strip_comment(lines[i])
                    i += 1
                for part in _simple(line):
                    out.append(DocCommand(f"{_rel(path)}:{first + n}", part, line, body))
        prose = fence.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for m in re.finditer(r"(?<!`)`([^`]+)`(?!`)", prose):
            span = " ".join(m.group(1).split())
            if span.startswith(INLINE_STARTS):
                where = f"{_rel(path)}:{prose[:m.start()].count(chr(10)) + 1}"
                for part in _simple(span):
                    out.append(DocCommand(where, part, span, ""))
    return tuple(out)


def words(text: str) -> list[str]:
    return shlex.split(text)


def program(text: str) -> str:
    """snakemake, sealbench, python-sealbench (python -m sealbench.X) or the first word."""
    w = words(text)
    head = w[0].removeprefix(".venv/bin/")
    if head in ("python", "python3") and len(w) > 2 and w[1] == "-m":
        if w[2] == "snakemake":
            return "snakemake"
        if w[2] == "sealbench.app.cli":
            return "sealbench"
        if w[2].startswith("sealbench"):
            return "python-sealbench"
    return head


def args_of(text: str) -> list[str]:
    w = words(text)
    return w[3:] if w[0].removeprefix(".venv/bin/") in ("python", "python3") and w[1:2] == ["-m"] else w[1:]


def has_placeholder(text: str) -> bool:
    return any(PLACEHOLDER.search(w) for w in words(text)[1:])


# ------------------------------------------------------------------ what is run, what is not

#: Commands run as written in the prepared project folder (see ``workdir``): doc text ->
#: (the command run, when a placeholder must be filled in, else None; the exit codes the doc
#: promises; a fragment the output must hold).
RUN: dict[str, tuple[str | None, set[int], str]] = {
    "sealbench validate": (None, {0}, "power:"),
    "sealbench validate --configfile my.yaml": (None, {0}, "power:"),  # my.yaml: config/README.md's example
    "sealbench show": (None, {0}, "Tasks won by"),
    ".venv/bin/sealbench show": (None, {0}, "Tasks won by"),
    "sealbench list": (None, {0}, "decided (UTC)"),
    "sealbench list results": (None, {0}, "decided (UTC)"),
    "sealbench check": (None, {0, 1}, ""),  # exit 0 only if publishable
    # the prepared results/ was decided for a small pack, not the bundled config progress reads:
    # it says results/latest is another config's experiment (tests/app/test_latest_and_try.py checks the words)
    "sealbench progress": (None, {0}, "decision: results/latest is experiment"),
    "sealbench list [results]": ("sealbench list results", {0}, "decided (UTC)"),
    "sealbench show [EXPERIMENT]": ("sealbench show results/latest", {0}, "Tasks won by"),
    "python -m sealbench.core.results_index [results]": ("python -m sealbench.core.results_index results", {0}, ""),
    "python -m sealbench.report.report_html EXP_DIR": ("python -m sealbench.report.report_html results/latest", {0}, ""),
    "sealbench COMMAND --help": ("sealbench --help", {0}, "usage: sealbench"),
}

_SESSION = ("needs the open session `session start` opens from a terminal (a person, the sealed shell); "
            "tests/app/test_session.py and tests/app/test_session_shell.py run it")
#: Commands that cannot run here, each with the reason. Reviewed: add a command only with a reason.
ALLOWED: dict[str, str] = {
    # installing, and the test suite itself
    "python3 -m venv .venv": "creates the venv the test suite already runs in; .ci/run runs it on a fresh clone",
    ".venv/bin/pip install -q -e .":
        "installs from the package registry (network); .ci/run installs the same with [test]",
    ".venv/bin/pip install -q -e '.[test]'": "installs from the package registry (network); .ci/run runs it verbatim",
    ".venv/bin/python -m pytest": "the whole test suite (30+ minutes); .ci/run runs it verbatim (tests/repo/test_docs.py)",
    # a real agent run, a person's session
    ".venv/bin/sealbench try repair xs03-cargo-amount-whitespace":
        "a sealed, scored agent run (sandbox, the task's clock); tests/app/test_try.py runs `try` on a generated pack",
    "sealbench session start xs01-band-boundary --role human --who ana":
        "opens the interactive sealed shell for a person; tests/app/test_session.py starts sessions",
    'sealbench session steer "got a hint about the tariff bands"': _SESSION,
    "sealbench session check": _SESSION,
    "sealbench session status": _SESSION,
    "sealbench session submit": _SESSION,
    "sealbench session shell": _SESSION,
    "python -m sealbench.testing.fake_llm --port 8000 --mode tool --script cmds.json":
        "serves until killed, with a script the reader writes; tests/stages/test_mini_agent.py runs it",
    # clusters, long benchmarks
    "snakemake --profile profiles/slurm gate":
        "needs snakemake-executor-plugin-slurm (the `cluster` extra, kept out of this venv: its import waits for a "
        "SLURM controller) and a submit node; bench/slurm_single_node.py runs it on a one-node cluster",
    "snakemake --profile profiles/kubernetes gate":
        "a template: needs the kubernetes executor and S3 storage plugins, an image, a bucket (FILL_IN_ values)",
    "python bench/slurm_single_node.py":
        "sets up a SLURM cluster as root (11 to 30 min); tests/pipeline/test_slurm_single_node.py runs it",
    "python bench/slurm_single_node.py --stop": "stops the daemons a `--keep` run of the bench left",
    "snakemake --report report.html --forceall gate":
        "reports on a finished run's outputs (no dry-run form: it fails on the missing decision.json)",
    # templates and elisions in prose
    "snakemake --config key=value": "a template (key and value stand for any config key); the `--config` shape is "
                                    "dry-run by docs/packs.md's humanize block",
    "snakemake ... gate": "an elision (any snakemake command line ending in gate)",
    "python -m sealbench.stages.<stage>": "a template: every stage module, run by the rules (tests/stages/test_stages.py)",
    "python -m sealbench.agents.*": "a template: the built-in agents",
}


def snakemake_targets_known() -> set[str]:
    rules = set()
    for smk in [ROOT / "Snakefile", *(ROOT / "workflow" / "rules").glob("*.smk")]:
        rules |= set(re.findall(r"^rule (\w+):", smk.read_text(), re.M))
    return rules


def is_script_block(cmd: DocCommand) -> bool:
    """A block that changes folder runs as one script (its commands depend on each other)."""
    return bool(cmd.block) and any(program(c.text) == "cd" for c in doc_commands() if c.block == cmd.block)


def sealbench_walk(argv: list[str]) -> tuple[list[str], list[str]]:
    """The subcommand path ``argv`` names and the problems: an unknown subcommand or option."""
    import argparse

    parser, path, problems = cli.build_parser(), [], []
    for w in argv:
        w = w.strip("[]")
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if subs and re.fullmatch(r"[a-z][a-z-]*(\|[a-z][a-z-]*)*", w):
            alts = w.split("|")
            missing = [a for a in alts if a not in subs[0].choices]
            if missing:
                problems.append(f"no subcommand {' '.join(['sealbench', *path])} {missing[0]}")
                break
            path.append(w)
            parser = subs[0].choices[alts[0]]
        elif w.startswith("-"):
            opt = w.split("=")[0]
            if opt not in parser._option_string_actions:
                problems.append(f"`{' '.join(['sealbench', *path])}` has no option {opt}")
    return path, problems


def is_mention(cmd: DocCommand) -> bool:
    """`sealbench try`, `sealbench pack`, `python -m sealbench.agents.repair`: the name of a command
    in prose (checked to exist), not a command line."""
    prog, argv = program(cmd.text), args_of(cmd.text)
    if prog == "sealbench":
        path, problems = sealbench_walk(argv)
        return not problems and len(path) == len(argv) and not any("|" in w or "…" in w for w in argv)
    if prog == "python-sealbench":
        return not argv
    return False


def verdict(cmd: DocCommand) -> str:
    if cmd.text in ALLOWED:
        return "allowed"
    if is_script_block(cmd):
        return "script"
    prog = program(cmd.text)
    if prog == "snakemake":
        return "dry-run"
    if cmd.text in RUN:
        return "run"
    if is_mention(cmd):
        return "mention"
    if prog == "sealbench" and has_placeholder(cmd.text):
        return "synopsis"  # its subcommands and options are checked against the parser
    return "unclassified"


@pytest.mark.unit
def test_the_docs_show_commands_of_every_kind() -> None:
    """The extraction finds what the docs show (so the tests below cannot pass on nothing)."""
    texts = {c.text for c in doc_commands()}
    for expected in ("sealbench validate", ".venv/bin/snakemake --cores 4 gate", "sealbench list results",
                     "sealbench hash PACK", "snakemake --profile profiles/local gate"):
        assert expected in texts, expected
    assert any(c.text.startswith("snakemake") and "--configfile my.yaml" in c.text for c in doc_commands())


@pytest.mark.unit
def test_every_doc_command_is_run_checked_or_allowed() -> None:
    bad = [f"{c.where}: {c.text}" for c in doc_commands() if verdict(c) == "unclassified"]
    assert not bad, ("commands in the docs that this test neither runs nor checks: run them (RUN) or list them "
                     "with a reason (ALLOWED):\n  " + "\n  ".join(bad))
    texts = {c.text for c in doc_commands()}
    stale = sorted(k for k in [*RUN, *ALLOWED] if k not in texts)
    assert not stale, f"RUN/ALLOWED list commands the docs no longer show: {stale}"


# ---------------------------------------------------------------------------- parse checks

@pytest.mark.pipeline
def test_every_doc_command_parses_in_bash() -> None:
    bad = []
    for line in sorted({c.line for c in doc_commands()}):
        script = re.sub(r"<(\w+)>", r"\1", line)  # a placeholder in angle brackets is one word
        res = subprocess.run(["bash", "-n", "-c", script], capture_output=True, text=True)
        if res.returncode:
            bad.append(f"{line}\n    {res.stderr.strip()}")
    assert not bad, "bash cannot parse:\n  " + "\n  ".join(bad)


@functools.cache
def snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


def snakemake_parse(argv: list[str]) -> tuple[object | None, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            return snakemake_parser().parse_args(argv), ""
        except SystemExit:
            return None, err.getvalue().strip().splitlines()[-1]


@pytest.mark.unit
def test_every_snakemake_command_parses_with_snakemakes_parser_and_keeps_its_targets() -> None:
    """`snakemake --cores 4 --configfile my.yaml gate`: `--configfile` takes one or more files, so
    argparse reads `gate` as a second config file and the run has no target (then fails with a
    FileNotFoundError for 'gate'); `--config k=v gate` the same. Every rule a doc command names
    must end up a target."""
    rules, bad = snakemake_targets_known(), []
    cmds = [c for c in doc_commands() if program(c.text) == "snakemake" and c.text not in
            ("snakemake ... gate", "snakemake --config key=value")]
    assert len(cmds) >= 10
    for c in cmds:
        argv = args_of(c.text)
        args, err = snakemake_parse(argv)
        if args is None:
            bad.append(f"{c.where}: {c.text}: {err}")
            continue
        named = [w for w in argv if w in rules]
        swallowed = [w for w in named if w not in (args.targets or [])]
        if swallowed:
            bad.append(f"{c.where}: {c.text}: {swallowed} read as an option's value, not a target "
                       f"(put the target before the option, or write --option=value)")
    assert not bad, "\n  ".join(["snakemake commands its parser reads otherwise:", *bad])


@pytest.mark.unit
def test_the_parse_check_catches_a_target_swallowed_by_a_list_option() -> None:
    """The check above fails on the command config/README.md used to show, and passes its fix."""
    rules = snakemake_targets_known()
    for argv, ok in ((["--cores", "4", "--configfile", "my.yaml", "gate"], False),
                     (["--cores", "4", "gate", "--configfile", "my.yaml"], True),
                     (["--cores", "4", "--configfile=my.yaml", "gate"], True),
                     (["--cores", "2", "--config", "pack=/tmp/p", "gate"], False),
                     (["--cores", "2", "gate", "--config", "pack=/tmp/p"], True)):
        args, _ = snakemake_parse(argv)
        assert args is not None
        assert all(w in args.targets for w in argv if w in rules) == ok, argv


def synopsis_argv(argv: list[str]) -> list[str] | None:
    """The command line a synopsis stands for with every optional part given: brackets dropped, a
    `…` repetition dropped (an option's elided value kept as a word); None for alternatives
    (`start|check`) or an elided rest (`session …`), which are only walked."""
    if any("|" in w for w in argv) or argv[-1:] == ["…"]:
        return None
    out: list[str] = []
    for w in argv:
        bare = w.strip("[]")
        if bare == "…":
            if out and out[-1].startswith("--"):
                out.append("X")
            continue
        out.append(bare)
    return out


def takes_subcommand(path: list[str]) -> bool:
    """Whether ``sealbench PATH`` is followed by a subcommand (``path`` as sealbench_walk gives it)."""
    import argparse

    parser = cli.build_parser()
    for w in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[w.split("|")[0]]
    return any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def untyped_sealbench_parser():
    """sealbench's parser with the types and choices of its arguments lifted, so placeholders parse."""
    import argparse

    ap = cli.build_parser()
    stack = [ap]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            else:
                action.type, action.choices = None, None
    return ap


def sealbench_parse_error(parser, argv: list[str]) -> str:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code:
                return err.getvalue().strip().splitlines()[-1]
    return ""


@pytest.mark.sandbox
def test_every_sealbench_command_names_real_subcommands_and_options() -> None:
    """Every subcommand and option shown exists; a command line parses as written; a synopsis
    line parses with its placeholders as words and every optional part given (so a required
    argument it leaves out, or an option's value it forgets, shows)."""
    bad = []
    for c in doc_commands():
        if program(c.text) != "sealbench" or is_mention(c):
            continue
        argv = args_of(c.text)
        path, problems = sealbench_walk(argv)
        bad += [f"{c.where}: {c.text}: {p}" for p in problems]
        if problems:
            continue
        if not has_placeholder(c.text):
            err = sealbench_parse_error(cli.build_parser(), argv)
        elif takes_subcommand(path):
            err = ""  # `sealbench COMMAND --help`: the placeholder stands for any subcommand
        elif (full := synopsis_argv(argv)) is not None:
            err = sealbench_parse_error(untyped_sealbench_parser(), full)
        else:
            err = ""
        if err:
            bad.append(f"{c.where}: {c.text}: {err}")
    assert not bad, "sealbench commands its parser refuses:\n  " + "\n  ".join(bad)


@pytest.mark.unit
def test_the_sealbench_check_catches_a_missing_argument() -> None:
    """The check above fails on what docs/pipeline.md used to show and passes its fix."""
    assert "required: pack" in sealbench_parse_error(cli.build_parser(), ["split", "--extend"])
    assert sealbench_parse_error(untyped_sealbench_parser(), synopsis_argv(["split", "PACK", "--extend"])) == ""
    assert "expected one argument" in sealbench_parse_error(untyped_sealbench_parser(), ["try", "A", "T", "--epochs"])
    assert sealbench_walk(["split", "PACK", "--extent"])[1] == ["`sealbench split` has no option --extent"]


@pytest.mark.sandbox
def test_every_python_m_sealbench_module_exists_and_takes_the_options_shown() -> None:
    bad = []
    for c in doc_commands():
        if program(c.text) != "python-sealbench" or (c.text in ALLOWED and PLACEHOLDER.search(words(c.text)[2])):
            continue
        module = words(c.text)[2]
        if importlib.util.find_spec(module) is None:
            bad.append(f"{c.where}: no module {module}")
            continue
        opts = [w for w in args_of(c.text) if w.startswith("--")]
        if opts:
            res = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True,
                                 env=env_for(ROOT))
            bad += [f"{c.where}: {module} has no option {o}" for o in opts if o not in res.stdout]
    assert not bad, "\n  ".join(bad)


@pytest.mark.unit
def test_task_ids_and_agents_in_doc_commands_exist_in_the_bundled_suite_and_config() -> None:
    tasks = {p.name for p in (ROOT / "suite" / "tasks").iterdir()}
    agents = set(yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["agents"])
    bad = []
    for c in doc_commands():
        argv = args_of(c.text)
        for w in argv:
            if re.fullmatch(r"(xs|s|m)\d\d-[a-z0-9-]+", w) and w not in tasks:
                bad.append(f"{c.where}: no task {w} in suite/tasks")
        if program(c.text) == "sealbench" and argv[:1] == ["try"] and len(argv) > 2 and not has_placeholder(c.text):
            if argv[1] not in agents:
                bad.append(f"{c.where}: no agent {argv[1]} in config/config.yaml")
    assert not bad, "\n  ".join(bad)


# --------------------------------------------------------------------- running them

def env_for(work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEALBENCH_")}
    env["PATH"] = os.pathsep.join([str(work / ".venv" / "bin"), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(work / "scripts"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def config_readme_example() -> str:
    text = (ROOT / "config" / "README.md").read_text()
    m = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert m, "config/README.md has no example"
    return m.group(1)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """A fresh clone's files (the tracked and new files of this checkout, no results/), with
    `.venv/bin/sealbench` and `.venv/bin/snakemake` on PATH (this environment's), the pack
    config/README.md's example names (`packs/mine`, generated) and the example as `my.yaml`,
    and a decided experiment in results/ (as the gate writes it)."""
    work = tmp_path_factory.mktemp("doc-commands") / "sealbench"
    files = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, work / rel)
    venv_bin = work / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    for name, module in (("sealbench", "sealbench.app.cli"), ("snakemake", "snakemake")):
        shim = venv_bin / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m {module} "$@"\n')
        shim.chmod(0o755)
    example = yaml.safe_load(config_readme_example())
    make_pack(work / example["pack"], strata=tuple(example["strata"]))
    (work / "my.yaml").write_text(config_readme_example())
    results = work / "results"
    exp_dir, split_path, pack_hash = write_experiment(results, build_spec())
    assert gate.main(["--experiment-dir", str(exp_dir), "--split", str(split_path), "--pack-hash", str(pack_hash),
                      "--latest", str(results / "latest")]) == 0
    return work


def run_bash(script: str, cwd: Path, work: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env_for(work), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=timeout)


@pytest.mark.sandbox
@pytest.mark.parametrize("doc_text", sorted(RUN))
def test_doc_command_runs_as_written(workdir: Path, doc_text: str) -> None:
    as_run, codes, fragment = RUN[doc_text]
    res = run_bash(as_run or doc_text, workdir, workdir)
    where = [c.where for c in doc_commands() if c.text == doc_text]
    assert res.returncode in codes and "Traceback" not in res.stdout, \
        f"{where}: {as_run or doc_text} exited {res.returncode}\n{res.stdout[-3000:]}"
    assert fragment in res.stdout, f"{where}: {as_run or doc_text}: no '{fragment}' in\n{res.stdout[-3000:]}"


def dry_run_form(text: str) -> str:
    """The command as its dry run: `-n` added at the end (where a user would add it)."""
    return text if re.search(r"(^|\s)(-n|--dry-run|--dryrun)(\s|$)", text) else text + " -n"


def shape(text: str) -> tuple[str, ...]:
    """The argument shape of a snakemake command: its words, numbers as N, the program's spelling
    dropped (`.venv/bin/snakemake` is `snakemake`)."""
    return tuple("N" if w.isdigit() else w for w in args_of(text))


def dry_runs() -> dict[tuple[str, ...], DocCommand]:
    out: dict[tuple[str, ...], DocCommand] = {}
    for c in doc_commands():
        if verdict(c) == "dry-run":
            out.setdefault(shape(c.text), c)
    return out


@pytest.mark.pipeline
@pytest.mark.parametrize("key", sorted(dry_runs()), ids=lambda k: " ".join(k) or "(no arguments)")
def test_snakemake_doc_command_dry_runs(workdir: Path, key: tuple[str, ...]) -> None:
    cmd = dry_runs()[key]
    script = dry_run_form(cmd.text)
    res = run_bash(script, workdir, workdir)
    assert res.returncode == 0 and "Traceback" not in res.stdout, f"{cmd.where}: {script}\n{res.stdout[-4000:]}"
    assert re.search(r"dry-run|Nothing to be done|Unlock", res.stdout), f"{cmd.where}: {script}\n{res.stdout[-3000:]}"


#: What a script block's placeholders stand for, as paths in the prepared folder.
def script_substitutions(work: Path, tmp: Path) -> dict[str, str]:
    return {"/path/to/sealbench": str(work), "/tmp/run-humanize": str(tmp / "run-humanize"),
            "/tmp/pack-humanize": str(work / "packs" / "mine")}


def script_blocks() -> dict[str, list[DocCommand]]:
    out: dict[str, list[DocCommand]] = {}
    for c in doc_commands():
        if verdict(c) == "script":
            out.setdefault(c.block, []).append(c)
    return out


@pytest.mark.pipeline
@pytest.mark.parametrize("block", sorted(script_blocks()), ids=lambda b: script_blocks()[b][0].where)
def test_doc_script_block_runs_with_snakemake_as_dry_run(workdir: Path, block: str, tmp_path: Path) -> None:
    cmds = script_blocks()[block]
    lines = []
    for line in dict.fromkeys(c.line for c in cmds):
        parts = [dry_run_form(p) if program(p) == "snakemake" else p for p in _simple(line)]
        lines.append(" && ".join(parts))
    script = "set -e\n" + "\n".join(lines)
    subst = script_substitutions(workdir, tmp_path)
    unknown = [p for p in re.findall(r"/path/to/[\w.-]*|/tmp/[\w.-]*", script) if not p.startswith(tuple(subst))]
    assert not unknown, f"{cmds[0].where}: no substitution for {unknown}"
    for old, new in subst.items():
        script = script.replace(old, new)
    res = run_bash(script, tmp_path, workdir)
    assert res.returncode == 0 and "Traceback" not in res.stdout, f"{cmds[0].where}:\n{script}\n{res.stdout[-4000:]}"
