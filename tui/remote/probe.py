"""Probing hosts: one agent round trip per host answers "which run is this?" for its services."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass

from tui.agent.protocol import MODE_PROBE, MODE_SERVE_PROBES
from tui.config import Host, MetricsSource, Service
from tui.core.answers import AnswerError, Fields, decode
from tui.core.assess import assess
from tui.core.host_gpus import HostGpus
from tui.core.report import ProbeDetails
from tui.core.runs import Assessment, ServiceProbe, unknown
from tui.core.sanitize import printable
from tui.engines import GENERIC, SPECS, of_log, spec
from tui.errors import CommandTimeout, TransportError
from tui.remote.agentcall import chatter_note, client_chain, run_agent, stream_agent
from tui.remote.transport import Completed, RemoteProcess, Transport

PROBE_TIMEOUT = 20.0
#: Seconds a refresh may reuse the agent's last GPU process list (see probe_request):
#: nvidia-smi costs tens of ms of CPU per run, and that list changes only when runs do.
APPS_MAX_AGE = 10.0
#: Bytes of the log's end a report reads for its metrics (a few minutes of stats lines).
REPORT_TAIL = 256 * 1024
#: Bytes of log tails one probe answer may carry, for all its services together: each
#: service gets its share (a host of ``instances: 1024`` gets 8 KiB of each log, not
#: 256 MiB in one answer).
MAX_ANSWER_TAIL = 8 * 1024 * 1024


def ready_patterns(service: Service) -> tuple[str, ...]:
    """What says the service serves: its ``ready:`` from hosts.yaml, else its engine's lines."""
    return tuple(service.ready or spec(service.engine).ready)


def stamps_of(service: Service) -> list[list[str]]:
    """[pattern, kind] of each way the service's log lines are stamped, generic's last."""
    found = [s for e in of_log(service.engine) for s in e.stamps] + list(SPECS[GENERIC].stamps)
    return [[s.pattern, s.kind] for s in dict.fromkeys(found)]


def args_heads_of(service: Service) -> list[dict[str, object]]:
    """The heads of the line(s) where the server prints the args it runs with: ``text``,
    and ``until``, the start of the line that ends a dump of many lines (else null)."""
    heads = [h for e in of_log(service.engine) for h in e.args_heads]
    return [{"text": h.text, "until": h.until} for h in dict.fromkeys(heads)]


#: Where babysit keeps run records on each host (written at launch), expanded there.
#: $BABYSIT_HOST_STATE (on the machine running babysit) overrides it, for tests.
DEFAULT_HOST_STATE = "~/.local/state/babysit"


def host_state_dir() -> str:
    return os.environ.get("BABYSIT_HOST_STATE", DEFAULT_HOST_STATE)


def phases_of(service: Service) -> list[dict[str, object]]:
    """The startup phases of the service's engine(s), in order: ``name``, the ``lines``
    that say one began, and the regex of its ``progress`` figures (or null)."""
    phases = [p for e in of_log(service.engine) for p in e.phases]
    return [{"name": p.name, "lines": list(p.lines), "progress": p.progress} for p in phases]


def workers_of(service: Service) -> list[str]:
    """The process titles of the engine's workers (see EngineSpec.workers)."""
    return list(dict.fromkeys(w for e in of_log(service.engine) for w in e.workers))


def owner_entry(service: Service) -> dict[str, object]:
    """What the agent needs to find a service's runs, and nothing more: the request's
    ``gpu_owners`` entry of a service that is not probed itself."""
    return {
        "name": service.name,
        "log": service.log,
        "port": service.port,
        "match": service.match,
        "launch": list(service.launch.command) if service.launch else None,
        "workers": workers_of(service),
        "container": (
            {"name": service.container.name, "runtime": service.container.runtime}
            if service.container
            else None
        ),
    }


