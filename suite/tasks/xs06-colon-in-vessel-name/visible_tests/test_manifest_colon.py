from berthwise.manifest import parse_manifest


def test_vessel_name_keeps_colon():
    info = parse_manifest("vessel: Sea Lark: Mk II\nlength: 11.2m\ndraft: 1.6m\n")
    assert info["vessel"] == "Sea Lark: Mk II"


def test_plain_name():
    info = parse_manifest("vessel: Sea Lark\nlength: 11.2m\ndraft: 1.6m\n")
    assert info["vessel"] == "Sea Lark"
