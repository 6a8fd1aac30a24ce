from decimal import Decimal

from berthwise import tariff


def test_ten_metres_is_in_second_band():
    assert tariff.band_rate(10.0) == Decimal("3.10")


def test_ten_metre_nightly_fee():
    assert tariff.nightly_fee(10) == Decimal("31.00")


def test_mid_band_unchanged():
    assert tariff.band_rate(15.5) == Decimal("3.10")
