"""llama.cpp's ``llama-server`` (``engine: llamacpp``), and llama-cpp-python's server.

A line of llama-server is, every part but the message optional::

    [ 8080] 132.15.702.022 I slot print_timing: id  0 | task 9161 | prompt eval time = ...
    ^router ^elapsed stamp ^level ^slot prefix (or "srv  <func>: ")  ^message

The router of a multi-model server puts ``[port] `` (``%5d``) in front of a child's
line. ``--log-prefix --log-timestamps`` stamp ``M.SS.mmm.uuu L ``: minutes, seconds,
milliseconds and microseconds since the process started (the minutes unbounded), so
a line is placed at the run's start plus that; without them a line carries no time.
``--log-colors`` wraps stamp and level in ANSI colour, which is stripped.

The metric lines, from ``tools/server`` (earlier ``examples/server``):

* per-request timings (``print_timings``): 2024 ``INFO [  print_timings] prompt eval
  time = ... | tid=... timestamp=... id_slot=0 id_task=3 ...`` (``generation eval time
  ... runs`` for decoding); mid-2025 a ``slot print_timing: id  0 | task N | `` header
  whose ``prompt eval time``, ``eval time``, ``total time`` and ``draft acceptance
  rate`` come on the next, unprefixed lines; 2026 one prefixed line each (plus
  ``graphs reused``); llama-cpp-python's ``llama_perf_context_print:`` lines;
* progress while decoding: ``n_decoded = N, tg = X t/s[, tg_3s = Y t/s]`` (2025) and
  ``n_gen = N, tg = X t/s, tg_3s = Y t/s`` (2026);
* progress while prefilling: ``prompt processing, n_tokens = N, progress = p, t = s s /
  X tokens per second``;
* speculative acceptance: ``draft acceptance rate = R (A accepted / G generated)``
  (2025), ``draft acceptance = R (...), mean len = L``, and ``..., mean acceptance
  length = L, acceptance rate per position = (a, b, ...)`` (2026-06 on).

The server prints no args dump: its launch diff reads argv alone. Queue, running
requests and throughput counters are on ``/metrics`` with ``--metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from tui.core.metrics.model import Metric
from tui.engines._openai import CANARY as OPENAI_CANARY
from tui.engines._values import whole
from tui.engines.llamacpp.lines import (
    HEADER_SPAN,
    KIND_PROGRESS,
    KIND_PROMPT,
    KIND_SPEC,
    KIND_TIMING,
    NAME,
    LlamaCppReader,
)
from tui.engines.llamacpp.phases import PHASES
from tui.engines.spec import EngineSpec, Prometheus, Stamp, StampKind

__all__ = [
    "HEADER_SPAN",
    "KIND_PROGRESS",
    "KIND_PROMPT",
    "KIND_SPEC",
    "KIND_TIMING",
    "SPEC",
    "LlamaCppReader",
]


def _series_label(source: str) -> str:
    """A router's child (``port 8080``) is a series of its own; one server is one series."""
    return source


#: every spelling in ``common/arg.cpp`` of an option with more than one, as argparse-style
#: destinations, after the one kept (the long name). The speculative options of 2026
#: (``--spec-draft-*``) fold onto the ``--draft-*``/``*-draft`` names they replace.
_ALIAS_TABLE = """
model: m
model_url: mu
hf_repo: hf hfr
hf_file: hff
ctx_size: c
n_predict: n predict
batch_size: b
ubatch_size: ub
threads: t
threads_batch: tb
n_gpu_layers: ngl gpu_layers
split_mode: sm
tensor_split: ts
main_gpu: mg
device: dev
flash_attn: fa
parallel: np
cont_batching: cb
alias: a
cache_type_k: ctk
cache_type_v: ctv
override_tensor: ot
cpu_moe: cmoe
n_cpu_moe: ncmoe
kv_unified: kvu
defrag_thold: dt
timeout: to
slot_prompt_similarity: sps
seed: s
mmproj: mm
mmproj_url: mmu
embeddings: embedding
reranking: rerank
verbosity: lv log_verbosity
verbose: v log_verbose
escape: e
special: sp
json_schema: j
json_schema_file: jf
model_draft: md spec_draft_model
hf_repo_draft: hfd hfrd
draft_max: draft draft_n spec_draft_n_max
draft_min: draft_n_min spec_draft_n_min
draft_p_min: spec_draft_p_min
n_gpu_layers_draft: ngld gpu_layers_draft spec_draft_ngl
ctx_size_draft: cd
device_draft: devd spec_draft_device
threads_draft: td spec_draft_threads
threads_batch_draft: tbd spec_draft_threads_batch
cache_type_k_draft: ctkd spec_draft_type_k
cache_type_v_draft: ctvd spec_draft_type_v
override_tensor_draft: otd spec_draft_override_tensor
cpu_moe_draft: cmoed
"""
_ALIASES = {
    spelling: destination
    for destination, _, spellings in (line.partition(": ") for line in _ALIAS_TABLE.split("\n"))
    for spelling in spellings.split()
}

