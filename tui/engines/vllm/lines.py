"""vLLM's metric lines in every prefix and formatter they come with.

The line prefix: process tags, nested (``(EngineCore_0 pid=N) (VllmWorker TP1 pid=M) ``)
or Ray's (``(RayWorkerProc pid=N, ip=…) ``), vllm-omni's ``[Stage-N] ``, the level, the
stamp ``MM-DD HH:MM:SS`` (no year) and the fileinfo (``[loggers.py:259] ``, a path
``[v1/metrics/loggers.py:259] ``, or ``loggers.py:259] `` before 0.8). 0.33's coloured
formatter wraps tag, stamp, fileinfo and level in ANSI escapes (stripped first); its
JSON formatter writes one object per line whose ``message`` is read as a line's
message and whose ``asctime`` (``YYYY-MM-DD HH:MM:SS,mmm``) has a year. Ray's dedup
suffix `` [repeated 2x across cluster]`` is cut off.

The engine's own line may sit inside a wrapper's (``docker logs --timestamps``, a log
viewer, journald, an outer stamp, tqdm progress glued in front): it is found where it
starts and read with its own stamp. Two lines glued into one (a lost newline) are two
records, each ending where the next line's prefix starts.

Metric messages: ``Engine 000: Avg prompt throughput: …`` (``N Engines Aggregated:``,
V0 without prefix), ``SpecDecoding metrics``, V0 ``Speculative metrics`` (a 0-1
acceptance rate), ``Prefix cache hit rate: GPU: …, CPU: …`` and ``DiffusionDecoding
metrics``. ``Engine 000: Iteration(N): …``, ``Engine 000: MFU: …`` and ``KV Transfer
metrics: …`` are not read: they give no record.

On the V0 CPU backend the KV cache and the prefix cache are the CPU's: a stats line
whose ``GPU KV cache usage`` is 0 while ``CPU KV cache usage`` is not reads the CPU
figure as the usage, and the prefix-cache line's CPU part is the hit rate when its
GPU part is 0 (on a GPU server the CPU parts are the swap space, which fills only
while the GPU's is in use).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

from tui.core.metrics.fields import split_fields
from tui.core.metrics.model import Metric, MetricSample, canonical
from tui.core.metrics.stamps import infer_year
from tui.engines._json_lines import line_time as json_line_time
from tui.engines._json_lines import records as json_records
from tui.engines._pid_tags import run_start
from tui.engines.spec import ReaderClock

NAME = "vllm"

#: One process tag, as vLLM or Ray prints it: no parenthesis inside, a ``pid=N`` among
#: its words (looked ahead for, so that a tag is read in one pass).
TAG = r"\((?=[^()]*\bpid=\d)[^()]*\) "
LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
#: The prefix past its process tags: the stage, the level, the stamp and the fileinfo.
#: Found first (it never starts with a tag), its process tags are then read back
#: from where it starts, so that no search retries a run of tags from each of them.
_CORE = re.compile(
    rf"(?:\[Stage-\d+\] )?{LEVEL} "
    r"(\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](\d{3}))? \[?[^\]\s]*\] "
)
_AGGREGATED = re.compile(r"(\d+) Engines Aggregated: ")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REPEATED = re.compile(r" ?\[repeated \d+x across cluster\]")

STATS = "vllm-stats"
SPEC = "vllm-spec"
PREFIX_CACHE = "vllm-prefix-cache"
DIFFUSION = "vllm-diffusion"

#: key in a line -> canonical metric; for each metric the line's first such key wins
_STATS_CANON: dict[str, Metric] = {
    "Avg generation throughput": Metric.GEN_THROUGHPUT,
    "Avg prompt throughput": Metric.PREFILL_THROUGHPUT,
    "Running": Metric.RUNNING,
    "Waiting": Metric.QUEUED,
    "Pending": Metric.QUEUED,
    "GPU KV cache usage": Metric.TOKEN_USAGE,
    "Prefix cache hit rate": Metric.PREFIX_HIT_RATE,
}
_SPEC_CANON: dict[str, Metric] = {
    "Mean acceptance length": Metric.ACCEPT_LEN,
    "Avg Draft acceptance rate": Metric.ACCEPT_RATE,
    "Draft acceptance rate": Metric.ACCEPT_RATE,
}
_PREFIX_CANON: dict[str, Metric] = {"GPU": Metric.PREFIX_HIT_RATE}
_CPU_HIT: dict[str, Metric] = {"CPU": Metric.PREFIX_HIT_RATE}
_CPU_USAGE: dict[str, Metric] = {"CPU KV cache usage": Metric.TOKEN_USAGE}
_DIFFUSION_CANON: dict[str, Metric] = {
    "Committed token throughput": Metric.GEN_THROUGHPUT,
}
_HEADS: tuple[tuple[str, str, Mapping[str, Metric]], ...] = (
    ("SpecDecoding metrics: ", SPEC, _SPEC_CANON),
    ("Speculative metrics: ", SPEC, _SPEC_CANON),
    ("DiffusionDecoding metrics: ", DIFFUSION, _DIFFUSION_CANON),
)
_PREFIX_CACHE_HEAD = "Prefix cache hit rate: GPU: "
#: >= 0.30 names the device: "XPU KV cache usage", "CPU KV cache usage"
_DEVICE_USAGE = " KV cache usage"
_NONE: tuple[MetricSample, ...] = ()
#: Stamps remembered per reader (one per second of log, at most this many).
_STAMP_CACHE = 256


class Reader(ReaderClock):
    """vLLM's metric lines; see :class:`tui.engines.spec.LineReader`. ``reference`` gives
    the stamps their year (else ``clock``, for a live log)."""

    def __init__(self, **made: Any) -> None:
        super().__init__(**made)
        self._times: dict[str, datetime] = {}

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        if not ("throughput: " in text or "metrics: " in text or "rate: GPU" in text):
            return _NONE
        try:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            match = _CORE.search(text)
            if match is None:
                return self._json(text, offset, run) if '"message"' in text else _NONE
            if text.find("] ", match.end()) < 0:
                sample = self._message(text[match.end() :], self._time(match), offset, run)
                return _NONE if sample is None else (sample,)
            return self._glued(text, offset, run)
        except (ValueError, OverflowError, IndexError):
            return _NONE

    def line_time(self, text: str) -> datetime | None:
        try:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            match = _CORE.search(text)
            if match is not None:
                return self._time(match)
            return json_line_time(text)
        except (ValueError, OverflowError, TypeError):
            return None

    def _glued(self, text: str, offset: int | None, run: int) -> tuple[MetricSample, ...]:
        """Every metric message in ``text``, each up to where the next line starts."""
        starts = list(_prefixes(text))
        found = []
        for index, (_, line) in enumerate(starts):
            end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
            sample = self._message(text[line.end() : end], self._time(line), offset, run)
            if sample is not None:
                found.append(sample)
        return tuple(found)

    def _json(self, text: str, offset: int | None, run: int) -> tuple[MetricSample, ...]:
        """The metric messages of the JSON formatter's objects on this line."""
        found = []
        for message, ts in json_records(text):
            sample = self._message(message, ts, offset, run)
            if sample is not None:
                found.append(sample)
        return tuple(found)

    def _message(
        self, message: str, ts: datetime, offset: int | None, run: int
    ) -> MetricSample | None:
        """The sample of one line's message (what follows its prefix), or None."""
        source = ""
        if message.startswith("Engine "):
            cut = message.find(": ")
            if cut < 0:
                return None
            source, message = message[:cut], message[cut + 2 :]
        elif message[:1].isdigit():
            aggregated = _AGGREGATED.match(message)
            if aggregated is None:
                return None
            source, message = aggregated.group()[:-2], message[aggregated.end() :]
        if message.startswith("Avg ") and "throughput: " in message:
            kind, table, body = STATS, _STATS_CANON, message
        elif message.startswith(_PREFIX_CACHE_HEAD):
            kind, table, body = PREFIX_CACHE, _PREFIX_CANON, message[23:]
        else:
            for head, head_kind, head_table in _HEADS:
                if message.startswith(head):
                    kind, table, body = head_kind, head_table, message[len(head) :]
                    break
            else:
                return None
        if "cluster]" in body:
            body = _REPEATED.sub("", body)
        if "\r" in body:
            body = body.split("\r", 1)[0]
        body = body.rstrip(" ,.")
        if ": " not in body:
            return None
        values = canonical(body, table)
        if kind == STATS:
            _device_usage(body, values)
        elif kind == PREFIX_CACHE and not values.get(Metric.PREFIX_HIT_RATE):
            values.update(_positive(canonical(body, _CPU_HIT)))
        return MetricSample(
            ts=ts,
            kind=kind,
            engine=NAME,
            body=body,
            values=values,
            offset=offset,
            source=source,
            run=run,
        )

    def _time(self, match: re.Match[str]) -> datetime:
        stamp, millis = match.group(1, 2)
        ts = self._times.get(stamp)
        if ts is None:
            if len(self._times) > _STAMP_CACHE:
                self._times.clear()
            reference = self._now()
            clock = (int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14]))
            ts = infer_year(int(stamp[0:2]), int(stamp[3:5]), clock, reference)
            if self._reference is not None:
                self._times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)


def _prefixes(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each line prefix in ``text``, in order: where it starts (at its first process tag)
    and the match of the rest (:data:`_CORE`: its groups are the stamp and its millis)."""
    floor = 0
    for core in _CORE.finditer(text):
        yield run_start(text, core.start(), floor), core
        floor = core.end()


def _device_usage(body: str, values: dict[Metric, float]) -> None:
    """The KV usage of a stats line that names another device (``XPU KV cache usage``,
    >= 0.30), or of the V0 CPU backend (``GPU`` 0, ``CPU`` not)."""
    usage = values.get(Metric.TOKEN_USAGE)
    if usage is None:
        named = [key for key in split_fields(body) if key.endswith(_DEVICE_USAGE)]
        if named:
            values.update(canonical(body, {named[0]: Metric.TOKEN_USAGE}))
    elif usage == 0 and "CPU KV cache usage" in body:
        values.update(_positive(canonical(body, _CPU_USAGE)))


def _positive(values: dict[Metric, float]) -> dict[Metric, float]:
    return {metric: value for metric, value in values.items() if value > 0}