def probe_request(
    services: Sequence[Service],
    *,
    tail_bytes: int | Mapping[str, int] = 0,
    gpus: bool = False,
    apps_max_age: float = 0.0,
    scrape: bool | None = None,
    owners: Sequence[Service] = (),
) -> dict[str, object]:
    """The agent's probe arguments; ``tail_bytes`` (one number, or one per service name)
    > 0 brings back that much of each log's end, and with ``gpus`` nvidia-smi's readings.
    ``apps_max_age`` lets a long-lived agent reuse its last list of GPU processes for
    that many seconds while it provably still holds (the GPU readings are always new).
    ``scrape``: read the /metrics page of ``metrics: prometheus`` services (by default
    when the tail or the GPUs are asked for). ``owners``: the host's other services,
    whose runs own GPU memory too (sent only when GPU readings are asked for), so that
    none of their processes is taken for an orphan."""
    tails = _tails(services, tail_bytes)
    if scrape is None:
        scrape = bool(any(tails.values()) or gpus)
    wants_gpus = gpus or any(tails.values())
    return {
        "mode": MODE_PROBE,
        "apps_max_age": apps_max_age,
        "gpu_owners": [owner_entry(s) for s in owners] if wants_gpus else [],
        "services": [
            {
                "tail_bytes": tails[s.name],
                "prometheus": s.metrics is MetricsSource.PROMETHEUS and scrape,
                "gpus": list(s.gpus) if tails[s.name] or gpus else None,
                "name": s.name,
                "log": s.log,
                "port": s.port,
                "engine": s.engine.value,
                "match": s.match,
                "launch": list(s.launch.command) if s.launch else None,
                "ready": list(ready_patterns(s)),
                # the heads of the line where the server prints the args it runs with
                "args_heads": args_heads_of(s),
                # how its lines are dated, and the tag its pid puts on them
                "stamps": stamps_of(s),
                "pid_tag": spec(s.engine).pid_tag,
                # the startup phases' lines, and the titles of the engine's workers
                "phases": phases_of(s),
                "workers": workers_of(s),
                "record_dir": f"{host_state_dir()}/{s.name}",
                # the container the service runs in: its processes are the run's
                "container": (
                    {"name": s.container.name, "runtime": s.container.runtime}
                    if s.container
                    else None
                ),
            }
            for s in services
        ],
    }


def _tails(services: Sequence[Service], tail_bytes: int | Mapping[str, int]) -> dict[str, int]:
    """Bytes of each service's log end to bring back: one number for all, or one per
    service name; each bounded by its share of :data:`MAX_ANSWER_TAIL`."""
    share = MAX_ANSWER_TAIL // max(1, len(services))
    tails = {}
    for s in services:
        wanted = tail_bytes if isinstance(tail_bytes, int) else tail_bytes.get(s.name, 0)
        tails[s.name] = max(1, min(wanted, share)) if wanted > 0 else 0
    return tails


def answer_limit(request: dict[str, object]) -> int:
    """The most bytes an honest answer to ``request`` can take: each service's tail in
    base64, a /metrics page and nvidia-smi's readings, with room to spare. A host that
    sends more without ending its line is not answering."""
    services = request.get("services") or []
    tails = sum(int(s.get("tail_bytes") or 0) for s in services)  # type: ignore[union-attr]
    return 16 * 1024 * 1024 + 2 * tails + len(services) * 4 * 1024 * 1024  # type: ignore[arg-type]


class _AgentGone(Exception):
    """The long-lived agent ended between two requests."""


@dataclass
class _Agent:
    """One running serve-probes agent: its stream, its stdout, unread bytes."""

    stack: contextlib.AsyncExitStack
    process: RemoteProcess
    chunks: AsyncIterator[bytes]
    buffer: bytes = b""


