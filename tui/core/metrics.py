"""Metric lines of SGLang and vLLM logs (and ``/metrics`` text) as typed samples, and their series.

Three pieces, each pure (no I/O, no clock unless one is injected):

* :class:`MetricsParser` turns one log line into a :class:`MetricSample` or
  ``None``. It knows every format in the engines' released sources: SGLang
  ``Decode batch``/``Prefill batch`` lines (heads ``Decode batch.``,
  ``Decode batch [N],``, ``Decode batch,``; any rank tags; with or without
  milliseconds; trailing comma or not) and vLLM stats lines (``Engine 000:``,
  ``N Engines Aggregated:``, V0 without prefix), ``SpecDecoding metrics``,
  V0 ``Speculative metrics`` and ``Prefix cache hit rate: GPU: …`` lines.
  :class:`PrometheusReader` does the same for ``/metrics`` scrapes.
* :class:`RunBoundary` sees where a run starts (its startup sequence) and when
  it is ready; :class:`LogScanner` runs both over one file's lines.
* :class:`SeriesStore` keeps bounded series per service, a new one for each run.

Invariants:

* Parsing never raises on any text; a line that does not parse is ``None``.
* Every ``key: value`` pair of a metric line is kept (``raw``, typed in
  ``fields``) in line order, known or not; ``values`` holds the canonical metrics derived from
  them in canonical units (fractions 0-1, tokens/s, requests, tokens).
* Timestamps come from the line (host wall clock, naive). vLLM prints no year:
  it is the latest year that puts the line at or before the reference time
  (the file's mtime, or now) plus one day of slack — so December lines in a
  file last written in January land in the year before.
* The hot path is cheap: a line is looked at by a regex only after a substring
  test says it may be a metric line; most lines are not.
"""

from __future__ import annotations

import enum
import math
import operator
import re
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tui.core.engines import ARGS_HEADS


class Engine(enum.Enum):
    """The log formats this module reads (``tui.config.Engine`` minus ``generic``)."""

    SGLANG = "sglang"
    VLLM = "vllm"

    @classmethod
    def of(cls, value: object) -> Engine | None:
        """An :class:`Engine` from itself, another enum with the same value, or a string."""
        raw = getattr(value, "value", value)
        try:
            return cls(raw)
        except ValueError:
            return None


class Unit(enum.Enum):
    """How a canonical value is measured. The value is the unit's name in JSON; what a
    person sees is :meth:`format`. ``FRACTION`` is a 0-1 number (``"unit": "fraction"``,
    ``0.81``) shown as a percent (``81%``)."""

    TOKENS_PER_S = "tok/s"
    TOKENS_PER_STEP = "tok/step"
    TOKENS = "tok"
    REQUESTS = "req"
    FRACTION = "fraction"
    WATTS = "W"
    MIB = "MiB"
    CELSIUS = "C"

    def format(self, value: float) -> str:
        """``1,043 tok/s``, ``81%``, ``3.41 tok/step``, ``402 W``."""
        if not math.isfinite(value):
            return f"{value} {self.value}"
        if self is Unit.FRACTION:
            return f"{value * 100:.0f}%"
        if self is Unit.TOKENS_PER_STEP:
            return f"{value:.2f} {self.value}"
        if self is Unit.CELSIUS:
            return f"{value:.0f} °C"
        if abs(value) >= 100 or float(value).is_integer():
            return f"{value:,.0f} {self.value}"
        return f"{value:.1f} {self.value}"


class Metric(enum.Enum):
    """A canonical series, the same whichever engine or source it came from."""

    GEN_THROUGHPUT = "gen_throughput"
    PREFILL_THROUGHPUT = "prefill_throughput"
    ACCEPT_LEN = "accept_len"
    ACCEPT_RATE = "accept_rate"
    RUNNING = "running"
    QUEUED = "queued"
    TOKEN_USAGE = "token_usage"  # noqa: S105 - a metric name, not a secret
    KV_TOKENS = "kv_tokens"
    PREFIX_HIT_RATE = "prefix_hit_rate"
    GPU_POWER = "gpu_power"
    GPU_POWER_LIMIT = "gpu_power_limit"
    GPU_UTIL = "gpu_util"
    GPU_MEMORY = "gpu_memory"
    GPU_TEMPERATURE = "gpu_temperature"

    #: Members are singletons compared by identity: hash them in C (Enum's own
    #: ``__hash__`` is Python code, on the parser's hot path).
    __hash__ = object.__hash__

    @property
    def unit(self) -> Unit:
        return _UNITS[self]

    @property
    def title(self) -> str:
        """Words for a pane or a table (``gen throughput``)."""
        return _TITLES.get(self, self.value.replace("_", " "))


