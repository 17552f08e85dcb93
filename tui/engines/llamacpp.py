"""llama.cpp's ``llama-server`` (``engine: llamacpp``), and llama-cpp-python's server.

A line of llama-server is, every part but the message optional::

    [ 8080] 132.15.702.022 I slot print_timing: id  0 | task 9161 | prompt eval time = ...
    ^router ^elapsed stamp ^level ^slot prefix (or "srv  <func>: ")  ^message

The router of a multi-model server puts ``[port] `` (``%5d``) in front of a child's
line. ``--log-prefix --log-timestamps`` stamp ``M.SS.mmm.uuu L ``: minutes, seconds,
milliseconds and microseconds since the process started (the minutes unbounded), so
a line is placed at the run's start plus that; without them a line carries no time.
``--log-colors`` wraps stamp and level in ANSI colour, which is stripped.

The metric lines, from ``tools/server`` (earlier ``examples/server``):

* per-request timings (``print_timings``): 2024 ``INFO [  print_timings] prompt eval
  time = ... | tid=... timestamp=... id_slot=0 id_task=3 ...`` (``generation eval time
  ... runs`` for decoding); mid-2025 a ``slot print_timing: id  0 | task N | `` header
  whose ``prompt eval time``, ``eval time``, ``total time`` and ``draft acceptance
  rate`` come on the next, unprefixed lines; 2026 one prefixed line each (plus
  ``graphs reused``); llama-cpp-python's ``llama_perf_context_print:`` lines;
* progress while decoding: ``n_decoded = N, tg = X t/s[, tg_3s = Y t/s]`` (2025) and
  ``n_gen = N, tg = X t/s, tg_3s = Y t/s`` (2026);
* progress while prefilling: ``prompt processing, n_tokens = N, progress = p, t = s s /
  X tokens per second``;
* speculative acceptance: ``draft acceptance rate = R (A accepted / G generated)``
  (2025), ``draft acceptance = R (...), mean len = L``, and ``..., mean acceptance
  length = L, acceptance rate per position = (a, b, ...)`` (2026-06 on).

The server prints no args dump: its launch diff reads argv alone. Queue, running
requests and throughput counters are on ``/metrics`` with ``--metrics``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tui.core.metrics.model import Metric, MetricSample, admissible
from tui.engines.spec import EngineSpec, Phase, Prometheus, ReaderClock, Stamp, StampKind

NAME = "llamacpp"

#: a per-request timing line (prompt eval, eval)
KIND_TIMING = "llamacpp-timing"
#: a decoding progress line (``n_gen``/``n_decoded``, ``tg``)
KIND_PROGRESS = "llamacpp-progress"
#: a prompt-processing progress line
KIND_PROMPT = "llamacpp-prompt"
#: a speculative-acceptance line
KIND_SPEC = "llamacpp-spec"

#: How many lines after a mid-2025 ``slot print_timing:`` header may still be its
#: unprefixed timing and acceptance lines (prompt eval, eval, total, draft acceptance).
HEADER_SPAN = 4

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _num(name: str) -> str:
    """A printed number (``%f`` also prints ``inf``, ``nan``, ``-nan``) as a named group."""
    return rf"(?P<{name}>-?(?:\d+(?:\.\d*)?|inf|nan))"


_BODIES = re.compile(
    # per-request timings: "prompt eval time =   5093.47 ms /  1360 tokens (    3.75 ms per
    # token,   267.01 tokens per second)"; 2024 pads "prompt eval time     = " and, as
    # llama_perf, prints "runs" for decoding
    rf"(?P<timing>(?P<phase>prompt eval|generation eval|eval) time += *{_num('t_ms')} ms"
    rf" / *(?P<t_tokens>\d+) (?:tokens|runs) *\( *{_num('t_per')} ms per token,"
    rf" *{_num('t_rate')} tokens per second\))"
    # decoding progress: "n_gen =    300, tg =  99.66 t/s, tg_3s =  99.66 t/s"
    rf"|(?P<progress>\b(?P<counter>n_gen|n_decoded) = *(?P<count>\d+),"
    rf" tg = *{_num('tg')} t/s(?:, tg_3s = *{_num('tg_3s')} t/s)?)"
    # prefill progress: "prompt processing, n_tokens =   2048, progress = 0.16, t =  20.47 s /
    # 100.05 tokens per second"
    rf"|(?P<prompt>prompt processing, n_tokens = *(?P<p_tokens>\d+),"
    rf" progress = *{_num('p_progress')}, t = *{_num('p_s')} s / *{_num('p_rate')}"
    r" (?:tokens per second|t/s))"
    # acceptance: "draft acceptance rate = 0.23026 (   70 accepted /   304 generated)",
    # "draft acceptance = R (A accepted / G generated), mean len =  2.40" and
    # "..., mean acceptance length =  3.65, acceptance rate per position = (0.804, 0.701)"
    rf"|(?P<spec>draft acceptance(?: rate)? = *{_num('ratio')}"
    r" \( *(?P<accepted>\d+) accepted / *(?P<generated>\d+) generated\)"
    rf"(?:, (?P<len_key>mean len|mean acceptance length) = *{_num('len')})?"
    r"(?:, acceptance rate per position = \((?P<per_position>[^()]*)\))?)"
)
#: the mid-2025 timing header: an SLT_INF whose text starts with a newline
_HEADER = re.compile(r"slot print_timing: id +(-?\d+) \| task (-?\d+) \| ?$")
_SLOT = re.compile(r"slot .{12}: id +(-?\d+) \| task (-?\d+) \| ")
_STAMP = re.compile(r"(?<!\d)(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) [IWEDT] ")  # from a first digit
_ROUTER = re.compile(r"\[ *(\d+)\] ")
#: the 2024 key=value tail: `` | tid="..." timestamp=N id_slot=0 id_task=3 ...``
_TAIL_SLOT = re.compile(r"\b(?:id_slot|slot_id)=(-?\d+)")
_TAIL_TASK = re.compile(r"\b(?:id_task|task_id)=(-?\d+)")
#: an elapsed stamp at the very start of a line (a router's child counts from its own
#: start, which babysit does not know: such lines are not placed)
_LINE_STAMP = re.compile(r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ")

_PHASE_METRIC = {
    "prompt eval": Metric.PREFILL_THROUGHPUT,
    "eval": Metric.GEN_THROUGHPUT,
    "generation eval": Metric.GEN_THROUGHPUT,
}


class LlamaCppReader(ReaderClock):
    """Reads llama-server's log one line at a time (a :class:`~tui.engines.spec.LineReader`).

    State: the last mid-2025 timing header (slot, task, time, router port), which the next
    :data:`HEADER_SPAN` unprefixed lines take as theirs. ``started`` places the elapsed stamps;
    without it, or with no stamp, a line's time is ``reference`` (or ``clock()``, live).
    """

    def __init__(self, **made: Any) -> None:
        super().__init__(**made)
        self._header: tuple[str, str, datetime | None, str] | None = None
        self._lines = 0
        self._header_until = 0

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        """The samples on this line: none for most lines, one per metric message glued
        into it. Never raises."""
        self._lines += 1
        try:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            # quick tests before any regex: every metric message holds an "=" (most lines
            # of any engine hold none) and the text its regex starts with (progress: holds)
            if "=" in text and (
                "eval time " in text
                or "tg = " in text
                or "draft acceptance" in text
                or "prompt processing, " in text
            ):
                return self._samples(text, offset, run)
            if "print_timing" in text:
                self._note_header(text)
            return ()
        except (ValueError, OverflowError, IndexError):
            return ()

    def line_time(self, text: str) -> datetime | None:
        """The elapsed stamp at the line's start placed after ``started``; None without
        ``started`` or a stamp."""
        if self._started is None:
            return None
        if "\x1b" in text:
            text = _ANSI.sub("", text)
        match = _LINE_STAMP.match(text)
        if match is None:
            return None
        try:
            return self._started + _elapsed(match)
        except OverflowError:
            return None

    # ---------------------------------------------------------------------------------

    def _note_header(self, text: str) -> None:
        match = _HEADER.search(text.rstrip("\r\n"))
        if match is None:
            return
        lead = text[: match.start()]
        router = _ROUTER.search(lead)
        self._header = (
            match.group(1),
            match.group(2),
            self._placed(lead),
            router.group(1) if router is not None else "",
        )
        self._header_until = self._lines + HEADER_SPAN

    def _placed(self, lead: str) -> datetime | None:
        """The time of the stamp in a line's prefix, when it has one and ``started`` is known."""
        if self._started is None or _ROUTER.search(lead) is not None:
            return None
        stamp = _STAMP.search(lead)
        return None if stamp is None else self._started + _elapsed(stamp)

    def _samples(self, text: str, offset: int | None, run: int) -> list[MetricSample]:
        matches = list(_BODIES.finditer(text))
        samples: list[MetricSample] = []
        end = 0
        for index, match in enumerate(matches):
            lead = text[end : match.start()]
            end = match.end()
            tail = text[end : matches[index + 1].start() if index + 1 < len(matches) else None]
            slot_task = _SLOT.search(lead)
            stamp = _STAMP.search(lead)
            router = _ROUTER.search(lead)
            header = self._header if self._lines <= self._header_until else None
            if slot_task is None and stamp is None and header is not None:
                slot, task, ts, port = header
            else:
                slot = task = ""
                if slot_task is not None:
                    slot, task = slot_task.groups()
                elif "_slot=" in tail or "slot_id=" in tail:
                    found = _TAIL_SLOT.search(tail)
                    slot = found.group(1) if found is not None else ""
                    found = _TAIL_TASK.search(tail)
                    task = found.group(1) if found is not None else ""
                ts = self._placed(lead)
                port = router.group(1) if router is not None else ""
            sample = _sample(match, slot, task, port)
            if sample is None:
                continue
            kind, body, values, pairs = sample
            samples.append(
                MetricSample(
                    ts=ts if ts is not None else self._now(),
                    kind=kind,
                    engine=NAME,
                    body=body,
                    values=values,
                    offset=offset,
                    source=f"port {port}" if port else "",
                    run=run,
                    pairs=pairs,
                )
            )
        return samples


