"""HF TGI's module: its lines in every shape the launcher and the router print, read.

Golden lines follow the format code of text-generation-inference (launcher
``tracing_subscriber::fmt().compact()`` or ``.json()``; router full format with file
and line, ANSI colour unless ``LOG_COLORIZE=1``, or JSON with ``flatten_event``) and
``tracing-subscriber``'s formatters (dimmed stamp, coloured level padded to five,
italic field names, ``{:?}`` values); values are invented.
"""

from __future__ import annotations

import calendar
import json
import re
from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.metrics.model import Metric
from tui.engines import GENERIC, SPECS, of_program, readable, spec
from tui.engines.spec import StampKind
from tui.engines.tgi import SPEC
from tui.engines.tgi.args import JSON_FORM, LINE_FORM, TEXT_FORM, variant_word
from tui.engines.tgi.lines import seconds, strip_colour

pytestmark = pytest.mark.unit

DIM, RESET, BOLD, ITALIC, GREEN, RED = (
    "\x1b[2m",
    "\x1b[0m",
    "\x1b[1m",
    "\x1b[3m",
    "\x1b[32m",
    "\x1b[31m",
)
STAMP = "2025-05-01T01:31:15.912301Z"
WHEN = datetime(2025, 5, 1, 1, 31, 15, 912301)
HEAD = {h.form: h for h in SPEC.args_heads}


# --- the shapes of a line, as tracing writes them ---------------------------------------


def compact(
    message: str,
    *,
    target: str = "text_generation_launcher",
    span: str = "",
    fields: str = "",
    level: str = " INFO",
    colour: bool = False,
) -> str:
    """The launcher's compact line: stamp, level, span names, target, message, span fields."""
    if not colour:
        spans = f"{span}: " if span else ""
        tail = f" {fields}" if fields else ""
        return f"{STAMP} {level} {spans}{target}: {message}{tail}"
    spans = f"{BOLD}{span}{RESET}{BOLD}:{RESET} " if span else ""
    tail = f" {DIM}{fields}{RESET}" if fields else ""
    return (
        f"{DIM}{STAMP}{RESET} {GREEN}{level}{RESET} {spans}"
        f"{DIM}{target}{RESET}{DIM}:{RESET} {message}{tail}"
    )


def full(
    message: str,
    *,
    span: str = "",
    target: str = "text_generation_router::server",
    file: str = "router/src/server.rs",
    line: int = 2298,
    level: str = " INFO",
    colour: bool = False,
) -> str:
    """The router's full line: stamp, level, spans with their fields, target, file:line, message."""
    if not colour:
        spans = f"{span}: " if span else ""
        return f"{STAMP} {level} {spans}{target}: {file}:{line}: {message}"
    spans = f"{span}{DIM}:{RESET} " if span else ""
    return (
        f"{DIM}{STAMP}{RESET} {GREEN}{level}{RESET} {spans}{DIM}{target}{RESET}{DIM}:{RESET} "
        f"{DIM}{file}{RESET}{DIM}:{RESET}{DIM}{line}:{RESET} {message}"
    )


def router_json(message: str, span: dict | None = None, **extra: object) -> str:
    event: dict[str, object] = {"timestamp": STAMP, "level": "INFO", "message": message}
    event |= {
        "target": "text_generation_router::server",
        "filename": "router/src/server.rs",
        "line_number": 2298,
    }
    if span is not None:
        event |= {"span": span, "spans": [span]}
    return json.dumps(event | extra, ensure_ascii=False, separators=(",", ":"))


def launcher_json(message: str, **extra: object) -> str:
    event = {
        "timestamp": STAMP,
        "level": "INFO",
        "fields": {"message": message},
        "target": "text_generation_launcher",
    }
    return json.dumps(event | extra, separators=(",", ":"))


PARAMETERS = (
    "GenerateParameters { adapter_id: None, best_of: None, temperature: Some(0.7), "
    "repetition_penalty: None, top_k: None, top_p: None, typical_p: None, do_sample: false, "
    'max_new_tokens: Some(20), return_full_text: None, stop: [" total_time=", ": Success"], '
    "truncate: None, watermark: false, details: false, decoder_input_details: false, "
    "seed: None, top_n_tokens: None, grammar: None }"
)
TIMINGS = {
    "total_time": "1.124718s",
    "validation_time": "412.3µs",
    "queue_time": "58.1µs",
    "inference_time": "1.124247s",
    "time_per_token": "56.21ms",
}
SECONDS = {
    "total_time": 1.124718,
    "validation_time": 0.0004123,
    "queue_time": 0.0000581,
    "inference_time": 1.124247,
    "time_per_token": 0.05621,
}


