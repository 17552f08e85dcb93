"""A simulated HF TGI server (``text-generation-launcher``), 2.0 to 3.3.

One process stands for the launcher, the router and shard 0 (``--num-shard N``
adds N-1 child processes, the other shards). The log is what the launcher's
stdout carries: its own compact lines (JSON with ``--json-output``), the
Python shard's lines re-logged by it, and the router's full-format lines
printed verbatim, ANSI-coloured unless ``LOG_COLORIZE=1`` (JSON with
``flatten_event`` under ``--json-output``). Startup: the ``Args {`` dump
(``{:#?}``), the derived defaults, the weights check, ``Starting shard``,
``Waiting for shard to be ready...`` every 10 s of the shard's (printed)
load time, ``Shard ready in …``, ``Starting Webserver``, the warmup and
``Connected`` (ready). Each generation logs ``Success`` in its handler's span
with the timings; there is no periodic stats line: throughput, queue and
batch exist only on ``/metrics`` (``tgi_*``). ``/generate_stream`` sends one
``data:{...}`` event per token; ``wedged`` stops every generation silently.

Environment honoured like the real server: ``LOG_COLORIZE``. ``/health`` is
200 once connected (503 ``unhealthy`` otherwise; the real router is not
listening before ``Connected``).
"""

from __future__ import annotations

from tui.sim.engine import EngineKind
from tui.sim.tgi.engine import TGI
from tui.sim.tgi.releases import ALIASES, DEFAULT_PORT, DEFAULT_VERSION, SUPPORTED
from tui.sim.version import Version


def _unsupported(_v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are not simulated for TGI."""
    if scenario == "nccl-timeout":
        return "the shards' NCCL watchdog lines are simulated for sglang and vllm only"
    if scenario == "engine-dead":
        return "an engine core process that dies under a living API server is vLLM's"
    return None


KIND = EngineKind(
    name="tgi",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=("num_shard",),
    releases=SUPPORTED,
    factory=TGI,
    unsupported=_unsupported,
)
