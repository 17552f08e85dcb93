"""The fleet screen with fixed reports: rows, order, ages, failures, drill-in, filter, snapshot.

Nothing here connects anywhere: each host's round trip is a stand-in that
returns reports built from made-up but self-consistent probes (the real
:func:`assess` and :func:`build_report` on them), the transport a stand-in that
says ``connected``, and the clock is frozen, so the screen is the same every run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from support.reports import build_report
from support.sessions import Answer, Answers, StandIns
from support.wait import until
from test_app_snapshots import ConnectedTransport, utc  # noqa: F401 - utc is a fixture
from textual.pilot import Pilot

from tui.app.app import BabysitApp
from tui.app.fleet_rows import COLUMNS, Fleet, fleet_row, natural_key
from tui.app.screens.fleet import FleetScreen
from tui.app.screens.host import HostScreen
from tui.config import Host, Service
from tui.core.assess import assess
from tui.core.follow import FileInfo
from tui.core.logcursor import Row
from tui.core.report import ProbeDetails, ServiceReport
from tui.core.runs import Assessment, ServiceProbe, unknown
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.session.retry import retry_delay
from tui.session.state import HostState, probe_failure

SIZE = (160, 30)
#: 2026-01-12 09:24:31 UTC, shown as the header's clock.
NOW = 1768209871.0
DEV = 64768

HOSTS = """\
hosts:
  kpro5:
    ssh: root@10.0.0.15
    services:
      dp:
        engine: sglang
        instances: 8
        log: /workspace/logs/sglang_gpu{i}.log
        port: "{30000 + i}"
        gpus: ["{i}"]
  b200-ct:
    pct: {node: root@pve1, vmid: 105}
    services:
      qwen: {engine: sglang, log: /root/qwen.log, port: 30000, gpus: [0, 1]}
      embed: {engine: vllm, log: /root/embed.log, port: 8000}
  gone:
    ssh: root@10.0.0.99
    services:
      llama: {engine: vllm, log: /root/llama.log, port: 8000}
groups:
  gpu: [kpro5, b200-ct]
