"""SGLang and vLLM lines as real users' logs print them, beyond the release defaults.

Each line follows a format string of the released sources or a shape seen in logs
users pasted (values invented), as the developers' log-format reference collects
them ("drift"); they are copied here so that nothing at test time reads outside the
repository. Every golden line is read with every value it carries.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.hints import HintRule, death_line
from tui.core.lines import whole_lines
from tui.core.metrics.model import Metric, MetricSample
from tui.core.metrics.parse import MetricsParser
from tui.core.wedge import ServingWatch
from tui.engines import SPECS
from tui.ops.relaunch import failure_lines, telling_lines

pytestmark = pytest.mark.unit

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

DECODE_BODY = (
    "#running-req: 12, #token: 5231, token usage: 0.03, cuda graph: True, "
    "gen throughput (token/s): 612.44, #queue-req: 3"
)
DECODE_VALUES = {RUN: 12, KV: 5231, USE: 0.03, GEN: 612.44, QUE: 3}
DECODE_FIELDS = {"cuda graph": True, "#running-req": 12, "#queue-req": 3}
SGLANG_LINE = f"[2026-05-09 09:22:05 TP0] Decode batch, {DECODE_BODY}"
STATS_BODY = (
    "Avg prompt throughput: 12.5 tokens/s, Avg generation throughput: 1840.2 tokens/s, "
    "Running: 64 reqs, Waiting: 12 reqs, GPU KV cache usage: 97.4%, Prefix cache hit rate: 41.9%"
)
STATS_VALUES = {PRE: 12.5, GEN: 1840.2, RUN: 64, QUE: 12, USE: 0.974, HIT: 0.419}
STATS_FIELDS = {"Running": 64, "Waiting": 12, "GPU KV cache usage": 97.4}
VLLM_LINE = f"(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] Engine 000: {STATS_BODY}"
SG_TS = datetime(2026, 5, 9, 9, 22, 5)
V_TS = datetime(2026, 11, 20, 14, 2, 11)

# (id, line, kind, ts, source, canonical values, typed fields)
GOLDEN = [
    # --- SGLang prefixes ---------------------------------------------------------------
    (
        "sglang-other-logger-level-pid-file",
        "2026-05-09 09:22:05 INFO 4242 [scheduler_metrics_mixin.py:182] Decode batch, "
        + DECODE_BODY,
        "sglang-decode",
        SG_TS,
        "",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-stdlib-asctime-levelname-name",
        "2026-05-09 09:22:05,123 [INFO] sglang.srt.managers.scheduler: Decode batch, "
        + DECODE_BODY,
        "sglang-decode",
        SG_TS.replace(microsecond=123000),
        "",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-0.3-time-only",
        "[09:22:05 TP0] Decode batch. #running-req: 8, #token: 5231, token usage: 0.03, "
        "gen throughput (token/s): 612.44, #queue-req: 0",
        "sglang-decode",
        datetime(2026, 12, 31, 9, 22, 5),
        "TP0",
        {RUN: 8, KV: 5231, USE: 0.03, GEN: 612.44, QUE: 0},
        {"#token": 5231},
    ),
    (
        "sglang-diffusion-yearless",
        f"[05-09 09:22:05] Decode batch, {DECODE_BODY}",
        "sglang-decode",
        SG_TS,
        "",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-jax-fork-cache-miss",
        f"[2026-05-09 09:22:05 TP0] Decode batch, {DECODE_BODY}, #cache_miss: 7",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        {**DECODE_FIELDS, "#cache_miss": 7},
    ),
    (
        "sglang-0.5.3-pd-prefill-no-running-req",
        "[2025-10-20 10:00:00] Prefill batch. #new-seq: 1, #new-token: 28, #cached-token: 0, "
        "token usage: 0.00, #unbootstrapped-req: 2, #queue-req: 1, #transferring-req: 3, "
        "input throughput (token/s): 812.30, ",
        "sglang-prefill",
        datetime(2025, 10, 20, 10, 0, 0),
        "",
        {QUE: 1, PRE: 812.3, USE: 0.0},
        {"#unbootstrapped-req": 2, "#transferring-req": 3, "#new-token": 28},
    ),
    (
        "sglang-0.5.9-prefill-throughput-before-graph",
        "[2026-02-10 10:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, "
        "token usage: 0.31, #running-req: 14, #queue-req: 5, input throughput (token/s): "
        "18342.07, cuda graph: False",
        "sglang-prefill",
        datetime(2026, 2, 10, 10, 0, 0),
        "",
        {PRE: 18342.07, RUN: 14, QUE: 5, USE: 0.31},
        {"cuda graph": False, "#new-seq": 2},
    ),
    (
        "sglang-0.5.10-prefill-graph-before-throughput",
        "[2026-04-10 10:00:00] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: 0, "
        "token usage: 0.31, #running-req: 14, #queue-req: 5, cuda graph: False, input "
        "throughput (token/s): 18342.07",
        "sglang-prefill",
        datetime(2026, 4, 10, 10, 0, 0),
        "",
        {PRE: 18342.07, RUN: 14, QUE: 5, USE: 0.31},
        {"cuda graph": False},
    ),
    (
        "sglang-0.5.11-prefill-pending-token",
        "[2026-05-10 10:00:00 TP0] Prefill batch, #new-seq: 2, #new-token: 8192, #cached-token: "
        "0, token usage: 0.31, #running-req: 14, #queue-req: 5, #pending-token: 20480, cuda "
        "graph: False, input throughput (token/s): 18342.07",
        "sglang-prefill",
        datetime(2026, 5, 10, 10, 0, 0),
        "TP0",
        {PRE: 18342.07, RUN: 14, QUE: 5, USE: 0.31},
        {"#pending-token": 20480},
    ),
    (
        "sglang-json-logger",
        '{"asctime": "2026-05-09 09:22:05,123", "levelname": "INFO", "name": '
        '"sglang.srt.managers.scheduler_metrics_mixin", "process": 4242, "message": '
        f'"Decode batch, {DECODE_BODY}"}}',
        "sglang-decode",
        SG_TS.replace(microsecond=123000),
        "",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    # --- SGLang inside wrappers ------------------------------------------------------------
    (
        "sglang-docker-timestamps",
        f"2026-05-12T08:01:39.331095044Z {SGLANG_LINE}",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-log-viewer",
        f"2025-05-30 09:55:29.284 | INFO     | {SGLANG_LINE}",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-journald",
        f"Dec 01 10:00:00 gpu1 python3[4242]: {SGLANG_LINE}",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-outer-stamp",
        f"[2026-05-12 08:01:39] {SGLANG_LINE}",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    (
        "sglang-tqdm-glued-in-front",
        f"Capturing batches (bs=8): 100%|██████████| 36/36 [00:05<00:00,  6.9it/s]\r{SGLANG_LINE}",
        "sglang-decode",
        SG_TS,
        "TP0",
        DECODE_VALUES,
        DECODE_FIELDS,
    ),
    # --- vLLM prefixes ---------------------------------------------------------------------
    (
        "vllm-nested-process-tags",
        "(EngineCore_0 pid=11) (VllmWorker TP1 pid=12) INFO 11-20 14:02:11 [loggers.py:259] "
        f"Engine 000: {STATS_BODY}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-omni-stage",
        "(APIServer pid=7) [Stage-1] INFO 11-20 14:02:11 [loggers.py:259] Engine 000: "
        + STATS_BODY,
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-ray-engine-background",
        "(_EngineBackgroundProcess pid=88) INFO 11-20 14:02:11 [loggers.py:259] Engine 000: "
        + STATS_BODY,
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-ray-serve-replica",
        "(ServeReplica:app:LLMServer:model pid=99) INFO 11-20 14:02:11 [loggers.py:259] Engine "
        f"000: {STATS_BODY}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-ray-worker-repeated",
        "(RayWorkerProc pid=77, ip=10.0.0.2) INFO 11-20 14:02:11 [loggers.py:259] Engine 000: "
        f"{STATS_BODY} [repeated 2x across cluster]",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        {**STATS_FIELDS, "Prefix cache hit rate": 41.9},
    ),
    (
        "vllm-fileinfo-path",
        "(APIServer pid=7) INFO 11-20 14:02:11 [v1/metrics/loggers.py:259] Engine 000: "
        + STATS_BODY,
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-0.33-coloured",
        "\x1b[0;36m(APIServer pid=7)\x1b[0;0m \x1b[32mINFO\x1b[0;0m "
        "\x1b[90m11-20 14:02:11\x1b[0;0m \x1b[90m[loggers.py:259]\x1b[0;0m Engine 000: "
        + STATS_BODY,
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-0.33-json",
        '{"asctime": "2026-11-20 14:02:11,123", "levelname": "INFO", "name": '
        '"vllm.v1.metrics.loggers", "processName": "APIServer", "process": 7, "message": '
        f'"Engine 000: {STATS_BODY}"}}',
        "vllm-stats",
        V_TS.replace(microsecond=123000),
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-aggregated",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:335] 2 Engines Aggregated: "
        + STATS_BODY,
        "vllm-stats",
        V_TS,
        "2 Engines Aggregated",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    # --- vLLM backends and spec lines ------------------------------------------------------
    (
        "vllm-v0-cpu-backend-kv-usage",
        "INFO 12-20 10:00:07 metrics.py:467] Avg prompt throughput: 51.2 tokens/s, Avg "
        "generation throughput: 8.9 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 1 "
        "reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 35.2%.",
        "vllm-stats",
        datetime(2026, 12, 20, 10, 0, 7),
        "",
        {PRE: 51.2, GEN: 8.9, RUN: 2, QUE: 1, USE: 0.352},
        {"GPU KV cache usage": 0.0, "CPU KV cache usage": 35.2, "Swapped": 0},
    ),
    (
        "vllm-v0-gpu-server-swap-is-not-usage",
        "INFO 12-20 10:00:07 metrics.py:467] Avg prompt throughput: 51.2 tokens/s, Avg "
        "generation throughput: 8.9 tokens/s, Running: 2 reqs, Swapped: 1 reqs, Pending: 1 "
        "reqs, GPU KV cache usage: 99.1%, CPU KV cache usage: 2.5%.",
        "vllm-stats",
        datetime(2026, 12, 20, 10, 0, 7),
        "",
        {PRE: 51.2, GEN: 8.9, RUN: 2, QUE: 1, USE: 0.991},
        {"CPU KV cache usage": 2.5},
    ),
    (
        "vllm-v0-cpu-backend-prefix-cache",
        "INFO 12-20 10:00:07 metrics.py:470] Prefix cache hit rate: GPU: 0.00%, CPU: 45.00%",
        "vllm-prefix-cache",
        datetime(2026, 12, 20, 10, 0, 7),
        "",
        {HIT: 0.45},
        {"GPU": 0.0, "CPU": 45.0},
    ),
    (
        "vllm-2025-09-dev-spec-order",
        "(APIServer pid=7) INFO 09-20 14:02:11 [metrics.py:104] SpecDecoding metrics: Draft "
        "acceptance rate: 88.8%, Mean acceptance length: 2.45, Accepted throughput: 120.50 "
        "tokens/s, Drafted throughput: 135.70 tokens/s, Accepted: 1205 tokens, Drafted: 1357 "
        "tokens, Per-position acceptance rate: 0.950, 0.880, 0.810",
        "vllm-spec",
        datetime(2026, 9, 20, 14, 2, 11),
        "",
        {RATE: 0.888, LEN: 2.45},
        {"Per-position acceptance rate": (0.95, 0.88, 0.81), "Accepted throughput": 120.5},
    ),
    (
        "vllm-v0-speculative-fraction",
        "INFO 12-20 10:00:07 spec_decode_worker.py:1000] Speculative metrics: Draft acceptance "
        "rate: 0.200, System efficiency: 0.150, Number of speculative tokens: 3, Number of "
        "accepted tokens: 360, Number of draft tokens: 1800, Number of emitted tokens: 900.",
        "vllm-spec",
        datetime(2026, 12, 20, 10, 0, 7),
        "",
        {RATE: 0.2},
        {"System efficiency": 0.15, "Number of emitted tokens": 900},
    ),
    # --- vLLM inside wrappers --------------------------------------------------------------
    (
        "vllm-docker-timestamps",
        f"2026-05-12T08:01:39.331095044Z {VLLM_LINE}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-log-viewer",
        f"2025-05-30 09:55:29.284 | INFO     | {VLLM_LINE}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-journald",
        f"Nov 20 14:02:11 gpu1 python3[7]: {VLLM_LINE}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-outer-stamp",
        f"[2026-11-20 14:02:11] {VLLM_LINE}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
    (
        "vllm-tqdm-glued-in-front",
        f"Processed prompts: 100%|██████████| 4/4 [00:01<00:00,  2.10it/s]\r{VLLM_LINE}",
        "vllm-stats",
        V_TS,
        "Engine 000",
        STATS_VALUES,
        STATS_FIELDS,
    ),
]


WRAPPERS = ("docker", "log-viewer", "journald", "outer", "tqdm")


def wrapped(line: str) -> bool:
    """Whether a golden line is one wrapped in another program's line."""
    return any(c[1] == line and c[0].split("-", 1)[1].startswith(WRAPPERS) for c in GOLDEN)