_UNITS = {
    Metric.GEN_THROUGHPUT: Unit.TOKENS_PER_S,
    Metric.PREFILL_THROUGHPUT: Unit.TOKENS_PER_S,
    Metric.ACCEPT_LEN: Unit.TOKENS_PER_STEP,
    Metric.ACCEPT_RATE: Unit.FRACTION,
    Metric.RUNNING: Unit.REQUESTS,
    Metric.QUEUED: Unit.REQUESTS,
    Metric.TOKEN_USAGE: Unit.FRACTION,
    Metric.KV_TOKENS: Unit.TOKENS,
    Metric.PREFIX_HIT_RATE: Unit.FRACTION,
    Metric.GPU_POWER: Unit.WATTS,
    Metric.GPU_POWER_LIMIT: Unit.WATTS,
    Metric.GPU_UTIL: Unit.FRACTION,
    Metric.GPU_MEMORY: Unit.MIB,
    Metric.GPU_TEMPERATURE: Unit.CELSIUS,
}
_TITLES = {
    Metric.PREFILL_THROUGHPUT: "prefill throughput",
    Metric.TOKEN_USAGE: "KV usage",
    Metric.KV_TOKENS: "KV tokens",
    Metric.GPU_UTIL: "GPU utilisation",
    Metric.GPU_POWER: "GPU power",
    Metric.GPU_POWER_LIMIT: "GPU power limit",
    Metric.GPU_MEMORY: "GPU memory",
    Metric.GPU_TEMPERATURE: "GPU temperature",
}


class MetricKind(enum.Enum):
    """Which kind of line (or scrape) a sample came from."""

    SGLANG_DECODE = "sglang-decode"
    SGLANG_PREFILL = "sglang-prefill"
    VLLM_STATS = "vllm-stats"
    VLLM_SPEC = "vllm-spec"
    VLLM_PREFIX_CACHE = "vllm-prefix-cache"
    VLLM_DIFFUSION = "vllm-diffusion"
    PROMETHEUS = "prometheus"


