"""Parser for the plain-text vessel manifest skippers submit with a request.

    # comments start with '#', also after a value
    vessel: Sea Lark
    length: 12.5m
    draft: 1.8m
    crew: 3
    [cargo]
    fuel drums = 400kg
    timber = 2t
"""

from . import units

REQUIRED = ("vessel", "length", "draft")


class ManifestError(ValueError):
    def __init__(self, lineno, message):
        super().__init__("line %d: %s" % (lineno, message))
        self.lineno = lineno


def _strip_comment(line):
    pos = line.find("#")
    if pos >= 0:
        line = line[:pos]
    return line.strip()


def parse_manifest(text):
    header = {}
    cargo = {}
    section = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            if section != "cargo":
                raise ManifestError(lineno, "unknown section %r" % section)
            continue
        if section == "cargo":
            if "=" not in line:
                raise ManifestError(lineno, "expected 'item = amount'")
            item, amount = line.split("=", 1)
            try:
                cargo[item.strip()] = units.parse_mass(amount)
            except units.UnitError as exc:
                raise ManifestError(lineno, str(exc))
            continue
        if ":" not in line:
            raise ManifestError(lineno, "expected 'key: value'")
        key, value = line.split(":", 1)
        header[key.strip().lower()] = value.strip()
    for key in REQUIRED:
        if key not in header:
            raise ManifestError(0, "missing %r" % key)
    try:
        length_m = units.parse_length(header["length"])
        draft_m = units.parse_length(header["draft"])
    except units.UnitError as exc:
        raise ManifestError(0, str(exc))
    return {
        "vessel": header["vessel"],
        "length_m": length_m,
        "draft_m": draft_m,
        "crew": int(header.get("crew", "1")),
        "cargo": cargo,
        "cargo_tonnes": round(sum(cargo.values()), 3),
    }
