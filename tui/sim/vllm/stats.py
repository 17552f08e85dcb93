"""vLLM while serving: request bookkeeping and the periodic stats and SpecDecoding lines."""

from __future__ import annotations

import time

from tui.sim.load import Advance, Request, SpecModel
from tui.sim.version import V
from tui.sim.vllm.lines import VllmLines


class Stats(VllmLines):
    """Stats lines every ``interval`` seconds while the engine is not idle."""

    def on_advance(self, advance: Advance, now: float) -> None:
        for request in advance.finished:
            self.on_finished(request)

    def on_finished(self, request: Request) -> None:
        if request.first_token is None or request.finished is None or request.admitted is None:
            return
        with self._lock:
            self.ttft.observe(max(request.first_token - request.arrived, 0.0))
            self.e2e.observe(max(request.finished - request.arrived, 0.0))
            self.queue.observe(max(request.admitted - request.arrived, 0.0))
            if request.completion_tokens > 1:
                gap = (request.finished - request.first_token) / (request.completion_tokens - 1)
                self.itl.observe(max(gap, 0.0))
            self.finished_reasons["length"] += 1

    def _tick(self) -> None:
        if self.engine_dead:
            return
        self.host.schedule(self.interval, self._tick)
        now = time.monotonic()
        window = self.host.load.take("stats", now)
        prompt_tps = (window.prompt_tokens + window.cached_tokens) / window.elapsed
        gen_tps = window.gen_tokens / window.elapsed
        with self._lock:
            last_prompt, last_gen = self._last_prompt_tps, self._last_gen_tps
            self._last_prompt_tps, self._last_gen_tps = prompt_tps, gen_tps
        if not self.log_stats:
            return
        if self.v0:
            if window.gen_tokens <= 0 and window.prompt_tokens + window.cached_tokens <= 0:
                return
        elif not any((prompt_tps, gen_tps, last_prompt, last_gen)):
            return  # vLLM demotes the stats line to DEBUG on an idle engine
        self.log("stats", self.stats_line(prompt_tps, gen_tps, window.requests > 0))
        if self.spec is not None and window.drafts >= 1:
            self.log("spec", self.spec_line(self.spec, window.drafts, window.elapsed))

    def stats_line(self, prompt_tps: float, gen_tps: float, had_queries: bool) -> str:
        load = self.host.load
        v = self.v
        running, waiting = load.running, load.queued
        usage = 100.0 * load.used_tokens / self.kv_tokens
        totals = load.totals
        hit = 100.0 * totals.cached_tokens / max(totals.prompt_tokens, 1)
        if self.v0:
            return (
                f"Avg prompt throughput: {prompt_tps:.1f} tokens/s, "
                f"Avg generation throughput: {gen_tps:.1f} tokens/s, "
                f"Running: {running} reqs, Swapped: 0 reqs, Pending: {waiting} reqs, "
                f"GPU KV cache usage: {usage:.1f}%, CPU KV cache usage: 0.0%."
            )
        if v < V("0.15.0"):
            return (
                f"Engine 000: Avg prompt throughput: {prompt_tps:.1f} tokens/s, "
                f"Avg generation throughput: {gen_tps:.1f} tokens/s, "
                f"Running: {running} reqs, Waiting: {waiting} reqs, "
                f"GPU KV cache usage: {usage:.1f}%, Prefix cache hit rate: {hit:.1f}%"
            )
        parts = [
            f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
            f"Avg generation throughput: {gen_tps:.1f} tokens/s",
            f"Running: {running} reqs",
            f"Waiting: {waiting} reqs",
            f"GPU KV cache usage: {usage:.1f}%",
        ]
        if v < V("0.31.0") or had_queries:
            parts.append(f"Prefix cache hit rate: {hit:.1f}%")
        return "Engine 000: " + ", ".join(parts)

    def spec_line(self, spec: SpecModel, drafts_f: float, elapsed: float) -> str:
        rng = self.host.rng
        drafts = max(1, round(drafts_f))
        rates = spec.sample(rng)
        accepted_pos = [round(drafts * rate) for rate in rates]
        accepted = sum(accepted_pos)
        drafted = drafts * spec.k
        per_pos = ", ".join(f"{count / drafts:.3f}" for count in accepted_pos)
        v = self.v
        if self.v0:
            totals = self.host.load.totals
            t_drafts = max(1, round(totals.drafts))
            t_accepted = round(totals.accepted)
            t_drafted = t_drafts * spec.k
            emitted = t_accepted + t_drafts
            return (
                "Speculative metrics: Draft acceptance rate: "
                f"{t_accepted / t_drafted:.3f}, System efficiency: "
                f"{emitted / (t_drafts * (spec.k + 1)):.3f}, Number of speculative tokens: "
                f"{spec.k}, Number of accepted tokens: {t_accepted}, Number of draft tokens: "
                f"{t_drafted}, Number of emitted tokens: {emitted}."
            )
        if v < V("0.10.2"):
            mean = accepted / drafts if v < V("0.9.0") else 1 + accepted / drafts
            return (
                f"SpecDecoding metrics: Draft acceptance rate: {100 * accepted / drafted:.1f}%, "
                f"Mean acceptance length: {mean:.2f}, Accepted: {accepted} tokens, "
                f"Drafted: {drafted} tokens, Per-position acceptance rate: {per_pos}"
            )
        return (
            f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
            f"Accepted throughput: {accepted / elapsed:.2f} tokens/s, "
            f"Drafted throughput: {drafted / elapsed:.2f} tokens/s, "
            f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
            f"Per-position acceptance rate: {per_pos}, "
            f"Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%"
        )
