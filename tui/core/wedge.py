"""Whether a ready, living run still serves: :class:`ServingWatch`, the one place WEDGED is decided.

A service's :class:`~tui.core.report.ServiceFacts` keeps one. It is fed what the facts
read — every metric sample of this run (log lines and ``/metrics`` scrapes), every
line (for the fatal ones), the canary's comings and goings — and, given a LIVE
assessment and the time, says whether the run is WEDGED (:meth:`ServingWatch.wedged`).
The rules and the JSON are in :mod:`tui.core.serving`.

Pending work, each with since when it is pending:

* this run's latest log counts (running + queued requests of each rank's latest
  line), since that line. An engine whose log does not print its counts again when
  the work ends (``counts_when_idle`` False: SGLang's last decode line keeps
  ``#running-req: 1`` after its last request is done) is believed only while a client
  connection to the server stays quiet for :data:`CLIENT_QUIET` seconds or more
  (a request or a stream awaiting its answer; an idle keep-alive connection is closed
  by uvicorn after 5 s);
* this probe's ``/metrics`` gauges, since the first scrape of the streak that said so;
* a client that sent a request the server answered nothing to for :data:`CLIENT_QUIET`
  seconds or more, since its request;
* a canary in flight, since it was sent.

Progress: a sample of this run with generation or prefill throughput above 0 (a log
line, or a ``/metrics`` counter that grew between two scrapes). An engine whose log
prints no progress (``prints_progress`` False) and no ``/metrics`` counters has no
progress to watch: it is never called WEDGED for a stall.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tui.core.canary import CanaryResult
from tui.core.cause import FailureWatch
from tui.core.hints import DeathLine
from tui.core.hostclock import HostWords
from tui.core.metrics.model import Metric, MetricSample
from tui.core.runs import Assessment
from tui.core.sanitize import printable
from tui.core.serving import Client, Clients, Progress, WedgeCause, Wedged
from tui.core.units import human_age
from tui.core.verdicts import Verdict
from tui.engines import spec

#: Seconds a client connection must be quiet (the server sent nothing on it) to count as
#: a request or stream awaiting its answer: twice uvicorn's keep-alive (5 s), after which
#: an idle connection is closed.
CLIENT_QUIET = 10.0
#: Characters of a fatal line kept in the evidence.
LINE_CHARS = 200
#: The metrics whose rise above 0 in a sample is progress.
PROGRESS = (Metric.GEN_THROUGHPUT, Metric.PREFILL_THROUGHPUT)
#: Scrape samples carry this source for their counts (one page, every rank summed).
_PAGE = "/metrics"


@dataclass(frozen=True)
class _Counts:
    """A rank's latest counts: how many, its line's time and offset, and since when its
    lines have said work is pending (the first of the streak)."""

    pending: float
    at: float
    offset: int | None
    since: float


@dataclass(frozen=True)
class FatalLine:
    """This run's first fatal line: its text, offset and time (None: the line has no stamp)."""

    text: str
    offset: int | None
    at: float | None


