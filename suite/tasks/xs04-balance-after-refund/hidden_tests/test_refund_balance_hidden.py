from decimal import Decimal

from berthwise.ledger import Ledger


def make():
    led = Ledger()
    led.charge("BW-0007", "245.60")
    led.pay("BW-0007", "245.60")
    led.charge("BW-0008", "80")
    led.pay("BW-0008", "50")
    return led


def test_partial_refund_balance():
    led = make()
    led.refund("BW-0007", "45.60")
    assert led.balance("BW-0007") == Decimal("45.60")


def test_two_refunds_accumulate():
    led = make()
    led.refund("BW-0007", "10")
    led.refund("BW-0007", "15.25")
    assert led.balance("BW-0007") == Decimal("25.25")


def test_total_balance_across_bookings():
    led = make()
    led.refund("BW-0008", "20")
    assert led.balance() == Decimal("50.00")


def test_statement_balance_line():
    led = make()
    led.refund("BW-0007", "5")
    assert led.statement("BW-0007")[-1] == "balance  BW-0007 5.00"


def test_net_paid_unaffected():
    led = make()
    led.refund("BW-0007", "45.60")
    assert led.net_paid("BW-0007") == Decimal("200.00")
    assert led.balance("BW-0008") == Decimal("30.00")
