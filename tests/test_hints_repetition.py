"""The repetition trap's hints: a canary's loop beside near-perfect acceptance
(``sampling-loop``), and an accept rate that collapsed after it was healthy
(``accept-collapse``), each firing and staying quiet at its edges, with its evidence."""

from __future__ import annotations

import pytest

from tui.agent.protocol import SAMPLING_CONFIG, SAMPLING_MODEL
from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.hints import HintRule, RequestStats, hints
from tui.core.launch.diff import launch_diff
from tui.core.metrics.model import Metric
from tui.core.metrics.series import SeriesKey, SeriesPoint, SeriesStore, ServiceMetrics

pytestmark = pytest.mark.unit

SERVICE = "gpu1/qwen"
T0 = 1_800_000_000.0
SGLANG = ("python3", "-m", "sglang.launch_server", "--model-path", "/models/q")
EAGLE = (*SGLANG, "--speculative-algorithm", "EAGLE3", "--speculative-num-steps", "3")
VLLM = (
    *("vllm", "serve", "/models/q", "--speculative-config"),
    '{"method": "eagle3", "num_speculative_tokens": 4}',
)
LOOP = "I will repeat the answer. " * 4


def metrics(series: dict[Metric, list[float]], *, run: int = 1) -> ServiceMetrics:
    """A snapshot with one point every 10 s ending now, log offsets 1000, 1100, ..."""
    store = SeriesStore()
    for metric, values in series.items():
        start = T0 - 10.0 * (len(values) - 1)
        for i, value in enumerate(values):
            point = SeriesPoint(start + 10.0 * i, value, run, 1000 + 100 * i)
            store.add(SeriesKey(SERVICE, metric), point)
    return store.snapshot(SERVICE, now=T0 + 2, stale_after=30)


def canary(
    outcome: CanaryOutcome = CanaryOutcome.REPETITION,
    *,
    sampling: dict[str, float] | None = None,
    source: str = SAMPLING_CONFIG,
    recommended: dict[str, float] | None = None,
    problem: str | None = None,
) -> CanaryResult:
    return CanaryResult(
        host="gpu1",
        service="qwen",
        outcome=outcome,
        sent_at=T0,
        run_pid=4242,
        output=LOOP,
        repetition=1.0 if outcome is CanaryOutcome.REPETITION else 0.0,
        sampling={"temperature": 1.0, "top_p": 1.0} if sampling is None else sampling,
        sampling_source=source,
        recommended=recommended,
        sampling_problem=problem,
    )


PERFECT = {
    Metric.GEN_THROUGHPUT: [900, 910, 905, 900, 899],
    Metric.ACCEPT_RATE: [0.97, 0.98, 0.99, 0.98, 0.99],
}


def rules(found: list) -> list[HintRule]:
    return [h.rule for h in found]


# ------------------------------------------------------------------ sampling-loop


def test_a_looping_canary_with_perfect_acceptance_blames_sampling() -> None:
    recommended = {"temperature": 0.6, "top_p": 0.95}
    found = hints(metrics(PERFECT), canary=canary(recommended=recommended))
    (hint,) = found
    assert hint.rule is HintRule.SAMPLING_LOOP
    assert "comes from sampling, not from speculative decoding" in hint.message
    said, sampling, accepted = hint.evidence
    assert "repetition 1.00" in said and "I will repeat the answer." in said
    # both sides of the sampling on one line
    assert sampling == (
        "the canary sent temperature 1, top_p 1 (hosts.yaml canary.sampling); "
        "the model recommends temperature 0.6, top_p 0.95"
    )
    assert accepted == (
        "accept rate 0.98 (median of the last 5 values, run 1) (log bytes 1000 to 1400)"
    )


def test_the_evidence_says_when_generation_config_was_not_read() -> None:
    found = hints(metrics(PERFECT), canary=canary(problem="no such file: /models/q"))
    (hint,) = found
    assert hint.evidence[1].endswith(
        "the model's generation_config.json was not read (no such file: /models/q)"
    )


def test_the_models_own_sampling_is_named_with_its_file() -> None:
    sampled = CanaryResult(
        host="gpu1",
        service="qwen",
        outcome=CanaryOutcome.REPETITION,
        output=LOOP,
        repetition=0.9,
        sampling={"temperature": 0.6},
        sampling_source=SAMPLING_MODEL,
        sampling_path="/models/q/generation_config.json",
        recommended={"temperature": 0.6},
    )
    (hint,) = hints(metrics(PERFECT), canary=sampled)
    assert (
        "(the model's generation_config.json (/models/q/generation_config.json))"
        in (hint.evidence[1])
    )


def test_accept_length_at_its_most_counts_when_the_draft_tokens_are_known() -> None:
    lengths = {Metric.ACCEPT_LEN: [3.8, 3.9, 3.75, 3.85, 3.9]}  # of at most 4 (3 steps + 1)
    launch = launch_diff(EAGLE, EAGLE, None)
    (hint,) = hints(metrics(lengths), launch=launch, canary=canary())
    assert hint.rule is HintRule.SAMPLING_LOOP
    assert hint.evidence[2].startswith("accept length 3.85 of at most 4 (3 draft tokens per step")
    # 3.7 = 4 - 0.1 * 3 is the edge; under it drafts are not accepted nearly always
    edge = {Metric.ACCEPT_LEN: [3.7, 3.7, 3.7]}
    assert rules(hints(metrics(edge), launch=launch, canary=canary())) == [HintRule.SAMPLING_LOOP]
    under = {Metric.ACCEPT_LEN: [3.6, 3.69, 3.65]}
    assert hints(metrics(under), launch=launch, canary=canary()) == []


