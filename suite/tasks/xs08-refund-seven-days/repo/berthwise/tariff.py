"""Berth tariffs: per-metre nightly rates, season factor, discounts, refunds."""

from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")

# (lower bound inclusive, upper bound exclusive, rate per metre per night)
BANDS = [
    (0, 10, Decimal("2.50")),
    (10, 20, Decimal("3.10")),
    (20, 40, Decimal("3.80")),
    (40, None, Decimal("4.60")),
]

HIGH_SEASON_FACTOR = Decimal("1.25")
WEEKLY_NIGHTS = 7
WEEKLY_DISCOUNT = Decimal("0.10")
MEMBER_DISCOUNT = Decimal("0.05")
MAX_DISCOUNT = Decimal("0.12")
HANDLING_RATE_PER_TONNE = Decimal("8.40")
FULL_REFUND_DAYS = 7


def money(value):
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


def band_rate(length_m):
    if length_m <= 0:
        raise ValueError("length must be positive")
    for lower, upper, rate in BANDS:
        if length_m >= lower and (upper is None or length_m < upper):
            return rate
    raise ValueError("no band for %r" % length_m)


def nightly_fee(length_m):
    return money(Decimal(str(length_m)) * band_rate(length_m))


def stay_fee(length_m, nights, season="low", member=False):
    if nights < 1:
        raise ValueError("a stay is at least one night")
    base = nightly_fee(length_m) * nights
    if season == "high":
        base = base * HIGH_SEASON_FACTOR
    discount = Decimal("0")
    if nights >= WEEKLY_NIGHTS:
        discount += WEEKLY_DISCOUNT
    if member:
        discount += MEMBER_DISCOUNT
    discount = min(discount, MAX_DISCOUNT)
    return money(base * (1 - discount))


def handling_fee(tonnes):
    return money(Decimal(str(tonnes)) * HANDLING_RATE_PER_TONNE)


def refund_fraction(days_before_arrival):
    if days_before_arrival > FULL_REFUND_DAYS:
        return Decimal("1")
    if days_before_arrival >= 1:
        return Decimal("0.5")
    return Decimal("0")
