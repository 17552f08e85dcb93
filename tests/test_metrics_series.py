"""Series per service: bounded, one per run, with run and offset on every point; /metrics."""

from __future__ import annotations

from datetime import datetime

import pytest

from tui.core.metrics.boundaries import LogScanner
from tui.core.metrics.model import Metric, MetricSample, Unit
from tui.core.metrics.prometheus import PrometheusReader
from tui.core.metrics.series import SeriesKey, SeriesPoint, SeriesStore
from tui.core.metrics.stamps import to_epoch
from tui.engines import Engine

pytestmark = pytest.mark.unit

DECODE = (
    "[2026-05-09 09:22:{s:02d}] Decode batch, #running-req: {run}, #token: 100, token usage: "
    "0.10, accept len: 3.00, accept rate: 0.70, cuda graph: True, gen throughput (token/s): "
    "{gen}.00, #queue-req: 0"
)
START = "[2026-05-09 09:22:00] server_args=ServerArgs(model_path='X')"


def feed(store: SeriesStore, lines: list[str], service: str = "qwen") -> LogScanner:
    scanner = LogScanner()
    offset = 0
    for line in lines:
        found = scanner.feed(line, offset)
        if isinstance(found, MetricSample):
            store.add_sample(service, found)
        elif found is not None:
            store.begin_run(service, found.run)
        offset += len(line) + 1
    return scanner


def test_two_runs_in_one_file_give_two_series() -> None:
    store = SeriesStore()
    first = [START, DECODE.format(s=1, run=1, gen=100), DECODE.format(s=2, run=2, gen=200)]
    second = [START, DECODE.format(s=30, run=5, gen=900)]
    feed(store, first + second)
    key = SeriesKey("qwen", Metric.GEN_THROUGHPUT)
    history = store.history(key)
    assert [s.run for s in history] == [1, 2]
    assert [s.values() for s in history] == [[100.0, 200.0], [900.0]]
    current = store.series(key)
    assert current is not None and current.run == 2 and current.values() == [900.0]
    # every point keeps the run and the byte offset of its line
    offsets = [p.offset for p in history[0]]
    assert offsets == [len(START) + 1, len(START) + 1 + len(first[1]) + 1]
    assert all(p.run == 1 for p in history[0])


def test_a_new_run_hides_the_old_runs_values_until_it_prints_its_own() -> None:
    store = SeriesStore()
    feed(store, [START, DECODE.format(s=1, run=1, gen=100), START])
    key = SeriesKey("qwen", Metric.ACCEPT_LEN)
    assert store.current_run("qwen") == 2
    assert store.series(key) is None
    assert store.latest(key, now=0.0, stale_after=10) is None
    assert [s.run for s in store.history(key)] == [1]


def test_series_are_bounded() -> None:
    store = SeriesStore(max_points=5, max_runs=2)
    key = SeriesKey("s", Metric.RUNNING)
    for run in (1, 2, 3):
        for i in range(20):
            store.add(key, SeriesPoint(float(i), float(i), run, i))
    history = store.history(key)
    assert [s.run for s in history] == [2, 3]
    assert all(len(s) == 5 for s in history)
    assert history[-1].values() == [15.0, 16.0, 17.0, 18.0, 19.0]
    # a late point of a run no longer kept is dropped; one of a kept older run is added
    assert store.add(key, SeriesPoint(99.0, 1.0, 1, None)) is False
    assert store.add(key, SeriesPoint(99.0, 1.0, 2, None)) is True
    assert store.series(key).run == 3  # type: ignore[union-attr]


