"""Calls of one drawing step paced to at most a number a second.

A widget fed in batches (a busy log brings a batch every few milliseconds) redraws
for the latest batch, at most ``rate`` times a second: a call comes now when the last
came long enough ago, else once at the earliest moment allowed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.timer import Timer


class Pacer:
    """``soon()`` runs ``step`` now or at its next allowed moment; ``now()`` runs it at
    once (a timer due is dropped). ``set_timer`` is the widget's own."""

    def __init__(
        self, step: Callable[[], None], rate: float, set_timer: Callable[..., Timer]
    ) -> None:
        self._step = step
        self._every = 1 / rate
        self._set_timer = set_timer
        self._timer: Timer | None = None
        self._last = 0.0

    @property
    def due(self) -> bool:
        """A call is waiting for its moment."""
        return self._timer is not None

    def soon(self) -> None:
        if self._timer is not None:
            return
        wait = self._last + self._every - time.monotonic()
        if wait <= 0:
            self.now()
        else:
            self._timer = self._set_timer(wait, self.now)

    def now(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._last = time.monotonic()
        self._step()
