"""Each engine's startup phases, read by the agent's phase scan from the engine's real
startup text (the lines of /work/shared/reference/log-formats.md and of the engines'
sources, every version listed): the phases come in the order the engine goes through
them, and the progress figures are the last printed in each phase (tqdm bars end
their updates with a carriage return)."""

from __future__ import annotations

import calendar
import os
import time

import pytest

from tui.agent.logtime import Dater
from tui.agent.phases import PhaseScan, compile_phases
from tui.agent.readiness import scan_for
from tui.engines import SPECS

pytestmark = pytest.mark.unit

#: When the runs below started (host wall clock), and when their logs were last written.
STARTED = time.mktime((2025, 11, 30, 11, 17, 0, 0, 0, -1))
WRITTEN = STARTED + 3600


def request_phases(engine: str) -> list[dict[str, object]]:
    """The ``phases`` a probe request carries for ``engine`` (tui/remote/probe.py)."""
    return [
        {"name": p.name, "lines": list(p.lines), "progress": p.progress}
        for p in SPECS[engine].phases
    ]


def marks(engine: str, text: str, *, chunk: int | None = None) -> list[dict[str, object]]:
    """The agent's ``ready.phases`` for a run whose bytes are ``text``, fed whole or
    read ``chunk`` bytes at a time."""
    data = text.encode()
    stamps = [[s.pattern, s.kind] for s in SPECS[engine].stamps]
    scan = PhaseScan(compile_phases(request_phases(engine)), Dater(stamps, WRITTEN, STARTED), 0)
    if chunk is None:
        scan.feed(data, 0, len(data))
    else:  # as readiness.scan_for feeds it: whole lines, the partial last one carried
        carry, pos = b"", 0
        while pos < len(data):
            block = carry + data[pos : pos + chunk]
            base = pos - len(carry)
            carry = block[block.rfind(b"\n") + 1 :]
            scan.feed(block, base, len(block) - len(carry))
            pos += chunk
        scan.feed(carry, len(data) - len(carry), len(carry))
    return scan.marks()


def seen(found: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(m["name"], m["done"], m["total"]) for m in found]


