"""The pct hop: commands run inside a Proxmox LXC container through ``pct exec``.

hosts.yaml: ``pct: {node: user@host[:port], vmid: N}``; the node is an SSH server
(with ssh's host-level options), so a pct host brings its own base: the node's
link, which every host on that node shares. ``pct exec VMID -- argv…`` hands the
argv to ``lxc-attach`` as a list, so no second shell parses it inside the
container.

Failures of pct itself (no such container, container stopped, no pct on the node)
are told apart from the command's own exit status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tui.hops import ssh
from tui.hops.spec import DEFAULT_PYTHON, EXIT_NOT_FOUND, Hop, HopInput, HopSpec, Outcome, last_line

KIND = "pct"
#: The keys of ``pct:``, all required.
KEYS = ("node", "vmid")
#: Proxmox VE's container ids.
VMID_RANGE = (100, 999_999_999)

_NO_CONFIG = re.compile(rb"Configuration file '[^']*' does not exist")
_NOT_RUNNING = re.compile(rb"CT \d+ not running")
_NO_PCT = re.compile(rb"\bpct: (command )?not found")


@dataclass(frozen=True)
class PctHop(Hop):
    """Container ``vmid`` on the Proxmox node ``node`` (its host name, for messages)."""

    kind = KIND
    vmid: int
    node: str

    @property
    def texts(self) -> tuple[str, ...]:
        return (f"{KIND} exec {self.vmid}",)

    def prefix(self) -> tuple[str, ...]:
        return (KIND, "exec", str(self.vmid), "--")

    def python(self, outer: str) -> str:
        return DEFAULT_PYTHON

    def failure(self, outcome: Outcome) -> str | None:
        err = outcome.stderr
        if outcome.exit_status == EXIT_NOT_FOUND and _NO_PCT.search(err):
            return f"pct not found on {self.node}; is it a Proxmox VE node?"
        if outcome.exit_status not in (0, None) and (
            _NO_CONFIG.search(err) or _NOT_RUNNING.search(err)
        ):
            return f"container {self.vmid} is not usable on {self.node}: {last_line(err)}"
        return None


def parse(given: HopInput) -> tuple[Hop, ...]:
    reader = given.reader
    fields = reader.mapping(given.node, given.key, allowed=KEYS)
    for required in KEYS:
        if required not in fields:
            raise reader.fail(given.node, f"{given.key}.{required}", "missing required key")
    node = ssh.parse_endpoint(given, fields["node"][1], f"{given.key}.node")
    vmid = reader.integer(fields["vmid"][1], f"{given.key}.vmid", *VMID_RANGE)
    return (ssh.SshHop(node), PctHop(vmid, node.host))


SPEC = HopSpec(kind=KIND, written=f"{KIND}:", rank=10, base=True, parse=parse, options=ssh.OPTIONS)
