"""The boot time the agent dates process starts by: one value, read again and again.

A run's start is the boot time plus its start ticks. Every probe runs the agent
afresh, so a boot time that moved from one reading to the next would move every
run's start with it, and the lines placed by a start (llama.cpp's elapsed stamps)
would drift from one probe to the next."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from tui import procfs
from tui.agent.procfs import boot_facts

pytestmark = pytest.mark.integration

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def test_the_boot_time_read_again_over_several_ticks_is_the_same() -> None:
    readings = []
    for _ in range(20):
        readings.append(boot_facts()[1])
        time.sleep(0.003)  # 60 ms: /proc/uptime's hundredths would move it by a tick
    assert max(readings) - min(readings) < 1e-3, readings


def test_a_process_start_dated_by_it_falls_when_the_process_was_started() -> None:
    before = time.time()
    child = subprocess.Popen(["sleep", "30"])
    after = time.time()
    try:
        ticks = procfs.start_ticks(child.pid)
        assert ticks is not None
        _, btime, hz = boot_facts()
        started = btime + ticks / hz
        assert before - TICK <= started <= after + TICK, (before, started, after)
    finally:
        child.kill()
        child.wait()
