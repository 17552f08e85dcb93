"""vLLM (``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``): everything
babysit knows of it.

Lines: ``[(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS[.mmm] [file.py:N] message`` (no
year), the other prefixes and the JSON formatter :mod:`~tui.engines.vllm.lines` reads;
stats lines ``Engine 000: Avg prompt throughput: …`` (``N Engines Aggregated:``,
V0 without prefix), ``SpecDecoding metrics``, V0 ``Speculative metrics``, ``Prefix cache
hit rate: GPU: …`` and ``DiffusionDecoding metrics``; the args line ``non-default args:
{…}`` (>= 0.9) or ``args: Namespace(…)`` (<= 0.8); ready when uvicorn says ``Application
startup complete.``; ``/metrics`` named ``vllm:*``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.core.metrics.model import Metric
from tui.engines._json_lines import STAMP as JSON_STAMP
from tui.engines._literals import read_reported
from tui.engines._openai import CANARY
from tui.engines._torch import NCCL_HANGS
from tui.engines._values import mapping, whole
from tui.engines.spec import ArgsHead, EngineSpec, Prometheus, Stamp, StampKind
from tui.engines.vllm.lines import LEVEL, NAME, TAG, Reader
from tui.engines.vllm.phases import PHASES

#: An ANSI colour escape (0.33's coloured formatter), as the agent reads raw bytes.
_COLOUR = r"(?:\x1b\[[0-9;]*m)*"


def series_label(source: str) -> str:
    """``engine 1`` for an engine other than 0; one engine (``Engine 000``) or the DP
    aggregate is the whole service."""
    if source.startswith("Engine "):
        number = source[7:]
        return "" if number.strip("0") == "" else f"engine {int(number)}"
    return ""


def draft_tokens(values: Mapping[str, object]) -> int | None:
    """``speculative_config``'s ``num_speculative_tokens`` (a dict, or its JSON text on a
    command line), else V0's ``num_speculative_tokens`` flag; None when neither says."""
    config = mapping(values.get("speculative_config"))
    if config is not None:
        found = whole(config.get("num_speculative_tokens"))
        if found is not None and found > 0:
            return found
    found = whole(values.get("num_speculative_tokens"))
    return found if found is not None and found > 0 else None


SPEC = EngineSpec(
    name=NAME,
    title="vLLM",
    programs=("vllm",),
    ready=("Application startup complete.",),
    run_starts=("vLLM API server version ", "vLLM server version "),
    deaths=(
        "EngineCore failed to start",
        "Engine core initialization failed",
        "Engine process failed to start",  # 0.7.x
        "EngineCore encountered a fatal error",
        # Engine core proc NAME died unexpectedly, shutting down client. (0.11-0.15);
        # Worker proc NAME died unexpectedly (exit code: C), shutting down executor. and
        # RuntimeError: Engine core process NAME died unexpectedly. (0.33)
        " died unexpectedly",
        "MQLLMEngine is already dead",  # V0
    ),
    hangs=(
        # the API process, once the engine core is gone and it fails every request:
        # "EngineCore encountered an issue. See stack trace (above) for the root cause."
        # and the EngineDeadError that ends each request's traceback
        "EngineCore encountered an issue",
        "EngineDeadError",
        # the API process's output loop, ended by the dead engine
        "AsyncLLM output_handler failed",
        *NCCL_HANGS,
    ),
    # the stats line every interval while requests run
    prints_progress=True,
    # the stats line says "Running: 0 reqs, Waiting: 0 reqs" once the work ends
    counts_when_idle=True,
    # "vllm serve MODEL" gives its positional as --model; 0.9's args line names it model_tag
    model_keys=("model", "model_tag"),
    draft_tokens=draft_tokens,
    canary=CANARY,
    startup_failures=(
        "Traceback (most recent call last)",
        "RuntimeError",
        "Not enough memory",
        "CUDA out of memory",
    ),
    telling=(
        "Not enough memory",
        "CUDA out of memory",
        "RuntimeError",
        "ValueError",
        "EngineCore failed to start",
        "Engine core initialization failed",
        " died unexpectedly",
    ),
    args_heads=(
        # >= 0.9: non-default args: {'model': ..., ...}
        ArgsHead("non-default args: {", "vllm-non-default-args", complete=False),
        # <= 0.8: args: Namespace(model=..., ...)
        ArgsHead("args: Namespace(", "vllm-args-namespace"),
    ),
    stamps=(
        Stamp(
            rf"(?:{_COLOUR}{TAG[:-1]}{_COLOUR} )*(?:\[Stage-\d+\] )?{_COLOUR}{LEVEL}{_COLOUR} "
            rf"{_COLOUR}(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)",
            StampKind.YEARLESS,
        ),
        # the JSON formatter (>= 0.33): {"asctime": "YYYY-MM-DD HH:MM:SS,mmm", ...}
        Stamp(JSON_STAMP),
    ),
    pid_tag="pid=%d)",
    aliases={
        "tp": "tensor_parallel_size",
        "pp": "pipeline_parallel_size",
        "dp": "data_parallel_size",
        "q": "quantization",
        "O": "compilation_config",
        "model_tag": "model",
    },
    switches=frozenset(
        {"--trust-remote-code", "--enforce-eager", "--disable-log-stats", "--skip-tokenizer-init"}
    ),
    spec_keys=("speculative_config", "speculative_model", "num_speculative_tokens"),
    # set_process_title(): EngineCore and the multiproc executor's Worker_TP<rank>
    workers=("VLLM::EngineCore", "VLLM::Worker", "VllmWorker"),
    phases=PHASES,
    prometheus=Prometheus(
        gauges={
            "vllm:num_requests_running": (Metric.RUNNING, True),
            "vllm:num_requests_waiting": (Metric.QUEUED, True),
            "vllm:kv_cache_usage_perc": (Metric.TOKEN_USAGE, False),
            "vllm:gpu_cache_usage_perc": (Metric.TOKEN_USAGE, False),
        },
        rates={
            "vllm:generation_tokens_total": Metric.GEN_THROUGHPUT,
            "vllm:prompt_tokens_total": Metric.PREFILL_THROUGHPUT,
        },
        acceptance=(
            "vllm:spec_decode_num_accepted_tokens_total",
            "vllm:spec_decode_num_drafts_total",
            "vllm:spec_decode_num_draft_tokens_total",
        ),
        prefix="vllm:",
        only_labels=(("tp_rank", "0"),),
    ),
    reader=Reader,
    read_reported=read_reported,
    series_label=series_label,
)
