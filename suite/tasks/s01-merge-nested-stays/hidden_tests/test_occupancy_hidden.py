from datetime import date

from berthwise.windows import Window, merge_windows, occupied_nights


def sep(a, b):
    return Window(date(2026, 9, a), date(2026, 9, b))


def test_unsorted_input_is_sorted():
    assert merge_windows([sep(20, 25), sep(2, 4)]) == [sep(2, 4), sep(20, 25)]


def test_unsorted_overlapping():
    assert merge_windows([sep(12, 18), sep(5, 14)]) == [sep(5, 18)]


def test_occupied_nights_booking_order():
    stays = [sep(15, 16), sep(1, 8), sep(6, 12), sep(2, 3)]
    assert occupied_nights(stays) == 12


def test_touching_stays_merge():
    assert merge_windows([sep(1, 4), sep(4, 9)]) == [sep(1, 9)]


def test_inputs_not_modified():
    stays = [sep(3, 9), sep(1, 2)]
    merge_windows(stays)
    assert stays == [sep(3, 9), sep(1, 2)]


def test_empty():
    assert merge_windows([]) == [] and occupied_nights([]) == 0
