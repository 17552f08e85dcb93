"""The 2-second read: the host screen for every verdict, and the fleet with every verdict in
it, at 80x24, 120x36 and 200x50, with and without colour (``NO_COLOR``).

Each verdict must read apart at a glance: its glyph, word and colour in the banner's first
line and the fleet's verdict column, a degraded LIVE (``LIVE ⚠ N``) apart from a healthy
one, and without colour the glyph and the word alone. The screens are the real ones over
fixed answers (tests/test_app_snapshots.py's made-up probe of kpro5/qwen, the fleet of
tests/test_app_fleet.py), a frozen clock, UTC; nothing connects anywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from test_app_fleet import answered
from test_app_fleet import make_app as make_fleet
from test_app_snapshots import INODE, NOW, OLD_INODE, make_app, probed, rows_shown, utc  # noqa: F401 - utc is a fixture
from test_layout_snapshots import drop_speculative
from test_wedged_snapshots import make_host_app

from tui.app.app import BabysitApp
from tui.config import Host, Service
from tui.core.runs import unknown
from tui.core.serving import WedgeCause
from tui.core.verdicts import Verdict

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("utc")]

SIZES = {"80x24": (80, 24), "120x36": (120, 36), "200x50": (200, 50)}


def degraded(monkeypatch: pytest.MonkeyPatch) -> BabysitApp:
    """A LIVE run that dropped the speculative decoding its launch asks for."""
    return drop_speculative(monkeypatch)


def ambiguous() -> BabysitApp:
    live = probed(writes=INODE, ready=True)
    assert live.run is not None
    root = dataclasses.replace(live.run.root, pid=live.run.root.pid + 7)
    other = dataclasses.replace(live.run, root=root, members=())
    return make_app(
        dataclasses.replace(
            live,
            verdict=Verdict.AMBIGUOUS,
            summary="2 candidate runs: pid 67115 and pid 67122 both write this log",
            run=None,
            others=(live.run, other),
        )
    )


#: Each verdict's host screen (degraded LIVE too), made inside the test.
HOST_SCREENS: dict[str, Callable[[pytest.MonkeyPatch], BabysitApp]] = {
    "live": lambda _: make_app(probed(writes=INODE, ready=True)),
    "live-degraded": degraded,
    "starting": lambda _: make_app(probed(writes=INODE, ready=False)),
    "wedged": lambda _: make_host_app(WedgeCause.STALL),
    "stale": lambda _: make_app(probed(writes=OLD_INODE, ready=None)),
    "dead": lambda _: make_app(probed(writes=None, ready=None, mtime=NOW - 180)),
    "no-log": lambda _: make_app(probed(writes=INODE, ready=True, log_inode=None)),
    "ambiguous": lambda _: ambiguous(),
    "unknown": lambda _: make_app(
        unknown("kpro5", "qwen", "ssh root@10.0.0.15: connection refused on port 22", NOW - 1)
    ),
}


def colour_mode(colour: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if colour == "no-colour":
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.mark.parametrize("colour", ["colour", "no-colour"])
@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("state", list(HOST_SCREENS))
def test_the_host_screen_reads_its_verdict_at_a_glance(
    state: str, size: str, colour: str, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    colour_mode(colour, monkeypatch)
    app = HOST_SCREENS[state](monkeypatch)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=rows_shown)


def every_verdict(host: Host, services: list[Service]) -> list[Any]:
    """The fleet's fixed answers with the verdicts they lack: kpro5/dp-4 AMBIGUOUS, dp-5
    NO-LOG, dp-6 WEDGED (as the wedged snapshots stall it)."""
    from test_wedged_snapshots import wedged_answers

    answers = wedged_answers(host, services)
    for index, service in enumerate(services):
        if not isinstance(answers[index], tuple):  # a host that does not answer
            continue
        assessment, details = answers[index]
        if service.name == "dp-4" and assessment.run is not None:
            run = assessment.run
            other = dataclasses.replace(
                run, root=dataclasses.replace(run.root, pid=run.root.pid + 100), members=()
            )
            answers[index] = (
                dataclasses.replace(
                    assessment,
                    verdict=Verdict.AMBIGUOUS,
                    summary="2 candidate runs: pid 41004 and pid 41104 both write this log",
                    run=None,
                    others=(run, other),
                ),
                details,
            )
        elif service.name == "dp-5" and assessment.log is not None:
            log = dataclasses.replace(assessment.log, exists=False, inode=None)
            answers[index] = (
                dataclasses.replace(
                    assessment,
                    verdict=Verdict.NO_LOG,
                    summary=f"pid 41005 runs, but {log.path} does not exist",
                    log=log,
                ),
                details,
            )
    return answers


@pytest.mark.parametrize("colour", ["colour", "no-colour"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_fleet_reads_every_verdict_apart(
    size: str, colour: str, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    colour_mode(colour, monkeypatch)
    app = make_fleet(answers=every_verdict)
    assert snap_compare(app, terminal_size=SIZES[size], run_before=answered)


def test_the_fleet_has_every_verdict() -> None:
    """The fleet above holds each verdict at least once (else a look goes untested)."""
    from test_app_fleet import CONFIG

    seen = set()
    for host in CONFIG.hosts.values():
        services = list(host.services.values())
        for answer in every_verdict(host, services) if host.name != "gone" else ():
            seen.add((answer[0] if isinstance(answer, tuple) else answer).verdict)
    seen.add(Verdict.UNKNOWN)  # the host "gone" does not answer
    assert seen == set(Verdict), set(Verdict) - seen
