from berthwise.manifest import parse_manifest

TEXT = "vessel: Kittiwake\nlength: 12.5m\ndraft: 1.8m\n[cargo]\ntimber = 2t\n"


def test_cargo_with_spaces_parses():
    info = parse_manifest(TEXT)
    assert info["cargo"] == {"timber": 2.0}
    assert info["cargo_tonnes"] == 2.0


def test_compact_cargo_still_parses():
    info = parse_manifest(TEXT.replace("timber = 2t", "timber=2t"))
    assert info["cargo"] == {"timber": 2.0}
