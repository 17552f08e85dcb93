"""Hints over speculative decoding's acceptance figures in this run, read against what a
canary's output showed (tui/core/canary.py).

* ``sampling-loop`` — the canary's output repeats (REPETITION) while drafts are accepted
  nearly always: the median of the recent accept rates is at or above 0.95, or the
  recent accept lengths are within a tenth of the draft tokens of their most (draft
  tokens + 1, the draft tokens read from the running server's values through the
  engine's ``draft_tokens``). A draft that agrees with its target on every token is
  what a target caught in a loop produces: the loop comes from sampling (temperature,
  top_p, penalties), not from speculative decoding. The evidence sets the canary's
  sampling (and where it came from) beside the model's recommended one, and gives the
  accept figures with where in the log they are.
* ``accept-collapse`` — the accept rate was healthy in this run (the median of its
  earlier values at or above 0.6, over at least five values) and each of the latest
  three fell below half of it: the draft no longer matches the target (a target model
  swapped under a running draft, a changed draft model or head). Without rates the
  accept lengths are read the same way, as the draft tokens accepted per step
  (length - 1), healthy at 0.6 of the draft tokens (or at 0.6 tokens when those are
  unknown).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from tui.core.canary import CanaryOutcome, CanaryResult, running_values, sampling_words
from tui.core.hint import Hint, HintRule, Thresholds, run_words, where_words
from tui.core.launch.diff import LaunchDiff
from tui.core.metrics.model import Metric
from tui.core.metrics.series import SeriesPoint, ServiceMetrics
from tui.engines import spec

#: Characters of the canary's output quoted in the evidence.
QUOTED_OUTPUT = 80


def draft_tokens(launch: LaunchDiff | None) -> int | None:
    """The draft tokens one verify step proposes, from the running server's values, or None."""
    if launch is None or launch.engine is None:
        return None
    reader = spec(launch.engine).draft_tokens
    return reader(running_values(launch)) if reader is not None else None


def _recent(points: Sequence[SeriesPoint], limits: Thresholds) -> Sequence[SeriesPoint]:
    count = max(limits.repetition_min_points, limits.repetition_recent_points)
    return points[-count:]


def _accepting_all(metrics: ServiceMetrics, drafts: int | None, limits: Thresholds) -> str | None:
    """The accept figure that says nearly every draft is accepted, in words, or None."""
    rates = _recent(metrics.series_of(Metric.ACCEPT_RATE), limits)
    if len(rates) >= limits.repetition_min_points:
        rate = statistics.median(p.value for p in rates)
        if rate >= limits.repetition_accept_rate:
            return (
                f"accept rate {rate:.2f} (median of the last {len(rates)} values, "
                f"{run_words(metrics)}){where_words(rates)}"
            )
    lengths = _recent(metrics.series_of(Metric.ACCEPT_LEN), limits)
    if drafts is None or len(lengths) < limits.repetition_min_points:
        return None
    length = statistics.median(p.value for p in lengths)
    most = drafts + 1
    if length < most - limits.near_max_length * drafts:
        return None
    return (
        f"accept length {length:.2f} of at most {most} ({drafts} draft tokens per step, "
        f"from the running server's values; median of the last {len(lengths)} values, "
        f"{run_words(metrics)}){where_words(lengths)}"
    )


def _sampling_side_by_side(canary: CanaryResult) -> str:
    sent = f"the canary sent {sampling_words(canary.sampling)} ({canary.source_words()})"
    if canary.recommended is None:
        unread = "the model's generation_config.json was not read"
        if canary.sampling_problem:
            unread += f" ({canary.sampling_problem})"
        return f"{sent}; {unread}"
    return f"{sent}; the model recommends {sampling_words(canary.recommended)}"


def sampling_loop(
    metrics: ServiceMetrics,
    launch: LaunchDiff | None,
    canary: CanaryResult | None,
    limits: Thresholds,
) -> Hint | None:
    """The canary's output loops while drafts are accepted nearly always."""
    if canary is None or canary.outcome is not CanaryOutcome.REPETITION:
        return None
    accepted = _accepting_all(metrics, draft_tokens(launch), limits)
    if accepted is None:
        return None
    output = canary.output[:QUOTED_OUTPUT] + ("…" if len(canary.output) > QUOTED_OUTPUT else "")
    score = f"{canary.repetition:.2f}" if canary.repetition is not None else "high"
    return Hint(
        HintRule.SAMPLING_LOOP,
        "the output repeats itself while speculative decoding accepts nearly every draft: "
        "the loop comes from sampling, not from speculative decoding (a draft matches a "
        "target that repeats) — use the model's recommended sampling (temperature, top_p, "
        "repetition penalty)",
        (
            f"the canary's output repeats (repetition {score}): {output!r}",
            _sampling_side_by_side(canary),
            accepted,
        ),
    )


def _collapse_series(
    metrics: ServiceMetrics, drafts: int | None
) -> tuple[str, Sequence[SeriesPoint], float, float]:
    """(what is read, its points, the scale, the floor): accept rates as they are, else
    accept lengths as draft tokens accepted per step (length - 1) on the scale of the
    draft tokens."""
    rates = metrics.series_of(Metric.ACCEPT_RATE)
    if rates:
        return "accept rate", rates, 1.0, 0.0
    return "accept length", metrics.series_of(Metric.ACCEPT_LEN), float(drafts or 1), 1.0


def accept_collapse(
    metrics: ServiceMetrics, launch: LaunchDiff | None, limits: Thresholds
) -> Hint | None:
    """The accept rate (or length) was healthy in this run and its latest values fell
    below half of that."""
    name, points, scale, floor = _collapse_series(metrics, draft_tokens(launch))
    recent_count = limits.collapse_recent_points
    earlier, recent = points[:-recent_count], points[-recent_count:]
    if len(earlier) < limits.collapse_min_points or len(recent) < recent_count:
        return None
    before = statistics.median(p.value for p in earlier)
    if (before - floor) / scale < limits.collapse_healthy_rate:
        return None
    limit = floor + (before - floor) * limits.collapse_fraction
    if any(p.value >= limit for p in recent):
        return None
    now = statistics.median(p.value for p in recent)
    return Hint(
        HintRule.ACCEPT_COLLAPSE,
        f"the {name} collapsed after it was healthy in this run: the draft no longer "
        "matches the target — a target model swapped under its draft, or a changed draft "
        "model or head",
        (
            f"{name} {before:.2f} (median of {len(earlier)} earlier values, "
            f"{run_words(metrics)}){where_words(earlier)}",
            f"{name} {now:.2f} (median of the latest {len(recent)}, each under "
            f"{limit:.2f}){where_words(recent)}",
        ),
    )
