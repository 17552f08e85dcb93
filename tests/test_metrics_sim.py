"""Cross-check: the parsers read what the simulator writes (the two share no code).

The primary tests are the reference lines in test_metrics_parser.py; these make
sure a realistic log, startup to shutdown, parses end to end: metric lines,
the run boundary, and the server's own report of its arguments.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from sim_helpers import Sim

from tui.core.launch.argv import argv_from_cmdline
from tui.core.launch.diff import launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.metrics.boundaries import LogScanner, RunEvent, RunEventKind
from tui.core.metrics.model import Metric, MetricSample

pytestmark = pytest.mark.integration

SPEC_VLLM = json.dumps({"method": "eagle", "num_speculative_tokens": 3})
SERVERS = {
    "sglang": (
        "--model-path",
        "Qwen/Qwen3-8B",
        "--speculative-algorithm",
        "EAGLE",
        "--decode-log-interval",
        "5",
    ),
    "vllm": ("--model", "Qwen/Qwen3-8B", "--speculative-config", SPEC_VLLM),
}


def drive(sim: Sim, engine: str) -> None:
    """A few concurrent requests, enough for decode and stats lines."""
    if engine == "sglang":
        path, payload = "/generate", {"text": "hi", "sampling_params": {"max_new_tokens": 120}}
    else:
        path = "/v1/completions"
        payload = {"model": "Qwen/Qwen3-8B", "prompt": "hi", "max_tokens": 120}
    threads = [threading.Thread(target=sim.post, args=(path, payload)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.fixture(scope="module")
def sim_logs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[Sim, str]]]:
    """One sglang and one vllm sim, run at the same time; their logs once they stopped."""
    tmp = tmp_path_factory.mktemp("sims")
    sims = {
        engine: Sim(
            tmp,
            engine,
            "--load-seconds",
            "0.3",
            "--seed",
            "1",
            *(["--stats-interval", "0.5"] if engine == "vllm" else []),
            server=SERVERS[engine],
            state=tmp / f"state-{engine}",
        )
        for engine in SERVERS
    }
    try:
        for sim in sims.values():
            sim.wait_ready()
        drivers = [threading.Thread(target=drive, args=(s, e)) for e, s in sims.items()]
        for thread in drivers:
            thread.start()
        for thread in drivers:
            thread.join()
        sims["vllm"].wait_for(r"SpecDecoding metrics", timeout=10)
        sims["vllm"].wait_for(r"Engine 000: Avg prompt throughput", timeout=10)
        yield {engine: (sim, sim.text()) for engine, sim in sims.items()}
    finally:
        for sim in sims.values():
            sim.stop()


def scan(text: str) -> list[MetricSample | RunEvent]:
    scanner = LogScanner(reference=datetime.now())
    found = []
    offset = 0
    for raw in text.encode().split(b"\n"):
        item = scanner.feed(raw.decode(), offset)
        offset += len(raw) + 1
        if item is not None:
            found.append(item)
    return found


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_parser_reads_a_sim_log(sim_logs: dict[str, tuple[Sim, str]], engine: str) -> None:
    sim, text = sim_logs[engine]
    found = scan(text)
    events = [f for f in found if isinstance(f, RunEvent)]
    samples = [f for f in found if isinstance(f, MetricSample)]
    assert [e.kind for e in events] == [RunEventKind.STARTED, RunEventKind.READY]
    assert events[0].offset == 0
    assert samples and all(s.run == 1 for s in samples)
    assert all(s.engine == engine for s in samples)
    # offsets point at the lines
    raw = sim.raw()
    for sample in samples:
        line = raw[sample.offset :].split(b"\n", 1)[0].decode()
        assert LogScanner().parser.parse_line(line, 0) is not None
    kinds = {s.kind for s in samples}
    values = {m for s in samples for m in s.values}
    if engine == "sglang":
        assert "sglang-decode" in kinds and "sglang-prefill" in kinds
    else:
        assert "vllm-stats" in kinds and "vllm-spec" in kinds
    assert {Metric.GEN_THROUGHPUT, Metric.ACCEPT_LEN, Metric.ACCEPT_RATE, Metric.RUNNING} <= values
    for sample in samples:
        for metric in (Metric.ACCEPT_RATE, Metric.TOKEN_USAGE):
            if metric in sample.values:
                assert 0 <= sample.values[metric] <= 1


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_servers_own_args_match_its_command_line(
    sim_logs: dict[str, tuple[Sim, str]], engine: str
) -> None:
    sim, text = sim_logs[engine]
    reported = next(r for line in text.splitlines() if (r := parse_reported(line)) is not None)
    expected = {
        "sglang": "sglang-server-args",
        "vllm": "vllm-non-default-args",
    }[engine]
    assert reported.format.form == expected
    actual = argv_from_cmdline(Path(f"/proc/{sim.pid}/cmdline").read_bytes())
    assert actual[-len(SERVERS[engine]) :] == SERVERS[engine]
    diff = launch_diff(sim.argv, actual, reported)
    assert diff.missing == () and diff.changed == ()
    assert diff.speculative_intended and diff.speculative_running