def _elapsed(match: re.Match[str]) -> timedelta:
    minutes, seconds, millis, micros = match.groups()
    return timedelta(
        minutes=int(minutes),
        seconds=int(seconds),
        milliseconds=int(millis),
        microseconds=int(micros),
    )


_Sample = tuple[str, str, dict[Metric, float], dict[str, str]]


def _sample(match: re.Match[str], slot: str, task: str, port: str) -> _Sample | None:
    """One message's kind, body, canonical values and fields; None when it has no value."""
    pairs: dict[str, str] = {}
    if port:
        pairs["port"] = port
    if slot:
        pairs["slot"] = slot
    if task:
        pairs["task"] = task
    values: dict[Metric, float] = {}
    get = match.group
    if get("timing") is not None:
        kind, body, phase = KIND_TIMING, get("timing"), get("phase")
        pairs["phase"] = phase
        pairs["time"] = f"{get('t_ms')} ms"
        pairs["tokens"] = get("t_tokens")
        pairs["ms per token"] = get("t_per")
        pairs["tokens per second"] = get("t_rate")
        _put(values, _PHASE_METRIC[phase], get("t_rate"))
    elif get("progress") is not None:
        kind, body = KIND_PROGRESS, get("progress")
        pairs[get("counter")] = get("count")
        pairs["tg"] = f"{get('tg')} t/s"
        window = get("tg_3s")
        if window is not None:
            pairs["tg_3s"] = f"{window} t/s"
        # the last 3 s when printed (the rate now), else the request's average so far
        _put(values, Metric.GEN_THROUGHPUT, window if window is not None else get("tg"))
    elif get("prompt") is not None:
        kind, body = KIND_PROMPT, get("prompt")
        pairs["n_tokens"] = get("p_tokens")
        pairs["progress"] = get("p_progress")
        pairs["t"] = f"{get('p_s')} s"
        pairs["tokens per second"] = get("p_rate")
        _put(values, Metric.PREFILL_THROUGHPUT, get("p_rate"))
    else:
        kind, body = KIND_SPEC, get("spec")
        pairs["draft acceptance"] = get("ratio")
        pairs["accepted"] = get("accepted")
        pairs["generated"] = get("generated")
        if get("len_key") is not None:
            pairs[get("len_key")] = get("len")
            _put(values, Metric.ACCEPT_LEN, get("len"))
        if get("per_position") is not None:
            pairs["acceptance rate per position"] = get("per_position")
        _put(values, Metric.ACCEPT_RATE, get("ratio"))
    return (kind, body, values, pairs) if values else None


