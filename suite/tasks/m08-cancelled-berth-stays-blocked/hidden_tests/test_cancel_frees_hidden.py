from datetime import date

from berthwise.berths import Berth, Harbour
from berthwise.service import BerthService
from berthwise.windows import Window


def stay(a, b):
    return Window(date(2026, 12, a), date(2026, 12, b))


def test_harbour_cancel_frees_berth():
    h = Harbour([Berth("G5", 25, 3)])
    b = h.book("Orca", 22, 2.5, stay(10, 20))
    h.cancel(b.ref)
    assert h.is_free("G5", stay(12, 14))


def test_service_marks_booking_cancelled():
    svc = BerthService([Berth("G5", 25, 3)])
    r = svc.handle({"action": "book", "manifest": "vessel: Orca\nlength: 22m\ndraft: 2.5m\n",
                    "arrival": "2026-12-10", "departure": "2026-12-20"})
    svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-11-01"})
    assert svc.harbour.get(r["ref"]).active is False


def test_second_cancel_refused():
    svc = BerthService([Berth("G5", 25, 3)])
    r = svc.handle({"action": "book", "manifest": "vessel: Orca\nlength: 22m\ndraft: 2.5m\n",
                    "arrival": "2026-12-10", "departure": "2026-12-20"})
    svc.handle({"action": "pay", "ref": r["ref"], "amount": "100"})
    svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-12-07"})
    out = svc.handle({"action": "cancel", "ref": r["ref"], "today": "2026-12-07"})
    assert out["ok"] is False and "already cancelled" in out["error"]


def test_other_bookings_still_block():
    h = Harbour([Berth("G5", 25, 3)])
    a = h.book("Orca", 22, 2.5, stay(1, 5))
    h.book("Seal", 20, 2.5, stay(10, 15))
    h.cancel(a.ref)
    assert h.is_free("G5", stay(2, 4))
    assert not h.is_free("G5", stay(12, 13))


def test_cancelled_twice_on_harbour():
    h = Harbour([Berth("G5", 25, 3)])
    b = h.book("Orca", 22, 2.5, stay(10, 20))
    h.cancel(b.ref)
    try:
        h.cancel(b.ref)
    except Exception as exc:
        assert "already cancelled" in str(exc)
    else:
        raise AssertionError("second cancel accepted")
