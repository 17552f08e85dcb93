"""The "which run is this?" banner: the verdict, the run, the log inode, readiness, and age.

It shows an :class:`~tui.core.runs.Assessment` and nothing else: every fact on
it comes from one probe, and the banner says how old that probe is. When the
probe is older than :data:`STALE_AFTER` seconds the whole banner is marked
stale (``-old``), so an old verdict is never shown as a live one. A WEDGED run's
banner says since when right after the verdict (its summary begins with why), and
its evidence under the summary, each line cut to the banner's width.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from rich.cells import cell_len, set_cell_size
from textual.content import Content
from textual.widgets import Static

from tui.core.hostclock import HostWords
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.serving_words import since_words
from tui.core.units import human_age
from tui.core.verdicts import TONES, Verdict

#: Seconds after which a verdict is drawn as stale (three missed refreshes).
STALE_AFTER = 6.0
#: Lines a WEDGED run's evidence takes at most; with more, the last says how many more
#: ``babysit status`` shows.
EVIDENCE_LINES = 3


def banner_lines(
    a: Assessment, now: float, shown_inode: int | None = None, width: int | None = None
) -> list[str]:
    """The banner's text: a facts line, the plain summary, a WEDGED run's evidence (each
    cut to ``width`` cells when given), and a note when the log pane shows another file
    than the run writes."""
    zone = timezone(timedelta(seconds=a.utc_offset))

    def clock(ts: float) -> str:
        return datetime.fromtimestamp(ts, zone).strftime("%H:%M:%S")

    facts = [f"● {a.verdict.word}"]
    wedged = a.wedged if a.verdict is Verdict.WEDGED else None
    if wedged is not None:  # since when, before anything that could push it away
        facts.append(since_words(wedged, HostWords(a.utc_offset, max(now, a.checked_at))))
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
        if a.ready.seen and a.ready.at:
            facts.append(f"ready {clock(a.ready.at)}")
        elif a.ready.seen:
            facts.append("ready")
        elif a.ready.seen is False:
            facts.append("not ready yet")
        else:
            facts.append("ready: unknown")
    age = now - a.checked_at
    facts.append(f"checked {human_age(age)} ago" if age >= 1.5 else "checked now")
    lines = ["  ".join(facts[:1]) + "  " + " · ".join(facts[1:]), a.summary]
    if wedged is not None:
        lines += _evidence_lines(wedged.evidence, f"{a.host}/{a.service}", width)
    writer = a.writer_file
    if writer is not None and shown_inode is not None and shown_inode != writer.inode:
        pid = a.writer_pid
        deleted = " (deleted)" if writer.deleted else ""
        lines.append(
            f"the log pane shows inode {shown_inode}, but pid {pid} writes inode "
            f"{writer.inode}{deleted}: press w to follow the writer"
        )
    return [printable(line) for line in lines]


def _evidence_lines(evidence: tuple[str, ...], target: str, width: int | None) -> list[str]:
    """``· 2 requests running (…)``: at most :data:`EVIDENCE_LINES` lines, each cut to
    ``width``."""
    shown = [f"· {printable(item)}" for item in evidence]
    if len(shown) > EVIDENCE_LINES:
        more = len(shown) - EVIDENCE_LINES + 1
        shown[EVIDENCE_LINES - 1 :] = [f"· and {more} more: babysit status {target}"]
    if width is None or width < 2:
        return shown
    return [cut(line, width) for line in shown]


def cut(line: str, width: int) -> str:
    """``line`` in at most ``width`` cells, its end replaced by ``…`` when it is longer."""
    return line if cell_len(line) <= width else set_cell_size(line, width - 1) + "…"


class RunBanner(Static):
    """Two or three lines at the top of the host screen; colour by verdict class."""

    def __init__(self, clock: Callable[[], float] = time.time, *, id: str | None = None) -> None:
        super().__init__(Content("● checking which run this is …"), id=id)
        self._clock = clock
        self.assessment: Assessment | None = None
        self.shown_inode: int | None = None
        self._text = ""

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh_age)

    def show(self, assessment: Assessment, shown_inode: int | None) -> None:
        self.assessment = assessment
        self.shown_inode = shown_inode
        for tone in TONES:
            self.set_class(tone == assessment.verdict.tone, f"-{tone}")
        self.set_class(assessment.verdict is Verdict.WEDGED, "-wedged")
        self.refresh_age()

    def on_resize(self) -> None:
        self.refresh_age()  # the evidence lines are cut to the width

    def refresh_age(self) -> None:
        if self.assessment is None:
            return
        now = self._clock()
        self.set_class(now - self.assessment.checked_at > STALE_AFTER, "-old")
        width = self.content_size.width or None
        text = "\n".join(banner_lines(self.assessment, now, self.shown_inode, width))
        if text != self._text:  # ages change once a second at most; skip a needless repaint
            self._text = text
            self.update(Content(text))
