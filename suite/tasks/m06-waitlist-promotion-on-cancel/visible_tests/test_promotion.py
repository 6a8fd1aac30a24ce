from berthwise.berths import Berth
from berthwise.service import BerthService


def book(svc, name, length):
    return svc.handle({"action": "book",
                       "manifest": "vessel: %s\nlength: %sm\ndraft: 1.5m\n" % (name, length),
                       "arrival": "2026-05-02", "departure": "2026-05-05"})


def test_larger_waiting_boat_promoted():
    svc = BerthService([Berth("P1", 14, 2.5)])
    r = book(svc, "Wren", 10)
    assert book(svc, "Osprey", 12)["waitlisted"] is True
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-04-01"})
    assert out["promoted"] == "Osprey"
    assert len(svc.waitlist) == 0


def test_nobody_waiting():
    svc = BerthService([Berth("P1", 14, 2.5)])
    r = book(svc, "Wren", 10)
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-04-01"})
    assert out["promoted"] is None