#: A value as printed: a number, ``True``/``False``, a list of numbers, or the text itself.
FieldValue = int | float | bool | str | tuple[float, ...]


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One metric line (or scrape), with where it came from.

    Invariants: ``body`` is the ``key: value`` part of the line exactly as
    printed; :attr:`raw` splits it into every pair in line order, unknown keys
    included, and :attr:`fields` types the values (both are computed when
    asked, so a sample costs little until someone looks). ``values`` maps
    canonical metrics to numbers in their :attr:`Metric.unit` (fractions 0-1,
    whatever the line printed). ``ts`` is the time printed on the line (host
    wall clock, naive; for a scrape, the caller's). ``offset`` is the byte
    offset of the line's first byte (``None`` for a scrape). ``source`` names
    the rank or engine that printed it (``DP1 TP0``, ``Engine 000``, ``2
    Engines Aggregated``, or ``""``). ``run`` is the run the caller's
    :class:`RunBoundary` had reached (0 before any startup line). ``pairs``
    holds the fields of a sample that has no line (a ``/metrics`` scrape).
    """

    ts: datetime
    kind: MetricKind
    engine: Engine
    body: str
    values: Mapping[Metric, float]
    offset: int | None
    source: str = ""
    run: int = 0
    pairs: Mapping[str, str] | None = None

    @property
    def raw(self) -> dict[str, str]:
        """Every ``key: value`` pair, values as printed (a new dict each time)."""
        return dict(self.pairs) if self.pairs is not None else split_fields(self.body)

    @property
    def fields(self) -> dict[str, FieldValue]:
        """:attr:`raw` with values typed by :func:`field_value`."""
        return typed_fields(self.raw)

    @property
    def label(self) -> str:
        """The series label: the DP rank for SGLang, the engine index for vLLM, else ``""``."""
        return series_label(self.engine, self.source)

    def to_json(self) -> dict[str, object]:
        return {
            "ts": self.ts.isoformat(),
            "kind": self.kind.value,
            "fields": {k: list(v) if isinstance(v, tuple) else v for k, v in self.fields.items()},
            "offset": self.offset,
            "run": self.run,
            "source": self.source,
            "values": {m.value: v for m, v in self.values.items()},
        }


def series_label(engine: Engine, source: str) -> str:
    """``DP1`` for an SGLang DP rank, ``engine 1`` for a vLLM engine other than 0, else ``""``.

    Only rank 0 of TP/PP/EP prints stats, so those tags add nothing; one vLLM
    engine (``Engine 000``) or the DP aggregate is the whole service.
    """
    if not source:
        return ""
    if engine is Engine.SGLANG:
        for tag in source.split():
            if tag.startswith("DP"):
                return tag
        return ""
    if source.startswith("Engine "):
        number = source[7:]
        return "" if number.strip("0") == "" else f"engine {int(number)}"
    return ""


# --- timestamps -------------------------------------------------------------------

#: How far after the reference a year-less stamp may be (clock skew between hosts).
YEAR_SLACK = timedelta(days=1)


def infer_year(month: int, day: int, clock: tuple[int, int, int], reference: datetime) -> datetime:
    """The datetime of a year-less ``MM-DD HH:MM:SS`` stamp: the latest year that puts it at or
    before ``reference`` plus one day of slack (clock skew). Raises ValueError for a date
    that exists in no nearby year."""
    hour, minute, second = clock
    limit = reference + YEAR_SLACK
    for year in range(reference.year + 1, reference.year - 9, -1):
        try:
            stamp = datetime(year, month, day, hour, minute, second)
        except ValueError:
            continue  # Feb 29 in a common year
        if stamp <= limit:
            return stamp
    raise ValueError(f"no year fits {month:02d}-{day:02d}")


def to_epoch(ts: datetime, utc_offset: int = 0) -> float:
    """Seconds since the epoch of a host wall-clock time, given the host's offset east of UTC."""
    return ts.replace(tzinfo=timezone(timedelta(seconds=utc_offset))).timestamp()


# --- line parsing -----------------------------------------------------------------

_SGL_BATCH = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] "
    r"(Decode|Prefill) batch(?: \[(\d+)\])?[.,] ?"
)
_SGL_PREFIX = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?:\.(\d{3}))?((?: [A-Z_]+\d+)*)\] ")
_VLLM_PREFIX = re.compile(
    r"(?:\([^()]*? pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
    r"(\d\d-\d\d \d\d:\d\d:\d\d)(?:[.,](\d{3}))? \[?[^\]\s]*\] "
)
_AGGREGATED = re.compile(r"(\d+) Engines Aggregated: ")


_NUMBER_UNIT = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(%|[A-Za-z/]+)?\.?")

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


def field_value(raw: str) -> FieldValue:
    """Type one printed value: ``12`` -> 12, ``97.4%`` -> 97.4, ``512.3 tokens/s`` -> 512.3,
    ``True`` -> True, ``0.780, 0.612`` -> (0.78, 0.612); anything else stays text."""
    if raw[:1] in _NUMERIC_START:
        space = raw.find(" ")
        digits = raw if space < 0 else raw[:space]
        if digits[-1:] == "%" and space < 0:
            digits = digits[:-1]
        try:
            number = float(digits) if "." in digits else int(digits)
        except ValueError:
            return _slow_value(raw)
        if space < 0 or raw.find(" ", space + 1) < 0:
            return number  # "12", "97.4%", "512.3 tokens/s", "4 reqs"
    return _slow_value(raw)


_NUMERIC_START = frozenset("0123456789-+.")


