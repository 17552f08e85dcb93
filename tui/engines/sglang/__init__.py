"""SGLang (``python -m sglang.launch_server``): everything babysit knows of it.

Lines: ``[YYYY-MM-DD HH:MM:SS(.mmm)( DP0 TP0 ...)] message`` and the other prefixes
:mod:`~tui.engines.sglang.lines` reads (time-only, year-less, another logger's);
metric lines ``Decode batch``/``Prefill batch`` (heads ``Decode batch.``, ``Decode
batch [N],``, ``Decode batch,``; trailing comma or not); the args line
``server_args=ServerArgs(...)`` (<= 0.5.18) or ``server_args={...}`` (>= 0.5.20); ready
when ``The server is fired up and ready to roll!``; ``/metrics`` (``--enable-metrics``)
named ``sglang:*``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.core.metrics.model import Metric
from tui.engines._json_lines import STAMP as JSON_STAMP
from tui.engines._literals import read_reported
from tui.engines._openai import CANARY
from tui.engines._torch import NCCL_HANGS
from tui.engines._values import is_set, whole
from tui.engines.sglang.lines import NAME, Reader
from tui.engines.sglang.phases import PHASES
from tui.engines.spec import ArgsHead, EngineSpec, Prometheus, Stamp, StampKind

_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"


def series_label(source: str) -> str:
    """``DP1`` for a DP rank; only rank 0 of TP/PP/EP prints stats, so those add nothing."""
    for tag in source.split():
        if tag.startswith("DP"):
            return tag
    return ""


def draft_tokens(values: Mapping[str, object]) -> int | None:
    """The draft depth of one verify step: ``speculative_num_steps`` (an accept length
    is at most steps + 1, the bonus token included), else ``speculative_num_draft_tokens``
    less the bonus token (a chain's draft tokens are steps + 1); None without a
    speculative algorithm (``server_args`` lists the steps even when it is off)."""
    if not is_set(values.get("speculative_algorithm")):
        return None
    steps = whole(values.get("speculative_num_steps"))
    if steps is not None and steps > 0:
        return steps
    drafts = whole(values.get("speculative_num_draft_tokens"))
    return drafts - 1 if drafts is not None and drafts > 1 else None


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
    hangs=(
        # the scheduler's watchdog, once a forward pass takes longer than
        # --watchdog-timeout: "Watchdog timeout (self.watchdog_timeout=300)" (0.4.6);
        # "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)" (0.5.2x)
        "Watchdog timeout (",
        " watchdog timeout (self.watchdog_timeout=",
        *NCCL_HANGS,
    ),
    # "Decode batch" lines while requests decode
    prints_progress=True,
    # the last decode line keeps "#running-req: 1" after the last request ends
    counts_when_idle=False,
    model_keys=("model_path",),
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
    stamps=(
        Stamp(r"\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"),
        # another logger's format: "... LEVEL PID [file.py:N] " or "...,mmm [LEVEL] name: "
        Stamp(
            rf"(\d{{4}})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[.,]\d{{3}})? "
            rf"(?:{_LEVEL} \d+ \[|\[{_LEVEL}\] )"
        ),
        # 0.2.x-0.3.x: [HH:MM:SS TP0]
        Stamp(r"\[(\d\d):(\d\d):(\d\d)(?: [A-Z_]+\d+)*\] ", StampKind.TIME_ONLY),
        # python-json-logger (SGLANG_LOGGING_CONFIG_PATH): {"asctime": "...,mmm", ...}
        Stamp(JSON_STAMP),
        # the diffusion logger: [MM-DD HH:MM:SS]
        Stamp(r"\[(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\] ", StampKind.YEARLESS),
    ),
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
    # setproctitle of the scheduler (one per TP rank), detokenizer and DP controller
    workers=("sglang::scheduler", "sglang::detokenizer", "sglang::data_parallel"),
    phases=PHASES,
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