def span_text(colour: bool, timings: dict[str, str] = TIMINGS) -> str:
    """The request span's fields as the full format writes them (recorded after parameters)."""
    pairs = [
        ("parameters", PARAMETERS),
        *((k, f'"{v}"') for k, v in timings.items()),
        ("seed", '"None"'),
    ]
    if colour:
        return " ".join(f"{ITALIC}{k}{RESET}{DIM}={RESET}{v}" for k, v in pairs)
    return " ".join(f"{k}={v}" for k, v in pairs)


def success_full(colour: bool = False, name: str = "generate", **kw: object) -> str:
    fields = span_text(colour)
    span = (
        f"{BOLD}{name}{RESET}{BOLD}{{{RESET}{fields}{BOLD}}}{RESET}"
        if colour
        else f"{name}{{{fields}}}"
    )
    return full("Success", span=span, line=432, colour=colour, **kw)


SUCCESS_SHAPES = {
    "full": success_full(),
    "full-coloured": success_full(colour=True),
    "full-stream": success_full(name="generate_stream"),
    "compact": compact(
        "Success", target="text_generation_router::server", span="generate", fields=span_text(False)
    ),
    "compact-coloured": compact(
        "Success",
        target="text_generation_router::server",
        span="generate",
        fields=span_text(True),
        colour=True,
    ),
    "json-router": router_json(
        "Success", {"parameters": PARAMETERS, **TIMINGS, "seed": "None", "name": "generate"}
    ),
    "json-nested": launcher_json(
        "Success", span={**TIMINGS, "name": "generate"}, spans=[{**TIMINGS, "name": "generate"}]
    ),
}


# --- the registry ----------------------------------------------------------------------


def test_tgi_is_an_engine_of_the_registry_found_by_its_programs() -> None:
    assert SPECS["tgi"] is SPEC and spec("tgi") is SPEC and spec("tgi").title == "TGI"
    assert SPEC in readable()
    for program in (
        "text-generation-launcher",
        "/usr/local/bin/text-generation-router",
        "text-generation-server",
    ):
        assert of_program([program, "--model-id", "m"]) is SPEC
    assert spec("tgi") is not spec(GENERIC)


# --- stamps ---------------------------------------------------------------------------


STAMPED = {
    "compact": compact("Starting Webserver"),
    "compact-coloured": compact("Starting Webserver", colour=True),
    "compact-span": compact("Shard ready in 35.53s", span="shard-manager", fields="rank=0"),
    "full": full("Connected"),
    "full-coloured": full("Connected", colour=True),
    "json-launcher": launcher_json("Starting shard", span={"rank": 0, "name": "shard-manager"}),
    "json-router": router_json("Connected"),
    **{f"success-{k}": v for k, v in SUCCESS_SHAPES.items()},
}


@pytest.mark.parametrize("line", STAMPED.values(), ids=STAMPED.keys())
def test_every_shape_is_stamped_in_utc_as_the_agent_and_core_read_it(line: str) -> None:
    assert all(s.kind == StampKind.UTC for s in SPEC.stamps)
    matches = [re.match(s.pattern, line) for s in SPEC.stamps]
    found = [m for m in matches if m is not None]
    assert len(found) == 1
    assert found[0].groups() == ("2025", "05", "01", "01", "31", "15", "912301")
    as_bytes = [re.match(s.pattern.encode(), line.encode()) for s in SPEC.stamps]
    assert [m is not None for m in as_bytes] == [m is not None for m in matches]


@pytest.mark.parametrize("line", STAMPED.values(), ids=STAMPED.keys())
def test_line_time_is_the_hosts_wall_clock(line: str) -> None:
    assert SPEC.reader(utc_offset=0).line_time(line) == WHEN
    assert SPEC.reader(utc_offset=2 * 3600).line_time(line) == WHEN.replace(hour=3)
    assert SPEC.reader(utc_offset=-2 * 3600).line_time(line) == datetime(
        2025, 4, 30, 23, 31, 15, 912301
    )
    local = datetime.fromtimestamp(calendar.timegm(WHEN.timetuple())).replace(microsecond=912301)
    assert SPEC.reader().line_time(line) == local


