from berthwise.berths import Berth
from berthwise.service import BerthService
from berthwise.waitlist import Waitlist


def book(svc, name, length, arrival="2026-09-10", departure="2026-09-12"):
    return svc.handle({"action": "book",
                       "manifest": "vessel: %s\nlength: %sm\ndraft: 2m\n" % (name, length),
                       "arrival": arrival, "departure": departure})


def test_exact_length_fits_waitlist():
    wl = Waitlist()
    wl.add("Ketch", 18.0)
    assert wl.pop_fitting(18.0) == ("Ketch", 18.0)


def test_promote_boat_equal_to_berth_length():
    svc = BerthService([Berth("R2", 20, 3)])
    r = book(svc, "Schooner", 19)
    book(svc, "Yawl", 20)
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-08-01"})
    assert out["promoted"] == "Yawl"


def test_promote_much_larger_boat():
    svc = BerthService([Berth("R2", 20, 3)])
    r = book(svc, "Dory", 5)
    book(svc, "Trawler", 17.5)
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-08-01"})
    assert out["promoted"] == "Trawler"


def test_too_long_boat_not_promoted():
    svc = BerthService([Berth("R2", 20, 3)])
    r = book(svc, "Dory", 5)
    book(svc, "Barge", 24)
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-08-01"})
    assert out["promoted"] is None
    assert svc.waitlist.names() == ["Barge"]


def test_smaller_than_limit_still_fits():
    wl = Waitlist()
    wl.add("Ketch", 11.0)
    assert wl.pop_fitting(18.0) == ("Ketch", 11.0)
