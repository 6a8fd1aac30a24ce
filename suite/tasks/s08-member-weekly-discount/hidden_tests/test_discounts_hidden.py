from decimal import Decimal

import pytest

from berthwise import tariff
from berthwise.berths import Berth
from berthwise.service import BerthService


def test_member_fortnight_high_season():
    # 24 m: 91.20 a night * 14 * 1.25 = 1596.00, less 12 %
    assert tariff.stay_fee(24, 14, "high", True) == Decimal("1404.48")


def test_member_week_small_boat():
    # 8 m: 20.00 * 9 = 180.00, less 12 %
    assert tariff.stay_fee(8, 9, member=True) == Decimal("158.40")


def test_member_never_pays_more():
    for nights in range(1, 20):
        assert tariff.stay_fee(15, nights, member=True) <= tariff.stay_fee(15, nights)


def test_quote_for_member():
    svc = BerthService([Berth("A1", 14, 2.5)])
    r = svc.handle({"action": "quote", "member": True,
                    "manifest": "vessel: Skylark\nlength: 12m\ndraft: 1.5m\n",
                    "arrival": "2026-11-02", "departure": "2026-11-10"})
    # 37.20 * 8 = 297.60, less 12 %
    assert r["fee"] == "261.89"


@pytest.mark.parametrize("args, want", [
    ((10, 2), "62.00"), ((10, 2, "high"), "77.50"), ((30, 8), "820.80"),
])
def test_other_fees(args, want):
    assert tariff.stay_fee(*args) == Decimal(want)
