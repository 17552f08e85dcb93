"""llama-server's log read by :mod:`tui.engines.llamacpp`: every shape of metric line, its
stamps and its prefixes, and the spec's ready and failure lines in startup logs.

The lines are built here with llama.cpp's own printf formats (``tools/server``'s
``SLT_INF``/``SRV_INF`` prefixes, ``print_timings``, ``common/log.cpp``'s stamp, the 2024
``server_log``), copied from the sources into this file; values are invented.
"""

# The lines are printed with llama.cpp's own printf formats, hence "%" throughout.
# ruff: noqa: UP031

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.metrics.model import Metric
from tui.engines import SPECS, Engine, of_program, readable
from tui.engines.llamacpp import (
    HEADER_SPAN,
    KIND_PROGRESS,
    KIND_PROMPT,
    KIND_SPEC,
    KIND_TIMING,
    SPEC,
    LlamaCppReader,
)

pytestmark = pytest.mark.unit

GEN = Metric.GEN_THROUGHPUT
PRE = Metric.PREFILL_THROUGHPUT
RATE = Metric.ACCEPT_RATE
LEN = Metric.ACCEPT_LEN

STARTED = datetime(2026, 11, 30, 9, 0, 0)
REFERENCE = datetime(2026, 12, 1, 12, 0, 0)

# ---- llama.cpp's formats ------------------------------------------------------------

PROMPT_EVAL = (
    "prompt eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)"
)
EVAL = "       eval time = %10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)"
TOTAL = "      total time = %10.2f ms / %5d tokens"
GRAPHS = "   graphs reused = %10d"
DRAFT_2025 = "draft acceptance rate = %0.5f (%5d accepted / %5d generated)"
DRAFT_LEN = "draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f"
DRAFT_POS = (
    "draft acceptance = %0.5f (%5d accepted / %5d generated), mean acceptance length = %5.2f, "
    "acceptance rate per position = (%s)"
)
N_GEN = "n_gen = %6d, tg = %6.2f t/s, tg_3s = %6.2f t/s"
N_DECODED = "n_decoded = %6d, tg = %6.2f t/s, tg_3s = %6.2f t/s"
N_DECODED_OLD = "n_decoded = %6d, tg = %6.2f t/s"
PROMPT_PROGRESS = (
    "prompt processing, n_tokens = %6d, progress = %.2f, t = %6.2f s / %.2f tokens per second"
)
# 2024 server.cpp's buffers for server_log
#: 2024 aligns the prompt line with the generation line
PROMPT_EVAL_2024 = PROMPT_EVAL.replace("time = ", "time     = ")
GEN_EVAL_2024 = (
    "generation eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)"
)
# llama.cpp's llama_perf_context_print, as llama-cpp-python's server prints it
PERF_EVAL = (
    "%s:        eval time = %10.2f ms / %5d runs   (%8.2f ms per token, %8.2f tokens per second)"
)


def slot(func: str, slot_id: int, task: int, text: str) -> str:
    """``SLT_INF``: ``"slot %12.*s: id %2d | task %d | " fmt``."""
    return "slot %12s: id %2d | task %d | " % (func[:12], slot_id, task) + text


def srv(func: str, text: str) -> str:
    """``SRV_INF``: ``"srv  %12.*s: " fmt``."""
    return "srv  %12s: " % func[:12] + text


def stamp(micros: int, level: str = "I") -> str:
    """``common/log.cpp`` with ``--log-prefix --log-timestamps``."""
    return "%d.%02d.%03d.%03d %s " % (
        micros // 1000000 // 60,
        micros // 1000000 % 60,
        micros // 1000 % 1000,
        micros % 1000,
        level,
    )


def server_log_2024(function: str, message: str, extra: dict[str, object]) -> str:
    """2024's ``server_log``: ``"%4s [%24s] %s"`` then `` |`` and ``key=value`` sorted by key."""
    log = {"tid": '"140234"', "timestamp": 1717000000, **extra}
    tail = "".join(f" {key}={log[key]}" for key in sorted(log))
    return "%4s [%24s] %s |%s" % ("INFO", function, message, tail)


