"""One service's report at an instant, and how ``babysit status --json`` says it.

:class:`ServiceReport` is the one immutable value every view renders (the host screen,
the fleet's row, ``babysit status``); :func:`status_json` is the whole JSON document.
It is made by :class:`~tui.core.report.ServiceFacts`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from tui.core.canary import CanaryResult
from tui.core.gpu import ServiceGpus
from tui.core.hints import Hint
from tui.core.launch.diff import LaunchDiff
from tui.core.metrics.model import MetricSample
from tui.core.metrics.series import ServiceMetrics
from tui.core.phases import Startup, StartupRecord
from tui.core.runs import Assessment
from tui.core.secrets import redact_argv
from tui.core.serving import Progress
from tui.core.verdicts import Verdict

#: The version of ``babysit status --json``'s envelope.
SCHEMA = 1
#: The keys a report's startup adds to its ``ready`` object (null without a run).
STARTUP_KEYS = ("phase", "phase_since", "eta", "progress", "phases", "last_run_s", "overdue")


@dataclass(frozen=True)
class ProbeDetails:
    """The raw extras of one probe: bytes and text as the host gave them."""

    tail: bytes = b""
    tail_offset: int | None = None
    args_line: str | None = None
    gpu_csv: Mapping[str, object] | None = None
    #: The service's /metrics page, for services with ``metrics: prometheus``.
    prometheus: str | None = None
    #: The service's run history on the host (each run's phase start times), the
    #: newest last, and why it could not be read or written.
    startups: tuple[StartupRecord, ...] = ()
    startups_problem: str | None = None


@dataclass(frozen=True)
class ServiceReport:
    """One service at one instant: the verdict and the facts it rests on, with their ages."""

    assessment: Assessment
    metrics: ServiceMetrics | None
    launch: LaunchDiff | None
    gpus: ServiceGpus | None
    hints: tuple[Hint, ...] = field(default_factory=tuple)
    #: The sample read from the /metrics page (``metrics: prometheus``), with the rates
    #: its counters gave since the previous scrape of this run (see PrometheusReaders).
    prometheus_sample: MetricSample | None = None
    #: This run's last canary result (``babysit canary``, the ``c`` key, ``canary.every``).
    canary: CanaryResult | None = None
    #: This run's last progress (generation or prefill moved), or None before any.
    progress: Progress | None = None
    #: Where the run is in its startup (its phase, since when, an ETA from the last
    #: run's phases), or None when there is no run that writes the log.
    startup: Startup | None = None
    #: When the facts of the latest answer were read on the host (host epoch seconds;
    #: None before any). It stays when a later round trip fails and the verdict turns
    #: UNKNOWN: it says how old the last thing babysit knows is.
    observed_at: float | None = None

    @property
    def verdict(self) -> Verdict:
        return self.assessment.verdict

    @property
    def concerns(self) -> int:
        """What makes a LIVE read degraded (``LIVE ⚠ 2``): each hint, and the intended
        launch flags the run lacks (one concern however many)."""
        launch_missing = self.launch is not None and bool(self.launch.missing)
        return len(self.hints) + launch_missing

    def to_json(self) -> dict[str, object]:
        """This service's entry in ``babysit status --json``."""
        offset = self.assessment.utc_offset
        progress = None
        if self.progress is not None:
            progress = self.progress.to_json(lambda ts: _iso(ts, offset))
        out = {**assessment_json(self.assessment), **self.facts_json(), "progress": progress}
        startup = self.startup.to_json(lambda ts: _iso(ts, offset)) if self.startup else {}
        out["ready"] = {**out["ready"], **dict.fromkeys(STARTUP_KEYS), **startup}
        return out

    def facts_json(self) -> dict[str, object]:
        return {
            "metrics": self.metrics.to_json() if self.metrics is not None else None,
            "launch": self.launch.to_json() if self.launch is not None else None,
            "gpus": self.gpus.to_json() if self.gpus is not None else None,
            "hints": [h.to_json() for h in self.hints],
            "canary": self.canary.to_json() if self.canary is not None else None,
        }


def status_json(reports: Iterable[ServiceReport]) -> dict[str, object]:
    """The whole of ``babysit status --json``."""
    return {"schema": SCHEMA, "services": [r.to_json() for r in reports]}


def _iso(ts: float | None, offset: int) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone(timedelta(seconds=offset))).isoformat(
        timespec="seconds"
    )


def assessment_json(a: Assessment) -> dict[str, object]:
    """The verdict and the facts it rests on, in the host's own clock."""
    offset = a.utc_offset
    process = None
    if a.run is not None:
        process = {
            "pid": a.run.root.pid,
            "started_at": _iso(a.run.root.start_time, offset),
            "boot_id": a.boot_id,
            "start_ticks": a.run.root.start_ticks,
            "cmdline": list(redact_argv(a.run.root.cmdline)),
            "pids": list(a.run.pids),
        }
    identity = a.container.identity if a.container is not None else None
    if process is not None and identity is not None:
        process["run"] = {
            "container_id": identity.id,
            "started_at": _iso(identity.started_at, offset),
            "restart_count": identity.restart_count,
        }
    log = None
    if a.log is not None:
        log = {
            "path": a.log.path,
            "exists": a.log.exists,
            "dev": a.log.dev,
            "inode": a.log.inode,
            "size": a.log.size,
            "mtime": _iso(a.log.mtime, offset),
            "written_by_pid": a.log_writer,
            "problem": a.log.problem,
            "format": a.log.format,
        }
    ready: dict[str, object] = {"seen": None, "at": None, "source": None}
    if a.ready is not None:
        ready = {
            "seen": a.ready.seen,
            "at": _iso(a.ready.at, offset),
            "source": a.ready.source,
            "anchor": a.ready.anchor,
        }
    return {
        "host": a.host,
        "service": a.service,
        "verdict": a.verdict.value,
        "summary": a.summary,
        "process": process,
        "log": log,
        "ready": ready,
        "container": (
            a.container.to_json(lambda ts: _iso(ts, offset)) if a.container is not None else None
        ),
        "wedged": a.wedged.to_json(lambda ts: _iso(ts, offset)) if a.wedged else None,
        "cause": a.cause.to_json() if a.cause is not None else None,
        "checked_at": _iso(a.checked_at, offset),
    }
