from berthwise.berths import Berth
from berthwise.service import BerthService


def booked_and_paid(amount):
    svc = BerthService([Berth("A1", 14, 2.5)])
    r = svc.handle({"action": "book",
                    "manifest": "vessel: Sea Lark\nlength: 12m\ndraft: 1.5m\n",
                    "arrival": "2026-08-20", "departure": "2026-08-25"})
    svc.handle({"action": "pay", "ref": r["ref"], "amount": amount})
    return svc, r["ref"]


def test_cancel_weeks_ahead_full_refund():
    svc, ref = booked_and_paid("150")
    out = svc.handle({"action": "cancel", "ref": ref, "today": "2026-07-01"})
    assert out["refund"] == "150.00"


def test_cancel_after_arrival_no_refund():
    svc, ref = booked_and_paid("150")
    out = svc.handle({"action": "cancel", "ref": ref, "today": "2026-08-21"})
    assert out["refund"] == "0.00"
