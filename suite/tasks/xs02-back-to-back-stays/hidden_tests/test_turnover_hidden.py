from datetime import date

from berthwise.berths import Berth, Harbour
from berthwise.windows import Window


def w(a, b):
    return Window(date(2026, 8, a), date(2026, 8, b))


def test_touching_in_august():
    assert not w(10, 17).overlaps(w(17, 20))


def test_touching_other_order():
    assert not w(17, 20).overlaps(w(10, 17))


def test_harbour_free_on_departure_day():
    h = Harbour([Berth("Q7", 30, 4)])
    h.book("Osprey", 25, 3, w(3, 9))
    assert h.is_free("Q7", w(9, 12))
    assert not h.is_free("Q7", w(8, 12))


def test_real_overlap_still_detected():
    assert w(1, 5).overlaps(w(4, 8))
    assert w(4, 8).overlaps(w(1, 5))


def test_contains_is_half_open():
    assert w(1, 5).contains(date(2026, 8, 1))
    assert not w(1, 5).contains(date(2026, 8, 5))
