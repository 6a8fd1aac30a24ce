"""Reading a task's text for the leak checks: files as text, the names ``repo/`` defines, word n-grams.

Not a stage: shared by ``leak_check`` (the denylist rules), ``leak_corpus`` (the public-benchmark
check) and ``leak_hidden`` (the hidden-test check).

- ``repo_identifiers``: the function and class names defined in a snapshot's text files (a regex
  scan, ``def``/``async def``/``class``, not a parse);
- ``ngram_words``/``text_ngrams``: text normalised as lm-evaluation-harness's decontamination does
  (lower-cased ``[a-z0-9]+`` words; whitespace, punctuation and ``_`` separate words) and its
  ``NGRAM_N``-word windows;
- ``_read_text``: a file as text, undecodable bytes replaced ("" when it cannot be read).
"""

from __future__ import annotations

import re
from pathlib import Path

DEF_NAME = re.compile(r"^\s*(?:async\s+def|def|class)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
NGRAM_N = 13
NGRAM_WORD = re.compile(r"[a-z0-9]+")


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


def ngram_words(text: str) -> list[str]:
    """Lower-cased words of ``text``: maximal ``[a-z0-9]+`` runs (whitespace, punctuation and
    ``_`` separate words), as lm-evaluation-harness's decontamination normalises text."""
    return NGRAM_WORD.findall(text.lower())


def text_ngrams(text: str, n: int = NGRAM_N) -> set[tuple[str, ...]]:
    """Every ``n``-word window of ``text`` (none when it has fewer than ``n`` words)."""
    w = ngram_words(text)
    return {tuple(w[i:i + n]) for i in range(len(w) - n + 1)}


def _read_text(p: Path) -> str:
    try:
        return p.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""

