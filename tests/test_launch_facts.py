"""The launch diff is one of a service's facts: made again only when what it is made of
changes (the running argv, the args line), and the same from one probe to the next."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_wedge import T0, live

from tui.core.report import ProbeDetails, ServiceFacts

pytestmark = pytest.mark.unit

ARGS = "[2026-12-02 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', port=30000, {})"


def running(*argv: str):
    """A LIVE assessment whose run's root runs ``argv``."""
    a = live(T0)
    assert a.run is not None
    root = replace(a.run.root, cmdline=argv)
    return replace(a, run=replace(a.run, root=root))


def test_the_same_run_probed_again_keeps_its_diff_and_a_change_makes_it_again() -> None:
    facts = ServiceFacts("gpu", "qwen", engine="sglang", intended=None)
    argv = ("python3", "-m", "sglang.launch_server", "--port", "30000")
    first = facts.observe(running(*argv), ProbeDetails(args_line=ARGS.format("tp_size=1")))
    again = facts.observe(running(*argv), ProbeDetails(args_line=ARGS.format("tp_size=1")))
    assert first.launch is not None and again.launch is first.launch

    # the server reports another value: read again
    told = facts.observe(running(*argv), ProbeDetails(args_line=ARGS.format("tp_size=2")))
    assert told.launch is not first.launch
    assert told.launch.reported is not None and told.launch.reported.values["tp_size"] == 2

    # another argv (a new run with another flag): read again
    more = (*argv, "--speculative-algorithm", "EAGLE")
    moved = facts.observe(running(*more), ProbeDetails(args_line=ARGS.format("tp_size=2")))
    assert moved.launch is not told.launch
    assert moved.launch.actual != told.launch.actual

    # no run: no diff
    gone = facts.observe(replace(running(*argv), run=None), ProbeDetails())
    assert gone.launch is None