def read(*lines: str, started: datetime | None = STARTED, reference=REFERENCE):
    reader = LlamaCppReader(reference=reference, started=started)
    return [list(reader.records(line, offset)) for offset, line in enumerate(lines)]


def only(line: str, **kw):
    (samples,) = read(line, **kw)
    assert len(samples) == 1, samples
    return samples[0]


# ---- golden lines --------------------------------------------------------------------


def test_2026_prefixed_timing_lines_each_give_their_throughput_slot_task_and_time():
    at = 132 * 60_000_000 + 15_702_022
    lines = [
        stamp(at) + slot("print_timing", 0, 9161, PROMPT_EVAL % (8476.55, 1938, 4.37, 228.63)),
        stamp(at + 12) + slot("print_timing", 0, 9161, EVAL % (319.58, 10, 31.96, 31.29)),
        stamp(at + 20) + slot("print_timing", 0, 9161, TOTAL % (8796.13, 1948)),
        stamp(at + 25) + slot("print_timing", 0, 9161, GRAPHS % 98),
    ]
    prompt, gen, total, graphs = read(*lines)
    assert total == [] and graphs == []
    (p,) = prompt
    assert p.kind == KIND_TIMING and p.engine == "llamacpp"
    assert p.values == {PRE: 228.63}
    assert p.raw == {
        "slot": "0",
        "task": "9161",
        "phase": "prompt eval",
        "time": "8476.55 ms",
        "tokens": "1938",
        "ms per token": "4.37",
        "tokens per second": "228.63",
    }
    assert p.fields["tokens"] == 1938 and p.fields["time"] == 8476.55
    assert p.ts == STARTED + timedelta(minutes=132, seconds=15, milliseconds=702, microseconds=22)
    assert p.offset == 0 and p.source == "" and SPEC.series_label(p.source) == ""
    (g,) = gen
    assert g.values == {GEN: 31.29}
    assert g.raw["phase"] == "eval" and g.raw["tokens"] == "10"
    assert g.ts == STARTED + timedelta(microseconds=at + 12)
    assert (
        g.body == "eval time =     319.58 ms /    10 tokens "
        "(   31.96 ms per token,    31.29 tokens per second)"
    )


def test_2025_header_gives_its_slot_task_and_time_to_the_unprefixed_lines_after_it():
    at = 5_093_470
    lines = [
        stamp(at) + slot("print_timing", 1, 124, ""),
        PROMPT_EVAL % (5093.47, 1360, 3.75, 267.01),
        EVAL % (319.58, 10, 31.96, 31.29),
        TOTAL % (5413.05, 1370),
        DRAFT_2025 % (0.23026, 70, 304),
    ]
    header, prompt, gen, total, draft = read(*lines)
    assert header == [] and total == []
    for samples in (prompt, gen, draft):
        (sample,) = samples
        assert sample.raw["slot"] == "1" and sample.raw["task"] == "124"
        assert sample.ts == STARTED + timedelta(microseconds=at)
    assert prompt[0].values == {PRE: 267.01}
    assert gen[0].values == {GEN: 31.29}
    assert draft[0].kind == KIND_SPEC
    assert draft[0].values == {RATE: 0.23026}
    assert draft[0].raw == {
        "slot": "1",
        "task": "124",
        "draft acceptance": "0.23026",
        "accepted": "70",
        "generated": "304",
    }


def test_a_header_applies_to_the_next_lines_only():
    lines = [stamp(1000) + slot("print_timing", 2, 7, "")]
    lines += [srv("update_slots", "all slots are idle")] * HEADER_SPAN
    lines.append(EVAL % (319.58, 10, 31.96, 31.29))
    *_, late = read(*lines, reference=REFERENCE)
    (sample,) = late
    assert "slot" not in sample.raw and sample.ts == REFERENCE


