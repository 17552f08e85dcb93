"""Bounded series of canonical metrics per service, one per run, and their snapshot."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from tui.core.metrics.model import Metric, MetricSample, Unit
from tui.core.metrics.stamps import to_epoch
from tui.engines import spec


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


def series_label(sample: MetricSample) -> str:
    """The series a sample's values go to: its engine's label of its source (``DP1``,
    ``engine 1``), or ``""`` for the whole service."""
    return spec(sample.engine).series_label(sample.source) if sample.source else ""


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
        label = series_label(sample)
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
        return None if point is None else _latest(key, point, now, stale_after)

    def snapshot(self, service: str, *, now: float, stale_after: float) -> ServiceMetrics:
        latest: dict[SeriesKey, Latest] = {}
        points: dict[SeriesKey, tuple[SeriesPoint, ...]] = {}
        run = self._runs.get(service)
        # :meth:`series` and :meth:`latest` of each key, in one pass (a fleet asks this of
        # every service on every refresh)
        for key, segments in self._series.items():
            if key.service != service or not segments:
                continue
            series = segments[-1]
            if series.run != run or not series.points:
                continue
            kept = points[key] = tuple(series.points)
            latest[key] = _latest(key, kept[-1], now, stale_after)
        return ServiceMetrics(service, run, latest, points)


def _latest(key: SeriesKey, point: SeriesPoint, now: float, stale_after: float) -> Latest:
    """``point`` as the latest of ``key`` at ``now``, with its age."""
    age = max(0.0, now - point.ts)
    return Latest(key, point.value, point.ts, age, age > stale_after, point.run, point.offset)
