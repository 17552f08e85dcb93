"""sim: stand-ins for SGLang, vLLM and TGI servers and ``nvidia-smi``, true to their log formats.

``babysit sim --engine sglang|vllm|tgi ... -- SERVER FLAGS`` runs one simulated
server in the foreground (:mod:`tui.sim.cli`, :mod:`tui.sim.server`): its log on
stdout/stderr line by line, HTTP on 127.0.0.1 (streamed answers chunk by chunk as the
load model makes the tokens, :mod:`tui.sim.stream`), N-1 child processes for
``--tp N`` that die with it (or outlive it holding their GPU memory, ``orphan-workers``,
:mod:`tui.sim.orphan`), scenarios for the failures babysit must recognise,
among them an engine that stops while its process lives on (``wedged``,
``nccl-timeout`` with torch's watchdog lines from :mod:`tui.sim.nccl`, ``engine-dead``).
``babysit sim nvidia-smi ...`` (and the ``tui/sim/nvidia-smi`` shim) answers
nvidia-smi's CSV queries from what running sims registered
(:mod:`tui.sim.nvidia_smi`, :mod:`tui.sim.gpus`).

The simulator shares no code with babysit's parsers: every line is written
from the engines' own format strings (docstrings of :mod:`tui.sim.sglang`,
:mod:`tui.sim.vllm` and :mod:`tui.sim.tgi`), never from a table a parser could also read.

Environment:

``BABYSIT_SIM_GPUS``
    GPU inventory (``8``, ``4xa100``, ``2xh100;1xl40s``, ``NAME:LIMIT_W:MEM_MIB``, JSON).
``BABYSIT_SIM_STATE``
    Registry directory shared by sims and the nvidia-smi stand-in
    (default ``$TMPDIR/babysit-sim-<uid>``); may hold ``gpus.json``.
``BABYSIT_SIM_PYTHON``
    Interpreter the ``nvidia-smi`` shim runs (default: the checkout's .venv, else python3).
``CUDA_VISIBLE_DEVICES``
    GPUs a sim's ranks sit on.
``VLLM_LOG_STATS_INTERVAL``, ``SGLANG_LOG_MS``, ``SGLANG_LOG_FORWARD_ITERS``,
``SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION``, ``LOG_COLORIZE``
    Honoured as the real engines do (see the engine modules).
"""
