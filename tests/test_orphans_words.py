"""Orphans in words, the kill of them as a target, the kill's GPU wait said, and the
relaunch's refusal while orphans hold the service's GPUs (pure)."""

from __future__ import annotations

import pytest

from tui.agent.killgpu import FREE_SLACK_MIB, held_before, still_held
from tui.agent.protocol import KILL_DONE, KILL_GPU_WAIT, MODE_KILL
from tui.app.screens.confirm import ALTERNATIVE, kill_plan, orphans_plan, with_orphans
from tui.config import Service
from tui.core.gpu import Orphan
from tui.core.runs import Assessment, Process, Run
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.ops.actions import Planned
from tui.ops.kill import PROCESSES_PER_RANK, PROCESSES_SHARED, KillTarget, kill_request
from tui.ops.kill_outcome import KillEvent, freed_words, mib_text, outcome_of
from tui.ops.orphan_words import orphan_line, orphans_text
from tui.ops.relaunch import LaunchRefused, check_preconditions

pytestmark = pytest.mark.unit

NOW = 1_700_000_000.0


def service() -> Service:
    text = (
        "hosts:\n  kpro5:\n    local: true\n    services:\n      qwen:\n"
        "        engine: vllm\n        log: /tmp/q.log\n        port: 8000\n"
        "        gpus: [0, 1]\n        stop_grace: 30\n"
    )
    return parse_config(text).hosts["kpro5"].services["qwen"]


def worker(pid: int, gpu: int, mib: float | None = 19558.0) -> Orphan:
    return Orphan(
        pid=pid,
        start_ticks=123_456 + pid,
        memory_mib=mib,
        gpu=gpu,
        cmdline=(f"VLLM::Worker_TP{gpu}",),
        started_at=NOW - 180,
        ppid=1,
        user="root",
    )


def dead(verdict: Verdict = Verdict.DEAD, run: Run | None = None) -> Assessment:
    return Assessment("kpro5", "qwen", verdict, "no run", NOW, run=run, boot_id="b-1")


def a_run() -> Run:
    root = Process(
        pid=4200,
        ppid=1,
        start_ticks=99,
        start_time=NOW - 600,
        user="root",
        cmdline=("vllm", "serve", "Qwen/Qwen3-8B"),
        cwd=None,
        sources=(),
        files=None,
    )
    return Run(root=root, members=(), ready=None)


def test_mib_text_says_gib_from_a_gib_on() -> None:
    assert mib_text(39116) == "38.2 GiB"
    assert mib_text(512) == "512 MiB"


def test_the_wait_for_gpu_memory_says_what_was_freed_and_after_how_long() -> None:
    gpu = {"checked": True, "freed_mib": 39116, "freed_gpus": [0, 1], "held_mib": 0}
    assert freed_words({**gpu, "waited_s": 1.42}) == (
        "GPU memory freed: 38.2 GiB on GPU 0, 1 (after 1.4 s)"
    )
    assert freed_words(gpu) is None  # no wait: nothing the killed pids held was listed


def test_the_wait_for_gpu_memory_names_what_is_still_held_when_it_gives_up() -> None:
    held = {"pid": 4242, "used_mib": 19558, "gpu": 1, "command": "VLLM::Worker_TP1"}
    gpu = {
        "checked": True,
        "freed_mib": 19558,
        "freed_gpus": [0, 1],
        "held_mib": 19558,
        "waited_s": 30.0,
        "held": [{**held, "signalled": True}, {**held, "pid": 9, "signalled": False}],
    }
    assert freed_words(gpu) == (
        "GPU memory still held after 30 s: pid 4242 (VLLM::Worker_TP1) 19.1 GiB on GPU 1; "
        "19.1 GiB freed"
    )
    unlisted = {**gpu, "held": [], "freed_mib": 0}
    assert freed_words(unlisted) == (
        "GPU memory still held after 30 s: 19.1 GiB not given back by the driver on GPU 0, 1"
    )


def test_orphans_are_a_target_of_their_own_pids_and_start_times() -> None:
    orphans = [worker(4242, 0), worker(4243, 1)]
    target = KillTarget.of_orphans(orphans, "b-1", service())
    assert target.processes == ((4242, 127_698), (4243, 127_699))
    assert target.orphans and target.port is None and target.gpus == (0, 1)
    assert target.max_processes == 2 * PROCESSES_PER_RANK + PROCESSES_SHARED
    assert target.text == "orphans pid 4242, 4243"
    request = kill_request(target, 30, "k-1")
    assert request["mode"] == MODE_KILL and request["boot_id"] == "b-1"
    assert request["targets"] == [
        {"pid": 4242, "start_ticks": 127_698},
        {"pid": 4243, "start_ticks": 127_699},
    ]
    assert (
        Planned(target, 30).text == "stopping orphans pid 4242, 4243: SIGTERM, 30 s, then SIGKILL"
    )