def _slow_value(raw: str) -> FieldValue:
    text = raw.strip()
    if text in ("True", "False"):
        return text == "True"
    if ", " in text:
        try:
            return tuple(float(part) for part in text.split(", "))
        except ValueError:
            return raw
    match = _NUMBER_UNIT.fullmatch(text)
    if match is None:
        return raw
    digits = match.group(1).replace(",", "")
    try:
        return float(digits) if "." in digits or "e" in digits.lower() else int(digits)
    except ValueError:
        return raw


_SPLIT_PAIR = operator.methodcaller("split", ": ", 1)


def split_fields(body: str) -> dict[str, str]:
    """``key: value`` pairs split on ``", "``, in order, values as printed. A part without
    ``": "`` continues the value before it (vLLM's per-position acceptance list)."""
    parts = body.split(", ")
    try:
        return dict(map(_SPLIT_PAIR, parts))  # every part a pair: the common case, in C
    except ValueError:
        pass
    fields: dict[str, str] = {}
    last: str | None = None
    for part in parts:
        key, sep, raw = part.partition(": ")
        if sep:
            fields[key] = raw
            last = key
        elif last is not None and part:
            fields[last] = f"{fields[last]}, {part}"
    return fields


def typed_fields(raw: Mapping[str, str]) -> dict[str, FieldValue]:
    """:func:`field_value` applied to every value, order kept."""
    return {key: field_value(value) for key, value in raw.items()}


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
                match = _SGL_PREFIX.match(text) if text[:1] == "[" else _SGL_PREFIX.search(text)
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


# --- /metrics ---------------------------------------------------------------------

_PROM_GAUGES: dict[str, tuple[Metric, bool]] = {
    # name -> (metric, summed across ranks/engines; else averaged)
    "sglang:gen_throughput": (Metric.GEN_THROUGHPUT, True),
    "sglang:num_running_reqs": (Metric.RUNNING, True),
    "sglang:num_queue_reqs": (Metric.QUEUED, True),
    "sglang:token_usage": (Metric.TOKEN_USAGE, False),
    "sglang:num_used_tokens": (Metric.KV_TOKENS, True),
    "sglang:spec_accept_length": (Metric.ACCEPT_LEN, False),
    "sglang:spec_accept_rate": (Metric.ACCEPT_RATE, False),
    "sglang:cache_hit_rate": (Metric.PREFIX_HIT_RATE, False),
    "vllm:num_requests_running": (Metric.RUNNING, True),
    "vllm:num_requests_waiting": (Metric.QUEUED, True),
    "vllm:kv_cache_usage_perc": (Metric.TOKEN_USAGE, False),
    "vllm:gpu_cache_usage_perc": (Metric.TOKEN_USAGE, False),
}
_PROM_SUMMED = {metric: summed for metric, summed in _PROM_GAUGES.values()}
_PROM_COUNTERS = (
    "vllm:generation_tokens_total",
    "vllm:prompt_tokens_total",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "sglang:prompt_tokens_total",
)


