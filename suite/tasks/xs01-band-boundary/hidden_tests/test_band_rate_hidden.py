from decimal import Decimal

import pytest

from berthwise import tariff


@pytest.mark.parametrize("length, rate", [(20, "3.80"), (40.0, "4.60"), (20.0, "3.80")])
def test_lower_bound_belongs_to_upper_band(length, rate):
    assert tariff.band_rate(length) == Decimal(rate)


def test_stay_fee_at_forty_metres():
    assert tariff.stay_fee(40, 2) == Decimal("368.00")


@pytest.mark.parametrize("length, rate", [(9.99, "2.50"), (19.5, "3.10"), (55, "4.60")])
def test_inside_bands(length, rate):
    assert tariff.band_rate(length) == Decimal(rate)


def test_zero_length_rejected():
    with pytest.raises(ValueError):
        tariff.band_rate(0)
