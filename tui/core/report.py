"""Everything babysit says about one service, from one probe: verdict, metrics, launch, GPUs, hints.

:func:`build_report` is pure. It reads only what the probe brought back (the
log's tail, the run's printed args line, nvidia-smi's CSV) and the service's
configuration, so ``babysit status --json`` and the screen say the same thing.
Metric points from before this run's anchor are left out when the run writes
the log; every value carries its age, and a value older than ``stale_after``
is marked stale, never shown as current.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from tui.core.gpu import ServiceGpus, attribute, gpu_values, read_apps, read_gpus
from tui.core.hints import DeathWatch, Hint, hints
from tui.core.launch import LaunchDiff, launch_diff, parse_reported
from tui.core.metrics import (
    Engine,
    LogScanner,
    MetricSample,
    PrometheusReaders,
    RunEvent,
    RunEventKind,
    SeriesStore,
    ServiceMetrics,
)
from tui.core.runs import Assessment
from tui.core.sanitize import clean_bytes

#: How old a metric may be before it is shown as stale (vLLM logs every 10 s).
DEFAULT_STALE_AFTER = 30.0


@dataclass(frozen=True)
class ProbeDetails:
    """The raw extras of one probe: bytes and text as the host gave them."""

    tail: bytes = b""
    tail_offset: int | None = None
    args_line: str | None = None
    gpu_csv: Mapping[str, object] | None = None
    #: The service's /metrics page, for services with ``metrics: prometheus``.
    prometheus: str | None = None


@dataclass(frozen=True)
class ServiceReport:
    assessment: Assessment
    metrics: ServiceMetrics | None
    launch: LaunchDiff | None
    gpus: ServiceGpus | None
    hints: tuple[Hint, ...] = field(default_factory=tuple)
    #: The sample read from the /metrics page (``metrics: prometheus``), with the rates
    #: its counters gave since the previous scrape of this run (see PrometheusReaders).
    prometheus_sample: MetricSample | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "metrics": self.metrics.to_json() if self.metrics is not None else None,
            "launch": self.launch.to_json() if self.launch is not None else None,
            "gpus": self.gpus.to_json() if self.gpus is not None else None,
            "hints": [h.to_json() for h in self.hints],
        }


def run_writes_log(assessment: Assessment) -> bool:
    """Whether the assessed run writes the file now at the log's path."""
    run, log = assessment.run, assessment.log
    return (
        run is not None
        and log is not None
        and log.exists
        and run.writes(log.dev or 0, log.inode or 0)
    )


def log_lines(details: ProbeDetails, since: int | None) -> list[tuple[str, int]]:
    """Whole lines of the tail with their offsets, none before ``since``."""
    if details.tail_offset is None or not details.tail:
        return []
    data = details.tail
    offset = details.tail_offset
    if offset > 0:  # the first line is cut: skip to the first newline
        cut = data.find(b"\n")
        if cut < 0:
            return []
        data, offset = data[cut + 1 :], offset + cut + 1
    lines = []
    for raw in data.split(b"\n")[:-1]:
        if since is None or offset >= since:
            lines.append((clean_bytes(raw.rstrip(b"\r")), offset))
        offset += len(raw) + 1
    return lines


def build_report(
    assessment: Assessment,
    details: ProbeDetails,
    *,
    engine: str,
    intended: Sequence[str] | None,
    gpu_indexes: Sequence[int] = (),
    stale_after: float = DEFAULT_STALE_AFTER,
    prometheus: PrometheusReaders | None = None,
    log_metrics: bool = True,
) -> ServiceReport:
    """The service's metrics, launch diff, GPUs and hints, from one probe.

    Rates from /metrics counters (vLLM's throughput, acceptance) need the previous
    scrape of the same run: pass the ``prometheus`` readers that live as long as the
    service is watched; without them this one reading gives gauges only.
    ``log_metrics`` False (``metrics: prometheus``): the log's metric lines are not
    series (the page is); its run boundaries still count."""
    now = assessment.checked_at
    run = assessment.run
    writes_log = run_writes_log(assessment)
    anchor = run.ready.anchor if writes_log and run is not None and run.ready else None
    metrics_engine = Engine.of(engine) if engine in ("sglang", "vllm") else None
    scanner = LogScanner(metrics_engine)
    store = SeriesStore()
    name = assessment.service
    deaths = DeathWatch(engine)
    for text, offset in log_lines(details, anchor):
        found = scanner.feed(text, offset)
        deaths.feed(text, offset)
        if isinstance(found, RunEvent) and found.kind is RunEventKind.STARTED:
            deaths.new_run()
            store.begin_run(name, found.run)
        elif isinstance(found, MetricSample) and log_metrics:
            store.add_sample(name, found, utc_offset=assessment.utc_offset)

    sample = None
    if details.prometheus is not None:
        stamp = datetime.fromtimestamp(now, timezone(timedelta(seconds=assessment.utc_offset)))
        readers = prometheus if prometheus is not None else PrometheusReaders()
        identity = (assessment.boot_id, run.root.pid, run.root.start_ticks) if run else None
        reader = readers.reader(assessment.host, name, identity)
        sample = reader.read(
            details.prometheus, stamp.replace(tzinfo=None), run=store.current_run(name)
        )
        if sample is not None:
            store.add_sample(name, sample, utc_offset=assessment.utc_offset)

    gpus = None
    if details.gpu_csv is not None:
        csv = details.gpu_csv
        query = read_gpus(
            _int(csv.get("gpus_status")),
            str(csv.get("gpus") or ""),
            str(csv.get("gpus_error") or ""),
        )
        apps = read_apps(
            _int(csv.get("apps_status")),
            str(csv.get("apps") or ""),
            str(csv.get("apps_error") or ""),
            read_at=_float(csv.get("apps_at")),
        )
        gpus = attribute(query, apps, run.pids if run else (), gpu_indexes)
        for label, values in gpu_values(gpus.gpus).items():
            store.add_values(name, values, ts=now, run=store.current_run(name), label=label)

    metrics = store.snapshot(name, now=now, stale_after=stale_after)
    launch = None
    if run is not None:
        reported = parse_reported(details.args_line) if details.args_line else None
        launch = launch_diff(intended, list(run.root.cmdline), reported, engine=metrics_engine)
    death = deaths.line(running=writes_log)
    found_hints = tuple(hints(metrics, launch=launch, gpus=gpus, death=death))
    return ServiceReport(assessment, metrics, launch, gpus, found_hints, sample)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
