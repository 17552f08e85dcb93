"""How a host's probe loop says a failed probe and when it asks again.

Every view of a host (the fleet's rows, a host screen's banner) reads the same
failure from one loop, which backs off the same way for all: twice the
interval, four times, … up to :data:`RETRY_CAP`.
"""

from __future__ import annotations

from tui.errors import BabysitError

#: The longest wait before asking a host that failed again.
RETRY_CAP = 30.0


def retry_delay(failures: int, interval: float) -> float:
    """Seconds before asking a host again after its ``failures``-th failure in a row."""
    return min(RETRY_CAP, interval * 2 ** max(1, failures))


def failure_reason(error: BaseException) -> str:
    """A probe's failure in plain words: an expected error's own message, else what
    crashed (a bug, said rather than hidden)."""
    if isinstance(error, BabysitError):
        return error.message
    return f"the probe crashed: {type(error).__name__}: {error}"
