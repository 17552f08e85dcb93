"""``/metrics`` scrapes into :class:`~tui.core.metrics.model.MetricSample` objects.

Counters become rates from one scrape of a server to the next, so the reader of a
server lives as long as that server's run is watched (:class:`PrometheusReaders`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from datetime import datetime

from tui.core.metrics.model import PROMETHEUS_KIND, Metric, MetricSample
from tui.engines import SPECS
from tui.engines.spec import EngineSpec, Prometheus

#: A counter broken down by this label is not the total (vLLM's per-position acceptance).
_PER_POSITION = "position"


def _engine_of(name: str) -> EngineSpec | None:
    for spec in SPECS.values():
        prefix = spec.prometheus.prefix
        if prefix and name.startswith(prefix):
            return spec
    return None


def _kept(labels: dict[str, str], page: Prometheus) -> bool:
    return all(labels.get(k, v) == v for k, v in page.only_labels) and not any(
        labels.get(k) == v for k, v in page.skip_labels
    )


class PrometheusReader:
    """Turns successive ``/metrics`` scrapes of one server into samples.

    The page is the engine's whose ``prometheus.prefix`` starts a sample's name;
    its gauges map straight to metrics (summed over DP ranks or engines for counts
    and throughputs, averaged for fractions; the samples its labels rule out are
    left out). Rates and acceptance come from counters, so they appear
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
        kept: list[tuple[str, dict[str, str], float]] = []
        engine: EngineSpec | None = None
        try:
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    labels = sample.labels
                    label_text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                    name = sample.name
                    fields[f"{name}{{{label_text}}}" if label_text else name] = repr(sample.value)
                    if engine is None:
                        engine = _engine_of(name)
                    if math.isfinite(sample.value):
                        kept.append((name, labels, sample.value))
        except (ValueError, TypeError, IndexError, KeyError):
            return None
        if not fields or engine is None:
            return None
        page = engine.prometheus
        counted = set(page.rates) | set(page.acceptance or ())
        sums: dict[Metric, list[float]] = {}
        summed: dict[Metric, bool] = {}
        counters: dict[str, float] = {}
        for name, labels, value in kept:
            if not _kept(labels, page):
                continue
            if name in page.gauges:
                metric, summed[metric] = page.gauges[name]
                sums.setdefault(metric, []).append(value)
            elif name in counted and _PER_POSITION not in labels:
                counters[name] = counters.get(name, 0.0) + value
        values = {
            metric: sum(found) if summed[metric] else sum(found) / len(found)
            for metric, found in sums.items()
        }
        values.update(self._rates(ts, counters, values, page))
        if self._last is None or ts > self._last[0]:  # the newest reading is the next base
            self._last = (ts, counters)
        return MetricSample(
            ts=ts,
            kind=PROMETHEUS_KIND,
            engine=engine.name,
            body="",
            pairs=fields,
            values=values,
            offset=None,
            run=run,
        )

    def _rates(
        self,
        ts: datetime,
        counters: dict[str, float],
        gauges: Mapping[Metric, float],
        page: Prometheus,
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
        for name, metric in page.rates.items():
            if name in delta and metric not in gauges and metric not in rates:
                rates[metric] = delta[name] / seconds
        if page.acceptance is not None:
            accepted_name, drafts_name, draft_tokens_name = page.acceptance
            accepted = delta.get(accepted_name)
            drafts = delta.get(drafts_name)
            draft_tokens = delta.get(draft_tokens_name)
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