def _put(values: dict[Metric, float], metric: Metric, text: str) -> None:
    """Keeps a printed number as ``metric``'s value when it is :func:`admissible`."""
    number = float(text)
    if admissible(metric, number):
        values[metric] = number


def _series_label(source: str) -> str:
    """A router's child (``port 8080``) is a series of its own; one server is one series."""
    return source


#: every spelling in ``common/arg.cpp`` of an option with more than one, as argparse-style
#: destinations, after the one kept (the long name). The speculative options of 2026
#: (``--spec-draft-*``) fold onto the ``--draft-*``/``*-draft`` names they replace.
_ALIAS_TABLE = """
model: m
model_url: mu
hf_repo: hf hfr
hf_file: hff
ctx_size: c
n_predict: n predict
batch_size: b
ubatch_size: ub
threads: t
threads_batch: tb
n_gpu_layers: ngl gpu_layers
split_mode: sm
tensor_split: ts
main_gpu: mg
device: dev
flash_attn: fa
parallel: np
cont_batching: cb
alias: a
cache_type_k: ctk
cache_type_v: ctv
override_tensor: ot
cpu_moe: cmoe
n_cpu_moe: ncmoe
kv_unified: kvu
defrag_thold: dt
timeout: to
slot_prompt_similarity: sps
seed: s
mmproj: mm
mmproj_url: mmu
embeddings: embedding
reranking: rerank
verbosity: lv log_verbosity
verbose: v log_verbose
escape: e
special: sp
json_schema: j
json_schema_file: jf
model_draft: md spec_draft_model
hf_repo_draft: hfd hfrd
draft_max: draft draft_n spec_draft_n_max
draft_min: draft_n_min spec_draft_n_min
draft_p_min: spec_draft_p_min
n_gpu_layers_draft: ngld gpu_layers_draft spec_draft_ngl
ctx_size_draft: cd
device_draft: devd spec_draft_device
threads_draft: td spec_draft_threads
threads_batch_draft: tbd spec_draft_threads_batch
cache_type_k_draft: ctkd spec_draft_type_k
cache_type_v_draft: ctvd spec_draft_type_v
override_tensor_draft: otd spec_draft_override_tensor
cpu_moe_draft: cmoed
"""
_ALIASES = {
    spelling: destination
    for destination, _, spellings in (line.partition(": ") for line in _ALIAS_TABLE.split("\n"))
    for spelling in spellings.split()
}

