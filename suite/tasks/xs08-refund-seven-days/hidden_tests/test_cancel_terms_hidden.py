from decimal import Decimal

import pytest

from berthwise import tariff
from berthwise.berths import Berth
from berthwise.service import BerthService


def test_fraction_at_threshold():
    assert tariff.refund_fraction(7) == Decimal("1")


def test_cancel_seven_days_before_autumn_stay():
    svc = BerthService([Berth("C2", 25, 3)])
    r = svc.handle({"action": "book",
                    "manifest": "vessel: Curlew\nlength: 22m\ndraft: 2.4m\n",
                    "arrival": "2026-10-20", "departure": "2026-10-23"})
    svc.handle({"action": "pay", "ref": r["ref"], "amount": "87.35"})
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-10-13"})
    assert out["refund"] == "87.35"


@pytest.mark.parametrize("days, want", [(30, "1"), (6, "0.5"), (1, "0.5"), (0, "0"), (-2, "0")])
def test_other_fractions(days, want):
    assert tariff.refund_fraction(days) == Decimal(want)