def test_2024_timings_read_the_key_value_tail_for_slot_and_task():
    prompt = server_log_2024(
        "print_timings",
        PROMPT_EVAL_2024 % (925.78, 24, 38.57, 25.93),
        {
            "id_slot": 0,
            "id_task": 3,
            "t_prompt_processing": 925.78,
            "n_prompt_tokens_processed": 24,
            "t_token": 38.57,
            "n_tokens_second": 25.925,
        },
    )
    gen = server_log_2024(
        "print_timings",
        GEN_EVAL_2024 % (4178.32, 31, 134.78, 7.42),
        {"id_slot": 0, "id_task": 3, "t_token_generation": 4178.32, "n_decoded": 31},
    )
    assert prompt.startswith("INFO [           print_timings] prompt eval time     =")
    p, g = (only(line) for line in (prompt, gen))
    assert p.values == {PRE: 25.93} and g.values == {GEN: 7.42}
    assert (p.raw["slot"], p.raw["task"]) == ("0", "3")
    assert g.raw["phase"] == "generation eval" and g.raw["tokens"] == "31"
    assert p.ts == REFERENCE  # 2024 lines carry no elapsed stamp


def test_pre_2024_slot_id_task_id_keys_are_read_too():
    line = server_log_2024(
        "print_timings", PROMPT_EVAL % (10.0, 5, 2.0, 500.0), {"slot_id": 4, "task_id": 9}
    )
    sample = only(line)
    assert (sample.raw["slot"], sample.raw["task"]) == ("4", "9")


@pytest.mark.parametrize(
    ("fmt", "args", "value", "counter"),
    [
        (N_GEN, (300, 99.66, 97.12), 97.12, "n_gen"),
        (N_DECODED, (300, 99.66, 97.12), 97.12, "n_decoded"),
        (N_DECODED_OLD, (400, 88.5), 88.5, "n_decoded"),
    ],
)
def test_decoding_progress_gives_the_recent_rate_else_the_average(fmt, args, value, counter):
    sample = only(stamp(43_627_623) + slot("print_timing", 0, 144, fmt % args))
    assert sample.kind == KIND_PROGRESS
    assert sample.values == {GEN: value}
    assert sample.raw[counter] == str(args[0])
    assert sample.raw["tg"] == f"{args[1]:.2f} t/s"
    assert ("tg_3s" in sample.raw) == (len(args) == 3)


def test_prompt_processing_progress_gives_the_prefill_rate():
    line = stamp(45_919_641) + slot(
        "print_timing", 0, 8, PROMPT_PROGRESS % (822, 1.0, 3.30, 248.95)
    )
    sample = only(line)
    assert sample.kind == KIND_PROMPT
    assert sample.values == {PRE: 248.95}
    assert sample.raw["n_tokens"] == "822" and sample.raw["progress"] == "1.00"
    assert sample.raw["t"] == "3.30 s"
    assert sample.fields["progress"] == 1.0


def test_2026_acceptance_lines_give_rate_and_mean_length():
    mean_len = only(stamp(1) + slot("print_timing", 0, 42, DRAFT_LEN % (0.355, 116, 327, 2.40)))
    assert mean_len.values == {RATE: 0.355, LEN: 2.40}
    assert mean_len.raw["mean len"] == "2.40"
    per_position = only(
        stamp(2)
        + slot("print_timing", 0, 42, DRAFT_POS % (0.66237, 257, 388, 3.65, "0.804, 0.701, 0.629"))
    )
    assert per_position.values == {RATE: 0.66237, LEN: 3.65}
    assert per_position.raw["acceptance rate per position"] == "0.804, 0.701, 0.629"
    assert per_position.fields["acceptance rate per position"] == (0.804, 0.701, 0.629)


def test_a_router_prefix_names_the_child_and_its_stamp_is_not_placed():
    for port in (8080, 57409):
        line = "[%5d] " % port + stamp(5_000_000) + slot("print_timing", 0, 1, EVAL % (1, 1, 1, 50))
        sample = only(line)
        assert sample.source == f"port {port}" == SPEC.series_label(sample.source)
        assert sample.raw["port"] == str(port)
        assert sample.ts == REFERENCE
        assert LlamaCppReader(started=STARTED).line_time(line) is None


def test_coloured_prefix_is_stripped():
    line = "\x1b[34m0.16.519.187\x1b[0m \x1b[32mI \x1b[0m" + slot(
        "print_timing", 0, 42, EVAL % (3133.20, 353, 8.88, 112.66)
    )
    sample = only(line)
    assert sample.values == {GEN: 112.66}
    assert sample.ts == STARTED + timedelta(seconds=16, milliseconds=519, microseconds=187)
    assert LlamaCppReader(started=STARTED).line_time(line) == sample.ts
    assert re.match(SPEC.stamps[0].pattern, line) is not None


