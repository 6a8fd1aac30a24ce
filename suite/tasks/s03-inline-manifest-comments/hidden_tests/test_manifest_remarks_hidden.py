import pytest

from berthwise.manifest import ManifestError, parse_manifest


def test_remark_after_cargo_amount():
    text = ("vessel: Shag\nlength: 9m\ndraft: 1.2m\n[cargo]\n"
            "timber = 2t  # deck load\nfuel = 300kg#aft tank\n")
    info = parse_manifest(text)
    assert info["cargo"] == {"timber": 2.0, "fuel": 0.3}


def test_remark_after_vessel_name():
    text = "vessel: Shag   # ex Cormorant\nlength: 9m\ndraft: 1.2m\n"
    assert parse_manifest(text)["vessel"] == "Shag"


def test_remark_after_section_header():
    text = "vessel: Shag\nlength: 9m\ndraft: 1.2m\n[cargo]   # below deck\nice = 1t\n"
    assert parse_manifest(text)["cargo_tonnes"] == 1.0


def test_remark_after_crew():
    text = "vessel: Shag\nlength: 9m\ndraft: 1.2m\ncrew: 4 # incl. skipper\n"
    assert parse_manifest(text)["crew"] == 4


def test_indented_remark_line_and_blank_lines():
    text = "\n   # note\nvessel: Shag\n\nlength: 9m\ndraft: 1.2m\n"
    assert parse_manifest(text)["length_m"] == 9.0


def test_unknown_section_still_rejected():
    with pytest.raises(ManifestError):
        parse_manifest("vessel: Shag\nlength: 9m\ndraft: 1.2m\n[stores]\n")
