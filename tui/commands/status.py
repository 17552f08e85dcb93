"""`babysit status [HOST[/SERVICE] …]`: one verdict per service, for people and scripts.

Exit status like monitoring plugins: 0 all live, 1 some starting, 2 some wedged,
stale, dead, no-log or ambiguous, 3 some unknown. Each host is probed once (one round
trip for all its services), all hosts at the same time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tui.cli import add_config_option, add_json_option, add_targets_option
from tui.config import Config, Host, MetricsSource, Service
from tui.core.hostclock import HostWords
from tui.core.orphan_words import orphan_line, orphans_words
from tui.core.sanitize import printable
from tui.core.service_report import ServiceReport, status_json
from tui.core.serving_words import canary_gist
from tui.core.startup_words import startup_line
from tui.core.verdict_words import BADGE_WIDTH, badge, why
from tui.core.verdicts import Verdict, worst_exit_status
from tui.hostsfile import load_config

if TYPE_CHECKING:
    from tui.session.sessions import Sessions

#: Seconds between the two /metrics readings of a ``metrics: prometheus`` service.
SCRAPE_GAP = 1.0


def configure(parser: argparse.ArgumentParser) -> None:
    add_targets_option(parser, "check")
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
    if args.json:
        print(json.dumps(status_json(reports), indent=2))
    else:
        print(render(reports), end="")
    return worst_exit_status(r.verdict for r in reports)


async def gather_reports(
    selection: list[tuple[Host, list[Service]]], sessions: Sessions | None = None
) -> list[ServiceReport]:
    """Each service's report from its session, probed once; all hosts at the same time.

    Hosts with ``metrics: prometheus`` services are asked twice, :data:`SCRAPE_GAP`
    apart: vLLM's throughput and acceptance are counters, and a rate needs two
    readings."""
    from tui.session.sessions import Sessions

    own = sessions is None
    sessions = sessions if sessions is not None else Sessions(long_lived=False, timeout=None)

    async def one(host: Host, services: list[Service]) -> list[ServiceReport]:
        watch = sessions.watch(host)
        await watch.refresh(services)
        if any(s.metrics is MetricsSource.PROMETHEUS for s in services):
            await asyncio.sleep(SCRAPE_GAP)
            await watch.refresh(services)
        now = sessions.clock()
        return [sessions.session(host, s).report(now) for s in services]

    try:
        results = await asyncio.gather(*(one(host, services) for host, services in selection))
    finally:
        if own:
            await sessions.close()
    return [r for group in results for r in group]


def render(reports: Sequence[ServiceReport]) -> str:
    """One line per service (its badge, ``● LIVE ⚠ 2`` for a LIVE run with hints, and
    why: a DEAD, STALE or failed STARTING run's cause, then its summary; a WEDGED summary
    begins with since when and the cause); under it, where a run that is not ready is in
    its startup, a WEDGED run's evidence, the service's GPUs (as the screen's metrics say
    them), the orphans on them (each one on a line of its own), the run's last canary,
    and its hints."""
    if not reports:
        return "no services in hosts.yaml\n"
    width = max(len(f"{r.assessment.host}/{r.assessment.service}") for r in reports)
    lines = []
    for report in reports:
        a = report.assessment
        name = f"{a.host}/{a.service}"
        under = f"{'':<{width}}  "
        said = badge(a.verdict, report.concerns)
        why_said = f"{printable(why(a.cause))}; " if a.cause is not None else ""
        lines.append(f"{name:<{width}}  {said:<{BADGE_WIDTH}}  {why_said}{printable(a.summary)}")
        words = HostWords(a.utc_offset, a.checked_at)
        startup = report.startup
        if startup is not None and not startup.ready and a.run is not None:
            lines.append(f"{under}startup: {startup_line(startup, words, began=True)}")
        if a.verdict is Verdict.WEDGED and a.wedged is not None:  # its summary says since
            lines.extend(f"{under}evidence: {printable(item)}" for item in a.wedged.evidence)
        if report.gpus is not None and report.gpus.gpus:  # as the screen's metrics say them
            lines.append(f"{under}gpus: {'; '.join(g.words for g in report.gpus.gpus)}")
        orphans = report.gpus.orphans if report.gpus is not None else ()
        if orphans:
            lines.append(f"{under}orphans: {orphans_words(orphans)}")
            lines.extend(f"{under}  {orphan_line(o, words)}" for o in orphans)
        if report.canary is not None:
            lines.append(f"{under}{canary_gist(report.canary, words)}")
        for hint in report.hints:
            lines.append(f"{under}hint: {printable(hint.message)}")
    return "\n".join(lines) + "\n"
