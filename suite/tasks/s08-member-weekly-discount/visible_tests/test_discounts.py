from decimal import Decimal

from berthwise.tariff import stay_fee


def test_member_week_capped_discount():
    assert stay_fee(10, 7, member=True) == Decimal("190.96")


def test_non_member_week():
    assert stay_fee(10, 7) == Decimal("195.30")


def test_member_short_stay():
    assert stay_fee(10, 3, member=True) == Decimal("88.35")
