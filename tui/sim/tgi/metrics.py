"""TGI's ``/metrics``: the ``tgi_*`` series as ``metrics-exporter-prometheus`` renders them.

No ``# HELP`` lines (TGI describes none), a ``# TYPE`` line per family and a
blank line after each; counters keep their bare names (no ``_total``); every
histogram has the buckets the router sets in ``server.rs`` (35 geometric
duration buckets from 0.00015 s, token counts in hundredths of the limits,
batch sizes 1 to 1024), bounds and values printed as Rust prints an ``f64``.
A series appears once something recorded it, as in the exporter.
"""

from __future__ import annotations

import threading

from tui.sim.histogram import Histogram
from tui.sim.load import Request, SpecModel
from tui.sim.tgi.lines import TgiLines
from tui.sim.tgi.rust import f64_display

N_DURATION_BUCKETS = 35
FIRST_DURATION = 0.0001
DURATION_GROWTH = 1.5
TOKEN_BUCKETS = 100
MAX_BATCH_BUCKET = 1024
DURATIONS = (
    "tgi_request_duration",
    "tgi_request_validation_duration",
    "tgi_request_queue_duration",
    "tgi_request_inference_duration",
    "tgi_request_mean_time_per_token_duration",
)


def duration_buckets() -> tuple[float, ...]:
    """``value *= 1.5`` 35 times from 0.0001, as the router computes them."""
    bounds = []
    value = FIRST_DURATION
    for _ in range(N_DURATION_BUCKETS):
        value *= DURATION_GROWTH
        bounds.append(value)
    return tuple(bounds)


def fraction_buckets(limit: int) -> tuple[float, ...]:
    """``(limit as f64 / 100.0) * (x + 1) as f64`` for x in 0..100."""
    return tuple((limit / 100.0) * (x + 1) for x in range(TOKEN_BUCKETS))


class Metrics(TgiLines):
    """Counters and histograms the routes update, rendered on each scrape."""

    max_input_tokens: int
    max_total_tokens: int
    speculate: int
    spec: SpecModel | None
    _lock: threading.Lock

    def init_metrics(self) -> None:
        durations = duration_buckets()
        self.histograms: dict[str, Histogram] = {name: Histogram(durations) for name in DURATIONS}
        self.histograms["tgi_request_input_length"] = Histogram(
            fraction_buckets(self.max_input_tokens)
        )
        self.histograms["tgi_request_generated_tokens"] = Histogram(
            fraction_buckets(self.max_total_tokens)
        )
        self.histograms["tgi_request_max_new_tokens"] = Histogram(
            fraction_buckets(self.max_total_tokens)
        )
        self.histograms["tgi_batch_next_size"] = Histogram(
            tuple(float(x + 1) for x in range(MAX_BATCH_BUCKET))
        )
        if self.speculate:
            self.histograms["tgi_request_skipped_tokens"] = Histogram(
                tuple(float(x) for x in range(self.speculate + 1))
            )
        self.counters: dict[str, int] = {"tgi_request_count": 0}
        self.failures: dict[str, int] = {}

    def record_request(self, max_new: int, prompt_tokens: int) -> None:
        """Validation passed: the request is counted and its sizes observed."""
        with self._lock:
            self.counters["tgi_request_count"] += 1
            self.histograms["tgi_request_input_length"].observe(float(prompt_tokens))
            self.histograms["tgi_request_max_new_tokens"].observe(float(max_new))
            self.histograms["tgi_batch_next_size"].observe(1.0)

    def record_success(self, request: Request, timings: dict[str, float]) -> None:
        """``tgi_request_success`` and the per-request histograms (seconds)."""
        with self._lock:
            self.counters["tgi_request_success"] = self.counters.get("tgi_request_success", 0) + 1
            for name, seconds in timings.items():
                self.histograms[name].observe(seconds)
            self.histograms["tgi_request_generated_tokens"].observe(
                float(request.completion_tokens)
            )
            if "tgi_request_skipped_tokens" in self.histograms and self.spec is not None:
                skipped = min(self.speculate, round(self.spec.mean_len - 1.0))
                self.histograms["tgi_request_skipped_tokens"].observe(float(skipped))

    def record_failure(self, err: str) -> None:
        with self._lock:
            self.failures[err] = self.failures.get(err, 0) + 1

    def metrics_text(self) -> str:
        load = self.host.load
        totals = load.totals
        lines: list[str] = []

        def family(name: str, kind: str, samples: list[tuple[str, str]]) -> None:
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{labels} {value}" for labels, value in samples)
            lines.append("")

        with self._lock:
            counters = dict(self.counters)
            failures = dict(self.failures)
            histograms = {
                name: (h.bounds, list(h.counts), h.total)
                for name, h in self.histograms.items()
                if sum(h.counts)
            }
        prefills = str(totals.requests)
        decodes = str(totals.forward_ct)
        counters_out: dict[str, list[tuple[str, str]]] = {
            name: [("", str(value))] for name, value in counters.items()
        }
        if totals.requests:
            batch = [('{method="prefill"}', prefills), ('{method="decode"}', decodes)]
            counters_out["tgi_batch_inference_count"] = batch
            counters_out["tgi_batch_inference_success"] = batch
        if failures:
            counters_out["tgi_request_failure"] = [
                (f'{{err="{err}"}}', str(count)) for err, count in sorted(failures.items())
            ]
        for name in sorted(counters_out):
            family(name, "counter", counters_out[name])
        gauges = {
            "tgi_queue_size": float(load.queued),
            "tgi_batch_current_size": float(load.running),
            "tgi_batch_current_max_tokens": float(load.used_tokens),
        }
        for name in sorted(gauges):
            family(name, "gauge", [("", f64_display(gauges[name]))])
        for name in sorted(histograms):
            bounds, counts, total = histograms[name]
            samples: list[tuple[str, str]] = []
            running = 0
            for bound, count in zip(bounds, counts, strict=False):
                running += count
                samples.append((f'_bucket{{le="{f64_display(bound)}"}}', str(running)))
            running += counts[-1]
            samples.append(('_bucket{le="+Inf"}', str(running)))
            samples.append(("_sum", f64_display(total)))
            samples.append(("_count", str(running)))
            family(name, "histogram", samples)
        return "\n".join(lines) + "\n"
