"""Golden tests: every line a simulated server writes matches the engine's own format.

The regexes below are written by hand from the format strings quoted in the
log-format reference (SGLang §1.1-1.5, vLLM §2.1-2.4, uvicorn, parser notes §5),
one set per release; they are not derived from the simulator's code. Two
SGLang and vLLM releases on each side of every format change are run as real
processes, under load with speculative decoding, then stopped with SIGTERM.
"""

from __future__ import annotations

import re
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sim_helpers import Sim

pytestmark = pytest.mark.integration

# --- SGLang -------------------------------------------------------------------------------

#: reference §5.1 (prefix: timestamp, optional .mmm, ordered rank tags)
SGLANG_PREFIX = re.compile(
    r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d{3})?((?: [A-Z_]+\d+)*)\] (.*)$"
)

#: scheduler-process lines (rank tagged where the release tags them), reference §1.4
SGLANG_SCHEDULER = {
    "dist_begin": r"^Init torch distributed begin\.$",
    "dist_end": r"^Init torch distributed ends\. mem usage=\d+\.\d{2} GB$",
    "load_begin": r"^Load weight begin\. avail mem=\d+\.\d{2} GB$",
    "load_end": (
        r"^Load weight end\. type=\w+, dtype=torch\.\w+, avail mem=\d+\.\d{2} GB, "
        r"mem usage=\d+\.\d{2} GB\.$"
    ),
    "kv": r"^KV Cache is allocated\. #tokens: \d+, K size: \d+\.\d{2} GB, V size: \d+\.\d{2} GB$",
    "pool": r"^Memory pool end\. avail mem=\d+\.\d{2} GB$",
    "graph_begin": (
        r"^Capture cuda graph begin\. This can take up to several minutes\. "
        r"avail mem=\d+\.\d{2} GB$"
    ),
    "graph_end": (
        r"^Capture cuda graph end\. Time elapsed: \d+\.\d{2} s\. mem usage=\d+\.\d{2} GB\. "
        r"avail mem=\d+\.\d{2} GB\.$"
    ),
    "limits": (
        r"^max_total_num_tokens=\d+, chunked_prefill_size=\d+, max_prefill_tokens=\d+, "
        r"max_running_requests=\d+, context_len=\d+, available_gpu_mem=\d+\.\d{2} GB$"
    ),
}
#: main-process lines (never rank tagged), reference §1.4, §1.5 (≤0.5.18 dataclass repr)
SGLANG_MAIN = {
    "server_args": r"^server_args=ServerArgs\(model_path='[^']+', tokenizer_path='[^']+', .*\)$",
    "ready": r"^The server is fired up and ready to roll!$",
}
#: uvicorn's own messages (uvicorn/server.py, lifespan/on.py) and its access format
UVICORN = (
    r"^INFO:     (?:Started server process \[\d+\]|Waiting for application startup\.|"
    r"Application startup complete\.|"
    r"Uvicorn running on http://[\d.]+:\d+ \(Press CTRL\+C to quit\)|Shutting down|"
    r"Waiting for application shutdown\.|Application shutdown complete\.|"
    r"Finished server process \[\d+\])$"
)
ACCESS = r'^INFO:     127\.0\.0\.1:\d+ - "(?:GET|POST) /\S* HTTP/1\.1" \d{3} [A-Za-z ]+$'
#: tqdm bar of weight_utils._BAR_FORMAT: "{desc}: {percentage:3.0f}% Completed | {n_fmt}/{total_fmt}
#: [{elapsed}<{remaining}, {rate_fmt}]\n", written after tqdm's "\r"
TQDM = (
    r"^\rLoading safetensors checkpoint shards: +\d+% Completed \| \d+/\d+ "
    r"\[\d{2}:\d{2}<(?:\d{2}:\d{2}|\?), +(?:\d+\.\d{2}|\?)it/s\]$"
)

