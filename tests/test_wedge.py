"""WEDGED: a ready, living run that does not serve, decided once by the service's facts.

Each test feeds a service's facts the lines a real engine prints (SGLang's decode lines,
vLLM's stats lines, their fatal lines) and a LIVE assessment, and reads the report at a
chosen instant: pending work without progress for ``wedged_after``, a fatal line while
the process lives, a canary that timed out; idle is never wedged.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.report import ProbeDetails, ServiceFacts
from tui.core.runs import Assessment, LogState, OpenFile, Process, Ready, Run
from tui.core.serving import Client, Clients, WedgeCause
from tui.core.verdicts import Verdict

pytestmark = pytest.mark.unit

WEDGED_AFTER = 60.0
PID, TICKS = 4242, 777
DEV, INODE = 64, 9001
#: The host's clock for every test: lines and probes are stamped from it (UTC host).
T0 = float(int(time.time()) - 3600)


def sglang_decode(at: float, running: int, gen: float) -> str:
    stamp = datetime.fromtimestamp(at, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return (
        f"[{stamp} TP0] Decode batch, #running-req: {running}, #token: 5231, token usage: 0.03, "
        f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0"
    )


def vllm_stats(at: float, running: int, gen: float) -> str:
    stamp = datetime.fromtimestamp(at, timezone.utc).strftime("%m-%d %H:%M:%S")
    return (
        f"(APIServer pid={PID}) INFO {stamp} [loggers.py:335] Engine 000: Avg prompt "
        f"throughput: 0.0 tokens/s, Avg generation throughput: {gen:.1f} tokens/s, Running: "
        f"{running} reqs, Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%"
    )


def live(
    now: float, *, clients: Clients | None = None, verdict: Verdict = Verdict.LIVE
) -> Assessment:
    log_file = OpenFile(1, "/srv/serve.log", DEV, INODE, deleted=False, write=True, at_log=True)
    root = Process(
        pid=PID,
        ppid=1,
        start_ticks=TICKS,
        start_time=T0 - 100,
        user="root",
        cmdline=("python3", "-m", "server"),
        cwd="/",
        sources=("log",),
        files=(log_file,),
    )
    ready = Ready(seen=True, source="log", anchor=0, at=T0 - 50, offset=0)
    return Assessment(
        host="gpu",
        service="qwen",
        verdict=verdict,
        summary="pid 4242 writes this log",
        checked_at=now,
        run=Run(root=root, members=(), ready=ready, clients=clients),
        log=LogState("/srv/serve.log", True, DEV, INODE, size=10**6, mtime=now),
        ready=ready,
        boot_id="boot",
    )


class Service:
    """One service's facts, fed line by line as a follower would."""

    def __init__(self, engine: str) -> None:
        self.facts = ServiceFacts(
            "gpu", "qwen", engine=engine, intended=None, wedged_after=WEDGED_AFTER
        )
        self.offset = 100

    def line(self, text: str) -> int:
        at = self.offset
        self.facts.feed(text, DEV, INODE, at, len(text) + 1, utc_offset=0)
        self.offset += len(text) + 1
        return at

    def report(
        self, now: float, *, clients: Clients | None = None, verdict: Verdict = Verdict.LIVE
    ):
        self.facts.observe(live(now, clients=clients, verdict=verdict), ProbeDetails())
        return self.facts.report(now)


def quiet_client(seconds: float, *, waiting: bool = False) -> Clients:
    client = Client("127.0.0.1:53312", quiet_s=seconds, waiting_s=seconds if waiting else None)
    return Clients(source="netlink", port=30000, open=1, shown=(client,))


# ---------------------------------------------------------------- stall


