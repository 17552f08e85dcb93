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
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tui.agent.protocol import ANSWER_LAUNCHED, MODE_ALIVE, MODE_LAUNCH, MODE_PREFLIGHT
from tui.config import Service
from tui.core.answers import AnswerError, Fields, decode
from tui.core.follow import Start
from tui.core.logcursor import EventKind, EventRow, LogCursor, LogLine
from tui.core.runs import Assessment
from tui.core.secrets import redact_argv
from tui.core.verdicts import Verdict
from tui.engines import of_log, spec
from tui.errors import BabysitError
from tui.ops.audit import who
from tui.remote.agentcall import run_agent
from tui.remote.follow import Follower
from tui.remote.probe import host_state_dir, ready_patterns
from tui.remote.transport import Transport

T = TypeVar("T")

DEFAULT_TIMEOUT = 20 * 60.0


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

    @property
    def anchor(self) -> LogCursor:
        return LogCursor(self.dev, self.inode, self.launch_offset)


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


async def _action(
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
    service: Service, assessment: Assessment, preflight: dict, *, replacing: bool
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
    return await _action(
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
        "log": service.log,
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
    return await _action(
        transport,
        args,
        launched,
        what="the launch",
        then="; check with babysit status before launching again",
    )


async def is_alive(transport: Transport, launched: Launched) -> bool:
    return await _action(
        transport,
        {"mode": MODE_ALIVE, "pid": launched.pid, "start_ticks": launched.start_ticks},
        lambda answer: answer.flag("alive"),
        what="whether the new run lives",
    )


async def wait_ready(
    transport: Transport,
    service: Service,
    launched: Launched,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    tick: float = 1.0,
) -> AsyncIterator[WaitProgress | WaitResult]:
    """Follow this run's bytes only; yield progress, then one WaitResult."""
    ready = ready_patterns(service)
    failures = failure_lines(service.engine)
    telling, phases = telling_lines(service.engine), phases_of(service.engine)
    started = time.monotonic()
    follower = Follower(
        transport, service.log, label=service.label, start=Start(cursor=launched.anchor)
    )
    last_lines: deque[str] = deque(maxlen=30)
    phase = "starting"
    queue: asyncio.Queue[list] = asyncio.Queue()

    async def pump() -> None:
        async for batch in follower.rows():
            await queue.put(batch)

    reader = asyncio.create_task(pump())
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
                if not isinstance(row, LogLine) or row.inode != launched.inode:
                    continue
                last_lines.append(row.text)
                for needle, name in phases:
                    if needle in row.text:
                        phase = name
                if ready and any(p in row.text for p in ready):
                    yield WaitResult(
                        True, f"ready: {row.text}", time.monotonic() - started, list(last_lines)
                    )
                    return
                failure = next((p for p in failures if p in row.text), None)
                if failure is not None:
                    # Let the rest of the traceback (and the death) arrive before reporting.
                    last_lines.extend(
                        r.text
                        for r in batch[index + 1 :]
                        if isinstance(r, LogLine) and r.inode == launched.inode
                    )
                    await _drain(
                        queue,
                        last_lines,
                        launched,
                        until=time.monotonic() + 3.0,
                        stop=lambda: is_alive(transport, launched),
                    )
                    cause = next(
                        (line for line in last_lines if any(p in line for p in telling)),
                        row.text,
                    )
                    yield WaitResult(
                        False, f"failed: {cause}", time.monotonic() - started, list(last_lines)
                    )
                    return
            if time.monotonic() >= next_alive:
                next_alive = time.monotonic() + tick
                if not await is_alive(transport, launched):
                    await _drain(queue, last_lines, launched, until=time.monotonic() + 0.5)
                    # Its last lines may say why (they can arrive after the death is seen).
                    cause = next(
                        (line for line in last_lines if any(p in line for p in telling)),
                        None,
                    ) or next(
                        (line for line in last_lines if any(p in line for p in failures)), None
                    )
                    yield WaitResult(
                        False,
                        f"failed: {cause}"
                        if cause
                        else f"pid {launched.pid} exited before it was ready",
                        time.monotonic() - started,
                        list(last_lines),
                    )
                    return
                yield WaitProgress(
                    time.monotonic() - started, phase, last_lines[-1] if last_lines else None
                )
    finally:
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)


async def _drain(
    queue: asyncio.Queue[list],
    last_lines: deque[str],
    launched: Launched,
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
            if isinstance(row, LogLine) and row.inode == launched.inode:
                last_lines.append(row.text)