def approx(value: object) -> object:
    return pytest.approx(value) if isinstance(value, float) else value


@pytest.mark.parametrize("case", GOLDEN, ids=[c[0] for c in GOLDEN])
@pytest.mark.parametrize("cleaned", [False, True], ids=["raw", "cleaned"])
def test_every_drifted_shape_is_read_with_every_value(case: tuple, cleaned: bool) -> None:
    """Raw text (escapes, carriage returns) and the text babysit shows give the same record."""
    line, kind, ts, source, values, fields = case[1:]
    text = whole_lines(line.encode() + b"\n", 0)[0][0] if cleaned else line
    engine = kind.split("-", maxsplit=1)[0]
    for parser in (MetricsParser(engine, reference=REFERENCE), MetricsParser(reference=REFERENCE)):
        (sample,) = parser.records(text, 77)
        assert (sample.kind, sample.engine, sample.ts, sample.source) == (kind, engine, ts, source)
        assert sample.offset == 77
        assert {m: approx(v) for m, v in values.items()} == sample.values
        typed = sample.fields
        for key, value in fields.items():
            assert typed[key] == approx(value), key
        assert "repeated" not in sample.body and "\x1b" not in sample.body
    if not wrapped(line):
        assert MetricsParser(engine, reference=REFERENCE).line_time(text) == ts


