"""A run's startup and the orphans on its GPUs in every view's words: the banner, the
fleet's row, `babysit status`.

Each view is given a real assessment of a made-up but self-consistent probe of
kpro5/qwen (STARTING: its run is not ready; DEAD: no run, its log remains) and a report
built from it with a :class:`Startup` made by :func:`startup` itself (this run's marks,
and the service's run history of a day before) and :class:`ServiceGpus` with orphans,
as the service's facts hand them to every view.
"""

from __future__ import annotations

import dataclasses

import pytest
from support.reports import build_report
from test_app_fleet import CONFIG as FLEET
from test_app_fleet import NOW as FLEET_NOW
from test_app_fleet import sglang_report
from test_app_snapshots import HOSTS, INODE, NOW, PID, STARTED, probed

from tui.app.fleet_rows import COLUMNS, STARTUP_COLUMNS, Cell, fleet_row
from tui.app.widgets.run_banner import banner_lines, banner_rows
from tui.commands.status import render
from tui.core.gpu import Attribution, Orphan, ServiceGpus
from tui.core.hostclock import HostWords
from tui.core.orphan_words import (
    COMMAND_CHARS,
    command_short,
    orphan_line,
    orphans_note,
    orphans_words,
)
from tui.core.phases import LAUNCHING, PhaseMark, Startup, StartupRecord, startup
from tui.core.report import ProbeDetails, ServiceReport
from tui.core.runs import Assessment
from tui.core.startup_words import (
    eta_clock,
    last_run_total,
    progress_short,
    ready_in,
    startup_cell,
    startup_line,
)
from tui.hostsfile import parse_config
from tui.session.state import HostState

pytestmark = pytest.mark.unit

BOOT, START_TICKS = "b0e1c2d3", 123456
SERVICE = parse_config(HOSTS).hosts["kpro5"].services["qwen"]
#: The service's last run, a day before: 40 s launching, 1m 40s loading weights, 20 s
#: allocating the KV cache, 30 s capturing CUDA graphs, 5 s warming up; ready in 3m 15s.
DAY_BEFORE = NOW - 86400
LAST_RUN = StartupRecord(
    BOOT,
    51000,
    1000,
    DAY_BEFORE,
    (
        ("loading weights", DAY_BEFORE + 40),
        ("allocating KV cache", DAY_BEFORE + 140),
        ("capturing CUDA graphs", DAY_BEFORE + 160),
        ("warming up", DAY_BEFORE + 190),
    ),
    ready_at=DAY_BEFORE + 195,
)
#: Seconds this run has been loading weights: within its last run's 100 s, and past twice.
ON_TIME, OVERDUE = 90.0, 250.0
#: What the orphans' server left on GPUs 0 and 1 (19.1 GiB each), started 09:10:02.
ORPHANS = (
    Orphan(67201, 99001, 19558.0, 0, ("sglang::scheduler_TP0",), NOW - 869, 1),
    Orphan(67202, 99002, 19558.0, 1, ("sglang::scheduler_TP1",), NOW - 869, 1, worker_of="qwen"),
)


def loading(elapsed: float, *, history: tuple[StartupRecord, ...] = (LAST_RUN,)) -> Startup:
    """This run loading its weights (shard 3 of 8) for ``elapsed`` seconds at NOW."""
    mark = PhaseMark("loading weights", 4096, at=NOW - elapsed, done=3, total=8)
    return startup(
        started=STARTED,
        marks=[mark],
        ready_at=None,
        ready=False,
        history=history,
        identity=(BOOT, PID, START_TICKS),
        now=NOW,
    )


def ready_after(seconds: float) -> Startup:
    return startup(
        started=STARTED,
        marks=[PhaseMark("loading weights", 4096, at=STARTED + 30)],
        ready_at=STARTED + seconds,
        ready=True,
        history=(LAST_RUN,),
        identity=(BOOT, PID, START_TICKS),
        now=NOW,
    )


def orphan_gpus(orphans: tuple[Orphan, ...] = ORPHANS) -> ServiceGpus:
    return ServiceGpus((), Attribution.NO_SERVICE_PIDS, (), None, "no live run", orphans=orphans)


def starting() -> Assessment:
    return probed(writes=INODE, ready=False)


def dead() -> Assessment:
    return probed(writes=None, ready=None, mtime=NOW - 180)


def report_of(
    assessment: Assessment, s: Startup | None = None, gpus: ServiceGpus | None = None
) -> ServiceReport:
    report = build_report(assessment, ProbeDetails(), engine="sglang", intended=None)
    return dataclasses.replace(report, startup=s, gpus=gpus)


WORDS = HostWords(0, NOW)

# --------------------------------------------------------------------------- words


