"""A simulated SGLang server (``python -m sglang.launch_server``), 0.4.0 to 0.5.18 and
0.5.20 to 0.5.21.

Every line follows the format strings of the chosen release (see the table in
:meth:`tui.sim.sglang.batches.Batches.decode_line`): the ``[%Y-%m-%d %H:%M:%S{ TPn}]``
prefix (rank tag always up to 0.4.6, only with tp > 1 from 0.4.7; ``.mmm`` with
``SGLANG_LOG_MS=1`` from 0.5.6), ``server_args=ServerArgs(...)`` built from the
flags (``server_args={...}``, the resolved dict, from 0.5.20), the load/KV/graph
sequence, uvicorn lines re-formatted with the timestamp (from 0.4.6), the warmup requests, then
``The server is fired up and ready to roll!``. Prefill lines come once per
scheduled batch and Decode lines every ``--decode-log-interval`` forward steps
while requests run; an idle server prints nothing (except what ``/health``
probes cause: like the real one, a probe on an idle server runs a one-token
generation and so logs a Prefill line).

Environment honoured like the real server: ``SGLANG_LOG_MS`` (≥0.5.6),
``SGLANG_LOG_FORWARD_ITERS`` (≥0.5.4.post1), ``SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION``
(≥0.5.6). ``/metrics`` answers 404 unless ``--enable-metrics`` is given, as in SGLang.

Wedged (``wedged``, ``nccl-timeout``): no Prefill or Decode line any more, the gauges
keep their last values, ``/health`` answers 200 without a generation, requests wait;
``nccl-timeout`` first prints torch's watchdog lines from every scheduler rank
(:mod:`tui.sim.sglang.stalls`).
"""

from __future__ import annotations

from tui.sim.engine import EngineKind
from tui.sim.sglang import formats
from tui.sim.sglang.engine import SGLang
from tui.sim.sglang.releases import ALIASES, DEFAULT_PORT, DEFAULT_VERSION, RELEASES
from tui.sim.version import V, Version


def _unsupported(v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are known only for some releases."""
    if scenario == "killed-at-load" and v < V("0.4.6"):
        return "the 'scheduler is dead' lines start with 0.4.6"
    if scenario == "killed-after" and v < V("0.5.20"):
        return "the watchdog's 'crashed with exit code' line starts with 0.5.20"
    if scenario == "engine-dead":
        return "an engine core process that dies under a living API server is vLLM's"
    return None


KIND = EngineKind(
    name="sglang",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=("tp_size",),
    releases=RELEASES,
    factory=SGLang,
    unsupported=_unsupported,
    log_formats=formats.FORMATS,
)