#: options that never take a value (``-fa``/``--flash-attn`` and ``--log-colors`` take
#: ``on|off|auto`` in current builds, so they are not here)
_SWITCH_WORDS = """
    --metrics --slots --props --jinja --embedding --embeddings --reranking --rerank
    --log-prefix --log-timestamps --log-disable --mlock --mmap --check-tensors --swa-full
    --context-shift --kv-unified -kvu --cpu-moe -cmoe --cpu-moe-draft -cmoed
    --cont-batching -cb -nocb -nkvo --verbose --log-verbose -v --escape -e --special -sp
    --verbose-prompt --offline --warmup --webui --list-devices --help -h --usage --version
"""
_SWITCHES = frozenset(_SWITCH_WORDS.split())

#: "132.15.702.022 I ": minutes (unbounded), seconds, ms, us since the process started,
#: in ``--log-colors``' blue or not
_ELAPSED = r"(?:\x1b\[[\d;]*m)?(\d+)\.(\d\d)\.(\d{3})\.(\d{3})(?:\x1b\[[\d;]*m)? "

SPEC = EngineSpec(
    name=NAME,
    title="llama.cpp",
    # llama-server (and llama-server-cuda, .exe), llama-cpp-python's ``-m llama_cpp.server``
    programs=("llama-server", "llama_cpp.server"),
    ready=(
        # mid-2025: "main: server is listening on http://H:P - starting the main loop"
        "server is listening on",
        # 2026: "srv          main: listening on http://H:P"
        "main: listening on",
        # 2024: "INFO [                    main] model loaded | tid=..." (its "HTTP server
        # listening" comes before the model loads)
        "main] model loaded",
        # llama-cpp-python: uvicorn starts once the model is loaded
        "Uvicorn running on",
    ),
    run_starts=(
        # 2025 on: "system info: n_threads = 8, n_threads_batch = 8, total_threads = 16"
        "system info: n_threads = ",
        # 2024: "INFO [                    main] build info | tid=... build=3000 commit=..."
        "] build info |",
    ),
    deaths=(
        "GGML_ASSERT(",
        # ggml-cuda: "CUDA error: an illegal memory access was encountered", then an abort
        "CUDA error: ",
        "terminate called after throwing an instance of",
        "Segmentation fault",
        "Aborted (core dumped)",
    ),
    startup_failures=(
        # "llama_model_load: error loading model: ...", then "failed to load model"
        "error loading model",
        "failed to load model",
        "exiting due to model loading error",
        # "ggml_backend_cuda_buffer_type_alloc_buffer: allocating N MiB on device 0:
        # cudaMalloc failed: out of memory", then "failed to allocate CUDA0 buffer"
        "cudaMalloc failed: out of memory",
        "failed to allocate",
        "failed to create context",
        "failed to initialize the context",
        # "couldn't bind HTTP server socket, hostname: H, port: P" (and the 2024 form)
        "couldn't bind",
    ),
    telling=(
        "cudaMalloc failed: out of memory",
        "failed to allocate",
        "error loading model",
        "failed to load model",
        "couldn't bind",
        "GGML_ASSERT(",
        "CUDA error: ",
        "terminate called after throwing an instance of",
        "Segmentation fault",
    ),
    stamps=(Stamp(_ELAPSED, StampKind.ELAPSED),),
    aliases=_ALIASES,
    switches=_SWITCHES,
    spec_keys=(
        "model_draft",
        "hf_repo_draft",
        "spec_type",
        "draft_max",
        "draft_min",
        "draft_p_min",
        "n_gpu_layers_draft",
        "ctx_size_draft",
        "device_draft",
        "spec_ngram_mod_n_match",
        "spec_ngram_mod_n_min",
        "spec_ngram_mod_n_max",
    ),
    phases=(
        Phase(
            "loading model",
            ("load_model: loading model", "llama_model_loader: loaded meta data"),
        ),
        # "load_tensors: loading model tensors, ..." (2024: "llm_load_tensors: ...")
        Phase("loading weights", ("load_tensors: ",)),
        Phase(
            "allocating KV cache",
            ("llama_kv_cache", "llama_context: constructing", "llama_new_context_with_model: "),
        ),
        # "common_init_from_params: warming up the model with an empty run - please wait ..."
        Phase("warming up", ("warming up the model",)),
    ),
    prometheus=Prometheus(
        gauges={
            "llamacpp:requests_processing": (Metric.RUNNING, True),
            "llamacpp:requests_deferred": (Metric.QUEUED, True),
            # 2024 builds
            "llamacpp:kv_cache_usage_ratio": (Metric.TOKEN_USAGE, False),
            "llamacpp:kv_cache_tokens": (Metric.KV_TOKENS, True),
        },
        rates={
            "llamacpp:tokens_predicted_total": Metric.GEN_THROUGHPUT,
            "llamacpp:prompt_tokens_total": Metric.PREFILL_THROUGHPUT,
        },
        acceptance=(
            "llamacpp:spec_decode_num_accepted_tokens_total",
            # verification steps: accept length is 1 + accepted / steps, as the log's mean len
            "llamacpp:spec_decode_num_drafts_total",
            "llamacpp:spec_decode_num_draft_tokens_total",
        ),
        prefix="llamacpp:",
    ),
    reader=LlamaCppReader,
    series_label=_series_label,
)
