from datetime import date

import pytest

from berthwise import codes
from berthwise.berths import Berth, Harbour
from berthwise.service import BerthService
from berthwise.windows import Window


@pytest.mark.parametrize("text", ["bw-0012", " Bw-12 ", "bw12", "BW-0012"])
def test_normalize_variants(text):
    assert codes.normalize_ref(text) == "BW-0012"


def test_harbour_refs_use_documented_format():
    h = Harbour([Berth("A1", 10, 2), Berth("A2", 10, 2)])
    stay = Window(date(2026, 10, 1), date(2026, 10, 2))
    h.book("Tern", 8, 1, stay)
    assert h.book("Coot", 8, 1, stay).ref == "BW-0002"
    assert sorted(h.bookings) == ["BW-0001", "BW-0002"]


def test_cancel_with_short_lower_case_ref():
    svc = BerthService([Berth("A1", 10, 2), Berth("A2", 10, 2)])
    for name in ("Tern", "Coot"):
        svc.handle({"action": "book", "manifest": "vessel: %s\nlength: 8m\ndraft: 1m\n" % name,
                    "arrival": "2026-10-05", "departure": "2026-10-06"})
    out = svc.handle({"action": "cancel", "ref": "bw-2", "today": "2026-09-01"})
    assert out["ok"] is True and out["ref"] == "BW-0002"


def test_garbage_rejected():
    with pytest.raises(ValueError):
        codes.normalize_ref("XY-0001")
    with pytest.raises(ValueError):
        codes.normalize_ref("BW-12a")


def test_make_ref():
    assert codes.make_ref(345) == "BW-0345"
