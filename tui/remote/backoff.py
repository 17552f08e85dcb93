"""Capped, jittered backoff between reconnect attempts (shared by links and followers)."""

from __future__ import annotations

import random

#: BASE * 2**n seconds, at most CAP, times a random factor in [0.5, 1) so many
#: clients that lost one server do not all come back in the same instant.
BACKOFF_BASE = 0.5
BACKOFF_CAP = 30.0


def backoff_delay(attempt: int, rng: random.Random | None = None) -> float:
    """Seconds to wait before reconnect attempt ``attempt`` (0-based): capped, jittered."""
    rng = rng or random
    return min(BACKOFF_CAP, BACKOFF_BASE * 2 ** min(attempt, 32)) * rng.uniform(0.5, 1.0)