def test_vllms_draft_tokens_come_from_its_speculative_config() -> None:
    lengths = {Metric.ACCEPT_LEN: [4.7, 4.8, 4.9]}  # of at most 5
    (hint,) = hints(metrics(lengths), launch=launch_diff(VLLM, VLLM, None), canary=canary())
    assert "of at most 5 (4 draft tokens" in hint.evidence[2]


def test_accept_length_alone_says_nothing_without_the_draft_tokens() -> None:
    lengths = {Metric.ACCEPT_LEN: [3.9, 3.9, 3.9]}
    assert hints(metrics(lengths), canary=canary()) == []
    assert hints(metrics(lengths), launch=launch_diff(SGLANG, SGLANG, None), canary=canary()) == []


@pytest.mark.parametrize(
    ("rates", "outcome"),
    [
        ([0.97, 0.98, 0.99], CanaryOutcome.OK),  # the canary does not loop
        ([0.97, 0.98, 0.99], CanaryOutcome.TIMEOUT),
        ([0.90, 0.94, 0.96], CanaryOutcome.REPETITION),  # drafts often refused
        ([0.99, 0.99], CanaryOutcome.REPETITION),  # too few values
    ],
)
def test_sampling_loop_is_quiet_otherwise(rates: list[float], outcome: CanaryOutcome) -> None:
    found = hints(metrics({Metric.ACCEPT_RATE: rates}), canary=canary(outcome))
    assert HintRule.SAMPLING_LOOP not in rules(found)


def test_the_accept_rate_edge_is_095() -> None:
    edge = metrics({Metric.ACCEPT_RATE: [0.95, 0.95, 0.95]})
    assert rules(hints(edge, canary=canary())) == [HintRule.SAMPLING_LOOP]
    assert hints(metrics({Metric.ACCEPT_RATE: [0.94, 0.95, 0.949]}), canary=canary()) == []


def test_without_a_canary_no_sampling_loop() -> None:
    assert hints(metrics(PERFECT)) == []


LONG = RequestStats(mean_output_tokens=8000, temperature=0.7)


def test_possible_repetition_stays_for_runs_without_a_looping_canary() -> None:
    assert rules(hints(metrics(PERFECT), requests=LONG)) == [HintRule.POSSIBLE_REPETITION]
    ok = canary(CanaryOutcome.OK)
    assert rules(hints(metrics(PERFECT), requests=LONG, canary=ok)) == [
        HintRule.POSSIBLE_REPETITION
    ]


def test_sampling_loop_does_not_repeat_possible_repetitions_advice() -> None:
    found = hints(metrics(PERFECT), requests=LONG, canary=canary())
    assert rules(found) == [HintRule.SAMPLING_LOOP]


# ------------------------------------------------------------------ accept-collapse

HEALTHY_THEN_LOW = [0.8, 0.82, 0.79, 0.81, 0.8, 0.2, 0.15, 0.1]


def test_an_accept_rate_that_fell_after_it_was_healthy_is_a_collapse() -> None:
    (hint,) = hints(metrics({Metric.ACCEPT_RATE: HEALTHY_THEN_LOW}))
    assert hint.rule is HintRule.ACCEPT_COLLAPSE
    assert "no longer matches the target" in hint.message
    before, after = hint.evidence
    assert before == "accept rate 0.80 (median of 5 earlier values, run 1) (log bytes 1000 to 1400)"
    assert after == (
        "accept rate 0.15 (median of the latest 3, each under 0.40) (log bytes 1500 to 1700)"
    )


@pytest.mark.parametrize(
    "rates",
    [
        [0.8, 0.82, 0.79, 0.81, 0.8, 0.2, 0.4, 0.1],  # one recent value at half: not yet
        [0.8, 0.82, 0.79, 0.81, 0.2, 0.15, 0.1],  # four earlier values only
        [0.55, 0.58, 0.59, 0.57, 0.56, 0.1, 0.1, 0.1],  # never healthy
        [0.8, 0.82, 0.79, 0.81, 0.8, 0.7, 0.75, 0.72],  # a dip, no collapse
        [0.8, 0.82, 0.79, 0.81, 0.8, 0.1, 0.1, 0.79],  # it came back
    ],
)
def test_accept_collapse_is_quiet_at_its_edges(rates: list[float]) -> None:
    assert hints(metrics({Metric.ACCEPT_RATE: rates})) == []


def test_the_healthy_edge_is_06() -> None:
    rates = [0.6, 0.6, 0.6, 0.6, 0.6, 0.29, 0.29, 0.29]
    assert rules(hints(metrics({Metric.ACCEPT_RATE: rates}))) == [HintRule.ACCEPT_COLLAPSE]


def test_accept_lengths_collapse_as_tokens_accepted_per_step() -> None:
    lengths = [3.4, 3.5, 3.3, 3.4, 3.4, 1.2, 1.1, 1.3]  # 2.4 of 3 drafts accepted, then 0.2
    launch = launch_diff(EAGLE, EAGLE, None)
    (hint,) = hints(metrics({Metric.ACCEPT_LEN: lengths}), launch=launch)
    assert hint.rule is HintRule.ACCEPT_COLLAPSE
    assert hint.evidence[0].startswith("accept length 3.40 (median of 5 earlier values")
    assert "each under 2.20" in hint.evidence[1]
    # draft tokens unknown: healthy at 0.6 tokens accepted per step
    assert rules(hints(metrics({Metric.ACCEPT_LEN: lengths}))) == [HintRule.ACCEPT_COLLAPSE]
    low = [1.5, 1.5, 1.5, 1.5, 1.5, 1.0, 1.0, 1.0]
    assert hints(metrics({Metric.ACCEPT_LEN: low})) == []
