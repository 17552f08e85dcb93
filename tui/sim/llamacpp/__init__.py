"""A simulated llama.cpp ``llama-server``, builds b2500 to b9999 in three log shapes.

Builds are named as llama.cpp names them (``b5890``) or by the shape they print
(``2024``, ``2025``, ``2026``, ``2026-06``; see :mod:`tui.sim.llamacpp.releases`):

- **2024** (before b3680): the server's own lines on stdout as
  ``INFO [           print_timings] prompt eval time     = ... | tid="..." timestamp=N
  id_slot=0 ...``; the HTTP server starts first (``HTTP server listening``, /health 503
  while the model loads), ready is ``model loaded`` then ``all slots are idle``.
- **2025** (b3680 to b7599): ``srv  %12s: `` / ``slot %12s: id %2d | task %d | `` lines;
  the timings as one ``slot print_timing: id  0 | task N | `` header and three unprefixed
  lines; ``n_decoded = N, tg = X t/s`` while generating; ready is ``main: server is
  listening on http://H:P - starting the main loop`` then ``srv  update_slots: all slots
  are idle``.
- **2026** (b7600 on): each timing line prefixed, plus ``graphs reused = N``;
  ``n_gen = N, tg = X t/s, tg_3s = Y t/s``; ready is ``srv          main: listening on
  http://H:P``; from b8600 the draft line ends ``mean acceptance length = L, acceptance
  rate per position = (a, b, ...)``.

``--log-prefix`` adds the level letter and ``--log-timestamps`` the time since the process
started (``M.SS.mmm.uuu``), in 2025 and 2026 builds. ``/health`` answers 503 ``Loading
model`` until the ready line, then 200 ``{"status":"ok"}``; ``/metrics`` needs
``--metrics`` (else 501); ``/slots`` needs ``--slots`` in 2024 builds and is on unless
``--no-slots`` later. A draft model (``-md``) turns on speculative decoding (not in 2024
builds, which have none). ``wedged``: the server loop stops (no slot line any more),
``/health`` keeps answering 200 and requests wait.
"""

from __future__ import annotations

from tui.sim.engine import EngineKind
from tui.sim.llamacpp.engine import LlamaCpp
from tui.sim.llamacpp.releases import (
    ALIASES,
    DEFAULT_PORT,
    DEFAULT_VERSION,
    RELEASES,
    parse_build,
    shape,
)
from tui.sim.version import Version


def _unsupported(v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are known only for some builds."""
    if scenario == "spec-off" and shape(v) != "2026":
        return "the 'speculative decoding not supported' warning is known for 2026 builds"
    if scenario == "nccl-timeout":
        return "llama-server splits layers over GPUs without NCCL collectives"
    if scenario == "engine-dead":
        return "llama-server is one process: its engine cannot die under a living server"
    if scenario == "orphan-workers":
        return "llama-server is one process: it has no workers to leave behind"
    return None


KIND = EngineKind(
    name="llamacpp",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=(),
    releases=RELEASES,
    factory=LlamaCpp,
    unsupported=_unsupported,
    parse_version=parse_build,
)
