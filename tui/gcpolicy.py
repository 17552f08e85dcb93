"""Garbage collection for babysit's long-running processes (the screens, ``export``).

CPython collects its youngest generation every 700 net allocations. A screen that
follows a busy log allocates rows, strips and samples by the hundred thousand a
second, and each collection also walks what the last ones kept: following 5,000
lines/s, collection took 15 % of the screen's CPU (0.74 s of 4.8 s in 15 s, 802
young and 6 full collections). What babysit allocates is freed by reference
counting all but never through a cycle, so collecting a hundred times less often
costs next to no memory.
"""

from __future__ import annotations

import gc

#: Net allocations between two collections of the youngest generation (CPython: 700).
YOUNG = 10_000


def for_long_run() -> None:
    """Leave what startup made (modules, classes, the config) out of every collection from
    here on, and collect the young generation every :data:`YOUNG` allocations."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
