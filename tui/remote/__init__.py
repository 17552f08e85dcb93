"""Reaching hosts: the transports that run a chain of hops (tui/hops/), and the agent
sent through them."""

from __future__ import annotations

from collections.abc import Sequence

from tui.config import Host
from tui.hops.spec import Hop
from tui.remote.links import SshLinks
from tui.remote.local import LocalTransport
from tui.remote.transport import Completed, RemoteProcess, Transport


def open_transport(host: Host, links: SshLinks) -> Transport:
    """The transport for ``host``; SSH connections come from (and stay in) ``links``."""
    return transport_through(host.hops, links)


def transport_through(hops: Sequence[Hop], links: SshLinks) -> Transport:
    """A transport through ``hops``: from this machine, or from the SSH server the first
    hop names, over its link in ``links``."""
    endpoint = hops[0].endpoint
    if endpoint is None:
        return LocalTransport(hops)
    from tui.remote.ssh import SshTransport

    return SshTransport(links.get(endpoint), hops)


__all__ = [
    "Completed",
    "RemoteProcess",
    "SshLinks",
    "Transport",
    "open_transport",
    "transport_through",
]
