"""Per-booking ledger of charges, payments and refunds."""

from decimal import Decimal

from .tariff import money

KINDS = ("charge", "payment", "refund")


class LedgerError(ValueError):
    pass


class Ledger:
    def __init__(self):
        self.entries = []

    def _add(self, kind, ref, amount):
        amount = money(amount)
        if amount <= 0:
            raise LedgerError("amount must be positive")
        self.entries.append((kind, ref, amount))
        return amount

    def _total(self, kind, ref=None):
        return sum(
            (a for k, r, a in self.entries if k == kind and (ref is None or r == ref)),
            Decimal("0.00"),
        )

    def charge(self, ref, amount):
        return self._add("charge", ref, amount)

    def pay(self, ref, amount):
        return self._add("payment", ref, amount)

    def refund(self, ref, amount):
        if money(amount) > self.net_paid(ref):
            raise LedgerError("refund exceeds what was paid for %s" % ref)
        return self._add("refund", ref, amount)

    def net_paid(self, ref):
        return self._total("payment", ref) - self._total("refund", ref)

    def balance(self, ref=None):
        """Amount still owed (negative when the skipper is in credit)."""
        return (
            self._total("charge", ref)
            - self._total("payment", ref)
            + self._total("refund", ref)
        )

    def statement(self, ref):
        lines = []
        for kind, r, amount in self.entries:
            if r != ref:
                continue
            sign = "-" if kind == "refund" else ""
            lines.append("%-8s %s %s%s" % (kind, r, sign, format_money(amount)))
        lines.append("%-8s %s %s" % ("balance", ref, format_money(self.balance(ref))))
        return lines


def format_money(amount):
    """'1234.5' -> '1,234.50'; negative amounts keep a leading '-'."""
    amount = money(amount)
    sign = "-" if amount < 0 else ""
    return "%s%s" % (sign, "{:,.2f}".format(abs(amount)))
