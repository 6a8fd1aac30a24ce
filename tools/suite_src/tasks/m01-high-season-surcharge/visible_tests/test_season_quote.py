from berthwise.service import BerthService

BOAT = "vessel: Skylark\nlength: 12m\ndraft: 1.5m\n"


def quote(arrival, departure):
    return BerthService().handle({"action": "quote", "manifest": BOAT,
                                  "arrival": arrival, "departure": departure})


def test_july_has_surcharge():
    assert quote("2026-07-12", "2026-07-15")["fee"] == "139.50"


def test_may_has_no_surcharge():
    assert quote("2026-05-12", "2026-05-15")["fee"] == "111.60"
