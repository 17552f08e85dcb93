"""Where a starting run is in its startup, and its ETA from the last run (tui/core/phases.py)."""

from __future__ import annotations

import pytest

from tui.core.answers import AnswerError, read
from tui.core.phases import (
    LAUNCHING,
    OVERDUE_MARGIN,
    READY,
    PhaseMark,
    Startup,
    StartupRecord,
    startup,
    startup_words,
)
from tui.core.runs import Ready
from tui.core.service_report import STARTUP_KEYS

pytestmark = pytest.mark.unit

T0 = 1_700_000_000.0
ME = ("boot-a", 4242, 9000)

#: The last run: 10 s launching, 60 s loading weights, 5 s KV cache, 20 s graphs, 5 s warm-up.
LAST = StartupRecord(
    "boot-a",
    1111,
    100,
    T0 - 1000,
    (
        ("loading weights", T0 - 990),
        ("allocating KV cache", T0 - 930),
        ("capturing CUDA graphs", T0 - 925),
        ("warming up", T0 - 905),
    ),
    ready_at=T0 - 900,
)


def mark(name: str, at: float | None, offset: int = 0, **kw: int) -> PhaseMark:
    return PhaseMark(name, offset, at, **kw)


def at(now: float, *marks: PhaseMark, history=(LAST,), ready=False, ready_at=None) -> Startup:
    return startup(
        started=T0,
        marks=marks,
        ready_at=ready_at,
        ready=ready,
        history=history,
        identity=ME,
        now=now,
    )


def test_a_record_spends_its_time_in_each_phase_launching_first():
    assert LAST.durations() == {
        LAUNCHING: 10.0,
        "loading weights": 60.0,
        "allocating KV cache": 5.0,
        "capturing CUDA graphs": 20.0,
        "warming up": 5.0,
    }


def test_a_run_that_never_got_ready_gives_no_durations():
    unfinished = StartupRecord("b", 1, 1, T0, (("loading weights", T0 + 5),))
    assert unfinished.durations() == {}


def test_before_any_phase_line_the_run_is_launching_since_its_start():
    s = at(T0 + 3)
    assert (s.phase, s.since) == (LAUNCHING, T0)
    assert s.passed == ((LAUNCHING, T0),)
    # 7 s of launching left, then the last run's 90 s of phases
    assert s.eta == pytest.approx(T0 + 3 + 7 + 90, abs=1e-6)
    assert s.overdue is None


def test_the_current_phase_is_the_last_phase_line_with_its_progress():
    s = at(
        T0 + 40,
        mark("loading weights", T0 + 10, done=3, total=8),
    )
    assert (s.phase, s.since, s.done, s.total) == ("loading weights", T0 + 10, 3, 8)
    # 30 s into a 60 s phase: 30 s left, then KV 5 + graphs 20 + warm-up 5
    assert s.eta == pytest.approx(T0 + 40 + 30 + 30, abs=1e-6)


def test_a_phase_past_twice_its_last_duration_is_overdue_and_the_eta_slides():
    s = at(T0 + 10 + 121, mark("loading weights", T0 + 10))
    assert s.overdue == 60.0
    # nothing left of this phase by the last run: only the later phases
    assert s.eta == pytest.approx(T0 + 131 + 30, abs=1e-6)
    words = startup_words(s, T0 + 131, lambda ts: "14:05")
    assert words == ("loading weights has run 2m 01s, more than twice the 1m 00s the last run took")


def test_exactly_twice_is_not_yet_overdue():
    assert at(T0 + 10 + 120, mark("loading weights", T0 + 10)).overdue is None


def test_a_short_phase_is_overdue_only_once_it_runs_the_margin_past_its_last_time():
    # the last run's KV cache took 5 s: twice is 10 s, the margin makes it 10 s too
    kv = mark("allocating KV cache", T0 + 70)
    assert at(T0 + 70 + 10, kv).overdue is None
    assert at(T0 + 70 + 10.5, kv).overdue == 5.0
    # a phase the stamps put at 0 s is overdue only past the margin itself
    quick = StartupRecord("b", 1, 1, T0 - 100, (("warming up", T0 - 90),), ready_at=T0 - 90)
    warm = mark("warming up", T0 + 1)
    assert at(T0 + 1 + OVERDUE_MARGIN, warm, history=(quick,)).overdue is None
    assert at(T0 + 1.5 + OVERDUE_MARGIN, warm, history=(quick,)).overdue == 0.0