class ServingWatch:
    """What one service's run has shown of serving, and the WEDGED decision over it."""

    def __init__(self, engine: str, wedged_after: float) -> None:
        engine_spec = spec(engine)
        self.wedged_after = wedged_after
        self._deaths = engine_spec.deaths
        self._needles = tuple(dict.fromkeys((*engine_spec.deaths, *engine_spec.hangs)))
        self._prints_progress = engine_spec.prints_progress
        self._counts_when_idle = engine_spec.counts_when_idle
        self.new_run()

    def new_run(self) -> None:
        """A run began: nothing of the earlier one holds."""
        self._progress: Progress | None = None
        #: the latest log counts of each rank (its sample's ``source``)
        self._log_counts: dict[str, _Counts] = {}
        self._page_pending_since: float | None = None
        self._page_pending = 0.0
        self._scraped_progress = False
        self._fatal: FatalLine | None = None
        #: this run's failure lines: why it is DEAD or failed while STARTING
        self.failures = FailureWatch(self._deaths)
        #: the probe whose clients were last read, and since when a client has waited
        self._clients_at: float | None = None
        self._waiting_since: float | None = None

    # ------------------------------------------------------------------ feeding

    def line(self, text: str, offset: int | None) -> bool:
        """One log line of this run; True when it is the run's first fatal line (then
        :meth:`date_fatal` may say when it was written). Every line goes to the run's
        :attr:`failures` too (why it is dead, its first death line)."""
        self.failures.line(text, offset)
        if self._fatal is not None:
            return False
        if not any(needle in text for needle in self._needles):
            return False
        self._fatal = FatalLine(text, offset, None)
        return True

    def date_fatal(self, at: float | None) -> None:
        """When the fatal line just kept was written (host epoch seconds), if known."""
        if self._fatal is not None and at is not None:
            self._fatal = FatalLine(self._fatal.text, self._fatal.offset, at)

    def death_line(self, *, running: bool) -> DeathLine | None:
        """The run's first death line (from its :attr:`failures`), if any; ``running``: a
        process of the run still writes the log."""
        death = self.failures.first_death
        return DeathLine(*death, running=running) if death is not None else None

    def sample(self, sample: MetricSample, utc_offset: int) -> None:
        """A metric sample of this run (a log line's or a scrape's)."""
        at = _epoch(sample.ts, utc_offset)
        values = sample.values
        scraped = sample.offset is None
        moved = any(values.get(metric, 0.0) > 0 for metric in PROGRESS)
        if moved and (self._progress is None or at >= self._progress.at):
            self._progress = Progress(at, sample.offset)
        if scraped and any(metric in values for metric in PROGRESS):
            self._scraped_progress = True
        if Metric.RUNNING not in values and Metric.QUEUED not in values:
            return
        pending = values.get(Metric.RUNNING, 0.0) + values.get(Metric.QUEUED, 0.0)
        if scraped:
            if pending <= 0:
                self._page_pending_since = None
            elif self._page_pending_since is None:
                self._page_pending_since = at
            self._page_pending = pending
            return
        before = self._log_counts.get(sample.source)
        since = before.since if before is not None and before.pending > 0 else at
        self._log_counts[sample.source] = _Counts(pending, at, sample.offset, since)

    @property
    def fatal(self) -> FatalLine | None:
        return self._fatal

    @property
    def progress(self) -> Progress | None:
        """This run's last progress, or None before any."""
        return self._progress

    # ------------------------------------------------------------------ deciding

    def wedged(
        self,
        assessment: Assessment,
        now: float,
        *,
        canary_in_flight: float | None = None,
        canary: CanaryResult | None = None,
    ) -> Wedged | None:
        """Why the LIVE run of ``assessment`` does not serve at ``now``, or None when it
        does (or is not LIVE: only a ready, living run that writes its log can be WEDGED)."""
        if assessment.verdict is not Verdict.LIVE or assessment.run is None:
            return None
        words = HostWords(assessment.utc_offset, now)
        ready = assessment.ready
        ready_at = ready.at if ready is not None and ready.at is not None else None
        return (
            self._fatal_wedge(assessment, words)
            or self._canary_wedge(assessment, canary, words)
            or self._stall(assessment, now, ready_at, canary_in_flight, words)
        )

    def _fatal_wedge(self, assessment: Assessment, words: HostWords) -> Wedged | None:
        fatal = self._fatal
        if fatal is None or not assessment.writes_log:
            return None
        ready = assessment.ready
        if (
            ready is not None
            and ready.offset is not None
            and fatal.offset is not None
            and fatal.offset < ready.offset
        ):
            return None  # printed while it started, and it became ready after
        text = printable(fatal.text)
        text = text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1] + "…"
        where = f"log byte {fatal.offset}" if fatal.offset is not None else "the log's tail"
        when = f" at {words.clock(fatal.at)}" if fatal.at is not None else ""
        since = fatal.at if fatal.at is not None else assessment.checked_at
        run = assessment.run
        pid = run.root.pid if run is not None else None
        return Wedged(
            since=since,
            cause=WedgeCause.FATAL,
            evidence=(
                f"this run printed a fatal line{when} ({where}): {text}",
                f"its process (pid {pid}) is still alive and holds the log",
            ),
        )

    def _canary_wedge(
        self, assessment: Assessment, canary: CanaryResult | None, words: HostWords
    ) -> Wedged | None:
        run = assessment.run
        if canary is None or not canary.timed_out or canary.sent_at is None or run is None:
            return None
        if (canary.run_pid, canary.run_start_ticks) != (run.root.pid, run.root.start_ticks):
            return None  # another run's canary
        if self._progress is not None and self._progress.at > canary.sent_at:
            return None  # the engine moved since: busy, not wedged
        waited = f" after {canary.elapsed_s:.0f} s" if canary.elapsed_s is not None else ""
        return Wedged(
            since=canary.sent_at,
            cause=WedgeCause.CANARY,
            evidence=(
                f"a canary sent at {words.clock(canary.sent_at)} to pid {run.root.pid} got no "
                f"answer{waited}",
                self._progress_words(words),
            ),
        )

    def _stall(
        self,
        assessment: Assessment,
        now: float,
        ready_at: float | None,
        canary_in_flight: float | None,
        words: HostWords,
    ) -> Wedged | None:
        if not (self._prints_progress or self._scraped_progress):
            return None  # nothing shows progress: a stall cannot be told
        run = assessment.run
        clients = run.clients if run is not None else None
        pending = self._pending(assessment.checked_at, canary_in_flight, clients, words)
        if not pending:
            return None
        # Nothing moved since the work became pending, the last progress, or the ready line.
        start = max(
            min(at for at, _ in pending),
            self._progress.at if self._progress is not None else float("-inf"),
            ready_at if ready_at is not None else run.root.start_time,  # type: ignore[union-attr]
        )
        if now - start < self.wedged_after:
            return None
        evidence = (*(said for _, said in pending), self._progress_words(words))
        return Wedged(since=start, cause=WedgeCause.STALL, evidence=evidence)

    def _clients_waiting_since(
        self, checked_at: float, clients: Clients | None, quiet: list[Client]
    ) -> float | None:
        """Since when some client has waited without a break, over the probes seen: from
        the kernel's times (the longest-quiet connection went quiet), or, with counts only,
        from the first probe of the streak that found a connection open."""
        if checked_at != self._clients_at:
            self._clients_at = checked_at
            if quiet:
                went = checked_at - max(c.quiet_s or 0.0 for c in quiet)
                before = self._waiting_since
                self._waiting_since = went if before is None else min(before, went)
            elif clients is not None and not clients.timed and clients.open > 0:
                if self._waiting_since is None:
                    self._waiting_since = checked_at
            else:
                self._waiting_since = None
        return self._waiting_since

    def _pending(
        self,
        checked_at: float,
        canary_in_flight: float | None,
        clients: Clients | None,
        words: HostWords,
    ) -> list[tuple[float, str]]:
        """Each source that says work is pending: (since when, the evidence in words)."""
        found: list[tuple[float, str]] = []
        if canary_in_flight is not None:
            found.append(
                (canary_in_flight, f"a canary in flight since {words.clock(canary_in_flight)}")
            )
        if self._page_pending_since is not None:
            found.append(
                (
                    self._page_pending_since,
                    f"{self._page_pending:.0f} requests running or queued on /metrics since "
                    f"{words.clock(self._page_pending_since)}",
                )
            )
        quiet = _quiet_clients(clients)
        waited = self._clients_waiting_since(checked_at, clients, quiet)
        counts = [c for c in self._log_counts.values() if c.pending > 0]
        if counts and (self._counts_when_idle or waited is not None):
            latest = max(counts, key=lambda c: c.at)
            total = sum(c.pending for c in counts)
            since = min(c.since for c in counts)
            if not self._counts_when_idle and waited is not None:
                # believed because a client waits: pending since it began to wait
                since = max(since, waited)
            where = f", byte {latest.offset}" if latest.offset is not None else ""
            said = (
                f"{total:.0f} requests running or queued (the log's latest metric line"
                f"{where}, {words.clock(latest.at)})"
            )
            if not self._counts_when_idle:
                said += f", {_clients_words(clients, quiet)}"
            found.append((since, said))
        waiting = [c for c in quiet if c.waiting_s is not None and c.waiting_s >= CLIENT_QUIET]
        if waiting:
            longest = max(c.waiting_s or 0.0 for c in waiting)
            found.append(
                (
                    checked_at - longest,
                    f"{len(waiting)} client requests unanswered, the longest for "
                    f"{human_age(longest)} (from {printable(waiting[0].peer)})",
                )
            )
        return found

    def _progress_words(self, words: HostWords) -> str:
        point = self._progress
        if point is None:
            return "no progress seen in this run since it was ready"
        where = (
            f" (log byte {point.offset})" if point.offset is not None else " (/metrics counters)"
        )
        return f"the last progress was at {words.when(point.at)}{where}"