"""
CONFIG = parse_config(HOSTS)

DECODE = (
    "[2026-01-12 {hms} TP0] Decode batch. #running-req: {run}, #token: 9000, "
    "token usage: 0.{kv:02d}, accept len: 3.{a:02d}, gen throughput (token/s): {tps}, "
    "#queue-req: {queue}\n"
)
GPU_LINE = "{i}, NVIDIA B200, {power}, 1000.00, 97, 150000, 183359, 61\n"


def hms(ts: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(ts))


def decode_tail(seed: int, last: float, *, lines: int = 12, step: float = 2.0) -> bytes:
    """SGLang decode lines, the last one written at ``last``; values vary with ``seed``."""
    out = []
    for n in range(lines):
        at = last - step * (lines - 1 - n)
        tps = 40 + (seed * 7 + n * 5) % 30 + (n % 3) * 4.5
        out.append(
            DECODE.format(
                hms=hms(at),
                run=8 + seed % 5,
                kv=30 + (seed * 11) % 60,
                a=(seed * 13 + n) % 90,
                tps=f"{tps:.2f}",
                queue=seed % 3,
            )
        )
    return "".join(out).encode()


def sglang_answer(
    host: str,
    service: Service,
    *,
    pid: int,
    ready: bool | None = True,
    writes: bool = True,
    running: bool = True,
    last_line: float = NOW - 1,
    seed: int = 0,
    power: Sequence[float] = (),
) -> tuple[Assessment, ProbeDetails]:
    """A report of ``service`` from a probe whose run is ``pid`` (or none)."""
    inode = 9000 + pid % 1000
    started = NOW - 3 * 3600 - pid % 600
    runs = []
    if running:
        runs.append(
            {
                "pid": pid,
                "ppid": 1,
                "start_ticks": 100 + pid,
                "start_time": started,
                "user": "root",
                "cmdline": ["python3", "-m", "sglang.launch_server"],
                "cwd": "/root",
                "sources": ["port", "writes log"],
                "files": [
                    {
                        "fd": 1,
                        "path": service.log,
                        "dev": DEV,
                        "inode": inode if writes else inode - 1,
                        "deleted": not writes,
                        "write": True,
                        "at_log": True,  # the log, or its deleted former self
                    }
                ],
                "members": [],
                "ready": {
                    "seen": ready,
                    "source": "timestamps",
                    "anchor": 0,
                    "at": started + 200 if ready else None,
                },
            }
        )
    tail = decode_tail(seed, last_line) if running and writes else b""
    log = {
        "path": service.log,
        "regular": True,
        "dev": DEV,
        "inode": inode,
        "size": 4_000_000,
        "mtime": last_line,
        "last_ts": last_line,
    }
    data = {"name": service.name, "log": log, "runs": runs, "unreadable": []}
    top = {"boot_id": "b0e1c2d3", "now": NOW, "utc_offset": 0}
    assessment = assess(ServiceProbe.from_json(host, service.engine.value, top, data))
    gpu_csv = None
    if power:
        gpus = "".join(
            GPU_LINE.format(i=i, power=f"{p:.2f}") for i, p in zip(service.gpus, power, strict=True)
        )
        gpu_csv = {"gpus_status": 0, "gpus": gpus, "apps_status": 0, "apps": f"{pid}, 150000\n"}
    details = ProbeDetails(tail=tail, tail_offset=4_000_000 - len(tail), gpu_csv=gpu_csv)
    return assessment, details


def sglang_report(host: str, service: Service, **kwargs: Any) -> ServiceReport:
    """The report the facts make of :func:`sglang_answer` alone."""
    assessment, details = sglang_answer(host, service, **kwargs)
    return build_report(
        assessment,
        details,
        engine=service.engine.value,
        intended=None,
        gpu_indexes=service.gpus,
    )


def failed_report(host: str, service: Service, reason: str) -> ServiceReport:
    """What report_host gives for a host it could not reach."""
    return build_report(
        unknown(host, service.name, reason, NOW),
        ProbeDetails(),
        engine=service.engine.value,
        intended=None,
    )


def fixed_answers(host: Host, services: Sequence[Service]) -> list[Answer]:
    """Every host's answer: kpro5 mostly live, b200-ct starting and dead, gone unreachable."""
    out = []
    for service in services:
        if host.name == "gone":
            out.append(
                unknown(
                    host.name,
                    service.name,
                    "ssh root@10.0.0.99: connection refused on port 22 (is sshd running there?)",
                    NOW,
                )
            )
            continue
        index = int(service.name.rpartition("-")[2]) if service.name.startswith("dp-") else 9
        if service.name == "dp-3":
            # A run that writes a deleted file: STALE.
            out.append(sglang_answer(host.name, service, pid=41003, writes=False))
        elif service.name == "dp-6":
            # Its decode lines stopped 3 minutes ago.
            out.append(
                sglang_answer(
                    host.name, service, pid=41006, seed=6, last_line=NOW - 180, power=[182.0]
                )
            )
        elif service.name == "embed":
            out.append(
                sglang_answer(host.name, service, pid=0, running=False, last_line=NOW - 3600)
            )
        elif service.name == "qwen":
            out.append(
                sglang_answer(
                    host.name, service, pid=52001, ready=False, seed=3, power=[402.0, 398.5]
                )
            )
        else:
            out.append(
                sglang_answer(
                    host.name, service, pid=41000 + index, seed=index, power=[600.0 + 7 * index]
                )
            )
    return out


class QuietFollower:
    """A host screen's follower that never yields a row (the drill-in only needs the screen)."""

    def __init__(self, service: Service) -> None:
        self.file = FileInfo(service.log, DEV, 1, 0, NOW)

    async def rows(self) -> AsyncIterator[list[Row]]:
        await asyncio.Event().wait()
        yield []


def make_app(
    names: Sequence[str] = (), answers: Answers = fixed_answers, interval: float = 2.0
) -> BabysitApp:
    from tui.commands.status import select

    fleet = Fleet.of(select(CONFIG, list(names)), "all hosts")
    sessions = StandIns(
        answers=answers,
        follower=lambda session, cursor, pid: QuietFollower(session.service),
        transport=ConnectedTransport(),
        clock=lambda: NOW,
        interval=interval,
    )
    return BabysitApp(fleet, sessions=sessions, clock=lambda: NOW)


def fleet_of(app: BabysitApp) -> FleetScreen:
    screen = app.screen
    assert isinstance(screen, FleetScreen)
    return screen


async def answered(pilot: Pilot[Any]) -> None:
    """Until every host has answered once."""

    def all_answered() -> bool:
        screen = pilot.app.screen
        return isinstance(screen, FleetScreen) and all(screen.answers.values())

    await until(all_answered, "every host's first answer", pilot=pilot)
    await pilot.pause()


def table_rows(screen: FleetScreen) -> list[list[str]]:
    return [[cell.text for cell in screen.rows[key].cells] for key in screen.table.keys]


# --------------------------------------------------------------------------- pure


