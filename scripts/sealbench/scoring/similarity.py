"""Gold similarity: how close a patch is to the task's gold patch (``gold_like`` ≥ 0.95).

:func:`gold_similarity` is the :class:`difflib.SequenceMatcher` ratio of the two patches'
changed lines outside protected paths, whitespace-normalised (:func:`_normalised_changes`).
"""

from __future__ import annotations

import difflib
import re

from ..pack.patches import split_patch
from .tamper_rules import _as_text, protected_reason

#: A patch at least this similar to the gold patch is flagged ``gold_like``.
GOLD_LIKE_THRESHOLD = 0.95
_WS = re.compile(r"\s+")


def _normalised_changes(patch: bytes) -> list[str]:
    """File headers and +/- lines of the non-protected sections, sections sorted by path,
    whitespace runs collapsed and line ends stripped, blank changed lines dropped."""
    try:
        sections = split_patch(patch)
    except ValueError:
        return []
    out: list[str] = []
    for s in sorted(sections, key=lambda s: (s.new_path, s.old_path)):
        if any(protected_reason(p, None, s.text) for p in s.paths):
            continue
        body: list[str] = []
        for line in _as_text(s.text).splitlines():
            if line.startswith(("+++ ", "--- ")) or not line.startswith(("+", "-")):
                continue
            content = _WS.sub(" ", line[1:]).strip()
            if content:
                body.append(line[0] + content)
        if body:
            out.append(f"@ {s.old_path} -> {s.new_path}")
            out += body
    return out


def gold_similarity(patch: bytes, oracle: bytes) -> float:
    """How alike ``patch`` and the gold patch are, in [0, 1]: :class:`difflib.SequenceMatcher`
    ratio over their normalised changed lines (see :func:`_normalised_changes`). A patch with
    no change outside protected paths scores 0."""
    a, b = _normalised_changes(patch or b""), _normalised_changes(oracle or b"")
    if not a or not b:
        return 0.0
    return round(difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), 4)
