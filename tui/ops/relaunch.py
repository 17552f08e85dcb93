"""Relaunch a service safely, and wait for *this* run to be ready.

Preconditions are checked and each failure said plainly: no live run of the
service (unless replacing it), the port is free, the service's GPUs hold no
memory of other processes. The old log is renamed, never deleted, so the new
run starts a new inode. The server is started by the agent in a session of its
own (it survives the channel closing, also through ``pct exec``), after one
marker line in the log and a run record on the host.

The readiness wait reads the log from the launch anchor (inode + offset) only:
old ready lines, old ``Received sigquit`` or ``RuntimeError`` lines cannot fool
it. Each tick also checks that the process (pid + start time) still lives.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from tui.agent.protocol import ANSWER_LAUNCHED, MODE_ALIVE, MODE_LAUNCH, MODE_PREFLIGHT
from tui.config import Service
from tui.core.answers import AnswerError, Fields, decode
from tui.core.containers import PLAIN, ContainerState
from tui.core.follow import Start
from tui.core.gpu import Orphan
from tui.core.logcursor import EventKind, EventRow, LogCursor, LogLine
from tui.core.runs import Assessment
from tui.core.secrets import redact_argv
from tui.core.verdicts import Verdict
from tui.engines import of_log, spec
from tui.errors import BabysitError
from tui.invocation import command
from tui.ops.audit import who
from tui.ops.orphan_words import orphans_text
from tui.remote.agentcall import run_agent
from tui.remote.follow import Follower
from tui.remote.probe import host_state_dir, ready_patterns
from tui.remote.transport import Transport

T = TypeVar("T")

DEFAULT_TIMEOUT = 20 * 60.0
#: The output of a launch that has no log: of its own, in the service's records folder.
LAUNCH_LOG = "launch.log"


def failure_lines(engine: object) -> tuple[str, ...]:
    """Lines that mean a run of ``engine`` failed when they appear past its anchor: its
    deaths and startup failures (none for an engine whose deaths babysit does not know)."""
    own = spec(engine)
    return (*own.deaths, *own.startup_failures) if own.deaths else ()


def telling_lines(engine: object) -> tuple[str, ...]:
    """Among a failure's lines, those that say what went wrong (the first, in log order,
    is the reason)."""
    return tuple(dict.fromkeys(t for e in of_log(engine) for t in e.telling))


def phases_of(engine: object) -> tuple[tuple[str, str], ...]:
    """(text in a line, the phase it starts), in startup order."""
    return tuple((line, p.name) for e in of_log(engine) for p in e.phases for line in p.lines)


class LaunchRefused(BabysitError):
    title = "launch-refused"
    exit_status = 2


class LaunchFailed(BabysitError):
    title = "launch-failed"
    exit_status = 1


@dataclass(frozen=True)
class Launched:
    """The new run, exactly as recorded on the host; ``argv`` with its secrets redacted."""

    run_id: str
    pid: int
    start_ticks: int
    boot_id: str
    log: str
    dev: int
    inode: int
    launch_offset: int
    argv: tuple[str, ...]
    rotated_to: str | None
    #: A container's run: the container as inspected right after the action (its first
    #: process is ``pid``; its json-file ``log``; its lines count from its StartedAt).
    container: ContainerState | None = None
    #: A container service's launch: its container as it was right before the launch
    #: (the wait waits for another run of it).
    container_before: ContainerState | None = None

    @property
    def anchor(self) -> LogCursor:
        return LogCursor(self.dev, self.inode, self.launch_offset)


def started_words(launched: Launched) -> str:
    """What a launch started, in a few words."""
    state = launched.container
    if state is None:
        return f"started pid {launched.pid}"
    return (
        f"ran {' '.join(launched.argv)}: container {state.name} ({state.short_id}) runs "
        f"again as pid {launched.pid}, restart count {state.restart_count}"
    )


@dataclass
class WaitProgress:
    elapsed: float
    phase: str
    last_line: str | None


@dataclass
class WaitResult:
    ready: bool
    reason: str
    elapsed: float
    last_lines: list[str] = field(default_factory=list)


async def ask(
    transport: Transport,
    args: dict[str, object],
    read: Callable[[Fields], T],
    *,
    what: str,
    timeout: float = 30.0,
    then: str = "",
) -> T:
    """The agent's answer to ``args`` (``what`` it is), read by ``read``; an answer
    without the shape it must have is a LaunchFailed that says where (and ``then``:
    what to do about it)."""
    result = (await run_agent(transport, args, timeout=timeout)).completed
    lines = [x for x in result.stdout.splitlines() if x.strip()]
    if not lines:
        raise LaunchFailed(
            f"{transport.chain_text}: the agent gave no answer "
            f"({result.stderr_line() or f'exit status {result.exit_status}'})"
        )
    try:
        return read(decode(lines[-1], "the answer"))
    except AnswerError as error:
        raise LaunchFailed(
            f"{transport.chain_text}: the host's answer to {what} was unreadable ({error}){then}"
        ) from None


def check_preconditions(
    service: Service,
    assessment: Assessment,
    preflight: dict,
    *,
    replacing: bool,
    orphans: Sequence[Orphan] = (),
) -> None:
    """Raise LaunchRefused with the reason, in plain words, when a launch must not happen."""
    if assessment.verdict is Verdict.UNKNOWN:
        raise LaunchRefused(f"{service.label}: cannot tell whether it runs ({assessment.summary})")
    if not replacing and assessment.run is not None:
        raise LaunchRefused(
            f"{service.label} has a run: {assessment.line}; use --replace (R) to stop it first"
        )
    if assessment.others and not replacing:
        raise LaunchRefused(f"{service.label}: {assessment.line}")
    check_orphans(service, orphans)
    check_resources(service, preflight)


def check_orphans(service: Service, orphans: Sequence[Orphan]) -> None:
    """Raise LaunchRefused, naming them and how to free them, while ``orphans`` hold
    memory on the service's GPUs: the new run would die of OOM."""
    if orphans:
        raise LaunchRefused(
            f"{service.label}: {orphans_text(orphans)} hold memory on its GPUs, left by a "
            f"run that died or started by hand (a new run would run out of GPU memory); "
            f"free them with: {command('kill', service.label, '--orphans')} (or K on the host "
            "screen); nothing was started"
        )