def test_lines_without_a_stamp_have_no_time() -> None:
    reader = SPEC.reader(utc_offset=0)
    for line in (
        "",
        '    model_id: "m",',
        "}",
        "Error: ShardCannotStart",
        "2025-13-01T01:31:15.912301Z  INFO x: y",
        '{"timestamp":"soon"}',
        "Traceback (most recent call last):",
    ):
        assert reader.line_time(line) is None
    nine = STAMP.replace(".912301Z", ".912301999Z")
    assert reader.line_time(f"{nine}  INFO x: y") == WHEN


# --- ready, deaths, failures, phases ----------------------------------------------------


def startup(colour: bool) -> list[str]:
    """A healthy run's lines, from the args dump to its first requests."""
    c = {"colour": colour}
    return [
        compact("Args {", **c),
        '    model_id: "m",',
        "}",
        compact("Using attention flashinfer - Prefix caching true", **c),
        compact("Starting check and download process for m", span="download", **c),
        compact("Successfully downloaded weights for m", span="download", **c),
        compact("Starting shard", span="shard-manager", fields="rank=0", **c),
        compact("Waiting for shard to be ready...", span="shard-manager", fields="rank=0", **c),
        compact("Server started at unix:///tmp/text-generation-server-0", **c),
        compact("Shard ready in 35.53s", span="shard-manager", fields="rank=0", **c),
        compact("Starting Webserver", **c),
        full(
            "Warming up model",
            target="text_generation_router_v3",
            file="backends/v3/src/lib.rs",
            line=125,
            **c,
        ),
        compact("Cuda Graphs are enabled for sizes [32, 16, 8, 4, 2, 1]", **c),
        full(
            "Setting max batch total tokens to 52125",
            target="text_generation_router_v3",
            file="backends/v3/src/lib.rs",
            line=137,
            **c,
        ),
        full(
            "Using backend V3",
            target="text_generation_router_v3",
            file="backends/v3/src/lib.rs",
            line=166,
            **c,
        ),
        full("Connected", **c),
        success_full(colour),
        success_full(colour),
    ]


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_the_ready_line_is_the_routers_connected_and_no_line_before_it(colour: bool) -> None:
    lines = startup(colour)
    ready = [i for i, line in enumerate(lines) if any(r in line for r in SPEC.ready)]
    assert ready == [lines.index(full("Connected", colour=colour))]
    assert any(r in router_json("Connected") for r in SPEC.ready)
    assert not any(r in launcher_json("Connecting to the hub") for r in SPEC.ready)


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_a_healthy_run_prints_no_death_and_no_failure(colour: bool) -> None:
    for line in startup(colour):
        assert not any(d in line for d in SPEC.deaths), line
        assert not any(f in line for f in SPEC.startup_failures), line


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_the_phases_come_in_the_order_the_engine_prints_them(colour: bool) -> None:
    seen: list[str] = []
    for line in startup(colour):
        for phase in SPEC.phases:
            if any(text in line for text in phase.lines) and phase.name not in seen:
                seen.append(phase.name)
    assert seen == [p.name for p in SPEC.phases]


def test_the_launchers_failure_lines_are_deaths_or_startup_failures() -> None:
    err = "ERROR"
    deaths = [
        compact("Webserver Crashed", level=err),
        compact(
            "Shard complete standard error output:\n\nTraceback ...",
            span="shard-manager",
            fields="rank=1",
            level=err,
        ),
        compact(
            "Shard process was signaled to shutdown with signal 9",
            span="shard-manager",
            fields="rank=1",
            level=err,
            colour=True,
        ),
    ]
    for line in deaths:
        assert any(d in line for d in SPEC.deaths), line
    failures = [
        compact("Shard 1 failed to start", level=err),
        compact(
            "Download encountered an error: \nOSError: no such model", span="download", level=err
        ),
        "Error: ShardCannotStart",
        "Error: DownloadError",
        'Error: ArgumentValidation("`max_input_tokens`(4096) must be < `max_total_tokens`(2048)")',
        full(
            "Server error: CUDA out of memory. Tried to allocate 2.00 GiB",
            level=err,
            span="warmup{max_input_length=4095 max_prefill_tokens=4096}",
            target="text_generation_router_v3::client",
            file="backends/v3/src/client/mod.rs",
            line=45,
        ),
        'Error: Backend(Warmup(Generation("Not enough memory to handle 4096 prefill tokens. '
        'You need to decrease `--max-batch-prefill-tokens`")))',
    ]
    for line in failures:
        assert any(f in line for f in SPEC.startup_failures), line
        assert any(t in line for t in SPEC.telling), line


