from berthwise.manifest import parse_manifest
from berthwise.service import BerthService

HEAD = "vessel: Tern\nlength: 8m\ndraft: 1m\n[cargo]\n"


def test_quote_with_tonnes():
    r = BerthService().handle({"action": "quote", "manifest": HEAD + "timber = 2t\n",
                               "arrival": "2026-03-01", "departure": "2026-03-02"})
    assert r["fee"] == "36.80"


def test_manifest_reports_tonnes():
    info = parse_manifest(HEAD + "fuel drums = 400kg\n")
    assert info["cargo_tonnes"] == 0.4
