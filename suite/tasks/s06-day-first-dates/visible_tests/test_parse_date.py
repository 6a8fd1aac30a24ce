from datetime import date

from berthwise.windows import parse_date


def test_day_first():
    assert parse_date("03/07/2026") == date(2026, 7, 3)


def test_iso():
    assert parse_date("2026-07-03") == date(2026, 7, 3)