def test_a_kill_of_orphans_counts_only_what_they_held_as_left() -> None:
    """A live run beside the orphans keeps its memory: the orphans' kill is still ok."""
    gpu = {
        "checked": True,
        "source": "gpus",
        "gpus": [0, 1],
        "held": [{"pid": 4200, "used_mib": 70000, "gpu": 0, "signalled": False}],
        "freed_mib": 19558,
        "freed_gpus": [1],
        "held_mib": 0,
        "waited_s": 0.3,
    }
    events = [KillEvent(KILL_DONE, None, "done", {"remaining": [], "gpu": gpu})]
    outcome = outcome_of(events)
    assert not outcome.ok  # as the kill of a run: memory is held on its GPUs
    outcome.orphans = True
    assert outcome.ok and outcome.exit_status == 0
    target = KillTarget.of_orphans([worker(4243, 1)], "b-1", service())
    summary = outcome.summary(target, None)
    assert summary.startswith("orphan pid 4243 is gone; GPU memory freed: 19.1 GiB on GPU 1")
    assert KILL_GPU_WAIT == "gpu-wait"


def test_relaunch_refuses_while_orphans_hold_the_services_gpus_and_names_them() -> None:
    orphans = [worker(4242, 0), worker(4243, 1, None)]
    with pytest.raises(LaunchRefused) as refused:
        check_preconditions(service(), dead(), {}, replacing=False, orphans=orphans)
    said = refused.value.message
    assert said.startswith("kpro5/qwen: orphans pid 4242 (19.1 GiB on GPU 0, VLLM::Worker_TP0)")
    assert "pid 4243 (memory unknown on GPU 1, VLLM::Worker_TP1)" in said
    assert "babysit kill kpro5/qwen --orphans" in said and "or K on the host screen" in said
    assert refused.value.exit_status == 2
    check_preconditions(service(), dead(), {}, replacing=False)  # none: no refusal


def test_orphan_line_and_text_say_pid_memory_gpu_start_and_command() -> None:
    line = orphan_line(worker(4242, 1), NOW)
    assert line == (
        "pid 4242: 19.1 GiB on GPU 1, started 3 min ago, parent pid 1, user root: VLLM::Worker_TP1"
    )
    many = orphans_text([worker(100 + i, 0) for i in range(10)])
    assert many.count("pid ") == 8 and many.endswith(" and 2 more")


def test_the_orphans_plan_names_each_one() -> None:
    orphans = [worker(4242, 0), worker(4243, 1)]
    plan = orphans_plan(service(), dead(), orphans)
    text = plan.text()
    assert plan.title == "Kill the orphans on kpro5/qwen's GPUs?"
    assert plan.confirm == "Kill 2 orphans" and plan.alternative is None
    for orphan in orphans:
        assert f"pid {orphan.pid}" in text
    assert "memory: 19.1 GiB on GPU 1" in text and "command: VLLM::Worker_TP1" in text
    assert "3 min ago; parent pid 1, user root" in text


def test_a_live_runs_kill_offers_the_orphans_as_a_separate_choice() -> None:
    run = a_run()
    a = dead(Verdict.LIVE, run)
    plan = with_orphans(kill_plan(service(), a, run), service(), a, [worker(4243, 1)])
    assert plan.confirm == "Kill pid 4200"
    assert plan.alternative == "Kill 1 orphan"
    text = plan.text()
    assert "or the orphans: pid 4243" in text and "the run is then left alone" in text
    assert ALTERNATIVE == "alternative"


def test_memory_counts_as_held_while_the_gpus_unlisted_memory_stays_grown() -> None:
    """A pid can leave nvidia-smi's list while the driver still holds its memory."""
    before = {
        "apps": [
            {"pid": 4242, "used_mib": 19558, "gpu_uuid": "GPU-1"},
            {"pid": 77, "used_mib": 1000, "gpu_uuid": "GPU-1"},
        ],
        "memory": {"GPU-1": (1, 20600)},
    }
    assert held_before(before, {4242}) == {"GPU-1": 19558}
    listed = {"apps": before["apps"], "memory": before["memory"]}
    assert still_held(before, listed, {4242}) == ([4242], 19558)
    lingering = {"apps": before["apps"][1:], "memory": {"GPU-1": (1, 20600)}}
    assert still_held(before, lingering, {4242}) == ([], 19558)
    freed = {"apps": before["apps"][1:], "memory": {"GPU-1": (1, 1042 + FREE_SLACK_MIB)}}
    assert still_held(before, freed, {4242}) == ([], 0)