@pytest.mark.unit
def test_rows_sort_worst_first_then_by_name_with_numbers_in_order() -> None:
    keys = ["kpro5/dp-10", "kpro5/dp-2", "kpro5/dp-1"]
    assert sorted(keys, key=natural_key) == ["kpro5/dp-1", "kpro5/dp-2", "kpro5/dp-10"]
    assert [retry_delay(n, 2.0) for n in (1, 2, 3, 4, 9)] == [4.0, 8.0, 16.0, 30.0, 30.0]


@pytest.mark.unit
def test_a_live_row_shows_its_run_metrics_and_the_age_of_its_last_line() -> None:
    host = CONFIG.hosts["kpro5"]
    service = host.services["dp-2"]
    report = sglang_report(host.name, service, pid=41002, seed=2, power=[614.0])
    state = HostState().answered([report], NOW)
    row = fleet_row(service, state, NOW + 1, interval=2.0)
    cells = dict(zip((c.key for c in COLUMNS), row.cells, strict=True))
    assert cells["verdict"].text == "● LIVE"
    assert cells["verdict"].tones == ("live",)
    assert cells["pid"].text == "41002"
    assert cells["up"].text == "3h03m"
    assert cells["gen"].text.endswith(" 58")
    assert cells["accept"].text == "3.37"
    assert cells["queue"].text == "10/2"
    assert cells["kv"].text == "52%"
    assert cells["gpu"].text == "614/1000"
    assert cells["log"].text == "2 s"
    assert row.severity == Verdict.LIVE.severity


@pytest.mark.unit
def test_old_values_carry_their_age_and_a_failed_host_says_when_it_tries_again() -> None:
    host = CONFIG.hosts["kpro5"]
    service = host.services["dp-6"]
    report = sglang_report(host.name, service, pid=41006, seed=6, last_line=NOW - 180)
    state = HostState().answered([report], NOW)
    row = fleet_row(service, state, NOW, interval=2.0)
    gen = row.cells[4]
    assert gen.age == "3m"
    assert gen.tones == ("old",)
    assert row.cells[9].text == "3 min"

    reason = "ssh root@10.0.0.15: connection refused on port 22 (is sshd running there?)"
    failed = state.failed(reason, NOW + 30, retry_delay(2, 2.0))
    row = fleet_row(service, failed, NOW + 30, interval=2.0)
    assert row.verdict == "UNKNOWN"
    assert row.severity == Verdict.UNKNOWN.severity
    assert row.cells[-1].text == "unreachable — retrying in 8 s"
    assert row.cells[2].text == "41006"
    assert row.cells[2].tones == ("old",)
    assert "connection refused on port 22" in row.detail
    assert "last answer 30 s ago" in row.detail
    later = fleet_row(service, failed, NOW + 35, interval=2.0)
    assert later.cells[-1].text == "unreachable — retrying in 3 s"
    asking = fleet_row(service, failed.asking(NOW + 38), NOW + 41, interval=2.0)
    assert asking.cells[-1].text == "unreachable — asking again (3 s)"


@pytest.mark.unit
def test_a_slow_host_marks_its_rows_old_before_they_turn_unknown() -> None:
    host = CONFIG.hosts["kpro5"]
    service = host.services["dp-0"]
    state = HostState().answered([sglang_report(host.name, service, pid=41000)], NOW)
    row = fleet_row(service, state.asking(NOW + 2), NOW + 9, interval=2.0)
    assert row.verdict == "LIVE"
    assert row.cells[1].tones == ("live", "old")
    assert row.cells[-1].text == "no answer for 7 s"


@pytest.mark.unit
def test_a_failed_round_trip_is_told_from_an_answer() -> None:
    service = CONFIG.hosts["gone"].services["llama"]
    reason = "ssh root@10.0.0.99: no answer within 5 s (connect timeout)"
    assert probe_failure([failed_report("gone", service, reason)]) == reason
    live = sglang_report("kpro5", CONFIG.hosts["kpro5"].services["dp-0"], pid=1)
    assert probe_failure([live]) is None
    assert probe_failure([]) is None


# --------------------------------------------------------------------------- screen


@pytest.mark.integration
async def test_rows_come_worst_first_and_each_host_only_marks_its_own() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        screen = fleet_of(app)
        rows = table_rows(screen)
        assert [r[0] for r in rows] == [
            "gone/llama",
            "kpro5/dp-3",
            "b200-ct/embed",
            "b200-ct/qwen",
            *(f"kpro5/dp-{i}" for i in (0, 1, 2, 4, 5, 6, 7)),
        ]
        assert [r[1] for r in rows[:4]] == ["? UNKNOWN", "◌ STALE", "✖ DEAD", "◐ STARTING"]
        assert rows[0][-1].startswith("unreachable — retrying in 4 s")
        assert all(r[1] == "● LIVE" for r in rows[4:])


