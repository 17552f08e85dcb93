"""The slow-load scenario: each engine's startup phases in its own words, in order, with counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sim_helpers import Sim

from tui.sim.cli import engine_kind, parse_config
from tui.sim.server import SimServer

SHARDS = 5
#: engine -> (sim arguments, server flags)
LAUNCH = {
    "vllm": (("--tp", "2"), ("serve", "Qwen/Qwen3-8B")),
    "sglang": (("--tp", "2"), ("--model-path", "Qwen/Qwen3-8B")),
    "tgi": (("--tp", "2"), ("--model-id", "Qwen/Qwen3-8B")),
    "llamacpp": ((), ("-m", "/models/Qwen3-8B-Q4_K_M.gguf")),
}
#: engine -> the lines that open each phase, launch to ready, in the order they come
PHASES = {
    "vllm": (
        "Starting to load model Qwen/Qwen3-8B...",
        "Loading safetensors checkpoint shards:   0% Completed | 0/5 [",
        "Model loading took",
        "Available KV cache memory:",
        "GPU KV cache size:",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|",
        "Capturing CUDA graphs (decode, FULL):   0%|",
        "Graph capturing finished in",
        "init engine (profile, create kv cache, warmup model) took",
        "Starting vLLM server on",
        "Application startup complete.",
    ),
    "sglang": (
        "Init torch distributed begin.",
        "Load weight begin.",
        "Loading safetensors checkpoint shards:   0% Completed | 0/5 [",
        "Load weight end.",
        "KV Cache is allocated.",
        "Capture cuda graph begin.",
        "Capture cuda graph bs [1, 2, 4, 8, 12, 16, 24,",
        "Capturing batches (bs=256 avail_mem=",
        "Capture cuda graph end.",
        "Uvicorn running on",
        "POST /generate HTTP/1.1",
        "The server is fired up and ready to roll!",
    ),
    "tgi": (
        "Starting check and download process for Qwen/Qwen3-8B",
        "Download file: model-00001-of-00005.safetensors",
        "Successfully downloaded weights for Qwen/Qwen3-8B",
        "Starting shard",
        "Shard ready in",
        "Starting Webserver",
        "Warming up model",
        "KV-cache blocks:",
        "Cuda Graphs are enabled for sizes",
        "Setting max batch total tokens to",
        "Connected",
    ),
    "llamacpp": (
        "load_model: loading model '/models/Qwen3-8B-Q4_K_M-00001-of-00005.gguf'",
        "llama_model_loader: additional 4 GGUFs metadata loaded.",
        "llama_model_loader: loaded meta data with",
        "load_tensors: loading model tensors",
        "load_tensors:        CUDA0 model buffer size",
        "llama_kv_cache:      CUDA0 KV buffer size",
        "warming up the model with an empty run",
        "listening on http://",
    ),
}
#: engine -> regex of a progress update whose (done, total) must run 0 or 1 .. total in order
PROGRESS = {
    "vllm": (
        r"Loading safetensors checkpoint shards: +\d+% Completed \| (\d+)/(\d+) \[",
        r"Capturing CUDA graphs \(mixed prefill-decode, PIECEWISE\): +\d+%\|[^|]*\| (\d+)/(\d+) \[",
        r"Capturing CUDA graphs \(decode, FULL\): +\d+%\|[^|]*\| (\d+)/(\d+) \[",
    ),
    "sglang": (
        r"Loading safetensors checkpoint shards: +\d+% Completed \| (\d+)/(\d+) \[",
        r"Capturing batches \(bs=\d+ avail_mem=\d+\.\d\d GB\): +\d+%\|[^|]*\| (\d+)/(\d+) \[",
    ),
    "tgi": (r"Download: \[(\d+)/(\d+)\] -- ETA: ",),
    "llamacpp": (),
}


def pieces(text: str) -> list[str]:
    """The log cut at every ``\\n`` and ``\\r``, as a terminal would show each update."""
    return [piece for piece in re.split(r"[\r\n]", text) if piece.strip()]


def first_at(shown: list[str], needle: str) -> int:
    return next((at for at, piece in enumerate(shown) if needle in piece), -1)


def slow_sim(tmp_path: Path, engine: str, *extra: str) -> Sim:
    sim_args, server = LAUNCH[engine]
    return Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.5",
        "--scenario",
        "slow-load",
        *sim_args,
        *extra,
        server=server,
    )


@pytest.mark.integration
@pytest.mark.parametrize("engine", sorted(LAUNCH))
def test_each_phase_comes_in_order_with_its_progress(tmp_path: Path, engine: str) -> None:
    sim = slow_sim(tmp_path, engine, "--shards", str(SHARDS))
    try:
        sim.wait_ready(timeout=60)
    finally:
        sim.stop()
    shown = pieces(sim.text())
    places = [first_at(shown, needle) for needle in PHASES[engine]]
    missing = [needle for needle, at in zip(PHASES[engine], places, strict=True) if at < 0]
    assert not missing, f"never printed: {missing}"
    assert places == sorted(places), list(zip(PHASES[engine], places, strict=True))
    for pattern in PROGRESS[engine]:
        counts = [
            (int(match.group(1)), int(match.group(2)))
            for piece in shown
            if (match := re.search(pattern, piece))
        ]
        assert counts, pattern
        total = counts[0][1]
        done = [count for count, _ in counts]
        assert {whole for _, whole in counts} == {total}
        assert done == sorted(done)
        assert set(done) >= set(range(1, total + 1))
        if "safetensors" in pattern or "Download" in pattern:
            assert total == SHARDS


@pytest.mark.integration
def test_the_default_is_eight_shards(tmp_path: Path) -> None:
    sim = slow_sim(tmp_path, "vllm")
    try:
        sim.wait_ready(timeout=60)
    finally:
        sim.stop()
    done = re.findall(
        r"Loading safetensors checkpoint shards: +\d+% Completed \| (\d+)/8 \[", sim.text()
    )
    assert [int(count) for count in dict.fromkeys(done)] == list(range(9))


def plan_offsets(engine: str, load_seconds: float) -> list[float]:
    """When each step of a slow-load startup falls, seconds after the first line."""
    sim_args, server = LAUNCH[engine]
    argv = ["--engine", engine, "--port", "0", "--seed", "1", *sim_args]
    argv += ["--load-seconds", str(load_seconds), "--scenario", "slow-load", "--", *server]
    cfg = parse_config(argv)
    kind = engine_kind(engine)
    return [offset for offset, _ in kind.factory(cfg, SimServer(cfg, kind.factory)).plan()]


@pytest.mark.unit
@pytest.mark.parametrize("engine", sorted(LAUNCH))
def test_each_step_is_a_fixed_share_of_the_startup(
    engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BABYSIT_SIM_GPUS", "8xh100")
    once = plan_offsets(engine, 1.0)
    assert plan_offsets(engine, 1.0) == once
    thrice = plan_offsets(engine, 3.0)
    assert len(thrice) == len(once)
    assert all(later == pytest.approx(3 * first) for first, later in zip(once, thrice, strict=True))
