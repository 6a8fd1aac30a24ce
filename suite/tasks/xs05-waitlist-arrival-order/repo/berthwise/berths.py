"""Berths and the bookings made against them."""

from . import codes


class BookingError(Exception):
    pass


class Berth:
    def __init__(self, code, max_length_m, max_draft_m):
        self.code = code
        self.max_length_m = max_length_m
        self.max_draft_m = max_draft_m

    def fits(self, length_m, draft_m):
        return length_m <= self.max_length_m and draft_m <= self.max_draft_m


class Booking:
    def __init__(self, ref, berth_code, window, vessel, length_m):
        self.ref = ref
        self.berth_code = berth_code
        self.window = window
        self.vessel = vessel
        self.length_m = length_m
        self.active = True


class Harbour:
    def __init__(self, berths=()):
        self.berths = {}
        self.bookings = {}
        self._next = 1
        for berth in berths:
            self.add_berth(berth)

    def add_berth(self, berth):
        if berth.code in self.berths:
            raise BookingError("duplicate berth %s" % berth.code)
        self.berths[berth.code] = berth

    def is_free(self, code, window):
        for booking in self.bookings.values():
            if not booking.active or booking.berth_code != code:
                continue
            if booking.window.overlaps(window):
                return False
        return True

    def find_berth(self, length_m, draft_m, window):
        """Smallest free berth that fits (by max length, then code)."""
        candidates = [
            b for b in self.berths.values()
            if b.fits(length_m, draft_m) and self.is_free(b.code, window)
        ]
        if not candidates:
            return None
        return min(candidates, key=lambda b: (b.max_length_m, b.code))

    def book(self, vessel, length_m, draft_m, window):
        berth = self.find_berth(length_m, draft_m, window)
        if berth is None:
            raise BookingError("no free berth for %s" % vessel)
        ref = codes.make_ref(self._next)
        self._next += 1
        self.bookings[ref] = Booking(ref, berth.code, window, vessel, length_m)
        return self.bookings[ref]

    def get(self, ref):
        try:
            return self.bookings[ref]
        except KeyError:
            raise BookingError("unknown booking %s" % ref)

    def cancel(self, ref):
        booking = self.get(ref)
        if not booking.active:
            raise BookingError("%s is already cancelled" % ref)
        booking.active = False
        return booking