#: options that never take a value (``-fa``/``--flash-attn`` and ``--log-colors`` take
#: ``on|off|auto`` in current builds, so they are not here)
_SWITCH_WORDS = """
    --metrics --slots --props --jinja --embedding --embeddings --reranking --rerank
    --log-prefix --log-timestamps --log-disable --mlock --mmap --check-tensors --swa-full
    --context-shift --kv-unified -kvu --cpu-moe -cmoe --cpu-moe-draft -cmoed
    --cont-batching -cb -nocb -nkvo --verbose --log-verbose -v --escape -e --special -sp
    --verbose-prompt --offline --warmup --webui --list-devices --help -h --usage --version
"""
_SWITCHES = frozenset(_SWITCH_WORDS.split())

#: "132.15.702.022 I ": minutes (unbounded), seconds, ms, us since the process started,
#: in ``--log-colors``' blue or not
_ELAPSED = r"(?:\x1b\[[\d;]*m)?(\d+)\.(\d\d)\.(\d{3})\.(\d{3})(?:\x1b\[[\d;]*m)? "


def draft_tokens(values: Mapping[str, object]) -> int | None:
    """``--draft-max`` (and its spellings ``--draft``, ``--draft-n``, ``--spec-draft-n-max``):
    the most tokens one draft proposes; None when the command line does not say."""
    found = whole(values.get("draft_max"))
    return found if found is not None and found > 0 else None


#: The OpenAI completions canary with the sampling keys llama-server reads under the
#: generation_config.json names (it spells the repetition penalty ``repeat_penalty``).
CANARY = replace(OPENAI_CANARY, sampling_keys=("temperature", "top_p", "top_k", "min_p"))

SPEC = EngineSpec(
    name=NAME,
    title="llama.cpp",
    # llama-server (and llama-server-cuda, .exe), llama-cpp-python's ``-m llama_cpp.server``
    programs=("llama-server", "llama_cpp.server"),
    ready=(
        # mid-2025: "main: server is listening on http://H:P - starting the main loop"
        "server is listening on",
        # 2026: "srv          main: listening on http://H:P"
        "main: listening on",
        # 2024: "INFO [                    main] model loaded | tid=..." (its "HTTP server
        # listening" comes before the model loads)
        "main] model loaded",
        # llama-cpp-python: uvicorn starts once the model is loaded
        "Uvicorn running on",
    ),
    run_starts=(
        # 2025 on: "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16"
        "system info: n_threads = ",
        # 2024: "INFO [                    main] build info | tid=... build=3000 commit=..."
        "] build info |",
    ),
    deaths=(
        "GGML_ASSERT(",
        # ggml-cuda: "CUDA error: an illegal memory access was encountered", then an abort
        "CUDA error: ",
        "terminate called after throwing an instance of",
        "Segmentation fault",
        "Aborted (core dumped)",
    ),
    # the "n_gen = N, tg = X t/s" lines while a slot decodes
    prints_progress=True,
    # the log holds no running or queued figure: those are /metrics gauges, 0 when idle
    counts_when_idle=True,
    # -m FILE.gguf: the canary looks for generation_config.json beside the file
    model_keys=("model",),
    draft_tokens=draft_tokens,
    canary=CANARY,
    startup_failures=(
        # "llama_model_load: error loading model: ...", then "failed to load model"
        "error loading model",
        "failed to load model",
        "exiting due to model loading error",
        # "ggml_backend_cuda_buffer_type_alloc_buffer: allocating N MiB on device 0:
        # cudaMalloc failed: out of memory", then "failed to allocate CUDA0 buffer"
        "cudaMalloc failed: out of memory",
        "failed to allocate",
        "failed to create context",
        "failed to initialize the context",
        # "couldn't bind HTTP server socket, hostname: H, port: P" (and the 2024 form)
        "couldn't bind",
    ),
    telling=(
        "cudaMalloc failed: out of memory",
        "failed to allocate",
        "error loading model",
        "failed to load model",
        "couldn't bind",
        "GGML_ASSERT(",
        "CUDA error: ",
        "terminate called after throwing an instance of",
        "Segmentation fault",
    ),
    stamps=(Stamp(_ELAPSED, StampKind.ELAPSED),),
    aliases=_ALIASES,
    switches=_SWITCHES,
    spec_keys=(
        "model_draft",
        "hf_repo_draft",
        "spec_type",
        "draft_max",
        "draft_min",
        "draft_p_min",
        "n_gpu_layers_draft",
        "ctx_size_draft",
        "device_draft",
        "spec_ngram_mod_n_match",
        "spec_ngram_mod_n_min",
        "spec_ngram_mod_n_max",
    ),
    phases=PHASES,
    prometheus=Prometheus(
        gauges={
            "llamacpp:requests_processing": (Metric.RUNNING, True),
            "llamacpp:requests_deferred": (Metric.QUEUED, True),
            # 2024 builds
            "llamacpp:kv_cache_usage_ratio": (Metric.TOKEN_USAGE, False),
            "llamacpp:kv_cache_tokens": (Metric.KV_TOKENS, True),
        },
        rates={
            "llamacpp:tokens_predicted_total": Metric.GEN_THROUGHPUT,
            "llamacpp:prompt_tokens_total": Metric.PREFILL_THROUGHPUT,
        },
        acceptance=(
            "llamacpp:spec_decode_num_accepted_tokens_total",
            # verification steps: accept length is 1 + accepted / steps, as the log's mean len
            "llamacpp:spec_decode_num_drafts_total",
            "llamacpp:spec_decode_num_draft_tokens_total",
        ),
        prefix="llamacpp:",
    ),
    reader=LlamaCppReader,
    series_label=_series_label,
)
