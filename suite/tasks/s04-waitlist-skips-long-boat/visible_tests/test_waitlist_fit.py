from berthwise.waitlist import Waitlist


def test_smaller_boat_behind_is_offered():
    wl = Waitlist()
    wl.add("Brigantine", 30.0)
    wl.add("Dinghy Club", 6.0)
    assert wl.pop_fitting(12.0) == ("Dinghy Club", 6.0)
    assert wl.names() == ["Brigantine"]


def test_head_fits():
    wl = Waitlist()
    wl.add("Dinghy Club", 6.0)
    assert wl.pop_fitting(12.0) == ("Dinghy Club", 6.0)
