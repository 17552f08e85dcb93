"""SGLang (``python -m sglang.launch_server``): everything babysit knows of it.

Lines: ``[YYYY-MM-DD HH:MM:SS(.mmm)( DP0 TP0 ...)] message``; metric lines
``Decode batch``/``Prefill batch`` (heads ``Decode batch.``, ``Decode batch [N],``,
``Decode batch,``; trailing comma or not); the args line ``server_args=ServerArgs(...)``
(<= 0.5.18) or ``server_args={...}`` (>= 0.5.20); ready when ``The server is fired up
and ready to roll!``; ``/metrics`` (``--enable-metrics``) named ``sglang:*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

from tui.core.metrics.model import Metric, MetricSample, canonical
from tui.engines._literals import read_literals
from tui.engines.spec import ArgsHead, EngineSpec, Phase, Prometheus, Stamp

NAME = "sglang"

_BATCH = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] "
    r"(Decode|Prefill) batch(?: \[(\d+)\])?[.,] ?"
)
#: The line prefix: ``[2026-05-09 09:22:05.123 DP0 TP0] ``.
PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] ")

#: key in a line -> canonical metric; for each metric the line's first such key wins
_CANON: dict[str, Metric] = {
    "gen throughput (token/s)": Metric.GEN_THROUGHPUT,
    "input throughput (token/s)": Metric.PREFILL_THROUGHPUT,
    "accept len": Metric.ACCEPT_LEN,
    "accept rate": Metric.ACCEPT_RATE,
    "#running-req": Metric.RUNNING,
    "#queue-req": Metric.QUEUED,
    "token usage": Metric.TOKEN_USAGE,
    "full token usage": Metric.TOKEN_USAGE,
    "gpu token usage": Metric.TOKEN_USAGE,
    "#token": Metric.KV_TOKENS,
    "#full token": Metric.KV_TOKENS,
    "#gpu token": Metric.KV_TOKENS,
    "#gpu-token": Metric.KV_TOKENS,
    "cache hit rate": Metric.PREFIX_HIT_RATE,
}
_DECODE = "sglang-decode"
_PREFILL = "sglang-prefill"
_NONE: tuple[MetricSample, ...] = ()
#: Stamps remembered per reader (one per second of log, at most this many).
_STAMP_CACHE = 256


def series_label(source: str) -> str:
    """``DP1`` for a DP rank; only rank 0 of TP/PP/EP prints stats, so those add nothing."""
    for tag in source.split():
        if tag.startswith("DP"):
            return tag
    return ""


class Reader:
    """SGLang's metric lines; see :class:`tui.engines.spec.LineReader`."""

    def __init__(
        self,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
        started: datetime | None = None,
    ) -> None:
        self._times: dict[str, datetime] = {}

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        if "batch" not in text:
            return _NONE
        try:
            match = _BATCH.search(text)
            if match is None:
                return _NONE
            stamp, millis, ranks, head, forward = match.groups()
            ts = self._time(stamp, millis)
        except (ValueError, OverflowError, IndexError):
            return _NONE
        body = text[match.end() :].rstrip(" ,\r")
        if forward is not None:
            body = f"forward iter: {forward}, {body}"
        source = ranks[1:]
        return (
            MetricSample(
                ts=ts,
                kind=_DECODE if head == "Decode" else _PREFILL,
                engine=NAME,
                body=body,
                values=canonical(body, _CANON),
                offset=offset,
                source=source,
                run=run,
            ),
        )

    def line_time(self, text: str) -> datetime | None:
        try:
            match = PREFIX.match(text) if text[:1] == "[" else PREFIX.search(text)
            return None if match is None else self._time(match.group(1), match.group(2))
        except (ValueError, OverflowError):
            return None

    def _time(self, stamp: str, millis: str | None) -> datetime:
        ts = self._times.get(stamp)
        if ts is None:
            if len(self._times) > _STAMP_CACHE:
                self._times.clear()
            ts = datetime(
                int(stamp[0:4]),
                int(stamp[5:7]),
                int(stamp[8:10]),
                int(stamp[11:13]),
                int(stamp[14:16]),
                int(stamp[17:19]),
            )
            self._times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)


