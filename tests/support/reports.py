"""One round trip's reports for tests: the probe and the facts, with nothing kept.

The product asks for reports through its sessions (:mod:`tui.session`); a test of
what one probe answer says uses this: :func:`~tui.remote.probe.probe_services`,
then one :class:`~tui.core.report.ServiceFacts` per service, as a session does.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui.config import Host, Service
from tui.core.metrics.prometheus import PrometheusReaders
from tui.core.report import DEFAULT_STALE_AFTER, ProbeDetails, ServiceFacts, ServiceReport
from tui.core.runs import Assessment
from tui.remote.probe import REPORT_TAIL, ProbeChannel, probe_services
from tui.remote.transport import Transport


async def report_host(
    transport: Transport,
    host: Host,
    services: Sequence[Service] | None = None,
    *,
    tail_bytes: int = REPORT_TAIL,
    gpus: bool = True,
    channel: ProbeChannel | None = None,
    apps_max_age: float = 0.0,
) -> list[ServiceReport]:
    """Each service's report from one round trip (through ``channel`` when given)."""
    chosen = list(services if services is not None else host.services.values())
    answers = await probe_services(
        transport,
        host,
        chosen,
        tail_bytes=tail_bytes,
        gpus=gpus,
        channel=channel,
        apps_max_age=apps_max_age,
    )
    return [
        ServiceFacts.of(host.name, service).observe(assessment, details)
        for (assessment, details), service in zip(answers, chosen, strict=True)
    ]


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
    """The report of one probe answer alone (facts that watch nothing else)."""
    facts = ServiceFacts(
        assessment.host,
        assessment.service,
        engine=engine,
        intended=intended,
        gpu_indexes=gpu_indexes,
        stale_after=stale_after,
        prometheus=prometheus,
        log_metrics=log_metrics,
    )
    return facts.observe(assessment, details)
