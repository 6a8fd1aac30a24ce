from berthwise.manifest import parse_manifest


def test_remark_after_length():
    text = "vessel: Kittiwake\nlength: 12.5m   # measured at the waterline\ndraft: 1.8m\n"
    assert parse_manifest(text)["length_m"] == 12.5


def test_remark_on_own_line():
    text = "# hello\nvessel: Kittiwake\nlength: 12.5m\ndraft: 1.8m\n"
    assert parse_manifest(text)["vessel"] == "Kittiwake"
