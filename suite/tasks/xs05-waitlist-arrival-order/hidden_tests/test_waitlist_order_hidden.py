from berthwise.waitlist import Waitlist


def filled():
    wl = Waitlist()
    for name in ("Puffin", "Gannet", "Merlin", "Auk"):
        wl.add(name, 11.0)
    return wl


def test_order_of_four():
    assert filled().names() == ["Puffin", "Gannet", "Merlin", "Auk"]


def test_position():
    wl = filled()
    assert wl.position("Auk") == 4
    assert wl.position("Puffin") == 1


def test_pop_in_join_order():
    wl = filled()
    assert wl.pop_fitting(12)[0] == "Puffin"
    assert wl.pop_fitting(12)[0] == "Gannet"


def test_mixed_priorities():
    wl = Waitlist()
    wl.add("Skua", 8.0, priority=1)
    wl.add("Kestrel", 8.0)
    wl.add("Dunlin", 8.0, priority=1)
    assert wl.names() == ["Skua", "Dunlin", "Kestrel"]


def test_length_counts():
    wl = filled()
    wl.pop_fitting(12)
    assert len(wl) == 3