@pytest.mark.integration
async def test_enter_opens_the_host_screen_and_escape_comes_back() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        screen = fleet_of(app)
        await pilot.press("down", "down", "down")
        assert screen.table.selected == "b200-ct/qwen"
        await pilot.press("enter")
        await pilot.pause()
        host_screen = app.screen
        assert isinstance(host_screen, HostScreen)
        assert (host_screen.host.name, host_screen.service.name) == ("b200-ct", "qwen")
        # One session: the host screen shows the row's report, and offers its guarded kill.
        await pilot.pause(0.1)
        assert host_screen.assessment is not None
        assert host_screen.assessment.verdict is Verdict.STARTING
        assert screen.rows["b200-ct/qwen"].verdict == "STARTING"
        assert host_screen.check_action("kill", ()) is True
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert screen.table.selected == "b200-ct/qwen"
        # Back on the fleet, Escape does nothing more.
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen


@pytest.mark.integration
async def test_slash_filters_rows_by_name_or_verdict_and_escape_clears() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await answered(pilot)
        screen = fleet_of(app)
        await pilot.press("slash", *"dp-1")
        await pilot.pause()
        assert screen.table.keys == ["kpro5/dp-1"]
        await pilot.press("enter")
        await pilot.pause()
        assert screen.table.has_focus
        await pilot.press("x")  # keys go to the table now, not the filter
        assert screen.filter_words == ("dp-1",)
        await pilot.press("slash", "ctrl+u", *"de")
        await pilot.pause()
        assert screen.table.keys == ["b200-ct/embed"]  # by its verdict, DEAD
        await pilot.press("ctrl+u", *"li kp")
        await pilot.pause()
        assert len(screen.table.keys) == 7  # kpro5's LIVE rows: dp-3 is STALE
        await pilot.press("escape")
        await pilot.pause()
        assert len(screen.table.keys) == 11
        assert not screen.filter_words


@pytest.mark.integration
async def test_a_probe_that_breaks_marks_its_host_and_is_started_again() -> None:
    calls: list[str] = []

    async def answers(host: Host, services: Sequence[Service]) -> list[Answer]:
        calls.append(host.name)
        if host.name == "b200-ct":
            raise RuntimeError("a bug")
        return fixed_answers(host, services)

    app = make_app(["kpro5", "b200-ct"], answers=answers, interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = fleet_of(app)
        await until(
            lambda: calls.count("b200-ct") >= 2 and screen.answers["kpro5"] >= 3,
            "b200-ct asked twice and kpro5's third answer",
            pilot=pilot,
        )
        row = screen.rows["b200-ct/qwen"]
        assert row.verdict == "UNKNOWN"
        assert "the probe crashed: RuntimeError: a bug" in row.detail
        assert row.cells[-1].text.startswith("probe failed — ")
        assert screen.rows["kpro5/dp-0"].verdict == "LIVE"
        assert calls.count("b200-ct") >= 2  # started again after its retry delay


@pytest.mark.integration
async def test_under_a_host_screen_its_host_is_asked_only_for_that_service() -> None:
    asked: list[tuple[str, ...]] = []

    def answers(host: Host, services: Sequence[Service]) -> list[Answer]:
        asked.append(tuple(s.name for s in services))
        return fixed_answers(host, services)

    app = make_app(["kpro5"], answers=answers, interval=0.05)
    async with app.run_test(size=SIZE) as pilot:
        screen = fleet_of(app)
        await answered(pilot)
        assert len(asked[-1]) == 8  # the fleet asks for every service of kpro5
        await pilot.press("enter")
        opened = app.screen
        assert isinstance(opened, HostScreen)
        name = opened.service.name
        # Once the fleet is covered, each round trip asks for the shown service alone.
        await until(lambda: asked[-1] == (name,), "a round trip for the host screen", pilot=pilot)
        count = len(asked)
        await until(lambda: len(asked) >= count + 4, "four more round trips", pilot=pilot)
        assert set(asked[count:]) == {(name,)}
        await pilot.press("escape")
        await until(lambda: len(asked[-1]) == 8, "the fleet asking for all again", pilot=pilot)
        assert app.screen is screen


@pytest.mark.integration
@pytest.mark.usefixtures("utc")
def test_fleet_screen_snapshot(snap_compare: Any) -> None:
    """Every verdict's colour, sparklines, ages, an unreachable host, the detail line."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=answered)
