"""SGLang's ``/metrics`` page (only with ``--enable-metrics``)."""

from __future__ import annotations

from tui.sim.prom import Exposition
from tui.sim.sglang.lines import SglangLines
from tui.sim.version import V

#: histogram bucket bounds in seconds, as SGLang declares them
# fmt: off
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
                0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)
# fmt: on


class Metrics(SglangLines):
    """The Prometheus text of the scheduler's gauges, the token counters and histograms."""

    def metrics_text(self) -> str:
        """``/metrics`` as SGLang's multiprocess collector writes it: sorted labels, no _created"""
        served = str(self.args["served_model_name"])
        sched = {"engine_type": "unified", "model_name": served}
        if self.v >= V("0.4.10"):
            sched.update({"pp_rank": "0", "tp_rank": "0"})
        tok = {"model_name": served}
        totals = self.host.load.totals
        page = Exposition()
        helps = {
            "num_running_reqs": "The number of running requests.",
            "num_used_tokens": "The number of used tokens.",
            "token_usage": "The token usage.",
            "gen_throughput": "The generation throughput (token/s).",
            "num_queue_reqs": "The number of requests in the waiting queue.",
            "cache_hit_rate": "The prefix cache hit rate.",
            "spec_accept_length": "The average acceptance length of speculative decoding.",
        }
        if self.v >= V("0.5.5"):
            helps["spec_accept_rate"] = "The average acceptance rate of speculative decoding."
            helps["is_cuda_graph"] = "Whether the batch is using CUDA graph."
        with self._lock:
            gauges = dict(self.gauges)
            for key, help_text in helps.items():
                if gauges:
                    page.gauge(f"sglang:{key}", help_text, [(sched, float(gauges.get(key, 0.0)))])
            page.counter(
                "sglang:prompt_tokens",
                "Number of prefill tokens processed.",
                [(tok, float(totals.prompt_tokens))],
            )
            page.counter(
                "sglang:generation_tokens",
                "Number of generation tokens processed.",
                [(tok, float(int(totals.gen_tokens)))],
            )
            page.counter(
                "sglang:cached_tokens",
                "Number of cached prompt tokens.",
                [(tok, float(totals.cached_tokens))],
            )
            page.counter(
                "sglang:num_requests",
                "Number of requests processed.",
                [(tok, float(totals.finished))],
            )
            for name, help_text, hist in (
                (
                    "sglang:time_to_first_token_seconds",
                    "Histogram of time to first token in seconds.",
                    self.ttft,
                ),
                (
                    "sglang:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.",
                    self.itl,
                ),
                (
                    "sglang:e2e_request_latency_seconds",
                    "Histogram of End-to-end request latency in seconds",
                    self.e2e,
                ),
            ):
                page.histogram(name, help_text, hist.bounds, [(tok, list(hist.counts), hist.total)])
            if self.v >= V("0.5.5"):
                page.gauge(
                    "sglang:engine_startup_time",
                    "The time taken for the engine to start up.",
                    [(sched, round(self.cfg.load_seconds, 3))],
                )
        return page.text()
