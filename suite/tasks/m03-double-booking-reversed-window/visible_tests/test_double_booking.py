from berthwise.berths import Berth
from berthwise.service import BerthService


def book(svc, name, arrival, departure):
    return svc.handle({"action": "book",
                       "manifest": "vessel: %s\nlength: 10m\ndraft: 1.5m\n" % name,
                       "arrival": arrival, "departure": departure})


def test_overlapping_second_booking_waitlisted():
    svc = BerthService([Berth("V1", 12, 2)])
    assert book(svc, "Sea Lark", "2026-06-01", "2026-06-05")["berth"] == "V1"
    assert book(svc, "Heron", "2026-06-03", "2026-06-08")["waitlisted"] is True


def test_quote_nights():
    r = BerthService().handle({"action": "quote",
                               "manifest": "vessel: Heron\nlength: 10m\ndraft: 1.5m\n",
                               "arrival": "2026-06-03", "departure": "2026-06-08"})
    assert r["nights"] == 5
