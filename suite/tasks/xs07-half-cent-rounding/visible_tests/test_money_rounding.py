from decimal import Decimal

from berthwise.tariff import money


def test_half_cent_goes_up():
    assert money("2.345") == Decimal("2.35")


def test_below_half_goes_down():
    assert money("2.344") == Decimal("2.34")