#: per release: (Decode regex, Prefill regex, tag of tp=1 scheduler lines, uvicorn re-formatted)
SGLANG_RELEASES = {
    # 0.3.6-0.4.0: "Decode batch. " ... "#queue-req: N"; Prefill with cache hit rate; always " TP0"
    "0.4.0": (
        r"^Decode batch\. #running-req: \d+, #token: \d+, token usage: \d+\.\d{2}, "
        r"gen throughput \(token/s\): \d+\.\d{2}, #queue-req: \d+$",
        r"^Prefill batch\. #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        r"cache hit rate: \d+\.\d{2}%, token usage: \d+\.\d{2}, "
        r"#running-req: \d+, #queue-req: \d+$",
        " TP0",
        False,
    ),
    # 0.4.7-0.4.9: accept len, "cuda graph: B, " before gen throughput; no tag with tp=1
    "0.4.7": (
        r"^Decode batch\. #running-req: \d+, #token: \d+, token usage: \d+\.\d{2}, "
        r"accept len: \d+\.\d{2}, cuda graph: (?:True|False), "
        r"gen throughput \(token/s\): \d+\.\d{2}, #queue-req: \d+$",
        r"^Prefill batch\. #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        r"token usage: \d+\.\d{2}, #running-req: \d+, #queue-req: \d+$",
        "",
        True,
    ),
    # 0.4.10-0.5.8: trailing ", " after #queue-req; 0.5.4.post1+: "Decode batch, "; len + rate
    "0.5.5": (
        r"^Decode batch, #running-req: \d+, #token: \d+, token usage: \d+\.\d{2}, "
        r"accept len: \d+\.\d{2}, accept rate: \d+\.\d{2}, cuda graph: (?:True|False), "
        r"gen throughput \(token/s\): \d+\.\d{2}, #queue-req: \d+, $",
        r"^Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        r"token usage: \d+\.\d{2}, #running-req: \d+, #queue-req: \d+, $",
        "",
        True,
    ),
    # >=0.5.9: no trailing comma; >=0.5.11 Prefill "#pending-token: N, cuda graph: B, input ..."
    "0.5.11": (
        r"^Decode batch, #running-req: \d+, #token: \d+, token usage: \d+\.\d{2}, "
        r"accept len: \d+\.\d{2}, accept rate: \d+\.\d{2}, cuda graph: (?:True|False), "
        r"gen throughput \(token/s\): \d+\.\d{2}, #queue-req: \d+$",
        r"^Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, "
        r"token usage: \d+\.\d{2}, #running-req: \d+, #queue-req: \d+, #pending-token: \d+, "
        r"cuda graph: (?:True|False), input throughput \(token/s\): \d+\.\d{2}$",
        "",
        True,
    ),
}

# --- vLLM ---------------------------------------------------------------------------------

#: reference §2.1: "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s" (<=0.7.3)
VLLM_PREFIX_V0 = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d{2}-\d{2} \d{2}:\d{2}:\d{2}) "
    r"(?P<site>[\w.]+\.py:\d+)\] (?P<msg>.*)$"
)
#: reference §2.1/§5.3: optional "(Name pid=N) ", level, "%m-%d %H:%M:%S", "[file.py:N]" (>=0.8)
VLLM_PREFIX = re.compile(
    r"^(?:\((?P<proc>[A-Za-z_0-9]+(?: rank=\d+)?) pid=(?P<pid>\d+)\) )?"
    r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<ts>\d{2}-\d{2} \d{2}:\d{2}:\d{2}) "
    r"\[(?P<site>[\w.]+\.py:\d+)\] (?P<msg>.*)$"
)
RAW_TAG = re.compile(
    r"^(?:\((?P<proc>[A-Za-z_0-9]+(?: rank=\d+)?) pid=(?P<pid>\d+)\) )?(?P<rest>.*)$", re.DOTALL
)

