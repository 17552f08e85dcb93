"""What ``babysit export`` exposes: the series of every watched service, as a pure value.

:func:`families` turns what the sessions know at one instant (:class:`HostView`, one per
host, each service's :class:`~tui.core.report.ServiceReport` as every other view renders
it) into prometheus_client metric families with the names of :mod:`tui.export.names`.
It decides nothing itself: the verdict, the run, the ages and the orphans are the
report's. What it adds is how a stale fact must look in a time series:

- a series with one label per state (verdict, startup phase) carries 1 for the current
  state and 0 for every other, so a change never leaves an old 1 standing;
- a host that cannot be asked reads ``unknown`` (its report's verdict says so), keeps
  the time of its last answer in ``babysit_observed_timestamp_seconds``, and names no
  run: nothing of its last answer is exposed as if it still held;
- samples carry no timestamps of their own, so Prometheus's staleness handling ends a
  series the moment babysit stops exposing it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from prometheus_client.core import GaugeMetricFamily, InfoMetricFamily, Metric

from tui.core.gpu import GPU_METRICS
from tui.core.launch.diff import FlagStatus
from tui.core.metrics.series import Latest
from tui.core.phases import LAUNCHING, READY
from tui.core.report import ServiceReport
from tui.core.sanitize import printable
from tui.core.verdicts import Verdict
from tui.engines import spec
from tui.export import names

#: MiB, as nvidia-smi says GPU memory, in bytes.
MIB = 1024 * 1024


@dataclass(frozen=True)
class ServiceView:
    """One watched service: its name (``dp-3`` for an instance), its engine as hosts.yaml
    names it, and its report at the instant of the scrape."""

    name: str
    engine: str
    report: ServiceReport


@dataclass(frozen=True)
class HostView:
    """One host: whether its last round trip was answered, how long it took (None before
    any), and its watched services."""

    name: str
    up: bool
    took: float | None
    services: tuple[ServiceView, ...]


class _Families:
    """The families being filled, made in the order of :data:`names.ALL`."""

    def __init__(self) -> None:
        service = ["host", "service"]
        self.host_up = GaugeMetricFamily(
            names.HOST_UP, "1 when the host answered babysit's last round trip", labels=["host"]
        )
        self.probe_duration = GaugeMetricFamily(
            names.PROBE_DURATION,
            "seconds the host's last round trip took, answered or failed",
            labels=["host"],
        )
        self.verdict = GaugeMetricFamily(
            names.VERDICT,
            "1 for the service's current verdict, 0 for every other verdict",
            labels=[*service, "verdict"],
        )
        self.observed = GaugeMetricFamily(
            names.OBSERVED,
            "when the service's latest facts were read on the host (host epoch seconds); "
            "not advanced while the host cannot be asked",
            labels=service,
        )
        self.run_info = InfoMetricFamily(
            names.RUN_INFO.removesuffix("_info"),
            "the run that writes the service's log",
            labels=service,
        )
        self.run_start = GaugeMetricFamily(
            names.RUN_START, "when the service's run started (host epoch seconds)", labels=service
        )
        self.ready = GaugeMetricFamily(
            names.READY, "1 when the service's run said it is ready", labels=service
        )
        self.progress_age = GaugeMetricFamily(
            names.PROGRESS_AGE,
            "seconds since the run last made generation progress",
            labels=service,
        )
        self.phase = GaugeMetricFamily(
            names.STARTUP_PHASE,
            "1 for the startup phase the run is in, 0 for the engine's other phases",
            labels=[*service, "phase"],
        )
        self.metric = GaugeMetricFamily(
            names.METRIC,
            "the latest value of each series babysit parsed for the run",
            labels=[*service, "name", "part"],
        )
        self.metric_age = GaugeMetricFamily(
            names.METRIC_AGE,
            "seconds since that value was read",
            labels=[*service, "name", "part"],
        )
        self.gpu_metric = GaugeMetricFamily(
            names.GPU_METRIC,
            "the latest nvidia-smi reading of each GPU of the host",
            labels=["host", "gpu", "name"],
        )
        self.gpu_metric_age = GaugeMetricFamily(
            names.GPU_METRIC_AGE,
            "seconds since that reading was taken",
            labels=["host", "gpu", "name"],
        )
        self.flag_missing = GaugeMetricFamily(
            names.FLAG_MISSING,
            "1 for each intended launch flag the running server lacks, 0 for each it has",
            labels=[*service, "flag"],
        )
        self.orphan_bytes = GaugeMetricFamily(
            names.ORPHAN_BYTES,
            "GPU memory held by a process of no live run of the host's services",
            labels=["host", "gpu", "pid"],
        )

    def __iter__(self) -> Iterator[Metric]:
        return iter(
            (
                self.host_up,
                self.probe_duration,
                self.verdict,
                self.observed,
                self.run_info,
                self.run_start,
                self.ready,
                self.progress_age,
                self.phase,
                self.metric,
                self.metric_age,
                self.gpu_metric,
                self.gpu_metric_age,
                self.flag_missing,
                self.orphan_bytes,
            )
        )


def families(hosts: Sequence[HostView], now: float) -> list[Metric]:
    """Every series for ``hosts`` at ``now`` (the watching side's clock, which the
    reports' ages were made at). Pure."""
    out = _Families()
    for host in hosts:
        out.host_up.add_metric([host.name], 1.0 if host.up else 0.0)
        if host.took is not None:
            out.probe_duration.add_metric([host.name], host.took)
        orphans: dict[tuple[str, str], float] = {}
        #: Each GPU's readings, from the service that read them last.
        readings: dict[tuple[str, str], Latest] = {}
        for view in host.services:
            _service(out, host.name, view, now)
            metrics = view.report.metrics
            for key, latest in metrics.latest.items() if metrics is not None else ():
                if key.metric in GPU_METRICS:
                    gpu = key.label.removeprefix("gpu")
                    seen = readings.get((gpu, key.metric.value))
                    if seen is None or latest.ts > seen.ts:
                        readings[(gpu, key.metric.value)] = latest
            gpus = view.report.gpus
            for orphan in gpus.orphans if gpus is not None else ():
                if orphan.memory_mib is None:
                    continue
                gpu = "unknown" if orphan.gpu is None else str(orphan.gpu)
                orphans[(gpu, str(orphan.pid))] = orphan.memory_mib * MIB
        for (gpu, name), latest in sorted(readings.items(), key=lambda item: _gpu_order(*item[0])):
            out.gpu_metric.add_metric([host.name, gpu, name], latest.value)
            out.gpu_metric_age.add_metric([host.name, gpu, name], max(0.0, latest.age))
        for (gpu, pid), size in sorted(orphans.items()):
            out.orphan_bytes.add_metric([host.name, gpu, pid], size)
    return [family for family in out if family.samples]


def _service(out: _Families, host: str, view: ServiceView, now: float) -> None:
    report = view.report
    a = report.assessment
    key = [host, view.name]
    for verdict in Verdict:
        out.verdict.add_metric([*key, verdict.value], 1.0 if verdict is a.verdict else 0.0)
    if report.observed_at is not None:
        out.observed.add_metric(key, report.observed_at)
    run = a.run
    if run is not None:
        started = datetime.fromtimestamp(
            run.root.start_time, timezone(timedelta(seconds=a.utc_offset))
        ).isoformat(timespec="seconds")
        inode = a.log.inode if a.log is not None and a.log.exists else None
        out.run_info.add_metric(
            key,
            {
                "engine": view.engine,
                "pid": str(run.root.pid),
                "started": started,
                "log_inode": "" if inode is None else str(inode),
                "run_id": printable(a.run_id or ""),
            },
        )
        out.run_start.add_metric(key, run.root.start_time)
        out.ready.add_metric(key, 1.0 if a.ready is not None and a.ready.seen else 0.0)
    if report.progress is not None and run is not None:
        out.progress_age.add_metric(key, max(0.0, now - report.progress.at))
    if report.startup is not None:
        for phase in _phases(view.engine):
            out.phase.add_metric([*key, phase], 1.0 if phase == report.startup.phase else 0.0)
    metrics = report.metrics
    for series, latest in sorted(
        (metrics.latest.items() if metrics is not None else ()), key=lambda item: item[0].name
    ):
        if series.metric in GPU_METRICS:  # the host's, once: see families()
            continue
        labels = [*key, series.metric.value, printable(series.label)]
        out.metric.add_metric(labels, latest.value)
        out.metric_age.add_metric(labels, max(0.0, latest.age))
    launch = report.launch
    if launch is not None:
        seen: set[str] = set()
        for row in launch.rows:
            if row.intended is None or row.flag in seen:
                continue
            seen.add(row.flag)
            missing = row.status is FlagStatus.MISSING or row.flag in launch.missing
            out.flag_missing.add_metric([*key, printable(row.flag)], 1.0 if missing else 0.0)
        for flag in launch.missing:
            if flag not in seen:
                seen.add(flag)
                out.flag_missing.add_metric([*key, printable(flag)], 1.0)


def _gpu_order(gpu: str, name: str) -> tuple[int, int, str, str]:
    """GPU 2 before GPU 10, and a GPU without an index last."""
    return (0, int(gpu), "", name) if gpu.isdigit() else (1, 0, gpu, name)


def _phases(engine: str) -> tuple[str, ...]:
    """The phases a run of ``engine`` goes through, :data:`LAUNCHING` to :data:`READY`."""
    own = tuple(phase.name for phase in spec(engine).phases)
    return (LAUNCHING, *(p for p in own if p not in (LAUNCHING, READY)), READY)
