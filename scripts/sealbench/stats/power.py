"""Power planning: tasks needed to detect a minimum effect, and the effect a pack detects.

Miller (2024, "Adding Error Bars to Evals") Eq. 9, ``n = (z_{1-a/2} + z_{power})**2
* omega**2 / mde**2`` with ``omega**2 = psi - mde**2`` for a paired binary outcome with
discordance rate ``psi`` (:func:`required_n_miller`, inverted by :func:`observed_mde`);
Connor (1987) for McNemar's test (:func:`required_n_connor`).

Reads nothing and writes nothing. Failure modes are ``ValueError`` naming what is wrong
(``alpha`` or ``power`` outside (0, 1), an MDE impossible at the given discordance, ...).
"""

from __future__ import annotations

import math

from . import scipy_stats as _st

__all__ = [
    "required_n_miller",
    "required_n_connor",
    "observed_mde",
    "observed_mde_from_sd",
]


# --------------------------------------------------------------------------- helpers


def _z(q: float) -> float:
    return float(_st().norm.ppf(q))


# --------------------------------------------------------------------------- power


def _zsum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ValueError(f"alpha and power must be in (0, 1), got {alpha}, {power}")
    return _z(1 - alpha / 2) + _z(power)


def _check_mde_psi(mde: float, psi: float) -> None:
    if mde <= 0:
        raise ValueError(f"mde must be > 0, got {mde}")
    if not 0 < psi <= 1:
        raise ValueError(f"discordance rate psi must be in (0, 1], got {psi}")
    if psi <= mde**2:
        raise ValueError(
            f"mde={mde} is impossible with discordance psi={psi} (need psi > mde**2)"
        )


def required_n_miller(
    mde: float,
    psi: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
    *,
    omega2: float | None = None,
) -> tuple[float, int]:
    """Tasks needed to detect a paired delta ``mde`` (Miller Eq. 9): ``(raw, ceil)``.

    ``n = (z_{1-alpha/2} + z_power)^2 * omega^2 / mde^2`` with ``omega^2 = psi - mde^2``
    for binary paired outcomes at discordance ``psi``; or pass ``omega2`` directly (the
    variance of the paired difference) instead of ``psi``. Planning formula: like the
    reference it accepts any ``psi > mde^2``, although a binary pack can only realise
    ``|delta| <= psi``.
    """
    if (psi is None) == (omega2 is None):
        raise ValueError("give exactly one of psi (discordance rate) or omega2")
    if omega2 is None:
        _check_mde_psi(mde, psi)
        omega2 = psi - mde**2
    elif mde <= 0 or omega2 <= 0:
        raise ValueError(f"mde and omega2 must be > 0, got {mde}, {omega2}")
    raw = _zsum(alpha, power) ** 2 * omega2 / mde**2
    return raw, math.ceil(raw - 1e-9)


def required_n_connor(
    mde: float, psi: float, alpha: float = 0.05, power: float = 0.8
) -> tuple[float, int]:
    """Tasks needed for McNemar's test (Connor 1987): ``(raw, ceil)``.

    ``n = (z_{1-alpha/2} sqrt(psi) + z_power sqrt(psi - mde^2))^2 / mde^2``.
    """
    _check_mde_psi(mde, psi)
    _zsum(alpha, power)
    raw = (_z(1 - alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(psi - mde**2)) ** 2 / mde**2
    return raw, math.ceil(raw - 1e-9)


def observed_mde(n: int, psi: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest paired delta a pack of ``n`` tasks detects at discordance ``psi``.

    Inverts Miller Eq. 9 with ``omega^2 = psi - mde^2``:
    ``mde = sqrt(Z^2 psi / (n + Z^2))``, ``Z = z_{1-alpha/2} + z_power``.
    """
    if n <= 0 or not 0 < psi <= 1:
        raise ValueError(f"need n > 0 and psi in (0, 1], got n={n}, psi={psi}")
    z2 = _zsum(alpha, power) ** 2
    return math.sqrt(z2 * psi / (n + z2))


def observed_mde_from_sd(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """MDE from an observed sd of the paired differences: ``Z * sd / sqrt(n)`` (Eq. 9)."""
    if n <= 0 or sd < 0:
        raise ValueError(f"need n > 0 and sd >= 0, got n={n}, sd={sd}")
    return _zsum(alpha, power) * sd / math.sqrt(n)


# -------------------------------------------------------------------------- epochs
