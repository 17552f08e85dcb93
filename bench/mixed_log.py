"""The mixed log of bench/parse_rate.py: lines of all four engines, in the shapes they print.

The log is blocks of one engine's lines (a server's log is one engine's; a
generic server's may hold any), each block in one shape:

* SGLang and vLLM: their Decode/Prefill, stats and SpecDecoding lines of several
  versions, about 36% of their lines, among access lines, startup lines,
  tracebacks and progress bars;
* llama.cpp: per-request timings, decoding and prompt progress and speculative
  acceptance in the 2024 (``INFO [ func] msg | key=value``), 2025 (a ``slot
  print_timing:`` header, then unprefixed lines) and 2026 (one prefixed line each)
  shapes, 2025 and 2026 with or without the ``M.SS.mmm.uuu I `` elapsed prefix;
  a few percent of its lines, among the slot and request lines around each request;
* TGI: the router's ``Success`` in compact, full, coloured and JSON (router and
  launcher) shapes, a few percent of its lines, among its other lines.

Every line is built here from the engines' format strings (log-formats reference),
sharing no code with the parsers or the simulator.
"""

# ruff: noqa: UP031 - the engines print with printf formats, copied here as they are
from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

#: the share of each engine's lines in the log (SGLang and vLLM share one writer)
SHARES = (("sglang+vllm", 0.5), ("llamacpp", 0.25), ("tgi", 0.25))
#: lines in one block of one engine (a stretch of one server's log)
BLOCK = 200
#: the share of metric lines among SGLang's and vLLM's lines, llama.cpp's and TGI's
METRIC_SHARE = {"sglang+vllm": 0.36, "llamacpp": 0.04, "tgi": 0.04}

Line = Callable[[random.Random, int], list[str]]


# --- SGLang and vLLM ----------------------------------------------------------------


def _sglang_stamp(i: int) -> str:
    second = i // 40
    return f"2026-05-09 {9 + second // 3600 % 10:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def _vllm_stamp(i: int) -> str:
    second = i // 40
    return f"05-09 {9 + second // 3600 % 10:02d}:{second // 60 % 60:02d}:{second % 60:02d}"


