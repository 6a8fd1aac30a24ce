import pytest

from berthwise.ledger import Ledger, LedgerError


def test_refund_limited_to_own_booking():
    led = Ledger()
    led.pay("BW-0001", "50")
    led.pay("BW-0002", "200")
    with pytest.raises(LedgerError):
        led.refund("BW-0001", "80")


def test_refund_within_payment_allowed():
    led = Ledger()
    led.pay("BW-0001", "50")
    assert str(led.refund("BW-0001", "20")) == "20.00"
