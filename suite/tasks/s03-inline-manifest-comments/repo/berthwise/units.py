"""Unit conversions for vessel dimensions and cargo."""

FEET_PER_METRE = 3.28084
KG_PER_TONNE = 1000.0
LB_PER_KG = 2.20462


class UnitError(ValueError):
    pass


def feet_to_metres(feet):
    return round(feet / FEET_PER_METRE, 2)


def metres_to_feet(metres):
    return round(metres * FEET_PER_METRE, 2)


def _split_number(text):
    text = text.strip().lower()
    i = 0
    while i < len(text) and (text[i].isdigit() or text[i] == "."):
        i += 1
    number, unit = text[:i], text[i:].strip()
    if not number:
        raise UnitError("no number in %r" % text)
    return float(number), unit


def parse_length(text):
    """Parse '12.5m', '40ft', '40 ft' or a bare number (metres) into metres."""
    value, unit = _split_number(text)
    if unit in ("", "m"):
        return round(value, 2)
    if unit in ("ft", "feet"):
        return feet_to_metres(value)
    raise UnitError("unknown length unit %r" % unit)


def parse_mass(text):
    """Parse '500kg', '2t', '300 lb' or a bare number (tonnes) into tonnes."""
    value, unit = _split_number(text)
    if unit in ("", "t"):
        return round(value, 3)
    if unit == "kg":
        return round(value / KG_PER_TONNE, 3)
    if unit == "lb":
        return round(value / LB_PER_KG / KG_PER_TONNE, 3)
    raise UnitError("unknown mass unit %r" % unit)


def format_length(metres, unit="m"):
    """Render a length for a confirmation slip: '12.50 m' or '41 ft 0 in'."""
    if unit == "m":
        return "%.2f m" % metres
    total_inches = metres * FEET_PER_METRE * 12
    feet = int(total_inches // 12)
    inches = round(total_inches - feet * 12)
    if inches == 12:
        feet += 1
        inches = 0
    return "%d ft %d in" % (feet, inches)
