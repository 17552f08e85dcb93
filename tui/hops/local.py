"""The local hop: commands run on this machine, as babysit's own subprocesses.

hosts.yaml: ``local: true``. A chain based here starts its commands locally; the
local transport (tui/remote/local.py) runs the agent with babysit's own python
when no hop follows.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui.hops.spec import Hop, HopInput, HopSpec

KIND = "local"


@dataclass(frozen=True)
class LocalHop(Hop):
    """This machine."""

    kind = KIND

    @property
    def texts(self) -> tuple[str, ...]:
        return (KIND,)


def parse(given: HopInput) -> tuple[Hop, ...]:
    if not given.reader.boolean(given.node, given.key):
        raise given.reader.fail(given.node, given.key, "must be true (or remove the key)")
    return (LocalHop(),)


SPEC = HopSpec(kind=KIND, written=f"{KIND}: true", rank=0, base=True, parse=parse)