def test_a_phase_on_time_says_its_progress_how_long_the_eta_and_the_last_run() -> None:
    s = loading(ON_TIME)
    assert (s.phase, s.done, s.total, s.overdue) == ("loading weights", 3, 8, None)
    assert s.eta == NOW + 10 + 20 + 30 + 5
    assert startup_line(s, WORDS) == (
        "loading weights (3 of 8) for 1m 30s; ready by about 09:25 (the last run took 1m 40s "
        "here); the last run was ready after 3m 15s"
    )
    assert startup_cell(s, WORDS) == "loading weights 3/8 · ETA 09:25"
    assert startup_line(s, WORDS, began=True).endswith("; the phase began 09:23:01")


def test_a_phase_past_twice_its_last_time_is_said_overdue() -> None:
    s = loading(OVERDUE)
    assert s.overdue == 100
    assert startup_line(s, WORDS).startswith(
        "loading weights (3 of 8) has run 4m 10s, more than twice the 1m 40s the last run took"
    )
    assert startup_cell(s, WORDS) == "loading weights 3/8 · 4m 10s, overdue"


def test_without_a_last_run_a_phase_says_how_long_it_has_run() -> None:
    s = loading(ON_TIME, history=())
    assert s.eta is None and last_run_total(s) is None
    assert startup_line(s, WORDS) == "loading weights (3 of 8) for 1m 30s"
    assert startup_cell(s, WORDS) == "loading weights 3/8 · 1m 30s"


def test_a_phase_without_progress_or_a_start_is_said_by_its_name() -> None:
    s = Startup(LAUNCHING, None)
    assert progress_short(s) == "launching"
    assert startup_cell(s, WORDS) == "launching"


def test_the_eta_is_said_on_the_hosts_clock_to_the_minute() -> None:
    assert eta_clock(HostWords(3600, NOW), NOW + 65) == "10:25"


def test_a_ready_run_says_how_long_its_startup_took() -> None:
    assert ready_in(ready_after(252)) == 252
    assert ready_in(loading(ON_TIME)) is None


def test_orphans_are_counted_with_their_memory_and_gpus() -> None:
    assert orphans_words(ORPHANS) == "2 orphans hold 38.2 GiB on GPUs 0, 1"
    assert orphans_note(ORPHANS) == "2 orphans · 38 GiB"
    one = (dataclasses.replace(ORPHANS[0], memory_mib=None, gpu=None),)
    assert orphans_words(one) == "1 orphan holds memory on the service's GPUs"
    assert orphans_note(one) == "1 orphan"


def test_each_orphan_in_one_line_with_its_command_cut_and_redacted() -> None:
    assert orphan_line(ORPHANS[1], WORDS) == (
        "pid 67202 · 19.1 GiB on GPU 1 · started 09:10:02 (14 min ago) · "
        "sglang::scheduler_TP1 · a worker of qwen"
    )
    long = ("python3", "-m", "sglang.launch_server", "--api-key", "s3cret", *["--x"] * 40)
    shown = command_short(long)
    assert "s3cret" not in shown and len(shown) == COMMAND_CHARS and shown.endswith("…")
    hostile = dataclasses.replace(ORPHANS[0], cmdline=("a\x1b[2Jb",), memory_mib=None)
    assert orphan_line(hostile, WORDS) == (
        "pid 67201 · on GPU 0 (memory unknown) · started 09:10:02 (14 min ago) · 'a\\x1b[2Jb'"
    )


# --------------------------------------------------------------------------- the banner


def test_a_starting_banner_says_the_phase_under_the_summary() -> None:
    a = starting()
    rows = banner_rows(a, NOW, startup=loading(ON_TIME))
    assert rows[0][0].startswith("◐ STARTING  pid 67115 +1")
    assert rows[1] == (a.summary, False)
    assert rows[2] == (startup_line(loading(ON_TIME), WORDS), False)


def test_an_overdue_phase_is_a_warning_line() -> None:
    rows = banner_rows(starting(), NOW, startup=loading(OVERDUE))
    assert rows[2][1] is True and "more than twice" in rows[2][0]


def test_the_phase_ages_as_the_banner_ages() -> None:
    assert "for 1m 40s;" in banner_lines(starting(), NOW + 10, startup=loading(ON_TIME))[2]


def test_a_live_banner_says_how_long_its_startup_took() -> None:
    live = probed(writes=INODE, ready=True)  # ready at 09:24:12
    lines = banner_lines(live, NOW, startup=ready_after(246))
    assert "ready 09:24:12 (in 4m 06s)" in lines[0]
    assert len(lines) == 2  # no startup line once ready


def test_a_dead_banner_names_the_orphans_and_the_kill_key() -> None:
    rows = banner_rows(dead(), NOW, orphans=ORPHANS, offers_kill=True)
    assert rows[-1] == ("2 orphans hold 38.2 GiB on GPUs 0, 1 — K to kill", True)
    read_only = banner_lines(dead(), NOW, orphans=ORPHANS, offers_kill=False)
    assert read_only[-1] == "2 orphans hold 38.2 GiB on GPUs 0, 1"


