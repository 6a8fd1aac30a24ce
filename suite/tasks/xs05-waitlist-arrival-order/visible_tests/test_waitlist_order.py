from berthwise.waitlist import Waitlist


def test_first_come_first_served():
    wl = Waitlist()
    wl.add("Zephyr", 9.0)
    wl.add("Albatross", 9.0)
    assert wl.names() == ["Zephyr", "Albatross"]


def test_priority_wins():
    wl = Waitlist()
    wl.add("Zephyr", 9.0)
    wl.add("Albatross", 9.0, priority=2)
    assert wl.names()[0] == "Albatross"
