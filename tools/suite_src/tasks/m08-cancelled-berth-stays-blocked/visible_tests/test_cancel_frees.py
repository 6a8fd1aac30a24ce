from berthwise.berths import Berth
from berthwise.service import BerthService


def book(svc, name, arrival, departure):
    return svc.handle({"action": "book",
                       "manifest": "vessel: %s\nlength: 9m\ndraft: 1.2m\n" % name,
                       "arrival": arrival, "departure": departure})


def test_berth_free_after_cancel():
    svc = BerthService([Berth("A1", 12, 2)])
    r = book(svc, "Wren", "2026-07-01", "2026-07-04")
    svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-06-01"})
    again = book(svc, "Heron", "2026-07-02", "2026-07-03")
    assert again["waitlisted"] is False and again["berth"] == "A1"


def test_berth_busy_without_cancel():
    svc = BerthService([Berth("A1", 12, 2)])
    book(svc, "Wren", "2026-07-01", "2026-07-04")
    assert book(svc, "Heron", "2026-07-02", "2026-07-03")["waitlisted"] is True
