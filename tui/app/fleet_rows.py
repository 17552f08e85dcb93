"""What the fleet view shows, as data: the hosts watched, what each last said, and the rows.

:func:`fleet_row` is a pure function of what a host last said, when, and the time
now: every value older than :data:`AGE_SHOWN_AFTER` carries its age, and
everything from an old answer is drawn as old. Rows sort worst verdict first
(:func:`sort_key`). A WEDGED row's note says since when and why; the line under
the table says its evidence and the run's last canary. A run that is not ready says
its phase and ETA across the serving columns when it has no figures for them yet (else
in its note, after the others), in the warning tone once the phase has run past twice
its last run's time; orphans on the service's GPUs are the row's note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tui.app.sparkline import sparkline
from tui.config import Host, Service
from tui.core.hostclock import HostWords
from tui.core.metrics.model import Metric
from tui.core.metrics.series import Latest, ServiceMetrics
from tui.core.orphan_words import orphans_note, orphans_words
from tui.core.report import ServiceReport
from tui.core.sanitize import printable
from tui.core.serving import Wedged
from tui.core.serving_words import canary_gist, cause_short
from tui.core.startup_words import startup_cell, startup_line
from tui.core.units import human_age
from tui.core.verdict_words import BADGE_WIDTH, badge, badge_parts, why
from tui.core.verdicts import Verdict
from tui.session.state import HostState

#: A value at least this old shows its age beside it.
AGE_SHOWN_AFTER = 15.0
#: Values in the throughput column's sparkline.
SPARK_WIDTH = 8


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    #: Cells; 0 for the service and note columns, which are sized when the table mounts.
    width: int


#: Left to right. Widths are fixed so that columns never jump; a value with its age
#: (`` 3m``) still fits.
COLUMNS: tuple[Column, ...] = (
    Column("service", "service", 0),
    Column("verdict", "verdict", BADGE_WIDTH),
    Column("pid", "pid", 7),
    Column("up", "up", 6),
    Column("gen", "gen tok/s", SPARK_WIDTH + 9),
    Column("accept", "accept", 8),
    Column("queue", "run/queue", 10),
    Column("kv", "KV", 8),
    Column("gpu", "GPU W", 12),
    Column("log", "last line", 9),
    Column("note", "note", 0),
)
#: The columns a run that is not ready says its phase across: those of serving figures,
#: which it has none of yet (adjacent in :data:`COLUMNS`).
STARTUP_COLUMNS = ("gen", "accept", "queue", "kv")


@dataclass(frozen=True)
class Fleet:
    """What the fleet view watches: hosts with the services to show, and its name.

    Invariant: every host has at least one service (hosts without any are left out).
    """

    targets: tuple[tuple[Host, tuple[Service, ...]], ...]
    title: str = "fleet"

    @classmethod
    def of(
        cls,
        targets: Sequence[tuple[Host, Sequence[Service]]],
        title: str = "fleet",
    ) -> Fleet:
        kept = tuple((host, tuple(services)) for host, services in targets if services)
        return cls(kept, title)


@dataclass(frozen=True)
class Cell:
    """One cell's text and its tones (component classes ``fleet-table--<tone>``), and the
    age of its value when that is not fresh (drawn after it, as old). ``span``: the
    columns it covers, its own and the next ``span - 1`` (whose cells are not drawn).
    ``mark``: drawn after the text in the ``degraded`` tone (a degraded LIVE's ``⚠ 2``)."""

    text: str
    tones: tuple[str, ...] = ()
    age: str = ""
    span: int = 1
    mark: str = ""


@dataclass(frozen=True)
class FleetRow:
    """One service instance as the table shows it. ``cells`` follow :data:`COLUMNS`."""

    key: str
    severity: int
    cells: tuple[Cell, ...]
    #: The words under the table when this row is selected.
    detail: str
    #: The row's tone for the detail line (``live``, ``bad``, …; ``""`` before any answer).
    tone: str

    @property
    def verdict(self) -> str:
        """The verdict cell's word (``LIVE``, ``…`` before any answer)."""
        return self.cells[1].text.split(" ")[-1]

    def matches(self, words: Sequence[str]) -> bool:
        """Whether every word is in the row's name or verdict (case-insensitive)."""
        text = f"{self.key} {self.verdict}".lower()
        return all(word in text for word in words)


def failure_word(reason: str) -> str:
    """``probe failed`` when the host ran the probe but it failed; else ``unreachable``."""
    return "probe failed" if reason.startswith("the probe") else "unreachable"


def short_age(seconds: float) -> str:
    """``45s``, ``3m``, ``2h``, ``3d``: an age that fits beside a value."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit}"
    return f"{seconds:.0f}s"


def natural_key(text: str) -> tuple[object, ...]:
    """``dp-2`` before ``dp-10``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def sort_key(row: FleetRow) -> tuple[object, ...]:
    """Worst verdict first, then by name."""
    return (-row.severity, natural_key(row.key))


def _number(latest: Latest) -> str:
    """The value without its unit (the header says it): ``61.2``, ``3.41``, ``81%``."""
    return latest.text.removesuffix(f" {latest.unit.value}")


NONE = Cell("—", ("muted",))
#: The row tones whose note is drawn as bad: critical verdicts and UNKNOWN.
BAD_TONES = frozenset(v.tone for v in Verdict if v.bad or v is Verdict.UNKNOWN)
#: A row note and its tone (None: the row's own).
Note = tuple[str, str | None]


def fleet_row(service: Service, state: HostState, now: float, *, interval: float) -> FleetRow:
    """The row for ``service`` from its host's state, at ``now``. Pure."""
    key = service.label
    report = state.reports.get(service.name)
    lag = now - state.answered_at if state.answered_at is not None else 0.0
    slow = state.asking_since is not None and now - state.asking_since > 2 * interval + 1
    old = state.failure is not None or slow
    cells = dict.fromkeys((column.key for column in COLUMNS), NONE)
    cells["service"] = Cell(key)
    cells["note"] = Cell("")
    notes: list[Note] = []
    details: list[str] = []
    tone = ""
    severity = -1
    if report is not None:
        a = report.assessment
        severity = a.verdict.severity
        tone = a.verdict.tone
        filled, notes, details = _report_words(report, lag, old)
        cells.update(filled)

    if state.failure is not None:
        severity = Verdict.UNKNOWN.severity
        tone = Verdict.UNKNOWN.tone
        cells["verdict"] = Cell(badge(Verdict.UNKNOWN), (tone,))
        note = _failure_note(state, now)
        seen = f"; last answer {human_age(lag)} ago" if state.answered_at is not None else ""
        notes.insert(0, (note, None))
        details.insert(0, f"UNKNOWN — {note}: {printable(state.failure)}{seen}")
    elif slow and state.asking_since is not None:
        waited = human_age(now - state.asking_since)
        notes.insert(0, (f"no answer for {waited}", None))
        details.insert(0, f"no answer for {waited}; what follows is from before")
    elif report is None:
        cells["verdict"] = Cell("…", ("muted",))
        notes.append(("asking…", None))
        details.append("asking the host…")

    if notes:
        text, own = notes[0]
        bad = state.failure is not None or tone in BAD_TONES
        cells["note"] = Cell(text, ("bad",) if bad else (own or "muted",))
    detail = f"{key} · " + "\n".join(details)
    return FleetRow(key, severity, tuple(cells[c.key] for c in COLUMNS), detail, tone)


def _report_words(
    report: ServiceReport, lag: float, old: bool
) -> tuple[dict[str, Cell], list[Note], list[str]]:
    """The cells one report fills, its notes (the first is the row's) and the lines
    under the table; ``lag`` seconds passed since it came."""
    a = report.assessment
    cells = _report_cells(report, lag, old)
    notes: list[Note] = []
    said = badge(a.verdict, report.concerns)
    details = [f"{said} — {printable(a.summary)}"]
    if a.cause is not None:  # why, first: the note and the line under the table
        cause = printable(why(a.cause))
        notes.append((cause, None))
        details = [f"{said} — {cause}", printable(a.summary)]
    words = HostWords(a.utc_offset, a.checked_at + lag)
    if a.verdict is Verdict.WEDGED and a.wedged is not None:
        notes.append((wedged_note(a.wedged, words), None))
        details.extend(f"evidence: {printable(item)}" for item in a.wedged.evidence)
    startup = report.startup
    phase_note: Note | None = None
    if startup is not None and not startup.ready and a.run is not None:
        text = startup_cell(startup, words)
        warning = "warning" if startup.overdue is not None else None
        if all(cells.get(key, NONE) == NONE for key in STARTUP_COLUMNS):
            faded = ("old",) if old else ()
            first, *rest = STARTUP_COLUMNS
            tones = (warning, *faded) if warning else faded
            cells[first] = Cell(text, tones, span=len(STARTUP_COLUMNS))
            cells.update(dict.fromkeys(rest, Cell("")))
        else:  # serving figures already (its ready line was not seen): they keep their place
            phase_note = (text, warning)
        details.append(f"startup: {startup_line(startup, words)}")
    orphans = report.gpus.orphans if report.gpus is not None else ()
    if orphans:
        notes.append((orphans_note(orphans), "warning"))
        details.append(orphans_words(orphans))
    if report.canary is not None:
        details.append(canary_gist(report.canary, words))
    for hint in report.hints:
        details.append(f"hint: {printable(hint.message)}")
        notes.append((f"hint: {printable(hint.message)}", None))
    if phase_note is not None:
        notes.append(phase_note)
    return cells, notes, details


def wedged_note(wedged: Wedged, words: HostWords) -> str:
    """``stalled since 09:21:31 (3m)``: a WEDGED row's note (its cause first, as a hint's
    note says what it is first)."""
    age = short_age(words.now - wedged.since)
    return f"{cause_short(wedged)} since {words.clock(wedged.since)} ({age})"


def _failure_note(state: HostState, now: float) -> str:
    """``unreachable — retrying in 8 s`` (or ``— asking again (3 s)`` while it asks)."""
    word = failure_word(state.failure or "")
    if state.asking_since is not None:
        return f"{word} — asking again ({human_age(now - state.asking_since)})"
    wait = max(0.0, (state.retry_at or now) - now)
    return f"{word} — retrying in {wait:.0f} s"


def _report_cells(report: ServiceReport, lag: float, old: bool) -> dict[str, Cell]:
    """The cells one report fills; ``lag`` seconds passed since it came."""
    a = report.assessment
    faded = ("old",) if old else ()

    def aged(text: str, latest: Latest, *, of_run: bool = True) -> Cell:
        """``of_run``: the value comes from the run's log lines (then it is old once the
        run is gone); GPU readings are the GPUs' own, whatever runs."""
        age = latest.age + lag
        shown = short_age(age) if age >= AGE_SHOWN_AFTER else ""
        faded = latest.stale or old or (of_run and a.run is None)
        return Cell(text, ("old",) if faded else (), shown)

    main, mark = badge_parts(a.verdict, report.concerns)
    cells = {"verdict": Cell(main, (a.verdict.tone, *faded), mark=mark)}
    if a.run is not None:
        cells["pid"] = Cell(str(a.run.root.pid), faded)
        cells["up"] = Cell(human_age(a.checked_at - a.run.root.start_time + lag), faded)
    elif a.others:
        cells["pid"] = Cell(f"{len(a.others)} runs", faded)
    if a.log is not None and not a.log.exists:
        cells["log"] = Cell("no log", ("bad", *faded))
    elif a.log is not None and (a.log.last_ts or a.log.mtime) is not None:
        written = a.log.last_ts or a.log.mtime or 0.0
        cells["log"] = Cell(human_age(a.checked_at - written + lag), faded)
    metrics = report.metrics
    if metrics is None:
        return cells
    gen = metrics.latest_of(Metric.GEN_THROUGHPUT)
    if gen is not None:
        points = [p.value for p in metrics.series_of(Metric.GEN_THROUGHPUT)]
        cells["gen"] = aged(f"{sparkline(points, SPARK_WIDTH)} {_number(gen)}", gen)
    for column, metric in (("accept", Metric.ACCEPT_LEN), ("kv", Metric.TOKEN_USAGE)):
        latest = metrics.latest_of(metric)
        if latest is not None:
            cells[column] = aged(_number(latest), latest)
    running = metrics.latest_of(Metric.RUNNING)
    queued = metrics.latest_of(Metric.QUEUED)
    first = running or queued
    if first is not None:
        text = "/".join(_number(m) if m else "—" for m in (running, queued))
        cells["queue"] = aged(text, first)
    power = _gpu_power(metrics)
    if power is not None:
        text, latest = power
        cells["gpu"] = aged(text, latest, of_run=False)
    return cells


def _gpu_power(metrics: ServiceMetrics) -> tuple[str, Latest] | None:
    """``612/1000`` summed over the service's GPUs, and the oldest power reading; None
    without GPU readings."""
    labels = sorted({k.label for k in metrics.latest if k.metric is Metric.GPU_POWER})
    powers = [p for p in (metrics.latest_of(Metric.GPU_POWER, label) for label in labels) if p]
    if not powers:
        return None
    limits = [
        m for m in (metrics.latest_of(Metric.GPU_POWER_LIMIT, label) for label in labels) if m
    ]
    text = f"{sum(p.value for p in powers):.0f}"
    if limits:
        text += f"/{sum(m.value for m in limits):.0f}"
    oldest = max(powers, key=lambda p: p.age)
    return text, oldest
