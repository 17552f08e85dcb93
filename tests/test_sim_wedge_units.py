"""Pure parts of the simulator's wedging scenarios and streams: the frozen load model, the
NCCL watchdog lines per torch release, stream pieces and chunks, the command line."""

from __future__ import annotations

import json
import random
import re
import threading
import time

import pytest
from sim_helpers import ROOT  # noqa: F401 - puts the repository on sys.path

from tui.sim.cli import parse_config
from tui.sim.config import DEFAULT_WEDGE_AFTER, SCENARIOS, Scenario
from tui.sim.load import LoadModel, LoadProfile
from tui.sim.nccl import TIMEOUT_MS, Collective, watchdog_lines
from tui.sim.stream import DONE, OpenAIStream
from tui.sim.text import generated, piece
from tui.sim.version import V

pytestmark = pytest.mark.unit

#: c10's line head: rank prefix, level and stamp with nanoseconds, the source line
C10_HEAD = re.compile(
    r"^\[rank(?P<rank>\d+)\]:\[E\d{4} \d{2}:\d{2}:\d{2}\.\d{9} "
    r"ProcessGroupNCCL\.cpp:(?P<line>\d+)\] "
)


def _model() -> LoadModel:
    return LoadModel(
        LoadProfile(base_tps=400.0, max_running=8, max_total_tokens=100_000), 0.0, lambda: None
    )


def test_a_frozen_load_model_keeps_its_counts_and_makes_no_progress() -> None:
    load = _model()
    first = load.submit(10, 1000)
    load.advance(0.0)
    load.advance(0.5)
    generated_before = first.generated
    load.freeze()
    second = load.submit(10, 5)
    advance = load.advance(10.0)
    assert advance.prefilled == () and advance.finished == () and not advance.decode_log_due
    assert first.generated == generated_before and first.finished is None
    assert second.admitted is None
    assert (load.running, load.queued) == (1, 0)  # the counts when it froze
    assert load.next_wake() is None
    assert load.frozen


def test_a_frozen_request_waits_until_the_server_goes_away() -> None:
    load = _model()
    request = load.submit(10, 50)
    load.freeze()
    done = threading.Event()

    def wait() -> None:
        load.wait(request, timeout=30.0)
        done.set()

    thread = threading.Thread(target=wait, daemon=True)
    thread.start()
    assert not done.wait(0.3)
    load.abort_all(time.monotonic())
    assert done.wait(5.0)
    assert request.aborted


def test_a_streamed_request_wakes_the_main_thread_often_and_its_waiter_each_step() -> None:
    load = _model()
    request = load.submit(10, 1000, streamed=True)
    load.advance(0.0)
    wake = load.next_wake()
    assert wake is not None and wake <= 0.05
    load.advance(0.5)
    assert load.wait_progress(request, 1, timeout=0.0) > 1


def test_pieces_of_a_stream_join_to_the_whole_text() -> None:
    for repeat in (False, True):
        whole = generated(23, 7, repeat=repeat)
        parts = [piece(a, min(a + 4, 23), 7, repeat=repeat) for a in range(0, 23, 4)]
        assert "".join(parts) == whole


@pytest.mark.parametrize(
    ("torch", "sites"),
    [
        ("2.4.0", ["607", "1664", "621"]),
        ("2.5.1", ["629", "2168", "667", "681"]),
        ("2.6.0", ["632", "2271", "670", "2106", "1746", "1536", "684"]),
        ("2.9.1", ["757", "2395", "801", "2732", "2371", "2163", "815"]),
    ],
)
def test_watchdog_lines_follow_the_torch_release(torch: str, sites: list[str]) -> None:
    lines = watchdog_lines(V(torch), 1, 4242, 8192, TIMEOUT_MS + 31)
    heads = [C10_HEAD.match(line) for line in lines]
    assert all(heads), lines
    assert [head["line"] for head in heads if head] == sites
    assert {head["rank"] for head in heads if head} == {"1"}
    assert lines[0].endswith(
        "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4242, "
        "OpType=ALLREDUCE, NumelIn=8192, NumelOut=8192, Timeout(ms)=600000) ran for 600031 "
        "milliseconds before timing out."
    )
    assert "Some NCCL operations have failed or timed out." in lines[-1]
    assert not any("taking the entire process down" in line for line in lines)


def test_a_stuck_collective_ran_past_the_timeout() -> None:
    stuck = Collective.stuck(random.Random(3), forward_steps=100, layers=36, running=3)
    assert stuck.ran_ms > TIMEOUT_MS
    assert stuck.numel % 3 == 0
    assert stuck.lines(V("2.8.0"), 0)[0].startswith("[rank0]:[E")


def test_openai_chunks_are_compact_and_end_with_usage_then_done() -> None:
    load = _model()
    request = load.submit(10, 6, streamed=True)
    stream = OpenAIStream("cmpl-1", 1, "m", chat=False, include_usage=True)
    events = stream.events(load, request, lambda a, b: piece(a, b, request.rid, repeat=False))
    clock = 0.0
    while request.finished is None:
        clock += 0.01
        load.advance(clock)
    out = list(events)
    assert out[-1] == DONE
    payloads = [json.loads(chunk[len(b"data: ") :]) for chunk in out[:-1]]
    assert all(b", " not in chunk for chunk in out[:-1])
    assert [p["choices"][0]["finish_reason"] for p in payloads[:-1]][-1] == "length"
    assert payloads[-1]["choices"] == []
    assert payloads[-1]["usage"]["completion_tokens"] == 6
    text = "".join(p["choices"][0]["text"] for p in payloads[:-1])
    assert text == generated(6, request.rid, repeat=False)


def test_the_wedging_scenarios_and_their_flag() -> None:
    assert {"wedged", "nccl-timeout", "engine-dead"} <= set(SCENARIOS)
    assert Scenario.parse("wedged").name == "wedged"
    cfg = parse_config(["--engine", "sglang", "--scenario", "wedged"])
    assert cfg.wedge_after == DEFAULT_WEDGE_AFTER
    cfg = parse_config(["--engine", "vllm", "--scenario", "engine-dead", "--wedge-after", "2.5"])
    assert cfg.wedge_after == 2.5
    with pytest.raises(SystemExit):
        parse_config(["--engine", "sglang", "--wedge-after", "-1"])


@pytest.mark.parametrize(
    ("engine", "scenario", "version"),
    [
        ("llamacpp", "nccl-timeout", None),
        ("llamacpp", "engine-dead", None),
        ("tgi", "nccl-timeout", None),
        ("tgi", "engine-dead", None),
        ("sglang", "engine-dead", None),
        ("vllm", "engine-dead", "0.7.3"),
    ],
)
def test_scenarios_not_simulated_say_why(
    engine: str, scenario: str, version: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--engine", engine, "--scenario", scenario]
    if version:
        argv += ["--engine-version", version]
    with pytest.raises(SystemExit) as exit_info:
        parse_config(argv)
    assert exit_info.value.code == 2
    assert f"{scenario} is not simulated for {engine}" in capsys.readouterr().err