def read_reported(line: str, head: ArgsHead) -> dict[str, object] | None:
    """The values of a ``server_args=`` line (the dataclass repr or the dict)."""
    return read_literals(line, head.text)


SPEC = EngineSpec(
    name=NAME,
    title="SGLang",
    programs=("sglang",),
    ready=("The server is fired up and ready to roll!",),
    deaths=(
        # Scheduler / DetokenizerManager / TokenizerManager ... hit an exception: Traceback
        " hit an exception: ",
        # the main process's SIGQUIT handler (0.4.3 printed "proces")
        "Received sigquit from a child proces",
        "SIGQUIT received",
        # startup: Rank N scheduler is dead. Please check if there are relevant logs.
        " scheduler is dead",
        # startup, 0.5.23: Rank N scheduler died during initialization (exit code: ...)
        " scheduler died during initialization",
        # the watchdog: Subprocess NAME (pid=N) crashed with exit code C. Triggering SIGQUIT
        " crashed with exit code ",
        # 0.4.6's SIGCHLD handler
        "Child process unexpectedly failed with an exit code",
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
        " scheduler is dead",
        " scheduler died during initialization",
        " crashed with exit code ",
    ),
    args_heads=(
        # >= 0.5.20: server_args={'model_path': ..., ...} (a dict; redacted from 0.5.22)
        ArgsHead("server_args={", "sglang-server-args-dict"),
        # <= 0.5.18: server_args=ServerArgs(model_path=..., ...) (the dataclass repr)
        ArgsHead("server_args=ServerArgs(", "sglang-server-args"),
    ),
    stamps=(Stamp(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"),),
    aliases={
        "tp": "tp_size",
        "tensor_parallel_size": "tp_size",
        "dp": "dp_size",
        "data_parallel_size": "dp_size",
        "ep": "ep_size",
        "expert_parallel_size": "ep_size",
        "pp": "pp_size",
        "pipeline_parallel_size": "pp_size",
        "model": "model_path",
        "speculative_draft_model": "speculative_draft_model_path",
        "speculative_draft": "speculative_draft_model_path",
    },
    switches=frozenset(
        {
            "--trust-remote-code",
            "--is-embedding",
            "--log-requests",
            "--skip-server-warmup",
            "--skip-tokenizer-init",
            "--show-time-cost",
            "--allow-auto-truncate",
        }
    ),
    spec_keys=("speculative_algorithm",),
    # server_args.py turns NEXTN into EAGLE and prints speculative_algorithm='EAGLE'
    algorithm_aliases={"NEXTN": "EAGLE"},
    metrics_flags=("--enable-metrics",),
    phases=(
        Phase("loading weights", ("Load weight begin", "Loading safetensors checkpoint shards")),
        Phase("allocating KV cache", ("KV Cache is allocated",)),
        Phase("capturing CUDA graphs", ("Capture cuda graph begin", " CUDA graph begin")),
        Phase("warming up", ("Capture cuda graph end", "Uvicorn running on")),
    ),
    prometheus=Prometheus(
        gauges={
            "sglang:gen_throughput": (Metric.GEN_THROUGHPUT, True),
            "sglang:num_running_reqs": (Metric.RUNNING, True),
            "sglang:num_queue_reqs": (Metric.QUEUED, True),
            "sglang:token_usage": (Metric.TOKEN_USAGE, False),
            "sglang:num_used_tokens": (Metric.KV_TOKENS, True),
            "sglang:spec_accept_length": (Metric.ACCEPT_LEN, False),
            "sglang:spec_accept_rate": (Metric.ACCEPT_RATE, False),
            "sglang:cache_hit_rate": (Metric.PREFIX_HIT_RATE, False),
        },
        rates={"sglang:prompt_tokens_total": Metric.PREFILL_THROUGHPUT},
        prefix="sglang:",
        only_labels=(("tp_rank", "0"),),
    ),
    reader=Reader,
    read_reported=read_reported,
    series_label=series_label,
)
