"""SGLang while serving: a Prefill line per scheduled batch, a Decode line every
``--decode-log-interval`` forward steps, and the numbers the metrics page shows."""

from __future__ import annotations

from tui.sim.load import Advance, Request, SpecModel
from tui.sim.sglang.lines import SglangLines
from tui.sim.version import V


class Batches(SglangLines):
    """The scheduler's batch lines of this release."""

    def on_advance(self, advance: Advance, now: float) -> None:
        load = self.host.load
        if advance.prefilled:
            self.sched(self.prefill_line(advance.prefilled, now))
        for request in advance.finished:
            self.on_finished(request)
        if advance.decode_log_due:
            self.sched(self.decode_line(now))
            load.decode_logged()
        self._check_warmup(advance.finished)

    def on_finished(self, request: Request) -> None:
        if request.first_token is None or request.finished is None:
            return
        with self._lock:
            self.ttft.observe(max(request.first_token - request.arrived, 0.0))
            self.e2e.observe(max(request.finished - request.arrived, 0.0))
            if request.completion_tokens > 1:
                gap = (request.finished - request.first_token) / (request.completion_tokens - 1)
                self.itl.observe(max(gap, 0.0))

    def _head(self, kind: str) -> str:
        v = self.v
        if v < V("0.5.4"):
            return f"{kind} batch. "
        if v < V("0.5.4.post1") or self.log_iters:
            return f"{kind} batch [{self.host.load.totals.forward_ct}], "
        return f"{kind} batch, "

    def _noisy_accept(self, spec: SpecModel) -> tuple[float, float]:
        """(accept len, accept rate) for one Decode line, rate by this release's definition."""
        rng = self.host.rng
        length = 1.0 + sum(spec.sample(rng))
        v = self.v
        if v >= V("0.5.12"):
            rate = (length - 1.0) / max(spec.verify_tokens - 1, 1)
        elif v >= V("0.5.5"):
            rate = length / spec.verify_tokens
        else:
            rate = length / (spec.k + 1)
        return length, min(rate, 1.0)

    def decode_line(self, now: float) -> str:
        """The Decode line of this release.

        ============  ==============  ==================  ==========  =================
        release       head            spec fields         cuda graph  tail
        ============  ==============  ==================  ==========  =================
        ≤0.4.0        Decode batch.   -                   -           #queue-req: N
        0.4.3-0.4.6   Decode batch.   accept len          -           #queue-req: N
        0.4.7-0.4.9   Decode batch.   accept len          yes         #queue-req: N
        0.4.10-0.5.3  Decode batch.   accept len (+rate   yes         #queue-req: N,␣
                                      from 0.5.3.post3)
        0.5.4         Decode batch    len+rate            yes         #queue-req: N,␣
                      [N],
        0.5.4.post1-  Decode batch,   len+rate            yes         #queue-req: N,␣
        0.5.8
        ≥0.5.9        Decode batch,   len+rate            yes         #queue-req: N
        ============  ==============  ==================  ==========  =================
        """
        load = self.host.load
        window = load.take("decode", now)
        v = self.v
        running = load.running
        used = load.used_tokens
        usage = used / self.max_total_tokens
        throughput = window.gen_tokens / window.elapsed
        message = (
            f"{self._head('Decode')}#running-req: {running}, #token: {used}, "
            f"token usage: {usage:.2f}, "
        )
        accept_len = accept_rate = 0.0
        if self.spec is not None:
            accept_len, accept_rate = self._noisy_accept(self.spec)
            message += f"accept len: {accept_len:.2f}, "
            if v >= V("0.5.3.post3"):
                message += f"accept rate: {accept_rate:.2f}, "
        if v >= V("0.4.7"):
            message += f"cuda graph: {self.cuda_graph and running <= self.graph_bs}, "
        message += f"gen throughput (token/s): {throughput:.2f}, "
        queued = load.queued
        message += (
            f"#queue-req: {queued}, " if V("0.4.10") <= v < V("0.5.9") else f"#queue-req: {queued}"
        )
        with self._lock:
            self.last_gen_throughput = throughput
            self.last_accept_len = accept_len
            self.gauges.update(
                {
                    "num_running_reqs": running,
                    "num_used_tokens": used,
                    "token_usage": usage,
                    "gen_throughput": throughput,
                    "num_queue_reqs": queued,
                    "spec_accept_length": accept_len,
                    "spec_accept_rate": accept_rate,
                    "is_cuda_graph": float(self.cuda_graph and running <= self.graph_bs),
                }
            )
        return message

    def prefill_line(self, batch: tuple[Request, ...], now: float) -> str:
        """The Prefill line of this release (one per scheduled prefill batch)."""
        load = self.host.load
        window = load.take("prefill", now)
        v = self.v
        new_tokens = sum(r.prompt_tokens - r.cached_tokens for r in batch)
        cached = sum(r.cached_tokens for r in batch)
        still_running = sum(1 for r in batch if r.finished is None)
        running_before = max(load.running - still_running, 0)
        used = load.used_tokens
        usage = used / self.max_total_tokens
        queued = load.queued
        message = (
            f"{self._head('Prefill')}#new-seq: {len(batch)}, #new-token: {new_tokens}, "
            f"#cached-token: {cached}, "
        )
        if v < V("0.4.6"):
            hit = cached / max(new_tokens + cached, 1)
            message += f"cache hit rate: {100.0 * hit:.2f}%, "
        message += f"token usage: {usage:.2f}, #running-req: {running_before}, "
        input_tps = window.prompt_tokens / window.elapsed
        if v < V("0.4.10"):
            message += f"#queue-req: {queued}"
        elif v < V("0.5.9"):
            message += f"#queue-req: {queued}, "
        elif v < V("0.5.10"):
            message += (
                f"#queue-req: {queued}, input throughput (token/s): {input_tps:.2f}, "
                "cuda graph: False"
            )
        elif v < V("0.5.11"):
            message += (
                f"#queue-req: {queued}, cuda graph: False, "
                f"input throughput (token/s): {input_tps:.2f}"
            )
        else:
            message += (
                f"#queue-req: {queued}, #pending-token: {load.pending_tokens}, "
                f"cuda graph: False, input throughput (token/s): {input_tps:.2f}"
            )
        with self._lock:
            self.gauges.update(
                {
                    "num_running_reqs": running_before + still_running,
                    "num_used_tokens": used,
                    "token_usage": usage,
                    "num_queue_reqs": queued,
                    "cache_hit_rate": cached / max(new_tokens + cached, 1),
                }
            )
        return message
