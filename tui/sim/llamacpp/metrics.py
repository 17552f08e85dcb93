"""llama-server's ``/metrics`` page (only with ``--metrics``): ``llamacpp:*`` families.

The page is what ``server_task_result_metrics::to_metrics`` writes: for each item
``# HELP llamacpp:NAME TEXT``, ``# TYPE llamacpp:NAME TYPE``, ``llamacpp:NAME VALUE``,
counters first, values as a C++ stream prints a double (``%g``, six digits), no labels
except the per-position acceptance counter. The throughput gauges average over the
window since the last scrape. 2024 builds also show the KV cache gauges; 2026 builds word
the help texts anew, add the cached-prompt and speculative counters and make
``n_busy_slots_per_decode`` a gauge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.sim.llamacpp.lines import LlamaLines

#: (accepted, drafted, verify steps, acceptance per position) of one request
SpecCounts = tuple[int, int, int, tuple[float, ...]]


@dataclass(frozen=True)
class Timing:
    """What ``print_timings`` reports of one finished request."""

    n_prompt: int
    prompt_ms: float
    n_gen: int
    gen_ms: float
    cached: int
    spec: SpecCounts | None


MS = 1000.0


@dataclass
class Counters:
    """Totals since start and the window since the last scrape. Guarded by the engine lock."""

    prompt_tokens: int = 0
    prompt_ms: float = 0.0
    cached_tokens: int = 0
    predicted: int = 0
    predicted_ms: float = 0.0
    drafted: int = 0
    accepted: int = 0
    steps: int = 0
    accepted_per_pos: list[float] = field(default_factory=list)
    tokens_max: int = 0
    window_prompt: int = 0
    window_prompt_ms: float = 0.0
    window_predicted: int = 0
    window_predicted_ms: float = 0.0

    def add(self, timing: Timing) -> None:
        """Count one finished request."""
        n_prompt, prompt_ms, n_gen, gen_ms = (
            timing.n_prompt,
            timing.prompt_ms,
            timing.n_gen,
            timing.gen_ms,
        )
        cached, spec = timing.cached, timing.spec
        self.prompt_tokens += n_prompt
        self.prompt_ms += prompt_ms
        self.cached_tokens += cached
        self.predicted += n_gen
        self.predicted_ms += gen_ms
        self.tokens_max = max(self.tokens_max, n_prompt + cached + n_gen)
        self.window_prompt += n_prompt
        self.window_prompt_ms += prompt_ms
        self.window_predicted += n_gen
        self.window_predicted_ms += gen_ms
        if spec is not None:
            accepted, drafted, steps, per_pos = spec
            self.accepted += accepted
            self.drafted += drafted
            self.steps += steps
            if len(self.accepted_per_pos) < len(per_pos):
                self.accepted_per_pos.extend([0.0] * (len(per_pos) - len(self.accepted_per_pos)))
            for index, rate in enumerate(per_pos):
                self.accepted_per_pos[index] += rate * steps

    def take_window(self) -> tuple[float, float]:
        """(prompt tokens/s, generated tokens/s) since the last scrape; starts a new window."""
        prompt = self.window_prompt / self.window_prompt_ms * MS if self.window_prompt_ms else 0.0
        predicted = (
            self.window_predicted / self.window_predicted_ms * MS
            if self.window_predicted_ms
            else 0.0
        )
        self.window_prompt = self.window_predicted = 0
        self.window_prompt_ms = self.window_predicted_ms = 0.0
        return prompt, predicted


def cpp_double(value: float) -> str:
    """``std::ostream << double`` with the default precision: ``%g``."""
    return f"{value:g}"


class Metrics(LlamaLines):
    """The text of ``/metrics`` for this build."""

    def metrics_text(self) -> str:
        load = self.host.load
        processing, deferred = load.running, load.queued
        decodes = load.totals.forward_ct
        with self._lock:
            c = self.counters
            prompt_tps, predicted_tps = c.take_window()
            busy = self.busy_slot_steps / max(decodes, 1)
            if self.shape == "2026":
                counters = [
                    (
                        "prompt_tokens_total",
                        "Number of prompt tokens processed, excluding cached tokens",
                        c.prompt_tokens,
                    ),
                    (
                        "prompt_tokens_cached_total",
                        "Number of prompt tokens reused from the cache",
                        c.cached_tokens,
                    ),
                    (
                        "prompt_seconds_total",
                        "Total time spent processing prompts",
                        c.prompt_ms / MS,
                    ),
                    (
                        "tokens_predicted_total",
                        "Number of generation tokens processed",
                        c.predicted,
                    ),
                    (
                        "tokens_predicted_seconds_total",
                        "Total time spent generating tokens",
                        c.predicted_ms / MS,
                    ),
                    (
                        "n_decode_total",
                        "Total number of llama_decode() calls, excluding speculative decoding and "
                        "multimodal decoding",
                        decodes,
                    ),
                    (
                        "n_tokens_max",
                        "Largest observed sequence length (prompt + generation)",
                        c.tokens_max,
                    ),
                    (
                        "spec_decode_num_draft_tokens_total",
                        "Speculative: Total draft tokens generated",
                        c.drafted,
                    ),
                    (
                        "spec_decode_num_accepted_tokens_total",
                        "Speculative: Total draft tokens accepted by the target model",
                        c.accepted,
                    ),
                    (
                        "spec_decode_num_drafts_total",
                        "Speculative: Total speculative decoding verification steps",
                        c.steps,
                    ),
                ]
                gauges = [
                    ("prompt_tokens_seconds", "Average prompt throughput in tokens/s", prompt_tps),
                    (
                        "predicted_tokens_seconds",
                        "Average generation throughput in tokens/s",
                        predicted_tps,
                    ),
                    ("requests_processing", "Number of requests processing", processing),
                    ("requests_deferred", "Number of requests deferred", deferred),
                    (
                        "n_busy_slots_per_decode",
                        "Average number of busy slots per llama_decode() call",
                        busy,
                    ),
                ]
            else:
                counters = [
                    ("prompt_tokens_total", "Number of prompt tokens processed.", c.prompt_tokens),
                    ("prompt_seconds_total", "Prompt process time", c.prompt_ms / MS),
                    (
                        "tokens_predicted_total",
                        "Number of generation tokens processed.",
                        c.predicted,
                    ),
                    ("tokens_predicted_seconds_total", "Predict process time", c.predicted_ms / MS),
                    ("n_decode_total", "Total number of llama_decode() calls", decodes),
                    (
                        "n_busy_slots_per_decode",
                        "Average number of busy slots per llama_decode() call",
                        busy,
                    ),
                ]
                gauges = [
                    ("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", prompt_tps),
                    (
                        "predicted_tokens_seconds",
                        "Average generation throughput in tokens/s.",
                        predicted_tps,
                    ),
                ]
                if self.shape == "2024":
                    used = load.used_tokens
                    gauges += [
                        (
                            "kv_cache_usage_ratio",
                            "KV-cache usage. 1 means 100 percent usage.",
                            used / max(self.n_ctx, 1),
                        ),
                        ("kv_cache_tokens", "KV-cache tokens.", used),
                    ]
                gauges += [
                    ("requests_processing", "Number of requests processing.", processing),
                    ("requests_deferred", "Number of requests deferred.", deferred),
                ]
            per_pos = list(c.accepted_per_pos) if self.shape == "2026" else []
        lines: list[str] = []
        for kind, items in (("counter", counters), ("gauge", gauges)):
            for name, help_text, value in items:
                lines.append(f"# HELP llamacpp:{name} {help_text}")
                lines.append(f"# TYPE llamacpp:{name} {kind}")
                lines.append(f"llamacpp:{name} {cpp_double(float(value))}")
        if per_pos:
            name = "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
            lines.append(f"# HELP {name} Accepted tokens per draft position")
            lines.append(f"# TYPE {name} counter")
            lines.extend(
                f'{name}{{position="{index}"}} {round(value)}'
                for index, value in enumerate(per_pos)
            )
        return "\n".join(lines) + "\n"
