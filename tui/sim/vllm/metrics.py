"""vLLM's ``/metrics`` page: the V0 or V1 metric names of each release."""

from __future__ import annotations

from tui.sim.load import SpecModel
from tui.sim.prom import Exposition
from tui.sim.version import V
from tui.sim.vllm.lines import VllmLines

#: histogram bucket bounds in seconds, as vLLM declares them
# fmt: off
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5,
               10.0, 20.0, 40.0, 80.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
               120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
# fmt: on


class Metrics(VllmLines):
    """The Prometheus text of this release's counters, gauges and histograms."""

    def metrics_text(self) -> str:
        """``/metrics`` with the V0 or V1 metric names of this release (reference §2.6)."""
        load, v, v0 = self.host.load, self.v, self.v0
        totals = load.totals
        labels: dict[str, str] = {"model_name": self.served}
        if not v0:
            labels["engine"] = "0"
        usage = load.used_tokens / self.kv_tokens
        page = Exposition()
        with self._lock:
            gauges = [
                (
                    "num_requests_running",
                    "Number of requests in model execution batches.",
                    load.running,
                    True,
                ),
                ("num_requests_swapped", "Number of requests swapped to CPU.", 0, v0),
                (
                    "num_requests_waiting",
                    "Number of requests waiting to be processed.",
                    load.queued,
                    True,
                ),
                (
                    "gpu_cache_usage_perc",
                    "GPU KV-cache usage. 1 means 100 percent usage.",
                    usage,
                    v < V("0.15.0"),
                ),
                (
                    "kv_cache_usage_perc",
                    "KV-cache usage. 1 means 100 percent usage.",
                    usage,
                    not v0 and v >= V("0.9.0"),
                ),
                ("cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", 0, v0),
                (
                    "avg_prompt_throughput_toks_per_s",
                    "Average prefill throughput in tokens/s.",
                    self._last_prompt_tps,
                    v0,
                ),
                (
                    "avg_generation_throughput_toks_per_s",
                    "Average generation throughput in tokens/s.",
                    self._last_gen_tps,
                    v0,
                ),
            ]
            prefix = "vllm:prefix_cache" if v >= V("0.9.0") else "vllm:gpu_prefix_cache"
            counters = [
                (
                    "vllm:num_preemptions",
                    "Cumulative number of preemption from the engine.",
                    0,
                    True,
                ),
                (
                    "vllm:prompt_tokens",
                    "Number of prefill tokens processed.",
                    totals.prompt_tokens,
                    True,
                ),
                (
                    "vllm:generation_tokens",
                    "Number of generation tokens processed.",
                    int(totals.gen_tokens),
                    True,
                ),
                (
                    f"{prefix}_queries",
                    "Prefix cache queries, in terms of number of queried tokens.",
                    totals.prompt_tokens,
                    not v0,
                ),
                (
                    f"{prefix}_hits",
                    "Prefix cache hits, in terms of number of cached tokens.",
                    totals.cached_tokens,
                    not v0,
                ),
            ]
            histograms = [
                (
                    "time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.",
                    self.ttft,
                    True,
                ),
                (
                    "inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.",
                    self.itl,
                    not v0 and v >= V("0.10.2"),
                ),
                (
                    "time_per_output_token_seconds",
                    "Histogram of time per output token in seconds.",
                    self.itl,
                    v < V("0.15.0"),
                ),
                (
                    "e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.",
                    self.e2e,
                    True,
                ),
                (
                    "request_queue_time_seconds",
                    "Histogram of time spent in WAITING phase for request.",
                    self.queue,
                    not v0,
                ),
            ]
            for name, help_text, value, shown in gauges:
                if shown:
                    page.gauge(f"vllm:{name}", help_text, [(labels, float(value))])
            for name, help_text, value, shown in counters:
                if shown:
                    page.counter(name, help_text, [(labels, float(value))], self.created)
            page.counter(
                "vllm:request_success",
                "Count of successfully processed requests.",
                [
                    ({**labels, "finished_reason": reason}, float(count))
                    for reason, count in self.finished_reasons.items()
                ],
                self.created,
            )
            for name, help_text, hist, shown in histograms:
                if shown:
                    page.histogram(
                        f"vllm:{name}",
                        help_text,
                        hist.bounds,
                        [(labels, list(hist.counts), hist.total)],
                        self.created,
                    )
        if self.spec is not None:
            self._spec_metrics(page, labels, self.spec)
        return page.text()

    def _spec_metrics(self, page: Exposition, labels: dict[str, str], spec: SpecModel) -> None:
        totals = self.host.load.totals
        drafts = float(round(totals.drafts))
        created = self.created
        if self.v0:
            accepted = float(round(totals.accepted))
            drafted = drafts * spec.k
            emitted = accepted + drafts
            page.gauge(
                "vllm:spec_decode_draft_acceptance_rate",
                "Speulative token acceptance rate.",
                [(labels, accepted / drafted if drafted else 0.0)],
            )
            page.gauge(
                "vllm:spec_decode_efficiency",
                "Speculative decoding system efficiency.",
                [(labels, emitted / (drafts * (spec.k + 1)) if drafts else 0.0)],
            )
            for name, value in (("accepted", accepted), ("draft", drafted), ("emitted", emitted)):
                page.counter(
                    f"vllm:spec_decode_num_{name}_tokens",
                    f"Number of {name} tokens.",
                    [(labels, value)],
                    created,
                )
            return
        per_pos = [float(round(totals.drafts * rate)) for rate in spec.per_pos]
        page.counter(
            "vllm:spec_decode_num_drafts",
            "Number of spec decoding drafts.",
            [(labels, drafts)],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_draft_tokens",
            "Number of draft tokens.",
            [(labels, drafts * spec.k)],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_accepted_tokens",
            "Number of accepted tokens.",
            [(labels, float(sum(per_pos)))],
            created,
        )
        page.counter(
            "vllm:spec_decode_num_accepted_tokens_per_pos",
            "Accepted tokens per draft position.",
            [({**labels, "position": str(i)}, n) for i, n in enumerate(per_pos)],
            created,
        )
