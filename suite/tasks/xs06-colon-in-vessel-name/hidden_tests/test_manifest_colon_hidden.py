import pytest

from berthwise.manifest import ManifestError, parse_manifest
from berthwise.service import BerthService

BASE = "length: 7.5m\ndraft: 1.1m\n"


def test_two_colons():
    info = parse_manifest("vessel: Ratio: 3:1\n" + BASE)
    assert info["vessel"] == "Ratio: 3:1"


def test_extra_header_with_colon_is_ignored():
    info = parse_manifest("vessel: Gull\neta: 10:30\n" + BASE)
    assert info["vessel"] == "Gull"
    assert info["length_m"] == 7.5


def test_quote_via_service():
    r = BerthService().handle({"action": "quote",
                               "manifest": "vessel: Nomad: Two\n" + BASE,
                               "arrival": "2026-04-02", "departure": "2026-04-04"})
    assert r["ok"] is True
    assert r["vessel"] == "Nomad: Two"
    assert r["fee"] == "37.50"


def test_line_without_colon_is_an_error():
    with pytest.raises(ManifestError):
        parse_manifest("vessel Gull\n" + BASE)


def test_missing_draft_reported():
    with pytest.raises(ManifestError):
        parse_manifest("vessel: Gull\nlength: 7m\n")
