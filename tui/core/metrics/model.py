"""What a metric is: the units, the canonical metrics, and a sample.

A :class:`MetricSample` is one metric line (or ``/metrics`` scrape) with where it
came from; its ``values`` are canonical metrics in canonical units (fractions 0-1,
tokens/s, requests, tokens), whichever engine or source printed them.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from tui.core.metrics.fields import FieldValue, split_fields, typed_fields


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


#: The kind of a sample read from a ``/metrics`` page (a line's kind is its engine's:
#: ``sglang-decode``, ``vllm-stats``...).
PROMETHEUS_KIND = "prometheus"


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One metric line (or scrape), with where it came from.

    Invariants: ``body`` is the ``key: value`` part of the line exactly as
    printed; :attr:`raw` splits it into every pair in line order, unknown keys
    included, and :attr:`fields` types the values (both are computed when
    asked, so a sample costs little until someone looks). ``values`` maps
    canonical metrics to numbers in their :attr:`Metric.unit` (fractions 0-1,
    whatever the line printed); it holds only :func:`admissible` values (a value no
    metric can take, printed or read, is left out, whichever engine or source gave
    it). ``ts`` is the time printed on the line (host wall clock, naive; for a
    scrape, the caller's). ``offset`` is the byte offset of the line's first byte
    (``None`` for a scrape). ``source`` names the rank or engine that printed it
    (``DP1 TP0``, ``Engine 000``, ``2 Engines Aggregated``, or ``""``). ``run`` is
    the run the caller's :class:`RunBoundary` had reached (0 before any startup line). ``pairs``
    holds the fields of a sample that has no line (a ``/metrics`` scrape).
    ``kind`` names the line's shape (``sglang-decode``, ``vllm-stats``,
    ``prometheus``), ``engine`` the engine's name (its spec's ``series_label``
    turns ``source`` into the series label).
    """

    ts: datetime
    kind: str
    engine: str
    body: str
    values: Mapping[Metric, float]
    offset: int | None
    source: str = ""
    run: int = 0
    pairs: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        values = self.values
        if not all(admissible(m, v) for m, v in values.items()):
            kept = {m: v for m, v in values.items() if admissible(m, v)}
            object.__setattr__(self, "values", kept)

    @property
    def raw(self) -> dict[str, str]:
        """Every ``key: value`` pair, values as printed (a new dict each time)."""
        return dict(self.pairs) if self.pairs is not None else split_fields(self.body)

    @property
    def fields(self) -> dict[str, FieldValue]:
        """:attr:`raw` with values typed by :func:`field_value`."""
        return typed_fields(self.raw)

    def to_json(self) -> dict[str, object]:
        return {
            "ts": self.ts.isoformat(),
            "kind": self.kind,
            "fields": {k: list(v) if isinstance(v, tuple) else v for k, v in self.fields.items()},
            "offset": self.offset,
            "run": self.run,
            "source": self.source,
            "values": {m.value: v for m, v in self.values.items()},
        }


def canonical(body: str, table: Mapping[str, Metric]) -> dict[Metric, float]:
    """The canonical values in a line's ``key: value`` part: for each metric the first key of
    ``table`` in line order; a percentage of a fraction metric is scaled to 0-1, and a
    value that is not :func:`admissible` is left out."""
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
        if percent and metric in FRACTIONS:
            number /= 100
        if admissible(metric, number):
            values[metric] = number
    return values


#: The metrics measured as 0-1 fractions.
FRACTIONS = frozenset(m for m in Metric if m.unit is Unit.FRACTION)
#: The largest value of each metric: 1 for a fraction, the largest finite float else.
_CEILING = {m: 1.0 if m in FRACTIONS else math.nextafter(math.inf, 0.0) for m in Metric}


def admissible(metric: Metric, number: float) -> bool:
    """Whether ``metric`` can take ``number``: finite and at least 0, and at most 1 for a
    fraction (a fraction above 1 is no reading of it, so it is dropped, never clipped)."""
    return 0.0 <= number <= _CEILING[metric]
