"""Runs of process tags (``(EngineCore_DP0 pid=1) ``, Ray's ``(RayWorkerProc pid=N, ip=…)``)
read back from where they end, one pass over their text.

A tag is ``(`` and ``)`` around text that holds no parenthesis and a ``pid=N`` among its
words; the tags of a run are each followed by one space (or, where ``space_optional``,
by none). Reading back from the run's end finds its first tag without a regex search
retrying the run from each of its tags.
"""

from __future__ import annotations

import re

_PID = re.compile(r"\bpid=\d")


def run_start(text: str, end: int, floor: int = 0, *, space_optional: bool = False) -> int:
    """Where the run of tags that ends at ``end`` starts (``end`` when no tag ends there),
    read back no further than ``floor``."""
    at = end
    while True:
        if text.endswith(") ", floor, at):
            close = at - 2
        elif space_optional and text.endswith(")", floor, at):
            close = at - 1
        else:
            return at
        opening = text.rfind("(", floor, close)
        if (
            opening < 0
            or text.find(")", opening, close) >= 0
            or _PID.search(text, opening + 1, close) is None
        ):
            return at
        at = opening
