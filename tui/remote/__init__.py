"""Reaching hosts: transports (local, ssh, pct) and, later, the agent sent over them."""

from __future__ import annotations

from tui.config import Host, TransportKind
from tui.errors import ConfigError
from tui.remote.links import SshLinks
from tui.remote.local import LocalTransport
from tui.remote.transport import Completed, RemoteProcess, Transport


def open_transport(host: Host, links: SshLinks) -> Transport:
    """The transport for ``host``; SSH connections come from (and stay in) ``links``."""
    if host.transport is TransportKind.LOCAL:
        return LocalTransport()
    if host.ssh is None:
        raise ConfigError(f"{host.source}: hosts.{host.name}: no SSH endpoint")
    link = links.get(host.ssh)
    if host.transport is TransportKind.PCT and host.vmid is not None:
        from tui.remote.pct import PctTransport

        return PctTransport(link, host.vmid)
    from tui.remote.ssh import SshTransport

    return SshTransport(link)


__all__ = ["Completed", "RemoteProcess", "SshLinks", "Transport", "open_transport"]
