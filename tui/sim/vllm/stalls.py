"""vLLM's engine stopping while the API server lives on: wedged (one last stats line with
0.0 throughputs, then silence at info level), a stuck NCCL collective (torch's watchdog
lines from every rank, then the same), and the engine core dying under a living API server.

engine-dead: the engine core's death is printed as the release prints it (0.11-0.15: the
client's ``Engine core proc EngineCore_DP0 died unexpectedly, shutting down client.``; 0.33:
the executor's ``Worker proc Worker_TP0 died unexpectedly (exit code: -9)``; other V1
releases: the engine core's fatal error and ``EngineDeadError``), its process exits, and the
API server stays up as with ``VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1``: ``/health`` answers 200
and every completion 500 at once with an empty body (``create_completion`` raises the
engine's dead error first thing, and the launcher's handler for ``EngineDeadError``
answers ``Response(status_code=500)``), streamed or not.
"""

from __future__ import annotations

import signal
import time

from tui.sim.nccl import Collective
from tui.sim.response import Response
from tui.sim.version import V
from tui.sim.vllm.failures import Failures
from tui.sim.vllm.releases import torch_release

#: the answer of a completion once the engine core is dead
ENGINE_DEAD = Response(500, b"", "")


class Stalls(Failures):
    """nccl-timeout and engine-dead; ``wedge`` itself is the engine base's."""

    #: the engine core died and the API server stays up (engine-dead)
    api_stays_up = False

    def nccl_timeout(self) -> None:
        """Every rank's watchdog (the engine core, or each worker with tp > 1) reports the
        stuck all-reduce on stderr through its process tag; then nothing progresses."""
        load = self.host.load
        stuck = Collective.stuck(
            self.host.rng, load.totals.forward_ct, self.model.layers, load.running
        )
        self.wedge()
        torch = torch_release(self.v)
        proc = "worker" if self.v0 or self.cfg.tp > 1 else "engine"
        for rank in range(self.cfg.tp):
            self.raw("\n".join(stuck.lines(torch, rank)) + "\n", proc=proc, rank=rank)

    def engine_dies(self) -> None:
        """See the module docstring."""
        self.engine_dead = True
        self.api_stays_up = True
        if V("0.11.0") <= self.v < V("0.16.0") or self.v >= V("0.33.0"):
            self.child_killed_lines()
            self.host.end_engine_core(signal.SIGKILL)
        else:
            self.crash_lines()
            self.host.end_engine_core(signal.SIGTERM)
        self.host.load.abort_all(time.monotonic())
