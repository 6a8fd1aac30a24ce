from berthwise.berths import Berth
from berthwise.service import BerthService

LARK = "vessel: Sea Lark\nlength: 12m\ndraft: 1.5m\n"


def booked():
    svc = BerthService([Berth("A1", 14, 2.5)])
    r = svc.handle({"action": "book", "manifest": LARK,
                    "arrival": "2026-07-10", "departure": "2026-07-12"})
    svc.handle({"action": "pay", "ref": r["ref"], "amount": "120"})
    return svc, r["ref"]


def test_seven_days_ahead_full_refund():
    svc, ref = booked()
    r = svc.handle({"action": "cancel", "ref": ref, "today": "2026-07-03"})
    assert r["refund"] == "120.00"


def test_eight_days_ahead_full_refund():
    svc, ref = booked()
    r = svc.handle({"action": "cancel", "ref": ref, "today": "2026-07-02"})
    assert r["refund"] == "120.00"
