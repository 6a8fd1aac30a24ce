from datetime import date

from berthwise.berths import Berth, Harbour
from berthwise.service import BerthService
from berthwise.windows import Window

STAY = Window(date(2026, 9, 1), date(2026, 9, 4))


def test_three_berths_middle_size():
    h = Harbour([Berth("X9", 40, 5), Berth("M2", 20, 3), Berth("T1", 10, 2)])
    assert h.find_berth(14, 2.5, STAY).code == "M2"


def test_tie_broken_by_code():
    h = Harbour([Berth("K4", 15, 3), Berth("K2", 15, 3), Berth("Z1", 30, 4)])
    assert h.find_berth(11, 2, STAY).code == "K2"


def test_draft_rules_out_smaller_berth():
    h = Harbour([Berth("D1", 25, 4.5), Berth("D2", 16, 2)])
    assert h.find_berth(12, 3.2, STAY).code == "D1"


def test_large_vessel_not_waitlisted():
    svc = BerthService([Berth("L1", 30, 4), Berth("S1", 12, 2.5)])
    a = svc.handle({"action": "book", "manifest": "vessel: Tern\nlength: 8m\ndraft: 1m\n",
                    "arrival": "2026-09-01", "departure": "2026-09-04"})
    b = svc.handle({"action": "book", "manifest": "vessel: Leviathan\nlength: 26m\ndraft: 3.5m\n",
                    "arrival": "2026-09-02", "departure": "2026-09-05"})
    assert a["berth"] == "S1"
    assert b["waitlisted"] is False and b["berth"] == "L1"


def test_no_berth_fits():
    h = Harbour([Berth("T1", 10, 2)])
    assert h.find_berth(14, 1, STAY) is None


def test_busy_small_berth_falls_back():
    h = Harbour([Berth("S1", 12, 2.5), Berth("L1", 30, 4)])
    h.book("Wren", 9, 1.4, STAY)
    assert h.find_berth(9, 1.4, STAY).code == "L1"
