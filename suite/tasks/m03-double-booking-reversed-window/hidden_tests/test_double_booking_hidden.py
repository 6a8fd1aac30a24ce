from datetime import date

import pytest

from berthwise.berths import Berth
from berthwise.service import BerthService
from berthwise.windows import Window

BOAT = "vessel: %s\nlength: 9m\ndraft: 1.2m\n"


def req(action, name, arrival, departure):
    return {"action": action, "manifest": BOAT % name, "arrival": arrival, "departure": departure}


def test_window_rejects_reversed_dates():
    with pytest.raises(ValueError):
        Window(date(2026, 8, 9), date(2026, 8, 2))


def test_window_rejects_zero_nights():
    with pytest.raises(ValueError):
        Window(date(2026, 8, 9), date(2026, 8, 9))


def test_service_refuses_reversed_request():
    r = BerthService().handle(req("quote", "Auk", "2026-03-10", "2026-03-07"))
    assert r["ok"] is False and "departure" in r["error"]


def test_overlap_in_autumn_waitlisted():
    svc = BerthService([Berth("Q1", 10, 2)])
    svc.handle(req("book", "Auk", "2026-10-10", "2026-10-20"))
    r = svc.handle(req("book", "Puffin", "2026-10-12", "2026-10-14"))
    assert r["waitlisted"] is True


def test_season_follows_arrival():
    r = BerthService().handle(req("quote", "Auk", "2026-05-30", "2026-06-02"))
    # 9 m: 22.50 a night * 3, low season
    assert r["fee"] == "67.50"


def test_non_overlapping_share_berth():
    svc = BerthService([Berth("Q1", 10, 2)])
    svc.handle(req("book", "Auk", "2026-10-10", "2026-10-20"))
    r = svc.handle(req("book", "Puffin", "2026-10-20", "2026-10-22"))
    assert r["berth"] == "Q1"
