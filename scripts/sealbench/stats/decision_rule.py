"""The gate's decision rule: which call a paired comparison supports.

A winner is named only when the decision interval excludes zero: ``ci_low > 0`` names the
candidate (``WINNER_CANDIDATE``), ``ci_high < 0`` the baseline (``WINNER_BASELINE``); any
interval with ``ci_low <= 0 <= ci_high`` (including the degenerate ``[0, 0]``) is
``NO_WINNER``. :func:`verdict` is that call with the power floor (a pack smaller than the
pre-registered ``n_required`` names no winner); :func:`gate_call` returns the call with the
flags that hold a winner back (underpowered, ``|delta|`` below the MDE, exact McNemar test not
significant, a zero-width interval). The interval itself is computed by ``paired_delta`` in
``paired.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .paired import PairedResult

__all__ = [
    "VERDICT_CANDIDATE",
    "VERDICT_BASELINE",
    "VERDICT_NONE",
    "GateCall",
    "verdict",
    "is_underpowered",
    "gate_call",
]


VERDICT_CANDIDATE = "WINNER_CANDIDATE"
VERDICT_BASELINE = "WINNER_BASELINE"
VERDICT_NONE = "NO_WINNER"


# ------------------------------------------------------------------------ decision


def is_underpowered(n: int, n_required: int | None) -> bool:
    """True when a pack of ``n`` tasks is smaller than the pre-registered ``n_required``."""
    return n_required is not None and int(n) < int(n_required)


def verdict(result: PairedResult, n_required: int | None = None) -> str:
    """The gate's call from the decision interval.

    ``"WINNER_CANDIDATE"`` if ``ci_low > 0``, ``"WINNER_BASELINE"`` if ``ci_high < 0``,
    else ``"NO_WINNER"`` (so a degenerate ``[0, 0]`` is NO_WINNER). When ``n_required``
    is given and ``result.n < n_required`` the pack is underpowered for the
    pre-registered MDE and no winner is named: the result is ``"NO_WINNER"`` whatever
    the interval says (see :func:`gate_call` for the interval-only call and the flag).
    """
    call = _interval_call(result.ci_low, result.ci_high)
    if is_underpowered(result.n, n_required):
        return VERDICT_NONE
    return call


def _interval_call(lo: float, hi: float) -> str:
    if lo > 0:
        return VERDICT_CANDIDATE
    if hi < 0:
        return VERDICT_BASELINE
    return VERDICT_NONE


@dataclass(frozen=True)
class GateCall:
    """The decision with its flags, e.g. ``NO_WINNER + UNDERPOWERED`` or ``NO_WINNER + BELOW_MDE``."""

    verdict: str
    """Final call: a winner is named only when the interval excludes 0, the pack is powered,
    the exact sign test agrees (when ``alpha`` is given) and |delta| >= ``mde`` (when given)."""
    interval_verdict: str
    """What the interval alone says, ignoring power."""
    underpowered: bool
    """n < n_required for the pre-registered MDE."""
    n: int
    """Tasks in the comparison."""
    n_required: int | None
    """Tasks required for the pre-registered MDE (None if not given)."""
    below_mde: bool = False
    """The interval excludes 0 but |delta| is smaller than the pre-registered MDE (seed 003: no winner)."""
    exact_disagrees: bool = False
    """The interval excludes 0 but the exact McNemar (sign) test on the discordant tasks has
    p >= alpha: a collapsed or too-narrow interval is not evidence (e.g. 4 wins / 0 losses, p 0.125)."""
    degenerate_interval: bool = False
    """The decision interval has zero width: every task in each stratum has the same paired
    outcome. It shows no spread, not certainty."""

    @property
    def label(self) -> str:
        """``verdict`` plus each flag that held the winner back."""
        flags = [name for name, on in (("UNDERPOWERED", self.underpowered), ("BELOW_MDE", self.below_mde),
                                       ("EXACT_TEST_NOT_SIGNIFICANT", self.exact_disagrees)) if on]
        return " + ".join([self.verdict, *flags])


def gate_call(result: PairedResult, n_required: int | None = None, *, mde: float | None = None,
              alpha: float | None = None) -> GateCall:
    """Verdict, interval-only verdict and the flags that can hold a winner back.

    ``mde``: the pre-registered minimum detectable effect; a delta with ``|delta| < mde`` names
    no winner (``below_mde``). ``alpha``: the exact McNemar p on the per-task wins and losses
    must be below it too, so a collapsed interval (``[d, d]`` when every task in each stratum
    has the same paired outcome) never names a winner on a handful of wins alone."""
    interval = _interval_call(result.ci_low, result.ci_high)
    underpowered = is_underpowered(result.n, n_required)
    below = mde is not None and interval != VERDICT_NONE and abs(result.delta) < mde - 1e-12
    exact_no = alpha is not None and interval != VERDICT_NONE and not result.mcnemar_p < alpha
    final = VERDICT_NONE if (underpowered or below or exact_no) else interval
    return GateCall(
        verdict=final,
        interval_verdict=interval,
        underpowered=underpowered,
        n=result.n,
        n_required=n_required,
        below_mde=below,
        exact_disagrees=exact_no,
        degenerate_interval=result.ci_high - result.ci_low <= 1e-12,
    )


# --------------------------------------------------------------------------- power
