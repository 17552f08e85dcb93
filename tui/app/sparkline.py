"""A series drawn as a line of block characters, one per value."""

from __future__ import annotations

from collections.abc import Sequence

BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float], width: int) -> str:
    """The last ``width`` values as block characters, scaled between their minimum and
    maximum (a flat series is drawn as a flat middle line)."""
    tail = list(values)[-width:]
    if not tail:
        return " " * width
    low, high = min(tail), max(tail)
    if high - low <= abs(high) * 1e-3:
        return (BLOCKS[3] * len(tail)).rjust(width)
    top = len(BLOCKS) - 1
    chars = [BLOCKS[int((v - low) / (high - low) * top + 0.5)] for v in tail]
    return "".join(chars).rjust(width)
