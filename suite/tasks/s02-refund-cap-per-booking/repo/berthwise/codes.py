"""Booking reference codes such as 'BW-0042'."""

REF_PREFIX = "BW"
REF_WIDTH = 4


def make_ref(number):
    return "%s-%0*d" % (REF_PREFIX, REF_WIDTH, number)


def normalize_ref(text):
    """Accept ' bw-42 ', 'BW-0042' or 'BW42' and return 'BW-0042'."""
    text = text.strip().upper()
    if not text.startswith(REF_PREFIX):
        raise ValueError("not a booking reference: %r" % text)
    digits = text[len(REF_PREFIX):].lstrip("-")
    if not digits.isdigit():
        raise ValueError("not a booking reference: %r" % text)
    return make_ref(int(digits))
