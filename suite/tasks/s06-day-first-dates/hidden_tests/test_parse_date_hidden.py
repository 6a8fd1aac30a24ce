from datetime import date

import pytest

from berthwise.service import BerthService
from berthwise.windows import parse_date


@pytest.mark.parametrize("text, want", [
    ("25/12/2026", date(2026, 12, 25)),
    ("1/2/2027", date(2027, 2, 1)),
    ("11/04/2026", date(2026, 4, 11)),
])
def test_other_day_first_dates(text, want):
    assert parse_date(text) == want


def test_surrounding_spaces():
    assert parse_date(" 2026-08-01 ") == date(2026, 8, 1)
    assert parse_date(" 09/08/2026\n") == date(2026, 8, 9)


def test_quote_with_day_first_dates():
    r = BerthService().handle({
        "action": "quote", "manifest": "vessel: Tern\nlength: 8m\ndraft: 1m\n",
        "arrival": "13/10/2026", "departure": "16/10/2026"})
    assert r["ok"] and r["nights"] == 3


def test_iso_unchanged():
    assert parse_date("2027-01-31") == date(2027, 1, 31)