INIT_TOOK = r"^init engine \(profile, create kv cache, warmup model\) took \d+\.\d{2} seconds$"
CACHE_INFO = (
    r"^Engine \d{3}: vllm cache_config_info with initialization after num_gpu_blocks is: \d+$"
)
VLLM_COMMON = {
    "routes": r"^Available routes are:$",
    "route": r"^Route: /\S*, Methods: [A-Z]+(?:, [A-Z]+)*$",
    "shutdown": r"^Shutting down FastAPI HTTP server\.$",
    "graph": r"^Graph capturing finished in \d+ secs, took \d+\.\d{2} GiB$",
    "load_start": r"^Starting to load model \S+\.\.\.$",
}
#: per release: kind -> regex; a kind listed in REQUIRED must be seen at least once
VLLM_RELEASES: dict[str, dict[str, str]] = {
    "0.6.6": {
        "version": r"^vLLM API server version 0\.6\.6$",
        "args": r"^args: Namespace\(.*\)$",
        "init": (
            r"^Initializing an LLM engine \(v0\.6\.6\) with config: .*, "
            r"use_cached_outputs=(?:True|False), $"
        ),
        "weights": r"^Loading model weights took \d+\.\d{4} GB$",
        "blocks": r"^# GPU blocks: \d+, # CPU blocks: \d+$",
        "concurrency": r"^Maximum concurrency for \d+ tokens per request: \d+\.\d{2}x$",
        "cudagraph_note": (
            r"^(?:Capturing cudagraphs for decoding\. .*|"
            r"If out-of-memory error occurs during cudagraph capture, .*)$"
        ),
        "starting": r"^Starting vLLM API server on http://[\d.]+:\d+$",
        "stats": (
            r"^Avg prompt throughput: \d+\.\d tokens/s, "
            r"Avg generation throughput: \d+\.\d tokens/s, "
            r"Running: \d+ reqs, Swapped: \d+ reqs, Pending: \d+ reqs, "
            r"GPU KV cache usage: \d+\.\d%, CPU KV cache usage: \d+\.\d%\.$"
        ),
        "spec": (
            r"^Speculative metrics: Draft acceptance rate: \d\.\d{3}, "
            r"System efficiency: \d\.\d{3}, "
            r"Number of speculative tokens: \d+, Number of accepted tokens: \d+, "
            r"Number of draft tokens: \d+, Number of emitted tokens: \d+\.$"
        ),
    },
    "0.8.5": {
        "version": r"^vLLM API server version 0\.8\.5$",
        "args": r"^args: Namespace\(.*\)$",
        "init": r"^Initializing a V1 LLM engine \(v0\.8\.5\) with config: .*$",
        "weights": r"^Model loading took \d+\.\d{4} GiB and \d+\.\d{6} seconds$",
        "kv_mem": r"^Available KV cache memory: \d+\.\d{2} GiB$",
        "kv_size": r"^GPU KV cache size: [\d,]+ tokens$",
        "concurrency": r"^Maximum concurrency for [\d,]+ tokens per request: \d+\.\d{2}x$",
        "init_took": INIT_TOOK,
        "starting": r"^Starting vLLM API server on http://[\d.]+:\d+$",
        "stats": (
            r"^Engine \d{3}: Avg prompt throughput: \d+\.\d tokens/s, Avg generation throughput: "
            r"\d+\.\d tokens/s, Running: \d+ reqs, Waiting: \d+ reqs, "
            r"GPU KV cache usage: \d+\.\d%, "
            r"Prefix cache hit rate: \d+\.\d%$"
        ),
        "spec": (
            r"^SpecDecoding metrics: Draft acceptance rate: \d+\.\d%, "
            r"Mean acceptance length: \d+\.\d{2}, "
            r"Accepted: \d+ tokens, Drafted: \d+ tokens, Per-position acceptance rate: "
            r"\d\.\d{3}(?:, \d\.\d{3})*$"
        ),
    },
    "0.10.2": {
        "version": r"^vLLM API server version 0\.10\.2$",
        "args": r"^non-default args: \{.*\}$",
        "init": r"^Initializing a V1 LLM engine \(v0\.10\.2\) with config: .*$",
        "weights": r"^Model loading took \d+\.\d{4} GiB and \d+\.\d{6} seconds$",
        "kv_mem": r"^Available KV cache memory: \d+\.\d{2} GiB$",
        "kv_size": r"^GPU KV cache size: [\d,]+ tokens$",
        "concurrency": r"^Maximum concurrency for [\d,]+ tokens per request: \d+\.\d{2}x$",
        "init_took": INIT_TOOK,
        "cache_info": CACHE_INFO,
        "starting": r"^Starting vLLM API server \d+ on http://[\d.]+:\d+$",
        "stats": (
            r"^Engine \d{3}: Avg prompt throughput: \d+\.\d tokens/s, Avg generation throughput: "
            r"\d+\.\d tokens/s, Running: \d+ reqs, Waiting: \d+ reqs, "
            r"GPU KV cache usage: \d+\.\d%, "
            r"Prefix cache hit rate: \d+\.\d%$"
        ),
        "spec": (
            r"^SpecDecoding metrics: Mean acceptance length: \d+\.\d{2}, Accepted throughput: "
            r"\d+\.\d{2} tokens/s, Drafted throughput: \d+\.\d{2} tokens/s, Accepted: \d+ tokens, "
            r"Drafted: \d+ tokens, Per-position acceptance rate: \d\.\d{3}(?:, \d\.\d{3})*, "
            r"Avg Draft acceptance rate: \d+\.\d%$"
        ),
    },
    "0.33.0": {
        "version": r"^vLLM server version 0\.33\.0, serving model \S+$",
        "args": r"^non-default args: \{.*\}$",
        "init": r"^Initializing a V1 LLM engine \(v0\.33\.0\) with config: .*$",
        "weights": r"^Model loading took [\d.]+ GiB memory and \d+\.\d{6} seconds$",
        "kv_mem": r"^Available KV cache memory: \d+\.\d{2} GiB$",
        "kv_size": (
            r"^\w+ KV cache size: [\d,]+ tokens, "
            r"Maximum concurrency for [\d,]+ tokens per request: \d+\.\d{2}x$"
        ),
        "init_took": (
            r"^init engine \(profile, create kv cache, warmup model\) took \d+\.\d{2} s "
            r"\(compilation: \d+\.\d{2} s\)$"
        ),
        "cache_info": CACHE_INFO,
        "starting": r"^Starting vLLM server on http://[\d.]+:\d+$",
        "stats": (
            r"^(?:Engine \d{3}|\d+ Engines Aggregated): Avg prompt throughput: \d+\.\d tokens/s, "
            r"Avg generation throughput: \d+\.\d tokens/s, Running: \d+ reqs, Waiting: \d+ reqs"
            r"(?:, Deferred: \d+ reqs)?(?:, Preemptions: \d+)?, \w+ KV cache usage: \d+\.\d%"
            r"(?:, Prefix cache hit rate: \d+\.\d%)?$"
        ),
        "spec": (
            r"^SpecDecoding metrics: Mean acceptance length: \d+\.\d{2}, Accepted throughput: "
            r"\d+\.\d{2} tokens/s, Drafted throughput: \d+\.\d{2} tokens/s, Accepted: \d+ tokens, "
            r"Drafted: \d+ tokens, Per-position acceptance rate: \d\.\d{3}(?:, \d\.\d{3})*, "
            r"Avg Draft acceptance rate: \d+\.\d%$"
        ),
    },
}
#: which process tag each kind of line carries, per release (reference §2.1 "Process tag")
VLLM_TAGS = {
    "0.6.6": {"api": None, "engine": None, "uvicorn": None, "tqdm": None},
    "0.8.5": {"api": None, "engine": "EngineCore_0", "uvicorn": None, "tqdm": "EngineCore_0"},
    "0.10.2": {
        "api": "APIServer",
        "engine": "EngineCore_DP0",
        "uvicorn": "APIServer",
        "tqdm": "EngineCore_DP0",
    },
    "0.33.0": {"api": "APIServer", "engine": "EngineCore", "uvicorn": None, "tqdm": None},
}
ENGINE_KINDS = {
    "init",
    "load_start",
    "weights",
    "kv_mem",
    "kv_size",
    "concurrency",
    "graph",
    "init_took",
}