class PrometheusReader:
    """Turns successive ``/metrics`` scrapes of one server into samples.

    Gauges map straight to metrics (summed over DP ranks or engines for counts
    and throughputs, averaged for fractions; TP ranks other than 0 are left
    out). vLLM's throughputs and acceptance come from counters, so they appear
    from the second scrape on; a counter that went backwards (the server
    restarted) starts over. ``fields`` keeps every sample as
    ``name{labels}`` -> value. Needs ``prometheus_client``.
    """

    def __init__(self) -> None:
        self._last: tuple[datetime, dict[str, float]] | None = None

    def read(self, text: str, ts: datetime, *, run: int = 0) -> MetricSample | None:
        """One scrape's sample, or None when the text holds no samples or does not parse."""
        from prometheus_client.parser import text_string_to_metric_families

        fields: dict[str, str] = {}
        sums: dict[Metric, list[float]] = {}
        counters: dict[str, float] = {}
        engine: Engine | None = None
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    labels = sample.labels
                    label_text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                    name = sample.name
                    fields[f"{name}{{{label_text}}}" if label_text else name] = repr(sample.value)
                    if engine is None and ":" in name:
                        engine = Engine.of(name.split(":", 1)[0])
                    if labels.get("tp_rank", "0") != "0" or not math.isfinite(sample.value):
                        continue
                    if name in _PROM_GAUGES:
                        sums.setdefault(_PROM_GAUGES[name][0], []).append(sample.value)
                    elif name in _PROM_COUNTERS and "position" not in labels:
                        counters[name] = counters.get(name, 0.0) + sample.value
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        if not fields or engine is None:
            return None
        values = {
            metric: sum(found) if _PROM_SUMMED[metric] else sum(found) / len(found)
            for metric, found in sums.items()
        }
        values.update(self._rates(ts, counters, values))
        if self._last is None or ts > self._last[0]:  # the newest reading is the next base
            self._last = (ts, counters)
        return MetricSample(
            ts=ts,
            kind=MetricKind.PROMETHEUS,
            engine=engine,
            body="",
            pairs=fields,
            values=values,
            offset=None,
            run=run,
        )

    def _rates(
        self, ts: datetime, counters: dict[str, float], gauges: Mapping[Metric, float]
    ) -> dict[Metric, float]:
        if self._last is None:
            return {}
        last_ts, last = self._last
        seconds = (ts - last_ts).total_seconds()
        if seconds <= 0:
            return {}
        delta = {}
        for name, value in counters.items():
            if name in last:
                if value < last[name]:
                    return {}  # restarted: counters start over
                delta[name] = value - last[name]
        rates: dict[Metric, float] = {}
        if "vllm:generation_tokens_total" in delta and Metric.GEN_THROUGHPUT not in gauges:
            rates[Metric.GEN_THROUGHPUT] = delta["vllm:generation_tokens_total"] / seconds
        for name in ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"):
            if name in delta:
                rates[Metric.PREFILL_THROUGHPUT] = delta[name] / seconds
                break
        accepted = delta.get("vllm:spec_decode_num_accepted_tokens_total")
        drafts = delta.get("vllm:spec_decode_num_drafts_total")
        draft_tokens = delta.get("vllm:spec_decode_num_draft_tokens_total")
        if accepted is not None and drafts:
            rates[Metric.ACCEPT_LEN] = 1 + accepted / drafts
        if accepted is not None and draft_tokens:
            rates[Metric.ACCEPT_RATE] = accepted / draft_tokens
        return rates


class PrometheusReaders:
    """The one home of the state that turns ``/metrics`` counters into rates.

    A :class:`PrometheusReader` needs the previous scrape of the same server, so a
    reader made afresh for each refresh never yields a rate. One object of this class
    lives as long as services are watched (the app, one ``babysit status``) and is
    handed to every report of them: the fleet's rows, the host screen and ``status``
    read through it. It keeps one reader per (host, service), for one run: a new run
    (another pid, start time or boot) gets a new reader, so counters of two runs are
    never subtracted. At most one reader per service is kept.
    """

    def __init__(self) -> None:
        self._readers: dict[tuple[str, str], tuple[Hashable, PrometheusReader]] = {}

    def reader(self, host: str, service: str, run: Hashable) -> PrometheusReader:
        """The reader of ``service`` on ``host`` for ``run`` (any value naming the run)."""
        key = (host, service)
        found = self._readers.get(key)
        if found is None or found[0] != run:
            found = self._readers[key] = (run, PrometheusReader())
        return found[1]


# --- runs -------------------------------------------------------------------------


class RunMarker(enum.Enum):
    """A line that starts a run (printed once per run) or says it is ready."""

    SGLANG_SERVER_ARGS = "sglang-server-args"
    VLLM_VERSION = "vllm-version"
    VLLM_ARGS = "vllm-args"
    SGLANG_READY = "sglang-ready"
    VLLM_READY = "vllm-ready"


class RunEventKind(enum.Enum):
    STARTED = "started"
    READY = "ready"


