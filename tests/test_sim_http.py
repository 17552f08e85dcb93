"""The HTTP side of real sim processes: readiness, metrics, info endpoints, generation."""

from __future__ import annotations

import json
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sim_helpers import Sim, wait_until

pytestmark = pytest.mark.integration

#: readiness markers, reference §5.4
READY = {
    "sglang": "The server is fired up and ready to roll!",
    "vllm": "Application startup complete.",
}
SPEC = {
    "sglang": (
        "--model-path",
        "Qwen/Qwen3-8B",
        "--speculative-algorithm",
        "NEXTN",
        "--speculative-num-steps",
        "3",
        "--speculative-num-draft-tokens",
        "4",
        "--enable-metrics",
    ),
    "vllm": (
        "serve",
        "Qwen/Qwen3-8B",
        "--speculative-config",
        '{"method": "eagle3", "model": "yuhuili/EAGLE3-Qwen3-8B", "num_speculative_tokens": 3}',
    ),
}


def generate(sim: Sim, engine: str, tokens: int, prompt: str = "hello there") -> tuple[int, dict]:
    if engine == "sglang":
        status, body = sim.post(
            "/generate", {"text": prompt, "sampling_params": {"max_new_tokens": tokens}}
        )
    else:
        status, body = sim.post(
            "/v1/completions", {"model": "Qwen/Qwen3-8B", "prompt": prompt, "max_tokens": tokens}
        )
    return status, json.loads(body or b"{}")


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_health_turns_200_exactly_when_the_ready_line_is_written(
    tmp_path: Path, engine: str
) -> None:
    sim = Sim(tmp_path, engine, "--load-seconds", "1.0", server=SPEC[engine])
    statuses: list[int] = []

    def ready_line_then_200() -> bool:
        """One look: the log before and after a /health, each time in that order."""
        before = READY[engine] in sim.text()
        status, _ = sim.get("/health", timeout=5)
        after = READY[engine] in sim.text()
        statuses.append(status)
        if status == 200:
            assert after, "/health said 200 before the ready line was in the log"
        if before:
            assert status == 200, f"ready line already written but /health said {status}"
        return before

    try:
        wait_until(ready_line_then_200, 20, lambda: f"ready; statuses {statuses[-5:]}", 0.005)
    finally:
        sim.stop()
    answered = [s for s in statuses if s]
    assert 503 in answered, "never saw the loading state"
    first_ok = answered.index(200)
    assert set(answered[:first_ok]) == {503}
    assert set(answered[first_ok:]) == {200}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Sim, list[dict]]]:
    """One sim per engine with speculative decoding, after a few concurrent requests."""
    tmp = tmp_path_factory.mktemp("http")
    sims = {
        engine: Sim(
            tmp,
            engine,
            "--load-seconds",
            "0.4",
            "--seed",
            "5",
            "--stats-interval",
            "0.3",
            server=SPEC[engine],
        )
        for engine in SPEC
    }
    try:
        for sim in sims.values():
            sim.wait_ready()
        results: dict[str, list[dict]] = {}
        with ThreadPoolExecutor(max_workers=8) as pool:
            futures = {
                engine: [pool.submit(generate, sim, engine, 200, f"p{i}") for i in range(3)]
                for engine, sim in sims.items()
            }
            for engine, items in futures.items():
                answers = [f.result() for f in items]
                assert all(status == 200 for status, _ in answers), answers
                results[engine] = [body for _, body in answers]
        yield {engine: (sims[engine], results[engine]) for engine in sims}
    finally:
        for sim in sims.values():
            sim.stop()


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_metrics_parse_with_prometheus_client(served, engine: str) -> None:
    sim, _ = served[engine]
    status, body = sim.get("/metrics")
    assert status == 200
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    if engine == "sglang":
        for name in (
            "sglang:num_running_reqs",
            "sglang:gen_throughput",
            "sglang:token_usage",
            "sglang:num_queue_reqs",
            "sglang:spec_accept_length",
            "sglang:prompt_tokens",
            "sglang:generation_tokens",
            "sglang:time_to_first_token_seconds",
        ):
            assert name in families, name
        accept = families["sglang:spec_accept_length"].samples[0]
        assert 3.5 < accept.value <= 4.0
        assert accept.labels == {
            "engine_type": "unified",
            "model_name": "Qwen/Qwen3-8B",
            "pp_rank": "0",
            "tp_rank": "0",
        }
        assert families["sglang:generation_tokens"].samples[0].value >= 600
    else:
        for name in (
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
            "vllm:kv_cache_usage_perc",
            "vllm:prompt_tokens",
            "vllm:generation_tokens",
            "vllm:spec_decode_num_drafts",
            "vllm:spec_decode_num_draft_tokens",
            "vllm:spec_decode_num_accepted_tokens",
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "vllm:time_to_first_token_seconds",
            "vllm:e2e_request_latency_seconds",
        ):
            assert name in families, name
        drafts = families["vllm:spec_decode_num_draft_tokens"].samples[0].value
        accepted = families["vllm:spec_decode_num_accepted_tokens"].samples[0].value
        assert 0.9 < accepted / drafts <= 1.0
        positions = {
            s.labels["position"]
            for s in families["vllm:spec_decode_num_accepted_tokens_per_pos"].samples
            if s.name.endswith("_total")
        }
        assert positions == {"0", "1", "2"}
        count = [
            s
            for s in families["vllm:e2e_request_latency_seconds"].samples
            if s.name.endswith("_count")
        ]
        assert count[0].value == 3