def test_vllm_requests_running_without_progress_for_wedged_after_is_wedged() -> None:
    service = Service("vllm")
    for i in range(3):
        service.line(vllm_stats(T0 + 10 * i, 2, 55.0))
    last_progress = service.offset - len(vllm_stats(T0 + 20, 2, 55.0)) - 1
    # the engine stopped stepping: one last line with 0.0 throughput, then nothing
    service.line(vllm_stats(T0 + 30, 2, 0.0))

    assert service.report(T0 + 20 + WEDGED_AFTER - 1).verdict is Verdict.LIVE
    report = service.report(T0 + 20 + WEDGED_AFTER + 1)

    assert report.verdict is Verdict.WEDGED
    wedged = report.assessment.wedged
    assert wedged is not None and wedged.cause == WedgeCause.STALL
    assert wedged.since == T0 + 20  # the last line that progressed
    assert any("2 requests running or queued" in e for e in wedged.evidence)
    assert any(f"log byte {last_progress}" in e for e in wedged.evidence)
    assert report.assessment.summary.startswith("alive but not serving since")
    as_json = report.to_json()
    assert as_json["verdict"] == "wedged"
    assert as_json["wedged"]["cause"] == "stall"
    assert as_json["wedged"]["since"].startswith(
        datetime.fromtimestamp(T0 + 20, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    )
    assert Verdict.WEDGED.exit_status == 2


def test_vllm_idle_after_load_stays_live() -> None:
    service = Service("vllm")
    service.line(vllm_stats(T0, 2, 55.0))
    service.line(vllm_stats(T0 + 10, 0, 12.0))  # the work ended: Running: 0
    for wait in (WEDGED_AFTER, 3 * WEDGED_AFTER, 100 * WEDGED_AFTER):
        assert service.report(T0 + 10 + wait).verdict is Verdict.LIVE


def test_a_server_that_never_served_stays_live() -> None:
    service = Service("vllm")
    assert service.report(T0 + 10 * WEDGED_AFTER).verdict is Verdict.LIVE


def test_progress_keeps_a_busy_server_live() -> None:
    service = Service("vllm")
    for i in range(30):
        service.line(vllm_stats(T0 + 10 * i, 8, 400.0))
        assert service.report(T0 + 10 * i + 5).verdict is Verdict.LIVE


def test_sglang_last_decode_line_after_the_last_request_is_not_pending() -> None:
    """SGLang prints no line when its last request ends: its last decode line keeps
    #running-req: 1. With no client waiting, that is idle, not wedged."""
    service = Service("sglang")
    for i in range(3):
        service.line(sglang_decode(T0 + i, 1, 60.0))
    later = T0 + 2 + 3 * WEDGED_AFTER
    assert service.report(later).verdict is Verdict.LIVE
    no_clients = Clients(source="netlink", port=30000, open=0)
    assert service.report(later, clients=no_clients).verdict is Verdict.LIVE
    # a keep-alive connection that was answered a moment ago is no waiting client
    assert service.report(later, clients=quiet_client(2.0)).verdict is Verdict.LIVE


def test_sglang_decode_lines_stop_while_a_client_waits_is_wedged() -> None:
    service = Service("sglang")
    for i in range(3):
        service.line(sglang_decode(T0 + i, 4, 60.0))
    now = T0 + 2 + WEDGED_AFTER + 5
    report = service.report(now, clients=quiet_client(WEDGED_AFTER + 5))
    assert report.verdict is Verdict.WEDGED
    assert report.assessment.wedged.since == T0 + 2
    assert any("client connections quiet" in e for e in report.assessment.wedged.evidence)


def test_a_request_unanswered_after_idle_counts_from_its_arrival() -> None:
    """Idle for an hour, then a request hangs: WEDGED only wedged_after after it came."""
    service = Service("sglang")
    service.line(sglang_decode(T0, 1, 60.0))
    now = T0 + 3600
    assert service.report(now, clients=quiet_client(30.0, waiting=True)).verdict is Verdict.LIVE
    report = service.report(now, clients=quiet_client(WEDGED_AFTER + 1, waiting=True))
    assert report.verdict is Verdict.WEDGED
    assert report.assessment.wedged.since == pytest.approx(now - WEDGED_AFTER - 1)
    assert any("client requests unanswered" in e for e in report.assessment.wedged.evidence)


def test_only_a_live_run_can_be_wedged() -> None:
    service = Service("vllm")
    service.line(vllm_stats(T0, 2, 55.0))
    later = T0 + 10 * WEDGED_AFTER
    for verdict in (Verdict.STARTING, Verdict.STALE, Verdict.DEAD):
        assert service.report(later, verdict=verdict).verdict is verdict


# ---------------------------------------------------------------- fatal lines


def test_a_fatal_line_while_the_process_lives_is_wedged_at_once() -> None:
    service = Service("vllm")
    service.line(vllm_stats(T0, 2, 55.0))
    stamp = datetime.fromtimestamp(T0 + 5, timezone.utc).strftime("%m-%d %H:%M:%S")
    fatal = (
        f"(APIServer pid={PID}) ERROR {stamp} [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client."
    )
    at = service.line(fatal)
    report = service.report(T0 + 6)
    assert report.verdict is Verdict.WEDGED
    wedged = report.assessment.wedged
    assert wedged.cause == WedgeCause.FATAL
    assert wedged.since == T0 + 5
    assert any(f"log byte {at}" in e and "died unexpectedly" in e for e in wedged.evidence)


def test_a_new_run_forgets_the_fatal_line() -> None:
    service = Service("vllm")
    service.line(
        f"(APIServer pid={PID}) ERROR 12-01 10:00:00 [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client."
    )
    service.facts._serving.new_run()  # what a run's startup line does
    assert service.report(T0).verdict is Verdict.LIVE


# ---------------------------------------------------------------- canaries


def canary(outcome: CanaryOutcome, sent_at: float, *, pid: int = PID) -> CanaryResult:
    return CanaryResult(
        "gpu", "qwen", outcome, sent_at=sent_at, run_pid=pid, run_start_ticks=TICKS, elapsed_s=30.0
    )


def test_a_canary_that_timed_out_is_wedged_until_progress_or_a_good_canary() -> None:
    service = Service("vllm")
    service.line(vllm_stats(T0, 0, 10.0))
    service.facts.canary_sent(T0 + 10)
    service.facts.canary_done(canary(CanaryOutcome.TIMEOUT, T0 + 10))
    report = service.report(T0 + 41)
    assert report.verdict is Verdict.WEDGED
    assert report.assessment.wedged.cause == WedgeCause.CANARY
    assert report.assessment.wedged.since == T0 + 10
    assert report.canary is not None and report.canary.timed_out

    service.facts.canary_done(canary(CanaryOutcome.OK, T0 + 50))
    assert service.report(T0 + 51).verdict is Verdict.LIVE


def test_progress_after_a_canary_timed_out_is_busy_not_wedged() -> None:
    service = Service("vllm")
    service.facts.canary_done(canary(CanaryOutcome.TIMEOUT, T0 + 10))
    service.line(vllm_stats(T0 + 20, 64, 900.0))
    assert service.report(T0 + 41).verdict is Verdict.LIVE


def test_another_runs_canary_says_nothing_of_this_run() -> None:
    service = Service("vllm")
    service.facts.canary_done(canary(CanaryOutcome.TIMEOUT, T0 + 10, pid=PID + 1))
    report = service.report(T0 + 41)
    assert report.verdict is Verdict.LIVE
    assert report.canary is None


def test_a_canary_in_flight_is_pending_work() -> None:
    service = Service("vllm")
    service.line(vllm_stats(T0, 0, 10.0))
    service.facts.canary_sent(T0 + 10)
    assert service.report(T0 + 10 + WEDGED_AFTER - 1).verdict is Verdict.LIVE
    report = service.report(T0 + 10 + WEDGED_AFTER + 1)
    assert report.verdict is Verdict.WEDGED
    assert any("canary in flight" in e for e in report.assessment.wedged.evidence)


def test_clients_that_time_out_and_retry_keep_the_work_pending() -> None:
    """Clients give up after 20 s and send again: each connection is young, yet some
    client has waited all along."""
    service = Service("sglang")
    service.line(sglang_decode(T0, 4, 60.0))
    verdicts = []
    for probe in range(1, 12):
        now = T0 + 15 * probe
        verdicts.append(service.report(now, clients=quiet_client(12.0 + probe % 3)).verdict)
    assert Verdict.WEDGED in verdicts
    first = verdicts.index(Verdict.WEDGED)
    assert first * 15 + 15 >= WEDGED_AFTER  # not before wedged_after
    assert set(verdicts[first:]) == {Verdict.WEDGED}


def test_counts_alone_from_proc_need_two_probes_apart() -> None:
    """Without the kernel's times, a connection open at one instant may be a scrape: the
    log's counts are believed from the first probe that saw one open."""
    service = Service("sglang")
    service.line(sglang_decode(T0, 4, 60.0))
    untimed = Clients(source="proc", port=30000, open=2)
    late = T0 + 10 * WEDGED_AFTER
    assert service.report(late, clients=untimed).verdict is Verdict.LIVE
    assert service.report(late + WEDGED_AFTER + 1, clients=untimed).verdict is Verdict.WEDGED


def test_another_process_on_the_same_log_does_not_inherit_a_fatal_line() -> None:
    """A run started by hand after the last one died, with no startup line babysit
    knows: its pid and start differ, and the old run's fatal line is not its."""
    service = Service("vllm")
    service.line(
        f"(APIServer pid={PID}) ERROR 12-01 10:00:00 [core_client.py:564] Engine core proc "
        "EngineCore_DP0 died unexpectedly, shutting down client."
    )
    assert service.report(T0).verdict is Verdict.WEDGED
    after = live(T0 + 5)
    run = after.run
    assert run is not None
    other = replace(run, root=replace(run.root, pid=PID + 7, start_ticks=TICKS + 99))
    service.facts.observe(replace(after, run=other), ProbeDetails())
    assert service.facts.report(T0 + 5).verdict is Verdict.LIVE
