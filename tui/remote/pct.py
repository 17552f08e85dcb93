"""The pct transport: commands run inside a Proxmox LXC container via ``pct exec``.

``pct exec VMID -- argv…`` runs on the Proxmox node over the node's SSH link (the
same connection every other host on that node uses). ``pct`` hands the argv to
``lxc-attach`` as a list, so no second shell parses it inside the container; the
only shell on the way is the node's login shell, which our quoting handles.

Failures of pct itself (no such container, container stopped, no pct on the
node) are told apart from the command's own exit status and raised as
:class:`~tui.errors.TransportError`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tui.errors import TransportError
from tui.remote.ssh import SshTransport
from tui.remote.sshlink import SshLink
from tui.remote.transport import EXIT_NOT_FOUND, Completed

_NO_CONFIG = re.compile(rb"Configuration file '[^']*' does not exist")
_NOT_RUNNING = re.compile(rb"CT \d+ not running")
_NO_PCT = re.compile(rb"\bpct: (command )?not found")


class PctTransport(SshTransport):
    def __init__(self, link: SshLink, vmid: int) -> None:
        super().__init__(link, prefix=("pct", "exec", str(vmid), "--"), hops=(f"pct exec {vmid}",))
        self.vmid = vmid

    def check(self, completed: Completed) -> Completed:
        """Raise when pct, not the command, failed."""
        err = completed.stderr
        node = self.link.endpoint.host
        if completed.exit_status == EXIT_NOT_FOUND and _NO_PCT.search(err):
            raise TransportError(
                f"{self.chain_text}: pct not found on {node}; is it a Proxmox VE node?"
            )
        if completed.exit_status not in (0, None) and (
            _NO_CONFIG.search(err) or _NOT_RUNNING.search(err)
        ):
            raise TransportError(
                f"{self.chain_text}: container {self.vmid} is not usable on {node}: "
                f"{completed.stderr_line()}"
            )
        return completed

    async def run(
        self, argv: Sequence[str], *, timeout: float, stdin: bytes | None = None
    ) -> Completed:
        return self.check(await super().run(argv, timeout=timeout, stdin=stdin))
