from decimal import Decimal

import pytest

from berthwise.ledger import Ledger, LedgerError


def test_second_refund_refused():
    led = Ledger()
    led.pay("BW-0031", "100")
    led.refund("BW-0031", "70")
    with pytest.raises(LedgerError):
        led.refund("BW-0031", "70")


def test_refund_on_unpaid_booking_refused():
    led = Ledger()
    led.pay("BW-0004", "300")
    led.charge("BW-0005", "90")
    with pytest.raises(LedgerError):
        led.refund("BW-0005", "10")


def test_exact_remaining_allowed():
    led = Ledger()
    led.pay("BW-0012", "64.20")
    led.refund("BW-0012", "14.20")
    assert led.refund("BW-0012", "50.00") == Decimal("50.00")
    assert led.net_paid("BW-0012") == Decimal("0.00")


def test_refused_refund_not_recorded():
    led = Ledger()
    led.pay("BW-0009", "10")
    led.pay("BW-0010", "10")
    with pytest.raises(LedgerError):
        led.refund("BW-0009", "15")
    assert led.net_paid("BW-0009") == Decimal("10.00")


def test_non_positive_amount_rejected():
    led = Ledger()
    with pytest.raises(LedgerError):
        led.pay("BW-0001", "0")