def test_a_time_only_stamp_takes_the_runs_date_and_rolls_past_midnight() -> None:
    line = "[00:00:30 TP0] Decode batch. #running-req: 1, gen throughput (token/s): 5.00"
    late = "[23:59:50 TP0] Decode batch. #running-req: 1, gen throughput (token/s): 5.00"
    started = datetime(2024, 9, 1, 23, 59, 0)
    parser = MetricsParser("sglang", reference=REFERENCE, started=started)
    assert parser.records(late, 0)[0].ts == datetime(2024, 9, 1, 23, 59, 50)
    assert parser.records(line, 0)[0].ts == datetime(2024, 9, 2, 0, 0, 30)
    # without a run: the day of the log's last write, the day before for a later time
    evening = MetricsParser("sglang", reference=datetime(2024, 9, 2, 0, 5, 0))
    assert evening.records(late, 0)[0].ts == datetime(2024, 9, 1, 23, 59, 50)
    assert evening.line_time("[00:00:30] Load weight begin.") == datetime(2024, 9, 2, 0, 0, 30)


def test_the_stamps_the_agent_reads_date_the_drifted_lines() -> None:
    from tui.agent.logtime import Dater

    def dater(engine: str) -> Dater:
        return Dater([[s.pattern, s.kind] for s in SPECS[engine].stamps], clock=1.9e9)

    sglang, vllm = dater("sglang"), dater("vllm")
    for case in GOLDEN:
        line = case[1].encode()
        engine = sglang if case[2].startswith("sglang") else vllm
        if wrapped(case[1]):
            continue  # a wrapper's stamp is not the engine's
        assert engine.time(line) is not None, case[0]


