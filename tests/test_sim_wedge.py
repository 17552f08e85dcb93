"""Real sims that stop serving while their process lives on (wedged, nccl-timeout,
engine-dead), streamed answers, and the repeat scenario's canary answers."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import threading
import time
from pathlib import Path

import psutil
import pytest
from sim_helpers import Sim, wait_until

pytestmark = pytest.mark.integration

#: server flags per engine (a model big enough that a long answer takes many seconds)
SERVERS = {
    "sglang": ("--model-path", "Qwen/Qwen3-8B"),
    "vllm": ("serve", "Qwen/Qwen3-8B"),
    "llamacpp": ("-m", "/m/Qwen3-8B-Q4_K_M.gguf"),
    "tgi": ("--model-id", "Qwen/Qwen3-8B"),
}
#: tokens of an answer that is still running when the engine stops
LONG = 3000
#: a hang is a request that has not answered after this many seconds
HANG_SECONDS = 1.5
#: how long a stream must stay silent to count as stopped (many times the sim's stream tick)
SILENT_SECONDS = 1.0


class Stream:
    """One streamed answer read line by line in a thread, each line with when it came."""

    def __init__(self, port: int, path: str, payload: object) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        body = json.dumps(payload)
        self.conn.request("POST", path, body, {"content-type": "application/json"})
        self.sock = self.conn.sock
        self.response = self.conn.getresponse()
        self.lines: list[tuple[float, bytes]] = []
        self.ended = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for raw in self.response:
                self.lines.append((time.monotonic(), raw))
        except (OSError, http.client.HTTPException):
            pass
        self.ended.set()

    def events(self) -> list[bytes]:
        return [raw.rstrip(b"\n") for _, raw in list(self.lines) if raw.strip()]

    def silent_for(self, seconds: float) -> bool:
        """True once no line came for ``seconds`` (polled by ``wait_until``)."""
        lines = list(self.lines)
        last = lines[-1][0] if lines else 0.0
        return bool(lines) and time.monotonic() - last >= seconds

    def close(self) -> None:
        """Drop the connection; the reading thread's blocked read returns at once."""
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_RDWR)
        self.ended.wait(5)
        self.conn.close()


def stream_request(engine: str, tokens: int) -> tuple[str, dict[str, object]]:
    if engine == "tgi":
        return "/generate_stream", {"inputs": "hello", "parameters": {"max_new_tokens": tokens}}
    payload = {"model": "m", "prompt": "hello", "max_tokens": tokens, "stream": True}
    return "/v1/completions", payload


def plain_request(engine: str, tokens: int) -> tuple[str, dict[str, object]]:
    if engine == "tgi":
        return "/generate", {"inputs": "hello", "parameters": {"max_new_tokens": tokens}}
    return "/v1/completions", {"model": "m", "prompt": "hello", "max_tokens": tokens}


#: an access line (uvicorn's, llama-server's request log): not a sign of progress
ACCESS = re.compile(r' - "[A-Z]+ \S+ HTTP/1\.1" \d{3}|log_server_r: request: ')


def progress_lines(lines: list[str]) -> list[str]:
    """Lines that are neither access lines nor vLLM's one 0.0 stats line."""
    return [
        line
        for line in lines
        if not ACCESS.search(line) and "Avg generation throughput: 0.0 tokens/s" not in line
    ]


@pytest.mark.parametrize("engine", ["sglang", "vllm", "llamacpp", "tgi"])
def test_wedged_keeps_health_and_hangs_requests_without_progress(
    tmp_path: Path, engine: str
) -> None:
    sim = Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.3",
        "--scenario",
        "wedged",
        "--wedge-after",
        "1.5",
        "--stats-interval",
        "0.3",
        server=SERVERS[engine],
    )
    stream = None
    try:
        sim.wait_ready()
        path, payload = stream_request(engine, LONG)
        stream = Stream(sim.port, path, payload)
        assert stream.response.status == 200
        wait_until(lambda: len(stream.events()) >= 3, 10, "the stream to start")
        wait_until(lambda: stream.silent_for(SILENT_SECONDS), 15, "the stream to stop")
        assert not stream.ended.is_set()
        assert not any(
            b"[DONE]" in line or b'generated_text":"' in line for line in stream.events()
        )
        seen = len(sim.lines())
        assert all(sim.get("/health")[0] == 200 for _ in range(3))
        path, payload = plain_request(engine, 4)
        assert sim.post(path, payload, timeout=HANG_SECONDS) == (0, b"")  # hangs
        late = Stream(sim.port, *stream_request(engine, 4))
        time.sleep(SILENT_SECONDS)  # the engine stays silent: nothing to wait for
        assert late.events() == []
        late.close()
        assert sim.proc.poll() is None
        assert progress_lines(sim.lines()[seen:]) == []
        if engine == "vllm":  # one last stats line with 0.0, then the idle engine's silence
            stats = [line for line in sim.lines() if "Avg generation throughput" in line]
            assert "Avg generation throughput: 0.0 tokens/s" in stats[-1]
            assert sum("Avg generation throughput: 0.0 tokens/s" in line for line in stats) == 1
    finally:
        if stream is not None:
            stream.close()
        sim.stop()


