import pytest

from berthwise import units
from berthwise.manifest import parse_manifest
from berthwise.service import BerthService


def test_mass_with_leading_space():
    assert units.parse_mass(" 750kg") == 0.75


def test_length_with_leading_tab():
    assert units.parse_length("\t40ft") == 12.19


def test_several_cargo_lines():
    text = ("vessel: Tern\nlength: 8m\ndraft: 1m\n[cargo]\n"
            "fuel drums = 400kg\nnets =  1.5t\n")
    info = parse_manifest(text)
    assert info["cargo"] == {"fuel drums": 0.4, "nets": 1.5}
    assert info["cargo_tonnes"] == 1.9


def test_quote_includes_handling():
    text = "vessel: Tern\nlength: 8m\ndraft: 1m\n[cargo]\nice = 1t\n"
    r = BerthService().handle({"action": "quote", "manifest": text,
                               "arrival": "2026-03-01", "departure": "2026-03-02"})
    assert r["ok"] and r["fee"] == "28.40"


def test_plain_values_unchanged():
    assert units.parse_length("12.5m") == 12.5
    assert units.parse_mass("2t") == 2.0
    with pytest.raises(units.UnitError):
        units.parse_length("12 furlongs")