class ProbeChannel:
    """One long-lived probe agent on a host, asked again at every refresh.

    Starting python3 (and, over SSH, a session) for each refresh costs more than
    the probe itself; this agent instead waits on its stdin for the next request
    and answers each with one line. Requests are answered one at a time, in
    order. Any failure (a lost link, a timeout, a cancelled request, an agent that
    died) ends the agent, and the next request starts a fresh one, so an answer is
    never matched to the wrong question. Each answer is a new look at the host;
    only nvidia-smi's process list may be reused (see :func:`probe_request`).
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._lock = asyncio.Lock()
        self._agent: _Agent | None = None
        #: Agents started so far (1 while all goes well).
        self.starts = 0

    async def ask(self, request: dict[str, object], *, timeout: float) -> Completed:
        """The agent's answer to ``request`` as a finished command: exit status 0 and
        one JSON line, or the status and stderr of an agent that died."""
        async with self._lock:
            try:
                return await asyncio.wait_for(self._ask(request), timeout)
            except asyncio.TimeoutError:
                await self._end()
                raise CommandTimeout(
                    f"{self.transport.chain_text}: the probe did not answer within "
                    f"{timeout:g} s and was ended"
                ) from None
            except BaseException:
                await self._end()
                raise

    async def _ask(self, request: dict[str, object]) -> Completed:
        text = json.dumps({**request, "client": client_chain()}, separators=(",", ":"))
        line = text.encode() + b"\n"
        limit = answer_limit(request)
        if self._agent is not None:
            # An agent that ended since the last answer (its container stopped, someone
            # killed it) is started again; what a fresh one says is the answer.
            try:
                return await self._exchange(self._agent, line, fresh=False, limit=limit)
            except _AgentGone:
                await self._end()
        return await self._exchange(await self._start(), line, fresh=True, limit=limit)

    async def _exchange(self, agent: _Agent, line: bytes, *, fresh: bool, limit: int) -> Completed:
        try:
            await agent.process.write(line)
        except TransportError:
            # Its channel is closed: the agent ended (or the link did; reading says which).
            if not fresh:
                raise _AgentGone from None
        while b"\n" not in agent.buffer:
            if len(agent.buffer) > limit:
                await self._end()
                return Completed(
                    ("probe",), 1, b"", f"an answer longer than {limit:,} bytes".encode()
                )
            chunk = await anext(agent.chunks, b"")
            if not chunk:  # the agent is gone: say why, as a one-shot run would
                if not fresh and not agent.buffer:
                    raise _AgentGone
                stderr = await agent.process.read_stderr()
                status = await agent.process.wait()
                await self._end()
                ended = None if status is not None else "a signal"
                return self.transport.check(
                    Completed(("probe",), status, agent.process.chatter, stderr, signal=ended)
                )
            agent.buffer += chunk
        answer, _, agent.buffer = agent.buffer.partition(b"\n")
        return Completed(("probe",), 0, answer, b"")

    async def _start(self) -> _Agent:
        stack = contextlib.AsyncExitStack()
        process = await stack.enter_async_context(
            stream_agent(self.transport, {"mode": MODE_SERVE_PROBES})
        )
        self._agent = _Agent(stack, process, aiter(process.chunks()))
        self.starts += 1
        return self._agent

    async def _end(self) -> None:
        agent, self._agent = self._agent, None
        if agent is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(agent.stack.aclose())

    async def close(self) -> None:
        """End the agent (it exits when its stdin closes)."""
        async with self._lock:
            await self._end()


async def probe_host(
    transport: Transport,
    host: Host,
    services: Sequence[Service] | None = None,
    *,
    channel: ProbeChannel | None = None,
) -> list[Assessment]:
    """Assess ``services`` (default: all of the host's) in one round trip."""
    return [
        a for a, _ in await probe_services(transport, host, services, tail_bytes=0, channel=channel)
    ]


async def probe_services(
    transport: Transport,
    host: Host,
    services: Sequence[Service] | None,
    *,
    tail_bytes: int | Mapping[str, int],
    gpus: bool = False,
    channel: ProbeChannel | None = None,
    apps_max_age: float = 0.0,
    scrape: bool | None = None,
) -> list[tuple[Assessment, ProbeDetails]]:
    """One round trip for ``services`` (default: all of the host's): each one's verdict
    and the raw extras the probe brought back, in the order asked. Never raises for
    what the host did: an unreachable host, a failed agent or an unreadable answer is
    each service's UNKNOWN verdict with the reason."""
    chosen = list(services if services is not None else host.services.values())
    if not chosen:
        return []
    none = ProbeDetails()
    asked = {s.name for s in chosen}
    owners = [s for s in host.services.values() if s.name not in asked]
    request = probe_request(
        chosen,
        tail_bytes=tail_bytes,
        gpus=gpus,
        apps_max_age=apps_max_age,
        scrape=scrape,
        owners=owners,
    )
    try:
        if channel is not None:
            result = await channel.ask(request, timeout=PROBE_TIMEOUT)
        else:
            answer = await run_agent(transport, request, timeout=PROBE_TIMEOUT)
            result = answer.completed
            if result.ok and not answer.started:
                # The command ended well yet the agent never spoke: something on the way
                # (a forced command, a login shell) ran instead of it.
                printed = chatter_note(answer.chatter) if answer.chatter else "nothing"
                result = Completed(
                    result.argv, 1, b"", f"the agent did not start; {printed}".encode()
                )
    except TransportError as error:
        now = time.time()
        return [(unknown(host.name, s.name, error.message, now), none) for s in chosen]
    now = time.time()
    if not result.ok:
        detail = result.stderr_line() or (
            f"exit status {result.exit_status}"
            if result.exit_status is not None
            else f"ended by {result.signal or 'a signal'}"
        )
        if result.exit_status == 127:
            detail = f"python3 not found on {host.name} ({detail})"
        return [
            (unknown(host.name, s.name, f"the probe failed: {detail}", now), none) for s in chosen
        ]
    try:
        # A big answer (a report of many services) is parsed off the event loop.
        data = (
            await asyncio.to_thread(decode, result.stdout, "the probe's answer")
            if len(result.stdout) > 256 * 1024
            else decode(result.stdout, "the probe's answer")
        )
        if "error" in data:
            error = data.string("error")
            return [
                (unknown(host.name, s.name, f"the probe failed: {error}", now), none)
                for s in chosen
            ]
        # A service's entry with a bad name is that service's problem only (it goes
        # unnamed, so its service is said to be missing from the answer).
        by_name = {
            printable(name): entry
            for entry in data.children("services")
            if isinstance(name := entry.data.get("name"), str)
        }
        # the host's GPUs, sent once for every service that asked: one block they share,
        # its readings made once
        host_gpus = data.opt_child("gpu_csv")
        gpu_csv = None if host_gpus is None else HostGpus(host_gpus.plain_text())
        out = []
        for s in chosen:
            entry = by_name.get(s.name)
            if entry is None:
                reason = f"the probe's answer was unreadable: it says nothing of {s.name}"
                out.append((unknown(host.name, s.name, reason, now), none))
                continue
            try:
                probe = ServiceProbe.from_json(host.name, s.engine.value, data, entry)
                assessment = assess(probe)
                out.append((assessment, _details(entry, assessment, probe, gpu_csv)))
            except AnswerError as error:  # this service's part: the others still count
                reason = f"the probe's answer was unreadable: {error}"
                out.append((unknown(host.name, s.name, reason, now), none))
        return out
    except AnswerError as error:
        return [
            (unknown(host.name, s.name, f"the probe's answer was unreadable: {error}", now), none)
            for s in chosen
        ]


def _details(
    entry: Fields,
    assessment: Assessment,
    probe: ServiceProbe,
    gpu_csv: Mapping[str, object] | None,
) -> ProbeDetails:
    """The extras of one service's entry; ``gpu_csv`` is the host's GPUs (the answer's
    own), this service's when its entry says it asked for them."""
    log = entry.opt_child("log")
    args_line = None
    if assessment.run is not None:
        for run in entry.children("runs"):
            if run.opt_integer("pid") == assessment.run.root.pid:
                ready = run.opt_child("ready")
                # as printed: a dump of many lines keeps its newlines (its values are
                # made printable where they are shown)
                args_line = ready.opt_text("args_line") if ready is not None else None
    tail = b""
    tail_offset = None
    if log is not None:
        tail_offset = log.opt_integer("tail_offset")
        encoded = log.opt_string("tail")
        if encoded:
            try:
                tail = base64.b64decode(encoded, validate=True)
            except ValueError:
                raise AnswerError(f"{log.where}.tail", "is not base64") from None
    page = None
    scraped = entry.values("prometheus")
    if scraped:
        if len(scraped) != 2 or not isinstance(scraped[1], str):
            raise AnswerError(f"{entry.where}.prometheus", "is not [status, page]")
        if scraped[0] == 200:
            page = scraped[1]
    asked_gpus = entry.flag("gpu_csv")
    return ProbeDetails(
        tail=tail,
        tail_offset=tail_offset,
        args_line=args_line,
        gpu_csv=gpu_csv if asked_gpus else None,
        prometheus=page,
        startups=probe.startups,
        startups_problem=probe.startups_problem,
    )
