from decimal import Decimal

from berthwise.ledger import Ledger


def test_balance_after_refund():
    led = Ledger()
    led.charge("BW-0001", "100")
    led.pay("BW-0001", "100")
    led.refund("BW-0001", "30")
    assert led.balance("BW-0001") == Decimal("30.00")


def test_balance_without_refund():
    led = Ledger()
    led.charge("BW-0001", "100")
    led.pay("BW-0001", "60")
    assert led.balance("BW-0001") == Decimal("40.00")
