from berthwise.units import format_length


def test_forty_footer():
    assert format_length(12.19, "ft") == "40 ft 0 in"


def test_metric_unchanged():
    assert format_length(12.19) == "12.19 m"