def _quiet_clients(clients: Clients | None) -> list[Client]:
    """The clients whose connection has been quiet for :data:`CLIENT_QUIET` s or more,
    longest waiting first (only when the kernel gave the times)."""
    if clients is None or not clients.timed:
        return []
    quiet = [c for c in clients.shown if c.quiet_s is not None and c.quiet_s >= CLIENT_QUIET]
    return sorted(quiet, key=lambda c: -(c.waiting_s or 0.0))


def _clients_words(clients: Clients | None, quiet: list[Client]) -> str:
    if quiet:
        return f"{len(quiet)} client connections quiet for {CLIENT_QUIET:.0f} s or more"
    if clients is not None:
        return f"{clients.open} client connections open"
    return "no client connections known"


def _epoch(ts: datetime, utc_offset: int) -> float:
    """A sample's host wall-clock time as epoch seconds."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone(timedelta(seconds=utc_offset)))
    return ts.timestamp()


def wedged_words(wedged: Wedged, utc_offset: int, now: float) -> str:
    """The first words of a WEDGED summary: why, and since when (host clock)."""
    words = HostWords(utc_offset, now)
    since = words.when(wedged.since)
    if wedged.cause == WedgeCause.FATAL:
        return f"alive but not serving since {since}: this run printed a fatal line"
    if wedged.cause == WedgeCause.CANARY:
        return f"alive but not serving since {since}: a canary got no answer"
    return (
        f"alive but not serving since {since}: work is pending and nothing progressed "
        f"for {human_age(now - wedged.since)}"
    )
