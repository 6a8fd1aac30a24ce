"""Print sealbench's module import graph and file sizes, and flag a stage importing a stage.

    python tools/import_graph.py [SCRIPTS_DIR]

One line per module of ``scripts/sealbench`` (named ``layer.module``) (agents/ and testing/ included): its line count and
the sealbench modules it imports (statically, anywhere in the file). Stage modules (the rules'
modules) must not import each other; modules over 400 lines are marked. Exit code 1 when a stage
imports a stage. Read by tests/repo/test_layout.py.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

#: The stage modules: one per rule file (workflow/rules/*.smk), run as `python -m sealbench.<layer>.<stage>`.
STAGES = ("stages.hash_pack", "stages.leak_check", "stages.split", "stages.run_dummy", "stages.run_agent", "stages.hidden_score", "stages.stratify", "gate.gate",
          "stages.task_batch")
LIMIT = 400


def module_name(path: Path, pkg: Path) -> str:
    return ".".join(path.relative_to(pkg).with_suffix("").parts)


def imports(path: Path, pkg: Path) -> set[str]:
    """The sealbench modules ``path`` imports (``from .x``, ``from ..x``, ``from sealbench.x``, ``from . import x``)."""
    here = module_name(path, pkg).split(".")[:-1]
    names: set[str] = set()
    known = {module_name(p, pkg) for p in pkg.rglob("*.py")}
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] if node.level > 1 else here
                mod = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and (node.module == "sealbench" or node.module.startswith("sealbench.")):
                mod = node.module.removeprefix("sealbench").lstrip(".")
            else:
                continue
            for alias in node.names:
                cand = f"{mod}.{alias.name}".lstrip(".")
                names.add(cand if cand in known else mod)
        elif isinstance(node, ast.Import):
            names |= {a.name.removeprefix("sealbench.") for a in node.names if a.name.startswith("sealbench.")}
    return {n.removesuffix(".__init__") for n in names if n and n != module_name(path, pkg)}


def graph(pkg: Path) -> dict[str, tuple[int, set[str]]]:
    """{module: (lines, sealbench modules it imports)}"""
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        if "__pycache__" in p.parts:
            continue
        out[module_name(p, pkg)] = (len(p.read_text(encoding="utf-8").splitlines()), imports(p, pkg))
    return out


def stage_violations(g: dict[str, tuple[int, set[str]]]) -> list[tuple[str, str]]:
    return [(m, i) for m, (_, deps) in g.items() if m in STAGES for i in sorted(deps) if i in STAGES]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    scripts = Path(args[0]) if args else Path(__file__).resolve().parents[1] / "scripts"
    pkg = scripts / "sealbench"
    g = graph(pkg)
    for m, (n, deps) in g.items():
        mark = "*" if n > LIMIT else " "
        kind = "stage" if m in STAGES else ""
        print(f"{n:>5}{mark} {m:<22} {kind:<6} -> {', '.join(sorted(deps)) or '-'}")
    bad = stage_violations(g)
    big = [m for m, (n, _) in g.items() if n > LIMIT]
    print(f"\n{len(g)} modules, {sum(n for n, _ in g.values())} lines; over {LIMIT} lines: {', '.join(big) or 'none'}")
    print("stage imports a stage: " + (", ".join(f"{a} -> {b}" for a, b in bad) or "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
