"""Bucket counts of one latency metric, for the engines' ``/metrics`` pages."""

from __future__ import annotations

from collections.abc import Sequence


class Histogram:
    """Cumulative-free bucket counts for one metric (guarded by the caller's thread)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[index] += 1
                break
        else:
            self.counts[-1] += 1
        self.total += value
