"""The docs are checked against the code: the README is the front door (two commands that CI
runs, pointing to the layer folders (their ``__init__`` docstrings name every module), links into docs/), each docs/ page that documents a
schema is checked against its one definition, and every file or section a docstring, comment
or page cites exists."""

from __future__ import annotations

import functools
import io
import re
import sys
import tokenize
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench.core import contract, core, tables  # noqa: E402
from sealbench.core.refusals import NOTES, REFUSALS  # noqa: E402

DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()


def doc(name: str) -> str:
    return (DOCS / name).read_text()


def section(text: str, heading: str) -> str:
    """The body of the Markdown section whose heading is ``heading`` (up to the next heading of
    the same or a higher level)."""
    m = re.search(rf"^(#+) {re.escape(heading)}\n", text, re.M)
    assert m, f"no section '{heading}'"
    level = len(m.group(1))
    end = re.search(rf"^#{{1,{level}}} ", text[m.end():], re.M)
    return text[m.end():m.end() + end.start()] if end else text[m.end():]


def table_after(text: str, title_line_start: str) -> list[list[str]]:
    """The cells of the first Markdown table from the line that starts with ``title_line_start``
    (a title line or the table's header row) on; header and separator rows dropped."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title_line_start))
    rows: list[list[str]] = []
    for line in lines[start:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert len(rows) > 2, f"no table after '{title_line_start}'"
    return rows[2:]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# ------------------------------------------------------------------------- the front door

def first_block() -> list[str]:
    m = re.search(r"```bash\n(.*?)```", README, re.S)
    assert m, "README must start with a bash block"
    assert README.index("```bash") < README.index("\n## "), "the commands block comes first"
    return [line for line in m.group(1).splitlines() if line.strip()]


@pytest.mark.unit
def test_readme_starts_with_two_commands_and_ci_runs_the_second() -> None:
    cmds = first_block()
    assert len(cmds) == 2
    assert "snakemake --cores 4 gate" in cmds[0]
    assert "pytest" in cmds[1]
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()


@pytest.mark.unit
def test_readme_is_the_front_door_and_links_every_page_of_docs() -> None:
    assert len(README.splitlines()) <= 150, "the manual belongs in docs/"
    for heading in ("What it is", "What you get", "Where to read on"):
        assert f"\n## {heading}\n" in README, heading
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    assert pages, "docs/ has no pages"
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[^)]*)?\)", section(README, "Where to read on")))
    assert set(pages) <= linked, f"not linked from README's 'Where to read on': {sorted(set(pages) - linked)}"


@pytest.mark.unit
def test_readme_says_first_how_many_agents_of_your_own_the_bundled_holdout_takes() -> None:
    """Issue 35 (4): before the first run, the README says how many versions of the user's own
    agents the bundled holdout takes (its default budget minus the bundled agents'), that the
    next one stops the run at its start, and what gives more — and that `split --extend` does not."""
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    left = cfg["holdout_budget"] - len(cfg["agents"])
    words = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four"}
    head = README[:README.index("\n## ")]  # before "What it is": said first
    m = re.search(r"the bundled holdout takes (\w+) version", head)
    assert m, "the README's first part does not say how many versions of your own the bundled holdout takes"
    assert m.group(1) == words[left], (m.group(1), left)
    para = head[m.start():]
    for said in ("`holdout_budget`", "HOLDOUT_EXHAUSTED", "before its first job", "run_anyway=true",
                 "fresh pack", "--extend", "sealbench validate"):
        assert said in para, said


@pytest.mark.unit
def test_every_layer_docstring_names_its_modules_and_only_real_ones() -> None:
    """The folders are the module map: each layer's ``__init__`` docstring names each of its modules
    (and a docs page that maps modules names only real ones)."""
    import ast

    import sealbench

    pkg = ROOT / "scripts" / "sealbench"
    assert sorted(p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()) == sorted(
        [*sealbench.LAYERS, *sealbench.APART])
    for layer in sealbench.LAYERS:
        doc = ast.get_docstring(ast.parse((pkg / layer / "__init__.py").read_text())) or ""
        mods = sorted(p.stem for p in (pkg / layer).glob("*.py") if p.name != "__init__.py")
        mods += sorted(f"{d.name}/" for d in (pkg / layer).iterdir() if d.is_dir() and any(d.glob("*.py")))
        for mod in mods:
            assert f"``{mod}``" in doc, f"scripts/sealbench/{layer}/__init__.py does not name {mod}"
        for named in re.findall(r"^- ``([\w/]+)``", doc, re.M):
            assert named in mods, f"scripts/sealbench/{layer}/__init__.py names {named}, which is not in it"
    files = {p.name for p in pkg.rglob("*.py")}
    for page in DOCS.glob("*.md"):
        for name in re.findall(r"^\| `([a-z_]+\.py)` \|", page.read_text(), re.M):
            assert name in files, f"docs/{page.name} maps {name}, which is not in scripts/sealbench/"


@pytest.mark.unit
def test_no_runtime_placeholder_left() -> None:
    for path in [ROOT / "README.md", ROOT / "config" / "README.md", *DOCS.glob("*.md")]:
        assert "PLACEHOLDER" not in path.read_text(), path


# ------------------------------------------------------------- docs against the definitions

@pytest.mark.unit
def test_results_doc_documents_every_table_column_with_its_type() -> None:
    text = section(doc("results.md"), "Tables")
    for table, cols in tables.TABLES.items():
        rows = table_after(text, f"`{table}.parquet`")
        documented = [(r[0], r[1]) for r in rows]
        defined = [(name, typ) for name, typ, _nullable, _desc in cols]
        assert documented == defined, f"docs/results.md's {table}.parquet table differs from tables.py"


@pytest.mark.unit
def test_results_doc_documents_every_run_status_refusal_code_and_note() -> None:
    text = doc("results.md")
    statuses = section(text, "Run statuses")
    for status in tables.STATUSES:
        assert f"`{status}`" in statuses, status
    codes = [ticked(r[0])[0] for r in table_after(section(text, "Refusal codes"), "Each blocks the headline")]
    assert sorted(codes) == sorted(REFUSALS), "the refusal table differs from refusals.REFUSALS"
    notes = section(text, "Notes")
    for code in NOTES:
        assert f"`{code}`" in notes, code


@pytest.mark.unit
def test_configuration_doc_documents_every_config_key_and_only_those() -> None:
    rows = table_after(doc("configuration.md"), "| key | meaning |")
    documented = [key for r in rows for key in ticked(r[0])]
    keys = list(core.load_schema("config.schema.yaml")["properties"])
    assert sorted(documented) == sorted(keys), "docs/configuration.md's key table differs from the schema"


@pytest.mark.unit
def test_config_readme_example_is_a_valid_config() -> None:
    text = (ROOT / "config" / "README.md").read_text()
    m = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert m, "config/README.md has no example"
    errors = core.schema_errors(yaml.safe_load(m.group(1)), core.load_schema("config.schema.yaml"), "example")
    assert not errors, errors


@pytest.mark.unit
def test_contract_documents_every_meta_key() -> None:
    rows = table_after(section(doc("contract.md"), "§1 The task pack"), "| key | type | meaning |")
    meta = core.load_schema("meta.schema.yaml")
    documented = {ticked(r[0])[0]: r[1] for r in rows}
    assert sorted(documented) == sorted(meta["properties"]), "contract.md §1 differs from meta.schema.yaml"
    for key, typ in documented.items():
        assert ("optional" in typ) == (key not in meta["required"]), f"meta.json '{key}': optional or not?"


@pytest.mark.unit
def test_contract_documents_every_agent_variable_and_report_field() -> None:
    text = section(doc("contract.md"), "§2 An agent")
    rows = table_after(text, "| variable | value |")
    documented = {v for r in rows for v in ticked(r[0])}
    # the report plugin's pipe and packages (a scoring command's, never an agent's); a user's setting (§1); where the workflow's jobs find the pack and results/
    # (docs/pipeline.md; removed from every agent's and test's environment); a person's sealed session
    # shell and the project folder of the `sealbench` command (docs/humans.md, docs/cli.md)
    harness_only = {"SEALBENCH_REPORT_FD", "SEALBENCH_REPORT_PACKAGES", "SEALBENCH_TMPDIR", "SEALBENCH_PACK", "SEALBENCH_RESULTS",
                    "SEALBENCH_SESSION_SOCKET", "SEALBENCH_PROJECT",
                    "SEALBENCH_CLIENTS"}  # where client presets are installed (docs/agents.md, a user's setting)
    literals = set()
    for path in (ROOT / "scripts" / "sealbench").rglob("*.py"):
        literals |= set(re.findall(r"[\"'](SEALBENCH_[A-Z0-9_]+)[\"']", path.read_text()))
    assert documented == literals - harness_only, "contract.md §2 differs from the variables the harness sets"
    pytype = {int: "int", str: "str", bool: "bool", (int, float): "float"}
    for name, keys in (("usage.json", contract.USAGE_KEYS), ("stamp.json", contract.STAMP_KEYS)):
        m = re.search(rf"`{re.escape(name)}`: `(\{{.*?\}})`", text)
        assert m, name
        fields = dict(re.findall(r'"(\w+)": (\w+)', m.group(1)))
        assert fields == {k: pytype[t] for k, t in keys.items()}, f"contract.md §2 {name} differs from sealbench.core.contract"


# ----------------------------------------------------------------- references that resolve

#: Text files a reference can live in: the docs, the code, its comments and docstrings.
SCANNED = ("README.md", "Snakefile", "pyproject.toml", "environment.yml", ".ci", "bench", "config",
           "docs", "profiles", "scripts", "tests", "tools", "workflow")
SKIP = {"__pycache__", "data", "results", "suite_src"}
TEXT_SUFFIXES = {".py", ".md", ".smk", ".yaml", ".yml", ".toml", ".sh", ".txt", ".cfg", ""}
#: Repository folders a path reference starts with.
ROOTS = ("docs", "scripts", "workflow", "tests", "tools", "bench", "config", "suite", ".ci", "profiles")
PATH_REF = re.compile(rf"(?<![\w/.$-])((?:{'|'.join(re.escape(r) for r in ROOTS)})/[\w./-]*[\w/])")
#: Folders that only exist once something ran (git-ignored outputs).
OUTPUTS = ("bench/results/",)
SECTION_REF = re.compile(r"(?<![\w/.-])(docs/[\w.-]+\.md|README(?:\.md)?|config/README\.md)"
                         r"(?: §(\d+)| \"([^\"]+)\"| \(([A-Z][\w ]{2,40})\))")
#: Files sealbench used to cite that are not part of it (and what now holds their content).
GONE = re.compile(r"\bCONTRACTS\b|\bNOTES\.md\b|\bSTYLE\.md\b")


@functools.cache
def scanned_files() -> tuple[Path, ...]:
    out = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            out.append(path)
        elif path.is_dir():
            for p in sorted(path.rglob("*")):
                rel = p.relative_to(ROOT).parts
                if (p.is_file() and p.suffix in TEXT_SUFFIXES and not SKIP & set(rel)
                        and not any(part.endswith(".egg-info") for part in rel) and p.stat().st_size < 2_000_000):
                    out.append(p)
    return tuple(out)


@functools.cache
def prose(path: Path) -> str:
    """What of a file is prose: a Python file's comments and strings with a space in them
    (docstrings, messages; not file names its code builds), any other file whole."""
    text = path.read_text(errors="replace")
    if path.suffix != ".py":
        return text
    parts = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and re.search(r"\s", tok.string)):
            parts.append(tok.string)
    return "\n".join(parts)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(path: Path) -> list[str]:
    return [m.group(1) for m in re.finditer(r"^#+ (.+)$", path.read_text(), re.M)]


@pytest.mark.sandbox
def test_every_file_a_docstring_comment_or_page_cites_exists() -> None:
    missing = []
    for path in scanned_files():
        rel = path.relative_to(ROOT)
        text = prose(path)
        for ref in PATH_REF.findall(text):
            ref = ref.rstrip(".")
            # a file (has a suffix) or a folder (ends with /); not a template, not an output
            if not (re.search(r"\.\w+$", ref) or ref.endswith("/")) or ref.rstrip("/") in ROOTS:
                continue
            if ref.startswith(OUTPUTS):
                continue
            module = re.sub(r"\.\w+$", ".py", ref)  # a dotted name: the module it is defined in
            if not (ROOT / ref).exists() and not (ROOT / module).is_file():
                missing.append(f"{rel}: {ref}")
    assert not missing, "cited files that do not exist:\n  " + "\n  ".join(missing)


@pytest.mark.unit
def test_no_reference_to_files_outside_the_repository() -> None:
    stale = []
    for path in scanned_files():
        if path == Path(__file__).resolve():
            continue
        for _n, line in enumerate(prose(path).splitlines(), 1):
            for m in GONE.finditer(line):
                if not (ROOT / (m.group(0) if m.group(0).endswith(".md") else m.group(0) + ".md")).exists():
                    stale.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not stale, ("these cite files that are not in the repository (the contract is docs/contract.md, "
                       "the measured facts are in docs/):\n  " + "\n  ".join(stale))


@pytest.mark.unit
def test_every_cited_section_exists() -> None:
    bad = []
    for path in scanned_files():
        for target, num, quoted, paren in SECTION_REF.findall(prose(path)):
            file = ROOT / ("README.md" if target.startswith("README") else target)
            if not file.is_file():
                bad.append(f"{path.relative_to(ROOT)}: {target} does not exist")
                continue
            heads = headings(file)
            if num:
                ok = any(h.startswith(f"§{num} ") for h in heads)
            else:
                want = (quoted or paren).lower()
                ok = any(want in h.lower() for h in heads)
            if not ok:
                bad.append(f"{path.relative_to(ROOT)}: {target} has no section '{num or quoted or paren}'")
    assert not bad, "cited sections that do not exist:\n  " + "\n  ".join(bad)


@pytest.mark.unit
def test_relative_links_in_readme_and_docs_resolve() -> None:
    bad = []
    for page in [ROOT / "README.md", ROOT / "config" / "README.md", *sorted(DOCS.glob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            file = (page.parent / file_part).resolve() if file_part else page
            if not file.exists():
                bad.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and anchor not in {slug(h) for h in headings(file)}:
                bad.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not bad, "broken links:\n  " + "\n  ".join(bad)
