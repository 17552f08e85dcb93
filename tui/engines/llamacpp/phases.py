"""llama-server's startup phases, in the order a run goes through them, and the lines
that say each began (``tools/server/server.cpp``, ``src/llama-model-loader.cpp``,
``src/llama-model.cpp``, ``src/llama-context.cpp``, ``common/common.cpp``).

Mid-2025 and 2026 builds (``--log-timestamps`` puts ``M.SS.mmm.uuu I `` in front)::

    srv    load_model: loading model '/models/qwen3-8b-q4_k_m.gguf'
    llama_model_loader: loaded meta data with 32 key-value pairs and 399 tensors from ...
    load_tensors: loading model tensors, this can take a while... (mmap = true)
    load_tensors: offloaded 37/37 layers to GPU
    llama_context: constructing llama_context
    llama_kv_cache:      CUDA0 KV buffer size =  4608.00 MiB
    common_init_from_params: warming up the model with an empty run - please wait ...
    main: server is listening on http://127.0.0.1:8080 - starting the main loop

2024 builds name the loader ``llm_load_tensors:`` and the context
``llama_new_context_with_model:``. The tensors load with a row of dots, no count: no
phase has progress figures (``offloaded N/M layers`` is a plan, printed before the load).
"""

from __future__ import annotations

from tui.engines.spec import Phase

PHASES = (
    Phase("loading model", ("load_model: loading model", "llama_model_loader: loaded meta data")),
    # "load_tensors: loading model tensors, ..." (2024: "llm_load_tensors: ...")
    Phase("loading weights", ("load_tensors: ",)),
    Phase(
        "allocating KV cache",
        ("llama_kv_cache", "llama_context: constructing", "llama_new_context_with_model: "),
    ),
    # "common_init_from_params: warming up the model with an empty run - please wait ..."
    Phase("warming up", ("warming up the model",)),
)
