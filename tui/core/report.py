"""Everything babysit says about one service at an instant, and the one pipeline that makes it.

:class:`ServiceFacts` is the only place where a service's log lines, /metrics
pages and nvidia-smi readings become series, a launch diff, GPU use and hints.
It lives as long as the service is watched: the host screen feeds it the lines
its follower reads, the fleet and ``babysit status`` the tails their probes bring
back, and each asks it for a :class:`ServiceReport` — one immutable value that
every view renders and ``status --json`` serialises with :meth:`ServiceReport.to_json`.

A run is (boot id, pid, start time), or, for a container service, the container's
(id, StartedAt, RestartCount): each new container run opens a run of the series.
Metric points from before this run's anchor are left out when the run writes the
log (a container's json-file log is its run's while it runs); every value carries
its age, and a value older than ``stale_after`` is marked stale, never shown as
current. A line is fed once: lines already read (by the follower or an earlier
tail) are skipped by their file and offset.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from tui.config import DEFAULT_WEDGED_AFTER
from tui.core.assess_container import server_process
from tui.core.canary import CanaryResult
from tui.core.cause import cause_of
from tui.core.container_watch import ContainerWatch
from tui.core.containers import DOCKER_JSON
from tui.core.gpu import ServiceGpus, gpu_values
from tui.core.hints import hints
from tui.core.host_gpus import service_gpus
from tui.core.launch.diff import LaunchDiff, launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.lines import whole_lines
from tui.core.logcursor import LogLine
from tui.core.metrics.boundaries import LogScanner, RunEvent, RunEventKind
from tui.core.metrics.model import MetricSample
from tui.core.metrics.prometheus import PrometheusReaders
from tui.core.metrics.series import SeriesStore
from tui.core.phases import Startup, StartupRecord, startup
from tui.core.runs import Assessment
from tui.core.service_report import ProbeDetails, ServiceReport
from tui.core.verdicts import Verdict
from tui.core.wedge import ServingWatch, wedged_words
from tui.engines import GENERIC, spec

if TYPE_CHECKING:
    from tui.config import Service

#: How old a metric may be before it is shown as stale (vLLM logs every 10 s).
DEFAULT_STALE_AFTER = 30.0
#: Files whose read offsets a service's facts remember (the log and its recent copies).
FILES_REMEMBERED = 8


class ServiceFacts:
    """What babysit has read of one service while it is watched, and the report it makes.

    Feed it log lines (:meth:`feed`, each line once: a line at or before the last
    offset read of its file is skipped) and probe answers (:meth:`observe`); ask it
    for a :class:`ServiceReport` (:meth:`report`). Rates from /metrics counters
    (vLLM's throughput, acceptance) come from the previous scrape of the same run,
    kept here. ``log_metrics`` False (``metrics: prometheus``): the log's metric
    lines are not series (the page is); its run boundaries still count.
    """

    def __init__(
        self,
        host: str,
        name: str,
        *,
        engine: str,
        intended: Sequence[str] | None,
        gpu_indexes: Sequence[int] = (),
        stale_after: float = DEFAULT_STALE_AFTER,
        prometheus: PrometheusReaders | None = None,
        log_metrics: bool = True,
        wedged_after: float = DEFAULT_WEDGED_AFTER,
    ) -> None:
        self.host = host
        self.name = name
        self.engine = engine
        self.intended = None if intended is None else list(intended)
        self.gpu_indexes = tuple(gpu_indexes)
        self.stale_after = stale_after
        self.log_metrics = log_metrics
        #: the engine the launch diff reads flags as (None: as the command line says)
        self._flags_engine = None if spec(engine).name == GENERIC else engine
        self._scanner = LogScanner(engine)
        #: Whether this run serves: progress, pending work, fatal lines (WEDGED).
        self._serving = ServingWatch(engine, wedged_after)
        self._store = SeriesStore()
        self._readers = prometheus if prometheus is not None else PrometheusReaders()
        #: Per file (dev, inode): the offset past the last line fed.
        self._read_to: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._assessment: Assessment | None = None
        #: The host's offset from UTC, from its latest real answer (None before any).
        self.utc_offset: int | None = None
        #: The run the latest answer named: (boot id, pid, start ticks), or the
        #: container's (id, StartedAt, RestartCount).
        self._run_identity: tuple[object, ...] | None = None
        #: Where the latest run the log's lines opened began: ((dev, inode), offset).
        self._last_start: tuple[tuple[int, int], int | None] | None = None
        self._container = ContainerWatch()
        #: This run's anchor in its log file: ((dev, inode), offset), when the run writes it.
        self._anchor: tuple[tuple[int, int], int] | None = None
        self._launch: LaunchDiff | None = None
        #: The running argv and args line the last diff was made of, and that diff.
        self._launch_read: tuple[tuple[str, ...], str | None] | None = None
        self._launch_diff: LaunchDiff | None = None
        self._gpus: ServiceGpus | None = None
        self._sample: MetricSample | None = None
        #: When the canary in flight was sent (host epoch seconds), or None.
        self._canary_in_flight: float | None = None
        self._canary: CanaryResult | None = None
        #: The service's run history on the host, from the latest answer.
        self._startups: tuple[StartupRecord, ...] = ()
        #: When the latest real answer (one that read the host) was read there.
        self._observed_at: float | None = None

    @classmethod
    def of(
        cls,
        host: str,
        service: Service,
        *,
        stale_after: float = DEFAULT_STALE_AFTER,
        prometheus: PrometheusReaders | None = None,
    ) -> ServiceFacts:
        from tui.config import MetricsSource

        return cls(
            host,
            service.name,
            engine=service.engine.value,
            intended=list(service.launch.command) if service.launch else None,
            gpu_indexes=service.gpus,
            stale_after=stale_after,
            prometheus=prometheus,
            log_metrics=service.metrics is MetricsSource.LOG,
            wedged_after=service.wedged_after,
        )

    def _forget_read(self, assessment: Assessment) -> None:
        """Read marks that no longer hold: a file cut below what was read (``> log``,
        copytruncate), or another run of the service (its lines may sit at offsets
        read before, in a file cut and written again)."""
        log = assessment.log
        identity = _run_identity(assessment)
        if identity is not None and identity != self._run_identity:
            # A container's json-file keeps its lines across the container's runs:
            # what was read of it holds.
            appended = log is not None and log.format == DOCKER_JSON
            if self._run_identity is not None and not appended:
                self._read_to.clear()
            if self._run_identity is not None:
                # another run: what the last one showed of serving is not this one's
                self._serving.new_run()
            self._run_identity = identity
        if log is not None and log.dev is not None and log.inode is not None:
            key = (log.dev, log.inode)
            if log.size is not None and self._read_to.get(key, 0) > log.size:
                del self._read_to[key]

    def _place(self, assessment: Assessment) -> None:
        """Give the log's readers this run's start and the host's zone (stamps counted
        from the start, stamps in UTC)."""
        run = assessment.run
        start = run.root.start_time if run is not None else None
        self._scanner.place_run(_run_identity(assessment), start, assessment.utc_offset)

    def _split_container_run(self, assessment: Assessment) -> None:
        """A new run of the container (another id, StartedAt or RestartCount) opens a
        run of the series, unless its lines already did (its startup line, read at or
        past this run's anchor)."""
        if not self._container.new_run(assessment):
            return
        run, log = assessment.run, assessment.log
        anchor = run.ready.anchor if run is not None and run.ready is not None else None
        if anchor is not None and log is not None and self._last_start is not None:
            where, offset = self._last_start
            if where == (log.dev, log.inode) and offset is not None and offset >= anchor:
                return
        run = max(self._store.current_run(self.name) or 0, self._scanner.run) + 1
        self._scanner = LogScanner(self.engine)
        self._scanner.boundary.run = run
        self._place(assessment)
        self._serving.new_run()
        self._store.begin_run(self.name, run)

    # ------------------------------------------------------------------ canaries

    def canary_sent(self, at: float) -> None:
        """A canary was sent to this run at ``at`` (host epoch seconds): work is pending
        until :meth:`canary_done`."""
        self._canary_in_flight = at

    def canary_done(self, result: CanaryResult) -> None:
        """A canary's result: kept as this run's last, shown by the report, and, when it
        timed out while the run lives, WEDGED evidence."""
        self._canary_in_flight = None
        self._canary = result

    @property
    def canary(self) -> CanaryResult | None:
        """This run's last canary result, or None."""
        return self._canary

    def file_cut(self, inode: int) -> None:
        """The file of ``inode`` was cut (a follower saw it): its lines are read afresh."""
        for key in [key for key in self._read_to if key[1] == inode]:
            del self._read_to[key]

    @property
    def assessment(self) -> Assessment | None:
        """The verdict of the latest probe answer observed."""
        return self._assessment

    # ------------------------------------------------------------------ lines

    def feed(
        self,
        text: str,
        dev: int,
        inode: int,
        offset: int,
        size: int,
        *,
        utc_offset: int,
        stamp: float | None = None,
    ) -> bool:
        """One log line of file (dev, inode) at ``offset``; whether it gave a metric sample.

        ``stamp``: when the log itself says the line was written (a docker record's
        time, with year and zone): a metric sample's time, over the engine's own."""
        key = (dev, inode)
        if offset < self._read_to.get(key, 0):
            return False  # read before (by the follower or an earlier tail)
        if self._anchor is not None and key == self._anchor[0] and offset < self._anchor[1]:
            return False  # another run's line, above this run's anchor
        self._read_to[key] = offset + size
        self._read_to.move_to_end(key)
        while len(self._read_to) > FILES_REMEMBERED:
            self._read_to.popitem(last=False)
        kept = 0
        for found in self._scanner.feed_all(text, offset):
            if isinstance(found, RunEvent) and found.kind is RunEventKind.STARTED:
                self._last_start = (key, found.offset)
                self._serving.new_run()
                self._store.begin_run(self.name, found.run)
            elif isinstance(found, MetricSample):
                sample = found if stamp is None else replace(found, ts=_wall(stamp, utc_offset))
                self._serving.sample(sample, utc_offset)
                if self.log_metrics:
                    kept += self._store.add_sample(self.name, sample, utc_offset=utc_offset)
        if self._serving.line(text, offset):
            self._serving.date_fatal(self._line_time(text, stamp, utc_offset))
        return kept > 0

    def _line_time(self, text: str, stamp: float | None, utc_offset: int) -> float | None:
        """When the line says it was written (host epoch seconds), or None."""
        if stamp is not None:
            return stamp
        printed = self._scanner.parser.line_time(text)
        if printed is None:
            return None
        if printed.tzinfo is None:
            printed = printed.replace(tzinfo=timezone(timedelta(seconds=utc_offset)))
        return printed.timestamp()

    def feed_line(self, line: LogLine, *, utc_offset: int) -> bool:
        """A followed line (:meth:`feed` of its text, file and offset)."""
        return self.feed(
            line.text,
            line.dev,
            line.inode,
            line.offset,
            line.size,
            utc_offset=utc_offset,
            stamp=line.stamp,
        )

    # ------------------------------------------------------------------ probes

    def observe(
        self,
        assessment: Assessment,
        details: ProbeDetails,
        followed: Iterable[LogLine] = (),
    ) -> ServiceReport:
        """One probe's answer: its verdict, the tail it read (from this run's anchor when
        the run writes the log), its /metrics page and GPU readings; the report now.

        ``followed``: lines a follower read that waited for this answer, fed after the
        tail and before the readings of now (which belong to the latest run)."""
        assessment = self._container.observe(assessment)
        self._assessment = assessment
        self._startups = details.startups
        run = assessment.run
        log = assessment.log
        if log is not None:  # a real answer (an unknown one knows no clock of the host)
            self.utc_offset = assessment.utc_offset
            self._observed_at = assessment.checked_at
            self._forget_read(assessment)
            self._place(assessment)
            self._split_container_run(assessment)
        self._anchor = None
        if log is not None and log.exists and log.dev is not None and log.inode is not None:
            anchor = run.ready.anchor if run is not None and run.ready is not None else None
            if assessment.writes_log and anchor is not None:  # feed() leaves out lines above it
                self._anchor = ((log.dev, log.inode), anchor)
            lines = whole_lines(details.tail, details.tail_offset, format=log.format)
            # The end of the tail's last whole line: where the next line read begins.
            end = (details.tail_offset or 0) + details.tail.rfind(b"\n") + 1
            for index, (text, offset) in enumerate(lines):
                after = lines[index + 1][1] if index + 1 < len(lines) else end
                self.feed(
                    text,
                    log.dev,
                    log.inode,
                    offset,
                    after - offset,
                    utc_offset=assessment.utc_offset,
                )
        for line in followed:
            self.feed_line(line, utc_offset=self.utc_offset or 0)
        now = assessment.checked_at
        self._sample = None
        if details.prometheus is not None:
            stamp = datetime.fromtimestamp(now, timezone(timedelta(seconds=assessment.utc_offset)))
            identity = _run_identity(assessment) if run else None
            reader = self._readers.reader(assessment.host, self.name, identity)
            sample = reader.read(
                details.prometheus,
                stamp.replace(tzinfo=None),
                run=self._store.current_run(self.name) or 0,
            )
            if sample is not None:
                self._store.add_sample(self.name, sample, utc_offset=assessment.utc_offset)
                self._serving.sample(sample, assessment.utc_offset)
                self._sample = sample
        self._gpus = None
        if details.gpu_csv is not None:
            self._gpus = service_gpus(
                details.gpu_csv, run.pids if run else (), self.gpu_indexes, assessment.utc_offset
            )
            current = self._store.current_run(self.name) or 0
            for label, values in gpu_values(self._gpus.gpus).items():
                self._store.add_values(self.name, values, ts=now, run=current, label=label)
        self._launch = None
        if run is not None:
            # a container's root may be a wrapper (``sh -c``): the diff reads the server's argv
            argv = server_process(run, self.engine).cmdline if assessment.container else None
            running = tuple(argv if argv is not None else run.root.cmdline)
            key = (running, details.args_line)
            if key != self._launch_read:  # each probe of the same run brings the same two
                reported = parse_reported(details.args_line) if details.args_line else None
                self._launch_read = key
                self._launch_diff = launch_diff(
                    self.intended, list(running), reported, engine=self._flags_engine
                )
            self._launch = self._launch_diff
        return self.report(now)

    def report(self, now: float) -> ServiceReport:
        """The report at ``now``: the latest verdict, series aged to ``now``, the hints.

        Before any probe answer the verdict is UNKNOWN (babysit has not asked yet)."""
        a = self._assessment
        if a is None:
            from tui.core.runs import unknown

            a = unknown(self.host, self.name, "not asked yet", now)
        canary = self._canary_of(a)
        wedged = self._serving.wedged(
            a, now, canary_in_flight=self._canary_in_flight, canary=canary
        )
        if wedged is not None:
            said = wedged_words(wedged, a.utc_offset, now)
            a = replace(a, verdict=Verdict.WEDGED, wedged=wedged, summary=f"{said}; {a.summary}")
        cause = cause_of(a, self._serving.failures)
        if cause is not None:
            a = replace(a, cause=cause)
        metrics = self._store.snapshot(self.name, now=now, stale_after=self.stale_after)
        death = self._serving.death_line(running=a.writes_log)
        notes = self._container.notes(a, now)
        found = tuple(
            hints(
                metrics,
                launch=self._launch,
                gpus=self._gpus,
                death=death,
                container=notes,
                canary=canary,
            )
        )
        return ServiceReport(
            a,
            metrics,
            self._launch,
            self._gpus,
            found,
            self._sample,
            canary=canary,
            progress=self._serving.progress,
            startup=self._startup_of(a, now),
            observed_at=self._observed_at,
        )

    def _startup_of(self, a: Assessment, now: float) -> Startup | None:
        """Where the run that writes the log is in its startup (None without one)."""
        run, ready = a.run, a.ready
        if run is None or ready is None or not a.writes_log:
            return None
        return startup(
            started=run.root.start_time,
            marks=ready.phases,
            ready_at=ready.at,
            ready=bool(ready.seen),
            history=self._startups,
            identity=(a.boot_id or "", run.root.pid, run.root.start_ticks),
            now=now,
        )

    def _canary_of(self, a: Assessment) -> CanaryResult | None:
        """The last canary, when it was sent to the run ``a`` names."""
        canary, run = self._canary, a.run
        if canary is None or run is None:
            return None
        if (canary.run_pid, canary.run_start_ticks) != (run.root.pid, run.root.start_ticks):
            return None
        return canary


def _run_identity(a: Assessment) -> tuple[object, ...] | None:
    """The run the assessment names: its container's (id, StartedAt, RestartCount), or
    (boot id, pid, start ticks) of its root process."""
    identity = a.container.identity if a.container is not None else None
    if identity is not None:
        return ("container", identity.id, identity.started_at, identity.restart_count)
    run = a.run
    return (a.boot_id, run.root.pid, run.root.start_ticks) if run is not None else None


def _wall(stamp: float, utc_offset: int) -> datetime:
    """Epoch seconds as the host's wall clock (naive), as metric samples carry time."""
    return datetime.fromtimestamp(stamp, timezone(timedelta(seconds=utc_offset))).replace(
        tzinfo=None
    )
