from datetime import date

from berthwise.berths import Berth, Harbour
from berthwise.windows import Window


def test_small_boat_gets_small_berth():
    h = Harbour([Berth("L1", 30, 4), Berth("S1", 12, 2.5)])
    stay = Window(date(2026, 6, 8), date(2026, 6, 12))
    assert h.book("Wren", 9, 1.4, stay).berth_code == "S1"


def test_only_berth():
    h = Harbour([Berth("S1", 12, 2.5)])
    stay = Window(date(2026, 6, 8), date(2026, 6, 12))
    assert h.book("Wren", 9, 1.4, stay).berth_code == "S1"
