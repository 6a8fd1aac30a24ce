from datetime import date

from berthwise.berths import Berth
from berthwise.service import BerthService
from berthwise.windows import Window


def test_touching_windows_do_not_overlap():
    first = Window(date(2026, 6, 1), date(2026, 6, 4))
    second = Window(date(2026, 6, 4), date(2026, 6, 6))
    assert not first.overlaps(second)


def test_same_day_turnover_books_same_berth():
    svc = BerthService([Berth("A1", 14, 2.5)])
    lark = "vessel: Sea Lark\nlength: 11m\ndraft: 1.5m\n"
    heron = "vessel: Heron\nlength: 9m\ndraft: 1.2m\n"
    r1 = svc.handle({"action": "book", "manifest": lark,
                     "arrival": "2026-06-01", "departure": "2026-06-04"})
    r2 = svc.handle({"action": "book", "manifest": heron,
                     "arrival": "2026-06-04", "departure": "2026-06-06"})
    assert r1["berth"] == "A1"
    assert r2["waitlisted"] is False and r2["berth"] == "A1"
