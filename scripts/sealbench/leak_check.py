"""leak_check: is a task a rerun of public text? A suspect stops the run.

Reads:  a sealed task (meta.json, prompt.md, repo/) and the pack's denylist.txt
Writes: results/tasks/<id>/<task_digest>/leak-<denylist_digest>.json; exits 1 on a suspect

Rules (seed "Match the human clock", step 2, plus identifiers):
- *token overlap*: tokens are lower-case ``[a-z0-9]+`` words longer than 3 characters; a task
  is suspect when its title + notes + prompt share at least 4 tokens with a denylist line;
- *containment*: the title, notes or prompt contain the denylist line (case-insensitive);
- *identifier*: a denylist line that is a single identifier (e.g. ``has_close_elements``)
  equals the task id or a function/class name defined in ``repo/``, or appears as a word in
  the title, notes or prompt.
A hit is a stop sign, not proof of training on the text: rewrite the task, do not paraphrase.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from .core import PackError, SealbenchError, denylist_digest, load_pack, read_json, write_json

WORD = re.compile(r"[a-z0-9]+")
IDENT_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEF_NAME = re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
MIN_SHARED = 4


def tokens(text: str) -> set[str]:
    return {t for t in WORD.findall(text.lower()) if len(t) > 3}


@dataclass(frozen=True)
class DenyLine:
    lineno: int
    text: str


@dataclass(frozen=True)
class LeakHit:
    """One reason a task is suspect."""

    rule: str          # token_overlap | contains_line | identifier
    lineno: int        # line of denylist.txt
    line: str
    evidence: str


def read_denylist(path: Path) -> list[DenyLine]:
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"{path}: not UTF-8 text ({exc})") from exc
    out = []
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(DenyLine(i, line))
    return out


def repo_identifiers(repo: Path, max_bytes: int = 2_000_000) -> set[str]:
    """Function and class names defined in the snapshot's text files (a cheap scan)."""
    names: set[str] = set()
    for p in sorted(Path(repo).rglob("*")):
        if not p.is_file() or p.stat().st_size > max_bytes:
            continue
        try:
            text = p.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        names.update(DEF_NAME.findall(text))
    return names


def leak_hits(task_id: str, title: str, notes: str, prompt: str, identifiers: set[str],
              denylist: list[DenyLine]) -> list[LeakHit]:
    """Apply the three rules of the module docstring to one task."""
    text = "\n".join([title, notes, prompt])
    hay = tokens(text)
    low = text.lower()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    hits: list[LeakHit] = []
    for d in denylist:
        needle = tokens(d.text)
        shared = hay & needle
        if len(shared) >= MIN_SHARED:
            hits.append(LeakHit("token_overlap", d.lineno, d.text, "shared tokens: " + ", ".join(sorted(shared))))
        if d.text.lower() in low:
            hits.append(LeakHit("contains_line", d.lineno, d.text, "the task text contains this line"))
        if IDENT_LINE.match(d.text) and (d.text == task_id or d.text in identifiers or d.text in words):
            where = "task id" if d.text == task_id else ("repo/ definition" if d.text in identifiers else "task text")
            hits.append(LeakHit("identifier", d.lineno, d.text, f"identifier matches ({where})"))
    return hits


def check_task(task_dir: Path, denylist: list[DenyLine]) -> list[LeakHit]:
    task_dir = Path(task_dir)
    meta = read_json(task_dir / "meta.json")
    prompt = (task_dir / "prompt.md").read_bytes().decode("utf-8", "replace")
    return leak_hits(meta["id"], meta["title"], meta.get("notes", ""), prompt,
                     repo_identifiers(task_dir / "repo"), denylist)


def format_hits(task_id: str, hits: list[LeakHit], denylist_path: str = "denylist.txt") -> str:
    lines = [f"LEAK SUSPECT: task '{task_id}' matches the denylist:"]
    for h in hits:
        lines.append(f"  {denylist_path}:{h.lineno}: {h.line!r} ({h.rule}; {h.evidence})")
    lines.append("  Rewrite the task (plant a new bug); do not paraphrase a public issue. Nothing downstream runs.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.leak_check", description=__doc__.splitlines()[0])
    ap.add_argument("--task", type=Path, help="a sealed task folder (one job)")
    ap.add_argument("--pack", type=Path, help="check every task of a pack (CLI use)")
    ap.add_argument("--denylist", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--expect-denylist-digest", help="refuse if the denylist changed since planning")
    args = ap.parse_args(argv)
    try:
        if args.expect_denylist_digest and denylist_digest(args.denylist.parent) != args.expect_denylist_digest:
            raise SealbenchError(f"{args.denylist}: changed since the workflow was planned; rerun snakemake")
        deny = read_denylist(args.denylist)
        dirs = [args.task] if args.task else [t.dir for t in load_pack(args.pack)] if args.pack else []
        if not dirs:
            ap.error("give --task or --pack")
        suspects = 0
        for d in dirs:
            hits = check_task(d, deny)
            tid = read_json(Path(d) / "meta.json")["id"]
            if args.out:
                write_json(args.out, {"task_id": tid, "suspect": bool(hits), "denylist_lines": len(deny),
                                      "hits": [asdict(h) for h in hits]})
            if hits:
                suspects += 1
                print(format_hits(tid, hits, str(args.denylist)), file=sys.stderr)
        print(f"leak_check: checked={len(dirs)} suspects={suspects} denylist_lines={len(deny)}")
        return 1 if suspects else 0
    except SealbenchError as exc:
        print(f"leak_check: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
