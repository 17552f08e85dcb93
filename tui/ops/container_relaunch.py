"""Relaunch of a container service without ``launch:``: ``docker start`` of its stopped
container, or ``docker restart -t GRACE`` of a running one, and this run's own lines.

Both act on the run the user confirmed (full id, StartedAt, RestartCount): the
agent inspects the id right before it acts and refuses a container restarted
since. The new run is another StartedAt of the same container: its json-file
(the same file, the same inode) is read from where it ended just before the
action, and only the records whose ``time`` is at or after the new StartedAt
count (an old run's last lines, written while ``docker restart`` stops it, come
after that offset too). Its liveness is the container's: the same id, the same
StartedAt, running.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tui.agent.protocol import (
    ANSWER_CONTAINER,
    CONTAINER_INSPECT,
    CONTAINER_RESTART,
    CONTAINER_START,
    MODE_CONTAINER,
)
from tui.config import Service
from tui.core.answers import Fields
from tui.core.containers import DOCKER_JSON, ContainerState
from tui.core.logcursor import LogLine
from tui.invocation import command
from tui.ops.audit import container_run_id
from tui.ops.container_kill import ContainerTarget
from tui.ops.kill import IdentityChanged, check_grace
from tui.ops.relaunch import Launched, LaunchFailed, LaunchRefused, RunLines, ask
from tui.remote.transport import Transport

T = TypeVar("T")

#: Seconds a ``docker start`` or ``restart`` may take past the grace.
ACTION_SLACK = 60.0
#: A container's state is read within this many seconds, or the ask failed.
INSPECT_TIMEOUT = 30.0


def check_container(service: Service, container: ContainerState | None) -> ContainerState:
    """The container to start or restart, or LaunchRefused saying why there is none."""
    if container is None:
        raise LaunchRefused(
            f"{service.label}: the state of container {service.container} is unknown"
        )
    if not container.found or not container.id:
        why = container.problem or f"no container {container.ref} on the host"
        raise LaunchRefused(
            f"{service.label}: {why}; without launch: in hosts.yaml babysit can only start "
            "or restart an existing container"
        )
    return container


async def inspect(transport: Transport, service: Service, ref: str | None = None) -> ContainerState:
    """What ``docker inspect`` says now of the service's container (or of ``ref``, a full
    id), on its host."""
    return await _inspect(
        transport, service, ref, lambda answer: ContainerState.from_json(answer.child("container"))
    )


async def inspect_run(transport: Transport, service: Service) -> Launched:
    """The service's container now, as a run to wait on: its lines read from the start of
    its json-file, those before its StartedAt left out."""
    return await _inspect(transport, service, None, lambda answer: launched_of(answer, ()))


async def _inspect(
    transport: Transport, service: Service, ref: str | None, read: Callable[[Fields], T]
) -> T:
    container = service.container
    if container is None:
        raise LaunchRefused(f"{service.label}: hosts.yaml names no container: for this service")
    args = {
        "mode": MODE_CONTAINER,
        "action": CONTAINER_INSPECT,
        "ref": ref or container.name,
        "runtime": container.runtime,
    }
    return await ask(transport, args, read, what="the container's state", timeout=INSPECT_TIMEOUT)


async def start(
    transport: Transport, service: Service, target: ContainerTarget, *, grace: float
) -> Launched:
    """``docker start`` (a stopped container) or ``docker restart`` (a running one) of
    ``target``'s run; the new run, its lines counted from the log's end before."""
    action = CONTAINER_RESTART if target.running else CONTAINER_START
    args: dict[str, object] = {
        "mode": MODE_CONTAINER,
        "action": action,
        **target.identity_args(),
        "grace": check_grace(grace),
    }

    def started(answer: Fields) -> Launched:
        if answer.opt_string("t") != ANSWER_CONTAINER:
            said = answer.opt_string("message") or "no reason given"
            if answer.flag("changed"):
                raise IdentityChanged(f"{service.label}: {target.text}: {said}")
            raise LaunchFailed(f"{service.label}: {target.text}: {said}")
        return launched_of(answer, tuple(answer.strings("command")))

    return await ask(
        transport,
        args,
        started,
        what=f"the container's {action}",
        timeout=grace + ACTION_SLACK,
        then=f"; check with {command('status')} before relaunching again",
    )


def launched_of(answer: Fields, command: tuple[str, ...]) -> Launched:
    """The container's new run from a container answer: its first process, its log file
    and, as the anchor, where that file ended right before the action."""
    state = ContainerState.from_json(answer.child("container"))
    log = answer.opt_child("log")
    anchor = answer.opt_child("anchor")
    same_file = (
        log is not None
        and anchor is not None
        and (anchor.integer("dev"), anchor.integer("inode"))
        == (log.integer("dev"), log.integer("inode"))
    )
    return Launched(
        run_id=container_run_id(state),
        pid=state.pid,
        start_ticks=answer.opt_integer("start_ticks") or 0,
        boot_id=answer.opt_string("boot_id") or "",
        log=state.log_path,
        dev=log.integer("dev") if log is not None else 0,
        inode=log.integer("inode") if log is not None else 0,
        launch_offset=anchor.integer("size") if same_file and anchor is not None else 0,
        argv=command,
        rotated_to=None,
        container=state,
    )


def this_run_text(launched: Launched) -> Callable[[LogLine], str | None]:
    """A line of the container's json-file (read as its records, tui/core/lines.py) as
    the new run's text, or None when it is not one of this run's records (stamped before
    the run's bound, :attr:`ContainerState.run_since`, or not a record)."""
    state = launched.container
    since = state.run_since if state is not None else None

    def text(row: LogLine) -> str | None:
        if state is None or row.stamp is None or (since is not None and row.stamp < since):
            return None
        return row.text

    return text


async def is_running(transport: Transport, service: Service, launched: Launched) -> bool:
    """Whether the container still runs the very run that was started."""
    state = launched.container
    if state is None:
        return False
    now = await inspect(transport, service, state.id)
    return now.found and now.identity == state.identity and now.running


def container_lines(transport: Transport, service: Service, launched: Launched) -> RunLines:
    """The container run's lines: its json-file's records from its StartedAt on, through
    the file's rotations; alive while the container runs that run."""
    return RunLines(
        launched.log,
        this_run_text(launched),
        lambda: is_running(transport, service, launched),
        format=DOCKER_JSON,
    )