def test_two_glued_lines_give_two_records_each_with_its_own_values():
    first = stamp(1_000) + slot("print_timing", 0, 42, PROMPT_EVAL % (714.79, 1091, 0.66, 1526.33))
    second = stamp(2_000) + slot("print_timing", 3, 43, EVAL % (3133.20, 353, 8.88, 112.66))
    a, b = read(first + second)[0]
    assert a.values == {PRE: 1526.33} and (a.raw["slot"], a.raw["task"]) == ("0", "42")
    assert b.values == {GEN: 112.66} and (b.raw["slot"], b.raw["task"]) == ("3", "43")
    assert a.ts == STARTED + timedelta(microseconds=1_000)
    assert b.ts == STARTED + timedelta(microseconds=2_000)


def test_llama_perf_lines_of_llama_cpp_python_are_timings():
    sample = only(PERF_EVAL % ("llama_perf_context_print", 4178.32, 31, 134.78, 7.42))
    assert sample.values == {GEN: 7.42} and sample.raw["tokens"] == "31"


@pytest.mark.parametrize("text", ["nan", "-nan", "inf"])
def test_a_line_whose_only_value_is_not_finite_is_no_sample(text):
    line = (
        "       eval time =       0.00 ms /     0 tokens "
        "(     nan ms per token, %8s tokens per second)" % text
    )
    assert read(line) == [[]]


def test_without_started_or_stamp_the_time_is_the_reference_else_the_clock():
    line = slot("print_timing", 0, 1, EVAL % (1, 1, 1, 50))
    assert only(line).ts == REFERENCE
    assert only(stamp(5) + line, started=None).ts == REFERENCE
    now = datetime(2026, 12, 1, 13, 0, 0)
    reader = LlamaCppReader(clock=lambda: now)
    (sample,) = reader.records(line, None)
    assert sample.ts == now and sample.offset is None


def test_line_time_places_the_stamp_after_started_and_none_else():
    line = stamp(61_002_003, "W") + srv("update_slots", "all slots are idle")
    assert LlamaCppReader(started=STARTED).line_time(line) == STARTED + timedelta(
        minutes=1, seconds=1, milliseconds=2, microseconds=3
    )
    assert LlamaCppReader().line_time(line) is None
    assert (
        LlamaCppReader(started=STARTED).line_time("srv  update_slots: all slots are idle") is None
    )
    huge = "99999999999999.00.000.000 I x"
    assert LlamaCppReader(started=STARTED).line_time(huge) is None


# ---- what is not a metric ------------------------------------------------------------

