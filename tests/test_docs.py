"""The README is checked against the one definition of each schema, and CI runs exactly
the README's test command."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from sealbench import core, schema  # noqa: E402
from sealbench.refusals import REFUSALS  # noqa: E402

README = (ROOT / "README.md").read_text()


def first_block() -> list[str]:
    m = re.search(r"```bash\n(.*?)```", README, re.S)
    assert m, "README must start with a bash block"
    assert README.index("```bash") < README.index("\n## "), "the commands block comes first"
    return [line for line in m.group(1).splitlines() if line.strip()]


def test_readme_starts_with_two_commands_and_ci_runs_the_second() -> None:
    cmds = first_block()
    assert len(cmds) == 2
    assert "snakemake --cores 4 gate" in cmds[0]
    assert "pytest" in cmds[1]
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()


def test_readme_documents_every_table_column_with_its_type() -> None:
    for table, cols in schema.TABLES.items():
        section = README.split(f"`{table}.parquet`", 1)[1]
        for name, typ, _nullable, _desc in cols:
            assert re.search(rf"\| {re.escape(name)} \| {typ} \|", section), f"{table}.{name} ({typ}) not in README"


def test_readme_documents_every_refusal_code_and_config_key() -> None:
    for code in REFUSALS:
        assert f"`{code}`" in README, code
    for key in core.load_schema("config.schema.yaml")["properties"]:
        assert f"`{key}`" in README, key


def test_no_runtime_placeholder_left() -> None:
    assert "PLACEHOLDER" not in README
