"""After a container service's ``launch:`` (a full ``docker run …``), the wait for the
container's new run.

The launch runs as any service's (:func:`tui.ops.relaunch.launch`: the command in a
session of its own, its output in the service's ``log:`` or beside its run records).
Which container it makes or starts is the runtime's business, so the wait asks
``docker inspect`` of the service's container at each tick until it shows a run
other than the one before the launch (another id, or another StartedAt), and then
reads only that run's json lines, as after a ``docker start``
(:func:`tui.ops.container_relaunch.container_lines`). The launch's own process
ending while no new run shows is a failed launch.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from tui.config import Service
from tui.core.containers import ContainerState
from tui.ops.container_relaunch import container_lines, inspect_run
from tui.ops.relaunch import Launched, WaitProgress, WaitResult, is_alive, wait_ready
from tui.remote.transport import Transport


def is_new(run: Launched, before: ContainerState | None) -> bool:
    """Whether ``run`` is a run of the container other than ``before``."""
    state = run.container
    if state is None or not state.found or state.started_at is None:
        return False
    return before is None or state.identity != before.identity


async def wait_new_run(
    transport: Transport,
    service: Service,
    launched: Launched,
    *,
    timeout: float,
    tick: float = 1.0,
) -> AsyncIterator[WaitProgress | WaitResult]:
    """Progress until the container shows a new run, then that run's readiness wait."""
    before = launched.container_before
    started = time.monotonic()
    phase = f"waiting for a new run of container {service.container}"
    while True:
        elapsed = time.monotonic() - started
        if elapsed > timeout:
            yield WaitResult(
                False,
                f"no new run of container {service.container} within {timeout:.0f} s of the launch",
                elapsed,
            )
            return
        run = await inspect_run(transport, service)
        if is_new(run, before):
            break
        if not await is_alive(transport, launched):
            run = await inspect_run(transport, service)  # a `docker run -d` ends once it ran
            if is_new(run, before):
                break
            yield WaitResult(
                False,
                f"the launch (pid {launched.pid}) ended and container {service.container} "
                f"has no new run; what it printed is in {launched.log}",
                time.monotonic() - started,
            )
            return
        yield WaitProgress(elapsed, phase, None)
        await asyncio.sleep(tick)
    left = max(timeout - (time.monotonic() - started), tick)
    lines = container_lines(transport, service, run)
    async for step in wait_ready(transport, service, run, timeout=left, tick=tick, lines=lines):
        yield step