CHATTER = [
    "build: 6543 (1a2b3c4d) with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu",
    "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16",
    "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 15",
    "main: loading model",
    srv("load_model", "loading model '/models/qwen2.5-7b-instruct-q4_k_m.gguf'"),
    "llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors from /m.gguf",
    "llama_model_loader: - kv   0:                       general.architecture str = qwen2",
    "llama_model_loader: - type  f32:  141 tensors",
    "print_info: file type   = Q4_K - Medium",
    "print_info: n_ctx_train      = 32768",
    "load_tensors: loading model tensors, this can take a while... (mmap = true)",
    "load_tensors: offloaded 29/29 layers to GPU",
    "load_tensors:        CUDA0 model buffer size =  4168.09 MiB",
    "llama_context: constructing llama_context",
    "llama_context: n_ctx         = 4096",
    "llama_kv_cache_unified:      CUDA0 KV buffer size =   224.00 MiB",
    "llama_context:      CUDA0 compute buffer size =   304.00 MiB",
    "common_init_from_params: warming up the model with an empty run - please wait ...",
    srv("init", "initializing slots, n_slots = 1"),
    slot("init", 0, -1, "new slot n_ctx_slot = 4096"),
    "main: model loaded",
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    srv("update_slots", "all slots are idle"),
    slot("launch_slot_", 0, 0, "processing task"),
    slot("update_slots", 0, 0, "new prompt, n_ctx_slot = 4096, n_keep = 0, n_prompt_tokens = 26"),
    slot(
        "update_slots",
        0,
        0,
        "prompt processing progress, n_past = 26, n_tokens = 26, progress = 1.000000",
    ),
    slot("update_slots", 0, 0, "prompt done, n_past = 26, n_tokens = 26"),
    slot("release", 0, 0, "stop processing: n_past = 125, truncated = 0"),
    TOTAL % (450.0, 126),
    GRAPHS % 98,
    srv("log_server_r", "request: POST /v1/chat/completions 127.0.0.1 200"),
    "llama_perf_context_print:        load time =    1234.56 ms",
    "llama_perf_sampler_print:    sampling time =       5.12 ms /    32 runs   (    0.16 ms per "
    "token,  6250.00 tokens per second)",
    "statistics        draft-mtp: #calls(b,g,a) =    2    134    134, #gen drafts =    134, "
    "#acc drafts =   109, #gen tokens =    536, #acc tokens =   354, #mean acc len = 3.64",
    server_log_2024("main", "HTTP server listening", {"hostname": '"127.0.0.1"', "port": '"8080"'}),
    server_log_2024("update_slots", "all slots are idle", {}),
    "ggml_cuda_init: found 1 CUDA devices:",
    "  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes",
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    'INFO:     127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK',
    "[2026-01-02 03:04:05] Decode batch. #running-req: 1, gen throughput (token/s): 9.1",
    "INFO 01-02 03:04:05 [loggers.py:1] Engine 000: Avg prompt throughput: 1.0 tokens/s",
]
PREFIXES = ["", stamp(1_234_567), stamp(99 * 60_000_000, "W"), "[ 8080] ", "[ 8080] " + stamp(7)]


@pytest.mark.parametrize("line", CHATTER)
def test_chatter_is_no_metric(line):
    assert read(line) == [[]]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(PREFIXES), st.sampled_from(CHATTER), st.text(max_size=40)),
        max_size=8,
    )
)
def test_no_prefixed_or_mangled_chatter_becomes_a_metric(parts):
    reader = LlamaCppReader(reference=REFERENCE, started=STARTED)
    for prefix, line, noise in parts:
        assert list(reader.records(prefix + line + noise, 0)) == []


