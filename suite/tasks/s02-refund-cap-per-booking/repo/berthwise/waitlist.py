"""Waitlist of vessels waiting for a berth: higher priority first, then FIFO."""

import heapq


class Waitlist:
    def __init__(self):
        self._heap = []
        self._seq = 0

    def __len__(self):
        return len(self._heap)

    def add(self, name, length_m, priority=0):
        if any(entry[2] == name for entry in self._heap):
            raise ValueError("%s is already waiting" % name)
        heapq.heappush(self._heap, (-priority, self._seq, name, length_m))
        self._seq += 1

    def names(self):
        return [entry[2] for entry in sorted(self._heap)]

    def position(self, name):
        for index, entry_name in enumerate(self.names(), start=1):
            if entry_name == name:
                return index
        raise KeyError(name)

    def pop_fitting(self, max_length_m):
        """Remove and return (name, length) of the first vessel that fits."""
        skipped = []
        found = None
        while self._heap:
            entry = heapq.heappop(self._heap)
            if entry[3] <= max_length_m:
                found = entry
                break
            skipped.append(entry)
        for entry in skipped:
            heapq.heappush(self._heap, entry)
        if found is None:
            return None
        return found[2], found[3]
