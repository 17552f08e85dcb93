"""The kill of a container service: ``docker stop -t GRACE ID`` of the run confirmed.

The target is the container's run the user saw: its full id, ``StartedAt`` and
``RestartCount`` (:class:`~tui.core.containers.ContainerIdentity`). On the host the
agent inspects that id right before it asks the runtime to stop it; a container
restarted since (another StartedAt) is refused with :class:`IdentityChanged`,
and nothing is stopped. The stop runs as a process kill does (a detached worker,
its steps kept in the kill's record, read back when the channel is lost), and
its outcome says how the container ended: exit code, FinishedAt, OOMKilled.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from tui.agent.protocol import CONTAINER_STOP, KILL_REFUSED, MODE_CONTAINER
from tui.config import Service
from tui.core.containers import ContainerState
from tui.core.runs import Run
from tui.errors import BabysitError
from tui.ops.kill import IdentityChanged, check_grace, new_kill_id, stream_kill
from tui.ops.kill_outcome import KillEvent
from tui.remote.probe import host_state_dir
from tui.remote.transport import Transport


class KillRefused(BabysitError):
    """babysit cannot tell which run of the container the user means: nothing is stopped."""

    title = "kill-refused"
    exit_status = 2


@dataclass(frozen=True)
class ContainerTarget:
    """What the user confirmed: this run of this container (id, StartedAt, RestartCount)
    and the host processes it had then."""

    runtime: str
    id: str
    name: str
    image: str
    started_at: float | None
    restart_count: int
    #: (pid, start ticks) of the run's processes as the probe saw them, root first.
    processes: tuple[tuple[int, int], ...] = ()
    #: The container's host pids (its cgroup's), State.Pid first.
    pids: tuple[int, ...] = ()
    port: int | None = None
    gpus: tuple[int, ...] = ()
    record_dir: str | None = None
    #: Whether it ran then (a restart of it, not a start).
    running: bool = False

    @classmethod
    def of(cls, container: ContainerState, run: Run | None, service: Service) -> ContainerTarget:
        return cls(
            container.runtime,
            container.id,
            container.name or container.ref,
            container.image,
            container.started_at,
            container.restart_count,
            tuple((p.pid, p.start_ticks) for p in run.processes) if run is not None else (),
            container.pids or ((container.pid,) if container.pid else ()),
            service.port,
            tuple(service.gpus),
            f"{host_state_dir()}/{service.name}",
            container.running or container.restarting or container.paused,
        )

    @property
    def short_id(self) -> str:
        return self.id[:12]

    @property
    def root_pid(self) -> int:
        """The container's first process (State.Pid), as a host pid (0: none)."""
        return self.pids[0] if self.pids else 0

    @property
    def text(self) -> str:
        """The container in a few words: ``container vllm-qwen (4f3c12ab34cd)``."""
        return f"container {self.name} ({self.short_id})"

    def identity_args(self) -> dict[str, object]:
        """The run the agent checks the container against, right before it acts."""
        return {
            "runtime": self.runtime,
            "id": self.id,
            "started_at": self.started_at,
            "restart_count": self.restart_count,
        }


def stop_request(target: ContainerTarget, grace: float, kill_id: str) -> dict[str, object]:
    """The agent's arguments for the stop of ``target``: the one place they are built."""
    return {
        "mode": MODE_CONTAINER,
        "action": CONTAINER_STOP,
        **target.identity_args(),
        "kill_id": kill_id,
        "record_dir": target.record_dir or host_state_dir(),
        "grace": check_grace(grace),
        "port": target.port,
        "gpus": list(target.gpus),
        "targets": [{"pid": pid, "start_ticks": ticks} for pid, ticks in target.processes],
    }


async def stop_container(
    transport: Transport, target: ContainerTarget, *, grace: float, kill_id: str | None = None
) -> AsyncIterator[KillEvent]:
    """Stop ``target`` on the host, yielding each step as a kill's; raises
    :class:`IdentityChanged` when the container was restarted since it was confirmed."""
    request = stop_request(target, grace, kill_id or new_kill_id())
    async for event in stream_kill(transport, request, grace=grace):
        if event.kind == KILL_REFUSED and event.data.get("changed"):
            raise IdentityChanged(f"{target.text}: {event.message}")
        yield event
