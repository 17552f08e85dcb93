"""The "which run is this?" banner: the verdict, the run, the log inode, readiness, and age.

It shows an :class:`~tui.core.runs.Assessment` and nothing else: every fact on
it comes from one probe, and the banner says how old that probe is. When the
probe is older than :data:`STALE_AFTER` seconds the whole banner is marked
stale (``-old``), so an old verdict is never shown as a live one. A WEDGED run's
banner says since when right after the verdict (its summary begins with why), and
its evidence under the summary, each line cut to the banner's width. A run that is not
ready yet says where it is in its startup under the summary (in the warning style once
a phase has run past twice its last run's time); a ready one says how long its startup
took. Orphans on the service's GPUs are said in the warning style, with the key that
kills them when the screen offers it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.style import Style
from textual.widgets import Static

from tui.core.gpu import Orphan
from tui.core.hostclock import HostWords
from tui.core.orphan_words import orphans_words
from tui.core.phases import Startup
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.service_report import ServiceReport
from tui.core.serving_words import since_words
from tui.core.startup_words import ready_in, startup_line
from tui.core.units import duration_words, human_age
from tui.core.verdict_words import badge, badge_parts, degraded, why
from tui.core.verdicts import DEGRADED_TONE, TONES, Verdict
from tui.invocation import command

#: Seconds after which a verdict is drawn as stale (three missed refreshes).
STALE_AFTER = 6.0
#: Lines a WEDGED run's evidence takes at most; with more, the last says how many more
#: ``babysit status`` shows.
EVIDENCE_LINES = 3
#: Cells the drawn badge adds to the first line (a block with a space inside each end).
BADGE_PAD = 1
#: Cells a cause needs beside the other facts on the first row; with fewer, it takes the
#: row and the facts wrap under it.
CAUSE_CELLS = 40
#: The verdicts whose banner names the kill key beside the orphans (no run to kill, or
#: one that has not served yet).
KILL_ORPHANS_VERDICTS = (Verdict.DEAD, Verdict.STARTING)


def banner_lines(
    a: Assessment,
    now: float,
    shown_inode: int | None = None,
    width: int | None = None,
    *,
    startup: Startup | None = None,
    orphans: Sequence[Orphan] = (),
    offers_kill: bool = False,
    hints: int = 0,
) -> list[str]:
    """The banner's text (see :func:`banner_rows`)."""
    rows = banner_rows(
        a,
        now,
        shown_inode,
        width,
        startup=startup,
        orphans=orphans,
        offers_kill=offers_kill,
        hints=hints,
    )
    return [text for text, _ in rows]