def test_a_requests_server_error_while_serving_is_no_death() -> None:
    line = full(
        "Server error: CUDA out of memory",
        level="ERROR",
        span="batch{batch_size=4}:decode:decode{size=4}",
        target="text_generation_router_v3::client",
        file="backends/v3/src/client/mod.rs",
        line=45,
        colour=True,
    )
    assert not any(d in line for d in SPEC.deaths)
    assert any(t in line for t in SPEC.telling)


# --- Prometheus, flags -----------------------------------------------------------------


def test_throughput_queue_and_batch_come_from_the_routers_metrics() -> None:
    prom = SPEC.prometheus
    assert prom.prefix == "tgi_"
    assert prom.gauges["tgi_queue_size"][0] is Metric.QUEUED
    assert prom.gauges["tgi_batch_current_size"][0] is Metric.RUNNING
    assert prom.rates == {
        "tgi_request_generated_tokens_sum": Metric.GEN_THROUGHPUT,
        "tgi_request_input_length_sum": Metric.PREFILL_THROUGHPUT,
    }
    assert all(name.startswith(prom.prefix) for name in (*prom.gauges, *prom.rates))


def test_flags_switches_and_speculation() -> None:
    assert SPEC.aliases == {"p": "port", "e": "env"}
    assert {"--trust-remote-code", "--json-output", "--disable-custom-kernels"} <= SPEC.switches
    assert "--sharded" not in SPEC.switches  # --sharded true|false takes a value
    assert SPEC.spec_keys == ("speculate",)
    assert SPEC.series_label("anything") == ""


# --- Success: one request's timings -----------------------------------------------------


@pytest.mark.parametrize("line", SUCCESS_SHAPES.values(), ids=SUCCESS_SHAPES.keys())
def test_a_success_line_gives_the_requests_timings_in_seconds(line: str) -> None:
    (sample,) = SPEC.reader(utc_offset=0).records(line, 4096, run=3)
    assert sample.engine == "tgi" and sample.kind == "tgi-request"
    assert sample.ts == WHEN and sample.offset == 4096 and sample.run == 3
    assert sample.source == "" and SPEC.series_label(sample.source) == ""
    assert sample.values == {}  # one request is not the server's throughput
    assert sample.fields == pytest.approx(SECONDS)
    assert list(sample.fields) == list(SECONDS)
    assert sample.body == ", ".join(f"{k}: {v}" for k, v in TIMINGS.items())


def test_token_counts_in_the_span_are_kept() -> None:
    timings = {**TIMINGS, "prompt_tokens": "12", "generated_tokens": "20"}
    fields = span_text(False, timings)
    line = full("Success", span=f"chat_completions{{{fields}}}", line=432)
    (sample,) = SPEC.reader(utc_offset=0).records(line, 0)
    assert sample.fields == pytest.approx({**SECONDS, "prompt_tokens": 12, "generated_tokens": 20})
    (json_sample,) = SPEC.reader(utc_offset=0).records(
        router_json("Success", {**timings, "name": "generate"}), 0
    )
    assert json_sample.fields == sample.fields


