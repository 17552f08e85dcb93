"""SGLang's startup phases, in the order a run goes through them, and the lines that
say each began (the scheduler's model runner, then the HTTP server and its warmup).

0.3.6 to 0.5.23::

    [2025-11-30 11:17:20 TP0] Load weight begin. avail mem=78.50 GB
    Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.02s/it]
    [2025-11-30 11:17:50 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, ...
    [2025-11-30 11:17:51 TP0] KV Cache is allocated. #tokens: 2261377, K size: 17.25 GB, ...
    [2025-11-30 11:17:55 TP0] Capture cuda graph begin. This can take up to several minutes. ...
    Capturing batches (bs=4 avail_mem=51.60 GB):  33%|███▎      | 1/3 [00:00<00:00,  4.90it/s]
    [2025-11-30 11:18:01 TP0] Capture cuda graph end. Time elapsed: 5.92 s. mem usage=1.44 GB. ...
    [2025-11-30 11:18:05 TP0] max_total_num_tokens=2261377, chunked_prefill_size=16384, ...
    [2025-11-30 11:18:05] INFO:     Started server process [177326]
    [2025-11-30 11:18:05] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)
    [2025-11-30 11:18:07] The server is fired up and ready to roll!

0.5.23 spells the capture ``Capture {name} CUDA graph begin.``; newer builds capture
piecewise graphs after the decode ones (``Compiling num tokens (num_tokens=N)``,
``Capturing num tokens (num_tokens=N avail_mem=M GB)``), all before
``max_total_num_tokens=``, so the capture phase holds them. After uvicorn runs, the
warmup requests (``GET /model_info``, ``POST /generate``) come before the ready line.
"""

from __future__ import annotations

from tui.engines.spec import Phase

#: tqdm's ``desc: NN% Completed | done/total [`` of the weight loaders' bars
SHARDS = r"Loading (?:safetensors|pt) checkpoint shards: *\d+% Completed \| *(\d+)/(\d+) \["
#: tqdm's default ``desc: NN%|bar| done/total [`` of the capture bars (decode batches,
#: piecewise token counts)
GRAPHS = r"Capturing (?:batches|num tokens) \([^)\r\n]*\): *\d+%\|[^|\r\n]*\| *(\d+)/(\d+) \["

PHASES = (
    Phase(
        "loading weights",
        (
            "Load weight begin",
            "Loading safetensors checkpoint shards",
            "Loading pt checkpoint shards",
        ),
        progress=SHARDS,
    ),
    Phase("allocating KV cache", ("Load weight end", "KV Cache is allocated")),
    Phase(
        "capturing CUDA graphs",
        ("Capture cuda graph begin", "Capture cpu graph begin", " CUDA graph begin"),
        progress=GRAPHS,
    ),
    Phase("starting the API server", ("max_total_num_tokens=", "Started server process")),
    Phase("warming up", ("Uvicorn running on",)),
)
