"""Where two JSON values differ (for the tests and the benchmarks that compare two runs' records)."""

from __future__ import annotations

from typing import Any


def json_diff(a: Any, b: Any, names: tuple[str, str] = ("first", "second"), path: str = "") -> list[str]:
    """One line per place (``/key``, ``[i]`` below ``path``) where ``a`` and ``b`` differ: a key
    only one of them has, or values that differ (lists of different lengths differ whole).
    ``names`` name the two sides in the lines (e.g. ``("local", "slurm")``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in the {names[1] if k in b else names[0]} run")
            else:
                out.extend(json_diff(a[k], b[k], names, f"{path}/{k}"))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in json_diff(x, y, names, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {names[0]} {a!r} != {names[1]} {b!r}"]
