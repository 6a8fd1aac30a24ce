"""Request handling: one dict in, one dict out."""

from . import codes, manifest, tariff, windows
from .berths import BookingError, Harbour
from .ledger import Ledger, LedgerError
from .waitlist import Waitlist


class BerthService:
    def __init__(self, berths=()):
        self.harbour = Harbour(berths)
        self.ledger = Ledger()
        self.waitlist = Waitlist()

    def handle(self, request):
        action = request.get("action")
        handler = getattr(self, "_do_" + str(action), None)
        if handler is None:
            return {"ok": False, "error": "unknown action %r" % action}
        try:
            result = handler(request)
        except (BookingError, LedgerError, manifest.ManifestError, ValueError) as exc:
            return {"ok": False, "error": str(exc)}
        result["ok"] = True
        return result

    def _stay(self, request):
        vessel = manifest.parse_manifest(request["manifest"])
        window = windows.Window(
            windows.parse_date(request["arrival"]),
            windows.parse_date(request["departure"]),
        )
        return vessel, window

    def _price(self, vessel, window, member):
        season = windows.season_of(window.start)
        fee = tariff.stay_fee(vessel["length_m"], window.nights, season, member)
        return fee + tariff.handling_fee(vessel["cargo_tonnes"])

    def _do_quote(self, request):
        vessel, window = self._stay(request)
        fee = self._price(vessel, window, request.get("member", False))
        return {"vessel": vessel["vessel"], "nights": window.nights, "fee": str(fee)}

    def _do_book(self, request):
        vessel, window = self._stay(request)
        fee = self._price(vessel, window, request.get("member", False))
        try:
            booking = self.harbour.book(
                vessel["vessel"], vessel["length_m"], vessel["draft_m"], window
            )
        except BookingError:
            self.waitlist.add(
                vessel["vessel"], vessel["length_m"], request.get("priority", 0)
            )
            return {
                "waitlisted": True,
                "position": self.waitlist.position(vessel["vessel"]),
            }
        self.ledger.charge(booking.ref, fee)
        return {
            "waitlisted": False,
            "ref": booking.ref,
            "berth": booking.berth_code,
            "fee": str(fee),
        }

    def _do_pay(self, request):
        ref = codes.normalize_ref(request["ref"])
        self.harbour.get(ref)
        self.ledger.pay(ref, request["amount"])
        return {"ref": ref, "balance": str(self.ledger.balance(ref))}

    def _do_cancel(self, request):
        ref = codes.normalize_ref(request["ref"])
        booking = self.harbour.get(ref)
        today = windows.parse_date(request["today"])
        days_before = (booking.window.start - today).days
        fraction = tariff.refund_fraction(days_before)
        refund = tariff.money(self.ledger.net_paid(ref) * fraction)
        if refund > 0:
            self.ledger.refund(ref, refund)
        self.harbour.cancel(ref)
        berth = self.harbour.berths[booking.berth_code]
        promoted = self.waitlist.pop_fitting(berth.max_length_m)
        return {
            "ref": ref,
            "refund": str(refund),
            "promoted": promoted[0] if promoted else None,
        }

    def _do_statement(self, request):
        ref = codes.normalize_ref(request["ref"])
        self.harbour.get(ref)
        return {"ref": ref, "lines": self.ledger.statement(ref)}