def test_a_wedged_vllm_keeps_its_last_metrics_and_running_count(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        "vllm",
        "--load-seconds",
        "0.3",
        "--scenario",
        "wedged",
        "--wedge-after",
        "1.0",
        "--stats-interval",
        "0.3",
        server=SERVERS["vllm"],
    )
    stream = None
    try:
        sim.wait_ready()
        stream = Stream(sim.port, *stream_request("vllm", LONG))
        wait_until(lambda: stream.silent_for(SILENT_SECONDS), 15, "the stream to stop")
        sim.wait_for(r"Avg generation throughput: 0\.0 tokens/s, Running: 1 reqs")
        first = sim.get("/metrics")[1]
        time.sleep(SILENT_SECONDS)  # counters of a stopped engine stay put
        generation = re.compile(rb"^vllm:generation_tokens_total\{.*\} (\S+)$", re.MULTILINE)
        assert generation.findall(first) == generation.findall(sim.get("/metrics")[1])
    finally:
        if stream is not None:
            stream.close()
        sim.stop()


#: (engine, version, tp) of the nccl-timeout runs: torch 2.4, 2.5, 2.6 and 2.8/2.9 shapes
NCCL_RUNS = [
    ("sglang", "0.4.0", 2),
    ("sglang", "0.5.11", 2),
    ("vllm", "0.6.0", 2),
    ("vllm", "0.8.5", 1),
    ("vllm", "0.20.0", 2),
]


@pytest.mark.parametrize(("engine", "version", "tp"), NCCL_RUNS)
def test_nccl_timeout_prints_the_watchdog_lines_then_stays_up(
    tmp_path: Path, engine: str, version: str, tp: int
) -> None:
    sim = Sim(
        tmp_path,
        engine,
        "--engine-version",
        version,
        "--load-seconds",
        "0.3",
        "--scenario",
        "nccl-timeout",
        "--wedge-after",
        "1.0",
        "--tp",
        str(tp),
        server=SERVERS[engine],
    )
    stream = None
    try:
        sim.wait_ready()
        stream = Stream(sim.port, *stream_request(engine, LONG))
        sim.wait_for(rf"\[rank{tp - 1}\]:.*Some NCCL operations have failed or timed out\.")
        for rank in range(tp):
            mine = [line for line in sim.lines() if f"[rank{rank}]:[E" in line]
            assert "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" in mine[0]
            assert "milliseconds before timing out." in mine[0]
            assert "failure detected by watchdog" in mine[1] or "Timeout at NCCL work" in mine[1]
            assert "Some NCCL operations have failed or timed out." in mine[-1]
        end = len(sim.lines())
        assert sim.get("/health")[0] == 200
        assert sim.post(*plain_request(engine, 4), timeout=HANG_SECONDS) == (0, b"")
        assert sim.proc.poll() is None
        assert not stream.ended.is_set()
        assert progress_lines(sim.lines()[end:]) == []
    finally:
        if stream is not None:
            stream.close()
        sim.stop()


#: the line each vLLM release prints when its engine core dies at run time
ENGINE_DEATH = {
    "0.12.0": r"Engine core proc EngineCore_DP0 died unexpectedly, shutting down client\.",
    "0.20.0": r"EngineDeadError: EngineCore encountered an issue\. See stack trace \(above\)",
    "0.33.0": r"Worker proc Worker_TP0 died unexpectedly \(exit code: -9\)",
}


def engine_cores(pid: int) -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process(pid).children()
        if child.is_running()
        and child.status() != psutil.STATUS_ZOMBIE
        and child.name().startswith("VLLM::EngineCor")
    ]


@pytest.mark.parametrize("version", sorted(ENGINE_DEATH))
def test_engine_dead_kills_the_core_and_answers_500(tmp_path: Path, version: str) -> None:
    sim = Sim(
        tmp_path,
        "vllm",
        "--engine-version",
        version,
        "--load-seconds",
        "0.3",
        "--scenario",
        "engine-dead",
        "--wedge-after",
        "1.0",
        server=SERVERS["vllm"],
    )
    try:
        sim.wait_ready()
        wait_until(lambda: len(engine_cores(sim.pid)) == 1, 10, "the engine core process")
        sim.wait_for(ENGINE_DEATH[version])
        wait_until(lambda: engine_cores(sim.pid) == [], 10, "the engine core to exit")
        assert sim.get("/health")[0] == 200
        assert sim.post(*plain_request("vllm", 4), timeout=10) == (500, b"")
        streamed = sim.post(*stream_request("vllm", 4), timeout=10)
        assert streamed == (500, b"")
        assert sim.get("/metrics")[0] == 200
        assert sim.proc.poll() is None
        assert 'POST /v1/completions HTTP/1.1" 500 Internal Server Error' in sim.text()
    finally:
        sim.stop()


def data_events(events: list[bytes], prefix: bytes) -> list[bytes]:
    assert all(line.startswith(prefix) for line in events), events[:3]
    return [line[len(prefix) :] for line in events]