@dataclass(frozen=True)
class RunEvent:
    """A run started (its startup sequence began) or became ready, at this line.

    ``run`` counts from 1 for the first startup seen in the file; lines before
    any startup belong to run 0. ``text`` is the marker line, cut at 300 chars.
    """

    kind: RunEventKind
    run: int
    offset: int | None
    ts: datetime | None
    marker: RunMarker
    engine: Engine
    text: str

    def to_json(self) -> dict[str, object]:
        return {
            "event": self.kind.value,
            "run": self.run,
            "offset": self.offset,
            "ts": None if self.ts is None else self.ts.isoformat(),
            "marker": self.marker.value,
            "engine": self.engine.value,
            "text": self.text,
        }


_START_ENGINE = {
    RunMarker.SGLANG_SERVER_ARGS: Engine.SGLANG,
    RunMarker.VLLM_VERSION: Engine.VLLM,
    RunMarker.VLLM_ARGS: Engine.VLLM,
}
_MARKER_TEXTS = (
    # the args line, printed once per run, after the line's prefix (``…] ``)
    *(
        (
            "] " + head.text,
            RunMarker.SGLANG_SERVER_ARGS if head.engine == "sglang" else RunMarker.VLLM_ARGS,
        )
        for head in ARGS_HEADS
    ),
    ("vLLM API server version ", RunMarker.VLLM_VERSION),
    ("vLLM server version ", RunMarker.VLLM_VERSION),
    ("The server is fired up and ready to roll!", RunMarker.SGLANG_READY),
    ("Application startup complete.", RunMarker.VLLM_READY),
)
_MARKER_ENGINE = {
    **_START_ENGINE,
    RunMarker.SGLANG_READY: Engine.SGLANG,
    RunMarker.VLLM_READY: Engine.VLLM,
}


class RunBoundary:
    """Finds where runs start and when they are ready, one line at a time.

    A run starts at a line each run prints exactly once near its start: SGLang's
    ``server_args=…``; vLLM's ``vLLM (API) server version …`` and its
    ``non-default args: {…}`` / ``args: Namespace(…)``. The first such line
    opens run 1; a kind of marker already seen in the current run, or one of
    another engine, opens the next (so vLLM's version line and args line make
    one run, not two). Ready
    lines: SGLang ``The server is fired up and ready to roll!``, vLLM
    ``Application startup complete.`` (SGLang prints that one too, earlier,
    so it counts only for vLLM runs); each run reports READY at most once.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        line_time: Callable[[str], datetime | None] | None = None,
    ) -> None:
        self.engine = engine
        self.run = 0
        self._want = engine
        self._seen: set[RunMarker] = set()
        self._ready = False
        self._line_time = line_time or MetricsParser(engine).line_time

    def feed(self, text: str, offset: int | None) -> RunEvent | None:
        """The run event on this line, if it has one. Never raises."""
        marker = self._marker(text)
        if marker is None:
            return None
        if marker in _START_ENGINE:
            engine = _START_ENGINE[marker]
            if self.run and marker not in self._seen and engine is self.engine:
                self._seen.add(marker)
                return None
            self.run += 1
            self._seen = {marker}
            self._ready = False
            self.engine = engine
            kind = RunEventKind.STARTED
        else:
            if self._ready:
                return None
            self._ready = True
            kind = RunEventKind.READY
        return RunEvent(
            kind=kind,
            run=self.run,
            offset=offset,
            ts=self._line_time(text),
            marker=marker,
            engine=_MARKER_ENGINE[marker],
            text=text[:300],
        )

    def _marker(self, text: str) -> RunMarker | None:
        if not (
            "args" in text
            or "version" in text
            or "ready to roll" in text
            or "startup complete" in text
        ):
            return None
        for needle, marker in _MARKER_TEXTS:
            if (
                needle in text
                and self._want in (None, _MARKER_ENGINE[marker])
                and self._plausible(marker, text)
            ):
                return marker
        return None

    def _plausible(self, marker: RunMarker, text: str) -> bool:
        if marker is RunMarker.SGLANG_SERVER_ARGS:
            return _SGL_PREFIX.search(text) is not None
        if marker is RunMarker.VLLM_READY:
            if self.engine is Engine.SGLANG:
                return False
            # With no run seen yet, an SGLang-stamped line is SGLang's uvicorn, not vLLM.
            return not (self.engine is None and _SGL_PREFIX.match(text))
        return True


class LogScanner:
    """A :class:`MetricsParser` and a :class:`RunBoundary` over the lines of one log.

    ``feed`` returns the line's sample (stamped with the current run) or its run
    event, or None; a line is never both.
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        reference: datetime | None = None,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.parser = MetricsParser(engine, reference=reference, clock=clock)
        self.boundary = RunBoundary(engine, line_time=self.parser.line_time)

    @property
    def run(self) -> int:
        return self.boundary.run

    @property
    def engine(self) -> Engine | None:
        return self.boundary.engine or self.parser.engine

    def feed(self, text: str, offset: int | None) -> MetricSample | RunEvent | None:
        sample = self.parser.parse_line(text, offset, run=self.boundary.run)
        if sample is not None:
            return sample
        return self.boundary.feed(text, offset)