@pytest.mark.parametrize(
    "line",
    [
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:259] Engine 000: Iteration(42): 2 "
        "context requests, 4096 context tokens, 30 generation requests, 30 generation tokens, "
        "iteration elapsed time: 41.20 ms, GPU KV cache usage: 12.5%",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:259] Engine 000: MFU: 312.4 "
        "TF/s/device 1450.2 GB/s/device",
        "(APIServer pid=7) INFO 11-20 14:02:11 [loggers.py:259] KV Transfer metrics: "
        "num_successful_transfers: 4, avg_transfer_time: 0.02",
        '{"asctime": "2026-11-20 14:02:11,123", "levelname": "INFO", "message": "Application '
        'startup complete. throughput: n/a"}',
        "2026-05-09 09:22:05 INFO 4242 [scheduler.py:1] Decode batchy, #running-req: 1",
        "[25:61:61 TP0] Decode batch. #running-req: 1",
    ],
    ids=["iteration", "mfu", "kv-transfer", "json-not-metric", "not-a-head", "bad-clock"],
)
def test_lines_that_are_not_stats_give_no_record(line: str) -> None:
    assert MetricsParser(reference=REFERENCE).records(line, 0) == ()


def as_tuple(sample: MetricSample) -> tuple[object, ...]:
    return (sample.kind, sample.ts, sample.source, sample.body, dict(sample.values), sample.fields)


