"""Golden tests of the llama-server simulation: every line a build writes matches llama.cpp's
own format strings, ``/health`` answers 503 ``Loading model`` then 200, ``/metrics`` is
Prometheus text of ``llamacpp:*`` families (501 without ``--metrics``), ``/slots`` lists the
slots, and the failure scenarios print what llama-server prints.

The regexes are written by hand from the log-format reference (llama.cpp section and its
drift notes: ``SRV_INF``/``SLT_INF`` prefixes, ``print_timings`` per shape, the
``--log-prefix --log-timestamps`` stamp, the 2024 ``INFO [ func] msg | key=value`` form),
not derived from the simulator. One build of each shape runs as a real process under load
with a draft model, then stops with SIGTERM.
"""

from __future__ import annotations

import json
import re
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sim_helpers import Sim, wait_until

pytestmark = pytest.mark.integration

SERVER = (
    "-m",
    "/models/Qwen3-8B-Q4_K_M.gguf",
    "-c",
    "8192",
    "-np",
    "2",
    "-ngl",
    "99",
    "-md",
    "/models/Qwen3-0.6B-Q8_0.gguf",
    "--draft-max",
    "8",
    "--metrics",
    "--slots",
    "--log-prefix",
    "--log-timestamps",
)
BUILDS = ("2024", "2025", "2026", "2026-06")
#: a generation long enough for the progress line (every 3 s once 100 tokens are out)
LONG = 1800
SHORT = 120

# --- formats (reference §3 and §6) ------------------------------------------------------

#: common/log.cpp: "%d.%02d.%03d.%03d " (with --log-timestamps) then the level letter
STAMP = re.compile(
    r"^(?:(?P<m>\d+)\.(?P<s>\d{2})\.(?P<ms>\d{3})\.(?P<us>\d{3}) )?(?P<lvl>[IWED]) (?P<msg>.*)$"
)
#: SRV_INF: "srv  %12.*s: "; SLT_INF: "slot %12.*s: id %2d | task %d | "
SRV = r"srv  [ \w()]{12}: "
SLOT = r"slot [ \w()]{12}: id [ \d]\d \| task -?\d+ \| "
PROMPT_EVAL = (
    r"prompt eval time = +\d+\.\d{2} ms / +\d+ tokens \( +\d+\.\d{2} ms per token, "
    r"+\d+\.\d{2} tokens per second\)"
)
EVAL = (
    r"       eval time = +\d+\.\d{2} ms / +\d+ tokens \( +\d+\.\d{2} ms per token, "
    r"+\d+\.\d{2} tokens per second\)"
)
TOTAL = r"      total time = +\d+\.\d{2} ms / +\d+ tokens"
DRAFT_2025 = r"draft acceptance rate = \d\.\d{5} \( *\d+ accepted / +\d+ generated\)"
DRAFT_2026 = (
    r"draft acceptance = \d\.\d{5} \( *\d+ accepted / +\d+ generated\), mean len = +\d+\.\d{2}"
)
DRAFT_2026_06 = (
    r"draft acceptance = \d\.\d{5} \( *\d+ accepted / +\d+ generated\), "
    r"mean acceptance length = +\d+\.\d{2}, acceptance rate per position = "
    r"\(\d\.\d{3}(?:, \d\.\d{3})*\)"
)
#: llama's own chatter and main()'s plain lines, by their heads
CHATTER = (
    r"(?:build: \d+ \([0-9a-f]+\) with .+|system info: .+|system_info: .+|"
    r"main: (?:binding port with default address family|HTTP server is listening, .+|"
    r"loading model|model loaded)|ggml_cuda_init: .+|  Device \d+: .+|"
    r"llama_model_load_from_file_impl: .+|llama_model_loader: .+|print_info: .+|"
    r"load_tensors: .+|llama_context: .+|llama_kv_cache(?:_unified)?: .+|"
    r"common_init_from_params: .+|\.+)"
)
SHAPE_2025 = (
    rf"^(?:{CHATTER}|{SRV}.+|{SLOT}.*|main: server is listening on http://[\d.]+:\d+ - "
    rf"starting the main loop|{PROMPT_EVAL}|{EVAL}|{TOTAL}|{DRAFT_2025})$"
)
SHAPE_2026 = rf"^(?:{CHATTER}|{SRV}.+|{SLOT}.+)$"
#: 2024: "%4s [%24s] %s" then " |" and key=value pairs, tid and timestamp first
OLD = re.compile(
    r'^(?: ?INFO| ERR|WARN|DEBUG) \[[ \w]{24}\] (?P<msg>.+?) \| tid="\d+" timestamp=\d+(?P<kv>.*)$'
)
OLD_CHATTER = (
    r"^(?:ggml_cuda_init: .+|  Device \d+: .+|llama_model_loader: .+|llm_load_print_meta: .+|"
    r"llm_load_tensors: .+|llama_new_context_with_model: .+|llama_kv_cache_init: .+|"
    r"llama_init_from_gpt_params: .+|\.+)$"
)
OLD_TIMINGS = {
    "prompt": r"prompt eval time     = +\d+\.\d{2} ms / +\d+ tokens \( +\d+\.\d{2} ms per token, "
    r"+\d+\.\d{2} tokens per second\)",
    "gen": r"generation eval time = +\d+\.\d{2} ms / +\d+ runs   \( +\d+\.\d{2} ms per token, "
    r"+\d+\.\d{2} tokens per second\)",
    "total": r"          total time = +\d+\.\d{2} ms",
}
READY = {
    "2024": r'^INFO \[ +main\] model loaded \| tid="\d+" timestamp=\d+$',
    "2025": r"^main: server is listening on http://127\.0\.0\.1:\d+ - starting the main loop$",
    "2026": r"^srv          main: listening on http://127\.0\.0\.1:\d+$",
    "2026-06": r"^srv          main: listening on http://127\.0\.0\.1:\d+$",
}
LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