# --- series -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeriesKey:
    """One series: a service's metric, per ``label`` (DP rank, engine, ``gpu0``) or ``""``."""

    service: str
    metric: Metric
    label: str = ""

    @property
    def name(self) -> str:
        """``gen_throughput`` or ``gpu_power[gpu0]`` — a stable key for JSON."""
        return self.metric.value + (f"[{self.label}]" if self.label else "")


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One value, stamped with its time (epoch seconds), run and log offset.

    ``offset`` is the byte offset of the log line it came from, ``None`` for
    values from ``/metrics`` or nvidia-smi.
    """

    ts: float
    value: float
    run: int
    offset: int | None = None


class Series:
    """The points of one series in one run, oldest first, at most ``max_points`` of them."""

    def __init__(self, key: SeriesKey, run: int, max_points: int) -> None:
        self.key = key
        self.run = run
        self.points: deque[SeriesPoint] = deque(maxlen=max_points)

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[SeriesPoint]:
        return iter(self.points)

    def values(self) -> list[float]:
        return [p.value for p in self.points]

    @property
    def last(self) -> SeriesPoint | None:
        return self.points[-1] if self.points else None


@dataclass(frozen=True)
class Latest:
    """The newest value of a series in the current run, with its age.

    ``stale`` is true when the value is older than the ``stale_after`` the
    caller gave (e.g. three poll intervals): draw it as stale, never as current.
    """

    key: SeriesKey
    value: float
    ts: float
    age: float
    stale: bool
    run: int
    offset: int | None

    @property
    def unit(self) -> Unit:
        return self.key.metric.unit

    @property
    def text(self) -> str:
        return self.unit.format(self.value)

    def to_json(self) -> dict[str, object]:
        return {
            "value": self.value,
            "unit": self.unit.value,
            "age": round(self.age, 3),
            "stale": self.stale,
            "run": self.run,
            "offset": self.offset,
        }


@dataclass(frozen=True)
class ServiceMetrics:
    """What one service's series hold for its current run, at one moment.

    ``run`` is None when nothing was recorded yet. ``points`` holds only the
    current run's points; ``latest`` only series with a point in it.
    """

    service: str
    run: int | None
    latest: Mapping[SeriesKey, Latest]
    points: Mapping[SeriesKey, tuple[SeriesPoint, ...]]

    def series_of(self, metric: Metric, label: str | None = None) -> tuple[SeriesPoint, ...]:
        """The points of ``metric`` (label ``""`` first, else the first label in order)."""
        key = self._pick(metric, label, self.points)
        return () if key is None else self.points[key]

    def latest_of(self, metric: Metric, label: str | None = None) -> Latest | None:
        key = self._pick(metric, label, self.latest)
        return None if key is None else self.latest[key]

    def _pick(
        self, metric: Metric, label: str | None, table: Mapping[SeriesKey, object]
    ) -> SeriesKey | None:
        if label is not None:
            key = SeriesKey(self.service, metric, label)
            return key if key in table else None
        keys = sorted((k for k in table if k.metric is metric), key=lambda k: k.label)
        return keys[0] if keys else None

    def to_json(self) -> dict[str, object]:
        return {key.name: latest.to_json() for key, latest in self.latest.items()}


class SeriesStore:
    """Bounded series per service: ``max_points`` per series and run, ``max_runs`` runs kept.

    Invariants: a series never mixes runs — a point of a newer run starts a new
    :class:`Series` (and makes that run the service's current one), so no line
    is ever drawn across two runs; a point of a run no longer kept is dropped;
    :meth:`series` and :meth:`latest` answer for the current run only, so a
    metric the new run has not printed (yet) has no value rather than the old
    run's.
    """

    def __init__(self, max_points: int = 300, max_runs: int = 2) -> None:
        self.max_points = max_points
        self.max_runs = max_runs
        self._series: dict[SeriesKey, deque[Series]] = {}
        self._runs: dict[str, int] = {}

    def begin_run(self, service: str, run: int) -> None:
        """A run started (e.g. a :class:`RunEvent`): from now on it is the current one."""
        self._runs[service] = max(run, self._runs.get(service, run))

    def current_run(self, service: str) -> int | None:
        return self._runs.get(service)

    def add(self, key: SeriesKey, point: SeriesPoint) -> bool:
        """Record one point; False when it was dropped (its run is no longer kept)."""
        if not math.isfinite(point.value):
            return False
        segments = self._series.get(key)
        if segments is None:
            segments = self._series[key] = deque(maxlen=self.max_runs)
        current = self._runs.get(key.service)
        if current is None or point.run > current:
            self._runs[key.service] = point.run
        if segments and segments[-1].run == point.run:
            segments[-1].points.append(point)
            return True
        if not segments or point.run > segments[-1].run:
            series = Series(key, point.run, self.max_points)
            series.points.append(point)
            segments.append(series)
            return True
        for series in segments:
            if series.run == point.run:
                series.points.append(point)
                return True
        return False

    def add_sample(self, service: str, sample: MetricSample, *, utc_offset: int = 0) -> int:
        """Record the canonical values of a sample; returns how many points were kept."""
        ts = to_epoch(sample.ts, utc_offset)
        label = sample.label
        kept = 0
        for metric, value in sample.values.items():
            point = SeriesPoint(ts, float(value), sample.run, sample.offset)
            kept += self.add(SeriesKey(service, metric, label), point)
        return kept

    def add_values(
        self,
        service: str,
        values: Mapping[Metric, float],
        *,
        ts: float,
        run: int,
        label: str = "",
        offset: int | None = None,
    ) -> int:
        """Record values polled from elsewhere (nvidia-smi, ``/metrics``)."""
        return sum(
            self.add(SeriesKey(service, metric, label), SeriesPoint(ts, float(v), run, offset))
            for metric, v in values.items()
        )

    def keys(self, service: str | None = None) -> list[SeriesKey]:
        return [k for k in self._series if service is None or k.service == service]

    def series(self, key: SeriesKey) -> Series | None:
        """The current run's series for ``key``, or None if this run has no point of it."""
        segments = self._series.get(key)
        if not segments or segments[-1].run != self._runs.get(key.service):
            return None
        return segments[-1]

    def history(self, key: SeriesKey) -> tuple[Series, ...]:
        """Every kept run's series for ``key``, oldest first."""
        return tuple(self._series.get(key, ()))

    def latest(self, key: SeriesKey, *, now: float, stale_after: float) -> Latest | None:
        series = self.series(key)
        point = None if series is None else series.last
        if point is None:
            return None
        age = max(0.0, now - point.ts)
        return Latest(key, point.value, point.ts, age, age > stale_after, point.run, point.offset)

    def snapshot(self, service: str, *, now: float, stale_after: float) -> ServiceMetrics:
        latest: dict[SeriesKey, Latest] = {}
        points: dict[SeriesKey, tuple[SeriesPoint, ...]] = {}
        for key in self.keys(service):
            series = self.series(key)
            if series is None or not series.points:
                continue
            points[key] = tuple(series.points)
            found = self.latest(key, now=now, stale_after=stale_after)
            if found is not None:
                latest[key] = found
        return ServiceMetrics(service, self._runs.get(service), latest, points)
