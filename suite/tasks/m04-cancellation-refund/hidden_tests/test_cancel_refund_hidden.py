from decimal import Decimal

import pytest

from berthwise.berths import Berth
from berthwise.ledger import Ledger, LedgerError
from berthwise.service import BerthService


def booked_and_paid(amount):
    svc = BerthService([Berth("B3", 20, 3)])
    r = svc.handle({"action": "book",
                    "manifest": "vessel: Curlew\nlength: 16m\ndraft: 2m\n",
                    "arrival": "2026-11-10", "departure": "2026-11-13"})
    svc.handle({"action": "pay", "ref": r["ref"], "amount": amount})
    return svc, r["ref"]


def test_half_refund_three_days_ahead():
    svc, ref = booked_and_paid("99.99")
    out = svc.handle({"action": "cancel", "ref": ref, "today": "2026-11-07"})
    assert out["refund"] == "50.00"


def test_full_refund_month_ahead():
    svc, ref = booked_and_paid("80")
    out = svc.handle({"action": "cancel", "ref": ref, "today": "2026-10-10"})
    assert out["refund"] == "80.00"
    assert svc.ledger.net_paid(ref) == Decimal("0.00")


def test_net_paid_after_refund():
    led = Ledger()
    led.pay("BW-0002", "100")
    led.refund("BW-0002", "40")
    assert led.net_paid("BW-0002") == Decimal("60.00")


def test_refund_beyond_remaining_refused():
    led = Ledger()
    led.pay("BW-0002", "100")
    led.refund("BW-0002", "40")
    with pytest.raises(LedgerError):
        led.refund("BW-0002", "70")


def test_cancel_on_arrival_day():
    svc, ref = booked_and_paid("80")
    out = svc.handle({"action": "cancel", "ref": ref, "today": "2026-11-10"})
    assert out["ok"] is True and out["refund"] == "0.00"