def unstamped(lines: list[str]) -> list[str]:
    """Messages without the ``M.SS.mmm.uuu L `` prefix (continuation lines have none)."""
    out = []
    for line in lines:
        match = STAMP.match(line)
        out.append(match.group("msg") if match else line)
    return out


def first_status(sim: Sim) -> tuple[int, bytes]:
    """The first answer /health gives once the server answers (a bare 503 comes only
    from the instant between binding the port and building the engine)."""
    answer: list[tuple[int, bytes]] = []
    sim.wait_for(r"\S")  # the first line comes after the bind: the port is this sim's

    def got() -> bool:
        status, body = sim.get("/health")
        if status and body:
            answer.append((status, body))
        return bool(answer)

    wait_until(got, 10, "/health answers", step=0.02)
    return answer[0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llamacpp")
    sims = {
        build: Sim(
            tmp,
            "llamacpp",
            "--engine-version",
            build,
            "--load-seconds",
            "1.5",
            "--seed",
            "5",
            server=SERVER,
            name=f"llamacpp-{build}",
        )
        for build in BUILDS
    }
    try:
        health = {build: [first_status(sim)] for build, sim in sims.items()}
        for build, sim in sims.items():
            sim.wait_ready()
            health[build].append(sim.get("/health"))

        def drive(job: tuple[str, int]) -> dict[str, object]:
            build, n_predict = job
            status, body = sims[build].post(
                "/completion", {"prompt": f"tell me about build {build}", "n_predict": n_predict}
            )
            assert status == 200
            return json.loads(body)

        jobs = [(build, LONG if build != "2024" else SHORT) for build in BUILDS]
        jobs += [(build, SHORT) for build in BUILDS]
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            answers = list(pool.map(drive, jobs))
        pages = {build: (sim.get("/metrics"), sim.get("/slots")) for build, sim in sims.items()}
        for sim in sims.values():
            sim.signal(signal.SIGTERM)
        done = {build: (sim.lines(), sim.wait()) for build, sim in sims.items()}
        predicted = {
            build: sum(
                int(a["tokens_predicted"])
                for (b, _), a in zip(jobs, answers, strict=True)
                if b == build
            )
            for build in BUILDS
        }
        return {"health": health, "pages": pages, "done": done, "predicted": predicted}
    finally:
        for sim in sims.values():
            sim.stop()


@pytest.mark.parametrize("build", ["2025", "2026", "2026-06"])
def test_every_line_matches_the_shape(runs, build: str) -> None:
    lines, status = runs["done"][build]
    assert status == 0
    shape = SHAPE_2025 if build == "2025" else SHAPE_2026
    bad = [line for line in unstamped(lines) if not re.match(shape, line)]
    assert not bad, "\n".join(bad[:20])
    timing = [line for line in unstamped(lines) if "print_timing:" in line]
    if build == "2025":
        # one SLT_INF whose text starts with "\n": header, then unprefixed lines
        texts = unstamped(lines)
        heads = [i for i, line in enumerate(texts) if re.fullmatch(rf"{SLOT}", line)]
        assert heads
        follow = {texts[i + 1][:16] for i in heads}
        assert follow == {"prompt eval time", "draft acceptance"}
        assert any(re.fullmatch(DRAFT_2025, line) for line in texts)
        assert any(re.fullmatch(EVAL, line) for line in texts)
    else:
        tails = [re.sub(rf"^{SLOT}", "", line) for line in timing]
        assert any(re.fullmatch(PROMPT_EVAL, t) for t in tails)
        assert any(re.fullmatch(EVAL, t) for t in tails)
        assert any(re.fullmatch(TOTAL, t) for t in tails)
        assert any(re.fullmatch(r"   graphs reused = +\d+", t) for t in tails)
        draft = DRAFT_2026_06 if build == "2026-06" else DRAFT_2026
        assert any(re.fullmatch(draft, t) for t in tails), tails


@pytest.mark.parametrize("build", ["2025", "2026", "2026-06"])
def test_prefix_stamps_count_from_process_start(runs, build: str) -> None:
    lines, _ = runs["done"][build]
    stamps = [STAMP.match(line) for line in lines]
    seconds = [
        int(m["m"]) * 60 + int(m["s"]) + int(m["ms"]) / 1e3 + int(m["us"]) / 1e6
        for m in stamps
        if m is not None and m["m"] is not None
    ]
    assert len(seconds) > 50
    assert seconds == sorted(seconds)
    # the first line comes soon after the process starts (its interpreter and imports first,
    # which take seconds on a loaded machine): counted from there, not from any clock
    assert seconds[0] < 60.0
    assert {m["lvl"] for m in stamps if m is not None} <= {"I", "W", "E", "D"}


@pytest.mark.parametrize("build", ["2025", "2026", "2026-06"])
def test_progress_and_prompt_lines(runs, build: str) -> None:
    texts = unstamped(runs["done"][build][0])
    if build == "2025":
        progress = r"n_decoded = +\d+, tg = +\d+\.\d{2} t/s"
        prompt = r"prompt processing progress, n_past = \d+, n_tokens = \d+, progress = \d\.\d{6}"
    else:
        progress = r"n_gen = +\d+, tg = +\d+\.\d{2} t/s, tg_3s = +\d+\.\d{2} t/s"
        prompt = r"prompt done, n_tokens = \d+, batch\.n_tokens = \d+"
    assert any(re.fullmatch(rf"{SLOT}{progress}", line) for line in texts)
    assert any(re.fullmatch(rf"{SLOT}{prompt}", line) for line in texts)


def test_2024_lines_are_the_key_value_text_format(runs) -> None:
    lines, status = runs["done"]["2024"]
    assert status == 0
    messages = []
    for line in lines:
        match = OLD.match(line)
        if match is None:
            assert re.match(OLD_CHATTER, line), line
            continue
        messages.append((match["msg"], match["kv"]))
    timing = [(msg, kv) for msg, kv in messages if "time" in msg]
    for key, pattern in OLD_TIMINGS.items():
        found = [kv for msg, kv in timing if re.fullmatch(pattern, msg)]
        assert found, key
        assert " id_slot=" in found[0]
    assert any("n_tokens_second=" in kv for _, kv in timing)
    assert not any("draft" in msg for msg, _ in messages)  # no speculative decoding in 2024
    # the HTTP server listens before the model loads; the server is ready once it has
    order = [msg for msg, _ in messages]
    listening = order.index("HTTP server listening")
    assert order.index("system info") < listening < order.index("initializing slots")
    assert order.index("initializing slots") < order.index("model loaded")
    assert order[order.index("model loaded") + 1] == "all slots are idle"
    assert re.search(r' port="\d+" hostname="127\.0\.0\.1"$', messages[listening][1])


@pytest.mark.parametrize("build", BUILDS)
def test_ready_line_then_health(runs, build: str) -> None:
    texts = unstamped(runs["done"][build][0])
    assert any(re.match(READY[build], line) for line in texts)
    (loading, loading_body), (ready, ready_body) = runs["health"][build]
    assert loading == 503
    assert json.loads(loading_body) == LOADING
    assert (
        loading_body
        == b'{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'
    )
    assert (ready, ready_body) == (200, b'{"status":"ok"}')


@pytest.mark.parametrize("build", BUILDS)
def test_metrics_page(runs, build: str) -> None:
    (status, body), _ = runs["pages"][build]
    assert status == 200
    text = body.decode()
    values: dict[str, float] = {}
    kinds: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ")
            kinds[name] = kind
        elif not line.startswith("# HELP "):
            name, value = line.rsplit(" ", 1)
            assert re.fullmatch(r'llamacpp:\w+(?:\{position="\d+"\})?', name), line
            values[name] = float(value)
    assert all(name.startswith("llamacpp:") for name in kinds)
    for name in ("prompt_tokens_total", "tokens_predicted_total", "n_decode_total"):
        assert kinds[f"llamacpp:{name}"] == "counter"
    for name in (
        "prompt_tokens_seconds",
        "predicted_tokens_seconds",
        "requests_processing",
        "requests_deferred",
    ):
        assert kinds[f"llamacpp:{name}"] == "gauge"
    assert values["llamacpp:tokens_predicted_total"] == runs["predicted"][build]
    assert values["llamacpp:requests_processing"] == 0
    if build.startswith("2026"):
        assert kinds["llamacpp:n_busy_slots_per_decode"] == "gauge"
        assert values["llamacpp:spec_decode_num_draft_tokens_total"] > 0
        assert values["llamacpp:spec_decode_num_accepted_tokens_total"] > 0
    else:
        assert kinds["llamacpp:n_busy_slots_per_decode"] == "counter"
        assert ("llamacpp:kv_cache_usage_ratio" in kinds) == (build == "2024")


@pytest.mark.parametrize("build", BUILDS)
def test_slots_page(runs, build: str) -> None:
    _, (status, body) = runs["pages"][build]
    assert status == 200
    slots = json.loads(body)
    assert [slot["id"] for slot in slots] == [0, 1]
    for slot in slots:
        assert slot["n_ctx"] == (8192 if build.startswith("2026") else 4096)
        if build == "2024":
            assert slot["state"] == 0
        else:
            assert slot["is_processing"] is False
            assert slot["speculative"] is True


def test_metrics_and_slots_need_their_flags(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path, "llamacpp", "--load-seconds", "0.2", server=("-m", "/m/a.gguf", "--no-slots")
    )
    try:
        sim.wait_ready()
        status, body = sim.get("/metrics")
        assert status == 501
        assert json.loads(body) == {
            "error": {
                "code": 501,
                "message": (
                    "This server does not support metrics endpoint. Start it with `--metrics`"
                ),
                "type": "not_supported_error",
            }
        }
        status, body = sim.get("/slots")
        assert status == 501
        assert json.loads(body)["error"]["message"].endswith("Start it with `--slots`")
    finally:
        sim.stop()


@pytest.mark.parametrize("build", ["2025", "2026"])
def test_oom_at_load(tmp_path: Path, build: str) -> None:
    sim = Sim(
        tmp_path,
        "llamacpp",
        "--engine-version",
        build,
        "--load-seconds",
        "0.3",
        "--scenario",
        "oom",
        server=("-m", "/m/a.gguf", "-ngl", "99", "--log-prefix"),
    )
    try:
        assert sim.wait() == 1
        texts = unstamped(sim.lines())
        assert any(
            re.fullmatch(
                r"ggml_backend_cuda_buffer_type_alloc_buffer: allocating \d+\.\d{2} MiB "
                r"on device 0: cudaMalloc failed: out of memory",
                line,
            )
            for line in texts
        )
        assert any(line.startswith("llama_model_load: error loading model: ") for line in texts)
        assert texts[-1] == "main: exiting due to model loading error"
        assert sim.lines()[-1].startswith("E ")
    finally:
        sim.stop()


def test_crash_after_ready_aborts(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        "llamacpp",
        "--load-seconds",
        "0.2",
        "--scenario",
        "crash-after:0.2",
        server=("-m", "/m/a.gguf"),
    )
    try:
        assert sim.wait() == 134
        lines = sim.lines()
        assert "CUDA error: an illegal memory access was encountered" in lines
        assert re.fullmatch(r"/\S+/ggml-cuda\.cu:\d+: CUDA error", lines[-1])
    finally:
        sim.stop()


def test_killed_prints_nothing_more(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        "llamacpp",
        "--engine-version",
        "2025",
        "--load-seconds",
        "0.2",
        "--scenario",
        "killed-after:0.2",
        server=("-m", "/m/a.gguf"),
    )
    try:
        assert sim.wait() == -signal.SIGKILL
        assert sim.lines()[-1] == "srv  update_slots: all slots are idle"
    finally:
        sim.stop()