def test_a_live_banner_names_orphans_but_not_a_kill_of_them() -> None:
    live = probed(writes=INODE, ready=True)
    lines = banner_lines(live, NOW, orphans=ORPHANS, offers_kill=True)
    assert lines[-1] == "2 orphans hold 38.2 GiB on GPUs 0, 1"


def test_without_startup_or_orphans_the_banner_is_as_it_is() -> None:
    assert len(banner_lines(starting(), NOW)) == 2
    assert len(banner_lines(dead(), NOW, offers_kill=True)) == 2


# --------------------------------------------------------------------------- the fleet's row


def cells_of(report: ServiceReport, now: float = NOW) -> dict[str, Cell]:
    row = fleet_row(SERVICE, HostState().answered([report], now), now, interval=2.0)
    return dict(zip((c.key for c in COLUMNS), row.cells, strict=True))


def detail_of(report: ServiceReport) -> str:
    return fleet_row(SERVICE, HostState().answered([report], NOW), NOW, interval=2.0).detail


def test_a_starting_row_says_its_phase_across_the_serving_columns() -> None:
    report = report_of(starting(), loading(ON_TIME))
    cells = cells_of(report)
    first, *rest = STARTUP_COLUMNS
    assert cells[first] == Cell("loading weights 3/8 · ETA 09:25", (), span=len(STARTUP_COLUMNS))
    assert all(cells[key].text == "" for key in rest)
    assert f"startup: {startup_line(loading(ON_TIME), WORDS)}" in detail_of(report)


def test_an_overdue_row_is_in_the_warning_tone() -> None:
    cells = cells_of(report_of(starting(), loading(OVERDUE)))
    assert cells[STARTUP_COLUMNS[0]].tones == ("warning",)


def test_a_row_without_a_startup_keeps_its_columns() -> None:
    cells = cells_of(report_of(starting()))
    assert all(cells[key].span == 1 for key in STARTUP_COLUMNS)


def test_a_starting_row_with_serving_figures_keeps_them_and_notes_its_phase() -> None:
    host = FLEET.hosts["b200-ct"]
    service = host.services["qwen"]
    figures = sglang_report(host.name, service, pid=52001, ready=False, seed=3)
    report = dataclasses.replace(figures, startup=loading(ON_TIME), hints=())
    state = HostState().answered([report], FLEET_NOW)
    row = fleet_row(service, state, FLEET_NOW, interval=2.0)
    cells = dict(zip((c.key for c in COLUMNS), row.cells, strict=True))
    assert cells["verdict"].text == "◐ STARTING"
    assert all(cells[key].span == 1 and cells[key].text != "" for key in STARTUP_COLUMNS)
    assert cells["note"].text.startswith("loading weights 3/8 · ")


def test_a_dead_row_with_orphans_notes_them() -> None:
    report = report_of(dead(), gpus=orphan_gpus())
    cells = cells_of(report)
    assert cells["verdict"].text == "✖ DEAD"
    assert cells["note"] == Cell("2 orphans · 38 GiB", ("bad",))
    assert "2 orphans hold 38.2 GiB on GPUs 0, 1" in detail_of(report)


def test_a_starting_row_with_orphans_notes_them_as_a_warning() -> None:
    cells = cells_of(report_of(starting(), loading(ON_TIME), orphan_gpus()))
    assert cells["note"] == Cell("2 orphans · 38 GiB", ("warning",))


# --------------------------------------------------------------------------- babysit status


def test_status_text_has_a_startup_line_for_a_run_that_is_not_ready() -> None:
    lines = render([report_of(starting(), loading(ON_TIME))]).splitlines()
    assert lines[0].startswith("kpro5/qwen  ◐ STARTING ")
    assert lines[1] == (
        "            startup: loading weights (3 of 8) for 1m 30s; ready by about 09:25 (the "
        "last run took 1m 40s here); the last run was ready after 3m 15s; the phase began "
        "09:23:01"
    )


def test_status_text_has_no_startup_line_once_ready() -> None:
    live = probed(writes=INODE, ready=True)
    assert "startup:" not in render([report_of(live, ready_after(246))])


def test_status_text_lists_the_orphans() -> None:
    lines = render([report_of(dead(), gpus=orphan_gpus())]).splitlines()
    assert lines[1] == "            orphans: 2 orphans hold 38.2 GiB on GPUs 0, 1"
    assert lines[2] == (
        "              pid 67201 · 19.1 GiB on GPU 0 · started 09:10:02 (14 min ago) · "
        "sglang::scheduler_TP0"
    )
    assert lines[3].startswith("              pid 67202 · 19.1 GiB on GPU 1")