def sglang_vllm_metric(r: random.Random, i: int) -> list[str]:  # noqa: PLR0911 - one per format
    """One SGLang or vLLM metric line, of a version picked at random."""
    ts, vts = _sglang_stamp(i), _vllm_stamp(i)
    run, tok, use = r.randint(1, 64), r.randint(1000, 90000), r.random()
    gen, queue = r.uniform(100, 3000), r.randint(0, 20)
    choice = r.randrange(36)
    if choice < 6:
        return [
            f"[{ts} TP0] Decode batch. #running-req: {run}, #token: {tok}, token usage: "
            f"{use:.2f}, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        ]
    if choice < 12:
        return [
            f"[{ts}] Decode batch, #running-req: {run}, #token: {tok}, token usage: {use:.2f}, "
            f"accept len: {r.uniform(1, 4):.2f}, accept rate: {r.random():.2f}, cuda graph: True, "
            f"gen throughput (token/s): {gen:.2f}, #queue-req: {queue}, "
        ]
    if choice < 16:
        return [
            f"[{ts}.{i % 1000:03d} DP{i % 4} TP{i % 4} EP{i % 4}] Decode batch [{i}], "
            f"#running-req: {run}, #full token: {tok}, full token usage: {use:.2f}, mamba num: 24, "
            f"mamba usage: 0.12, accept len: {r.uniform(1, 4):.2f}, accept rate: {r.random():.2f}, "
            f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        ]
    if choice < 20:
        return [
            f"[{ts}] Decode batch, #running-req: {run}, #token: {tok}, token usage: {use:.2f}, "
            f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
        ]
    if choice < 25:
        return [
            f"[{ts} TP0] Prefill batch, #new-seq: 2, #new-token: {tok}, #cached-token: 0, "
            f"token usage: {use:.2f}, #running-req: {run}, #queue-req: {queue}, #pending-token: "
            f"{tok * 2}, cuda graph: False, input throughput (token/s): {gen * 10:.2f}"
        ]
    if choice < 30:
        return [
            f"[{ts}] Prefill batch. #new-seq: 1, #new-token: {tok}, #cached-token: 0, "
            f"cache hit rate: 0.00%, token usage: {use:.2f}, #running-req: {run}, "
            f"#queue-req: {queue}"
        ]
    if choice < 32:
        return [
            f"(APIServer pid=7) INFO {vts} [loggers.py:335] Engine 000: Avg prompt throughput: "
            f"{gen:.1f} tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: {run} "
            f"reqs, Waiting: {queue} reqs, GPU KV cache usage: {use * 100:.1f}%, Prefix cache hit "
            f"rate: {r.uniform(0, 100):.1f}%"
        ]
    if choice < 33:
        return [
            f"INFO {vts} metrics.py:467] Avg prompt throughput: {gen:.1f} tokens/s, Avg "
            f"generation throughput: {gen:.1f} tokens/s, Running: {run} reqs, Swapped: 0 reqs, "
            f"Pending: {queue} reqs, GPU KV cache usage: {use * 100:.1f}%, "
            "CPU KV cache usage: 0.0%."
        ]
    return [
        f"(APIServer pid=7) INFO {vts} [metrics.py:104] SpecDecoding metrics: Mean acceptance "
        f"length: {r.uniform(1, 4):.2f}, Accepted throughput: {gen:.2f} tokens/s, Drafted "
        f"throughput: {gen * 1.2:.2f} tokens/s, Accepted: {tok} tokens, Drafted: {tok * 2} tokens, "
        f"Per-position acceptance rate: 0.980, 0.954, 0.935, Avg Draft acceptance rate: "
        f"{r.uniform(0, 100):.1f}%"
    ]


SGLANG_VLLM_NOISE = (
    '[{ts}] INFO:     127.0.0.1:{port} - "POST /generate HTTP/1.1" 200 OK',
    '(APIServer pid=7) INFO:     127.0.0.1:{port} - "POST /v1/completions HTTP/1.1" 200 OK',
    "[{ts} TP0] Load weight begin. avail mem=78.61 GB",
    "[{ts} TP0] KV Cache is allocated. #tokens: 883573, K size: 30.34 GB, V size: 30.34 GB",
    "(EngineCore pid=8) INFO {vts} [gpu_worker.py:402] Available KV cache memory: 54.80 GiB",
    "(APIServer pid=7) INFO {vts} [launcher.py:56] Route: /v1/completions, Methods: POST",
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01,  1.43it/s]",
    '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1999, in run',
    "    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)",
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "[{ts}] KV cache pool is full. Retract requests. #retracted_reqs: 1, #new_token_ratio: "
    "0.7000 -> 0.8000",
    "WARNING {vts} [scheduler.py:1201] Sequence group 7 is preempted by PreemptionMode.RECOMPUTE",
    "[{ts}] Endpoint '/get_model_info' is deprecated and will be removed in a future version.",
    "",
)


def sglang_vllm_noise(r: random.Random, i: int) -> list[str]:
    template = SGLANG_VLLM_NOISE[r.randrange(len(SGLANG_VLLM_NOISE))]
    return [template.format(ts=_sglang_stamp(i), vts=_vllm_stamp(i), port=40000 + i % 999)]


# --- llama.cpp -----------------------------------------------------------------------

#: the shapes of a llama.cpp block: its year, and whether lines carry the elapsed prefix
LLAMA_SHAPES = (("2024", False), ("2025", False), ("2025", True), ("2026", False), ("2026", True))
_TIMING = "%10.2f ms / %5d tokens (%8.2f ms per token, %8.2f tokens per second)"


def _elapsed(i: int, level: str = "I") -> str:
    """``common/log.cpp``'s ``"%d.%02d.%03d.%03d "`` and the level, ``i`` ms after start."""
    micros = i * 1000 + i % 997
    return (
        f"{micros // 60_000_000}.{micros // 1_000_000 % 60:02d}."
        f"{micros // 1000 % 1000:03d}.{micros % 1000:03d} {level} "
    )


def _slot(func: str, slot_id: int, task: int, text: str) -> str:
    return "slot %12s: id %2d | task %d | " % (func[:12], slot_id, task) + text


