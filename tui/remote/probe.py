"""Probing hosts: one agent round trip per host answers "which run is this?" for its services."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence

from tui.config import Engine, Host, Service
from tui.core.runs import Assessment, ServiceProbe, assess, unknown
from tui.errors import TransportError
from tui.remote.follow import agent_argv
from tui.remote.transport import Transport

PROBE_TIMEOUT = 20.0

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


def probe_request(services: Sequence[Service]) -> dict[str, object]:
    return {
        "mode": "probe",
        "services": [
            {
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
    chosen = list(services if services is not None else host.services.values())
    if not chosen:
        return []
    try:
        result = await transport.run(
            agent_argv(transport, probe_request(chosen)), timeout=PROBE_TIMEOUT
        )
    except TransportError as error:
        now = time.time()
        return [unknown(host.name, s.name, error.message, now) for s in chosen]
    now = time.time()
    if not result.ok:
        detail = result.stderr_line() or f"exit status {result.exit_status}"
        if result.exit_status == 127:
            detail = f"python3 not found on {host.name} ({detail})"
        return [unknown(host.name, s.name, f"the probe failed: {detail}", now) for s in chosen]
    try:
        data = json.loads(result.stdout)
        by_name = {entry["name"]: entry for entry in data["services"]}
        return [
            assess(ServiceProbe.from_json(host.name, s.engine.value, data, by_name[s.name]))
            for s in chosen
        ]
    except (ValueError, KeyError, TypeError) as error:
        return [
            unknown(host.name, s.name, f"the probe's answer was unreadable ({error})", now)
            for s in chosen
        ]
