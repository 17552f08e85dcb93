"""`babysit status [HOST[/SERVICE] …]`: one verdict per service, for people and scripts.

Exit status like monitoring plugins: 0 all live, 1 some starting, 2 some stale,
dead, no-log or ambiguous, 3 some unknown. Each host is probed once (one round
trip for all its services), all hosts at the same time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from tui.cli import add_config_option, add_json_option
from tui.config import Config, Host, MetricsSource, Service, load_config
from tui.core.report import ServiceReport
from tui.core.runs import Assessment, exit_status
from tui.core.sanitize import printable
from tui.core.secrets import redact_argv

#: Seconds between the two /metrics readings of a ``metrics: prometheus`` service.
SCRAPE_GAP = 1.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        metavar="HOST[/SERVICE]|GROUP",
        nargs="*",
        help="what to check (default: every service of every host)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every service of every host (the default when nothing is named)",
    )
    add_config_option(parser)
    add_json_option(parser)


def select(config: Config, targets: Sequence[str]) -> list[tuple[Host, list[Service]]]:
    """Hosts with the services asked for, in the order of hosts.yaml."""
    if not targets:
        return [(h, list(h.services.values())) for h in config.hosts.values() if h.services]
    expanded: list[str] = []
    for target in targets:
        expanded.extend(config.groups.get(target, (target,)))
    chosen: dict[str, tuple[Host, list[Service]]] = {}
    for target in expanded:
        host, service = config.service(target)
        _, services = chosen.setdefault(host.name, (host, []))
        for s in [service] if service else list(host.services.values()):
            if s not in services:
                services.append(s)
    return list(chosen.values())


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    reports = asyncio.run(gather_reports(select(config, [] if args.all else args.targets)))
    assessments = [r.assessment for r in reports]
    if args.json:
        data = to_json(assessments)
        for entry, report in zip(data["services"], reports, strict=True):  # type: ignore[call-overload]
            entry.update(report.to_json())
        print(json.dumps(data, indent=2))
    else:
        print(render(assessments, reports), end="")
    return exit_status(assessments)


async def gather(selection: list[tuple[Host, list[Service]]]) -> list[Assessment]:
    """Verdicts only: one probe round trip per host, all hosts at once."""
    from tui.remote import SshLinks, open_transport
    from tui.remote.probe import probe_host

    links = SshLinks()
    try:
        results = await asyncio.gather(
            *(
                probe_host(open_transport(host, links), host, services)
                for host, services in selection
            )
        )
    finally:
        await links.close()
    return [a for group in results for a in group]


async def gather_reports(selection: list[tuple[Host, list[Service]]]) -> list[ServiceReport]:
    """Verdicts with metrics, launch diffs, GPUs and hints; one round trip per host, and
    for hosts with ``metrics: prometheus`` services one more, :data:`SCRAPE_GAP` before:
    vLLM's throughput and acceptance are counters, and a rate needs two readings."""
    from tui.core.metrics import PrometheusReaders
    from tui.remote import SshLinks, open_transport
    from tui.remote.probe import report_host

    links = SshLinks()
    readers = PrometheusReaders()

    async def one(host: Host, services: list[Service]) -> list[ServiceReport]:
        transport = open_transport(host, links)
        scraped = [s for s in services if s.metrics is MetricsSource.PROMETHEUS]
        if scraped:
            await report_host(
                transport, host, scraped, tail_bytes=0, gpus=False, scrape=True, prometheus=readers
            )
            await asyncio.sleep(SCRAPE_GAP)
        return await report_host(transport, host, services, prometheus=readers)

    try:
        results = await asyncio.gather(*(one(host, services) for host, services in selection))
    finally:
        await links.close()
    return [r for group in results for r in group]


def render(
    assessments: Sequence[Assessment], reports: Sequence[ServiceReport] | None = None
) -> str:
    if not assessments:
        return "no services in hosts.yaml\n"
    width = max(len(f"{a.host}/{a.service}") for a in assessments)
    lines = []
    for index, a in enumerate(assessments):
        name = f"{a.host}/{a.service}"
        lines.append(
            f"{name:<{width}}  {a.verdict.name.replace('_', '-'):<9}  {printable(a.summary)}"
        )
        if reports is not None:
            for hint in reports[index].hints:
                lines.append(f"{'':<{width}}  hint: {printable(hint.message)}")
    return "\n".join(lines) + "\n"


def _iso(ts: float | None, offset: int) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, timezone(timedelta(seconds=offset))).isoformat(
        timespec="seconds"
    )


def to_json(assessments: Sequence[Assessment]) -> dict[str, object]:
    services = []
    for a in assessments:
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
        log = None
        if a.log is not None:
            writer = None
            if (
                a.run is not None
                and a.log.exists
                and a.run.writes(a.log.dev or 0, a.log.inode or 0)
            ):
                writer = next(
                    p.pid
                    for p in a.run.processes
                    if any(
                        f.write and (f.dev, f.inode) == (a.log.dev, a.log.inode)
                        for f in p.files or ()
                    )
                )
            log = {
                "path": a.log.path,
                "exists": a.log.exists,
                "dev": a.log.dev,
                "inode": a.log.inode,
                "size": a.log.size,
                "mtime": _iso(a.log.mtime, offset),
                "written_by_pid": writer,
                "problem": a.log.problem,
            }
        ready = {"seen": None, "at": None, "source": None}
        if a.ready is not None:
            ready = {
                "seen": a.ready.seen,
                "at": _iso(a.ready.at, offset),
                "source": a.ready.source,
                "anchor": a.ready.anchor,
            }
        services.append(
            {
                "host": a.host,
                "service": a.service,
                "verdict": a.verdict.value,
                "summary": a.summary,
                "process": process,
                "log": log,
                "ready": ready,
                "checked_at": _iso(a.checked_at, offset),
            }
        )
    return {"schema": 1, "services": services}
