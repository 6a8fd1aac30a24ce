from berthwise.berths import Berth
from berthwise.service import BerthService
from berthwise.waitlist import Waitlist


def test_none_fits_keeps_everyone():
    wl = Waitlist()
    wl.add("Ketch", 18.0)
    wl.add("Schooner", 24.0)
    assert wl.pop_fitting(15.0) is None
    assert wl.names() == ["Ketch", "Schooner"]


def test_skipped_keep_order_and_priority():
    wl = Waitlist()
    wl.add("Ketch", 18.0, priority=3)
    wl.add("Yawl", 16.0, priority=1)
    wl.add("Cutter", 9.5)
    wl.add("Sloop", 8.0)
    assert wl.pop_fitting(10.0) == ("Cutter", 9.5)
    assert wl.names() == ["Ketch", "Yawl", "Sloop"]
    assert wl.position("Sloop") == 3


def test_empty_waitlist():
    assert Waitlist().pop_fitting(50.0) is None


def test_cancel_promotes_fitting_boat():
    svc = BerthService([Berth("P1", 12, 2.5)])
    small = "vessel: Wren\nlength: 10m\ndraft: 1.5m\n"
    big = "vessel: Albatross\nlength: 14m\ndraft: 2m\n"
    other = "vessel: Coot\nlength: 7m\ndraft: 1m\n"
    r = svc.handle({"action": "book", "manifest": small,
                    "arrival": "2026-05-02", "departure": "2026-05-05"})
    svc.handle({"action": "book", "manifest": big,
                "arrival": "2026-05-02", "departure": "2026-05-05"})
    svc.handle({"action": "book", "manifest": other,
                "arrival": "2026-05-02", "departure": "2026-05-05"})
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-04-01"})
    assert out["promoted"] == "Coot"
    assert svc.waitlist.names() == ["Albatross"]


def test_exact_fit_offered():
    wl = Waitlist()
    wl.add("Ketch", 18.0)
    assert wl.pop_fitting(18.0) == ("Ketch", 18.0)
