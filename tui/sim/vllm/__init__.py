"""A simulated vLLM OpenAI server (``vllm serve``): V0 0.6.0-0.7.3 and V1 0.8.5-0.33.x.

Line prefix per release: ``LEVEL MM-DD HH:MM:SS file.py:N]`` (≤0.7.3),
``[file.py:N]`` from 0.8; process tags ``(EngineCore_0 pid=N)`` on engine
output from 0.8, ``(APIServer pid=N)`` / ``(EngineCore_DP0 pid=N)`` on every
written line (uvicorn, tqdm and tracebacks included) from 0.10.1, the tag
inside the log format from 0.31 (so uvicorn and tqdm output is untagged
again). Multi-line messages repeat the prefix after ``\\r\\n`` like vLLM's
``NewLineFormatter``. The ready line is uvicorn's ``Application startup
complete.`` (``Uvicorn running on`` only up to 0.7.0). Stats lines come every
``VLLM_LOG_STATS_INTERVAL`` seconds (5 s in V0) and only while the engine is
not idle; a SpecDecoding line follows each one when drafts were made.

Wedged (``wedged``, ``nccl-timeout``): one last stats line with 0.0 throughputs and the
last Running/Waiting counts, then nothing at info level; ``engine-dead`` (V1): the
engine core dies and the API server answers on (:mod:`tui.sim.vllm.stalls`).
"""

from __future__ import annotations

from tui.sim.engine import EngineKind
from tui.sim.version import V, Version
from tui.sim.vllm import formats
from tui.sim.vllm.engine import VLLM
from tui.sim.vllm.releases import ALIASES, DEFAULT_PORT, DEFAULT_VERSION, SUPPORTED


def _unsupported(v: Version, scenario: str) -> str | None:
    """Scenarios whose lines are known only for some releases."""
    if scenario == "killed-at-load":
        return "its lines are simulated for sglang only"
    if scenario == "engine-dead" and v < V("0.8.0"):
        return "the engine core process that dies under a living API server is V1's (0.8 on)"
    if scenario == "killed-after" and not (V("0.11.0") <= v < V("0.16.0") or v >= V("0.33.0")):
        return "its lines are known for 0.11 to 0.15 ('Engine core proc') and 0.33 ('Worker proc')"
    return None


KIND = EngineKind(
    name="vllm",
    default_version=DEFAULT_VERSION,
    default_port=DEFAULT_PORT,
    aliases=ALIASES,
    tp_flags=("tensor_parallel_size",),
    releases=SUPPORTED,
    factory=VLLM,
    unsupported=_unsupported,
    log_formats=formats.FORMATS,
    log_format_unsupported=formats.unsupported,
)