def test_glued_success_lines_give_one_sample_each_at_its_own_offset() -> None:
    first, second = success_full(colour=True), success_full()
    samples = SPEC.reader(utc_offset=0).records(first + second, 100)
    assert [s.offset for s in samples] == [100, 100 + len(first.encode())]
    assert [s.fields for s in samples] == [pytest.approx(SECONDS)] * 2
    one_json = SUCCESS_SHAPES["json-router"]
    glued = SPEC.reader(utc_offset=0).records(one_json + one_json, None)
    assert len(glued) == 2 and all(s.offset is None for s in glued)
    mixed = SPEC.reader(utc_offset=0).records(compact("Starting Webserver") + second, 0)
    assert [s.offset for s in mixed] == [len(compact("Starting Webserver"))]
    coloured = SUCCESS_SHAPES["compact-coloured"]
    both = SPEC.reader(utc_offset=0).records(coloured + first, 0)
    assert [s.offset for s in both] == [0, len(coloured.encode())]


@pytest.mark.parametrize(
    ("printed", "value"),
    [
        ("1.234567s", 1.234567),
        ("45.2ms", 0.0452),
        ("310µs", 0.00031),
        ("310μs", 0.00031),
        ("1.5ns", 1.5e-9),
        ("0ns", 0.0),
        ("12s", 12.0),
        ("611.286748ms", 0.611286748),
    ],
)
def test_rust_durations_read_as_seconds(printed: str, value: float) -> None:
    assert seconds(printed) == value


@pytest.mark.parametrize(
    "printed", ["", "s", "1.5", "1.5 s", "-1s", "1.5h", "1,5s", "inf s", "\uff11s"]
)
def test_other_durations_are_none(printed: str) -> None:
    assert seconds(printed) is None


NOT_METRICS = [
    compact("Successfully downloaded weights for m", span="download"),
    compact("Successfully downloaded weights.", span="download", colour=True),
    full("Success"),  # no timings
    full(
        "Output: the model said: Success",
        span=f"generate{{{span_text(False)}}}",
        line=431,
        level="DEBUG",
    ),
    full("Incoming request: Success", span=f"generate{{{span_text(False)}}}"),
    launcher_json("Successfully downloaded weights for m"),
    router_json("Output: Success", {**TIMINGS, "name": "generate"}),
    router_json("Success"),
    router_json("Success", {"total_time": "soon", "name": "generate"}),
    "Success",
    success_full().replace(STAMP, "sometime"),
    '{"timestamp":"' + STAMP + '","message":"Success","span":{"total_time":"1s"',  # cut
]


@pytest.mark.parametrize("line", NOT_METRICS)
def test_other_lines_give_no_sample(line: str) -> None:
    assert SPEC.reader(utc_offset=0).records(line, 0) == ()


def test_colour_codes_are_removed() -> None:
    assert strip_colour(full("Connected", colour=True)) == full("Connected")
    assert strip_colour("a\x1b[38;5;200mb\x1b(Bc\x1b") == "abc"


# --- the launcher's arguments -----------------------------------------------------------