def test_phases_the_run_skipped_are_not_counted_again():
    s = at(
        T0 + 50,
        mark("loading weights", T0 + 10),
        mark("capturing CUDA graphs", T0 + 45),
    )
    assert s.phase == "capturing CUDA graphs"
    # 5 s into 20 s of graphs, then warm-up; the KV cache the log never showed is not waited for
    # (it follows loading weights, which has passed)
    assert s.eta == pytest.approx(T0 + 50 + 15 + 5, abs=1e-6)


def test_a_phase_the_last_run_did_not_have_waits_for_every_phase_the_last_run_had():
    s = at(T0 + 20, mark("downloading weights", T0 + 10))
    assert s.phase == "downloading weights"
    assert s.overdue is None
    assert s.eta == pytest.approx(T0 + 20 + 90, abs=1e-6)


def test_this_runs_own_record_is_never_its_yardstick():
    mine = StartupRecord(*ME, T0, (("loading weights", T0 + 10),), ready_at=T0 + 20)
    s = at(T0 + 30, mark("loading weights", T0 + 10), history=(mine,))
    assert s.eta is None and s.last == {}


def test_the_newest_other_run_that_got_ready_is_the_yardstick():
    older = StartupRecord("boot-0", 7, 7, T0 - 5000, (), ready_at=T0 - 4000)
    failed = StartupRecord("boot-a", 8, 8, T0 - 500, (("loading weights", T0 - 490),))
    s = at(T0 + 1, history=(older, LAST, failed))
    assert s.last == LAST.durations()


def test_without_history_there_is_no_eta_and_the_words_say_only_where_it_is():
    s = at(T0 + 75, mark("loading weights", T0 + 10, done=3, total=8), history=())
    assert s.eta is None
    assert startup_words(s, T0 + 75, str) == "loading weights (3 of 8) for 1m 05s"


def test_the_words_give_the_eta_in_the_hosts_clock_and_the_last_runs_duration():
    s = at(T0 + 40, mark("loading weights", T0 + 10, done=3, total=8))
    words = startup_words(s, T0 + 40, lambda ts: "14:05")
    assert words == (
        "loading weights (3 of 8) for 30 s; ready by about 14:05 (the last run took 1m 00s here)"
    )


def test_a_ready_run_is_ready_since_its_ready_line():
    s = at(T0 + 500, mark("loading weights", T0 + 10), ready=True, ready_at=T0 + 95)
    assert (s.phase, s.since, s.eta, s.overdue) == (READY, T0 + 95, None, None)
    assert s.ready
    assert startup_words(s, T0 + 500, str) == READY


def test_a_phase_stamped_before_the_one_ahead_of_it_begins_with_it():
    s = at(T0 + 30, mark("loading weights", T0 + 12), mark("allocating KV cache", T0 + 11))
    assert s.passed[-1] == ("allocating KV cache", T0 + 12)


def test_a_phase_seen_twice_counts_from_its_first_line():
    s = at(T0 + 30, mark("loading weights", T0 + 10), mark("loading weights", T0 + 20, 50))
    assert [n for n, _ in s.passed] == [LAUNCHING, "loading weights"]
    assert s.since == T0 + 10


def test_the_json_keys_are_the_reports_startup_keys():
    s = at(T0 + 40, mark("loading weights", T0 + 10, done=3, total=8))
    data = s.to_json(lambda ts: None if ts is None else f"@{ts:.0f}")
    assert tuple(data) == STARTUP_KEYS
    assert data["phase"] == "loading weights"
    assert data["progress"] == {"done": 3, "total": 8}
    assert data["phases"][0] == {"name": LAUNCHING, "since": f"@{T0:.0f}"}