def halves(engine: str) -> list[str]:
    return [c[1] for c in GOLDEN if c[2].startswith(engine)]


def test_two_glued_lines_give_the_two_records_of_their_halves() -> None:
    first = "[2026-05-09 09:22:05 TP0] Prefill batch, #new-seq: 1, #queue-req: 4, "
    (a,) = MetricsParser("sglang").records(first, 0)
    (b,) = MetricsParser("sglang").records(SGLANG_LINE, 0)
    glued = MetricsParser("sglang").records(first + SGLANG_LINE, 5)
    assert [as_tuple(s) for s in glued] == [as_tuple(a), as_tuple(b)]
    assert {s.offset for s in glued} == {5}
    assert glued[0].values[QUE] == 4 and glued[1].values[QUE] == 3
    # a metric line with a non-metric line glued after it keeps its own values
    tail = '[2026-05-09 09:22:06] INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK'
    (alone,) = MetricsParser("sglang").records(SGLANG_LINE + tail, 0)
    assert as_tuple(alone) == as_tuple(b)
    vllm_tail = "(APIServer pid=7) INFO 11-20 14:02:12 [launcher.py:1] Route: /health"
    (v_alone,) = MetricsParser("vllm", reference=REFERENCE).records(VLLM_LINE + vllm_tail, 0)
    (v,) = MetricsParser("vllm", reference=REFERENCE).records(VLLM_LINE, 0)
    assert as_tuple(v_alone) == as_tuple(v)
    # the JSON formatter's objects, two on one line
    (json_line,) = [c[1] for c in GOLDEN if c[0] == "vllm-0.33-json"]
    pair = MetricsParser("vllm", reference=REFERENCE).records(json_line + json_line, 0)
    (one,) = MetricsParser("vllm", reference=REFERENCE).records(json_line, 0)
    assert [as_tuple(s) for s in pair] == [as_tuple(one)] * 2


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["sglang", "vllm"]), st.data())
def test_a_glued_pair_gives_exactly_the_records_of_its_halves(engine: str, data) -> None:
    # two lines the engine printed, a newline lost between them (a wrapper's text in
    # front of the second would land in the first's last value: it is not the engine's)
    pool = [line for line in halves(engine) if not wrapped(line) and not line.startswith("{")]
    first, second = data.draw(st.sampled_from(pool)), data.draw(st.sampled_from(pool))
    parser = MetricsParser(engine, reference=REFERENCE)
    alone = [*parser.records(first, 0), *parser.records(second, 0)]
    glued = MetricsParser(engine, reference=REFERENCE).records(first + second, 0)
    assert [as_tuple(s) for s in glued] == [as_tuple(s) for s in alone]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=400))