def test_latest_gives_value_unit_and_age_and_says_when_it_is_stale() -> None:
    store = SeriesStore()
    sample = LogScanner().feed(DECODE.format(s=5, run=3, gen=1043), 777)
    assert isinstance(sample, MetricSample)
    store.add_sample("qwen", sample, utc_offset=3600)
    ts = to_epoch(datetime(2026, 5, 9, 9, 22, 5), 3600)
    key = SeriesKey("qwen", Metric.GEN_THROUGHPUT)
    fresh = store.latest(key, now=ts + 4, stale_after=30)
    assert fresh is not None
    assert (fresh.value, fresh.unit, fresh.age, fresh.stale) == (
        1043.0,
        Unit.TOKENS_PER_S,
        4,
        False,
    )
    assert fresh.offset == 777 and fresh.run == 0
    assert fresh.text == "1,043 tok/s"
    old = store.latest(key, now=ts + 31, stale_after=30)
    assert old is not None and old.stale
    assert old.to_json() == {
        "value": 1043.0,
        "unit": "tok/s",
        "age": 31,
        "stale": True,
        "run": 0,
        "offset": 777,
    }


def test_snapshot_is_the_current_run_for_hints_and_status() -> None:
    store = SeriesStore()
    feed(store, [START, DECODE.format(s=1, run=1, gen=100), START])
    feed(store, [DECODE.format(s=2, run=4, gen=300)], service="other")
    now = to_epoch(datetime(2026, 5, 9, 9, 22, 10))
    snap = store.snapshot("qwen", now=now, stale_after=30)
    assert snap.run == 2 and snap.latest == {} and snap.points == {}
    other = store.snapshot("other", now=now, stale_after=30)
    assert other.latest_of(Metric.RUNNING).value == 4  # type: ignore[union-attr]
    assert [p.value for p in other.series_of(Metric.GEN_THROUGHPUT)] == [300.0]
    assert set(other.to_json()) >= {"gen_throughput", "running", "accept_len", "token_usage"}


def test_labels_keep_dp_ranks_and_engines_apart() -> None:
    store = SeriesStore()
    for rank, gen in ((0, 100), (1, 200), (0, 110)):
        line = (
            f"[2026-05-09 09:22:05 DP{rank} TP{rank}] Decode batch, #running-req: 1, #token: 1, "
            f"token usage: 0.10, cuda graph: True, gen throughput (token/s): {gen}.00, "
            "#queue-req: 0"
        )
        sample = LogScanner().feed(line, 0)
        assert isinstance(sample, MetricSample)
        store.add_sample("s", sample)
    assert store.series(SeriesKey("s", Metric.GEN_THROUGHPUT, "DP0")).values() == [100.0, 110.0]  # type: ignore[union-attr]
    assert store.series(SeriesKey("s", Metric.GEN_THROUGHPUT, "DP1")).values() == [200.0]  # type: ignore[union-attr]
    assert SeriesKey("s", Metric.GEN_THROUGHPUT, "DP1").name == "gen_throughput[DP1]"


@pytest.mark.parametrize(
    ("engine", "source", "label"),
    [
        (Engine.SGLANG, "", ""),
        (Engine.SGLANG, "TP0", ""),
        (Engine.SGLANG, "DP3 TP3 EP3", "DP3"),
        (Engine.VLLM, "Engine 000", ""),
        (Engine.VLLM, "Engine 002", "engine 2"),
        (Engine.VLLM, "2 Engines Aggregated", ""),
    ],
)
def test_series_labels(engine: Engine, source: str, label: str) -> None:
    assert engine.spec.series_label(source) == label


def test_gpu_values_go_in_as_their_own_series() -> None:
    store = SeriesStore()
    store.add_values("s", {Metric.GPU_POWER: 402.0}, ts=10.0, run=1, label="gpu0")
    store.add_values("s", {Metric.GPU_POWER: float("nan")}, ts=12.0, run=1, label="gpu0")
    series = store.series(SeriesKey("s", Metric.GPU_POWER, "gpu0"))
    assert series is not None and series.values() == [402.0]
    assert series.last is not None and series.last.offset is None


@pytest.mark.parametrize(
    ("unit", "value", "text"),
    [
        (Unit.TOKENS_PER_S, 1043.77, "1,044 tok/s"),
        (Unit.TOKENS_PER_S, 9.62, "9.6 tok/s"),
        (Unit.FRACTION, 0.812, "81%"),
        (Unit.TOKENS_PER_STEP, 3.41, "3.41 tok/step"),
        (Unit.REQUESTS, 12.0, "12 req"),
        (Unit.WATTS, 402.17, "402 W"),
    ],
)
def test_units_format_values(unit: Unit, value: float, text: str) -> None:
    assert unit.format(value) == text


