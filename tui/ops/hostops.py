"""What babysit may do to a service of a host: the seam under every action.

:class:`HostOps` is the seam between the action flows (:mod:`tui.ops.actions`)
and the host. The real one, :class:`TransportOps`, only forwards to the ops
functions over a transport (it reimplements nothing); the screen's tests pass
a stand-in to draw a modal or a progress line that never changes between runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Protocol

from tui.config import Service
from tui.core.containers import ContainerState
from tui.ops import container_kill, container_launch, container_relaunch
from tui.ops import kill as kill_ops
from tui.ops import relaunch as relaunch_ops
from tui.ops.container_kill import ContainerTarget
from tui.ops.kill import KillTarget
from tui.ops.kill_outcome import KillEvent
from tui.ops.relaunch import DEFAULT_TIMEOUT, Launched, WaitProgress, WaitResult
from tui.remote.transport import Transport


class HostOps(Protocol):
    """The actions on one service of one host; every method talks to the host."""

    async def preflight(self) -> dict[str, object]:
        """Port owners and GPU memory on the host (``port_owners``, ``gpu_apps``, ``gpus``)."""
        ...

    def kill(self, target: KillTarget, *, grace: float) -> AsyncIterator[KillEvent]:
        """Signal exactly ``target``; each step, the last one ``done`` (or ``refused``)."""
        ...

    def stop_container(self, target: ContainerTarget, *, grace: float) -> AsyncIterator[KillEvent]:
        """``docker stop`` exactly ``target``'s run; each step, as a kill's."""
        ...

    async def launch(self) -> Launched:
        """Start the service's ``launch:`` command; the new run as recorded on the host."""
        ...

    async def container_state(self) -> ContainerState:
        """What ``docker inspect`` says of the service's container now."""
        ...

    async def start_container(self, target: ContainerTarget, *, grace: float) -> Launched:
        """``docker start`` (stopped) or ``docker restart`` (running) of ``target``'s run."""
        ...

    def wait_ready(self, launched: Launched) -> AsyncIterator[WaitProgress | WaitResult]:
        """Progress of this run's start-up, read past its anchor; then one WaitResult."""
        ...


class TransportOps:
    """:class:`HostOps` over a transport, by way of :mod:`tui.ops`; a readiness wait
    gives up after ``wait_timeout`` seconds."""

    def __init__(
        self, transport: Transport, service: Service, *, wait_timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self.transport = transport
        self.service = service
        self.wait_timeout = wait_timeout

    async def preflight(self) -> dict[str, object]:
        return await relaunch_ops.preflight(self.transport, self.service)

    def kill(self, target: KillTarget, *, grace: float) -> AsyncIterator[KillEvent]:
        return kill_ops.kill_run(self.transport, target, grace=grace)

    def stop_container(self, target: ContainerTarget, *, grace: float) -> AsyncIterator[KillEvent]:
        return container_kill.stop_container(self.transport, target, grace=grace)

    async def launch(self) -> Launched:
        if self.service.container is None:
            return await relaunch_ops.launch(self.transport, self.service)
        before = await container_relaunch.inspect(self.transport, self.service)
        launched = await relaunch_ops.launch(self.transport, self.service)
        return dataclasses.replace(launched, container_before=before)

    async def container_state(self) -> ContainerState:
        return await container_relaunch.inspect(self.transport, self.service)

    async def start_container(self, target: ContainerTarget, *, grace: float) -> Launched:
        return await container_relaunch.start(self.transport, self.service, target, grace=grace)

    def wait_ready(self, launched: Launched) -> AsyncIterator[WaitProgress | WaitResult]:
        if launched.container is None and self.service.container is not None:
            return container_launch.wait_new_run(
                self.transport, self.service, launched, timeout=self.wait_timeout
            )
        lines = (
            container_relaunch.container_lines(self.transport, self.service, launched)
            if launched.container is not None
            else None
        )
        return relaunch_ops.wait_ready(
            self.transport, self.service, launched, timeout=self.wait_timeout, lines=lines
        )
