from datetime import date
from decimal import Decimal

import pytest

from berthwise import tariff, windows
from berthwise.service import BerthService


def test_tariff_high_season_factor():
    # 18 m: 55.80 a night * 2 * 1.25
    assert tariff.stay_fee(18, 2, "high") == Decimal("139.50")


@pytest.mark.parametrize("month", [6, 7, 8, 9])
def test_high_months(month):
    assert windows.season_of(date(2027, month, 28)) == "high"


@pytest.mark.parametrize("month", [5, 10])
def test_low_months(month):
    assert windows.season_of(date(2027, month, 1)) == "low"


def test_september_quote_for_large_boat():
    r = BerthService().handle({
        "action": "quote", "manifest": "vessel: Orca\nlength: 45m\ndraft: 4m\n",
        "arrival": "2026-09-29", "departure": "2026-10-01"})
    # 207.00 a night * 2 * 1.25
    assert r["fee"] == "517.50"


def test_low_season_tariff_unchanged():
    assert tariff.stay_fee(18, 2) == Decimal("111.60")
