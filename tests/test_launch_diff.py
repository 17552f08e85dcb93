"""Intended (hosts.yaml) vs actual (/proc cmdline) vs reported (the server's own args line)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reports import report_host
from support.servers import Server

from tui.core.launch.argv import FlagSet, argv_from_cmdline
from tui.core.launch.diff import (
    FlagStatus,
    Source,
    launch_diff,
    reported_speculative,
    same,
    speculative,
)
from tui.core.launch.reported import Unparsed, parse_reported
from tui.engines import Engine
from tui.hostsfile import parse_config
from tui.remote.transport import Transport

SGLANG = ("python3", "-m", "sglang.launch_server")
VLLM = ("vllm", "serve")
#: The forms of the args lines (ArgsHead.form, the "format" of the launch diff's JSON).
SGLANG_REPR = "sglang-server-args"
SGLANG_DICT = "sglang-server-args-dict"
VLLM_NON_DEFAULT = "vllm-non-default-args"
VLLM_NAMESPACE = "vllm-args-namespace"

# --- reported args lines (formats from the engines' sources, values invented) -----------------

SERVER_ARGS_REPR = (
    "[2025-11-30 11:17:40] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', "
    "tokenizer_path='Qwen/Qwen3-8B', tokenizer_mode='auto', skip_tokenizer_init=False, "
    "load_format='auto', model_loader_extra_config='{}', trust_remote_code=False, "
    "context_length=None, host='0.0.0.0', port=30000, mem_fraction_static=0.87, "
    "tp_size=2, dp_size=1, speculative_algorithm='EAGLE3', speculative_num_steps=3, "
    "cuda_graph_bs=[1, 2, 4, 8], json_model_override_args='{\"a\": 1}', "
    "chat_template=None, lora_paths=None, served_model_name='my model, v2', "
    "disable_radix_cache=True, weird=<object object at 0x7f00deadbeef>, "
    "hf_config=SomeConfig(x=1, y=(2, 3)))"
)
SERVER_ARGS_DICT = (
    "[2026-10-30 11:00:01] server_args={'model_path': 'Qwen/Qwen3-8B', 'tokenizer_path': "
    "'Qwen/Qwen3-8B', 'speculative_algorithm': 'EAGLE3', 'speculative_num_steps': 3, "
    "'tp_size': 1, 'api_key': '<redacted>', 'nested': {'a': [1, 2], 'b': None}}"
)
NON_DEFAULT = (
    "(APIServer pid=7) INFO 11-20 14:00:01 [utils.py:287] non-default args: {'model_tag': "
    "'Qwen/Qwen3-8B', 'port': 8001, 'model': 'Qwen/Qwen3-8B', 'speculative_config': "
    "{'method': 'eagle3', 'num_speculative_tokens': 3}, 'enable_prefix_caching': False}"
)
NAMESPACE = (
    "INFO 04-02 10:00:00 api_server.py:712] args: Namespace(host=None, port=8000, "
    "uvicorn_log_level='info', allow_credentials=False, allowed_origins=['*'], "
    "model='Qwen/Qwen3-8B', tensor_parallel_size=2, speculative_model=None, "
    "num_speculative_tokens=None, gpu_memory_utilization=0.9, enforce_eager=False)"
)


@pytest.mark.unit
def test_sglang_server_args_repr_is_read_as_literals() -> None:
    reported = parse_reported(SERVER_ARGS_REPR, offset=42)
    assert reported is not None
    assert reported.format.form == SGLANG_REPR and reported.complete
    values = reported.values
    assert values["model_path"] == "Qwen/Qwen3-8B"
    assert values["mem_fraction_static"] == 0.87 and values["tp_size"] == 2
    assert values["context_length"] is None and values["disable_radix_cache"] is True
    assert values["cuda_graph_bs"] == [1, 2, 4, 8]
    assert values["served_model_name"] == "my model, v2"
    assert values["json_model_override_args"] == '{"a": 1}'
    assert values["weird"] == Unparsed("<object object at 0x7f00deadbeef>")
    assert values["hf_config"] == Unparsed("SomeConfig(x=1, y=(2, 3))")
    assert reported.offset == 42 and reported.engine == Engine.SGLANG.value


@pytest.mark.unit
def test_sglang_server_args_dict() -> None:
    reported = parse_reported(SERVER_ARGS_DICT)
    assert reported is not None and reported.format.form == SGLANG_DICT
    assert reported.values["nested"] == {"a": [1, 2], "b": None}
    assert reported.values["api_key"] == "<redacted>"
    assert reported_speculative(reported) == "EAGLE3"


@pytest.mark.unit
def test_vllm_non_default_args() -> None:
    reported = parse_reported(NON_DEFAULT)
    assert reported is not None and reported.format.form == VLLM_NON_DEFAULT
    assert not reported.complete
    assert reported.values["speculative_config"] == {
        "method": "eagle3",
        "num_speculative_tokens": 3,
    }
    assert reported_speculative(reported) == "eagle3, 3 tokens"


@pytest.mark.unit
def test_vllm_namespace() -> None:
    reported = parse_reported(NAMESPACE)
    assert reported is not None and reported.format.form == VLLM_NAMESPACE
    assert reported.values["allowed_origins"] == ["*"]
    assert reported.values["tensor_parallel_size"] == 2
    assert reported_speculative(reported) is None


@pytest.mark.unit
def test_a_cut_line_keeps_what_it_has() -> None:
    reported = parse_reported(SERVER_ARGS_REPR[:200])
    assert reported is not None and reported.truncated and not reported.complete
    assert reported.values["model_path"] == "Qwen/Qwen3-8B"
    assert "context_length" not in reported.values  # the unfinished item is dropped


@pytest.mark.unit
@pytest.mark.parametrize(
    "line",
    [
        "",
        "[2025-11-30 11:17:40] Load weight begin. avail mem=78.61 GB",
        "server_args=",
        "non-default args: {",
        "args: Namespace(",
        "server_args=ServerArgs(__import__('os').system('false'))",
    ],
)
def test_lines_without_args_do_not_break(line: str) -> None:
    reported = parse_reported(line)
    assert reported is None or isinstance(reported.values, dict)


@pytest.mark.unit
def test_nothing_is_ever_evaluated() -> None:
    reported = parse_reported("server_args=ServerArgs(x=__import__('os').getpid())")
    assert reported is not None
    assert reported.values["x"] == Unparsed("__import__('os').getpid()")


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["", "server_args=ServerArgs(", "server_args={", "args: Namespace("]),
    st.text(max_size=200),
)
def test_parse_reported_never_raises(head: str, rest: str) -> None:
    parse_reported(head + rest)


# --- command lines ----------------------------------------------------------------------------


@pytest.mark.unit
def test_command_lines_split_into_program_positionals_and_flags() -> None:
    flags = FlagSet.parse(
        [
            "/opt/venv/bin/python3.11",
            "-u",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "Qwen/Qwen3-8B",
            "--cuda-graph-bs",
            "1",
            "2",
            "4",
            "--enable-metrics",
            "--tp_size=2",
            "--sampling-seed",
            "-1",
        ]
    )
    assert flags.program == ("/opt/venv/bin/python3.11", "-u", "-m", "sglang.launch_server")
    assert flags.engine == Engine.SGLANG.value
    assert flags.flags["--cuda-graph-bs"].values == ("1", "2", "4")
    assert flags.flags["--enable-metrics"].values == ()
    assert flags.flags["--tp-size"].values == ("2",)
    assert flags.flags["--sampling-seed"].values == ("-1",)


@pytest.mark.unit
def test_vllm_serve_model_is_the_model_flag() -> None:
    flags = FlagSet.parse(
        ["vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2", "--no-enable-prefix-caching"]
    )
    assert flags.engine == Engine.VLLM.value and flags.program == ("vllm", "serve")
    assert flags.flags["--model"].values == ("Qwen/Qwen3-8B",)
    by_dest = flags.by_dest(Engine.VLLM)
    assert by_dest["tensor_parallel_size"].value() == 2
    assert by_dest["enable_prefix_caching"].value() is False


@pytest.mark.unit
def test_a_wrapper_before_double_dash_is_the_program() -> None:
    flags = FlagSet.parse(["python", "-m", "tui", "sim", "--engine", "sglang", "--", "--tp", "2"])
    assert flags.program[-1] == "--" and flags.engine == Engine.SGLANG.value
    assert list(flags.flags) == ["--tp"]


@pytest.mark.unit
def test_argv_from_cmdline() -> None:
    assert argv_from_cmdline(b"python3\0-m\0sglang.launch_server\0--x\0a b\0") == (
        "python3",
        "-m",
        "sglang.launch_server",
        "--x",
        "a b",
    )
    assert argv_from_cmdline(b"") == ()


# --- the diff ------------------------------------------------------------------------------


@pytest.mark.unit
def test_missing_flag_stands_out() -> None:
    intended = [*SGLANG, "--model-path", "Q", "--speculative-algorithm", "EAGLE3"]
    actual = [*SGLANG, "--model-path", "Q"]
    diff = launch_diff(intended, actual, None)
    assert diff.missing == ("--speculative-algorithm",)
    assert diff.changed == () and diff.extra == ()
    row = next(r for r in diff.rows if r.flag == "--speculative-algorithm")
    assert (row.intended, row.actual, row.status) == ("EAGLE3", None, FlagStatus.MISSING)
    assert diff.speculative_intended == "EAGLE3" and diff.speculative_running is None


@pytest.mark.unit
def test_changed_value_shows_both() -> None:
    diff = launch_diff(
        [*SGLANG, "--mem-fraction-static", "0.87"], [*SGLANG, "--mem-fraction-static", "0.8"], None
    )
    (change,) = diff.changed
    assert (change.flag, change.intended, change.running, change.source) == (
        "--mem-fraction-static",
        "0.87",
        "0.8",
        Source.ACTUAL,
    )
    assert diff.rows[0].status is FlagStatus.CHANGED


@pytest.mark.unit
def test_extra_flag() -> None:
    diff = launch_diff(
        [*SGLANG, "--tp", "2"], [*SGLANG, "--tp", "2", "--disable-radix-cache"], None
    )
    assert diff.extra == ("--disable-radix-cache",)
    assert diff.missing == () and diff.changed == ()


@pytest.mark.unit
@pytest.mark.parametrize(
    ("intended", "actual"),
    [
        (["--tp", "2"], ["--tp=2"]),
        (["--tp=2"], ["--tp", "2"]),
        (["--tp", "2"], ["--tp-size", "2"]),
        (["--tp", "2"], ["--tensor-parallel-size=2"]),
        (["--mem_fraction_static", "0.80"], ["--mem-fraction-static=0.8"]),
        (["--model", "Q"], ["--model-path", "Q"]),
    ],
)
def test_spellings_of_the_same_flag_are_the_same(intended: list[str], actual: list[str]) -> None:
    diff = launch_diff([*SGLANG, *intended], [*SGLANG, *actual], None)
    assert diff.clean, diff.rows
    assert len(diff.rows) == 1 and diff.rows[0].status is FlagStatus.SAME


@pytest.mark.unit
def test_boolean_flags() -> None:
    both = launch_diff(
        [*SGLANG, "--enable-metrics", "--model-path", "Q"],
        [*SGLANG, "--enable-metrics", "--model-path", "Q"],
        None,
    )
    assert both.clean and both.rows[0].intended == both.rows[0].actual == "on"
    assert both.rows[1].actual == "Q"  # the switch did not eat the next flag's value
    gone = launch_diff([*SGLANG, "--enable-metrics"], [*SGLANG], None)
    assert gone.missing == ("--enable-metrics",)
    reported = parse_reported("[2025-11-30 11:17:40] server_args=ServerArgs(enable_metrics=False)")
    off = launch_diff([*SGLANG, "--enable-metrics"], None, reported)
    assert off.missing == ("--enable-metrics",)
    on = launch_diff(
        [*SGLANG, "--enable-metrics"],
        None,
        parse_reported("[2025-11-30 11:17:40] server_args=ServerArgs(enable_metrics=True)"),
    )
    assert on.clean and on.rows[0].reported == "True"
    negated = launch_diff(
        [*VLLM, "Q", "--no-enable-prefix-caching"], None, parse_reported(NON_DEFAULT)
    )
    row = next(r for r in negated.rows if r.dest == "enable_prefix_caching")
    assert (row.intended, row.reported, row.status) == ("off", "False", FlagStatus.SAME)


@pytest.mark.unit
def test_values_with_quotes_and_spaces() -> None:
    config = '{"method": "eagle3", "num_speculative_tokens": 3}'
    compact = '{"method":"eagle3","num_speculative_tokens":3}'
    same_json = launch_diff(
        [*VLLM, "Qwen/Qwen3-8B", "--speculative-config", config],
        [*VLLM, "Qwen/Qwen3-8B", f"--speculative-config={compact}"],
        parse_reported(NON_DEFAULT),
    )
    assert same_json.missing == () and same_json.changed == ()
    row = next(r for r in same_json.rows if r.dest == "speculative_config")
    assert row.intended == config and row.actual == compact
    assert row.reported == '{"method": "eagle3", "num_speculative_tokens": 3}'
    spaced = launch_diff(
        [*SGLANG, "--served-model-name", "my model, v2"],
        [*SGLANG, "--served-model-name=my model, v2"],
        parse_reported(SERVER_ARGS_REPR),
    )
    assert spaced.clean
    quoted = launch_diff(
        [*SGLANG, "--served-model-name", "'my model'"],
        [*SGLANG, "--served-model-name", "my model"],
        None,
    )
    (change,) = quoted.changed  # literal quotes in an argv item are part of the value
    assert change.intended == "'my model'" and change.running == "my model"


@pytest.mark.unit
def test_the_report_shows_what_the_server_turned_off_or_changed() -> None:
    reported = parse_reported(
        "[2025-11-30 11:17:40] server_args=ServerArgs(model_path='Q', "
        "speculative_algorithm=None, mem_fraction_static=0.83)"
    )
    intended = [
        *SGLANG,
        "--model-path",
        "Q",
        "--speculative-algorithm",
        "EAGLE3",
        "--mem-fraction-static",
        "0.87",
    ]
    diff = launch_diff(intended, intended, reported)
    assert diff.missing == ("--speculative-algorithm",)
    (change,) = diff.changed
    assert (change.flag, change.running, change.source) == (
        "--mem-fraction-static",
        "0.83",
        Source.REPORTED,
    )
    assert diff.speculative_intended == "EAGLE3" and diff.speculative_running is None


@pytest.mark.unit
def test_without_actual_argv_the_report_decides() -> None:
    reported = parse_reported(NON_DEFAULT)
    diff = launch_diff([*VLLM, "Q", "--port", "8001", "--max-model-len", "4096"], None, reported)
    assert diff.missing == ("--max-model-len",)
    assert "--speculative-config" in diff.extra
    assert "--model-tag" not in diff.extra  # model_tag is vLLM's spelling of the model


@pytest.mark.unit
def test_without_intended_command_nothing_is_missing_or_extra() -> None:
    diff = launch_diff(None, [*SGLANG, "--tp", "2"], parse_reported(SERVER_ARGS_REPR))
    assert diff.clean
    assert diff.rows[0].status is FlagStatus.UNCHECKED and diff.rows[0].reported == "2"
    nothing = launch_diff([*SGLANG, "--tp", "2"], None, None)
    assert nothing.clean and nothing.rows[0].status is FlagStatus.UNCHECKED


@pytest.mark.unit
def test_to_json_has_the_status_json_shape() -> None:
    diff = launch_diff(
        [*SGLANG, "--speculative-algorithm", "EAGLE3"],
        [*SGLANG, "--tp", "2"],
        parse_reported(SERVER_ARGS_REPR),
    )
    record = diff.to_json()
    assert set(record) >= {"intended", "actual", "reported", "missing", "changed", "extra"}
    assert record["missing"] == ["--speculative-algorithm"] and record["extra"] == ["--tp"]
    assert record["reported"]["values"]["weird"] == {  # type: ignore[index]
        "unparsed": "<object object at 0x7f00deadbeef>"
    }
    import json

    json.dumps(record)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([*SGLANG, "--speculative-algorithm", "NEXTN"], "NEXTN"),
        ([*SGLANG, "--speculative-algorithm", "None"], None),
        (
            [
                *VLLM,
                "Q",
                "--speculative-config",
                '{"method": "ngram", "num_speculative_tokens": 4}',
            ],
            "ngram, 4 tokens",
        ),
        ([*VLLM, "Q", "--speculative-model", "small"], "small"),
        ([*VLLM, "Q"], None),
    ],
)
def test_speculative_decoding_is_recognised(argv: list[str], expected: str | None) -> None:
    assert speculative(FlagSet.parse(argv)) == expected


@pytest.mark.unit
@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("0.8", 0.8, True),
        ("2", 2, True),
        ("True", True, True),
        ("1", True, False),
        ('{"a": [1]}', {"a": [1]}, True),
        ("a", ["a"], True),
        (("1", "2"), [1, 2], False),
        (Unparsed("X(1)"), "X(1)", True),
    ],
)
def test_same(left: object, right: object, expected: bool) -> None:
    assert same(left, right) is expected


@pytest.mark.unit
def test_sglang_printing_nextn_as_eagle_is_not_a_change() -> None:
    from tui.core.launch.diff import FlagStatus, launch_diff
    from tui.core.launch.reported import parse_reported

    argv = [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "M",
        "--speculative-algorithm",
        "NEXTN",
    ]
    reported = parse_reported(
        "[2026-05-09 09:20:06] server_args=ServerArgs(model_path='M', "
        "speculative_algorithm='EAGLE')"
    )
    diff = launch_diff(argv, argv, reported)
    row = next(r for r in diff.rows if r.flag == "--speculative-algorithm")
    assert row.status is FlagStatus.SAME
    assert diff.changed == ()


# --- the args line as the probe finds it, over every transport --------------------


@pytest.mark.integration
@pytest.mark.parametrize(
    ("engine", "version", "expected"),
    [
        ("sglang", "0.5.18", SGLANG_REPR),
        ("sglang", "0.5.20", SGLANG_DICT),  # server_args={...}
        ("vllm", "0.33.0", VLLM_NON_DEFAULT),
    ],
)
async def test_the_probe_brings_back_each_releases_args_line(
    transport: Transport,
    tmp_path: Path,
    servers: list[Server],
    *,
    engine: str,
    version: str,
    expected: str,
) -> None:
    log = tmp_path / "serve.log"
    server = Server(log, engine, version=version)
    servers.append(server)
    ready = {"sglang": "The server is fired up", "vllm": "Application startup complete."}
    server.wait_for(ready[engine])
    host = parse_config(
        "hosts:\n  gpu:\n    local: true\n    services:\n"
        f"      svc: {{engine: {engine}, log: {json.dumps(str(log))}, port: {server.port}}}\n"
    ).hosts["gpu"]
    (report,) = await report_host(transport, host, gpus=False)
    assert report.assessment.run is not None and report.assessment.run.root.pid == server.pid
    assert report.launch is not None and report.launch.reported is not None
    assert report.launch.reported.format.form == expected
    assert report.launch.reported.values["port"] == server.port
    assert report.to_json()["launch"]["reported"]["format"] == expected


@pytest.mark.unit
def test_a_json_argument_nested_past_any_reason_is_compared_as_text() -> None:
    """A run's --json-model-override-args of 5,000 levels (the host's to choose) never
    crashes the diff: it is compared as the text it is."""
    deep = "[" * 5000 + "]" * 5000
    argv = ["python3", "-m", "sglang.launch_server", "--json-model-override-args", deep]
    diff = launch_diff(argv, argv, None, engine=Engine.SGLANG)
    (row,) = [r for r in diff.rows if r.flag == "--json-model-override-args"]
    assert row.status.value == "same"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("given", "reported", "expected"),
    [
        ("1,2,4", [1, 2, 4], True),  # TGI's --cuda-graphs, its Args dump's list
        ("1,2", [1, 2, 4], False),
        ("a,b", ("a", "b"), True),
        ("8", [8], True),
        ("1,2,4", "1,2,4", True),
    ],
)
def test_a_list_given_as_one_comma_separated_value_is_the_list(
    given: str, reported: object, expected: bool
) -> None:
    assert same(given, reported) is expected
    assert same(reported, given) is expected