#: The current launcher's Args struct, every field in its order, as {:#?} prints it.
PRETTY = """Args {
    model_id: "meta-llama/Llama-3.1-8B-Instruct",
    revision: Some(
        "refs/pr/2",
    ),
    validation_workers: 2,
    sharded: Some(
        true,
    ),
    num_shard: Some(
        2,
    ),
    quantize: Some(
        BitsandbytesNf4,
    ),
    speculate: Some(
        3,
    ),
    dtype: Some(
        BFloat16,
    ),
    kv_cache_dtype: Some(
        Fp8e4m3fn,
    ),
    trust_remote_code: true,
    max_concurrent_requests: 64,
    max_best_of: 2,
    max_stop_sequences: 4,
    max_top_n_tokens: 5,
    max_input_tokens: Some(
        4095,
    ),
    max_input_length: None,
    max_total_tokens: Some(
        8192,
    ),
    waiting_served_ratio: 0.3,
    max_batch_prefill_tokens: Some(
        8242,
    ),
    max_batch_total_tokens: None,
    max_waiting_tokens: 20,
    max_batch_size: None,
    cuda_graphs: Some(
        [
            1,
            2,
            4,
        ],
    ),
    hostname: "tgi-host",
    port: 8080,
    prometheus_port: 9000,
    shard_uds_path: "/tmp/text-generation-server",
    master_addr: "localhost",
    master_port: 29500,
    huggingface_hub_cache: Some(
        "/data",
    ),
    weights_cache_override: None,
    disable_custom_kernels: false,
    cuda_memory_fraction: 0.9,
    rope_scaling: Some(
        Dynamic,
    ),
    rope_factor: Some(
        2.0,
    ),
    json_output: false,
    otlp_endpoint: None,
    otlp_service_name: "text-generation-inference.router",
    cors_allow_origin: [
        "https://a.example",
        "https://b.example",
    ],
    api_key: None,
    watermark_gamma: None,
    watermark_delta: None,
    ngrok: false,
    ngrok_authtoken: None,
    ngrok_edge: None,
    tokenizer_config_path: None,
    disable_grammar_support: false,
    env: false,
    max_client_batch_size: 4,
    lora_adapters: Some(
        "org/adapter-a,org/adapter-b",
    ),
    usage_stats: NoStack,
    payload_limit: 2000000,
    enable_prefill_logprobs: false,
    graceful_termination_timeout: 90,
}"""
VALUES = {
    "model_id": "meta-llama/Llama-3.1-8B-Instruct",
    "revision": "refs/pr/2",
    "validation_workers": 2,
    "sharded": True,
    "num_shard": 2,
    "quantize": "bitsandbytes-nf4",
    "speculate": 3,
    "dtype": "bfloat16",
    "kv_cache_dtype": "fp8_e4m3fn",
    "trust_remote_code": True,
    "max_concurrent_requests": 64,
    "max_best_of": 2,
    "max_stop_sequences": 4,
    "max_top_n_tokens": 5,
    "max_input_tokens": 4095,
    "max_input_length": None,
    "max_total_tokens": 8192,
    "waiting_served_ratio": 0.3,
    "max_batch_prefill_tokens": 8242,
    "max_batch_total_tokens": None,
    "max_waiting_tokens": 20,
    "max_batch_size": None,
    "cuda_graphs": [1, 2, 4],
    "hostname": "tgi-host",
    "port": 8080,
    "prometheus_port": 9000,
    "shard_uds_path": "/tmp/text-generation-server",
    "master_addr": "localhost",
    "master_port": 29500,
    "huggingface_hub_cache": "/data",
    "weights_cache_override": None,
    "disable_custom_kernels": False,
    "cuda_memory_fraction": 0.9,
    "rope_scaling": "dynamic",
    "rope_factor": 2.0,
    "json_output": False,
    "otlp_endpoint": None,
    "otlp_service_name": "text-generation-inference.router",
    "cors_allow_origin": ["https://a.example", "https://b.example"],
    "api_key": None,
    "watermark_gamma": None,
    "watermark_delta": None,
    "ngrok": False,
    "ngrok_authtoken": None,
    "ngrok_edge": None,
    "tokenizer_config_path": None,
    "disable_grammar_support": False,
    "env": False,
    "max_client_batch_size": 4,
    "lora_adapters": "org/adapter-a,org/adapter-b",
    "usage_stats": "no-stack",
    "payload_limit": 2000000,
    "enable_prefill_logprobs": False,
    "graceful_termination_timeout": 90,
}


def dump_lines(colour: bool) -> str:
    """The args lines as the agent gives them: the head line, then the dump's, to the ``}``."""
    first, rest = PRETTY.split("\n", 1)
    return compact(first, colour=colour) + "\n" + rest


@pytest.mark.parametrize("colour", [False, True], ids=["plain", "coloured"])
def test_the_pretty_args_dump_is_read_whole(colour: bool) -> None:
    head = HEAD[TEXT_FORM]
    assert head.complete and head.until == "}"
    assert head.text in dump_lines(colour).split("\n", 1)[0]
    reported = SPEC.read_reported(dump_lines(colour), head)
    assert reported == VALUES and list(reported) == list(VALUES)
    assert reported is not None and not reported.truncated
    # without its closing line, every field is there but the dump may go on
    cut = SPEC.read_reported(dump_lines(colour).rsplit("\n", 1)[0], head)
    assert cut == VALUES and cut is not None and cut.truncated


def test_the_json_args_line_is_read_from_its_message() -> None:
    line = launcher_json(PRETTY)
    head = HEAD[JSON_FORM]
    assert head.text in line and head.until is None
    assert SPEC.read_reported(line, head) == VALUES
    # the plain head is in the JSON line too: read as JSON whichever head found it
    assert SPEC.read_reported(line, HEAD[TEXT_FORM]) == VALUES
    assert SPEC.read_reported(router_json(PRETTY), head) == VALUES


