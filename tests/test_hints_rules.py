"""Each hint fires on its case, with evidence, and stays quiet on a healthy service."""

from __future__ import annotations

import pytest

from tui.core.gpu import attribute, read_apps, read_gpus
from tui.core.hints import HintRule, RequestStats, hints
from tui.core.launch.diff import launch_diff
from tui.core.launch.reported import parse_reported
from tui.core.metrics.model import Metric
from tui.core.metrics.series import SeriesKey, SeriesPoint, SeriesStore, ServiceMetrics

pytestmark = pytest.mark.unit

SERVICE = "gpu1/qwen"
T0 = 1_800_000_000.0
SGLANG = ("python3", "-m", "sglang.launch_server", "--model-path", "Q")
SPEC = (*SGLANG, "--speculative-algorithm", "EAGLE3")


def metrics(
    series: dict[Metric, list[float]], *, run: int = 1, step: float = 10.0
) -> ServiceMetrics:
    """A snapshot with the given series, one point every ``step`` seconds ending now."""
    store = SeriesStore()
    end = T0
    for metric, values in series.items():
        start = end - step * (len(values) - 1)
        for i, value in enumerate(values):
            point = SeriesPoint(start + i * step, value, run, 1000 + 100 * i)
            store.add(SeriesKey(SERVICE, metric), point)
    return store.snapshot(SERVICE, now=end + 2, stale_after=30)


HEALTHY = {
    Metric.GEN_THROUGHPUT: [1000, 1040, 990, 1020, 1010],
    Metric.QUEUED: [0, 1, 0, 0, 1],
    Metric.RUNNING: [32, 30, 31, 33, 32],
    Metric.ACCEPT_LEN: [3.4, 3.3, 3.5, 3.4, 3.4],
    Metric.ACCEPT_RATE: [0.81, 0.79, 0.82, 0.80, 0.81],
    Metric.KV_TOKENS: [40000, 41000, 42000, 41000, 40000],
}
POWERFUL = read_gpus(0, "0, NVIDIA H100 80GB HBM3, 620.00, 700.00, 98, 72853, 81559, 61\n")
WEAK = read_gpus(
    0,
    "0, NVIDIA H100 80GB HBM3, 400.00, 700.00, 60, 72853, 81559, 51\n"
    "1, NVIDIA H100 80GB HBM3, 640.00, 700.00, 97, 72853, 81559, 60\n",
)
APPS = read_apps(0, "41234, 72852\n")


def healthy_hints(**overrides: object) -> list:
    args: dict[str, object] = {
        "launch": launch_diff(SPEC, SPEC, None),
        "gpus": attribute(POWERFUL, APPS, {41234}),
        "requests": RequestStats(mean_output_tokens=600, temperature=0.7),
    }
    args.update(overrides)
    return hints(metrics(HEALTHY), **args)  # type: ignore[arg-type]


def test_a_healthy_service_gets_no_hints() -> None:
    assert healthy_hints() == []
    assert hints(metrics(HEALTHY)) == []
    assert hints(metrics({})) == []


# --- speculative decoding without acceptance metrics ---------------------------------------


def test_spec_intended_but_no_accept_metrics() -> None:
    no_spec = {m: v for m, v in HEALTHY.items() if m not in (Metric.ACCEPT_LEN, Metric.ACCEPT_RATE)}
    actual = SGLANG  # the flag never reached the server
    found = hints(metrics(no_spec), launch=launch_diff(SPEC, actual, None))
    (hint,) = found
    assert hint.rule is HintRule.SPEC_NO_ACCEPT
    assert any("EAGLE3" in e for e in hint.evidence)
    assert any("--speculative-algorithm" in e and "missing" in e for e in hint.evidence)
    assert any("run 1" in e and "5 throughput values" in e for e in hint.evidence)
    assert hint.to_json()["rule"] == "spec-no-accept-metrics"


def test_spec_reported_but_no_accept_metrics() -> None:
    no_spec = {Metric.GEN_THROUGHPUT: [100, 100, 100]}
    reported = parse_reported(
        "[2026-01-01 00:00:00] server_args={'speculative_algorithm': 'NEXTN'}"
    )
    (hint,) = hints(metrics(no_spec), launch=launch_diff(None, SGLANG, reported))
    assert hint.rule is HintRule.SPEC_NO_ACCEPT
    assert any("reports speculative decoding: NEXTN" in e for e in hint.evidence)


def test_spec_hint_is_quiet_without_spec_or_before_decoding() -> None:
    no_spec = {Metric.GEN_THROUGHPUT: [100, 100, 100]}
    assert hints(metrics(no_spec), launch=launch_diff(SGLANG, SGLANG, None)) == []
    starting = {Metric.GEN_THROUGHPUT: [100]}
    assert hints(metrics(starting), launch=launch_diff(SPEC, SGLANG, None)) == []
    idle = {Metric.GEN_THROUGHPUT: [0.0, 0.0, 0.0, 0.0]}  # vLLM stats lines with no traffic
    assert hints(metrics(idle), launch=launch_diff(SPEC, SGLANG, None)) == []


