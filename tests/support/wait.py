"""Waiting for a fact in tests: poll until it holds, or fail saying what never came.

:func:`wait_until` polls from plain code, :func:`until` on the event loop (with a
Textual pilot, between the app's own steps). Both return the check's first true
value, and on a timeout fail naming what was awaited and the last value seen.

A test that asserts something did *not* happen first waits here for a positive
fact that proves the moment has passed (an answer after the event, a line
written after it), never for a fixed sleep: a slow machine would make such a
test pass without testing anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")

STEP = 0.02
"""Seconds between two looks at the check."""

TIMEOUT = 15.0
"""Seconds a wait lasts unless told otherwise."""

SHOWN = 300
"""Characters of the last value seen that a timeout's message shows."""

What = str | Callable[[], str]
"""What is awaited, in words; a callable is asked only when the wait times out."""


def _timed_out(what: What, timeout: float, last: object) -> AssertionError:
    words = what() if callable(what) else what
    seen = repr(last)
    if len(seen) > SHOWN:
        seen = seen[:SHOWN] + "…"
    return AssertionError(f"timed out after {timeout} s waiting for {words} (last seen: {seen})")


def wait_until(check: Callable[[], T], timeout: float, what: What, step: float = STEP) -> T:
    """``check()``'s first true value, polled every ``step`` s for up to ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout, value)
        time.sleep(step)


async def until(
    check: Callable[[], T] | Callable[[], Awaitable[T]],
    what: What,
    *,
    timeout: float = TIMEOUT,
    pilot: Any = None,
    step: float = STEP,
) -> T:
    """As :func:`wait_until`, on the event loop; ``check`` may be a coroutine function.

    With a Textual ``pilot`` the wait is the pilot's pause, so the app runs its
    messages between two looks. The value is returned the moment the check holds,
    so that a state that passes (a verdict before the next probe) can be read.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise _timed_out(what, timeout, value)
        if pilot is not None:
            await pilot.pause(step)
        else:
            await asyncio.sleep(step)
