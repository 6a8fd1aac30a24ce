import pytest

from berthwise import units
from berthwise.manifest import ManifestError, parse_manifest
from berthwise.service import BerthService


@pytest.mark.parametrize("text, want", [("7.25", 7.25), ("18", 18.0), ("33 ft", 10.06), ("21feet", 6.4)])
def test_parse_length(text, want):
    assert units.parse_length(text) == want


def test_bare_draft_and_length():
    info = parse_manifest("vessel: Gannet\nlength: 15.5\ndraft: 2.1\n")
    assert (info["length_m"], info["draft_m"]) == (15.5, 2.1)


def test_draft_in_feet_with_space():
    info = parse_manifest("vessel: Gannet\nlength: 15.5m\ndraft: 8 ft\n")
    assert info["draft_m"] == 2.44


def test_bad_draft_unit_is_manifest_error():
    with pytest.raises(ManifestError):
        parse_manifest("vessel: Gannet\nlength: 15.5m\ndraft: 2 fathoms\n")


def test_quote_bare_length():
    r = BerthService().handle({"action": "quote",
                               "manifest": "vessel: Gannet\nlength: 15\ndraft: 2\n",
                               "arrival": "2026-04-01", "departure": "2026-04-03"})
    assert r["fee"] == "93.00"


def test_metric_lengths_unchanged():
    assert units.parse_length("9.5m") == 9.5