def check_resources(service: Service, preflight: dict) -> None:
    """Raise LaunchRefused when the service's port is taken or its GPUs hold memory of
    other processes."""
    owners = preflight.get("port_owners") or []
    if service.port and owners:
        raise LaunchRefused(
            f"{service.label}: port {service.port} is in use by pid {', '.join(map(str, owners))}"
        )
    gpus = preflight.get("gpus") or {}
    apps = preflight.get("gpu_apps") or []
    if gpus and apps:
        uuids = set(gpus.values())
        held = [a for a in apps if a.get("gpu_uuid") in uuids]
        if held:
            raise LaunchRefused(
                f"{service.label}: GPU(s) {', '.join(sorted(gpus))} hold memory of other "
                "processes: " + ", ".join(f"pid {a['pid']} ({a['used_mib']} MiB)" for a in held)
            )


async def preflight(transport: Transport, service: Service) -> dict:
    """Who holds the port and the service's GPUs: ``port_owners`` (pids), ``gpus`` (index
    → uuid) and ``gpu_apps`` (what nvidia-smi lists; None when it did not answer)."""
    return await ask(
        transport,
        {"mode": MODE_PREFLIGHT, "port": service.port, "gpus": list(service.gpus)},
        _preflight,
        what="the check of its port and GPUs",
    )


