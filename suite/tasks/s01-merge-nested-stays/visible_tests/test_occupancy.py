from datetime import date

from berthwise.windows import Window, merge_windows, occupied_nights


def may(a, b):
    return Window(date(2026, 5, a), date(2026, 5, b))


def test_nested_stay_is_absorbed():
    assert merge_windows([may(1, 10), may(3, 5)]) == [may(1, 10)]


def test_occupied_nights_nested():
    assert occupied_nights([may(1, 10), may(3, 5)]) == 9


def test_disjoint_stays():
    assert occupied_nights([may(1, 3), may(20, 22)]) == 4
