"""A canonical metric holds only the values it can take: finite, at least 0, and at most 1
for a fraction (a fraction above 1 is dropped, never clipped), whichever engine's line or
``/metrics`` page printed it."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from tui.core.metrics.model import FRACTIONS, Metric, MetricSample, admissible, canonical
from tui.core.metrics.prometheus import PrometheusReader
from tui.engines import SPECS
from tui.engines.spec import new_reader

pytestmark = pytest.mark.unit

WHEN = datetime(2026, 5, 1, 12, 0, 0)
TABLE = {"#running-req": Metric.RUNNING, "token usage": Metric.TOKEN_USAGE}


def reader_of(engine: str):
    factory = SPECS[engine].reader
    assert factory is not None
    return new_reader(factory, reference=WHEN, clock=lambda: WHEN, started=WHEN, utc_offset=0)


@pytest.mark.parametrize("metric", list(Metric))
def test_every_metric_takes_finite_values_from_0_and_a_fraction_up_to_1(metric: Metric) -> None:
    top = 1.0 if metric in FRACTIONS else 1e12
    assert admissible(metric, 0.0) and admissible(metric, top)
    for number in (-5.0, -1e-9, math.nan, math.inf, -math.inf):
        assert not admissible(metric, number), number
    assert admissible(metric, 1.5) is (metric not in FRACTIONS)


def test_a_line_table_leaves_out_negative_and_out_of_range_values() -> None:
    assert canonical("#running-req: -5, token usage: -50%", TABLE) == {}
    assert canonical("#running-req: 5, token usage: 150%", TABLE) == {Metric.RUNNING: 5.0}
    assert canonical("#running-req: 0, token usage: 1.2", TABLE) == {Metric.RUNNING: 0.0}
    assert canonical("#running-req: 3, token usage: 50%", TABLE) == {
        Metric.RUNNING: 3.0,
        Metric.TOKEN_USAGE: 0.5,
    }


def test_a_sample_keeps_only_admissible_values_whoever_built_it() -> None:
    values = {
        Metric.RUNNING: -5.0,
        Metric.QUEUED: 2.0,
        Metric.TOKEN_USAGE: 1.01,
        Metric.ACCEPT_RATE: 1.0,
        Metric.GEN_THROUGHPUT: math.nan,
        Metric.PREFILL_THROUGHPUT: math.inf,
    }
    sample = MetricSample(ts=WHEN, kind="k", engine="e", body="", values=values, offset=None)
    assert sample.values == {Metric.QUEUED: 2.0, Metric.ACCEPT_RATE: 1.0}
    whole = {Metric.QUEUED: 2.0}
    assert MetricSample(ts=WHEN, kind="k", engine="e", body="", values=whole, offset=0).values == (
        whole
    )


def test_an_sglang_line_with_negative_figures_gives_only_the_others() -> None:
    line = (
        "[2025-05-01 12:00:00 TP0] Decode batch. #running-req: -5, #token: 5231, token usage: "
        "-0.5, gen throughput (token/s): 612.44, #queue-req: 0"
    )
    (sample,) = reader_of("sglang").records(line, 0)
    assert sample.values[Metric.GEN_THROUGHPUT] == 612.44 and sample.values[Metric.QUEUED] == 0
    assert Metric.RUNNING not in sample.values and Metric.TOKEN_USAGE not in sample.values
    assert sample.raw["#running-req"] == "-5"  # the line's text is kept as printed


def test_a_llama_server_timing_with_a_negative_rate_is_no_sample() -> None:
    reader = reader_of("llamacpp")
    good = (
        "       eval time =    1000.00 ms /   100 tokens"
        " (   10.00 ms per token,   100.00 tokens per second)"
    )
    (sample,) = reader.records(good, 0)
    assert sample.values == {Metric.GEN_THROUGHPUT: 100.0}
    assert reader.records(good.replace("100.00 tokens", "-5.00 tokens"), 0) == []
    spec = "draft acceptance rate = 1.50000 (   70 accepted /   304 generated)"
    assert reader.records(spec, 0) == []  # a rate above 1 is no rate


def test_a_metrics_page_with_negative_or_out_of_range_gauges_gives_only_the_others() -> None:
    page = (
        "vllm:num_requests_running -5\nvllm:num_requests_waiting 3\nvllm:kv_cache_usage_perc 1.5\n"
    )
    sample = PrometheusReader().read(page, WHEN)
    assert sample is not None
    assert Metric.RUNNING not in sample.values and Metric.TOKEN_USAGE not in sample.values
    assert sample.values[Metric.QUEUED] == 3