SPEC_SGLANG = (
    "--model-path",
    "Qwen/Qwen3-8B",
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-num-steps",
    "3",
    "--speculative-eagle-topk",
    "1",
    "--speculative-num-draft-tokens",
    "4",
)
SPEC_VLLM = (
    "serve",
    "Qwen/Qwen3-8B",
    "--speculative-config",
    '{"method": "eagle3", "model": "yuhuili/EAGLE3-Qwen3-8B", "num_speculative_tokens": 3}',
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[list[str], int, int]]:
    """All releases side by side: ready, two concurrent requests, SIGTERM -> lines, pid, status."""
    tmp = tmp_path_factory.mktemp("golden")
    sims: dict[str, Sim] = {}
    try:
        for version in SGLANG_RELEASES:
            sims[f"sglang-{version}"] = Sim(
                tmp,
                "sglang",
                "--engine-version",
                version,
                "--load-seconds",
                "0.5",
                "--seed",
                "3",
                server=SPEC_SGLANG,
                name=f"sglang-{version}",
            )
        for version in VLLM_RELEASES:
            sims[f"vllm-{version}"] = Sim(
                tmp,
                "vllm",
                "--engine-version",
                version,
                "--load-seconds",
                "0.5",
                "--seed",
                "3",
                "--stats-interval",
                "0.3",
                server=SPEC_VLLM,
                name=f"vllm-{version}",
            )
        for sim in sims.values():
            sim.wait_ready()

        def drive(key: str) -> None:
            sim = sims[key]
            if key.startswith("sglang"):
                payload = {
                    "text": f"tell me about {key}",
                    "sampling_params": {"max_new_tokens": 400},
                }
                status, _ = sim.post("/generate", payload)
            else:
                payload = {
                    "model": "Qwen/Qwen3-8B",
                    "prompt": f"tell me about {key}",
                    "max_tokens": 400,
                }
                status, _ = sim.post("/v1/completions", payload)
            assert status == 200

        with ThreadPoolExecutor(max_workers=2 * len(sims)) as pool:
            list(pool.map(drive, [key for key in sims for _ in range(2)]))
        for key, sim in sims.items():
            if key.startswith("vllm"):
                sim.wait_for(r"(?:SpecDecoding|Speculative) metrics", timeout=10)
        for sim in sims.values():
            sim.signal(signal.SIGTERM)
        return {key: (sim.lines(), sim.pid, sim.wait()) for key, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.stop()


@pytest.mark.parametrize("version", list(SGLANG_RELEASES))
def test_sglang_every_line_matches_the_release_format(runs, version: str) -> None:
    lines, pid, status = runs[f"sglang-{version}"]
    decode_re, prefill_re, tag, uvicorn_stamped = SGLANG_RELEASES[version]
    assert status == 0
    seen: dict[str, int] = {}
    for line in lines:
        if line == "" or re.match(TQDM, line):
            seen["tqdm"] = seen.get("tqdm", 0) + 1
            continue
        if not uvicorn_stamped and (re.match(UVICORN, line) or re.match(ACCESS, line)):
            kind = "uvicorn" if re.match(UVICORN, line) else "access"
            seen[kind] = seen.get(kind, 0) + 1
            continue
        match = SGLANG_PREFIX.match(line)
        assert match, f"{version}: no SGLang prefix: {line!r}"
        ranks, message = match.group(2), match.group(3)
        kind = None
        for name, regex in {**SGLANG_SCHEDULER, "decode": decode_re, "prefill": prefill_re}.items():
            if re.match(regex, message):
                kind = name
                assert ranks == tag, f"{version}: scheduler line tagged {ranks!r}: {line!r}"
        for name, regex in {**SGLANG_MAIN, "uvicorn": UVICORN, "access": ACCESS}.items():
            if re.match(regex, message):
                kind = name
                assert ranks == "", f"{version}: main-process line with a rank tag: {line!r}"
                assert name not in ("uvicorn", "access") or uvicorn_stamped
        assert kind is not None, f"{version}: line of no known kind: {line!r}"
        seen[kind] = seen.get(kind, 0) + 1
    for kind in [*SGLANG_SCHEDULER, *SGLANG_MAIN, "decode", "prefill", "uvicorn", "access", "tqdm"]:
        assert seen.get(kind), f"{version}: never saw a {kind} line"
    assert f"Started server process [{pid}]" in "\n".join(lines)


def test_sglang_accept_metrics_only_where_the_release_has_them(runs) -> None:
    decode = [line for line in runs["sglang-0.5.11"][0] if "Decode batch" in line]
    lengths = [
        float(m.group(1)) for line in decode if (m := re.search(r"accept len: (\d+\.\d+)", line))
    ]
    rates = [
        float(m.group(1)) for line in decode if (m := re.search(r"accept rate: (\d+\.\d+)", line))
    ]
    assert lengths and all(3.6 <= value <= 4.0 for value in lengths), lengths
    assert rates and all(0.9 <= value <= 1.0 for value in rates), rates
    assert not any("accept" in line for line in runs["sglang-0.4.0"][0] if "Decode batch" in line)


def _vllm_kind(version: str, message: str) -> str | None:
    for name, regex in {**VLLM_COMMON, **VLLM_RELEASES[version]}.items():
        if re.match(regex, message):
            return name
    return None


@pytest.mark.parametrize("version", list(VLLM_RELEASES))
def test_vllm_every_line_matches_the_release_format(runs, version: str) -> None:
    lines, pid, status = runs[f"vllm-{version}"]
    tags = VLLM_TAGS[version]
    prefix_re = VLLM_PREFIX_V0 if version == "0.6.6" else VLLM_PREFIX
    assert status == 0
    seen: dict[str, int] = {}
    for line in lines:
        raw = RAW_TAG.match(line)
        assert raw is not None
        rest, proc = raw.group("rest"), raw.group("proc")
        if rest == "" or re.match(TQDM, rest):
            if rest:
                assert proc == tags["tqdm"], f"{version}: tqdm tag {proc!r}: {line!r}"
            seen["tqdm"] = seen.get("tqdm", 0) + 1
            continue
        if re.match(UVICORN, rest) or re.match(ACCESS, rest):
            assert proc == tags["uvicorn"], f"{version}: uvicorn tag {proc!r}: {line!r}"
            if int(raw.group("pid") or pid) != pid:
                pytest.fail(f"{version}: uvicorn line from another pid: {line!r}")
            seen["uvicorn"] = seen.get("uvicorn", 0) + 1
            continue
        match = prefix_re.match(line)
        assert match, f"{version}: no vLLM prefix: {line!r}"
        kind = _vllm_kind(version, match.group("msg"))
        assert kind is not None, f"{version}: line of no known kind: {line!r}"
        line_proc = match.groupdict().get("proc")
        expected = tags["engine"] if kind in ENGINE_KINDS else tags["api"]
        assert line_proc == expected, f"{version}: {kind} line tagged {line_proc!r}: {line!r}"
        seen[kind] = seen.get(kind, 0) + 1
    required = {*VLLM_RELEASES[version], *VLLM_COMMON, "uvicorn", "tqdm"}
    missing = sorted(kind for kind in required if not seen.get(kind))
    assert not missing, f"{version}: never saw {missing}"
    text = "\n".join(lines)
    assert "Application startup complete." in text
    assert ("Uvicorn running on" in text) == (version == "0.6.6")  # only <=0.7.0 prints it


def test_vllm_spec_numbers_are_near_the_healthy_targets(runs) -> None:
    text = "\n".join(runs["vllm-0.10.2"][0])
    means = [float(v) for v in re.findall(r"Mean acceptance length: (\d+\.\d+)", text)]
    rates = [float(v) for v in re.findall(r"Avg Draft acceptance rate: (\d+\.\d)%", text)]
    assert means and all(3.6 <= m <= 4.0 for m in means), means
    assert rates and all(90.0 <= r <= 100.0 for r in rates), rates


def test_sglang_with_tp_tags_every_rank(tmp_path: Path) -> None:
    sim = Sim(
        tmp_path,
        "sglang",
        "--engine-version",
        "0.5.11",
        "--load-seconds",
        "0.3",
        "--tp",
        "2",
        server=("--model-path", "Qwen/Qwen3-8B"),
    )
    try:
        sim.wait_ready()
        sim.signal(signal.SIGTERM)
        assert sim.wait() == 0
    finally:
        sim.stop()
    tagged = [SGLANG_PREFIX.match(line) for line in sim.lines()]
    ranks = {m.group(2) for m in tagged if m and re.match(SGLANG_SCHEDULER["load_end"], m.group(3))}
    assert ranks == {" TP0", " TP1"}
    prefill = [m.group(2) for m in tagged if m and m.group(3).startswith("Prefill batch")]
    assert prefill and set(prefill) == {" TP0"}  # only attn_tp_rank 0 logs stats
