"""SGLang's engine stopping while the process lives on: wedged (silence) and a stuck NCCL
collective (torch's watchdog lines from every scheduler rank, then silence)."""

from __future__ import annotations

from tui.sim.nccl import Collective
from tui.sim.out import STDERR
from tui.sim.sglang.lines import SglangLines
from tui.sim.sglang.releases import torch_release


class Stalls(SglangLines):
    """The nccl-timeout lines; ``wedge`` itself is the engine base's (no line)."""

    def nccl_timeout(self) -> None:
        """Every scheduler rank's watchdog reports the stuck all-reduce on stderr, unprefixed
        (c10's own logger, not SGLang's); then nothing progresses."""
        load = self.host.load
        stuck = Collective.stuck(
            self.host.rng, load.totals.forward_ct, self.model.layers, load.running
        )
        self.wedge()
        torch = torch_release(self.v)
        for rank in range(self.cfg.tp):
            for line in stuck.lines(torch, rank):
                self.host.out.line(line, STDERR)
