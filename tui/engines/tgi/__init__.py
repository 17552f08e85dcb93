"""HuggingFace Text Generation Inference (``engine: tgi``): what babysit knows of it.

``text-generation-launcher`` downloads the weights, starts one
``text-generation-server`` shard per GPU and then the ``text-generation-router``
(the web server), and prints their lines among its own. Its startup, as its
lines say it::

    Args {                      (the arguments, a multi-line Rust dump)
    Starting check and download process for MODEL
    Starting shard rank=0
    Waiting for shard to be ready... rank=0
    Shard ready in 35.5s rank=0
    Starting Webserver
    Warming up model            (router)
    Cuda Graphs are enabled for sizes [...]
    Connected                   (router: it serves)

The log's shapes, its stamps and its one metric line are :mod:`.lines`; the
arguments dump is :mod:`.args`. The log prints no throughput, queue or batch
figure: those are the router's ``tgi_*`` Prometheus metrics.
"""

from __future__ import annotations

from collections.abc import Mapping

from tui.core.metrics.model import Metric
from tui.engines._torch import NCCL_HANGS
from tui.engines._values import whole
from tui.engines.spec import ArgsHead, EngineSpec, Prometheus, Stamp, StampKind
from tui.engines.tgi.args import JSON_FORM, LINE_FORM, TEXT_FORM, read_reported
from tui.engines.tgi.canary import CANARY
from tui.engines.tgi.lines import JSON_STAMP, TEXT_STAMP, reader
from tui.engines.tgi.phases import PHASES


def draft_tokens(values: Mapping[str, object]) -> int | None:
    """``--speculate N``: the tokens each step speculates (Medusa heads, n-gram)."""
    found = whole(values.get("speculate"))
    return found if found is not None and found > 0 else None


SPEC = EngineSpec(
    # the router logs no throughput, queue or batch figures: they are on /metrics alone
    metrics_from="prometheus",
    name="tgi",
    title="TGI",
    programs=("text-generation-launcher", "text-generation-router", "text-generation-server"),
    # The router's tracing::info!("Connected"), after its file:line (full format, then
    # plain or with the dimmed line number's reset code before the message) or as the
    # JSON message.
    ready=(": Connected", "\x1b[0m Connected", '"message":"Connected"'),
    deaths=(
        # the launcher, when the router process exits while serving (or while warming up)
        "Webserver Crashed",
        # a shard process exited: the launcher prints what it wrote to stderr ...
        "Shard complete standard error output",
        # ... and, when a signal ended it, which one
        "Shard process was signaled to shutdown with signal",
    ),
    # the shards are torch processes: NCCL's watchdog speaks in their lines
    hangs=NCCL_HANGS,
    # no log line while requests run: progress is the tgi_* counters on /metrics
    prints_progress=False,
    # the running and queued figures are /metrics gauges (tgi_batch_current_size,
    # tgi_queue_size), which fall to 0 when the work ends
    counts_when_idle=True,
    model_keys=("model_id",),
    draft_tokens=draft_tokens,
    canary=CANARY,
    startup_failures=(
        # Shard N failed to start (the launcher, after the shard's process exited)
        " failed to start",
        "Download encountered an error",
        "Download process was signaled to shutdown",
        "not found in PATH",
        # the launcher's and the router's exit: main() returned Err(...) (Debug)
        "Error: ShardCannotStart",
        "Error: DownloadError",
        "Error: WebserverCannotStart",
        "Error: ArgumentValidation(",
        "Error: NotEnoughCUDADevices(",
        "Error: Warmup(",
        "Error: Backend(",
        # The router's "Server error: …" is a shard's failed gRPC call. While serving it
        # fails one batch's requests and the shard stays up (its interceptor answers
        # the error), so it is no death; before the ready line it is the warm-up failing,
        # which ends the router.
        "Server error: ",
        "Traceback (most recent call last)",
        "CUDA out of memory",
        "Not enough memory to handle",
    ),
    telling=(
        "CUDA out of memory",
        "OutOfMemoryError",
        "Not enough memory to handle",
        "Server error: ",
        "RuntimeError",
        "ValueError",
        " failed to start",
        "Download encountered an error",
        "Error: ",
        "Webserver Crashed",
    ),
    args_heads=(
        # --json-output: the dump is the JSON line's message, newlines escaped
        ArgsHead('"message":"Args {', JSON_FORM),
        # TGI <= 1.x: {:?}, the whole dump on its line
        ArgsHead("Args { ", LINE_FORM),
        # {:#?}: one field a line, up to the "}" that starts a line
        ArgsHead("Args {", TEXT_FORM, until="}"),
    ),
    stamps=(Stamp(TEXT_STAMP, StampKind.UTC), Stamp(JSON_STAMP, StampKind.UTC)),
    aliases={"p": "port", "e": "env"},
    switches=frozenset(
        {
            "--trust-remote-code",
            "--disable-custom-kernels",
            "--json-output",
            "--ngrok",
            "--disable-grammar-support",
            "--enable-prefill-logprobs",
            "--env",
            "-e",
        }
    ),
    spec_keys=("speculate",),
    # each shard runs `text-generation-server serve` under the launcher
    workers=("text-generation-server",),
    phases=PHASES,
    prometheus=Prometheus(
        gauges={
            "tgi_queue_size": (Metric.QUEUED, True),
            "tgi_batch_current_size": (Metric.RUNNING, True),
        },
        # histograms: their _sum grows by each request's token count
        rates={
            "tgi_request_generated_tokens_sum": Metric.GEN_THROUGHPUT,
            "tgi_request_input_length_sum": Metric.PREFILL_THROUGHPUT,
        },
        prefix="tgi_",
    ),
    reader=reader,
    read_reported=read_reported,
)
