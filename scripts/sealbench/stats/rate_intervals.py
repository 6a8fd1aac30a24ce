"""Binomial intervals for a pass rate: ``k`` passes out of ``n`` tasks.

The Wilson score interval (the default; no continuity correction), the Clopper-Pearson
("exact") interval, and :func:`rate_interval`, the 95% interval of a per-task pass share the
tables report (with epochs the share may be fractional). Also holds ``_check_conf``, the
confidence-level check the other statistics modules share.

Reads nothing and writes nothing. Failure modes are ``ValueError`` with a message naming
what is wrong (no tasks scored, ``k`` outside ``0..n``, a confidence level outside (0, 1)).
"""

from __future__ import annotations

import math

from . import scipy_stats as _st

__all__ = [
    "wilson_interval",
    "clopper_pearson_interval",
]


# --------------------------------------------------------------------------- helpers


def _check_conf(conf: float) -> float:
    conf = float(conf)
    if not 0.0 < conf < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), got {conf!r}")
    return conf


def _check_kn(k: int, n: int) -> tuple[int, int]:
    if int(n) != n or int(k) != k:
        raise ValueError(f"k and n must be whole numbers, got k={k!r}, n={n!r}")
    k, n = int(k), int(n)
    if n <= 0:
        raise ValueError(
            f"cannot compute a binomial interval with n={n} trials: no tasks were scored"
        )
    if not 0 <= k <= n:
        raise ValueError(f"successes k={k} must satisfy 0 <= k <= n={n}")
    return k, n


# ----------------------------------------------------------------- binomial intervals


def wilson_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for ``k`` passes out of ``n`` tasks (no continuity correction).

    Raises ``ValueError`` when ``n == 0`` (no tasks: there is no rate to bound).
    """
    k, n = _check_kn(k, n)
    ci = _st().binomtest(k, n).proportion_ci(confidence_level=_check_conf(conf), method="wilson")
    return float(ci.low), float(ci.high)


def clopper_pearson_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson ("exact") interval for ``k`` passes out of ``n`` tasks.

    Raises ``ValueError`` when ``n == 0``.
    """
    k, n = _check_kn(k, n)
    ci = _st().binomtest(k, n).proportion_ci(confidence_level=_check_conf(conf), method="exact")
    return float(ci.low), float(ci.high)


def rate_interval(passes: float, n: int, method: str = "wilson",
                  conf: float = 0.95) -> tuple[float | None, float | None]:
    """The ``conf`` interval (95% unless a correction asks for more) of a per-task pass share:
    Wilson (default) or Clopper–Pearson. With epochs ``passes`` may be fractional; Wilson then
    uses the per-task share as p-hat and Clopper–Pearson rounds to the nearest whole count (said
    in docs/results.md)."""
    if n == 0:
        return None, None
    conf = _check_conf(conf)
    if method == "clopper_pearson":
        return clopper_pearson_interval(int(round(passes)), n, conf)
    if abs(passes - round(passes)) < 1e-9:
        return wilson_interval(int(round(passes)), n, conf)
    z = float(_st().norm.ppf(1 - (1 - conf) / 2))
    p = passes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