def test_the_agent_tries_the_json_and_one_line_heads_first() -> None:
    forms = [h.form for h in SPEC.args_heads]
    assert forms == [JSON_FORM, LINE_FORM, TEXT_FORM]
    assert HEAD[LINE_FORM].text not in dump_lines(False)
    assert HEAD[JSON_FORM].text not in dump_lines(True)


def test_the_one_line_dump_of_old_launchers_is_read() -> None:
    line = compact(
        'Args { model_id: "bigcode/starcoder", revision: None, sharded: Some(false), '
        "num_shard: None, quantize: Some(Bitsandbytes), trust_remote_code: false, "
        "max_input_length: 1024, waiting_served_ratio: 1.2, "
        'huggingface_hub_cache: Some("/data"), cors_allow_origin: [], env: false }'
    )
    head = HEAD[LINE_FORM]
    assert head.text in line and head.until is None
    assert SPEC.read_reported(line, head) == {
        "model_id": "bigcode/starcoder",
        "revision": None,
        "sharded": False,
        "num_shard": None,
        "quantize": "bitsandbytes",
        "trust_remote_code": False,
        "max_input_length": 1024,
        "waiting_served_ratio": 1.2,
        "huggingface_hub_cache": "/data",
        "cors_allow_origin": [],
        "env": False,
    }


def fields_before(name: str) -> dict[str, object]:
    """The golden dump's values of the fields before ``name``."""
    return {k: VALUES[k] for k in list(VALUES)[: list(VALUES).index(name)]}


GRAPHS = "    cuda_graphs: Some(\n        [\n            1,\n            2,\n"


@pytest.mark.parametrize(
    ("field", "kept"),
    [
        ("cuda_graphs", GRAPHS),  # inside a list
        ("cuda_graphs", GRAPHS + "            4,\n        ]"),  # before Some's `)`
        ("cuda_graphs", GRAPHS + "            4,\n        ],\n    )"),  # before its `,`
        ("hostname", '    hostname: "tgi-'),  # inside a string
        ("hostname", '    hostname: "tgi-host"'),
        ("max_total_tokens", "    max_total_tokens: Some(\n        81"),  # inside a number
        ("port", "    po"),  # inside a name
        ("model_id", ""),  # the head alone
    ],
    ids=["list", "list-end", "some-end", "string", "string-end", "number", "name", "head"],
)
def test_a_cut_dump_is_truncated_and_keeps_only_the_fields_before_the_cut(
    field: str, kept: str
) -> None:
    """The agent stops at its bounds: the fields that end before the cut are kept, and the
    value the cut runs into is left out (its text is not the value)."""
    start = PRETTY.index(f"\n    {field}:") + 1
    assert PRETTY[start:].startswith(kept)
    reported = SPEC.read_reported(PRETTY[: start + len(kept)], HEAD[TEXT_FORM])
    assert reported is not None and reported.truncated
    assert reported == fields_before(field) and list(reported) == list(fields_before(field))


def test_a_dump_cut_inside_a_secret_is_truncated_and_leaves_the_secret_out() -> None:
    cut = 'Args {\n    model_id: "m",\n    api_key: Some(\n        "sk-abc'
    for text in (cut, cut + '",', cut + '",\n    )'):
        reported = SPEC.read_reported(text, HEAD[TEXT_FORM])
        assert reported is not None and reported.truncated, text
        assert reported == {"model_id": "m"}, text
    whole = SPEC.read_reported(cut + '",\n    ),\n}', HEAD[TEXT_FORM])
    assert whole == {"model_id": "m", "api_key": "sk-abc"} and not whole.truncated


def test_a_dump_that_reaches_its_closing_brace_is_not_truncated() -> None:
    for form, line in (
        (TEXT_FORM, dump_lines(False)),
        (JSON_FORM, launcher_json(PRETTY)),
        (LINE_FORM, compact('Args { model_id: "m", cors_allow_origin: [], env: false }')),
    ):
        reported = SPEC.read_reported(line, HEAD[form])
        assert reported is not None and not reported.truncated, form
    one_line = compact('Args { model_id: "m", cors_allow_origin: [], en')
    reported = SPEC.read_reported(one_line, HEAD[LINE_FORM])
    assert reported == {"model_id": "m", "cors_allow_origin": []} and reported.truncated