def banner_rows(
    a: Assessment,
    now: float,
    shown_inode: int | None = None,
    width: int | None = None,
    *,
    startup: Startup | None = None,
    orphans: Sequence[Orphan] = (),
    offers_kill: bool = False,
    hints: int = 0,
) -> list[tuple[str, bool]]:
    """Each line of the banner and whether it is said in the warning style: a facts line
    (the verdict's badge, ``● LIVE ⚠ 2`` for a LIVE run with ``hints``; then why a DEAD,
    STALE or failed STARTING run is so, cut to leave the other facts room on the line),
    the plain summary, where a run that is not ready is in its startup, a WEDGED run's
    evidence (each cut to ``width`` cells when given), the orphans on the service's GPUs
    (naming the kill key when ``offers_kill``), and a note when the log pane shows another
    file than the run writes."""
    zone = timezone(timedelta(seconds=a.utc_offset))

    def clock(ts: float) -> str:
        return datetime.fromtimestamp(ts, zone).strftime("%H:%M:%S")

    facts = [badge(a.verdict, hints)]
    wedged = a.wedged if a.verdict is Verdict.WEDGED else None
    if wedged is not None:  # since when, before anything that could push it away
        facts.append(since_words(wedged, HostWords(a.utc_offset, max(now, a.checked_at))))
    cause_at = len(facts) if a.cause is not None else None
    container = a.container
    if container is not None and container.found:  # a container's run: its id comes first
        facts.append(f"container {container.label} {container.short_id}")
    if a.run is not None:
        root = a.run.root
        children = len(a.run.pids) - 1
        facts.append(f"pid {root.pid}" + (f" +{children}" if children else ""))
        facts.append(
            f"started {clock(root.start_time)} ({human_age(a.checked_at - root.start_time)})"
        )
    if a.log is not None and (container is None or a.log.exists):
        facts.append(f"log inode {a.log.inode}" if a.log.exists else "no log file")
    if a.ready is not None and a.verdict in (Verdict.LIVE, Verdict.STARTING):
        took = ready_in(startup) if startup is not None else None
        if a.ready.seen and a.ready.at:
            facts.append(
                f"ready {clock(a.ready.at)}"
                + (f" (in {duration_words(took)})" if took is not None else "")
            )
        elif a.ready.seen:
            facts.append("ready")
        elif a.ready.seen is False:
            facts.append("not ready yet")
        else:
            facts.append("ready: unknown")
    age = now - a.checked_at
    facts.append(f"checked {human_age(age)} ago" if age >= 1.5 else "checked now")
    rows = [(_facts_line(facts, a, cause_at, width), False), (a.summary, False)]
    if startup is not None and not startup.ready and a.run is not None:
        words = HostWords(a.utc_offset, max(now, a.checked_at))
        rows.append((startup_line(startup, words), startup.overdue is not None))
    if wedged is not None:
        evidence = _evidence_lines(wedged.evidence, f"{a.host}/{a.service}", width)
        rows += [(line, False) for line in evidence]
    if orphans:
        key = " — K to kill" if offers_kill and a.verdict in KILL_ORPHANS_VERDICTS else ""
        rows.append((orphans_words(orphans) + key, True))
    writer = a.writer_file
    if writer is not None and shown_inode is not None and shown_inode != writer.inode:
        pid = a.writer_pid
        deleted = " (deleted)" if writer.deleted else ""
        rows.append(
            (
                f"the log pane shows inode {shown_inode}, but pid {pid} writes inode "
                f"{writer.inode}{deleted}: press w to follow the writer",
                False,
            )
        )
    return [(printable(line), warn) for line, warn in rows]


def _facts_line(facts: list[str], a: Assessment, cause_at: int | None, width: int | None) -> str:
    """``✖ DEAD  out of memory: RuntimeError: … · log inode 4 · checked now``: the badge,
    then the facts; the cause (when there is one) at ``cause_at``, cut so that the line
    fits ``width`` with the facts after it, or, when that leaves it fewer than
    :data:`CAUSE_CELLS`, so that it fills the first row (the facts wrap under it)."""
    if cause_at is not None and a.cause is not None:
        said = printable(why(a.cause))
        if width is not None:
            rest = cell_len("  ".join(facts[:1]) + "  " + " · ".join(facts[1:]) + " · ")
            if width - rest < CAUSE_CELLS:  # the facts wrap anyway: the cause has the row
                rest = cell_len(facts[0]) + 2
            said = cut(said, width - rest)
        facts = [*facts[:cause_at], said, *facts[cause_at:]]
    return "  ".join(facts[:1]) + "  " + " · ".join(facts[1:])


def _evidence_lines(evidence: tuple[str, ...], target: str, width: int | None) -> list[str]:
    """``· 2 requests running (…)``: at most :data:`EVIDENCE_LINES` lines, each cut to
    ``width``."""
    shown = [f"· {printable(item)}" for item in evidence]
    if len(shown) > EVIDENCE_LINES:
        more = len(shown) - EVIDENCE_LINES + 1
        shown[EVIDENCE_LINES - 1 :] = [f"· and {more} more: {command('status', target)}"]
    if width is None or width < 2:
        return shown
    return [cut(line, width) for line in shown]


