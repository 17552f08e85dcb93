"""Guarded kill: signal exactly the verified run, never a name or a pattern.

The target is the run the user confirmed: (boot id, pid, start time) of the
root and of each descendant seen at that moment. On the host, the agent opens
a pidfd for each pid, re-checks its start time, and only then signals through
that pidfd, so a pid that now belongs to another process is left alone (and
the user told). SIGTERM to the tree, ``grace`` seconds, then SIGKILL for what is
left. Once they are gone, the agent waits (at most the grace again) until nvidia-smi
lists none of them and the memory they held is free, and says what was freed.
Afterwards: is the port closed, and does anything still hold memory on the service's
GPUs? Orphans on the service's GPUs (processes of no live run) are killed the same way,
each a root of its own (:meth:`KillTarget.of_orphans`).

Never signalled, whatever was confirmed (the agent refuses, saying why, before
any signal): pid 1; babysit's own processes and those of its connection (the
agent and everything above it on the host, babysit and everything above it
here when the host is this machine, babysit's other agents); a tree larger than
the service could have (:func:`max_processes`).

The kill runs on the host in a worker of its own, so it finishes whatever
becomes of its channel, and keeps its steps in ``<record_dir>/kills/<kill
id>.json`` there. When the channel is lost before the end, :func:`kill_run`
reads that record back (reconnecting as the transport does) and reports the
end; when it cannot, it says so and where the record is.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from tui.agent.protocol import (
    ANSWER_RECORD,
    KILL_CHANGED,
    KILL_DONE,
    KILL_ERROR,
    KILL_EXITED,
    KILL_FINAL,
    KILL_FINISHED,
    KILL_GARBLED,
    KILL_GONE,
    KILL_GPU_WAIT,
    KILL_LOST,
    KILL_REFUSED,
    KILL_SIGNALLED,
    KILL_STARTED,
    KILL_STOPPED,
    KILL_STOPPING,
    KILL_UNKNOWN,
    MODE_KILL,
    MODE_KILL_RECORD,
)
from tui.config import MAX_GRACE, Service
from tui.core.answers import AnswerError, Fields, decode, read
from tui.core.gpu import Orphan
from tui.core.launch.argv import FlagSet
from tui.core.runs import Run
from tui.engines import GENERIC
from tui.errors import BabysitError, TransportError, UsageError
from tui.invocation import command
from tui.ops.kill_outcome import KillEvent, mib_text, stopped_words
from tui.remote.agentcall import run_agent, stream_agent
from tui.remote.probe import host_state_dir
from tui.remote.transport import RemoteProcess, Transport, last_line

DEFAULT_GRACE = 30.0
#: Processes one rank of a server may plausibly have: the rank itself, a helper or two,
#: and a pool of compile workers (PyTorch inductor starts up to 32 per process).
PROCESSES_PER_RANK = 34
#: Processes a server has whatever its ranks: API server, tokenizer, detokenizer,
#: multiprocessing's resource trackers, a launcher shell.
PROCESSES_SHARED = 16
#: After the channel is lost, how long past twice the grace (SIGTERM's, then the wait for
#: GPU memory) the kill's record is waited for: the agent's SIGKILL wait (10 s), its
#: settle and its nvidia-smi queries.
READ_BACK_SLACK = 15.0
#: An event line longer than this is not one of the kill's events.
MAX_EVENT = 1024 * 1024
#: The parallel sizes a command line may give, by argparse destination (both engines).
PARALLEL_FLAGS = (
    ("tp_size", "tensor_parallel_size", "tp"),
    ("pp_size", "pipeline_parallel_size", "pp"),
    ("dp_size", "data_parallel_size", "dp"),
)


class IdentityChanged(BabysitError):
    title = "identity-changed"
    exit_status = 2


def check_grace(grace: float, what: str = "--grace") -> float:
    """``grace`` when it is a number of seconds babysit will really wait; a plain
    error otherwise (nan, infinite, negative or zero, more than an hour)."""
    if not (isinstance(grace, int | float) and math.isfinite(grace) and 0 < grace <= MAX_GRACE):
        raise UsageError(
            f"{what} must be a number of seconds, more than 0 and at most {MAX_GRACE:g} "
            f"(not {grace!r}); nothing was signalled"
        )
    return float(grace)


def max_processes(run: Run, service: Service | None) -> int:
    """The most processes the service's run can plausibly have: per rank (tensor x
    pipeline x data parallel, from the run's command line, and at least one per GPU of
    ``gpus:``) :data:`PROCESSES_PER_RANK`, plus :data:`PROCESSES_SHARED`. A larger tree
    is not a server: it is what a match on a shell, a session or init would find."""
    engine = service.engine.value if service and service.engine.value != GENERIC else None
    flags = FlagSet.parse(run.root.cmdline)
    by_dest = flags.by_dest(None)
    if engine is not None:
        by_dest.update(flags.by_dest(engine))
    ranks = 1
    for names in PARALLEL_FLAGS:
        for name in names:
            flag = by_dest.get(name)
            value = flag.value() if flag is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= 4096:
                ranks *= value
                break
    ranks = max(ranks, len(service.gpus) if service is not None else 0, 1)
    return ranks * PROCESSES_PER_RANK + PROCESSES_SHARED


@dataclass(frozen=True)
class KillTarget:
    """What the user confirmed: these exact processes, on this boot."""

    boot_id: str
    processes: tuple[tuple[int, int], ...]  # (pid, start ticks), root first
    port: int | None = None
    #: The service's ``gpus:`` (checked for memory left after the kill).
    gpus: tuple[int, ...] = ()
    #: More processes than this and the agent refuses (see :func:`max_processes`).
    max_processes: int | None = None
    #: The service's folder of records on the host (``<host state>/<service>``).
    record_dir: str | None = None
    #: The processes are orphans on the service's GPUs (each a root of its own), not a run.
    orphans: bool = False

    @classmethod
    def of(cls, run: Run, boot_id: str, service: Service) -> KillTarget:
        return cls(
            boot_id,
            tuple((p.pid, p.start_ticks) for p in run.processes),
            service.port,
            tuple(service.gpus),
            max_processes(run, service),
            f"{host_state_dir()}/{service.name}",
        )

    @classmethod
    def of_orphans(cls, orphans: Sequence[Orphan], boot_id: str, service: Service) -> KillTarget:
        """The orphans the user confirmed, by (pid, start ticks); the bound is the
        service's ranks' worth (one per GPU of ``gpus:``, and at least one per orphan)."""
        ranks = max(len(service.gpus), len(orphans), 1)
        return cls(
            boot_id,
            tuple((o.pid, o.start_ticks) for o in orphans),
            None,
            tuple(service.gpus),
            ranks * PROCESSES_PER_RANK + PROCESSES_SHARED,
            f"{host_state_dir()}/{service.name}",
            orphans=True,
        )

    @property
    def text(self) -> str:
        """``pid 4242 and 3 child process(es)``; ``orphans pid 4242, 4243``."""
        if self.orphans:
            pids = ", ".join(str(pid) for pid, _ in self.processes)
            return f"orphan{'s' if len(self.processes) != 1 else ''} pid {pids}"
        return f"pid {self.root_pid} and {len(self.processes) - 1} child process(es)"

    @property
    def root_pid(self) -> int:
        return self.processes[0][0]


def new_kill_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(4)


def kill_request(target: KillTarget, grace: float, kill_id: str) -> dict[str, object]:
    """The agent's kill arguments: the one place they are built (who asks is added to
    every request: see tui.remote.agentcall.client_chain)."""
    return {
        "mode": MODE_KILL,
        "kill_id": kill_id,
        "record_dir": target.record_dir or host_state_dir(),
        "boot_id": target.boot_id,
        "grace": check_grace(grace),
        "port": target.port,
        "gpus": list(target.gpus),
        "max_processes": target.max_processes,
        "targets": [{"pid": pid, "start_ticks": ticks} for pid, ticks in target.processes],
    }


def record_path(request: dict[str, object]) -> str:
    return f"{request['record_dir']}/kills/{request['kill_id']}.json"


async def kill_run(
    transport: Transport,
    target: KillTarget,
    *,
    grace: float = DEFAULT_GRACE,
    kill_id: str | None = None,
) -> AsyncIterator[KillEvent]:
    """Kill ``target`` on the host, yielding each step; the last event is ``done`` or
    ``refused`` (``unknown`` when the channel was lost and the end could not be read back)."""
    check_grace(grace)
    request = kill_request(target, grace, kill_id or new_kill_id())
    async for event in stream_kill(transport, request, grace=grace):
        yield event


async def stream_kill(
    transport: Transport, request: dict[str, object], *, grace: float
) -> AsyncIterator[KillEvent]:
    """The steps of the kill ``request`` (a process kill or a container's stop) as the
    host runs it; when the channel is lost, its end read back from the kill's record."""
    seen: set[int] = set()
    path = record_path(request)
    finished = False
    lost: str | None = None
    status: int | None = None
    detail = ""
    heard = False
    try:
        async with stream_agent(transport, request) as process:
            async for event in _events(process, seen):
                heard = True
                path = str(event.data.get("record") or path)
                finished = finished or event.kind in KILL_FINAL
                yield event
            detail = last_line(await process.read_stderr())
            status = await process.wait()
    except TransportError as error:
        lost = error.message
    if finished:
        return
    if lost is None and not heard:
        raise BabysitError(
            f"{transport.chain_text}: the kill did not start (exit {status}): "
            f"{detail or 'no message'}; check the processes by hand",
            title="kill-failed",
        )
    lost = lost or f"{transport.chain_text}: the agent ended before the kill did (exit {status})"
    # Before its first step the kill may never have reached the host: say only what is known.
    goes_on = (
        "the kill goes on on the host without it"
        if heard
        else "the kill may not have started on the host"
    )
    yield KillEvent(
        KILL_LOST,
        None,
        f"{lost}; {goes_on}: reading its record {path} …",
        {"reason": lost, "record": path},
    )
    until = time.monotonic() + 2 * grace + READ_BACK_SLACK
    record, error = await _read_back(transport, request, until)
    if record is not None:
        try:
            for data in read(record, "the kill's record").children("events"):
                if data.opt_integer("seq") not in seen:
                    yield _event(data)
        except AnswerError as error:
            yield _garbled(str(error))
    if record is not None and record.get("state") == KILL_FINISHED:
        return
    why = (
        "the host's record says it is still running"
        if record is not None
        else f"no record could be read: {error or 'none found'}"
    )
    if record is None and not heard:
        yield KillEvent(
            KILL_UNKNOWN,
            None,
            f"{transport.chain_text}: the connection was lost as the kill began, and no "
            f"record of it could be read back ({why}): it most likely never started; "
            f"check the run ({command('status')}), and {path} on the host",
            {"record": path},
        )
        return
    yield KillEvent(
        KILL_UNKNOWN,
        None,
        f"{transport.chain_text}: the connection was lost during the kill and its end could "
        f"not be read back ({why}); the kill goes on on the host without it, and what it "
        f"did will be in {path} there",
        {"record": path},
    )


async def _read_back(
    transport: Transport, request: dict[str, object], deadline: float
) -> tuple[dict | None, str | None]:
    """The kill's record on the host once it is finished, or the last one read (or
    None and why) when ``deadline`` comes first. Each try reconnects as the transport does."""
    args = {
        "mode": MODE_KILL_RECORD,
        "record_dir": request["record_dir"],
        "kill_id": request["kill_id"],
    }
    record: dict | None = None
    error: str | None = None
    while True:
        remaining = deadline - time.monotonic()
        try:
            done = (await run_agent(transport, args, timeout=max(min(remaining, 10), 1))).completed
            lines = [x for x in done.stdout.splitlines() if x.strip()]
            answer = decode(lines[-1], "the kill's record") if lines else None
            if answer is not None and answer.opt_string("t") == ANSWER_RECORD:
                found = answer.opt_child("record")
                record = found.plain() if found is not None else record
                error = None if found is not None else f"no record at {answer.opt_string('path')}"
            else:
                error = done.stderr_line() or f"the agent gave no answer (exit {done.exit_status})"
        except (TransportError, AnswerError) as failure:
            error = str(failure)
        if record is not None and record.get("state") == KILL_FINISHED:
            return record, None
        if time.monotonic() >= deadline:
            return record, error
        await asyncio.sleep(min(1.0, max(deadline - time.monotonic(), 0)))


async def _events(process: RemoteProcess, seen: set[int]) -> AsyncIterator[KillEvent]:
    """The kill's events as the agent streams them, one JSON line each (their ``seq``
    into ``seen``); a line that is not one is said as such, never obeyed."""
    buffer = b""
    async for chunk in process.chunks():
        buffer += chunk
        if b"\n" not in buffer and len(buffer) > MAX_EVENT:
            buffer = b""
            yield _garbled(f"an event longer than {MAX_EVENT} bytes")
        while b"\n" in buffer:
            raw, buffer = buffer.split(b"\n", 1)
            if raw.strip():
                try:
                    data = decode(raw, "a kill event")
                    seq = data.opt_integer("seq")
                    seen.add(len(seen) if seq is None else seq)
                    yield _event(data)
                except AnswerError as error:
                    yield _garbled(str(error))


def _event(data: Fields) -> KillEvent:
    """One of the kill's events as words; raises AnswerError when it is not one."""
    kind = data.string("t")
    pid = data.opt_integer("pid")
    if kind == KILL_STARTED:
        where = data.opt_string("record")
        message = f"the kill runs on the host as pid {data.opt_integer('worker')}" + (
            f"; its record: {where}" if where else "; it could not write its record there"
        )
    elif kind == KILL_SIGNALLED:
        message = f"sent {data.string('signal')} to pid {pid} ({data.string('method')})"
    elif kind == KILL_EXITED:
        message = f"pid {pid} exited"
    elif kind == KILL_GONE:
        message = f"pid {pid} was already gone"
    elif kind == KILL_CHANGED:
        message = f"pid {pid} is now another process: nothing was signalled"
    elif kind == KILL_REFUSED:
        message = data.opt_string("reason") or "refused, with no reason given"
    elif kind == KILL_ERROR:
        message = f"the kill failed on the host: {data.opt_string('message')}"
    elif kind == KILL_STOPPING:
        message = f"asked the runtime: {' '.join(data.strings('command'))}"
    elif kind == KILL_STOPPED:
        message = stopped_words(data.plain())
    elif kind == KILL_GPU_WAIT:
        pids = data.integers("pids")
        listed = f" (nvidia-smi still lists pid {', '.join(map(str, pids))})" if pids else ""
        held = mib_text(data.opt_integer("held_mib") or 0)
        message = f"waiting for GPU memory: {held} held{listed}"
    elif kind == KILL_DONE:
        message = "done"
    else:
        message = kind
    plain = data.plain()
    plain.pop("t", None)
    if kind == KILL_DONE:  # what the summary and the audit read: each field of its type
        gpu = data.opt_child("gpu")
        plain.update(
            remaining=data.integers("remaining"),
            port_owners=data.pids_or_words("port_owners"),
            gpu=None if gpu is None else _gpu_of(gpu),
        )
    return KillEvent(kind, pid, message, plain)


def _gpu_of(gpu: Fields) -> dict[str, object]:
    """The kill's GPU check, as :func:`_gpu_words` reads it."""
    return {
        "checked": gpu.flag("checked"),
        "reason": gpu.opt_string("reason"),
        "gpus": gpu.integers("gpus"),
        "source": gpu.opt_string("source"),
        "held": [
            {
                "pid": held.integer("pid"),
                "used_mib": held.opt_integer("used_mib") or 0,
                "gpu": held.opt_integer("gpu"),
                "user": held.opt_string("user"),
                "command": held.opt_string("command"),
                "signalled": held.flag("signalled"),
            }
            for held in gpu.children("held")
        ],
        "freed_mib": gpu.opt_integer("freed_mib"),
        "freed_gpus": gpu.integers("freed_gpus"),
        "held_mib": gpu.opt_integer("held_mib"),
        "waited_s": gpu.opt_number("waited_s"),
    }


def _garbled(problem: str) -> KillEvent:
    """An event babysit could not read: said, and what happened is read back from the
    kill's record on the host if the stream does not end in a final event."""
    return KillEvent(KILL_GARBLED, None, f"the host sent an unreadable kill event: {problem}", {})