def _srv(func: str, text: str) -> str:
    return "srv  %12s: " % func[:12] + text


def _old(func: str, message: str, **extra: object) -> str:
    """2024's ``"%4s [%24s] %s"`` then `` |`` and ``key=value`` pairs, tid and timestamp first."""
    fields = {"tid": "140", "timestamp": 1717000000, **extra}
    tail = "".join(f" {k}={json.dumps(v)}" for k, v in fields.items())
    return "INFO [%24s] %s |%s" % (func, message, tail)


def _timing(r: random.Random) -> tuple[float, int, float, float]:
    tokens = r.randint(10, 4000)
    ms = tokens * r.uniform(0.5, 40)
    return ms, tokens, ms / tokens, tokens / ms * 1000


def llama_metric(r: random.Random, i: int, year: str) -> list[str]:
    """One request's metric lines (or one progress line) in ``year``'s shape, unprefixed."""
    slot_id, task = r.randrange(4), i // 7
    choice = r.randrange(4)
    if year == "2024":
        if choice < 2:
            ms, n, per, rate = _timing(r)
            text = "prompt eval time     = " + _TIMING % (ms, n, per, rate)
        else:
            ms, n, per, rate = _timing(r)
            text = "generation eval time = " + (_TIMING % (ms, n, per, rate)).replace(
                "tokens (", "runs   ("
            )
        return [_old("print_timings", text, id_slot=slot_id, id_task=task, n_tokens_second=rate)]
    if choice == 0:
        counter = "n_decoded" if year == "2025" else "n_gen"
        tg = r.uniform(5, 150)
        tail = "" if year == "2025" else ", tg_3s = %6.2f t/s" % (tg * 0.98)
        return [
            _slot(
                "print_timings_tg",
                slot_id,
                task,
                f"{counter} = %6d, tg = %6.2f t/s" % (r.randint(1, 4000), tg) + tail,
            )
        ]
    if choice == 1 and year == "2026":
        return [
            _slot(
                "update_slots",
                slot_id,
                task,
                (
                    "prompt processing, n_tokens = %6d, progress = %.2f, "
                    "t = %6.2f s / %.2f tokens per second"
                )
                % (r.randint(512, 8192), r.random(), r.uniform(1, 60), r.uniform(50, 900)),
            )
        ]
    prompt, gen = _timing(r), _timing(r)
    accepted, generated = r.randint(10, 300), r.randint(300, 600)
    lines = [
        "prompt eval time = " + _TIMING % prompt,
        "       eval time = " + _TIMING % gen,
        "      total time = %10.2f ms / %5d tokens" % (prompt[0] + gen[0], prompt[1] + gen[1]),
    ]
    if year == "2025":
        lines.append(
            "draft acceptance rate = %0.5f (%5d accepted / %5d generated)"
            % (accepted / generated, accepted, generated)
        )
        return [_slot("print_timing", slot_id, task, ""), *lines]
    lines.append("   graphs reused = %10d" % r.randint(0, 500))
    lines.append(
        "draft acceptance = %0.5f (%5d accepted / %5d generated), mean len = %5.2f"
        % (accepted / generated, accepted, generated, 1 + r.uniform(0, 3))
    )
    return [_slot("print_timing", slot_id, task, line) for line in lines]