def _preflight(answer: Fields) -> dict:
    gpus = answer.opt_child("gpus")
    apps = None if answer.data.get("gpu_apps") is None else answer.children("gpu_apps")
    return {
        "port_owners": answer.pids_or_words("port_owners"),
        "gpus": {} if gpus is None else {k: gpus.string(k) for k in gpus},
        "gpu_apps": None
        if apps is None
        else [
            {
                "pid": app.integer("pid"),
                "used_mib": app.opt_integer("used_mib") or 0,
                "gpu_uuid": app.opt_string("gpu_uuid"),
            }
            for app in apps
        ],
    }


async def launch(transport: Transport, service: Service, *, keep: int | None = None) -> Launched:
    """Start the service's launch command; the pid within a second, or why it failed."""
    if service.launch is None:
        raise LaunchRefused(f"{service.label}: hosts.yaml has no launch: for this service")
    # The request travels on the agent's stdin (tui.remote.agentcall), so neither the
    # command nor the env is ever in a command line on the host but the server's own;
    # what the agent writes down (the log's marker line, the run record) is ``shown``.
    shown = redact_argv(service.launch.command)
    args = {
        "mode": MODE_LAUNCH,
        "argv": list(service.launch.command),
        "shown_argv": list(shown),
        "cwd": service.launch.cwd,
        "env": dict(service.launch.env),
        # A container-only service's launch (a ``docker run …``) writes its own output
        # beside its run records.
        "log": service.log or f"{host_state_dir()}/{service.name}/{LAUNCH_LOG}",
        "keep": service.keep_logs if keep is None else keep,
        "record_dir": f"{host_state_dir()}/{service.name}",
        "run_id": uuid.uuid4().hex[:12],
        "who": who(),
    }

    def launched(answer: Fields) -> Launched:
        if answer.opt_string("t") != ANSWER_LAUNCHED:
            said = answer.opt_string("message") or "no reason given"
            raise LaunchFailed(f"{service.label}: the server did not start: {said}")
        return Launched(
            run_id=answer.string("run_id"),
            pid=answer.integer("pid"),
            start_ticks=answer.integer("start_ticks"),
            boot_id=answer.string("boot_id"),
            log=answer.string("log_path"),
            dev=answer.integer("dev"),
            inode=answer.integer("inode"),
            launch_offset=answer.integer("launch_offset"),
            argv=shown,
            rotated_to=answer.opt_string("rotated"),
        )

    # The host started something, maybe: an unreadable answer cannot say what. Never a guess.
    return await ask(
        transport,
        args,
        launched,
        what="the launch",
        then=f"; check with {command('status')} before launching again",
    )


async def is_alive(transport: Transport, launched: Launched) -> bool:
    return await ask(
        transport,
        {"mode": MODE_ALIVE, "pid": launched.pid, "start_ticks": launched.start_ticks},
        lambda answer: answer.flag("alive"),
        what="whether the new run lives",
    )


@dataclass(frozen=True)
class RunLines:
    """Where a new run's lines are (``path``, read from the launch's anchor), which of
    them are its own (``text``: the line's text, or None), and whether it still lives."""

    path: str
    text: Callable[[LogLine], str | None]
    alive: Callable[[], Awaitable[bool]]
    #: How the file's lines are written (a container's json-file: ``docker-json``).
    format: str = PLAIN


def process_lines(transport: Transport, launched: Launched) -> RunLines:
    """A process run's lines: the launch log's, in the launched file only; alive while
    its pid has its start time."""
    return RunLines(
        launched.log,
        lambda row: row.text if row.inode == launched.inode else None,
        lambda: is_alive(transport, launched),
    )


