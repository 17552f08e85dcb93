"""The metrics pane: one row per series — a sparkline, the current value, and its age.

The pane draws a :class:`~tui.core.metrics.series.ServiceMetrics` snapshot and nothing
else; a value older than the snapshot's ``stale_after`` is drawn dimmed with its
age, never as current. :class:`HintsLine` says what the numbers suggest, and
:class:`CanaryLine` what this run's last canary found.

Folded (a short terminal, or the ``m`` key), the pane is one line
(:func:`summary_line`: ``270 tok/s · 2 req · GPU 313/700 W``) and the hints one line each.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from tui.app.sparkline import sparkline
from tui.core.canary import CanaryResult
from tui.core.hints import Hint
from tui.core.hostclock import HostWords
from tui.core.metrics.model import Metric, Unit
from tui.core.metrics.series import Latest, SeriesPoint, ServiceMetrics
from tui.core.sanitize import printable
from tui.core.serving_words import canary_gist
from tui.core.units import human_age

SPARK_WIDTH = 16
LABEL_WIDTH = 13

#: The rows, in order: (title, metric, second metric shown after a slash).
ROWS: tuple[tuple[str, Metric, Metric | None], ...] = (
    ("gen tok/s", Metric.GEN_THROUGHPUT, None),
    ("accept len", Metric.ACCEPT_LEN, None),
    ("accept rate", Metric.ACCEPT_RATE, None),
    ("running/queue", Metric.RUNNING, Metric.QUEUED),
    ("KV usage", Metric.TOKEN_USAGE, None),
    ("prefill tok/s", Metric.PREFILL_THROUGHPUT, None),
)


def _value(latest: Latest | None) -> str:
    return latest.text if latest is not None else "—"


def _age(latest: Latest | None) -> str:
    if latest is None:
        return ""
    if latest.stale:
        return f"stale, {human_age(latest.age)} old"
    return f"{human_age(latest.age)} ago" if latest.age >= 1.5 else "now"


def pane_rows(
    metrics: ServiceMetrics | None, spark_width: int = SPARK_WIDTH
) -> list[tuple[str, str, str, str, bool]]:
    """(title, sparkline, value, age, stale) for each row, GPUs last. Pure, for tests."""
    rows: list[tuple[str, str, str, str, bool]] = []
    if metrics is None:
        return rows
    for title, metric, second in ROWS:
        latest = metrics.latest_of(metric)
        if latest is None and (second is None or metrics.latest_of(second) is None):
            continue
        points: tuple[SeriesPoint, ...] = metrics.series_of(metric)
        value = _value(latest)
        if second is not None:
            value = f"{_value(latest)} / {_value(metrics.latest_of(second))}"
        rows.append(
            (
                title,
                sparkline([p.value for p in points], spark_width),
                value,
                _age(latest),
                bool(latest and latest.stale),
            )
        )
    for label in sorted({k.label for k in metrics.latest if k.metric is Metric.GPU_POWER}):
        power = metrics.latest_of(Metric.GPU_POWER, label)
        limit = metrics.latest_of(Metric.GPU_POWER_LIMIT, label)
        util = metrics.latest_of(Metric.GPU_UTIL, label)
        value = f"{_value(power)} / {_value(limit)}"
        if util is not None:
            value += f"  util {util.text}"
        rows.append(
            (
                f"{label} power",
                sparkline(
                    [p.value for p in metrics.series_of(Metric.GPU_POWER, label)], spark_width
                ),
                value,
                _age(power),
                bool(power and power.stale),
            )
        )
    return rows


def summary_line(metrics: ServiceMetrics | None, note: str | None = None) -> str:
    """The pane in one line: generation rate, requests running, GPU power against its
    limit (summed over the run's GPUs), each marked when stale. Pure, for tests."""
    if metrics is None:
        return f"metrics: {note or 'waiting for the first probe …'}"
    parts = []
    for metric in (Metric.GEN_THROUGHPUT, Metric.RUNNING):
        latest = metrics.latest_of(metric)
        if latest is not None:
            parts.append(latest.text + (" (stale)" if latest.stale else ""))
    labels = sorted({k.label for k in metrics.latest if k.metric is Metric.GPU_POWER})
    powers = [metrics.latest_of(Metric.GPU_POWER, label) for label in labels]
    limits = [metrics.latest_of(Metric.GPU_POWER_LIMIT, label) for label in labels]
    if labels and all(p is not None for p in powers):
        watts = Unit.WATTS.format(sum(p.value for p in powers if p is not None))
        if all(limit is not None for limit in limits):
            total = Unit.WATTS.format(sum(x.value for x in limits if x is not None))
            watts = f"{watts.removesuffix(' W')}/{total}"
        gpus = "GPU" if len(labels) == 1 else f"{len(labels)} GPUs"
        stale = any(p is not None and p.stale for p in powers)
        parts.append(f"{gpus} {watts}" + (" (stale)" if stale else ""))
    if not parts:
        return f"metrics: {note or 'no metric lines from this run yet'}"
    return "metrics: " + " · ".join(parts)


class HintsLine(Static):
    """Each hint that fires, in plain words, with its evidence; hidden when none does.
    Folded (with the metrics pane), one line each; on a short terminal, without the
    evidence (``babysit status`` and a taller terminal show it)."""

    _shown: tuple[Hint, ...] | None = None
    #: One line per hint, cut at the end (the metrics pane's ``m`` opens them whole).
    folded: reactive[bool] = reactive(False, init=False)
    #: Each hint's evidence after its words (off on a short terminal: the words only).
    evidence: reactive[bool] = reactive(True, init=False)

    def watch_folded(self, folded: bool) -> None:
        self.set_class(folded, "-folded")
        self._draw()

    def watch_evidence(self) -> None:
        self._draw()

    def show(self, hints: Sequence[Hint]) -> None:
        if tuple(hints) == self._shown:
            return
        self._shown = tuple(hints)
        self._draw()

    def _draw(self) -> None:
        hints = self._shown or ()
        self.display = bool(hints)
        text = Text(no_wrap=self.folded, overflow="ellipsis")
        for index, hint in enumerate(hints):
            if index:
                text.append("\n")
            text.append("hint: ", style="bold")
            text.append(printable(hint.message))
            if self.evidence and not self.folded:
                text.append(f" ({printable('; '.join(hint.evidence))})", style="dim")
        self.update(text)


class CanaryLine(Static):
    """This run's last canary in one line, with its age (``canary 12:03:10 (2 min ago): ok,
    TTFT 0.21 s, 61.8 tok/s``); hidden before any. ``-bad`` when it did not come back ok."""

    _shown = ""

    def show(self, canary: CanaryResult | None, utc_offset: int, now: float) -> None:
        """``now``: the host's epoch seconds (the canary's age is told against it)."""
        text = "" if canary is None else canary_gist(canary, HostWords(utc_offset, now))
        self.display = canary is not None
        self.set_class(canary is not None and not canary.ok, "-bad")
        if text != self._shown:
            self._shown = text
            self.update(Text(text))


class MetricsPane(Static):
    """Sparklines of this run's metrics. Updated in one go per refresh."""

    DEFAULT_CLASSES = "pane"

    #: One summary line instead of the sparklines (toggled by the host screen's ``m``).
    folded: reactive[bool] = reactive(False, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("waiting for the first probe …", style="dim"), id=id)
        self._shown: tuple[ServiceMetrics | None, str | None] | None = None
        self._lines = -1

    def watch_folded(self, folded: bool) -> None:
        self.set_class(folded, "-folded")
        self._lines = -1
        if self._shown is not None:
            self.show(*self._shown)
        elif folded:
            self.update(Text.assemble((summary_line(None), "dim"), self._key()))
        else:
            self.update(Text("waiting for the first probe …", style="dim"))

    @staticmethod
    def _key() -> Text:
        return Text("  m opens", style="dim")

    def summary(self) -> str:
        """The folded line's words (without the key)."""
        return summary_line(*self._shown) if self._shown is not None else summary_line(None)

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)
        self.border_title = "Metrics (this run)"

    def show(self, metrics: ServiceMetrics | None, note: str | None = None) -> None:
        self._shown = (metrics, note)
        if self.folded:
            self.update(Text.assemble(summary_line(metrics, note), self._key()))
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        # Room for the label, the value and its age; the sparkline takes what is left.
        room = (self.content_size.width or 60) - LABEL_WIDTH - 1 - 30
        rows = pane_rows(metrics, max(4, min(SPARK_WIDTH, room)))
        if not rows:
            text.append(note or "no metric lines from this run yet", style="dim")
        for index, (title, spark, value, age, stale) in enumerate(rows):
            if index:
                text.append("\n")
            style = "dim" if stale else ""
            text.append(f"{title:<{LABEL_WIDTH}} ", style="bold" if not stale else "dim")
            text.append(spark, style=style)
            text.append(f"  {value}", style=style or "bold")
            if age:
                text.append(f"  {age}", style="dim italic" if stale else "dim")
        if note and rows:
            text.append(f"\n{printable(note)}", style="dim")
        # A layout pass only when the pane needs another number of lines.
        lines = text.plain.count("\n")
        self.update(text, layout=lines != self._lines)
        self._lines = lines
