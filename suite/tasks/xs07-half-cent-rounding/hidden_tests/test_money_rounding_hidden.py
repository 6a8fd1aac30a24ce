from decimal import Decimal

import pytest

from berthwise import tariff
from berthwise.ledger import Ledger


@pytest.mark.parametrize("raw, want", [
    ("0.125", "0.13"), ("10.005", "10.01"), ("7.665", "7.67"), ("1000.085", "1000.09"),
])
def test_halves_round_up(raw, want):
    assert tariff.money(raw) == Decimal(want)


def test_nightly_fee_with_half_cent():
    # 10.15 m * 3.10 = 31.465
    assert tariff.nightly_fee(10.15) == Decimal("31.47")


def test_ledger_amounts_rounded_half_up():
    led = Ledger()
    assert led.charge("BW-0003", "12.485") == Decimal("12.49")


@pytest.mark.parametrize("raw, want", [("1.234", "1.23"), (5, "5.00"), ("3.339", "3.34")])
def test_other_values_unchanged(raw, want):
    assert tariff.money(raw) == Decimal(want)
