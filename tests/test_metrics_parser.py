"""Metric lines of every SGLang and vLLM format variant, parsed into typed samples.

The lines follow the format strings of the released sources (values invented),
as collected in the developers' log-format reference; they are copied here so
that nothing at test time reads outside the repository.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.metrics.boundaries import LogScanner, RunEvent, RunEventKind
from tui.core.metrics.fields import field_value, split_fields
from tui.core.metrics.model import Metric, MetricSample
from tui.core.metrics.parse import MetricsParser
from tui.core.metrics.stamps import infer_year
from tui.engines import Engine

pytestmark = pytest.mark.unit

D = "sglang-decode"
P = "sglang-prefill"
V = "vllm-stats"
S = "vllm-spec"

GEN = Metric.GEN_THROUGHPUT
PRE = Metric.PREFILL_THROUGHPUT
RUN = Metric.RUNNING
QUE = Metric.QUEUED
USE = Metric.TOKEN_USAGE
LEN = Metric.ACCEPT_LEN
RATE = Metric.ACCEPT_RATE
KV = Metric.KV_TOKENS
HIT = Metric.PREFIX_HIT_RATE

REFERENCE = datetime(2026, 12, 31, 12, 0, 0)

# (id, line, kind, subset of canonical values, subset of typed fields, source)
VARIANTS = [
    # --- SGLang Decode batch -----------------------------------------------------------
    (
        "sglang-0.4.0-decode",
        "[2024-12-05 10:11:12 TP0] Decode batch. #running-req: 8, #token: 5231, token usage: "
        "0.03, gen throughput (token/s): 612.44, #queue-req: 0",
        D,
        {RUN: 8, KV: 5231, USE: 0.03, GEN: 612.44, QUE: 0},
        {},
        "TP0",
    ),
    (
        "sglang-0.4.3-accept-len",
        "[2025-02-10 10:11:12 TP0] Decode batch. #running-req: 8, #token: 5231, token usage: "
        "0.03, accept len: 2.71, gen throughput (token/s): 612.44, #queue-req: 0",
        D,
        {LEN: 2.71, GEN: 612.44},
        {},
        "TP0",
    ),
    (
        "sglang-0.4.6-pd-decode-dp-tag",
        "[2025-04-20 10:11:12 DP1 TP1] Decode batch. #running-req: 8, #token: 5231, token "
        "usage: 0.03, pre-allocated usage: 0.10, gen throughput (token/s): 612.44, "
        "#queue-req: 0",
        D,
        {RUN: 8, GEN: 612.44},
        {"pre-allocated usage": 0.10},
        "DP1 TP1",
    ),
    (
        "sglang-0.4.7-cuda-graph-tp1",
        "[2025-06-12 08:00:01] Decode batch. #running-req: 8, #token: 5231, token usage: 0.03, "
        "cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0",
        D,
        {RUN: 8, GEN: 612.44, QUE: 0},
        {"cuda graph": True},
        "",
    ),
    (
        "sglang-0.4.10-trailing-comma",
        "[2025-08-20 08:00:01 TP0] Decode batch. #running-req: 8, #token: 5231, token usage: "
        "0.03, accept len: 3.10, cuda graph: True, gen throughput (token/s): 612.44, "
        "#queue-req: 2, ",
        D,
        {LEN: 3.10, QUE: 2},
        {"cuda graph": True},
        "TP0",
    ),
    (
        "sglang-0.5.2-cpu-graph",
        "[2025-09-20 08:00:01] Decode batch. #running-req: 1, #token: 52, token usage: 0.00, "
        "cpu graph: False, gen throughput (token/s): 12.50, #queue-req: 0, ",
        D,
        {GEN: 12.5, RUN: 1},
        {"cpu graph": False},
        "",
    ),
    (
        "sglang-0.5.3.post3-accept-rate",
        "[2025-10-20 08:00:01 TP0] Decode batch. #running-req: 8, #token: 5231, token usage: "
        "0.03, accept len: 3.10, accept rate: 0.70, cuda graph: True, gen throughput "
        "(token/s): 612.44, #queue-req: 0, ",
        D,
        {LEN: 3.10, RATE: 0.70},
        {},
        "TP0",
    ),
    (
        "sglang-0.5.4-forward-iter",
        "[2025-10-24 08:00:01] Decode batch [1234], #running-req: 8, #token: 5231, token usage: "
        "0.03, accept len: 3.10, accept rate: 0.70, cuda graph: True, gen throughput "
        "(token/s): 612.44, #queue-req: 0, ",
        D,
        {GEN: 612.44},
        {"forward iter": 1234},
        "",
    ),
    (
        "sglang-0.5.5-hybrid-swa",
        "[2025-11-11 04:06:27] Decode batch, #running-req: 42, #full token: 48211, full token "
        "usage: 0.21, #swa token: 1024, swa token usage: 0.05, cuda graph: True, gen "
        "throughput (token/s): 1043.77, #queue-req: 7, ",
        D,
        {KV: 48211, USE: 0.21, GEN: 1043.77, QUE: 7},
        {"swa token usage": 0.05, "#swa token": 1024},
        "",
    ),
    (
        "sglang-0.5.2x-mamba-nextn",
        "[2026-05-09 09:22:05 TP0] Decode batch, #running-req: 12, #full token: 48211, full "
        "token usage: 0.21, mamba num: 24, mamba usage: 0.12, accept len: 3.41, accept rate: "
        "0.81, cuda graph: True, gen throughput (token/s): 1043.77, #queue-req: 3",
        D,
        {RUN: 12, USE: 0.21, LEN: 3.41, RATE: 0.81, GEN: 1043.77, QUE: 3},
        {"mamba usage": 0.12, "mamba num": 24},
        "TP0",
    ),
    (
        "sglang-0.5.5-pd-decode",
        "[2025-11-11 04:06:27 DP0 TP0] Decode batch, #running-req: 8, #token: 5231, token "
        "usage: 0.03, pre-allocated usage: 0.10, #prealloc-req: 2, #transfer-req: 1, "
        "#retracted-req: 0, cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0, ",
        D,
        {GEN: 612.44},
        {"#prealloc-req": 2, "#transfer-req": 1, "#retracted-req": 0},
        "DP0 TP0",
    ),
    (
        "sglang-0.5.9-no-trailing-comma-npu",
        "[2026-02-10 08:00:01] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "npu graph: True, gen throughput (token/s): 612.44, #queue-req: 4",
        D,
        {QUE: 4, GEN: 612.44},
        {"npu graph": True},
        "",
    ),
    (
        "sglang-0.5.9-musa-graph",
        "[2026-02-10 08:00:01] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "musa graph: False, gen throughput (token/s): 612.44, #queue-req: 4",
        D,
        {QUE: 4},
        {"musa graph": False},
        "",
    ),
    (
        "sglang-0.5.2x-cap-and-block-len",
        "[2026-09-01 10:00:00 TP0] Decode batch, #running-req: 8, #token: 5231, token usage: "
        "0.03, accept len: 3.41, accept rate: 0.81, cap len: 4.00, block accept len: 3.20, "
        "cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0",
        D,
        {LEN: 3.41, RATE: 0.81},
        {"cap len": 4.0, "block accept len": 3.2},
        "TP0",
    ),
    (
        "sglang-0.5.2x-pd-host-receive-and-epd",
        "[2026-09-01 10:00:00] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "pre-allocated usage: 0.10, #prealloc-req: 2, #transfer-req: 1, #host-receive-req: 3, "
        "#retracted-req: 0, waiting-image-req: 5, cuda graph: True, gen throughput (token/s): "
        "612.44, #queue-req: 0",
        D,
        {GEN: 612.44},
        {"#host-receive-req": 3, "waiting-image-req": 5},
        "",
    ),
    (
        "sglang-0.5.2x-est-tflops-suffix",
        "[2026-09-01 10:00:00] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0, est. decode "
        "TFLOPS/s (per GPU): 123.45, est. read BW (GB/s per GPU): 2345.67, est. write BW "
        "(GB/s per GPU): 12.34",
        D,
        {QUE: 0, GEN: 612.44},
        {"est. decode TFLOPS/s (per GPU)": 123.45, "est. write BW (GB/s per GPU)": 12.34},
        "",
    ),
    (
        "sglang-0.5.15-fwd-occupancy",
        "[2026-07-01 10:00:00] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0, fwd occupancy: "
        "12.34%",
        D,
        {QUE: 0},
        {"fwd occupancy": 12.34},
        "",
    ),
    (
        "sglang-0.5.23-fwd-idle-occupancy",
        "[2026-10-30 10:00:00] Decode batch, #running-req: 8, #token: 5231, token usage: 0.03, "
        "cuda graph: True, gen throughput (token/s): 612.44, #queue-req: 0, fwd occupancy: "
        "12.34%, fwd+idle occupancy: 56.78%",
        D,
        {QUE: 0},
        {"fwd+idle occupancy": 56.78},
        "",
    ),
    (
        "sglang-0.5.23-hisparse",
        "[2026-10-30 10:00:00] Decode batch, #running-req: 8, #gpu token: 4000, gpu token "
        "usage: 0.40, #cpu token: 9000, cpu token usage: 0.10, cuda graph: True, gen "
        "throughput (token/s): 612.44, #queue-req: 0",
        D,
        {KV: 4000, USE: 0.40},
        {"cpu token usage": 0.10},
        "",
    ),
    (
        "sglang-2026-04-hisparse-dashed",
        "[2026-04-10 10:00:00] Decode batch, #running-req: 8, #gpu-token: 4000, gpu token "
        "usage: 0.40, #cpu-token: 9000, cpu token usage: 0.10, cuda graph: True, gen "
        "throughput (token/s): 612.44, #queue-req: 0",
        D,
        {KV: 4000, USE: 0.40},
        {"#cpu-token": 9000},
        "",
    ),
    (
        "sglang-ms-dp-tp-ep",
        "[2026-05-09 09:22:05.123 DP0 TP0 EP0] Decode batch, #running-req: 12, #token: 100, "
        "token usage: 0.50, cuda graph: True, gen throughput (token/s): 1043.77, #queue-req: 3",
        D,
        {RUN: 12, USE: 0.5},
        {},
        "DP0 TP0 EP0",
    ),
    (
        "sglang-0.5.9-rank-order",
        "[2026-03-01 10:00:00 DP1 PP0 ATTN_CP0 MOE_DP1 TP1 EP1] Decode batch, #running-req: "
        "4, #token: 100, token usage: 0.50, cuda graph: True, gen throughput (token/s): 99.00, "
        "#queue-req: 0",
        D,
        {RUN: 4, GEN: 99.0},
        {},
        "DP1 PP0 ATTN_CP0 MOE_DP1 TP1 EP1",
    ),
    (
        "sglang-ray-actor-prefix",
        "(Actor pid=4242, ip=10.0.0.7) [2026-03-01 10:00:00 TP0] Decode batch, #running-req: 4, "
        "#token: 100, token usage: 0.50, cuda graph: True, gen throughput (token/s): 99.00, "
        "#queue-req: 0",
        D,
        {RUN: 4},
        {},
        "TP0",
    ),
    # --- SGLang Prefill batch ----------------------------------------------------------
    (
        "sglang-0.4.0-prefill-cache-hit-rate",
        "[2024-12-05 10:11:10 TP0] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: "
        "0, cache hit rate: 12.50%, token usage: 0.00, #running-req: 0, #queue-req: 0",
        P,
        {HIT: 0.125, USE: 0.0, RUN: 0, QUE: 0},
        {"#new-token": 28, "cache hit rate": 12.5},
        "TP0",
    ),
    (
        "sglang-0.4.6-prefill",
        "[2025-04-20 10:11:10] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #queue-req: 0",
        P,
        {QUE: 0},
        {"#new-seq": 1},
        "",
    ),
    (
        "sglang-0.4.6-pd-prefill",
        "[2025-04-20 10:11:10] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: 0, "
        "token usage: 0.00, #running-req: 0, #unbootstrapped-req: 2, #queue-req: 1, "
        "#transferring-req: 3",
        P,
        {QUE: 1},
        {"#unbootstrapped-req": 2, "#transferring-req": 3},
        "",
    ),
    (
        "sglang-0.4.10-prefill-trailing",
        "[2025-08-20 10:11:10 TP0] Prefill batch. #new-seq: 4, #new-token: 2048, #cached-token: "
        "1536, token usage: 0.12, #running-req: 42, #queue-req: 7, ",
        P,
        {RUN: 42, QUE: 7, USE: 0.12},
        {},
        "TP0",
    ),
    (
        "sglang-0.5.4-prefill-iter",
        "[2025-10-24 10:11:10] Prefill batch [77], #new-seq: 4, #new-token: 2048, "
        "#cached-token: 1536, token usage: 0.12, #running-req: 42, #queue-req: 7, ",
        P,
        {QUE: 7},
        {"forward iter": 77},
        "",
    ),
    (
        "sglang-0.5.5-prefill",
        "[2025-11-11 04:06:20] Prefill batch, #new-seq: 4, #new-token: 2048, #cached-token: "
        "1536, token usage: 0.12, #running-req: 42, #queue-req: 7,    ",
        P,
        {RUN: 42, QUE: 7},
        {"#cached-token": 1536},
        "",
    ),
    (
        "sglang-0.5.5-pd-prefill",
        "[2025-11-11 04:06:20] Prefill batch, #new-seq: 4, #new-token: 2048, #cached-token: "
        "1536, token usage: 0.12, #running-req: 42, #prealloc-req: 1, #inflight-req: 2, "
        "#queue-req: 7, input throughput (token/s): 8000.50, ",
        P,
        {PRE: 8000.5},
        {"#inflight-req": 2},
        "",
    ),
    (
        "sglang-0.5.9-prefill",
        "[2026-02-10 10:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, "
        "token usage: 0.31, #running-req: 14, #queue-req: 5, input throughput (token/s): "
        "18342.07, cuda graph: False",
        P,
        {PRE: 18342.07, QUE: 5},
        {"cuda graph": False},
        "",
    ),
    (
        "sglang-0.5.10-prefill",
        "[2026-04-10 10:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, "
        "token usage: 0.31, #running-req: 14, #queue-req: 5, cuda graph: False, input "
        "throughput (token/s): 18342.07",
        P,
        {PRE: 18342.07},
        {},
        "",
    ),
    (
        "sglang-0.5.11-prefill-pending-token",
        "[2026-10-30 12:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: "
        "0, token usage: 0.31, #running-req: 14, #queue-req: 5, #pending-token: 20480, cuda "
        "graph: False, input throughput (token/s): 18342.07",
        P,
        {PRE: 18342.07, RUN: 14, QUE: 5, USE: 0.31},
        {"#pending-token": 20480},
        "TP0",
    ),
    (
        "sglang-0.5.23-prefill-hybrid-pd-suffix",
        "[2026-10-30 12:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, "
        "full token usage: 0.31, mamba usage: 0.05, #running-req: 14, #queue-req: 5, "
        "#pending-token: 20480, #replay-token: 12, #bootstrap-req: 1, #inflight-req: 2, "
        "#optimistic-req: 0, cuda graph: False, input throughput (token/s): 18342.07, est. "
        "prefill TFLOPS/s (per GPU): 321.00",
        P,
        {USE: 0.31, PRE: 18342.07},
        {"#replay-token": 12, "est. prefill TFLOPS/s (per GPU)": 321.0},
        "",
    ),
    # --- vLLM stats ----------------------------------------------------------------------
    (
        "vllm-0.6.6-v0",
        "INFO 12-20 10:00:07 metrics.py:467] Avg prompt throughput: 512.3 tokens/s, Avg "
        "generation throughput: 87.9 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 "
        "reqs, GPU KV cache usage: 3.1%, CPU KV cache usage: 0.0%.",
        V,
        {PRE: 512.3, GEN: 87.9, RUN: 4, QUE: 0, USE: 0.031},
        {"Swapped": 0, "CPU KV cache usage": 0.0},
        "",
    ),
    (
        "vllm-0.8.5-v1-engine",
        "INFO 05-02 11:20:20 [loggers.py:111] Engine 000: Avg prompt throughput: 10.0 tokens/s, "
        "Avg generation throughput: 1500.2 tokens/s, Running: 32 reqs, Waiting: 0 reqs, GPU KV "
        "cache usage: 45.0%, Prefix cache hit rate: 12.5%",
        V,
        {GEN: 1500.2, RUN: 32, QUE: 0, USE: 0.45, HIT: 0.125},
        {},
        "Engine 000",
    ),
    (
        "vllm-0.9-worker-tag",
        "(VllmWorker rank=0 pid=2445155) INFO 07-02 11:20:20 [loggers.py:111] Engine 000: Avg "
        "prompt throughput: 10.0 tokens/s, Avg generation throughput: 1500.2 tokens/s, Running: "
        "32 reqs, Waiting: 1 reqs, GPU KV cache usage: 45.0%, Prefix cache hit rate: 12.5%",
        V,
        {QUE: 1},
        {},
        "Engine 000",
    ),
    (
        "vllm-0.33-preemptions",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 1840.2 tokens/s, Running: 64 "
        "reqs, Waiting: 12 reqs, Preemptions: 3, GPU KV cache usage: 97.4%, Prefix cache hit "
        "rate: 41.9%",
        V,
        {GEN: 1840.2, RUN: 64, QUE: 12, USE: 0.974, HIT: 0.419},
        {"Preemptions": 3},
        "Engine 000",
    ),
    (
        "vllm-0.33-aggregated",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] 2 Engines Aggregated: Avg "
        "prompt throughput: 0.0 tokens/s, Avg generation throughput: 3100.0 tokens/s, Running: "
        "128 reqs, Waiting: 0 reqs, GPU KV cache usage: 52.0%, Prefix cache hit rate: 12.5%",
        V,
        {RUN: 128, GEN: 3100.0, USE: 0.52},
        {},
        "2 Engines Aggregated",
    ),
    (
        "vllm-0.20-deferred",
        "(APIServer pid=7) INFO 04-20 14:02:11 [loggers.py:300] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4 reqs, "
        "Waiting: 2 reqs, Deferred: 3 reqs, GPU KV cache usage: 5.0%, Prefix cache hit rate: "
        "0.0%",
        V,
        {QUE: 2},
        {"Deferred": 3},
        "Engine 000",
    ),
    (
        "vllm-0.32-kv-fetch",
        "(APIServer pid=7) INFO 10-20 14:02:11 [loggers.py:300] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4 reqs, "
        "Waiting: 2 reqs, KV fetch: 1 waiting to start, 2 in progress, 3 completed waiting, "
        "GPU KV cache usage: 5.0%, Prefix cache hit rate: 10.0%",
        V,
        {RUN: 4, USE: 0.05, HIT: 0.10},
        {"KV fetch": "1 waiting to start, 2 in progress, 3 completed waiting"},
        "Engine 000",
    ),
    (
        "vllm-0.30-xpu-kv-usage",
        "(APIServer pid=7) INFO 09-20 14:02:11 [loggers.py:300] Engine 000: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4 reqs, "
        "Waiting: 0 reqs, XPU KV cache usage: 25.0%, Prefix cache hit rate: 0.0%",
        V,
        {USE: 0.25},
        {"XPU KV cache usage": 25.0},
        "Engine 000",
    ),
    (
        "vllm-0.31-optional-parts",
        "(APIServer pid=7) INFO 10-20 14:02:11 [loggers.py:300] Engine 001: Avg prompt "
        "throughput: 0.0 tokens/s, Avg generation throughput: 100.0 tokens/s, Running: 4 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 25.0%, Corrupted: 1 reqs, External prefix cache "
        "hit rate: 5.0%, MM cache hit rate: 7.5%",
        V,
        {USE: 0.25, GEN: 100.0},
        {"Corrupted": 1, "External prefix cache hit rate": 5.0, "MM cache hit rate": 7.5},
        "Engine 001",
    ),
    (
        "vllm-0.6.6-v0-prefix-cache-line",
        "INFO 12-20 10:00:07 metrics.py:470] Prefix cache hit rate: GPU: 12.50%, CPU: 0.00%",
        "vllm-prefix-cache",
        {HIT: 0.125},
        {"CPU": 0.0},
        "",
    ),
    # --- vLLM speculative decoding ---------------------------------------------------------
    (
        "vllm-0.8.5-spec",
        "INFO 05-02 11:20:30 [metrics.py:82] SpecDecoding metrics: Draft acceptance rate: "
        "61.2%, Mean acceptance length: 1.84, Accepted: 1102 tokens, Drafted: 1800 tokens, "
        "Per-position acceptance rate: 0.780, 0.612, 0.444",
        S,
        {RATE: 0.612, LEN: 1.84},
        {"Per-position acceptance rate": (0.78, 0.612, 0.444), "Accepted": 1102},
        "",
    ),
    (
        "vllm-0.10.2-spec",
        "(APIServer pid=7) INFO 11-20 14:02:11 [metrics.py:104] SpecDecoding metrics: Mean "
        "acceptance length: 3.87, Accepted throughput: 438.98 tokens/s, Drafted throughput: "
        "458.98 tokens/s, Accepted: 439 tokens, Drafted: 459 tokens, Per-position acceptance "
        "rate: 0.980, 0.954, 0.935, Avg Draft acceptance rate: 95.6%",
        S,
        {LEN: 3.87, RATE: 0.956},
        {"Per-position acceptance rate": (0.98, 0.954, 0.935), "Drafted": 459},
        "",
    ),
    (
        "vllm-0.6.6-v0-speculative",
        "INFO 12-20 10:00:07 spec_decode_worker.py:1000] Speculative metrics: Draft acceptance "
        "rate: 0.612, System efficiency: 0.540, Number of speculative tokens: 3, Number of "
        "accepted tokens: 1102, Number of draft tokens: 1800, Number of emitted tokens: 1500.",
        S,
        {RATE: 0.612},
        {"System efficiency": 0.54, "Number of emitted tokens": 1500},
        "",
    ),
    (
        "vllm-0.26-diffusion",
        "(APIServer pid=7) INFO 07-20 14:02:11 [metrics.py:104] DiffusionDecoding metrics: "
        "Committed token throughput: 812.50 tokens/s, Mean denoising steps per canvas: 4.20",
        "vllm-diffusion",
        {GEN: 812.5},
        {"Mean denoising steps per canvas": 4.2},
        "",
    ),
]


@pytest.mark.parametrize(
    ("line", "kind", "values", "fields", "source"),
    [pytest.param(*case[1:], id=case[0]) for case in VARIANTS],
)
def test_every_format_variant_parses(
    line: str,
    kind: str,
    values: dict[Metric, float],
    fields: dict[str, object],
    source: str,
) -> None:
    sample = MetricsParser(reference=REFERENCE).parse_line(line, 1234)
    assert sample is not None
    assert sample.kind == kind
    assert sample.offset == 1234
    assert sample.source == source
    for metric, value in values.items():
        assert sample.values[metric] == pytest.approx(value), metric
    typed = sample.fields
    for key, value in fields.items():
        assert typed[key] == (pytest.approx(value) if isinstance(value, float) else value), key
    # every pair of the line is kept, known or not
    assert len(sample.raw) >= len(values)
    assert sample.engine == kind.split("-", maxsplit=1)[0]


@pytest.mark.parametrize("case", VARIANTS, ids=[c[0] for c in VARIANTS])
def test_the_other_engine_does_not_read_a_line(case: tuple) -> None:
    line, kind = case[1], case[2]
    other = Engine.VLLM if kind.startswith("sglang") else Engine.SGLANG
    assert MetricsParser(other, reference=REFERENCE).parse_line(line, 0) is None


def test_timestamps_come_from_the_line() -> None:
    parser = MetricsParser(reference=REFERENCE)
    sglang = parser.parse_line(VARIANTS[0][1], 0)
    with_ms = parser.parse_line(next(c[1] for c in VARIANTS if c[0] == "sglang-ms-dp-tp-ep"), 0)
    vllm = parser.parse_line(next(c[1] for c in VARIANTS if c[0] == "vllm-0.33-preemptions"), 0)
    assert sglang is not None and with_ms is not None and vllm is not None
    assert sglang.ts == datetime(2024, 12, 5, 10, 11, 12)
    assert with_ms.ts == datetime(2026, 5, 9, 9, 22, 5, 123000)
    assert vllm.ts == datetime(2026, 11, 20, 14, 2, 11)


def test_per_position_list_and_unknown_fields_survive_json() -> None:
    line = next(c[1] for c in VARIANTS if c[0] == "vllm-0.10.2-spec")
    sample = MetricsParser(reference=REFERENCE).parse_line(line, 9)
    assert sample is not None
    record = sample.to_json()
    assert record["fields"]["Per-position acceptance rate"] == [0.98, 0.954, 0.935]
    assert record["fields"]["Avg Draft acceptance rate"] == 95.6
    assert record["values"] == {"accept_len": 3.87, "accept_rate": pytest.approx(0.956)}
    assert record["offset"] == 9 and record["kind"] == "vllm-spec"


@pytest.mark.parametrize(
    "line",
    [
        "",
        "Decode batch",
        '[2025-11-30 11:18:07] INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK',
        "[2025-13-45 99:99:99] Decode batch, #running-req: 1",
        "[2025-11-30 11:18:07] Decode batchy, #running-req: 1",
        "INFO 13-45 10:00:07 metrics.py:467] Avg prompt throughput: 1.0 tokens/s",
        "INFO 02-30 10:00:07 [loggers.py:1] Engine 000: Avg prompt throughput: 1 tokens/s",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:281] Engine 000: vllm cache_config_info"
        " with initialization after num_gpu_blocks is: 24939",
        "(APIServer pid=7) INFO 11-20 14:02:11 [core.py:1] Initializing a V1 LLM engine with "
        "config: max_num_batched_tokens=8192, throughput: high",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
    ],
)
def test_lines_that_are_not_metric_lines_are_none(line: str) -> None:
    assert MetricsParser(reference=REFERENCE).parse_line(line, 0) is None


def test_a_value_that_is_not_a_number_is_kept_as_text() -> None:
    line = (
        "[2026-05-09 09:22:05] Decode batch, #running-req: 12, token usage: n/a, "
        "gen throughput (token/s): nan, #queue-req: 3"
    )
    sample = MetricsParser().parse_line(line, 0)
    assert sample is not None
    assert sample.fields["token usage"] == "n/a"
    assert Metric.TOKEN_USAGE not in sample.values
    assert Metric.GEN_THROUGHPUT not in sample.values  # nan is no value
    assert sample.values[Metric.RUNNING] == 12


@pytest.mark.parametrize(
    ("raw", "typed"),
    [
        ("12", 12),
        ("0.21", 0.21),
        ("97.4%", 97.4),
        ("512.3 tokens/s", 512.3),
        ("4 reqs", 4),
        ("True", True),
        ("False", False),
        ("0.780, 0.612, 0.444", (0.78, 0.612, 0.444)),
        ("1 waiting to start, 2 in progress", "1 waiting to start, 2 in progress"),
        ("abc", "abc"),
        ("", ""),
        ("-3", -3),
    ],
)
def test_field_values_are_typed(raw: str, typed: object) -> None:
    assert field_value(raw) == typed


def test_split_fields_keeps_order_and_joins_continuations() -> None:
    assert split_fields("a: 1, b: 2, 3, c: x") == {"a": "1", "b": "2, 3", "c": "x"}
    assert list(split_fields("z: 1, a: 2")) == ["z", "a"]
    assert split_fields("") == {}
    assert split_fields("no pairs here") == {}


# --- hypothesis ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_the_parser_never_raises_on_any_text(text: str) -> None:
    scanner = LogScanner(reference=REFERENCE)
    scanner.feed(text, 0)
    MetricsParser(reference=REFERENCE).parse_line(text, 0)


PREFIXES = st.sampled_from(
    [
        "[2026-05-09 09:22:05] Decode batch, ",
        "[2026-05-09 09:22:05.999 DP3 TP3] Prefill batch [7], ",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] Engine 000: Avg ",
        "INFO 05-02 11:20:30 [metrics.py:82] SpecDecoding metrics: ",
        "INFO 12-20 10:00:07 metrics.py:470] Prefix cache hit rate: GPU: ",
        "[2026-02-30 09:22:05] Decode batch. ",
    ]
)


@settings(max_examples=300, deadline=None)
@given(PREFIXES, st.text(max_size=200))
def test_the_parser_never_raises_on_metric_like_lines(prefix: str, rest: str) -> None:
    sample = MetricsParser(reference=REFERENCE).parse_line(prefix + rest, 0)
    if sample is not None:
        sample.fields  # noqa: B018 - typing every field must not raise either
        sample.to_json()


KEY_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=",:")
VALUE_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=",")
KNOWN_KEYS = {
    "#running-req",
    "#token",
    "token usage",
    "gen throughput (token/s)",
    "#queue-req",
    "Avg prompt throughput",
    "Avg generation throughput",
    "Running",
    "Waiting",
    "GPU KV cache usage",
}


@settings(max_examples=200, deadline=None)
@given(
    st.text(KEY_CHARS, min_size=1, max_size=20).filter(lambda k: k not in KNOWN_KEYS),
    st.text(VALUE_CHARS, max_size=20),
    st.booleans(),
)
def test_unknown_key_value_fields_are_kept(key: str, value: str, vllm: bool) -> None:
    pair = f"{key}: {value}"
    if vllm:
        line = (
            "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] Engine 000: Avg prompt "
            f"throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, {pair}, "
            "Running: 3 reqs, Waiting: 4 reqs, GPU KV cache usage: 5.0%"
        )
        expected = {Metric.RUNNING: 3, Metric.QUEUED: 4, Metric.TOKEN_USAGE: 0.05}
    else:
        line = (
            f"[2026-05-09 09:22:05 TP0] Decode batch, #running-req: 3, {pair}, #token: 9, "
            "token usage: 0.05, gen throughput (token/s): 2.00, #queue-req: 4"
        )
        expected = {Metric.RUNNING: 3, Metric.QUEUED: 4, Metric.TOKEN_USAGE: 0.05}
    sample = MetricsParser(reference=REFERENCE).parse_line(line, 0)
    assert sample is not None
    assert sample.raw[key] == value
    assert key in sample.fields
    for metric, number in expected.items():
        assert sample.values[metric] == pytest.approx(number)


# --- year inference -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stamp", "reference", "expected_year"),
    [
        ((11, 20), datetime(2026, 11, 21, 9, 0), 2026),
        # written across New Year, last modified in January: December lines are last year's
        ((12, 31), datetime(2027, 1, 1, 0, 5), 2026),
        ((1, 1), datetime(2027, 1, 1, 0, 5), 2027),
        # a line a few hours after the reference (clock skew) stays in the reference's year
        ((3, 1), datetime(2026, 2, 28, 23, 0), 2026),
        # January line, reference late December (mtime older than the line by skew): next year
        ((1, 1), datetime(2026, 12, 31, 23, 30), 2027),
        # Feb 29 only exists in leap years
        ((2, 29), datetime(2027, 6, 1), 2024),
    ],
)
def test_vllm_year_is_inferred_from_the_reference(
    stamp: tuple[int, int], reference: datetime, expected_year: int
) -> None:
    month, day = stamp
    assert infer_year(month, day, (0, 0, 0), reference).year == expected_year


def test_a_vllm_file_across_new_year_gets_two_years() -> None:
    mtime = datetime(2027, 1, 1, 0, 0, 30)
    parser = MetricsParser(Engine.VLLM, reference=mtime)
    body = (
        "Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1.0 "
        "tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%"
    )
    before = parser.parse_line(f"INFO 12-31 23:59:50 [loggers.py:1] {body}", 0)
    after = parser.parse_line(f"INFO 01-01 00:00:00 [loggers.py:1] {body}", 100)
    assert before is not None and after is not None
    assert before.ts == datetime(2026, 12, 31, 23, 59, 50)
    assert after.ts == datetime(2027, 1, 1, 0, 0, 0)
    assert after.ts > before.ts


def test_without_a_reference_the_clock_gives_the_year() -> None:
    parser = MetricsParser(Engine.VLLM, clock=lambda: datetime(2030, 1, 2))
    sample = parser.parse_line(
        "INFO 12-30 10:00:07 metrics.py:467] Avg prompt throughput: 1.0 tokens/s, Avg "
        "generation throughput: 1.0 tokens/s, Running: 1 reqs",
        0,
    )
    assert sample is not None and sample.ts.year == 2029


@settings(max_examples=200, deadline=None)
@given(
    st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)),
    st.datetimes(min_value=datetime(2001, 1, 1), max_value=datetime(2090, 1, 1)),
)
def test_inferred_year_is_the_latest_not_after_the_reference(
    line_time: datetime, reference: datetime
) -> None:
    clock = (line_time.hour, line_time.minute, line_time.second)
    got = infer_year(line_time.month, line_time.day, clock, reference)
    assert (got.month, got.day) == (line_time.month, line_time.day)
    assert got <= reference.replace(microsecond=0) + timedelta(days=1)
    later = [y for y in range(got.year + 1, reference.year + 2)]
    for year in later:  # no later year would still fit
        try:
            candidate = got.replace(year=year)
        except ValueError:
            continue
        assert candidate > reference + timedelta(days=1)


# --- run boundaries --------------------------------------------------------------------------

SGLANG_RUN = [
    "[2026-11-29 17:52:52] server_args=ServerArgs(model_path='X', tp_size=1, "
    "speculative_algorithm='EAGLE')",
    "[2026-11-29 17:52:52 TP0] Load weight begin. avail mem=78.61 GB",
    "[2026-11-29 17:52:53] INFO:     Application startup complete.",
    "[2026-11-29 17:52:54] The server is fired up and ready to roll!",
    "[2026-11-29 17:52:55] Decode batch, #running-req: 3, #token: 453, token usage: 0.00, "
    "accept len: 3.89, accept rate: 0.97, cuda graph: True, gen throughput (token/s): 9.62, "
    "#queue-req: 0",
]
VLLM_RUN = [
    "(APIServer pid=7) INFO 11-29 17:52:44 [api_server.py:1208] vLLM server version 0.20.0, "
    "serving model X",
    "(APIServer pid=7) INFO 11-29 17:52:44 [utils.py:287] non-default args: {'model': 'X'}",
    "(APIServer pid=7) INFO:     Application startup complete.",
    "(APIServer pid=7) INFO 11-29 17:52:46 [loggers.py:298] Engine 000: Avg prompt throughput:"
    " 3.0 tokens/s, Avg generation throughput: 600.0 tokens/s, Running: 2 reqs, Waiting: 0 "
    "reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0%",
]


def scan(lines: list[str]) -> list[MetricSample | RunEvent]:
    scanner = LogScanner(reference=REFERENCE)
    found = []
    offset = 0
    for line in lines:
        item = scanner.feed(line, offset)
        offset += len(line.encode()) + 1
        if item is not None:
            found.append(item)
    return found


def test_two_sglang_runs_in_one_file_are_two_runs() -> None:
    found = scan([*SGLANG_RUN, "Killed", *SGLANG_RUN])
    events = [f for f in found if isinstance(f, RunEvent)]
    samples = [f for f in found if isinstance(f, MetricSample)]
    assert [(e.kind, e.run, e.marker) for e in events] == [
        (RunEventKind.STARTED, 1, "sglang-args"),
        (RunEventKind.READY, 1, "sglang-ready"),
        (RunEventKind.STARTED, 2, "sglang-args"),
        (RunEventKind.READY, 2, "sglang-ready"),
    ]
    assert [s.run for s in samples] == [1, 2]
    assert events[2].offset == sum(len(x.encode()) + 1 for x in [*SGLANG_RUN, "Killed"])
    assert events[0].ts == datetime(2026, 11, 29, 17, 52, 52)
    assert events[1].ts == datetime(2026, 11, 29, 17, 52, 54)


def test_vllm_version_and_args_lines_are_one_run() -> None:
    found = scan(VLLM_RUN + VLLM_RUN)
    events = [f for f in found if isinstance(f, RunEvent)]
    assert [(e.kind, e.run, e.marker) for e in events] == [
        (RunEventKind.STARTED, 1, "vllm-start"),
        (RunEventKind.READY, 1, "vllm-ready"),
        (RunEventKind.STARTED, 2, "vllm-start"),
        (RunEventKind.READY, 2, "vllm-ready"),
    ]
    assert [f.run for f in found if isinstance(f, MetricSample)] == [1, 2]


def test_vllm_without_version_line_starts_runs_at_the_args_line() -> None:
    args = [
        "INFO 04-02 10:00:00 [api_server.py:1] args: Namespace(host=None, port=8000)",
        "INFO 04-02 10:00:05 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s, "
        "Avg generation throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs",
    ]
    found = scan(args + args)
    assert [(f.run, f.marker) for f in found if isinstance(f, RunEvent)] == [
        (1, "vllm-args"),
        (2, "vllm-args"),
    ]


def test_lines_before_any_startup_are_run_zero_and_engines_do_not_merge_runs() -> None:
    decode = SGLANG_RUN[-1]
    found = scan([decode, *SGLANG_RUN, *VLLM_RUN])
    assert [f.run for f in found if isinstance(f, MetricSample)] == [0, 1, 2]
    starts = [f for f in found if isinstance(f, RunEvent) and f.kind is RunEventKind.STARTED]
    assert [s.engine for s in starts] == [Engine.SGLANG.value, Engine.VLLM.value]


def test_sglang_uvicorn_startup_line_is_not_a_vllm_ready_line() -> None:
    found = scan(["[2026-11-29 17:52:53] INFO:     Application startup complete."])
    assert found == []
