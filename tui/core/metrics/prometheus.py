"""``/metrics`` scrapes into :class:`~tui.core.metrics.model.MetricSample` objects.

Counters become rates from one scrape of a server to the next, so the reader of a
server lives as long as that server's run is watched (:class:`PrometheusReaders`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from datetime import datetime

from tui.core.metrics.model import Engine, Metric, MetricKind, MetricSample

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
