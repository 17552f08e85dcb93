"""Pure parts of the simulator: versions, flags, Prometheus text, the load model, GPU inventory."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString
from sim_helpers import ROOT  # noqa: F401 - puts the repository on sys.path

from tui.sim.config import Scenario
from tui.sim.flags import model_info, parse_flags
from tui.sim.gpus import parse_inventory
from tui.sim.load import LoadModel, LoadProfile, SpecModel
from tui.sim.prom import Exposition, go_float
from tui.sim.version import V

pytestmark = pytest.mark.unit


def test_versions_sort_in_release_order() -> None:
    ordered = [
        "0.4.0",
        "0.4.3",
        "0.5.3.post1",
        "0.5.3.post3",
        "0.5.4",
        "0.5.4.post1",
        "0.5.5",
        "0.10.1",
        "0.10.1.1",
        "0.10.2",
        "0.33.0",
    ]
    assert sorted(ordered, key=V) == ordered
    assert V("v0.5.11").text == "0.5.11"
    with pytest.raises(ValueError):
        V("latest")


def test_flags_keep_order_types_and_raw_tokens() -> None:
    tokens = [
        "serve",
        "Qwen/Qwen3-8B",
        "--tp",
        "4",
        "--enable-metrics",
        "--speculative-config",
        '{"method": "eagle3", "num_speculative_tokens": 3}',
        "--cuda-graph-bs",
        "1",
        "2",
        "4",
        "--offset=-1",
        "--mem-fraction-static",
        "0.8",
        "--served-model-name",
        "m",
    ]
    flags = parse_flags(tokens, {"--tp": "tensor_parallel_size"})
    assert flags.positional == ("serve", "Qwen/Qwen3-8B")
    assert flags.raw == tuple(tokens)
    assert flags.as_dict() == {
        "tensor_parallel_size": 4,
        "enable_metrics": True,
        "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3},
        "cuda_graph_bs": [1, 2, 4],
        "offset": -1,
        "mem_fraction_static": 0.8,
        "served_model_name": "m",
    }


@given(
    st.lists(st.sampled_from(["--a", "--b-c", "1", "x", "-2", "--d=3", "{}", "--"]), max_size=12)
)
def test_flags_never_lose_tokens(tokens: list[str]) -> None:
    assert parse_flags(tokens, {}).raw == tuple(tokens)


@given(st.floats(allow_nan=False))
def test_go_float_matches_prometheus_client(value: float) -> None:
    assert go_float(value) == floatToGoString(value)


def test_exposition_parses_back() -> None:
    page = Exposition()
    page.gauge("sim:g", "A gauge.", [({"b": "2", "a": 'q"x'}, 0.5)])
    page.counter("sim:c", "A counter.", [({"a": "1"}, 3.0)], created=1700000000.0)
    page.histogram("sim:h", "A histogram.", (0.1, 1.0), [({"a": "1"}, [1, 2, 3], 7.5)], created=1.0)
    families = {f.name: f for f in text_string_to_metric_families(page.text())}
    assert families["sim:g"].samples[0].labels == {"a": 'q"x', "b": "2"}
    assert families["sim:c"].samples[0].value == 3.0
    buckets = [s.value for s in families["sim:h"].samples if s.name.endswith("_bucket")]
    assert buckets == [1.0, 3.0, 6.0]
    assert 'sim:g{a="q\\"x",b="2"} 0.5' in page.text()  # labels sorted, quotes escaped


def test_spec_models() -> None:
    healthy = SpecModel.healthy(3)
    assert 3.85 < healthy.mean_len < 3.95
    assert all(a > b for a, b in zip(healthy.per_pos, healthy.per_pos[1:], strict=False))
    assert SpecModel.perfect(3).mean_len == 4.0
    assert SpecModel.perfect(3).per_pos == (1.0, 1.0, 1.0)


def test_load_model_queues_beyond_capacity_and_drains() -> None:
    wakes: list[int] = []
    profile = LoadProfile(
        base_tps=100.0, max_running=2, max_total_tokens=10_000, knee=1e9, decode_log_interval=40
    )
    load = LoadModel(profile, 0.0, lambda: wakes.append(1))
    requests = [load.submit(10, 50, f"p{i}") for i in range(3)]
    assert len(wakes) == 3 and load.queued == 3
    first = load.advance(0.0)
    assert [r.rid for r in first.prefilled] == [1, 2]
    assert load.running == 2 and load.queued == 1
    # generated starts at 1 (the prefill token); 49 more at ~100 tok/s take about half a second
    wait = load.next_wake()
    assert wait is not None and 0.3 < wait < 0.6  # the decode log is due after 40 steps
    middle = load.advance(0.45)
    assert middle.decode_log_due and not middle.finished
    load.decode_logged()
    done = load.advance(0.6)
    assert {r.rid for r in done.finished} == {1, 2}
    assert [r.rid for r in done.prefilled] == [3]
    assert all(r.finished for r in requests[:2]) and requests[2].admitted == 0.6
    assert load.take("stats", 0.6).elapsed == profile.startup_gap
    assert load.take("stats", 1.6).elapsed == pytest.approx(1.0)
    assert load.totals.prompt_tokens == 30


def test_prefix_cache_hits_on_a_repeated_prompt() -> None:
    load = LoadModel(
        LoadProfile(base_tps=50.0, max_running=8, max_total_tokens=10_000, cache_block=16),
        0.0,
        lambda: None,
    )
    first = load.submit(100, 5, "same")
    second = load.submit(100, 5, "same")
    assert first.cached_tokens == 0 and second.cached_tokens == 96


def test_inventory_forms() -> None:
    assert [g.name for g in parse_inventory("8")] == ["NVIDIA H100 80GB HBM3"] * 8
    mixed = parse_inventory("2xa100-40gb;1xl40s")
    assert [(g.index, g.name, g.memory_total_mib) for g in mixed] == [
        (0, "NVIDIA A100-SXM4-40GB", 40960),
        (1, "NVIDIA A100-SXM4-40GB", 40960),
        (2, "NVIDIA L40S", 46068),
    ]
    custom = parse_inventory("1xMy Card:250:24000")[0]
    assert (custom.name, custom.power_limit_w, custom.memory_total_mib) == ("My Card", 250.0, 24000)
    unified = parse_inventory(
        '[{"name": "Odd", "power_limit": null, "memory_total": 1000, "na": ["used_memory"]}]'
    )[0]
    assert {"power.limit", "used_memory"} <= unified.na
    assert parse_inventory("gb10")[0].na >= {"memory.used", "memory.total"}
    for bad in ("", "2xNoSuchCard", "[1]"):
        with pytest.raises(ValueError):
            parse_inventory(bad)


def test_scenarios_parse() -> None:
    assert Scenario.parse("crash-after:2.5") == Scenario("crash-after", 2.5)
    assert Scenario.parse("killed-after:1") == Scenario("killed-after", 1.0)
    assert Scenario.parse("spec-off").name == "spec-off"
    assert Scenario.parse("killed-at-load").name == "killed-at-load"
    for bad in ("crash-after", "crash-after:-1", "killed-after", "explode", "healthy:1"):
        with pytest.raises(ValueError):
            Scenario.parse(bad)


@pytest.mark.parametrize(
    ("argv", "simulated"),
    [
        (
            ["--engine", "sglang", "--engine-version", "0.5.21", "--scenario", "killed-after:1"],
            True,
        ),
        (
            ["--engine", "sglang", "--engine-version", "0.5.11", "--scenario", "killed-after:1"],
            False,
        ),
        (["--engine", "sglang", "--engine-version", "0.4.6", "--scenario", "killed-at-load"], True),
        (
            ["--engine", "sglang", "--engine-version", "0.4.3", "--scenario", "killed-at-load"],
            False,
        ),
        (["--engine", "vllm", "--engine-version", "0.15.0", "--scenario", "killed-after:1"], True),
        (["--engine", "vllm", "--engine-version", "0.20.0", "--scenario", "killed-after:1"], False),
        (["--engine", "vllm", "--engine-version", "0.33.0", "--scenario", "killed-after:1"], True),
        (["--engine", "vllm", "--scenario", "killed-at-load"], False),
    ],
)
def test_a_death_is_simulated_only_where_its_lines_are_known(
    argv: list[str], simulated: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lines a killed child leaves are known for some releases only; elsewhere the
    sim says so rather than print lines a release never printed."""
    from tui.sim.cli import parse_config

    if simulated:
        assert parse_config(argv).scenario.name in argv[-1]
        return
    with pytest.raises(SystemExit) as exit_info:
        parse_config(argv)
    assert exit_info.value.code == 2
    assert "is not simulated for" in capsys.readouterr().err


def test_model_guesses() -> None:
    moe = model_info("Qwen/Qwen3-30B-A3B")
    assert (moe.arch, moe.params_b, moe.active_b) == ("Qwen3MoeForCausalLM", 30.0, 3.0)
    deepseek = model_info("deepseek-ai/DeepSeek-V3")
    assert deepseek.mla and deepseek.params_b == 671.0
    assert math.isclose(model_info("facebook/opt-125m").params_b, 0.125)
    assert model_info("Qwen/Qwen3-8B").shards == 4
