"""SGLang and vLLM log lines into :class:`~tui.core.metrics.model.MetricSample` objects.

:class:`MetricsParser` knows every format in the engines' released sources: SGLang
``Decode batch``/``Prefill batch`` lines (heads ``Decode batch.``, ``Decode batch
[N],``, ``Decode batch,``; any rank tags; with or without milliseconds; trailing
comma or not) and vLLM stats lines (``Engine 000:``, ``N Engines Aggregated:``, V0
without prefix), ``SpecDecoding metrics``, V0 ``Speculative metrics`` and ``Prefix
cache hit rate: GPU: …`` lines.

Invariants:

* Parsing never raises on any text; a line that does not parse is ``None``.
* Timestamps come from the line (host wall clock, naive); see
  :mod:`~tui.core.metrics.stamps` for the year of a vLLM stamp.
* The hot path is cheap: a line is looked at by a regex only after a substring
  test says it may be a metric line; most lines are not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime

from tui.core.metrics.fields import split_fields
from tui.core.metrics.model import Engine, Metric, MetricKind, MetricSample, Unit
from tui.core.metrics.stamps import infer_year

_SGL_BATCH = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] "
    r"(Decode|Prefill) batch(?: \[(\d+)\])?[.,] ?"
)
SGLANG_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] ")
_VLLM_PREFIX = re.compile(
    r"(?:\([^()]*? pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](\d{3}))? \[?[^\]\s]*\] "
)
_AGGREGATED = re.compile(r"(\d+) Engines Aggregated: ")


#: key in a line -> canonical metric; for each metric the line's first such key wins
_SGLANG_CANON: dict[str, Metric] = {
    "gen throughput (token/s)": Metric.GEN_THROUGHPUT,
    "input throughput (token/s)": Metric.PREFILL_THROUGHPUT,
    "accept len": Metric.ACCEPT_LEN,
    "accept rate": Metric.ACCEPT_RATE,
    "#running-req": Metric.RUNNING,
    "#queue-req": Metric.QUEUED,
    "token usage": Metric.TOKEN_USAGE,
    "full token usage": Metric.TOKEN_USAGE,
    "gpu token usage": Metric.TOKEN_USAGE,
    "#token": Metric.KV_TOKENS,
    "#full token": Metric.KV_TOKENS,
    "#gpu token": Metric.KV_TOKENS,
    "#gpu-token": Metric.KV_TOKENS,
    "cache hit rate": Metric.PREFIX_HIT_RATE,
}
_VLLM_CANON: dict[str, Metric] = {
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
_DIFFUSION_CANON: dict[str, Metric] = {
    "Committed token throughput": Metric.GEN_THROUGHPUT,
}
_SPEC_HEADS = (
    ("SpecDecoding metrics: ", MetricKind.VLLM_SPEC, _SPEC_CANON),
    ("Speculative metrics: ", MetricKind.VLLM_SPEC, _SPEC_CANON),
    ("DiffusionDecoding metrics: ", MetricKind.VLLM_DIFFUSION, _DIFFUSION_CANON),
)


def _canonical(body: str, table: Mapping[str, Metric]) -> dict[Metric, float]:
    """The canonical values in a line's ``key: value`` part: for each metric the first key of
    ``table`` in line order; a percentage of a fraction metric is scaled to 0-1."""
    values: dict[Metric, float] = {}
    get = table.get
    for part in body.split(", "):
        key, _, text = part.partition(": ")
        metric = get(key)
        if metric is None or metric in values:
            continue
        space = text.find(" ")
        if space >= 0:
            text = text[:space]  # "512.3 tokens/s", "4 reqs"
        percent = text[-1:] == "%"
        try:
            number = float(text[:-1] if percent else text)
        except ValueError:
            continue
        if number - number == 0:  # finite: nan and inf give nan
            values[metric] = number / 100 if percent and metric in _FRACTIONS else number
    return values


_FRACTIONS = frozenset(m for m in Metric if m.unit is Unit.FRACTION)


class MetricsParser:
    """Parses one line at a time into a :class:`MetricSample` (or ``None``).

    ``engine`` restricts the formats tried; ``None`` tries both and
    :attr:`engine` then says which one the first metric line was.
    ``reference`` is the time the log was last written (its mtime), to give
    vLLM stamps their year; ``None`` asks ``clock`` for each stamp (following
    a live log). ``parse_line`` never raises.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.engine: Engine | None = engine
        self._reference = reference
        self._clock = clock
        self._sglang = engine in (None, Engine.SGLANG)
        self._vllm = engine in (None, Engine.VLLM)
        self._sgl_times: dict[str, datetime] = {}
        self._vllm_times: dict[str, datetime] = {}

    def parse_line(self, text: str, offset: int | None, *, run: int = 0) -> MetricSample | None:
        """The sample on this line, or None when it is not a metric line (or does not parse)."""
        try:
            if self._sglang and "batch" in text:
                sample = self._sglang_line(text, offset, run)
                if sample is not None:
                    return sample
            if self._vllm and (
                "throughput: " in text or "metrics: " in text or "rate: GPU" in text
            ):
                return self._vllm_line(text, offset, run)
        except (ValueError, OverflowError, IndexError):
            return None
        return None

    def line_time(self, text: str) -> datetime | None:
        """The time printed at the start of any SGLang or vLLM line, or None."""
        try:
            if self._sglang:
                match = SGLANG_PREFIX.match(text) if text[:1] == "[" else SGLANG_PREFIX.search(text)
                if match is not None:
                    return self._sgl_time(match.group(1), match.group(2))
            if self._vllm:
                match = _VLLM_PREFIX.search(text)
                if match is not None:
                    return self._vllm_time(match)
        except (ValueError, OverflowError):
            return None
        return None

    # SGLang ------------------------------------------------------------------------

    def _sglang_line(self, text: str, offset: int | None, run: int) -> MetricSample | None:
        match = _SGL_BATCH.search(text)
        if match is None:
            return None
        stamp, millis, ranks, head, forward = match.groups()
        ts = self._sgl_time(stamp, millis)
        body = text[match.end() :].rstrip(" ,\r")
        if forward is not None:
            body = f"forward iter: {forward}, {body}"
        self.engine = Engine.SGLANG if self.engine is None else self.engine
        return MetricSample(
            ts=ts,
            kind=MetricKind.SGLANG_DECODE if head == "Decode" else MetricKind.SGLANG_PREFILL,
            engine=Engine.SGLANG,
            body=body,
            values=_canonical(body, _SGLANG_CANON),
            offset=offset,
            source=ranks[1:],
            run=run,
        )

    def _sgl_time(self, stamp: str, millis: str | None) -> datetime:
        ts = self._sgl_times.get(stamp)
        if ts is None:
            if len(self._sgl_times) > 256:
                self._sgl_times.clear()
            ts = datetime(
                int(stamp[0:4]),
                int(stamp[5:7]),
                int(stamp[8:10]),
                int(stamp[11:13]),
                int(stamp[14:16]),
                int(stamp[17:19]),
            )
            self._sgl_times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)

    # vLLM ----------------------------------------------------------------------------

    def _vllm_line(self, text: str, offset: int | None, run: int) -> MetricSample | None:
        match = _VLLM_PREFIX.search(text)
        if match is None:
            return None
        message = text[match.end() :]
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
            kind, table, body = MetricKind.VLLM_STATS, _VLLM_CANON, message
        elif message.startswith("Prefix cache hit rate: GPU: "):
            kind, table, body = MetricKind.VLLM_PREFIX_CACHE, _PREFIX_CANON, message[23:]
        else:
            for head, head_kind, head_table in _SPEC_HEADS:
                if message.startswith(head):
                    kind, table, body = head_kind, head_table, message[len(head) :]
                    break
            else:
                return None
        body = body.rstrip(" ,.\r")
        if ": " not in body:
            return None
        values = _canonical(body, table)
        if kind is MetricKind.VLLM_STATS and Metric.TOKEN_USAGE not in values:
            # >= 0.30 prints "%s KV cache usage" with the device: XPU, CPU, ...
            usage = [key for key in split_fields(body) if key.endswith(" KV cache usage")]
            if usage:
                values.update(_canonical(body, {usage[0]: Metric.TOKEN_USAGE}))
        self.engine = Engine.VLLM if self.engine is None else self.engine
        return MetricSample(
            ts=self._vllm_time(match),
            kind=kind,
            engine=Engine.VLLM,
            body=body,
            values=values,
            offset=offset,
            source=source,
            run=run,
        )

    def _vllm_time(self, match: re.Match[str]) -> datetime:
        stamp, millis = match.group(1, 2)
        ts = self._vllm_times.get(stamp)
        if ts is None:
            if len(self._vllm_times) > 256:
                self._vllm_times.clear()
            reference = self._reference if self._reference is not None else self._clock()
            clock = (int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14]))
            ts = infer_year(int(stamp[0:2]), int(stamp[3:5]), clock, reference)
            if self._reference is not None:
                self._vllm_times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)