def test_sglang_metrics_need_enable_metrics(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "sglang", "--load-seconds", "0.2", server=("--model-path", "Qwen/Qwen3-8B"))
    try:
        sim.wait_ready()
        assert sim.get("/metrics")[0] == 404
    finally:
        sim.stop()


def test_sglang_info_endpoints_reflect_the_flags(served) -> None:
    sim, answers = served["sglang"]
    status, body = sim.get("/get_server_info")
    info = json.loads(body)
    assert status == 200
    assert (
        info["speculative_algorithm"] == "EAGLE"
    )  # NEXTN is folded into EAGLE like ServerArgs does
    assert info["speculative_num_draft_tokens"] == 4
    assert info["internal_states"][0]["avg_spec_accept_length"] > 3.5
    status, body = sim.get("/get_model_info")
    assert status == 200 and json.loads(body)["model_path"] == "Qwen/Qwen3-8B"
    assert all(a["meta_info"]["completion_tokens"] == 200 for a in answers)
    assert "Endpoint '/get_model_info' is deprecated" in sim.text()  # 0.5.11 warns like >=0.5.6


def test_vllm_models_and_version(served) -> None:
    sim, answers = served["vllm"]
    status, body = sim.get("/v1/models")
    assert status == 200
    assert json.loads(body)["data"][0]["id"] == "Qwen/Qwen3-8B"
    assert json.loads(sim.get("/version")[1]) == {"version": "0.20.0"}
    assert all(a["usage"]["completion_tokens"] == 200 for a in answers)
    assert sim.get("/nope")[0] == 404


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_concurrency_shows_as_running_and_queued(tmp_path: Path, engine: str) -> None:
    limit = ("--max-running-requests", "2") if engine == "sglang" else ("--max-num-seqs", "2")
    server = ("--model-path", "Qwen/Qwen3-8B") if engine == "sglang" else ("serve", "Qwen/Qwen3-8B")
    sim = Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.2",
        "--stats-interval",
        "0.25",
        server=(*server, *limit, "--enable-metrics"),
    )
    try:
        sim.wait_ready()
        with ThreadPoolExecutor(max_workers=4) as pool:
            futures = [pool.submit(generate, sim, engine, 80, f"q{i}") for i in range(4)]
            if engine == "sglang":
                sim.wait_for(r"Decode batch, #running-req: 2, .*#queue-req: [12]$", timeout=10)
            else:
                sim.wait_for(r"Running: 2 reqs, Waiting: [12] reqs", timeout=10)
            assert all(f.result()[0] == 200 for f in futures)
        sim.signal(signal.SIGTERM)
        assert sim.wait() == 0
    finally:
        sim.stop()
