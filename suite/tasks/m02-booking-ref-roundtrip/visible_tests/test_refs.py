from berthwise.berths import Berth
from berthwise.service import BerthService

BOAT = "vessel: Tern\nlength: 8m\ndraft: 1m\n"


def booked():
    svc = BerthService([Berth("A1", 10, 2)])
    r = svc.handle({"action": "book", "manifest": BOAT,
                    "arrival": "2026-04-01", "departure": "2026-04-03"})
    return svc, r


def test_confirmation_ref_format():
    _, r = booked()
    assert r["ref"] == "BW-0001"


def test_pay_with_confirmation_ref():
    svc, r = booked()
    out = svc.handle({"action": "pay", "ref": r["ref"], "amount": "10"})
    assert out["ok"] is True and out["balance"] == "30.00"


def test_lower_case_ref():
    svc, _ = booked()
    out = svc.handle({"action": "pay", "ref": "bw-1", "amount": "10"})
    assert out["ok"] is True
