"""Probing hosts: one agent round trip per host answers "which run is this?" for its services."""

from __future__ import annotations

import base64
import json
import os
import time
from collections.abc import Sequence

from tui.config import Engine, Host, MetricsSource, Service
from tui.core.report import ProbeDetails, ServiceReport, build_report
from tui.core.runs import Assessment, ServiceProbe, assess, unknown
from tui.errors import TransportError
from tui.remote.follow import agent_argv
from tui.remote.transport import Transport

PROBE_TIMEOUT = 20.0
#: Bytes of the log's end a report reads for its metrics (a few minutes of stats lines).
REPORT_TAIL = 256 * 1024

#: What each engine prints once it serves; a service's ``ready:`` in hosts.yaml replaces these.
READY_PATTERNS = {
    Engine.SGLANG: ("The server is fired up and ready to roll!",),
    Engine.VLLM: ("Application startup complete.",),
    Engine.GENERIC: (),
}

#: Where babysit keeps run records on each host (written at launch), expanded there.
#: $BABYSIT_HOST_STATE (on the machine running babysit) overrides it, for tests.
DEFAULT_HOST_STATE = "~/.local/state/babysit"


def host_state_dir() -> str:
    return os.environ.get("BABYSIT_HOST_STATE", DEFAULT_HOST_STATE)


def probe_request(
    services: Sequence[Service], *, tail_bytes: int = 0, gpus: bool = False
) -> dict[str, object]:
    """The agent's probe arguments; ``tail_bytes`` > 0 also brings back the log's tail
    and nvidia-smi's readings (for reports, not for the 2 s verdict refresh)."""
    return {
        "mode": "probe",
        "services": [
            {
                "tail_bytes": tail_bytes,
                "prometheus": s.metrics is MetricsSource.PROMETHEUS and bool(tail_bytes or gpus),
                "gpus": list(s.gpus) if tail_bytes or gpus else None,
                "name": s.name,
                "log": s.log,
                "port": s.port,
                "engine": s.engine.value,
                "match": s.match,
                "launch": list(s.launch.command) if s.launch else None,
                "ready": list(s.ready or READY_PATTERNS[s.engine]),
                "record_dir": f"{host_state_dir()}/{s.name}",
            }
            for s in services
        ],
    }


async def probe_host(
    transport: Transport, host: Host, services: Sequence[Service] | None = None
) -> list[Assessment]:
    """Assess ``services`` (default: all of the host's) in one round trip."""
    return [a for a, _ in await _probe(transport, host, services, tail_bytes=0)]


async def report_host(
    transport: Transport,
    host: Host,
    services: Sequence[Service] | None = None,
    *,
    tail_bytes: int = REPORT_TAIL,
    gpus: bool = True,
) -> list[ServiceReport]:
    """Verdict, metrics, launch diff, GPUs and hints for ``services``, in one round trip."""
    reports = []
    chosen = list(services if services is not None else host.services.values())
    for (assessment, details), service in zip(
        await _probe(transport, host, chosen, tail_bytes=tail_bytes, gpus=gpus),
        chosen,
        strict=True,
    ):
        reports.append(
            build_report(
                assessment,
                details,
                engine=service.engine.value,
                intended=list(service.launch.command) if service.launch else None,
                gpu_indexes=service.gpus,
            )
        )
    return reports


async def _probe(
    transport: Transport,
    host: Host,
    services: Sequence[Service] | None,
    *,
    tail_bytes: int,
    gpus: bool = False,
) -> list[tuple[Assessment, ProbeDetails]]:
    chosen = list(services if services is not None else host.services.values())
    if not chosen:
        return []
    none = ProbeDetails()
    try:
        result = await transport.run(
            agent_argv(transport, probe_request(chosen, tail_bytes=tail_bytes, gpus=gpus)),
            timeout=PROBE_TIMEOUT,
        )
    except TransportError as error:
        now = time.time()
        return [(unknown(host.name, s.name, error.message, now), none) for s in chosen]
    now = time.time()
    if not result.ok:
        detail = result.stderr_line() or f"exit status {result.exit_status}"
        if result.exit_status == 127:
            detail = f"python3 not found on {host.name} ({detail})"
        return [
            (unknown(host.name, s.name, f"the probe failed: {detail}", now), none) for s in chosen
        ]
    try:
        data = json.loads(result.stdout)
        by_name = {entry["name"]: entry for entry in data["services"]}
        out = []
        for s in chosen:
            entry = by_name[s.name]
            assessment = assess(ServiceProbe.from_json(host.name, s.engine.value, data, entry))
            out.append((assessment, _details(entry, assessment)))
        return out
    except (ValueError, KeyError, TypeError) as error:
        return [
            (unknown(host.name, s.name, f"the probe's answer was unreadable ({error})", now), none)
            for s in chosen
        ]


def _details(entry: dict, assessment: Assessment) -> ProbeDetails:
    log = entry.get("log") or {}
    args_line = None
    if assessment.run is not None:
        for run in entry.get("runs") or ():
            if run.get("pid") == assessment.run.root.pid:
                args_line = (run.get("ready") or {}).get("args_line")
    tail = base64.b64decode(log["tail"]) if log.get("tail") else b""
    prometheus = entry.get("prometheus")
    page = prometheus[1] if prometheus and prometheus[0] == 200 else None
    return ProbeDetails(
        tail=tail,
        tail_offset=log.get("tail_offset"),
        args_line=args_line,
        gpu_csv=entry.get("gpu_csv"),
        prometheus=page,
    )
