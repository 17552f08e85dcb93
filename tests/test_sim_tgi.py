"""Golden tests of the TGI simulator: every line matches text-generation-inference's formats.

The regexes are written by hand from the sources quoted in the log-format
reference (§4, §6 TGI): the launcher's ``tracing_subscriber::fmt().compact()``
and ``.json()`` (``launcher/src/main.rs``), the router's full format with file
and line, coloured unless ``LOG_COLORIZE=1``, or ``json().flatten_event(true)``
(``router/src/logging.rs``), the ``Args`` struct's ``{:#?}`` dump, the
``Success`` span fields of ``router/src/server.rs`` and the
``metrics-exporter-prometheus`` text of ``/metrics``. They are not derived
from the simulator's code. Each release layout runs as a real process, under
load, then stops with SIGTERM or fails the way its scenario says.
"""

from __future__ import annotations

import json
import re
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest
from sim_helpers import Sim, sim_env

pytestmark = pytest.mark.integration

STAMP = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z"
LEVEL = r"(?: INFO| WARN|ERROR|DEBUG)"
#: compact: "{ts} {level} {span names:}{target}: {message}{ span fields}"
LAUNCHER = re.compile(
    rf"^(?P<ts>{STAMP}) (?P<level>{LEVEL}) (?:(?P<span>download|shard-manager): )?"
    r"text_generation_launcher: (?P<msg>.*?)(?: rank=(?P<rank>\d+))?$"
)
#: full: "{ts} {level} {spans: }{target}: {file}:{line}: {message}"
ROUTER = re.compile(
    rf"^(?P<ts>{STAMP}) (?P<level>{LEVEL}) (?:(?P<spans>\S.*\}}|batch\S*): )?"
    r"(?P<target>text_generation_(?:router|router_v3|client)(?:::\w+)*): "
    r"(?P<file>(?:router|backends)/[\w/]+\.rs):(?P<line>\d+): (?P<msg>.*)$"
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: tracing-subscriber's ANSI full format: dimmed stamp, green " INFO", dimmed target and file
COLOURED_CONNECTED = re.compile(
    rf"^\x1b\[2m{STAMP}\x1b\[0m \x1b\[32m INFO\x1b\[0m "
    r"\x1b\[2mtext_generation_router::server\x1b\[0m\x1b\[2m:\x1b\[0m "
    r"\x1b\[2mrouter/src/server\.rs\x1b\[0m\x1b\[2m:\x1b\[0m\x1b\[2m\d+:\x1b\[0m Connected$"
)
DURATION = r"\d+(?:\.\d+)?(?:s|ms|µs|ns)"
TIMINGS = (
    rf'total_time="{DURATION}" validation_time="{DURATION}" queue_time="{DURATION}" '
    rf'inference_time="{DURATION}" time_per_token="{DURATION}" seed="(?:None|Some\(\d+\))"'
)
SUCCESS_SPANS = {
    "generate": re.compile(
        r"^generate\{parameters=GenerateParameters \{ .*max_new_tokens: Some\(\d+\).* \} "
        + TIMINGS
        + r"\}$"
    ),
    "chat_completions": re.compile(r"^chat_completions\{" + TIMINGS + r"\}$"),
}
#: launcher messages (launcher/src/main.rs) and the shard's re-logged ones
LAUNCHER_MESSAGES = {
    "args": r"^Args \{$",
    "model_cut": (
        r"^Model supports up to \d+ but tgi will now set its default to \d+ instead\. .*`\.$"
    ),
    "attention": r"^Using attention \w+ - Prefix caching \w+$",
    "default": r"^Default `(?:max_input_tokens|max_total_tokens|max_batch_prefill_tokens)` to \d+$",
    "graphs": r"^Using default cuda graphs \[\d+(?:, \d+)*\]$",
    "sharding": r"^Sharding model on \d+ processes$",
    "download": (
        r"^(?:Starting check and download process for|Successfully downloaded weights for) \S+$"
    ),
    "present": r"^Files are already present on the host\. Skipping download\.$",
    "starting": r"^Starting shard$",
    "waiting": r"^Waiting for shard to be ready\.\.\.$",
    "server_started": r"^Server started at unix:///tmp/text-generation-server-\d+$",
    "ready": rf"^Shard ready in {DURATION}$",
    "webserver": r"^Starting Webserver$",
    "cuda_graphs": r"^Cuda Graphs are enabled for sizes \[\d+(?:, \d+)*\]$",
    "stop": (
        r"^(?:Terminating webserver|Waiting for webserver to gracefully shutdown|"
        r"webserver terminated|Shutting down shards|Terminating shard|"
        r"Waiting for shard to gracefully shutdown|shard terminated)$"
    ),
}
ROUTER_MESSAGES = {
    "warmup": r"^Warming up model$",
    "max_batch": r"^Setting max batch total tokens to \d+$",
    "connected": r"^Connected$",
    "success": r"^Success$",
    "shutdown": r"^signal received, starting graceful shutdown$",
}
#: launcher/src/main.rs ``struct Args``, in declaration order
ARGS_FIELDS = [
    "model_id",
    "revision",
    "validation_workers",
    "sharded",
    "num_shard",
    "quantize",
    "speculate",
    "dtype",
    "kv_cache_dtype",
    "trust_remote_code",
    "max_concurrent_requests",
    "max_best_of",
    "max_stop_sequences",
    "max_top_n_tokens",
    "max_input_tokens",
    "max_input_length",
    "max_total_tokens",
    "waiting_served_ratio",
    "max_batch_prefill_tokens",
    "max_batch_total_tokens",
    "max_waiting_tokens",
    "max_batch_size",
    "cuda_graphs",
    "hostname",
    "port",
    "shard_uds_path",
    "master_addr",
    "master_port",
    "huggingface_hub_cache",
    "weights_cache_override",
    "disable_custom_kernels",
    "cuda_memory_fraction",
    "rope_scaling",
    "rope_factor",
    "json_output",
    "otlp_endpoint",
    "otlp_service_name",
    "cors_allow_origin",
    "api_key",
    "watermark_gamma",
    "watermark_delta",
    "ngrok",
    "ngrok_authtoken",
    "ngrok_edge",
    "tokenizer_config_path",
    "disable_grammar_support",
    "env",
    "max_client_batch_size",
    "lora_adapters",
    "usage_stats",
]
SERVER = ("--model-id", "Qwen/Qwen3-8B", "--num-shard", "2", "--max-concurrent-requests", "64")
#: run name -> (release, extra server flags, LOG_COLORIZE)
RUNS = {
    "2.1-plain": ("2.1.0", (), "1"),
    "3.0-colour": ("3.0.1", ("--quantize", "awq", "--speculate", "2"), None),
    "3.0-json": ("3.0.1", ("--json-output",), None),
}


def _start(tmp, name: str, version: str, server: tuple[str, ...], colorize: str | None, *extra):
    env = sim_env(tmp / "state")
    env.pop("LOG_COLORIZE", None)
    if colorize is not None:
        env["LOG_COLORIZE"] = colorize
    return Sim(
        tmp,
        "tgi",
        "--engine-version",
        version,
        "--load-seconds",
        "0.6",
        "--seed",
        "5",
        *extra,
        server=(*SERVER, *server),
        env=env,
        name=name,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[str], int, str]]:
    """Each layout: ready, generate and chat requests, a scrape, SIGTERM -> lines, status, page."""
    tmp = tmp_path_factory.mktemp("tgi")
    sims = {name: _start(tmp, name, *spec) for name, spec in RUNS.items()}
    try:
        for sim in sims.values():
            sim.wait_for("Connected")
            sim.wait_ready()

        def drive(name: str) -> None:
            sim = sims[name]
            generate = {"inputs": f"tell me about {name}", "parameters": {"max_new_tokens": 40}}
            assert sim.post("/generate", generate)[0] == 200
            chat = {"messages": [{"role": "user", "content": name}], "max_tokens": 12}
            assert sim.post("/v1/chat/completions", chat)[0] == 200

        with ThreadPoolExecutor(max_workers=2 * len(sims)) as pool:
            list(pool.map(drive, [name for name in sims for _ in range(2)]))
        pages = {name: sim.get("/metrics")[1].decode() for name, sim in sims.items()}
        for sim in sims.values():
            sim.signal(signal.SIGTERM)
        statuses = {name: sim.wait() for name, sim in sims.items()}
        return {name: (sim.lines(), statuses[name], pages[name]) for name, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.stop()


def _kind(messages: dict[str, str], message: str) -> str | None:
    return next((name for name, regex in messages.items() if re.match(regex, message)), None)


def _text_kinds(lines: list[str], *, coloured: bool) -> dict[str, int]:
    """Check every text line; returns how often each kind of line was seen."""
    seen: dict[str, int] = {}
    index = 0
    while index < len(lines):
        raw = lines[index]
        index += 1
        line = ANSI.sub("", raw)
        if line.startswith("Error: "):
            seen["exit"] = seen.get("exit", 0) + 1
            continue
        if (match := LAUNCHER.match(line)) is not None:
            assert raw == line, f"launcher lines are never coloured: {raw!r}"
            kind = _kind(LAUNCHER_MESSAGES, match["msg"])
            assert kind is not None, f"unknown launcher line: {line!r}"
            assert (match["span"] == "shard-manager") == (match["rank"] is not None), line
            if kind == "args":
                fields = []
                while lines[index] != "}":
                    body = lines[index]
                    assert re.match(r"^ {4,}\S", body), f"Args dump line: {body!r}"
                    if (field := re.match(r"^    (\w+): ", body)) is not None:
                        fields.append(field[1])
                    index += 1
                index += 1
                assert fields == ARGS_FIELDS
            seen[kind] = seen.get(kind, 0) + 1
            continue
        match = ROUTER.match(line)
        assert match is not None, f"neither launcher nor router format: {raw!r}"
        assert (raw != line) == coloured, f"router colour is {coloured}: {raw!r}"
        kind = _kind(ROUTER_MESSAGES, match["msg"])
        assert kind is not None, f"unknown router line: {line!r}"
        if kind == "success":
            span = match["spans"]
            assert any(regex.match(span) for regex in SUCCESS_SPANS.values()), span
            kind = "success_" + span.split("{", 1)[0]
        if kind == "connected" and coloured:
            assert COLOURED_CONNECTED.match(raw), repr(raw)
        seen[kind] = seen.get(kind, 0) + 1
    return seen


@pytest.mark.parametrize("name", ["2.1-plain", "3.0-colour"])
def test_every_text_line_matches_the_launcher_or_router_format(runs, name: str) -> None:
    lines, status, _ = runs[name]
    assert status == 0
    seen = _text_kinds(lines, coloured=RUNS[name][2] != "1")
    for kind in (
        "args",
        "default",
        "sharding",
        "download",
        "starting",
        "server_started",
        "ready",
        "webserver",
        "warmup",
        "max_batch",
        "connected",
        "stop",
        "shutdown",
    ):
        assert seen.get(kind), f"{name}: never saw a {kind} line"
    assert seen["starting"] == 2 and seen["ready"] == 2, "one per shard (--num-shard 2)"
    assert seen["success_generate"] == 2 and seen["success_chat_completions"] == 2


def test_router_layout_follows_the_release(runs) -> None:
    old = "\n".join(runs["2.1-plain"][0])
    new = ANSI.sub("", "\n".join(runs["3.0-colour"][0]))
    assert "text_generation_router: router/src/main.rs:" in old
    assert (
        re.search(r"text_generation_router::server: router/src/server\.rs:\d+: Connected", old)
        is None
    )
    assert re.search(
        r"text_generation_router_v3: backends/v3/src/lib\.rs:\d+: Warming up model", new
    )
    assert re.search(r"text_generation_router::server: router/src/server\.rs:\d+: Connected", new)
    assert "Using attention" in new and "Using attention" not in old
    assert "quantize: Some(\n        Awq,\n    )," in new
    assert "speculate: Some(\n        2,\n    )," in new
    assert "num_shard: Some(\n        2,\n    )," in old


def test_json_output_gives_both_json_shapes(runs) -> None:
    lines, status, _ = runs["3.0-json"]
    assert status == 0
    launcher = router = 0
    for line in lines:
        record = json.loads(line)
        assert re.fullmatch(STAMP, record["timestamp"])
        assert record["level"] in ("INFO", "WARN", "ERROR")
        if "fields" in record:  # the launcher: .json(), fields nested
            launcher += 1
            assert list(record)[:4] == ["timestamp", "level", "fields", "target"]
            assert record["target"] == "text_generation_launcher"
            if "span" in record:
                assert record["span"]["name"] in ("download", "shard-manager")
                assert record["spans"][-1] == record["span"]
        else:  # the router: .json().flatten_event(true) with file and line
            router += 1
            assert list(record)[:6] == [
                "timestamp",
                "level",
                "message",
                "target",
                "filename",
                "line_number",
            ]
            assert isinstance(record["line_number"], int)
            if record["message"] == "Success":
                span = record["span"]
                assert list(span)[-1] == "name"
                assert span["name"] in ("generate", "chat_completions")
                assert re.fullmatch(DURATION, span["total_time"])
                assert span["seed"] == "None"
    args = [json.loads(line)["fields"]["message"] for line in lines if '"Args {' in line]
    assert len(args) == 1 and args[0].startswith('Args {\n    model_id: "Qwen/Qwen3-8B",\n')
    assert launcher and router


def test_metrics_are_the_tgi_series_in_the_exporter_layout(runs) -> None:
    page = runs["3.0-colour"][2]
    families = page.strip("\n").split("\n\n")
    kinds = {}
    for family in families:
        head, *samples = family.split("\n")
        match = re.fullmatch(r"# TYPE (tgi_\w+) (counter|gauge|histogram)", head)
        assert match, head
        kinds[match[1]] = match[2]
        for sample in samples:
            assert re.fullmatch(
                rf'{match[1]}(?:_bucket|_sum|_count)?(?:\{{\w+="[^"]+"\}})? [\d.e+-]+', sample
            ), sample
    assert "# HELP" not in page
    assert kinds["tgi_request_count"] == "counter" and kinds["tgi_request_success"] == "counter"
    for gauge in ("tgi_queue_size", "tgi_batch_current_size", "tgi_batch_current_max_tokens"):
        assert kinds[gauge] == "gauge"
    for histogram in (
        "tgi_request_duration",
        "tgi_request_queue_duration",
        "tgi_request_inference_duration",
        "tgi_request_mean_time_per_token_duration",
        "tgi_request_generated_tokens",
        "tgi_request_input_length",
    ):
        assert kinds[histogram] == "histogram"
    assert re.search(r"^tgi_request_success 4$", page, re.MULTILINE)
    buckets = re.findall(r'^tgi_request_duration_bucket\{le="([^"]+)"\} (\d+)$', page, re.MULTILINE)
    assert len(buckets) == 36 and buckets[0][0] == "0.00015000000000000001"
    assert buckets[-1] == ("+Inf", "4")
    counts = [int(count) for _, count in buckets]
    assert counts == sorted(counts)
    assert re.search(r"^tgi_request_duration_count 4$", page, re.MULTILINE)


def test_health_is_unhealthy_until_connected(tmp_path) -> None:
    sim = _start(tmp_path, "health", "3.0.1", (), None, "--load-seconds", "3")
    try:
        sim.wait_for("Starting shard")
        status, body = sim.get("/health")
        assert status == 503 and json.loads(body) == {
            "error": "unhealthy",
            "error_type": "healthcheck",
        }
        sim.wait_for("Connected", timeout=20)
        assert sim.get("/health")[0] == 200
        info = json.loads(sim.get("/info")[1])
        assert info["model_id"] == "Qwen/Qwen3-8B" and info["version"] == "3.0.1"
        assert info["max_concurrent_requests"] == 64
    finally:
        sim.stop()


@pytest.mark.parametrize(
    ("scenario", "expected", "exit_error"),
    [
        (
            "oom",
            (
                r"ERROR text_generation_launcher: Error when initializing model\n"
                r"Traceback \(most recent call last\):\n(?:  .*\n)+"
                r"torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate",
                r"ERROR shard-manager: text_generation_launcher: Shard complete standard error "
                r"output:\n\nTraceback \(most recent call last\):\n(?:  .*\n)+"
                r"torch\.OutOfMemoryError: CUDA out of memory\..* rank=0\n",
                r"ERROR text_generation_launcher: Shard 0 failed to start\n",
            ),
            "ShardCannotStart",
        ),
        (
            "crash-after:0.2",
            (
                r"ERROR batch\{batch_size=\d+\}:decode:decode\{size=\d+\}:decode\{size=\d+\}: "
                r"text_generation_router_v3::client: backends/v3/src/client/mod\.rs:\d+: "
                r"Server error: CUDA error: an illegal memory access was encountered\n",
                r"ERROR text_generation_launcher: Shard 0 crashed\n",
            ),
            "ShardFailed",
        ),
        (
            "killed-after:0.2",
            (
                r"ERROR shard-manager: text_generation_launcher: Shard complete standard error "
                r"output:\n rank=1\n",
                r"ERROR shard-manager: text_generation_launcher: Shard process was signaled to "
                r"shutdown with signal 9 rank=1\n",
                r"ERROR text_generation_launcher: Shard 1 crashed\n",
            ),
            "ShardFailed",
        ),
    ],
)
def test_failures_print_what_the_launcher_prints(tmp_path, scenario, expected, exit_error) -> None:
    sim = _start(tmp_path, "fail", "3.0.1", (), "1", "--scenario", scenario)
    try:
        status = sim.wait(timeout=30)
    finally:
        sim.stop()
    text = sim.text()
    assert status == 1
    for pattern in expected:
        assert re.search(pattern, text), f"{scenario}: no {pattern!r} in\n{text[-2500:]}"
    assert text.rstrip("\n").endswith(f"Error: {exit_error}")
    assert "Shutting down shards" in text
