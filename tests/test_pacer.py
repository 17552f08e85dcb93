"""The log pane's paced drawing step: a burst of batches is drawn at once, then once
more for the rest at the next allowed moment, never lost."""

from __future__ import annotations

import pytest

from tui.app.widgets.pacer import Pacer

pytestmark = pytest.mark.unit


class Timers:
    """set_timer's stand-in: keeps each (delay, callback) for the test to fire."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, object]] = []

    def __call__(self, delay: float, callback):
        timers = self

        class Timer:
            def stop(self) -> None:
                timers.pending = [p for p in timers.pending if p[1] is not callback]

        self.pending.append((delay, callback))
        return Timer()

    def fire(self) -> None:
        pending, self.pending = self.pending, []
        for _, callback in pending:
            callback()


def test_a_burst_is_drawn_now_and_once_more_for_the_rest() -> None:
    steps: list[int] = []
    timers = Timers()
    pacer = Pacer(lambda: steps.append(1), rate=20, set_timer=timers)
    pacer.soon()
    assert steps == [1] and not pacer.due  # the first batch: drawn at once
    for _ in range(50):
        pacer.soon()  # a burst within the same twentieth of a second
    assert steps == [1] and pacer.due
    assert len(timers.pending) == 1 and 0 < timers.pending[0][0] <= 1 / 20
    timers.fire()
    assert steps == [1, 1] and not pacer.due  # the rest: drawn once, at its moment


def test_now_draws_at_once_and_drops_the_wait() -> None:
    steps: list[int] = []
    timers = Timers()
    pacer = Pacer(lambda: steps.append(1), rate=20, set_timer=timers)
    pacer.soon()
    pacer.soon()
    assert pacer.due
    pacer.now()  # an event row: shown at once
    assert steps == [1, 1] and not pacer.due and timers.pending == []