# --- low GPU power while requests run ---------------------------------------------------


def test_low_gpu_power_while_requests_run() -> None:
    found = healthy_hints(gpus=attribute(WEAK, APPS, {41234}))
    (hint,) = found
    assert hint.rule is HintRule.LOW_GPU_POWER
    assert hint.evidence[0] == "GPU 0: 400 W of 700 W (57%)"
    assert len([e for e in hint.evidence if e.startswith("GPU ")]) == 1  # GPU 1 is fine
    assert any("32 requests running" in e for e in hint.evidence)


def test_low_gpu_power_is_quiet_when_idle_or_stale_or_unknown() -> None:
    idle = {**HEALTHY, Metric.RUNNING: [0, 0, 0]}
    assert hints(metrics(idle), gpus=attribute(WEAK, APPS, {41234})) == []
    store = SeriesStore()
    store.add(SeriesKey(SERVICE, Metric.RUNNING), SeriesPoint(T0, 30, 1, 0))
    stale = store.snapshot(SERVICE, now=T0 + 300, stale_after=30)
    assert hints(stale, gpus=attribute(WEAK, APPS, {41234})) == []
    unknown = read_gpus(0, "0, NVIDIA GB10, [N/A], [N/A], 60, [N/A], [N/A], 51\n")
    assert healthy_hints(gpus=attribute(unknown, APPS, {41234})) == []


# --- stall -----------------------------------------------------------------------------------


def test_queue_growing_while_throughput_falls_is_a_stall() -> None:
    stalled = {
        **HEALTHY,
        Metric.QUEUED: [1, 3, 6, 9, 14],
        Metric.GEN_THROUGHPUT: [1000, 900, 600, 300, 120],
    }
    (hint,) = hints(metrics(stalled))
    assert hint.rule is HintRule.STALL
    assert hint.evidence[0].startswith("queue 1 → 14 requests over 40 s")
    assert "log bytes 1000 to 1400" in hint.evidence[0]
    assert "1,000 tok/s at its peak → 120 tok/s" in hint.evidence[1]


@pytest.mark.parametrize(
    ("queue", "throughput"),
    [
        ([1, 3, 6, 9, 14], [1000, 1010, 990, 1000, 1005]),  # busier, but keeping up
        ([14, 9, 6, 3, 1], [1000, 900, 600, 300, 120]),  # load going away
        ([1, 3], [1000, 100]),  # too few values
    ],
)
def test_stall_is_quiet_otherwise(queue: list[float], throughput: list[float]) -> None:
    series = {**HEALTHY, Metric.QUEUED: queue, Metric.GEN_THROUGHPUT: throughput}
    assert [h.rule for h in hints(metrics(series))] == []


def test_stall_only_looks_at_the_recent_window() -> None:
    old_then_flat = {
        **HEALTHY,
        Metric.QUEUED: [1, 20] + [20] * 20,
        Metric.GEN_THROUGHPUT: [1000, 100] + [100] * 20,
    }
    assert hints(metrics(old_then_flat)) == []


# --- possible repetition -----------------------------------------------------------------


def test_near_perfect_acceptance_on_long_outputs_suggests_repetition() -> None:
    series = {**HEALTHY, Metric.ACCEPT_RATE: [0.97, 0.99, 1.0, 0.99, 0.98]}
    (hint,) = hints(
        metrics(series), requests=RequestStats(mean_output_tokens=7000, temperature=0.7)
    )
    assert hint.rule is HintRule.POSSIBLE_REPETITION
    assert "sampling parameters" in hint.message
    assert hint.evidence[0].startswith("accept rate 0.99 (median of the last 5 values, run 1)")
    assert hint.evidence[1] == "mean output 7,000 tokens"
    assert hint.evidence[2] == "temperature 0.7"


def test_repetition_from_tokens_per_running_request_when_lengths_are_unknown() -> None:
    series = {
        **HEALTHY,
        Metric.ACCEPT_RATE: [0.99] * 5,
        Metric.KV_TOKENS: [40000] * 5,
        Metric.RUNNING: [8] * 5,
    }
    (hint,) = hints(metrics(series))
    assert hint.rule is HintRule.POSSIBLE_REPETITION
    assert "5,000 tokens held per running request" in hint.evidence[1]
    assert "temperature unknown" in hint.evidence[2]


@pytest.mark.parametrize(
    ("rates", "requests"),
    [
        ([0.99] * 5, RequestStats(mean_output_tokens=7000, temperature=0.0)),  # greedy
        ([0.99] * 5, RequestStats(mean_output_tokens=300, temperature=0.7)),  # short outputs
        ([0.80, 0.99, 0.70, 0.99, 0.75], RequestStats(mean_output_tokens=7000, temperature=1)),
        ([0.99, 0.99], RequestStats(mean_output_tokens=7000, temperature=1)),  # too few values
    ],
)
def test_repetition_is_quiet_otherwise(rates: list[float], requests: RequestStats) -> None:
    series = {**HEALTHY, Metric.ACCEPT_RATE: rates}
    assert hints(metrics(series), requests=requests) == []