async def wait_ready(
    transport: Transport,
    service: Service,
    launched: Launched,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    tick: float = 1.0,
    lines: RunLines | None = None,
) -> AsyncIterator[WaitProgress | WaitResult]:
    """Follow this run's bytes only (``lines``; by default the process run's); yield
    progress, then one WaitResult."""
    own = lines or process_lines(transport, launched)
    ready, failures = ready_patterns(service), failure_lines(service.engine)
    telling, phases = telling_lines(service.engine), phases_of(service.engine)
    started = time.monotonic()
    follower = Follower(
        transport,
        own.path,
        label=service.label,
        start=Start(cursor=launched.anchor),
        format=own.format,
    )
    last_lines: deque[str] = deque(maxlen=30)
    phase = "starting"
    queue: asyncio.Queue[list] = asyncio.Queue()
    reader = asyncio.create_task(_pump(follower, queue))
    next_alive = started + tick
    try:
        while True:
            elapsed = time.monotonic() - started
            if elapsed > timeout:
                yield WaitResult(
                    False,
                    f"not ready after {timeout:.0f} s (phase: {phase})",
                    elapsed,
                    list(last_lines),
                )
                return
            try:
                batch = await asyncio.wait_for(queue.get(), tick / 2)
            except asyncio.TimeoutError:
                batch = []
            for index, row in enumerate(batch):
                if isinstance(row, EventRow):
                    if row.event.kind in (EventKind.REPLACED, EventKind.TRUNCATED):
                        last_lines.append(f"[{row.event.message}]")
                    continue
                text = own.text(row) if isinstance(row, LogLine) else None
                if text is None:
                    continue
                last_lines.append(text)
                for needle, name in phases:
                    if needle in text:
                        phase = name
                if ready and any(p in text for p in ready):
                    yield WaitResult(
                        True, f"ready: {text}", time.monotonic() - started, list(last_lines)
                    )
                    return
                failure = next((p for p in failures if p in text), None)
                if failure is not None:
                    # Let the rest of the traceback (and the death) arrive before reporting.
                    later = (own.text(r) for r in batch[index + 1 :] if isinstance(r, LogLine))
                    last_lines.extend(t for t in later if t is not None)
                    await _drain(
                        queue, last_lines, own, until=time.monotonic() + 3.0, stop=own.alive
                    )
                    cause = next(
                        (line for line in last_lines if any(p in line for p in telling)),
                        text,
                    )
                    yield WaitResult(
                        False, f"failed: {cause}", time.monotonic() - started, list(last_lines)
                    )
                    return
            if time.monotonic() >= next_alive:
                next_alive = time.monotonic() + tick
                if not await own.alive():
                    await _drain(queue, last_lines, own, until=time.monotonic() + 0.5)
                    why = _death(last_lines, telling, failures, launched)
                    yield WaitResult(False, why, time.monotonic() - started, list(last_lines))
                    return
                yield WaitProgress(
                    time.monotonic() - started, phase, last_lines[-1] if last_lines else None
                )
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


async def _pump(follower: Follower, queue: asyncio.Queue[list]) -> None:
    async for batch in follower.rows():
        await queue.put(batch)


def _death(
    last_lines: deque[str], telling: tuple[str, ...], failures: tuple[str, ...], run: Launched
) -> str:
    """Why a run died before it was ready: its last lines may say (they can arrive after
    the death is seen), else that it exited."""
    cause = next((x for x in last_lines if any(p in x for p in telling)), None) or next(
        (x for x in last_lines if any(p in x for p in failures)), None
    )
    if cause:
        return f"failed: {cause}"
    if run.container is not None:
        return (
            f"container {run.container.name} ({run.container.short_id}) stopped before it was ready"
        )
    return f"pid {run.pid} exited before it was ready"


async def _drain(
    queue: asyncio.Queue[list],
    last_lines: deque[str],
    own: RunLines,
    *,
    until: float,
    stop: Callable[[], Awaitable[bool]] | None = None,
) -> None:
    """Collect this run's further lines until ``until``, or until ``stop()`` says it died."""
    while time.monotonic() < until:
        try:
            batch = await asyncio.wait_for(queue.get(), 0.25)
        except asyncio.TimeoutError:
            if stop is not None and not await stop():
                stop = None
                until = min(until, time.monotonic() + 0.3)
            continue
        for row in batch:
            text = own.text(row) if isinstance(row, LogLine) else None
            if text is not None:
                last_lines.append(text)
