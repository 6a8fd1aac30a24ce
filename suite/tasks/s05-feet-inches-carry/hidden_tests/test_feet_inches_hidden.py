import pytest

from berthwise.units import format_length


@pytest.mark.parametrize("metres, want", [
    (6.09, "20 ft 0 in"), (9.14, "30 ft 0 in"), (4.57, "15 ft 0 in"), (18.28, "60 ft 0 in"),
])
def test_carry_into_feet(metres, want):
    assert format_length(metres, "ft") == want


def test_never_twelve_inches():
    for cm in range(300, 2500, 7):
        assert not format_length(cm / 100, "ft").endswith(" 12 in")


@pytest.mark.parametrize("metres, want", [(3.0, "9 ft 10 in"), (12.5, "41 ft 0 in"), (7.7, "25 ft 3 in")])
def test_ordinary_lengths(metres, want):
    assert format_length(metres, "ft") == want
