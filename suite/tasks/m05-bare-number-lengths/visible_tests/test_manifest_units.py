from berthwise.manifest import parse_manifest


def test_bare_length_is_metres():
    info = parse_manifest("vessel: Kittiwake\nlength: 12\ndraft: 1.8m\n")
    assert info["length_m"] == 12.0


def test_draft_in_feet():
    info = parse_manifest("vessel: Kittiwake\nlength: 40ft\ndraft: 6ft\n")
    assert info["draft_m"] == 1.83
    assert info["length_m"] == 12.19