def test_no_reader_raises_on_any_text(text: str) -> None:
    for name in ("sglang", "vllm"):
        reader = SPECS[name].reader(reference=REFERENCE, started=datetime(2026, 1, 1))  # type: ignore[misc]
        for sample in reader.records(text, 0):
            sample.fields  # noqa: B018 - typing every field must not raise either
            sample.to_json()
        reader.line_time(text)


NOISE = st.sampled_from(
    [
        "Decode batch",
        "Prefill batch, ",
        "throughput: ",
        "metrics: ",
        "rate: GPU",
        '{"message": ',
        '"asctime": "2026-11-20 14:02:11,1", ',
        "(APIServer pid=7) ",
        "INFO 11-20 14:02:11 [x.py:1] ",
        "[09:22:05 TP0] ",
        "[05-09 09:22:05] ",
        "\x1b[0;36m",
        "\r",
        " [repeated 2x across cluster]",
        "Engine 000: ",
        ": ",
        ", ",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(NOISE, st.text(max_size=8)), max_size=12))
def test_no_line_without_a_stats_head_becomes_a_metric(parts: list[str]) -> None:
    """Text assembled from the heads' own pieces, but missing a whole prefix + head, never
    gives a record; with one, any record is of a known kind and typed without raising."""
    text = "".join(parts)
    for sample in MetricsParser(reference=REFERENCE).records(text, 0):
        assert sample.kind in {
            "sglang-decode",
            "sglang-prefill",
            "vllm-stats",
            "vllm-spec",
            "vllm-prefix-cache",
            "vllm-diffusion",
        }
        assert "Decode batch" in text or "Prefill batch" in text or ": " in sample.body
        sample.to_json()
    heads = ("batch", "throughput: ", "metrics: ", "rate: GPU")
    if not any(head in text for head in heads):
        assert MetricsParser(reference=REFERENCE).records(text, 0) == ()


# --- runtime deaths ---------------------------------------------------------------------

DEATHS = [
    (
        "sglang",
        "[2026-10-30 12:00:00] Rank 0 scheduler died during initialization (exit code: "
        "-9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | "
        "grep -i oom` to check.",
    ),
    (
        "sglang",
        "[2025-06-01 12:00:00] Rank 0 scheduler is dead. Please check if there are relevant logs.",
    ),
    (
        "sglang",
        "[2026-10-30 12:00:00] Subprocess scheduler_0 (pid=4242) crashed with exit code "
        "-9. Triggering SIGQUIT for cleanup...",
    ),
    (
        "vllm",
        "(APIServer pid=7) ERROR 11-20 14:02:11 [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client.",
    ),
    (
        "vllm",
        "(EngineCore pid=8) ERROR 11-20 14:02:11 [multiproc_executor.py:150] Worker proc "
        "Worker_TP0 died unexpectedly (exit code: -9), shutting down executor.",
    ),
    ("vllm", "RuntimeError: Engine core process EngineCore died unexpectedly."),
]


@pytest.mark.parametrize(
    ("engine", "line"), DEATHS, ids=[f"{e}-{i}" for i, (e, _) in enumerate(DEATHS)]
)
def test_a_written_log_with_a_death_line_is_told_and_fails_a_launch(
    tmp_path: Path, engine: str, line: str
) -> None:
    """The line, read from a log file, gives the death-line hint and ends a launch's wait
    as failed (it is among the failure lines, and tells the reason)."""
    log = tmp_path / "serve.log"
    log.write_text(f"{SGLANG_LINE if engine == 'sglang' else VLLM_LINE}\n{line}\nafter\n")
    watch = ServingWatch(engine, wedged_after=120.0)
    for text, offset in whole_lines(log.read_bytes(), 0):
        watch.line(text, offset)
    death = watch.death_line(running=False)
    assert death is not None and death.text == line
    hint = death_line(death)
    assert hint is not None and hint.rule is HintRule.DEATH_LINE and line in hint.evidence[0]
    assert any(needle in line for needle in failure_lines(engine))
    assert any(needle in line for needle in telling_lines(engine))