def llama_noise(r: random.Random, i: int, year: str) -> list[str]:
    """A line around a request: the slot's work, the request line, idle, the chat format."""
    slot_id, task = r.randrange(4), i // 7
    choice = r.randrange(8)
    if year == "2024":
        return [
            (
                _old(
                    "launch_slot_with_task",
                    "slot is processing task",
                    id_slot=slot_id,
                    id_task=task,
                ),
                _old("update_slots", "kv cache rm [p0, end)", id_slot=slot_id, id_task=task, p0=0),
                _old(
                    "update_slots",
                    "slot released",
                    id_slot=slot_id,
                    id_task=task,
                    n_ctx=4096,
                    n_past=62,
                    n_system_tokens=0,
                    n_cache_tokens=62,
                    truncated=False,
                ),
                _old(
                    "log_server_request",
                    "request",
                    remote_addr="127.0.0.1",
                    remote_port=40000 + i % 999,
                    status=200,
                    method="POST",
                    path="/completion",
                    params={},
                ),
                _old("update_slots", "all slots are idle"),
                _old(
                    "launch_slot_with_task",
                    "slot is processing task",
                    id_slot=slot_id,
                    id_task=task,
                ),
                _old(
                    "update_slots",
                    "slot progression",
                    id_slot=slot_id,
                    id_task=task,
                    n_past=0,
                    n_past_se=0,
                    n_prompt_tokens_processed=12,
                ),
                _old(
                    "update_slots",
                    "prompt tokenized",
                    id_slot=slot_id,
                    id_task=task,
                    n_ctx=4096,
                    n_keep=0,
                    n_prompt_tokens=12,
                ),
            )[choice]
        ]
    return [
        (
            _srv("log_server_r", "request: POST /completion 127.0.0.1 200"),
            _slot("launch_slot_", slot_id, task, "processing task, is_child = 0"),
            _slot(
                "update_slots",
                slot_id,
                task,
                "new prompt, n_ctx_slot = 4096, n_keep = 0, task.n_tokens = 1360",
            ),
            _slot("update_slots", slot_id, task, "n_tokens = 0, memory_seq_rm [0, end)"),
            _slot(
                "update_slots", slot_id, task, "prompt done, n_tokens = 1360, batch.n_tokens = 1360"
            ),
            _slot("release", slot_id, task, "stop processing: n_tokens = 1370, truncated = 0"),
            _srv("update_slots", "all slots are idle"),
            _srv("params_from_", "Chat format: Content-only"),
        )[choice]
    ]


# --- TGI -----------------------------------------------------------------------------

TGI_SHAPES = ("full", "full-coloured", "compact", "json-router", "json-launcher")
DIM, RESET, BOLD, ITALIC, GREEN = "\x1b[2m", "\x1b[0m", "\x1b[1m", "\x1b[3m", "\x1b[32m"
_PARAMETERS = (
    "GenerateParameters { adapter_id: None, best_of: None, temperature: Some(0.7), "
    "repetition_penalty: None, top_k: None, top_p: None, typical_p: None, do_sample: false, "
    "max_new_tokens: Some(20), return_full_text: None, stop: [], truncate: None, "
    "watermark: false, details: false, decoder_input_details: false, seed: None, "
    "top_n_tokens: None, grammar: None }"
)


def _tgi_stamp(i: int) -> str:
    second = i // 40
    return (
        f"2026-05-09T{9 + second // 3600 % 10:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
        f".{i % 1_000_000:06d}Z"
    )


def _tgi_line(shape: str, i: int, message: str, target: str, fields: dict[str, str]) -> str:
    """One event of the router (full, JSON flattened) or the launcher (compact, JSON nested)."""
    ts = _tgi_stamp(i)
    if shape.startswith("json"):
        event: dict[str, object] = {"timestamp": ts, "level": "INFO"}
        span = {**fields, "name": "generate"}
        if shape == "json-router":
            event |= {
                "message": message,
                "target": target,
                "filename": "router/src/server.rs",
                "line_number": 432,
            }
        else:
            event |= {"fields": {"message": message}, "target": target}
        if fields:
            event |= {"span": span, "spans": [span]}
        return json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    colour = shape == "full-coloured"
    pairs = " ".join(
        f"{ITALIC}{k}{RESET}{DIM}={RESET}{v}" if colour else f"{k}={v}" for k, v in fields.items()
    )
    if shape == "compact":
        spans = "generate: " if fields else ""
        return f"{ts}  INFO {spans}{target}: {message}{' ' + pairs if pairs else ''}"
    spans = ""
    if fields:
        spans = (
            f"{BOLD}generate{{{RESET}{pairs}{BOLD}}}{RESET}{DIM}:{RESET} "
            if colour
            else (f"generate{{{pairs}}}: ")
        )
    if colour:
        return (
            f"{DIM}{ts}{RESET} {GREEN} INFO{RESET} {spans}{DIM}{target}{RESET}{DIM}:{RESET} "
            f"{DIM}router/src/server.rs{RESET}{DIM}:{RESET}{DIM}432:{RESET} {message}"
        )
    return f"{ts}  INFO {spans}{target}: router/src/server.rs:432: {message}"


