"""Stay windows: arrival (inclusive) to departure (exclusive), in whole days."""

from datetime import date

HIGH_SEASON_MONTHS = (6, 7, 8, 9)


def parse_date(text):
    """Accept ISO '2026-07-03' or day-first '03/07/2026'."""
    text = text.strip()
    if "/" in text:
        day, month, year = text.split("/")
        return date(int(year), int(month), int(day))
    return date.fromisoformat(text)


def season_of(day):
    return "high" if day.month in HIGH_SEASON_MONTHS else "low"


class Window:
    def __init__(self, start, end):
        if end <= start:
            raise ValueError("departure must be after arrival")
        self.start = start
        self.end = end

    def __repr__(self):
        return "Window(%s, %s)" % (self.start, self.end)

    def __eq__(self, other):
        return (self.start, self.end) == (other.start, other.end)

    @property
    def nights(self):
        return (self.end - self.start).days

    def overlaps(self, other):
        return self.start < other.end and other.start < self.end

    def contains(self, day):
        return self.start <= day < self.end


def merge_windows(windows):
    """Merge overlapping or touching windows into a sorted list."""
    merged = []
    for w in sorted(windows, key=lambda w: (w.start, w.end)):
        if merged and w.start <= merged[-1].end:
            merged[-1] = Window(merged[-1].start, max(merged[-1].end, w.end))
        else:
            merged.append(Window(w.start, w.end))
    return merged


def occupied_nights(windows):
    return sum(w.nights for w in merge_windows(windows))
