"""Asking a host's agent to send one canary completion to a run's server (MODE_CANARY).

The agent sends it on the host's loopback and answers with what came back (the
shape is documented at :data:`tui.agent.protocol.MODE_CANARY`); reading that answer
as a result is :func:`tui.core.canary.read_canary`'s.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.agent.protocol import MODE_CANARY
from tui.remote.agentcall import ask_agent
from tui.remote.transport import Transport

#: Seconds the channel is given beyond the canary's own deadline: starting python3 on
#: the host (and the hops on the way) and the answer's way back.
CHANNEL_MARGIN = 15.0


async def ask_canary(
    transport: Transport, request: dict[str, object], *, timeout: float
) -> Mapping[str, object]:
    """The agent's answer to the canary ``request``. The channel is given the canary's
    own deadline on the host (``timeout``, or the request's when that is longer) and
    :data:`CHANNEL_MARGIN` more.

    Raises :class:`~tui.errors.TransportError` (a :class:`~tui.errors.HopFailed` when a
    hop failed) when the host could not be asked: no connection, the agent did not
    start, gave no answer or an answer that is no JSON object."""
    args = {**request, "mode": MODE_CANARY}
    deadline = max(timeout, float(request.get("timeout") or 0))  # type: ignore[arg-type]
    timeout = deadline + CHANNEL_MARGIN
    return (await ask_agent(transport, args, timeout=timeout, what="the canary's")).data


__all__ = ["CHANNEL_MARGIN", "ask_canary"]
