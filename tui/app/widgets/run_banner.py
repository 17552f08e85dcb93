"""The "which run is this?" banner: the verdict, the run, the log inode, readiness, and age.

It shows an :class:`~tui.core.runs.Assessment` and nothing else: every fact on
it comes from one probe, and the banner says how old that probe is. When the
probe is older than :data:`STALE_AFTER` seconds the whole banner is marked
stale (``-old``), so an old verdict is never shown as a live one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from textual.content import Content
from textual.widgets import Static

from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.units import human_age
from tui.core.verdicts import TONES, Verdict

#: Seconds after which a verdict is drawn as stale (three missed refreshes).
STALE_AFTER = 6.0


def banner_lines(a: Assessment, now: float, shown_inode: int | None = None) -> list[str]:
    """The banner's text: a facts line, the plain summary, and a note when the log
    pane shows another file than the run writes."""
    zone = timezone(timedelta(seconds=a.utc_offset))

    def clock(ts: float) -> str:
        return datetime.fromtimestamp(ts, zone).strftime("%H:%M:%S")

    facts = [f"● {a.verdict.word}"]
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
    writer = a.writer_file
    if writer is not None and shown_inode is not None and shown_inode != writer.inode:
        pid = a.writer_pid
        deleted = " (deleted)" if writer.deleted else ""
        lines.append(
            f"the log pane shows inode {shown_inode}, but pid {pid} writes inode "
            f"{writer.inode}{deleted}: press w to follow the writer"
        )
    return [printable(line) for line in lines]


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
        self.refresh_age()

    def refresh_age(self) -> None:
        if self.assessment is None:
            return
        now = self._clock()
        self.set_class(now - self.assessment.checked_at > STALE_AFTER, "-old")
        text = "\n".join(banner_lines(self.assessment, now, self.shown_inode))
        if text != self._text:  # ages change once a second at most; skip a needless repaint
            self._text = text
            self.update(Content(text))