@pytest.mark.parametrize("engine", ["sglang", "vllm", "llamacpp"])
def test_a_stream_comes_token_by_token_with_usage_then_done(tmp_path: Path, engine: str) -> None:
    sim = Sim(tmp_path, engine, "--load-seconds", "0.3", server=SERVERS[engine])
    try:
        sim.wait_ready()
        payload = {
            "model": "m",
            "prompt": "hello",
            "max_tokens": 60,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0.6,
            "top_p": 0.95,
            "top_k": 20,
            "min_p": 0.0,
            "repetition_penalty": 1.0,
        }
        stream = Stream(sim.port, "/v1/completions", payload)
        assert stream.response.status == 200, stream.events()
        assert stream.response.getheader("content-type", "").startswith("text/event-stream")
        assert stream.response.getheader("transfer-encoding") == "chunked"
        if engine == "llamacpp":  # cpp-httplib's: no charset, its keep-alive limits
            assert stream.response.getheader("content-type") == "text/event-stream"
            assert stream.response.getheader("keep-alive") == "timeout=5, max=5"
        assert stream.ended.wait(30)
        events = data_events(stream.events(), b"data: ")
        assert events[-1] == b"[DONE]"
        chunks = [json.loads(event) for event in events[:-1]]
        assert {chunk["object"] for chunk in chunks} == {"text_completion"}
        usage = chunks.pop()
        assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 60
        reasons = [chunk["choices"][0]["finish_reason"] for chunk in chunks]
        assert reasons[-1] == "length" and set(reasons[:-1]) == {None}
        text = "".join(chunk["choices"][0]["text"] for chunk in chunks)
        assert len(text.split()) == 60
        arrivals = {round(when, 3) for when, raw in stream.lines if raw.startswith(b"data: {")}
        assert len(arrivals) >= 3  # spread over the generation, not all at its end
    finally:
        sim.stop()


def test_a_chat_stream_opens_with_the_role(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "vllm", "--load-seconds", "0.3", server=SERVERS["vllm"])
    try:
        sim.wait_ready()
        payload = {
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 12,
            "stream": True,
        }
        stream = Stream(sim.port, "/v1/chat/completions", payload)
        assert stream.ended.wait(30)
        events = data_events(stream.events(), b"data: ")
        assert events[-1] == b"[DONE]"
        chunks = [json.loads(event) for event in events[:-1]]
        assert {chunk["object"] for chunk in chunks} == {"chat.completion.chunk"}
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"
        text = "".join(chunk["choices"][0]["delta"].get("content", "") for chunk in chunks)
        assert len(text.split()) == 12
    finally:
        sim.stop()


def test_tgi_generate_stream_has_its_own_shape(tmp_path: Path) -> None:
    sim = Sim(tmp_path, "tgi", "--load-seconds", "0.3", server=SERVERS["tgi"])
    try:
        sim.wait_ready()
        payload = {"inputs": "hello", "parameters": {"max_new_tokens": 20, "temperature": 0.7}}
        stream = Stream(sim.port, "/generate_stream", payload)
        assert stream.ended.wait(30)
        raw = stream.events()
        assert all(line.startswith(b"data:{") for line in raw)  # axum's SSE: no space
        events = [json.loads(line[len(b"data:") :]) for line in raw]
        assert [event["index"] for event in events] == list(range(1, 21))
        assert set(events[0]["token"]) == {"id", "text", "logprob", "special"}
        assert all(event["generated_text"] is None for event in events[:-1])
        assert all(event["details"] is None for event in events[:-1])
        last = events[-1]
        assert last["generated_text"] == "".join(event["token"]["text"] for event in events)
        assert last["details"]["finish_reason"] == "length"
        assert last["details"]["generated_tokens"] == 20
        sim.wait_for(r"generate_stream.*Success")
    finally:
        sim.stop()


LOOP = "I will repeat the answer."


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_repeat_answers_canaries_with_the_loop_and_accepts_every_draft(
    tmp_path: Path, engine: str
) -> None:
    spec = {
        "sglang": ("--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"),
        "vllm": ("--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 3}'),
    }[engine]
    sim = Sim(
        tmp_path,
        engine,
        "--load-seconds",
        "0.3",
        "--scenario",
        "repeat",
        "--stats-interval",
        "0.3",
        server=(*SERVERS[engine], *spec),
    )
    try:
        sim.wait_ready()
        status, body = sim.post(*plain_request(engine, 200))
        assert status == 200
        assert json.loads(body)["choices"][0]["text"].strip().startswith(f"{LOOP} {LOOP}")
        stream = Stream(sim.port, *stream_request(engine, 200))
        assert stream.ended.wait(30)
        chunks = [json.loads(e) for e in data_events(stream.events(), b"data: ")[:-1]]
        text = "".join(chunk["choices"][0]["text"] for chunk in chunks)
        assert text.strip().startswith(f"{LOOP} {LOOP} {LOOP}")
        if engine == "sglang":
            rate = float(sim.wait_for(r"accept rate: (\d+\.\d+)").group(1))
        else:
            rate = float(sim.wait_for(r"Avg Draft acceptance rate: (\d+\.\d+)%").group(1)) / 100
        assert rate >= 0.95
    finally:
        sim.stop()