# --- /metrics ----------------------------------------------------------------------------

SGLANG_METRICS = """\
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{engine_type="unified",model_name="Qwen-32B",pp_rank="0",tp_rank="0"} 7.0
sglang:num_running_reqs{engine_type="unified",model_name="Qwen-32B",pp_rank="0",tp_rank="1"} 7.0
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{engine_type="unified",model_name="Q",pp_rank="0",tp_rank="0"} 0.83712844574
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{engine_type="unified",model_name="Qwen-32B",pp_rank="0",tp_rank="0"} 0.25
# HELP sglang:spec_accept_length The average acceptance length.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{engine_type="unified",model_name="Qwen-32B",pp_rank="0",tp_rank="0"} 3.2
# HELP sglang:some_new_gauge Something new.
# TYPE sglang:some_new_gauge gauge
sglang:some_new_gauge{model_name="Qwen-32B"} 42.0
"""


def vllm_metrics(generated: float, accepted: float, drafts: float, draft_tokens: float) -> str:
    return f"""\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="X"}} 5.0
vllm:num_requests_running{{engine="1",model_name="X"}} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="X"}} 2.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="X"}} 0.5
vllm:kv_cache_usage_perc{{engine="1",model_name="X"}} 0.3
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{{engine="0",model_name="X"}} {generated}
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{{engine="0",model_name="X"}} {drafts}
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{{engine="0",model_name="X"}} {draft_tokens}
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{{engine="0",model_name="X"}} {accepted}
vllm:spec_decode_num_accepted_tokens_per_pos_total{{engine="0",model_name="X",position="0"}} 1.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{engine="0",le="0.1",model_name="X"}} 3.0
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="X"}} 4.0
vllm:time_to_first_token_seconds_count{{engine="0",model_name="X"}} 4.0
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="X"}} 0.5
"""


def test_sglang_metrics_text_maps_to_series() -> None:
    sample = PrometheusReader().read(SGLANG_METRICS, datetime(2026, 1, 1, 12, 0))
    assert sample is not None
    assert sample.kind == "prometheus" and sample.engine == Engine.SGLANG.value
    assert sample.values[Metric.RUNNING] == 7.0  # tp_rank 1 is the same requests
    assert sample.values[Metric.GEN_THROUGHPUT] == pytest.approx(0.83712844574)
    assert sample.values[Metric.TOKEN_USAGE] == 0.25
    assert sample.values[Metric.ACCEPT_LEN] == 3.2
    assert sample.fields['sglang:some_new_gauge{model_name="Qwen-32B"}'] == 42.0
    assert sample.offset is None


def test_vllm_counters_become_rates_from_the_second_scrape() -> None:
    reader = PrometheusReader()
    first = reader.read(vllm_metrics(1000, 0, 0, 0), datetime(2026, 1, 1, 12, 0, 0))
    assert first is not None and first.engine == Engine.VLLM.value
    assert first.values[Metric.RUNNING] == 8.0
    assert first.values[Metric.QUEUED] == 2.0
    assert first.values[Metric.TOKEN_USAGE] == pytest.approx(0.4)
    assert Metric.GEN_THROUGHPUT not in first.values
    second = reader.read(vllm_metrics(3000, 300, 100, 400), datetime(2026, 1, 1, 12, 0, 10))
    assert second is not None
    assert second.values[Metric.GEN_THROUGHPUT] == 200.0
    assert second.values[Metric.ACCEPT_LEN] == 4.0
    assert second.values[Metric.ACCEPT_RATE] == 0.75
    # the server restarted: counters went back, no rate from this pair
    third = reader.read(vllm_metrics(10, 0, 0, 0), datetime(2026, 1, 1, 12, 0, 20))
    assert third is not None and Metric.GEN_THROUGHPUT not in third.values


@pytest.mark.parametrize("text", ["", "not prometheus {{{", "# only comments\n"])
def test_metrics_text_that_holds_nothing_is_none(text: str) -> None:
    assert PrometheusReader().read(text, datetime(2026, 1, 1)) is None
