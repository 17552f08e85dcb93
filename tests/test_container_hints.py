"""What a service's facts make of its container over the probes: runs of the series at
each new container run, the crash-loop and --rm hints, and ``status --json``."""

from __future__ import annotations

import pytest
from support.container_answers import (
    CONTAINER_ID,
    OFFSET,
    SERVER_ARGV,
    at,
    container,
    run,
    stopped,
    verdict,
)

from tui.core.hints import HintRule
from tui.core.metrics.model import Metric
from tui.core.report import ProbeDetails, ServiceFacts, ServiceReport
from tui.core.runs import Assessment

pytestmark = pytest.mark.unit

DEV, INODE = 2049, 777
GONE = {
    "ref": "vllm-qwen",
    "runtime": "docker",
    "found": False,
    "absent": True,
    "problem": "no container vllm-qwen on this host (No such container: vllm-qwen)",
}


def facts(intended: list[str] | None = None) -> ServiceFacts:
    return ServiceFacts("gpu1", "qwen", engine="vllm", intended=intended)


def observe(f: ServiceFacts, a: Assessment) -> ServiceReport:
    return f.observe(a, ProbeDetails())


def stats_line(clock: str, generation: float) -> str:
    return (
        f"INFO 12-01 {clock} metrics.py:467] Avg prompt throughput: 1.0 tokens/s, Avg "
        f"generation throughput: {generation} tokens/s, Running: 1 reqs, Swapped: 0 reqs, "
        "Pending: 0 reqs, GPU KV cache usage: 5.0%, CPU KV cache usage: 0.0%."
    )


def feed(f: ServiceFacts, text: str, offset: int) -> None:
    f.feed(text, DEV, INODE, offset, len(text) + 1, utc_offset=OFFSET)


def running(count: int, started: str, *, anchor: int, now: str = "14:05:11") -> Assessment:
    facts_now = container(restart_count=count, started_at=at(started))
    return verdict(facts_now, runs=[run({"seen": True, "anchor": anchor})], now=now)


def hint(report: ServiceReport, rule: HintRule) -> list[str]:
    return [h.message for h in report.hints if h.rule is rule]


# ------------------------------------------------------------------ runs of the series


def test_a_new_container_run_opens_a_run_of_the_series() -> None:
    f = facts()
    observe(f, running(3, "14:02:11", anchor=0))
    feed(f, stats_line("14:03:00", 100.0), 100)
    before = f.report(at("14:05:11")).metrics
    assert before is not None and len(before.series_of(Metric.GEN_THROUGHPUT)) == 1
    # the same container, restarted: another StartedAt and RestartCount
    report = observe(f, running(4, "14:06:00", anchor=5000, now="14:06:30"))
    after = report.metrics
    assert after is not None and after.run == (before.run or 0) + 1
    assert after.series_of(Metric.GEN_THROUGHPUT) == ()
    feed(f, stats_line("14:03:30", 7.0), 4000)  # the last run's line, above this run's anchor
    feed(f, stats_line("14:06:20", 200.0), 5100)
    now = f.report(at("14:06:30")).metrics
    assert now is not None
    assert [p.value for p in now.series_of(Metric.GEN_THROUGHPUT)] == [200.0]


def test_a_startup_line_read_before_the_probe_is_the_new_runs_one_boundary() -> None:
    f = facts()
    observe(f, running(3, "14:02:11", anchor=0))
    feed(f, stats_line("14:03:00", 100.0), 100)
    # the follower reads the new run's args line before the probe tells of the restart
    feed(f, "INFO 12-01 14:06:01 [api_server.py:1] non-default args: {'model': 'q'}", 5000)
    opened = f.report(at("14:06:02")).metrics
    assert opened is not None and opened.run == 1
    report = observe(f, running(4, "14:06:00", anchor=5000, now="14:06:30"))
    assert report.metrics is not None and report.metrics.run == 1


def test_the_same_run_seen_again_keeps_its_series() -> None:
    f = facts()
    observe(f, running(3, "14:02:11", anchor=0))
    feed(f, stats_line("14:03:00", 100.0), 100)
    report = observe(f, running(3, "14:02:11", anchor=0, now="14:05:30"))
    assert report.metrics is not None
    assert len(report.metrics.series_of(Metric.GEN_THROUGHPUT)) == 1


# ------------------------------------------------------------------ crash loop


def test_a_climbing_restart_count_is_a_crash_loop_with_its_count_and_interval() -> None:
    f = facts()
    report = None
    for count in range(6):
        started = at("14:02:02") + 36 * count
        facts_now = container(
            restart_count=count,
            started_at=started,
            exit_code=0,  # what docker says of a container it started again
            finished_at=started - 1 if count else None,
        )
        a = verdict(facts_now, runs=[run()], now="14:05:10")
        report = observe(f, a)
    assert report is not None
    assert hint(report, HintRule.CRASH_LOOP) == [
        "restarted 5 times in 3 min (about every 36 s); last exit at 14:05:01: the server "
        "fails at start; `docker logs` of each try mixes runs, babysit shows this run's lines"
    ]
    (found,) = [h for h in report.hints if h.rule is HintRule.CRASH_LOOP]
    assert found.evidence[0].startswith(
        "docker inspect of vllm-qwen (4f3c1a2b3c4d): RestartCount 5, status running"
    )
    assert "RestartCount seen by the probes: 0 (run started 14:02:02)" in found.evidence[1]
    assert found.evidence[2].startswith(
        "last exit: its status unknown (docker sets ExitCode to 0 as it starts the container) "
    )


