"""Waiting for a fact in tests: poll until it holds, or fail saying what never came.

A test that asserts something did *not* happen first waits here for a positive
fact that proves the moment has passed (an answer after the event, a line
written after it), never for a fixed sleep: a slow machine would make such a
test pass without testing anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(check: Callable[[], T], timeout: float, what: str, step: float = 0.02) -> T:
    """``check()``'s first true value, polled every ``step`` s for up to ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)


async def eventually(
    check: Callable[[], T] | Callable[[], Awaitable[T]],
    timeout: float,
    what: str,
    step: float = 0.02,
) -> T:
    """As :func:`wait_until`, on the event loop; ``check`` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value  # type: ignore[return-value]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(step)