def test_marks_and_records_read_from_the_agents_json():
    ready = Ready.from_json(
        read(
            {
                "seen": False,
                "source": "timestamps",
                "anchor": 10,
                "phases": [
                    {"name": "loading weights", "offset": 40, "at": T0, "dated": "before"},
                    {"name": "capturing CUDA graphs", "offset": 90, "done": 3, "total": 67},
                ],
            },
            "ready",
        )
    )
    assert ready.phases == (
        PhaseMark("loading weights", 40, T0, "before"),
        PhaseMark("capturing CUDA graphs", 90, None, "stamp", 3, 67),
    )
    record = StartupRecord.from_json(
        read(
            {
                "boot_id": "b",
                "pid": 5,
                "start_ticks": 6,
                "started": T0,
                "phases": [{"name": "loading weights", "at": T0 + 1}],
                "ready_at": T0 + 9,
            },
            "startups[0]",
        )
    )
    assert record == StartupRecord("b", 5, 6, T0, (("loading weights", T0 + 1),), T0 + 9)


def test_a_garbled_record_names_its_field():
    with pytest.raises(AnswerError, match="pid"):
        StartupRecord.from_json(read({"pid": "x", "start_ticks": 1, "started": 1}, "r"))


def starting(now: float, marks: tuple[PhaseMark, ...], *, cut: bool = False):
    """A STARTING assessment of a run that writes its log, with these phase marks."""
    from tui.core.runs import Assessment, LogState, OpenFile, Process, Run
    from tui.core.verdicts import Verdict

    log_file = OpenFile(1, "/srv/serve.log", 64, 9001, deleted=False, write=True, at_log=True)
    root = Process(
        pid=ME[1],
        ppid=1,
        start_ticks=ME[2],
        start_time=T0,
        user="root",
        cmdline=("python3", "-m", "server"),
        cwd="/",
        sources=("log",),
        files=(log_file,),
    )
    ready = Ready(seen=False, source="timestamps", anchor=0, phases=marks, cut=cut)
    return Assessment(
        host="gpu",
        service="qwen",
        verdict=Verdict.STARTING,
        summary="pid 4242 writes this log; not ready yet",
        checked_at=now,
        run=Run(root=root, members=(), ready=ready),
        log=LogState("/srv/serve.log", True, 64, 9001, size=10**4, mtime=now),
        ready=ready,
        boot_id=ME[0],
    )


def test_the_report_carries_the_startup_and_status_json_says_it():
    from tui.core.report import ProbeDetails, ServiceFacts

    facts = ServiceFacts("gpu", "qwen", engine="vllm", intended=None)
    now = T0 + 40
    marks = (mark("loading weights", T0 + 10, 100, done=3, total=8),)
    report = facts.observe(starting(now, marks), ProbeDetails(startups=(LAST,)))
    assert report.startup is not None
    assert (report.startup.phase, report.startup.done, report.startup.total) == (
        "loading weights",
        3,
        8,
    )
    ready = report.to_json()["ready"]
    assert ready["phase"] == "loading weights"
    assert ready["eta"] is not None and ready["phase_since"] is not None
    assert ready["last_run_s"]["loading weights"] == 60.0
    assert ready["seen"] is False  # the assessment's own keys stay


def test_a_report_without_a_run_has_every_startup_key_null():
    from tui.core.report import ServiceFacts

    report = ServiceFacts("gpu", "qwen", engine="vllm", intended=None).report(T0)
    ready = report.to_json()["ready"]
    assert all(ready[key] is None for key in STARTUP_KEYS)


def test_a_run_found_ready_by_http_keeps_the_phases_its_log_showed():
    from tui.core.readiness import HEALTHY, ready_of
    from tui.core.runs import LogState, ServiceProbe

    marks = (mark("loading weights", T0 + 10, 100),)
    a = starting(T0 + 40, marks, cut=True)
    probe = ServiceProbe(
        "gpu",
        "qwen",
        "tgi",
        ME[0],
        T0 + 40,
        0,
        LogState("/srv/serve.log", True),
        (a.run,),
        health=HEALTHY,
    )
    ready = ready_of(probe, a.run)
    assert ready.seen and ready.by_http
    assert ready.phases == marks and ready.anchor == 0