def test_strings_are_unescaped_and_other_values_kept_as_text_never_evaluated() -> None:
    dump = (
        'Args {\n    model_id: "a\\"b\\\\c\\u{e9}\\n",\n'
        "    weird: __import__('os').system('true'),\n"
        '    map: {"k": 1},\n    tuple: Pair(1, "x"),\n    neg: -3,\n    small: 1e-5,\n'
        "    nested: Some(Some(None)),\n    char: 'x',\n}"
    )
    assert SPEC.read_reported(dump, HEAD[TEXT_FORM]) == {
        "model_id": 'a"b\\cé\n',
        "weird": "__import__('os').system('true')",
        "map": {"k": 1},
        "tuple": [1, "x"],
        "neg": -3,
        "small": 1e-5,
        "nested": None,
        "char": "x",
    }


def test_lines_without_a_dump_report_nothing() -> None:
    for form in (TEXT_FORM, LINE_FORM, JSON_FORM):
        assert SPEC.read_reported(compact("Starting Webserver"), HEAD[form]) is None
        assert SPEC.read_reported(launcher_json("Starting shard"), HEAD[form]) is None
        assert SPEC.read_reported('{"message": [1, 2', HEAD[form]) is None


@pytest.mark.parametrize(
    ("variant", "word"),
    [
        ("Awq", "awq"),
        ("CompressedTensors", "compressed-tensors"),
        ("BitsandbytesNf4", "bitsandbytes-nf4"),
        ("BitsandbytesNF4", "bitsandbytes-nf4"),
        ("Exl2", "exl2"),
        ("Fp8", "fp8"),
        ("BFloat16", "bfloat16"),
        ("Float16", "float16"),
        ("Fp8e5m2", "fp8_e5m2"),
        ("NoStack", "no-stack"),
        ("On", "on"),
        ("Linear", "linear"),
    ],
)
def test_enum_variants_read_as_the_words_their_flags_take(variant: str, word: str) -> None:
    assert variant_word(variant) == word


# --- never raises, never invents --------------------------------------------------------

_PIECES = st.sampled_from(
    [
        STAMP,
        "Z",
        "  INFO ",
        " ERROR ",
        DIM,
        RESET,
        "\x1b[",
        "{",
        "}",
        "(",
        ")",
        "[",
        "]",
        '"',
        "\\",
        ": ",
        ":",
        "Success",
        ": Success",
        "server.rs:1",
        "text_generation_router::server",
        'total_time="1s"',
        "time_per_token=",
        "µs",
        "ms",
        "Some(",
        "None",
        "Args {",
        ",",
        "\n",
        '{"timestamp":"',
        '"message":"Success"',
        '"span":{',
        "\ud800",
    ]
)
_NOISE = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(), _NOISE))
def test_reading_never_raises_on_any_text(text: str) -> None:
    reader = SPEC.reader(utc_offset=0)
    for sample in reader.records(text, 0):
        assert sample.values == {}
        assert set(sample.fields) <= {*SECONDS, "prompt_tokens", "generated_tokens"}
    reader.line_time(text)
    for head in SPEC.args_heads:
        SPEC.read_reported(text, head)


_MESSAGES = st.one_of(
    st.sampled_from(
        [
            "Connected",
            "Starting Webserver",
            "Warming up model",
            "Webserver Crashed",
            "Successfully downloaded weights for m",
            "Success!",
            "Successes",
        ]
    ),
    st.text(max_size=30).filter(lambda t: "Success" not in t),
)


@settings(max_examples=300, deadline=None)
@given(_MESSAGES, st.booleans(), st.sampled_from(["compact", "full", "json"]))
def test_no_other_message_becomes_a_metric(message: str, colour: bool, shape: str) -> None:
    span = f"generate{{{span_text(colour)}}}"
    line = {
        "compact": lambda: compact(
            message, span="generate", fields=span_text(colour), colour=colour
        ),
        "full": lambda: full(message, span=span, colour=colour),
        "json": lambda: router_json(message, {**TIMINGS, "name": "generate"}),
    }[shape]()
    assert SPEC.reader(utc_offset=0).records(line, 0) == ()
