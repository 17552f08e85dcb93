"""What a hint is (:class:`Hint`, :class:`HintRule`), the numbers the rules use
(:class:`Thresholds`), and the words every rule writes its evidence with. The rules
are :mod:`tui.core.hints` and :mod:`tui.core.hints_accept`."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from tui.core.metrics.series import SeriesPoint, ServiceMetrics


class HintRule(enum.Enum):
    SPEC_NO_ACCEPT = "spec-no-accept-metrics"
    LOW_GPU_POWER = "low-gpu-power"
    STALL = "stall"
    POSSIBLE_REPETITION = "possible-repetition"
    SAMPLING_LOOP = "sampling-loop"
    ACCEPT_COLLAPSE = "accept-collapse"
    DEATH_LINE = "death-line"
    CRASH_LOOP = "crash-loop"
    AUTO_REMOVE = "auto-remove"
    ORPHANS = "orphans"


@dataclass(frozen=True)
class Hint:
    """One fired rule: what may be wrong (``message``) and the facts behind it (``evidence``).

    Invariant: ``evidence`` is never empty.
    """

    rule: HintRule
    message: str
    evidence: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"rule": self.rule.value, "message": self.message, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Thresholds:
    """The numbers the rules use; the defaults are the documented ones."""

    #: decode values a run needs before "no accept metrics" means anything
    spec_min_points: int = 2
    low_power_fraction: float = 0.6
    stall_window: float = 120.0
    stall_min_points: int = 3
    stall_queue_growth: float = 2.0
    stall_throughput_drop: float = 0.7
    repetition_accept_rate: float = 0.95
    repetition_min_points: int = 3
    #: the recent accept values a median is taken over (at least ``repetition_min_points``)
    repetition_recent_points: int = 5
    long_output_tokens: float = 4096.0
    #: an accept length within this share of the draft tokens of its most (draft + 1)
    #: accepts nearly every draft
    near_max_length: float = 0.1
    #: an accept rate at or above this, as the median of a run's earlier values, is healthy
    collapse_healthy_rate: float = 0.6
    #: earlier values a healthy median needs
    collapse_min_points: int = 5
    #: the latest values that must all have fallen below ``collapse_fraction`` of it
    collapse_recent_points: int = 3
    collapse_fraction: float = 0.5


def run_words(metrics: ServiceMetrics) -> str:
    """``run 2``, or ``this log`` when the log's runs are not told apart."""
    return "this log" if metrics.run in (None, 0) else f"run {metrics.run}"


def where_words(points: Sequence[SeriesPoint]) -> str:
    """`` (log bytes 1000 to 1400)``: where the points' lines are, or ``""`` when no
    point came from the log."""
    offsets = [p.offset for p in points if p.offset is not None]
    if not offsets:
        return ""
    if len(offsets) == 1 or offsets[0] == offsets[-1]:
        return f" (log byte {offsets[0]})"
    return f" (log bytes {offsets[0]} to {offsets[-1]})"