def cut(line: str, width: int) -> str:
    """``line`` in at most ``width`` cells, its end replaced by ``…`` when it is longer."""
    return line if cell_len(line) <= width else set_cell_size(line, width - 1) + "…"


class RunBanner(Static):
    """Two or three lines at the top of the host screen, tinted by verdict class
    (``-live``, ``-dead``, …, and ``-degraded`` for a LIVE run with hints).

    The first line begins with the verdict's badge in the ``run-banner--badge``
    component style (the verdict's colour, reversed), a degraded LIVE's ``⚠ 2`` in
    ``run-banner--degraded``; the warning lines (an overdue phase, orphans) take the
    ``run-banner--warning`` style."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "run-banner--badge",
        "run-banner--degraded",
        "run-banner--warning",
    }

    def __init__(self, clock: Callable[[], float] = time.time, *, id: str | None = None) -> None:
        super().__init__(Content("checking which run this is …"), id=id)
        self._clock = clock
        self.assessment: Assessment | None = None
        self.shown_inode: int | None = None
        self.startup: Startup | None = None
        self.orphans: tuple[Orphan, ...] = ()
        self.offers_kill = False
        #: The report's hints: a LIVE run with any reads as degraded.
        self.hints = 0
        self._rows: list[tuple[str, bool]] = []

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh_age)

    def show_report(self, report: ServiceReport, *, offers_kill: bool) -> None:
        """Keep the report's startup, orphans and hints for the banner (``offers_kill``:
        the screen's kill key may be offered); :meth:`show` draws the verdict."""
        self.startup = report.startup
        self.orphans = report.gpus.orphans if report.gpus is not None else ()
        self.offers_kill = offers_kill
        self.hints = report.concerns
        self.refresh_age()

    def show(self, assessment: Assessment, shown_inode: int | None) -> None:
        self.assessment = assessment
        self.shown_inode = shown_inode
        self.refresh_age()

    def on_resize(self) -> None:
        self.refresh_age()  # the evidence lines are cut to the width

    def notify_style_update(self) -> None:
        """The styles changed: the next refresh draws the badge and warning lines in them."""
        super().notify_style_update()
        self._rows = []

    def refresh_age(self) -> None:
        if self.assessment is None:
            return
        now = self._clock()
        verdict = self.assessment.verdict
        for tone in TONES:
            self.set_class(tone == verdict.tone, f"-{tone}")
        self.set_class(degraded(verdict, self.hints), f"-{DEGRADED_TONE}")
        self.set_class(now - self.assessment.checked_at > STALE_AFTER, "-old")
        width = max(self.content_size.width - BADGE_PAD, 0) or None
        rows = banner_rows(
            self.assessment,
            now,
            self.shown_inode,
            width,
            startup=self.startup,
            orphans=self.orphans,
            offers_kill=self.offers_kill,
            hints=self.hints,
        )
        if rows != self._rows:  # ages change once a second at most; skip a needless repaint
            # as many rows (each cut to the width): the same height, so no new layout
            relayout = len(rows) != len(self._rows)
            self._rows = rows
            self.update(self._content(rows), layout=relayout)

    def _style(self, name: str) -> Style:
        return Style.from_rich_style(self.get_component_rich_style(name, partial=True))

    def _content(self, rows: Sequence[tuple[str, bool]]) -> Content:
        warning = self._style("run-banner--warning")
        lines = [Content(text).stylize(warning) if warn else Content(text) for text, warn in rows]
        if lines and self.assessment is not None:
            main, mark = badge_parts(self.assessment.verdict, self.hints)
            # the badge drawn as a block: a space inside each end, one of the two after it
            # taken back (so the line is one cell longer: see :data:`BADGE_PAD`)
            first = Content(f" {main} ").stylize(self._style("run-banner--badge"))
            if mark:
                first += Content(f"{mark} ").stylize(self._style("run-banner--degraded"))
            lines[0] = first + lines[0][len(badge(self.assessment.verdict, self.hints)) + 1 :]
        return Content("\n").join(lines)