def bar(desc: str, done: int, total: int, *, completed: bool = False) -> str:
    """One update of a tqdm bar: the default format, or the weight loaders' ``Completed``."""
    percent = 100 * done // total
    if completed:
        return f"{desc}: {percent:3d}% Completed | {done}/{total} [00:0{done}<00:01,  1.02s/it]"
    filled = "█" * (10 * done // total)
    return f"{desc}: {percent:3d}%|{filled:<10}| {done}/{total} [00:0{done}<00:00,  4.90it/s]"


def bars(desc: str, total: int, *, completed: bool = False, end: str = "\n") -> str:
    """A whole tqdm bar as a log holds it: each update after a ``\\r``, then ``end``."""
    updates = [bar(desc, n, total, completed=completed) for n in range(total + 1)]
    return "\r".join(updates) + end


SHARDS = "Loading safetensors checkpoint shards"

# ------------------------------------------------------------------ SGLang

SGLANG_055 = (
    "[2025-11-30 11:17:02] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=1)\n"
    "[2025-11-30 11:17:10 TP0] Init torch distributed begin.\n"
    "[2025-11-30 11:17:11 TP0] Init torch distributed ends. mem usage=0.00 GB\n"
    "[2025-11-30 11:17:20 TP0] Load weight begin. avail mem=78.50 GB\n"
    + bars(SHARDS, 5, completed=True)
    + "[2025-11-30 11:17:50 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16,"
    " avail mem=62.10 GB, mem usage=16.40 GB.\n"
    "[2025-11-30 11:17:51 TP0] KV Cache is allocated. #tokens: 2261377, K size: 17.25 GB,"
    " V size: 17.25 GB\n"
    "[2025-11-30 11:17:51 TP0] Memory pool end. avail mem=38.50 GB\n"
    "[2025-11-30 11:17:55 TP0] Capture cuda graph begin. This can take up to several minutes."
    " avail mem=38.50 GB\n"
    + "\r".join(
        bar(f"Capturing batches (bs={bs} avail_mem=38.4{i} GB)", i, 23)
        for i, bs in enumerate(range(160, 160 - 24 * 4, -4))
    )
    + "\n"
    "[2025-11-30 11:18:01 TP0] Capture cuda graph end. Time elapsed: 5.92 s. mem usage=1.44 GB."
    " avail mem=37.06 GB.\n"
    "[2025-11-30 11:18:05 TP0] max_total_num_tokens=2261377, chunked_prefill_size=16384,"
    " max_prefill_tokens=16384, max_running_requests=4096, context_len=128000,"
    " available_gpu_mem=37.06 GB\n"
    "[2025-11-30 11:18:05] INFO:     Started server process [177326]\n"
    "[2025-11-30 11:18:05] INFO:     Waiting for application startup.\n"
    "[2025-11-30 11:18:05] INFO:     Application startup complete.\n"
    "[2025-11-30 11:18:05] INFO:     Uvicorn running on http://127.0.0.1:30000"
    " (Press CTRL+C to quit)\n"
    '[2025-11-30 11:18:06] INFO:     127.0.0.1:51234 - "GET /get_model_info HTTP/1.1" 200 OK\n'
    '[2025-11-30 11:18:07] INFO:     127.0.0.1:51240 - "POST /generate HTTP/1.1" 200 OK\n'
)

SGLANG_ORDER = [
    ("loading weights", 5, 5),
    ("allocating KV cache", None, None),
    ("capturing CUDA graphs", 23, 23),
    ("starting the API server", None, None),
    ("warming up", None, None),
]


def test_sglang_goes_from_its_weights_to_its_warmup_with_shard_and_batch_counts() -> None:
    found = marks("sglang", SGLANG_055)
    assert seen(found) == SGLANG_ORDER
    assert [m["dated"] for m in found] == ["stamp"] * 5
    assert found[0]["at"] == time.mktime((2025, 11, 30, 11, 17, 20, 0, 0, -1))


def test_sglang_0_5_23_names_its_capture_and_captures_piecewise_graphs_before_serving() -> None:
    text = (
        SGLANG_055.replace(
            "Capture cuda graph begin. This can take up to several minutes.",
            "Capture decode CUDA graph begin. backend=flashinfer, num_tokens=160,",
        )
        .replace("Capture cuda graph end. Time elapsed: 5.92 s.", "Capture decode CUDA graph end.")
        .replace(
            "[2025-11-30 11:18:05 TP0] max_total",
            bars("Compiling num tokens (num_tokens=8192)", 4)
            + bars("Capturing num tokens (num_tokens=8192 avail_mem=56.36 GB)", 58)
            + "[2025-11-30 11:18:05 TP0] max_total",
        )
    )
    found = marks("sglang", text)
    # the piecewise capture is the capture's last bar, within its phase
    assert seen(found)[2] == ("capturing CUDA graphs", 58, 58)
    assert [m[0] for m in seen(found)] == [m[0] for m in SGLANG_ORDER]


def test_a_bar_still_running_gives_its_last_update() -> None:
    cut = SGLANG_055.index("Load weight end")
    head = SGLANG_055[: SGLANG_055.rindex("\n", 0, cut)]
    # the shard bar at 3 of 5, its line not ended yet (the run is loading)
    running = head[: head.index(bar(SHARDS, 4, 5, completed=True))].rstrip("\r")
    found = marks("sglang", running)
    assert seen(found) == [("loading weights", 3, 5)]


@pytest.mark.parametrize("chunk", [7, 100, 4096])
def test_the_scan_gives_the_same_marks_whatever_blocks_it_is_fed_in(chunk: int) -> None:
    assert marks("sglang", SGLANG_055, chunk=chunk) == marks("sglang", SGLANG_055)


# ------------------------------------------------------------------ vLLM

VLLM_033 = (
    "(APIServer pid=7) INFO 11-30 11:17:02 [api_server.py:1880] vLLM server version 0.33.0,"
    " serving model Qwen/Qwen3-8B\n"
    "(APIServer pid=7) INFO 11-30 11:17:02 [utils.py:253] non-default args: {'model':"
    " 'Qwen/Qwen3-8B'}\n"
    "(EngineCore pid=129) INFO 11-30 11:17:10 [core.py:93] Initializing a V1 LLM engine"
    " (v0.33.0) with config: model='Qwen/Qwen3-8B'\n"
    "(EngineCore pid=129) INFO 11-30 11:17:20 [gpu_model_runner.py:2634] Starting to load model"
    " Qwen/Qwen3-8B...\n"
    + bars(SHARDS, 4, completed=True)
    + "(EngineCore pid=129) INFO 11-30 11:17:41 [default_loader.py:267] Loading weights took"
    " 20.50 seconds\n"
    "(EngineCore pid=129) INFO 11-30 11:17:42 [gpu_model_runner.py:2653] Model loading took"
    " 15.2683 GiB memory and 21.118 seconds\n"
    "(EngineCore pid=129) INFO 11-30 11:17:48 [backends.py:1089] Using cache directory:"
    " /root/.cache/vllm/torch_compile_cache/41b7c9b698/rank_0_0/backbone for vLLM's"
    " torch.compile\n"
    "(EngineCore pid=129) INFO 11-30 11:17:48 [backends.py:1148] Dynamo bytecode transform"
    " time: 4.70 s\n"
    "(EngineCore pid=129) INFO 11-30 11:18:20 [monitor.py:34] torch.compile takes 30.12 s"
    " in total\n"
    "(EngineCore pid=129) INFO 11-30 11:18:22 [gpu_worker.py:298] Available KV cache memory:"
    " 52.08 GiB\n"
    "(EngineCore pid=129) INFO 11-30 11:18:22 [kv_cache_utils.py:1087] GPU KV cache size:"
    " 379,200 tokens, Maximum concurrency for 40,960 tokens per request: 9.26x\n"
    + bars("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67)
    + bars("Capturing CUDA graphs (decode, FULL)", 35)
    + "(EngineCore pid=129) INFO 11-30 11:18:40 [gpu_model_runner.py:3480] Graph capturing"
    " finished in 17 secs, took 0.82 GiB\n"
    "(EngineCore pid=129) INFO 11-30 11:18:41 [core.py:210] init engine (profile, create kv"
    " cache, warmup model) took 80.12 s (compilation: 30.12 s)\n"
    "(APIServer pid=7) INFO 11-30 11:18:42 [api_server.py:1971] Starting vLLM server on"
    " http://0.0.0.0:8000\n"
    "(APIServer pid=7) INFO 11-30 11:18:42 [launcher.py:29] Available routes are:\n"
    "(APIServer pid=7) INFO:     Started server process [7]\n"
    "(APIServer pid=7) INFO:     Waiting for application startup.\n"
)


def test_vllm_goes_from_its_weights_to_its_api_server_with_shard_and_graph_counts() -> None:
    found = marks("vllm", VLLM_033)
    assert seen(found) == [
        ("loading weights", 4, 4),
        ("compiling the model", None, None),
        ("allocating KV cache", None, None),
        ("capturing CUDA graphs", 35, 35),
        ("warming up", None, None),
        ("starting the API server", None, None),
    ]
    # the capture's first line is tqdm's, unstamped: it began when the line before it
    capture = found[3]
    assert capture["dated"] == "before"
    assert capture["at"] == time.mktime((2025, 11, 30, 11, 18, 22, 0, 0, -1))
    assert found[-1]["dated"] == "stamp"


def test_vllm_0_8_capture_bar_and_eager_run_without_compile_or_graphs() -> None:
    old = VLLM_033.replace(
        bars("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)", 67)
        + bars("Capturing CUDA graphs (decode, FULL)", 35),
        bars("Capturing CUDA graph shapes", 67),
    ).replace("Starting vLLM server on", "Starting vLLM API server 0 on")
    assert ("capturing CUDA graphs", 67, 67) in seen(marks("vllm", old))
    lines = VLLM_033.split("\n")
    eager = "\n".join(
        line
        for line in lines
        if "torch.compile" not in line
        and "Dynamo" not in line
        and "Capturing" not in line
        and "Graph capturing" not in line
    )
    assert [m[0] for m in seen(marks("vllm", eager))] == [
        "loading weights",
        "allocating KV cache",
        "starting the API server",
    ]


VLLM_066 = (
    "INFO 12-06 17:06:56 api_server.py:651] vLLM API server version 0.6.6\n"
    "INFO 12-06 17:06:56 llm_engine.py:249] Initializing an LLM engine (v0.6.6) with config:"
    " model='facebook/opt-125m'\n"
    "INFO 12-06 17:07:01 model_runner.py:1094] Starting to load model facebook/opt-125m...\n"
    + bars(SHARDS, 2, completed=True)
    + "INFO 12-06 17:07:05 model_runner.py:1099] Loading model weights took 0.2389 GB\n"
    "INFO 12-06 17:07:09 gpu_executor.py:113] # GPU blocks: 10900, # CPU blocks: 7281\n"
    "INFO 12-06 17:07:09 gpu_executor.py:117] Maximum concurrency for 2048 tokens per request:"
    " 85.16x\n"
    "INFO 12-06 17:07:13 model_runner.py:1400] Capturing cudagraphs for decoding. This may lead"
    " to unexpected consequences if the model is not static.\n"
    + bars("Capturing CUDA graph shapes", 35)
    + "INFO 12-06 17:07:30 model_runner.py:1530] Graph capturing finished in 17 secs, took"
    " 0.26 GiB\n"
    "INFO 12-06 17:07:31 api_server.py:592] Starting vLLM API server on http://0.0.0.0:8000\n"
    "INFO 12-06 17:07:31 launcher.py:19] Available routes are:\n"
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n"
)


def test_vllm_v0_says_its_blocks_and_captures_for_decoding() -> None:
    found = marks("vllm", VLLM_066)
    assert seen(found) == [
        ("loading weights", 2, 2),
        ("allocating KV cache", None, None),
        ("capturing CUDA graphs", 35, 35),
        ("warming up", None, None),
        ("starting the API server", None, None),
    ]
    assert all(m["dated"] == "stamp" for m in found)


# ------------------------------------------------------------------ TGI


def tgi(message: str, second: int, target: str = "text_generation_launcher") -> str:
    """A TGI line ``second`` s after 04:36:00 UTC."""
    stamp = f"2024-09-03T04:{36 + second // 60:02d}:{second % 60:02d}.507198Z"
    return f"{stamp}  INFO {target}: {message}\n"


TGI_MAIN = (
    tgi("Args {", 0)
    + '    model_id: "meta-llama/Meta-Llama-3.1-8B-Instruct",\n}\n'
    + tgi("Using default cuda graphs [1, 2, 4, 8, 16, 32]", 1)
    + tgi(
        "Starting check and download process for meta-llama/Meta-Llama-3.1-8B-Instruct",
        1,
        "download: text_generation_launcher",
    )
    + "".join(
        tgi(f"Download file: model-0000{n}-of-00004.safetensors", 2 + 10 * n)
        + tgi(f"Download: [{n}/4] -- ETA: 0:00:21", 3 + 10 * n)
        for n in range(1, 5)
    )
    + tgi("Starting shard rank=0", 50, "shard-manager: text_generation_launcher")
    + tgi("Waiting for shard to be ready... rank=0", 60, "shard-manager: text_generation_launcher")
    + tgi("Shard ready in 47.643196061s rank=0", 97, "shard-manager: text_generation_launcher")
    + tgi("Starting Webserver", 98)
    + tgi("backends/v3/src/lib.rs:125: Warming up model", 99, "text_generation_router_v3")
    + tgi("Cuda Graphs are enabled for sizes [32, 16, 8, 4, 2, 1]", 101)
)


def test_tgi_downloads_counting_files_then_loads_serves_and_warms_up() -> None:
    found = marks("tgi", TGI_MAIN)
    assert seen(found) == [
        ("downloading weights", 4, 4),
        ("loading weights", None, None),
        ("starting the API server", None, None),
        ("warming up", None, None),
        ("capturing CUDA graphs", None, None),
    ]
    # stamped in UTC
    assert found[1]["at"] == calendar.timegm((2024, 9, 3, 4, 36, 50))


# ------------------------------------------------------------------ llama.cpp

LLAMACPP_2026 = (
    "0.00.012.000 I build: 8800 (2f72460) with cc (GCC) 14.2.1 for x86_64-linux-gnu\n"
    "0.00.020.000 I main: loading model\n"
    "0.00.020.100 I srv    load_model: loading model '/models/qwen3-8b-q4_k_m.gguf'\n"
    "0.00.100.000 I llama_model_loader: loaded meta data with 32 key-value pairs and 399"
    " tensors from /models/qwen3-8b-q4_k_m.gguf (version GGUF V3 (latest))\n"
    "0.01.200.000 I load_tensors: loading model tensors, this can take a while... (mmap = true)\n"
    "0.01.210.000 I load_tensors: offloaded 37/37 layers to GPU\n"
    "0.04.000.000 I llama_context: constructing llama_context\n"
    "0.04.010.000 I llama_kv_cache:      CUDA0 KV buffer size =  4608.00 MiB\n"
    "0.04.500.000 I common_init_from_params: warming up the model with an empty run - please"
    " wait ... (--no-warmup to disable)\n"
)


def test_llama_server_loads_its_model_then_its_tensors_then_its_context() -> None:
    found = marks("llamacpp", LLAMACPP_2026)
    assert seen(found) == [
        ("loading model", None, None),
        ("loading weights", None, None),
        ("allocating KV cache", None, None),
        ("warming up", None, None),
    ]
    # stamped by time since the process started
    assert [m["at"] - STARTED for m in found] == pytest.approx([0.0201, 1.2, 4.0, 4.5], abs=1e-3)


def test_every_engines_progress_regex_has_done_and_total() -> None:
    for engine in SPECS.values():
        for name, _, patterns in compile_phases(request_phases(engine.name)):
            phase = next(p for p in engine.phases if p.name == name)
            assert len(patterns) == (phase.progress is not None), (engine.name, name)


def test_a_generic_servers_phases_are_every_engines_one_a_name() -> None:
    every = [p for e in SPECS.values() for p in request_phases(e.name)]
    names = [name for name, _, _ in compile_phases(every)]
    assert len(names) == len(set(names))
    # its log is an SGLang run's: the phases and figures are SGLang's
    stamps = [[s.pattern, s.kind] for e in SPECS.values() for s in e.stamps]
    scan = PhaseScan(compile_phases(every), Dater(stamps, WRITTEN, STARTED), 0)
    data = SGLANG_055.encode()
    scan.feed(data, 0, len(data))
    assert seen(scan.marks()) == SGLANG_ORDER


def test_the_readiness_pass_feeds_the_scan_across_its_reads_and_long_bar_lines(
    tmp_path,
) -> None:
    """A phase line across readiness's 1 MiB reads and a bar longer than the line it
    carries between them (64 KiB) give the marks the whole text gives."""
    filler = "[2025-11-30 11:17:30 TP0] " + "w" * 100 + "\n"
    head = SGLANG_055[: SGLANG_055.index("[2025-11-30 11:17:55 TP0] Capture cuda graph begin")]
    # the capture's line begins 36 bytes before the first read ends, its text 10 bytes
    need = 1024 * 1024 - 36 - len(head.encode())
    pad = filler * (need // len(filler) - 1)
    pad += "[2025-11-30 11:17:31 TP0] " + "w" * (need - len(pad) - 27) + "\n"
    long_bar = bars("Capturing batches (bs=160 avail_mem=38.40 GB)", 1500)
    text = (
        head
        + pad
        + "[2025-11-30 11:17:55 TP0] Capture cuda graph begin. avail mem=38.50 GB\n"
        + long_bar
        + SGLANG_055[SGLANG_055.index("[2025-11-30 11:18:01 TP0] Capture cuda graph end") :]
        + "[2025-11-30 11:18:07] The server is fired up and ready to roll!\n"
    )
    data = text.encode()
    assert len(long_bar) > 64 * 1024
    needle = data.index(b"Capture cuda graph begin")
    assert needle < 1024 * 1024 < needle + len("Capture cuda graph begin")
    log = tmp_path / "serve.log"
    log.write_bytes(data)
    stamps = [[s.pattern, s.kind] for s in SPECS["sglang"].stamps]
    scan = PhaseScan(compile_phases(request_phases("sglang")), Dater(stamps, WRITTEN, STARTED), 0)
    fd = os.open(log, os.O_RDONLY)
    try:
        found = scan_for(fd, 0, len(data), [SPECS["sglang"].ready[0].encode()], watch=scan)
    finally:
        os.close(fd)
    assert found is not None and found[1].endswith("ready to roll!")
    assert scan.marks() == marks("sglang", text)
    assert seen(scan.marks())[2] == ("capturing CUDA graphs", 1500, 1500)