def test_restarts_before_babysit_watched_count_in_the_crash_loop() -> None:
    """Watched from its 12th restart on, a container's hint says 13, not "once"."""
    f = facts()
    report = None
    for count in (12, 13):
        started = at("14:02:00") + 5 * count
        facts_now = container(
            restart_count=count,
            created=at("14:02:00"),
            started_at=started,
            exit_code=0,  # what docker says of a container it started again
            finished_at=started - 1,
        )
        report = observe(f, verdict(facts_now, runs=[run()], now="14:03:10"))
    assert report is not None
    (message,) = hint(report, HintRule.CRASH_LOOP)
    assert message.startswith(
        "restarted 13 times in 1 min (about every 5 s), 1 of them while watched; last exit at "
    )


def test_a_restarting_container_seen_once_is_a_crash_loop_from_its_count() -> None:
    facts_now = stopped(
        status="restarting",
        restarting=True,
        running=True,
        restart_count=5,
        exit_code=1,
        started_at=at("14:04:00"),
        finished_at=at("14:05:02"),
        created=at("14:01:00"),
    )
    report = observe(facts(), verdict(facts_now))
    (message,) = hint(report, HintRule.CRASH_LOOP)
    assert message.startswith(
        "restarted 5 times in 3 min (about every 36 s); last exit 1 at 14:05:02: "
    )
    assert report.verdict.value == "dead"


def test_a_steady_container_is_no_crash_loop() -> None:
    f = facts()
    for now in ("14:05:11", "14:05:20", "14:05:30"):
        report = observe(f, running(3, "14:02:11", anchor=0, now=now))
    assert hint(report, HintRule.CRASH_LOOP) == []


def test_a_count_set_back_by_a_start_by_hand_is_no_crash_loop() -> None:
    f = facts()
    observe(f, running(3, "14:02:11", anchor=0))
    report = observe(f, running(0, "14:06:00", anchor=900, now="14:06:10"))
    assert hint(report, HintRule.CRASH_LOOP) == []


def test_restarts_long_ago_are_no_crash_loop() -> None:
    f = facts()
    observe(f, running(1, "13:00:00", anchor=0, now="13:00:10"))
    observe(f, running(2, "13:00:30", anchor=100, now="13:00:40"))
    report = observe(f, running(2, "13:00:30", anchor=100, now="14:05:00"))
    assert hint(report, HintRule.CRASH_LOOP) == []


# ------------------------------------------------------------------ --rm


RM_WARNING = (
    "this container is removed when it exits (--rm): its log goes with it; babysit keeps "
    "the last lines it has read"
)


def test_a_rm_container_is_warned_about() -> None:
    a = verdict(container(auto_remove=True), runs=[run({"seen": True, "anchor": 0})])
    report = observe(facts(), a)
    assert hint(report, HintRule.AUTO_REMOVE) == [RM_WARNING]


def test_a_rm_container_gone_after_its_exit_is_told_as_removed() -> None:
    f = facts()
    seen = verdict(container(auto_remove=True), runs=[run({"seen": True, "anchor": 0})])
    observe(f, seen)
    report = observe(f, verdict(GONE, now="14:06:00"))
    assert report.verdict.value == "dead"
    assert report.assessment.summary == (
        "no container vllm-qwen on gpu1: it ran with --rm (4f3c1a2b3c4d, vllm/vllm-openai:v0.9; "
        "last seen 14:05:11 (49 s ago)), so docker removed it, and its log, as it exited"
    )
    assert hint(report, HintRule.AUTO_REMOVE) == [RM_WARNING]


def test_a_container_without_rm_gone_is_only_gone() -> None:
    f = facts()
    observe(f, verdict(container(), runs=[run()]))
    report = observe(f, verdict(GONE, now="14:06:00"))
    assert report.assessment.summary == "no container vllm-qwen on gpu1"
    assert hint(report, HintRule.AUTO_REMOVE) == []


# ------------------------------------------------------------------ launch and status


def test_the_launch_diff_reads_the_server_inside_not_its_wrapper() -> None:
    intended = [*SERVER_ARGV, "--max-model-len", "8192"]
    report = observe(facts(intended), verdict(container(), runs=[run()]))
    assert report.assessment.run is not None
    assert report.assessment.run.root.cmdline != tuple(SERVER_ARGV)  # ``sh -c`` at State.Pid
    assert report.launch is not None
    # --model is in the server's argv (the wrapper's holds it only inside its one string)
    assert report.launch.missing == ("--max-model-len",)


def test_status_json_holds_the_container_and_the_run_identity() -> None:
    ready = {"seen": True, "anchor": 5120, "at": at("14:03:00"), "source": "log"}
    out = observe(facts(), verdict(container(), runs=[run(ready)])).to_json()
    assert out["verdict"] == "live"
    assert out["process"]["run"] == {  # type: ignore[index]
        "container_id": CONTAINER_ID,
        "started_at": "2026-12-01T14:02:11+01:00",
        "restart_count": 3,
    }
    assert out["log"]["format"] == "docker-json"  # type: ignore[index]
    box = out["container"]
    assert isinstance(box, dict)
    assert box["id"] == CONTAINER_ID and box["image"] == "vllm/vllm-openai:v0.9"
    assert box["started_at"] == "2026-12-01T14:02:11+01:00" and box["finished_at"] is None
    assert box["status"] == "running" and box["pids"] == [4242, 4250]


def test_status_json_of_a_plain_service_has_no_container() -> None:
    log = {"path": "/srv/qwen.log", "regular": True, "dev": 5, "inode": 9, "size": 0}
    out = observe(facts(), verdict(None, log=log)).to_json()
    assert out["container"] is None
    assert out["log"]["format"] == "plain"  # type: ignore[index]