def tgi_metric(r: random.Random, i: int, shape: str) -> list[str]:
    total = r.uniform(0.1, 20)
    fields = {
        "parameters": _PARAMETERS,
        "total_time": f'"{total:.6f}s"',
        "validation_time": f'"{r.uniform(50, 900):.1f}µs"',
        "queue_time": f'"{r.uniform(10, 900):.1f}µs"',
        "inference_time": f'"{total * 0.99:.6f}s"',
        "time_per_token": f'"{r.uniform(5, 80):.2f}ms"',
        "seed": '"None"',
    }
    if shape.startswith("json"):
        fields = {k: v.strip('"') for k, v in fields.items()}
    return [_tgi_line(shape, i, "Success", "text_generation_router::server", fields)]


_TGI_NOISE = (
    ("text_generation_router::server", "Serving revision 0e9e39f249a16976918f6564b8830bc894c89659"),
    ("text_generation_router::infer::chat_template", "Using chat template from tokenizer_config"),
    ("text_generation_router_v3::radix", "Prefix caching enabled, block size = 1"),
    ("text_generation_launcher", "Using prefix caching = True"),
    ("text_generation_launcher", "Using Attention = flashinfer"),
    ("text_generation_router::validation", "Input length 1360 exceeds truncate, truncating"),
    ("text_generation_router_v3::backend", "Batch [1, 2, 3] finished, next batch size 2"),
    ("text_generation_launcher", "Waiting for shard to be ready... rank=0"),
)


def tgi_noise(r: random.Random, i: int, shape: str) -> list[str]:
    target, message = _TGI_NOISE[r.randrange(len(_TGI_NOISE))]
    return [_tgi_line(shape, i, message, target, {})]


# --- the log -------------------------------------------------------------------------


def _block(r: random.Random, engine: str, start: int) -> tuple[list[str], int]:
    """About :data:`BLOCK` lines of one engine in one shape, and how many are metric lines."""
    share = METRIC_SHARE[engine]
    if engine == "sglang+vllm":
        metric, noise, prefix = sglang_vllm_metric, sglang_vllm_noise, None
    elif engine == "llamacpp":
        year, stamped = LLAMA_SHAPES[r.randrange(len(LLAMA_SHAPES))]
        metric = lambda r, i: llama_metric(r, i, year)  # noqa: E731
        noise = lambda r, i: llama_noise(r, i, year)  # noqa: E731
        prefix = _elapsed if stamped else None
    else:
        shape = TGI_SHAPES[r.randrange(len(TGI_SHAPES))]
        metric = lambda r, i: tgi_metric(r, i, shape)  # noqa: E731
        noise = lambda r, i: tgi_noise(r, i, shape)  # noqa: E731
        prefix = None
    lines: list[str] = []
    metric_lines = 0
    while len(lines) < BLOCK:
        i = start + len(lines)
        # a request's lines count as metric lines: hold the block's share of them
        wanted = metric_lines < share * (len(lines) + 1)
        group = metric(r, i) if wanted else noise(r, i)
        if wanted:
            metric_lines += len(group)
        if prefix is not None:
            # a message that holds newlines (2025's timing header and its lines) is one log
            # call: only its first line is prefixed
            calls = 1 if group[0].endswith("| ") else len(group)
            group = [prefix(i + k) + g for k, g in enumerate(group[:calls])] + group[calls:]
        lines += group
    return lines, metric_lines


def write_log(path: Path, lines: int, seed: int = 1) -> dict[str, int]:
    """Write ``lines`` lines in blocks of the engines in :data:`SHARES`; the count of each
    engine's lines, and of the metric lines among them."""
    r = random.Random(seed)
    names = [name for name, _ in SHARES]
    weights = [share for _, share in SHARES]
    counts = {name: 0 for name in names} | {"metric": 0}
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < lines:
            engine = r.choices(names, weights)[0]
            block, metric_lines = _block(r, engine, written)
            block = block[: lines - written]
            counts[engine] += len(block)
            counts["metric"] += metric_lines
            written += len(block)
            out.write("\n".join(block) + "\n")
    return counts
