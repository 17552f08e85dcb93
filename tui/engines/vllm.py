"""vLLM (``vllm serve``, ``python -m vllm.entrypoints.openai.api_server``): everything
babysit knows of it.

Lines: ``[(APIServer pid=N) ]LEVEL MM-DD HH:MM:SS[.mmm] [file.py:N] message`` (no
year); stats lines ``Engine 000: Avg prompt throughput: …`` (``N Engines Aggregated:``,
V0 without prefix), ``SpecDecoding metrics``, V0 ``Speculative metrics``, ``Prefix cache
hit rate: GPU: …`` and ``DiffusionDecoding metrics``; the args line ``non-default args:
{…}`` (>= 0.9) or ``args: Namespace(…)`` (<= 0.8); ready when uvicorn says ``Application
startup complete.``; ``/metrics`` named ``vllm:*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from tui.core.metrics.fields import split_fields
from tui.core.metrics.model import Metric, MetricSample, canonical
from tui.core.metrics.stamps import infer_year
from tui.engines._literals import read_literals
from tui.engines.spec import ArgsHead, EngineSpec, Phase, Prometheus, Stamp, StampKind

NAME = "vllm"

_PREFIX = re.compile(
    r"(?:\([^()]*? pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](\d{3}))? \[?[^\]\s]*\] "
)
_AGGREGATED = re.compile(r"(\d+) Engines Aggregated: ")

_STATS = "vllm-stats"
_SPEC = "vllm-spec"
_PREFIX_CACHE = "vllm-prefix-cache"
_DIFFUSION = "vllm-diffusion"

#: key in a line -> canonical metric; for each metric the line's first such key wins
_STATS_CANON: dict[str, Metric] = {
    "Avg generation throughput": Metric.GEN_THROUGHPUT,
    "Avg prompt throughput": Metric.PREFILL_THROUGHPUT,
    "Running": Metric.RUNNING,
    "Waiting": Metric.QUEUED,
    "Pending": Metric.QUEUED,
    "GPU KV cache usage": Metric.TOKEN_USAGE,
    "Prefix cache hit rate": Metric.PREFIX_HIT_RATE,
}
_SPEC_CANON: dict[str, Metric] = {
    "Mean acceptance length": Metric.ACCEPT_LEN,
    "Avg Draft acceptance rate": Metric.ACCEPT_RATE,
    "Draft acceptance rate": Metric.ACCEPT_RATE,
}
_PREFIX_CANON: dict[str, Metric] = {"GPU": Metric.PREFIX_HIT_RATE}
_DIFFUSION_CANON: dict[str, Metric] = {
    "Committed token throughput": Metric.GEN_THROUGHPUT,
}
_HEADS: tuple[tuple[str, str, Mapping[str, Metric]], ...] = (
    ("SpecDecoding metrics: ", _SPEC, _SPEC_CANON),
    ("Speculative metrics: ", _SPEC, _SPEC_CANON),
    ("DiffusionDecoding metrics: ", _DIFFUSION, _DIFFUSION_CANON),
)
_PREFIX_CACHE_HEAD = "Prefix cache hit rate: GPU: "
#: >= 0.30 names the device: "XPU KV cache usage", "CPU KV cache usage"
_DEVICE_USAGE = " KV cache usage"
_NONE: tuple[MetricSample, ...] = ()
#: Stamps remembered per reader (one per second of log, at most this many).
_STAMP_CACHE = 256


def series_label(source: str) -> str:
    """``engine 1`` for an engine other than 0; one engine (``Engine 000``) or the DP
    aggregate is the whole service."""
    if source.startswith("Engine "):
        number = source[7:]
        return "" if number.strip("0") == "" else f"engine {int(number)}"
    return ""


class Reader:
    """vLLM's metric lines; see :class:`tui.engines.spec.LineReader`. ``reference`` gives
    the stamps their year (else ``clock``, for a live log)."""

    def __init__(
        self,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
        started: datetime | None = None,
    ) -> None:
        self._reference = reference
        self._clock = clock
        self._times: dict[str, datetime] = {}

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        if not ("throughput: " in text or "metrics: " in text or "rate: GPU" in text):
            return _NONE
        try:
            sample = self._line(text, offset, run)
        except (ValueError, OverflowError, IndexError):
            return _NONE
        return _NONE if sample is None else (sample,)

    def line_time(self, text: str) -> datetime | None:
        try:
            match = _PREFIX.search(text)
            return None if match is None else self._time(match)
        except (ValueError, OverflowError):
            return None

    def _line(self, text: str, offset: int | None, run: int) -> MetricSample | None:
        match = _PREFIX.search(text)
        if match is None:
            return None
        message = text[match.end() :]
        source = ""
        if message.startswith("Engine "):
            cut = message.find(": ")
            if cut < 0:
                return None
            source, message = message[:cut], message[cut + 2 :]
        elif message[:1].isdigit():
            aggregated = _AGGREGATED.match(message)
            if aggregated is None:
                return None
            source, message = aggregated.group()[:-2], message[aggregated.end() :]
        if message.startswith("Avg ") and "throughput: " in message:
            kind, table, body = _STATS, _STATS_CANON, message
        elif message.startswith(_PREFIX_CACHE_HEAD):
            kind, table, body = _PREFIX_CACHE, _PREFIX_CANON, message[23:]
        else:
            for head, head_kind, head_table in _HEADS:
                if message.startswith(head):
                    kind, table, body = head_kind, head_table, message[len(head) :]
                    break
            else:
                return None
        body = body.rstrip(" ,.\r")
        if ": " not in body:
            return None
        values = canonical(body, table)
        if kind == _STATS and Metric.TOKEN_USAGE not in values:
            usage = [key for key in split_fields(body) if key.endswith(_DEVICE_USAGE)]
            if usage:
                values.update(canonical(body, {usage[0]: Metric.TOKEN_USAGE}))
        return MetricSample(
            ts=self._time(match),
            kind=kind,
            engine=NAME,
            body=body,
            values=values,
            offset=offset,
            source=source,
            run=run,
        )

    def _time(self, match: re.Match[str]) -> datetime:
        stamp, millis = match.group(1, 2)
        ts = self._times.get(stamp)
        if ts is None:
            if len(self._times) > _STAMP_CACHE:
                self._times.clear()
            reference = self._reference if self._reference is not None else self._clock()
            clock = (int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14]))
            ts = infer_year(int(stamp[0:2]), int(stamp[3:5]), clock, reference)
            if self._reference is not None:
                self._times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)


def read_reported(line: str, head: ArgsHead) -> dict[str, object] | None:
    """The values of a ``non-default args: {…}`` or ``args: Namespace(…)`` line."""
    return read_literals(line, head.text)


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
            r"(?:\([^)]*pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
            r"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)",
            StampKind.YEARLESS,
        ),
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
    phases=(
        Phase(
            "loading weights",
            (
                "Starting to load model",
                "Loading safetensors checkpoint shards",
                "Loading weights took",
            ),
        ),
        Phase("allocating KV cache", ("Available KV cache memory", "GPU KV cache size")),
        Phase("capturing CUDA graphs", ("Capturing CUDA graph",)),
        Phase("warming up", ("Graph capturing finished", "Uvicorn running on")),
        Phase("starting the API server", ("Starting vLLM",)),
    ),
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
