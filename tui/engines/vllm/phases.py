"""vLLM's startup phases, in the order a run goes through them, and the lines that say
each began (``vllm/v1/worker/gpu_model_runner.py``, ``model_executor/model_loader``,
``compilation/backends.py``, ``v1/core/kv_cache_utils.py``, the API server).

0.6.6 to 0.33 (V0 and V1)::

    INFO 05-09 22:20:21 [gpu_model_runner.py:1329] Starting to load model Qwen/Qwen3-8B...
    Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:09<00:09,  4.61s/it]
    INFO 05-09 22:20:53 [gpu_model_runner.py:1347] Model loading took 15.2389 GiB and 29.9 seconds
    INFO 05-09 22:20:53 [backends.py:420] Using cache directory: ... for vLLM's torch.compile
    INFO 05-09 22:21:40 [gpu_worker.py:227] Available KV cache memory: 52.08 GiB
    INFO 05-09 22:21:40 [kv_cache_utils.py:634] GPU KV cache size: 379,200 tokens
    Capturing CUDA graph shapes:  45%|████▍     | 30/67 [00:09<00:11,  3.30it/s]
    INFO 05-09 22:22:01 [gpu_model_runner.py:1686] Graph capturing finished in 20 secs, ...
    INFO 05-09 22:22:02 [api_server.py:1090] Starting vLLM API server on http://0.0.0.0:8000

The shard and CUDA-graph bars are tqdm's (``\\r`` between updates, untagged); V0 logs
``Capturing cudagraphs for decoding.`` and ``# GPU blocks: N`` (``# cuda blocks``
in 0.7 to 0.9); >= 0.10.2 names the capture ``Capturing CUDA graphs (mixed
prefill-decode, PIECEWISE)`` then ``(decode, FULL)``; >= 0.30 prints ``XPU KV cache
size``; the server line is ``Starting vLLM API server N on`` (0.9 to 0.15) and
``Starting vLLM server on`` (>= 0.20). A run with ``--enforce-eager`` compiles and
captures nothing: those phases are not in its log.
"""

from __future__ import annotations

from tui.engines.spec import Phase

#: tqdm's ``desc: NN% Completed | done/total [`` of the weight loaders' bars
SHARDS = r"Loading (?:safetensors|pt) checkpoint shards: *\d+% Completed \| *(\d+)/(\d+) \["
#: tqdm's default ``desc: NN%|bar| done/total [`` of the CUDA-graph capture bars
GRAPHS = r"Capturing CUDA graph[^:\r\n]*: *\d+%\|[^|\r\n]*\| *(\d+)/(\d+) \["

PHASES = (
    Phase(
        "loading weights",
        (
            "Starting to load model",
            "Loading safetensors checkpoint shards",
            "Loading pt checkpoint shards",
            "Loading weights took",
        ),
        progress=SHARDS,
    ),
    Phase("compiling the model", ("for vLLM's torch.compile", "Dynamo bytecode transform time")),
    Phase(
        "allocating KV cache",
        ("Available KV cache memory", " KV cache size: ", "# GPU blocks: ", "# cuda blocks: "),
    ),
    Phase(
        "capturing CUDA graphs",
        (
            "Capturing CUDA graph",
            "Capturing cudagraphs for decoding",
            "Capturing the model for CUDA graphs",
        ),
        progress=GRAPHS,
    ),
    Phase("warming up", ("Graph capturing finished",)),
    Phase("starting the API server", ("Starting vLLM API server", "Starting vLLM server on")),
)
