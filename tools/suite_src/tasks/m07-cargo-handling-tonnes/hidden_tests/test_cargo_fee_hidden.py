from decimal import Decimal

import pytest

from berthwise import tariff, units
from berthwise.manifest import parse_manifest
from berthwise.service import BerthService

HEAD = "vessel: Tern\nlength: 8m\ndraft: 1m\n[cargo]\n"


@pytest.mark.parametrize("text, want", [("250kg", 0.25), ("1100 lb", 0.499), ("3.5t", 3.5)])
def test_parse_mass(text, want):
    assert units.parse_mass(text) == want


def test_handling_fee_per_tonne():
    assert tariff.handling_fee(3) == Decimal("25.20")
    assert tariff.handling_fee(0.5) == Decimal("4.20")


def test_mixed_cargo_quote():
    text = HEAD + "ice = 1.5t\nnets = 500kg\n"
    r = BerthService().handle({"action": "quote", "manifest": text,
                               "arrival": "2026-03-01", "departure": "2026-03-03"})
    # 40.00 berth + 2.0 t * 8.40
    assert r["fee"] == "56.80"


def test_cargo_items_in_tonnes():
    info = parse_manifest(HEAD + "ice = 1.5t\nnets = 500kg\n")
    assert info["cargo"] == {"ice": 1.5, "nets": 0.5}


def test_kg_quote_still_right():
    r = BerthService().handle({"action": "quote", "manifest": HEAD + "timber = 2000kg\n",
                               "arrival": "2026-03-01", "departure": "2026-03-02"})
    assert r["fee"] == "36.80"
