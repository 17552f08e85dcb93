"""SGLang and vLLM as real users' servers log them, end to end: a sim writing one of the
engines' non-default formats (SGLang under another program's logger, stdlib's format or a
JSON formatter; vLLM's coloured and JSON formatters) and started by hand reaches LIVE
through the probe by its own ready line, dated by its own stamp, with the metrics of its
log lines placed in its run. The parsers' side of each format is tests/test_engine_drift.py.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_helpers import Sim, wait_until

from tui.config import Host
from tui.core.metrics.model import Metric
from tui.core.metrics.prometheus import PrometheusReaders
from tui.core.report import ServiceFacts
from tui.core.verdicts import Verdict
from tui.hostsfile import parse_config
from tui.remote.local import LocalTransport
from tui.remote.probe import REPORT_TAIL, probe_services

pytestmark = pytest.mark.integration

#: (engine, --log-format, the text of a metric line in that format)
FORMATS = [
    ("sglang", "plain", "Decode batch"),
    ("sglang", "stdlib", "Decode batch"),
    ("sglang", "json", "Decode batch"),
    ("vllm", "color", "Avg generation throughput"),
    ("vllm", "json", "Avg generation throughput"),
]


@pytest.fixture
def sims() -> Iterator[list[Sim]]:
    started: list[Sim] = []
    try:
        yield started
    finally:
        for sim in started:
            sim.stop()


def host_of(engine: str, sim: Sim) -> Host:
    text = (
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      svc: {{engine: {engine}, log: '{sim.log_path}', port: {sim.port}}}\n"
    )
    return parse_config(text).hosts["gpu"]


@pytest.mark.parametrize(("engine", "form", "metric_line"), FORMATS)
async def test_a_server_logging_in_another_format_reaches_live_by_its_own_lines(
    tmp_path: Path, sims: list[Sim], engine: str, form: str, metric_line: str
) -> None:
    version = ("--engine-version", "0.33.0") if engine == "vllm" else ()
    sim = Sim(
        tmp_path,
        engine,
        *version,
        "--log-format",
        form,
        "--load-seconds",
        "0.5",
        "--stats-interval",
        "0.5",
        "--seed",
        "1",
    )
    sims.append(sim)
    sim.wait_ready()
    for _ in range(3):
        status, _ = sim.post("/v1/completions", {"prompt": "hello", "max_tokens": 40})
        assert status == 200
    wait_until(lambda: sim.text().count(metric_line) >= 2, 30, "metric lines written")
    host = host_of(engine, sim)
    facts = ServiceFacts.of(host.name, host.services["svc"], prometheus=PrometheusReaders())
    ((assessment, details),) = await probe_services(
        LocalTransport(), host, [host.services["svc"]], tail_bytes=REPORT_TAIL
    )
    report = facts.observe(assessment, details)
    a = report.assessment
    assert a.verdict is Verdict.LIVE, a.summary
    assert a.ready is not None and a.ready.seen is True and not a.ready.by_http, a.ready
    assert a.run is not None
    if engine == "sglang":  # vLLM's ready line is uvicorn's, which carries no stamp
        assert a.ready.at is not None
        assert int(a.run.root.start_time) <= a.ready.at <= a.checked_at
    metrics = report.metrics
    assert metrics is not None
    latest = metrics.latest_of(Metric.GEN_THROUGHPUT) or metrics.latest_of(Metric.RUNNING)
    assert latest is not None and latest.offset is not None and latest.run == 1
    # placed by the line's own stamp, within this run
    assert a.run.root.start_time - 1 <= latest.ts <= a.checked_at + 1
    line = sim.raw()[latest.offset :].split(b"\n", 1)[0].decode()
    assert re.search(re.escape(metric_line), line), line
