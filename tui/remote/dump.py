"""Asking a host's agent for a hang capture of one run (MODE_DUMP).

The agent gathers the run's stacks, nvidia-smi, the log's last lines and the run
record and answers once (the shape is documented at :data:`tui.agent.protocol.MODE_DUMP`);
reading that answer as a dump is :func:`tui.core.dump.read_dump`'s.
"""

from __future__ import annotations

from tui.agent.protocol import MODE_DUMP
from tui.core.answers import Fields
from tui.remote.agentcall import ask_agent
from tui.remote.transport import Transport

#: Seconds the channel is given beyond the agent's own work: starting python3 on the host
#: (and the hops on the way), nvidia-smi, the log, and the answer's way back.
CHANNEL_MARGIN = 30.0
#: py-spy is asked at most twice per process (the second time with ``--nonblocking``).
TRIES_PER_PROCESS = 2


def dump_deadline(request: dict[str, object], processes: int) -> float:
    """Seconds the agent may take: py-spy's time for each of ``processes``, and the margin."""
    per_process = float(request.get("timeout") or 0)  # type: ignore[arg-type]
    return per_process * TRIES_PER_PROCESS * max(1, processes) + CHANNEL_MARGIN


async def ask_dump(transport: Transport, request: dict[str, object], *, timeout: float) -> Fields:
    """The agent's answer to the dump ``request``, given ``timeout`` seconds.

    Raises :class:`~tui.errors.TransportError` (a :class:`~tui.errors.HopFailed` when a
    hop failed) when the host could not be asked: no connection, the agent did not
    start, gave no answer or an answer that is no JSON object."""
    return await ask_agent(
        transport, {**request, "mode": MODE_DUMP}, timeout=timeout, what="the dump's"
    )


__all__ = ["CHANNEL_MARGIN", "ask_dump", "dump_deadline"]