METRIC_LINES = [
    stamp(5) + slot("print_timing", 0, 1, PROMPT_EVAL % (1.0, 2, 3.0, 4.0)),
    stamp(1, "I") + slot("print_timing", 0, 1, ""),
    EVAL % (1.0, 2, 3.0, 4.0),
    DRAFT_POS % (0.5, 1, 2, 1.5, "0.5"),
    "[ 8080] " + slot("print_timing", 0, 1, N_GEN % (1, 2.0, 3.0)),
    PROMPT_PROGRESS % (1, 0.5, 2.0, 3.0),
]


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(st.text(), st.sampled_from(METRIC_LINES), st.sampled_from(CHATTER)), max_size=10
    ),
    st.booleans(),
)
def test_records_and_line_time_never_raise(lines, with_started):
    reader = LlamaCppReader(started=STARTED if with_started else None, reference=REFERENCE)
    for index, line in enumerate(lines):
        cut = line[: len(line) // 2 + index % 3]
        for text in (line, cut, line + line):
            for sample in reader.records(text, index):
                assert sample.values and all(v - v == 0 for v in sample.values.values())
            reader.line_time(text)


# ---- the spec ------------------------------------------------------------------------

STARTUP_2025 = [
    "build: 5960 (a1b2c3d4) with cc (GCC) 13.2.0 for x86_64-linux-gnu",
    "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16",
    "main: HTTP server is listening, hostname: 127.0.0.1, port: 8080, http threads: 15",
    "main: loading model",
    srv("load_model", "loading model '/models/m.gguf'"),
    "llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors from /m.gguf",
    "load_tensors: loading model tensors, this can take a while... (mmap = true)",
    "llama_context: constructing llama_context",
    "llama_kv_cache_unified:      CUDA0 KV buffer size =   224.00 MiB",
    "common_init_from_params: warming up the model with an empty run - please wait ...",
    "main: model loaded",
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    srv("update_slots", "all slots are idle"),
]
STARTUP_2026 = [
    stamp(1_000) + "build: 7100 (0f1e2d3c) with GNU 14.2.0 for Linux x86_64",
    stamp(2_000) + "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16",
    stamp(3_000) + srv("load_model", "loading model '/models/m.gguf'"),
    stamp(4_000) + "load_tensors: loading model tensors, this can take a while... (mmap = true)",
    stamp(5_000) + "llama_kv_cache:      CUDA0 KV buffer size =   224.00 MiB",
    stamp(6_000) + "common_init_from_params: warming up the model with an empty run",
    stamp(7_000) + srv("main", "model loaded"),
    stamp(8_000) + srv("main", "listening on http://127.0.0.1:8080"),
]
STARTUP_2024 = [
    server_log_2024("main", "build info", {"build": 3000, "commit": '"abc1234"'}),
    server_log_2024("main", "system info", {"n_threads": 8}),
    server_log_2024("main", "HTTP server listening", {"hostname": '"127.0.0.1"', "port": '"8080"'}),
    "llama_model_loader: loaded meta data with 29 key-value pairs and 339 tensors from /m.gguf",
    "llm_load_tensors: ggml ctx size =    0.30 MiB",
    "llama_new_context_with_model: n_ctx      = 4096",
    server_log_2024("main", "model loaded", {}),
    server_log_2024("update_slots", "all slots are idle", {}),
]
OOM = [
    "load_tensors: loading model tensors, this can take a while... (mmap = true)",
    "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 40960.00 MiB on device 0: "
    "cudaMalloc failed: out of memory",
    "alloc_tensor_range: failed to allocate CUDA0 buffer of size 42949672960",
    "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
    "llama_model_load_from_file_impl: failed to load model",
    srv("load_model", "failed to load model, '/models/m.gguf'"),
    srv("operator()", "operator(): cleaning up before exit..."),
    "main: exiting due to model loading error",
]


def first_with(lines: list[str], texts: tuple[str, ...]) -> int | None:
    return next((i for i, line in enumerate(lines) if any(t in line for t in texts)), None)


@pytest.mark.parametrize(
    ("log", "ready"), [(STARTUP_2024, 6), (STARTUP_2025, 11), (STARTUP_2026, 7)]
)
def test_ready_is_the_line_after_loading_only_and_the_phases_come_in_order(log, ready):
    assert first_with(log, SPEC.ready) == ready
    assert first_with(log[ready + 1 :], SPEC.ready) is None
    assert first_with(log, SPEC.run_starts) is not None
    assert first_with(log, SPEC.startup_failures + SPEC.deaths) is None
    seen = [first_with(log, phase.lines) for phase in SPEC.phases]
    found = [index for index in seen if index is not None]
    assert len(found) >= 3 and found == sorted(found) and found[-1] < ready


def test_an_out_of_memory_start_fails_and_says_why():
    assert first_with(OOM, SPEC.ready) is None
    assert first_with(OOM, SPEC.startup_failures) == 1
    telling = [line for line in OOM if any(t in line for t in SPEC.telling)]
    assert "cudaMalloc failed: out of memory" in telling[0]


def test_runtime_deaths_are_found():
    for line in (
        "CUDA error: an illegal memory access was encountered",
        "/llama.cpp/src/llama-context.cpp:1004: GGML_ASSERT(n_tokens_all <= n_batch) failed",
        "terminate called after throwing an instance of 'std::runtime_error'",
    ):
        assert any(d in line for d in SPEC.deaths), line


def test_the_registry_knows_llamacpp():
    assert SPECS["llamacpp"] is SPEC and Engine.LLAMACPP.spec is SPEC
    assert SPEC in readable()
    assert of_program(["/opt/llama.cpp/build/bin/llama-server", "-m", "m.gguf"]) is SPEC
    assert of_program(["python3", "-m", "llama_cpp.server", "--model", "m.gguf"]) is SPEC
    assert of_program(["python3", "server.py"]) is not SPEC


def test_aliases_fold_every_spelling_onto_one_destination():
    aliases = SPEC.aliases
    assert aliases["m"] == "model" and aliases["c"] == "ctx_size"
    assert aliases["ngl"] == aliases["gpu_layers"] == "n_gpu_layers"
    assert aliases["md"] == aliases["spec_draft_model"] == "model_draft"
    assert aliases["draft"] == aliases["draft_n"] == aliases["spec_draft_n_max"] == "draft_max"
    assert aliases["np"] == "parallel" and aliases["t"] == "threads"
    assert not set(aliases.values()) & set(aliases)  # no chains
    assert {"model_draft", "draft_max", "draft_min", "spec_type"} <= set(SPEC.spec_keys)
    assert all(word.startswith("-") for word in SPEC.switches)
    assert {"--metrics", "--slots", "--log-prefix", "--log-timestamps", "-cb"} <= SPEC.switches
    assert "-fa" not in SPEC.switches  # takes on|off|auto in current builds


def test_the_stamp_pattern_dates_text_and_bytes_alike():
    (elapsed,) = SPEC.stamps
    line = stamp(132 * 60_000_000 + 15_702_022) + srv("main", "model loaded")
    assert re.match(elapsed.pattern, line).groups() == ("132", "15", "702", "022")
    assert re.match(elapsed.pattern.encode(), line.encode()).groups() == (
        b"132",
        b"15",
        b"702",
        b"022",
    )
    assert re.match(elapsed.pattern, "main: model loaded") is None


def test_prometheus_names_are_llamacpp_own():
    prom = SPEC.prometheus
    names = [*prom.gauges, *prom.rates, *(prom.acceptance or ())]
    assert all(name.startswith(prom.prefix) for name in names) and prom.prefix == "llamacpp:"
    assert prom.gauges["llamacpp:requests_processing"] == (Metric.RUNNING, True)
    assert prom.gauges["llamacpp:requests_deferred"] == (Metric.QUEUED, True)
    assert prom.rates["llamacpp:tokens_predicted_total"] is GEN


# ---------------------------------------------------------------- placed by the run's start


def _run_at(start: float, ticks: int = 777, *, log_size: int):
    """A LIVE assessment of a llama-server (pid 4242, ``ticks``) started at ``start``
    that writes its log: the start as one probe read it."""
    from tui.core.readiness import Ready
    from tui.core.runs import Assessment, LogState, OpenFile, Process, Run
    from tui.core.verdicts import Verdict

    log_file = OpenFile(1, "/srv/llama.log", 64, 9001, deleted=False, write=True, at_log=True)
    root = Process(
        pid=4242,
        ppid=1,
        start_ticks=ticks,
        start_time=start,
        user="root",
        cmdline=("llama-server", "-m", "model.gguf"),
        cwd="/",
        sources=("log",),
        files=(log_file,),
    )
    ready = Ready(seen=True, source="the stamps count from this process's start", anchor=0)
    return Assessment(
        host="gpu",
        service="llama",
        verdict=Verdict.LIVE,
        summary="pid 4242 writes this log; ready",
        checked_at=start + 600,
        run=Run(root=root, members=(), ready=ready),
        log=LogState("/srv/llama.log", True, 64, 9001, size=log_size, mtime=start + 600),
        ready=ready,
        boot_id="b",
    )


def test_a_runs_start_read_again_a_tick_away_places_its_lines_as_before():
    """Each probe reads the run's start afresh; a reading a tick or a slew away is the
    same start (the lines keep their places), a clock stepped by seconds places again."""
    from tui.core.report import ProbeDetails, ServiceFacts

    facts = ServiceFacts("gpu", "llama", engine="llamacpp", intended=None)
    start = datetime(2026, 12, 1, 9, 0, 0).timestamp()
    lines = [
        (stamp(10_000_000 * n) + slot("print_timing", 0, n, EVAL % (1, 1, 1, 50 + n)) + "\n")
        for n in range(1, 4)
    ]
    tail = b""

    def probe(at: float) -> float:
        nonlocal tail
        tail += lines[tail.count(b"\n")].encode()
        report = facts.observe(_run_at(at, log_size=len(tail)), ProbeDetails(tail, 0))
        assert report.metrics is not None
        latest = report.metrics.latest_of(GEN)
        assert latest is not None
        return latest.ts

    assert probe(start) == pytest.approx(start + 10, abs=1e-6)
    assert probe(start + 0.0098) == pytest.approx(start + 20, abs=1e-6)  # a tick away
    assert probe(start + 5) == pytest.approx(start + 5 + 30, abs=1e-6)  # the clock stepped
