"""A canary's request, its answer read back, and the repetition score (tui/core/canary.py).

The answers here have the shape the agent writes (tui/agent/protocol.py MODE_CANARY),
their events the real payloads of each engine's stream.
"""

from __future__ import annotations

import json
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.agent.protocol import MODE_CANARY, SAMPLING_CONFIG, SAMPLING_MODEL, SAMPLING_SERVER
from tui.config import CanaryConfig
from tui.core.canary import (
    ANSWER_LIMIT,
    CANARY_SCHEMA,
    OUTPUT_CHARS,
    REPETITION_LOOPS,
    CanaryOutcome,
    canary_request,
    model_folder,
    read_canary,
    repetition_score,
    running_values,
)
from tui.core.launch.diff import launch_diff
from tui.core.launch.reported import parse_reported

pytestmark = pytest.mark.unit

LOOP = "I will repeat the answer. "
PROSE = (
    "The capital of France is Paris. It sits on the Seine, and its museums hold art "
    "from every century: the Louvre keeps the Mona Lisa, while the Orsay shows the "
    "painters who broke with the academy late in the nineteenth century."
)
SENT_AT = 1_764_590_590.0
STARTED = 1_764_580_000.0
CET = 3600


# ------------------------------------------------------------------ repetition


def test_a_looped_phrase_scores_near_one_and_prose_near_zero() -> None:
    assert repetition_score(LOOP * 12) >= 0.95
    assert repetition_score(PROSE) == 0.0
    assert repetition_score("") == 0.0
    assert repetition_score("   \n ") == 0.0


def test_a_loop_after_a_fresh_start_scores_its_share() -> None:
    text = PROSE + " " + LOOP * 12
    score = repetition_score(text)
    assert REPETITION_LOOPS <= score < 1.0


def test_text_without_spaces_is_read_by_its_characters() -> None:
    assert repetition_score("巴黎是法国的首都。" * 5) == 1.0
    assert repetition_score("巴黎是法国的首都以埃菲尔铁塔和卢浮宫闻名于世") == 0.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_the_score_is_a_share_for_any_text(text: str) -> None:
    assert 0.0 <= repetition_score(text) <= 1.0


WORDS = st.text(alphabet=string.ascii_letters + "éß日本", min_size=1, max_size=10)


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=30), st.integers(min_value=3, max_value=8))
def test_a_text_repeated_three_times_or_more_scores_high(words: list[str], k: int) -> None:
    text = " ".join([" ".join(words)] * k)
    assert repetition_score(text) >= REPETITION_LOOPS


@settings(max_examples=200, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=60, unique_by=str.lower))
def test_distinct_words_score_low(words: list[str]) -> None:
    assert repetition_score(" ".join(words)) < REPETITION_LOOPS


# ------------------------------------------------------------------ the request


def test_the_request_follows_the_protocol_for_an_openai_server() -> None:
    config = CanaryConfig(
        prompt="Say hi", max_tokens=16, sampling=(("temperature", 0.7), ("seed", 3.0))
    )
    request = canary_request(
        "vllm", config, pid=42, start_ticks=777, port=8000, model_dir="/models/q"
    )
    assert request == {
        "mode": MODE_CANARY,
        "pid": 42,
        "start_ticks": 777,
        "port": 8000,
        "path": "/v1/completions",
        "body": {
            "prompt": "Say hi",
            "max_tokens": 16,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        "sampling_at": [],
        "sampling_keys": ["temperature", "top_p", "top_k", "min_p", "repetition_penalty"],
        "generation_config": "/models/q",
        # a key the engine does not take is not sent
        "fallback_sampling": {"temperature": 0.7},
        "timeout": 30.0,
        "limit": ANSWER_LIMIT,
    }
    assert ANSWER_LIMIT == 256 * 1024
    json.dumps(request)


def test_tgi_takes_its_sampling_in_parameters_and_no_min_p() -> None:
    config = CanaryConfig(sampling=(("min_p", 0.05), ("top_p", 0.9)))
    request = canary_request("tgi", config, pid=1, start_ticks=2, port=3000, model_dir=None)
    assert request is not None
    assert request["path"] == "/generate_stream"
    assert request["body"] == {
        "inputs": config.prompt,
        "parameters": {"max_new_tokens": config.max_tokens, "details": True},
    }
    assert request["sampling_at"] == ["parameters"]
    assert "min_p" not in request["sampling_keys"]
    assert request["fallback_sampling"] == {"top_p": 0.9}
    assert request["generation_config"] is None


def test_an_engine_without_a_canary_api_gets_no_request() -> None:
    config = CanaryConfig()
    assert canary_request("generic", config, pid=1, start_ticks=2, port=9, model_dir=None) is None


# ------------------------------------------------------------------ the model's folder


def test_the_model_folder_comes_from_each_engines_own_key() -> None:
    assert model_folder("sglang", {"model_path": "/models/Qwen3-8B/"}) == "/models/Qwen3-8B"
    assert model_folder("vllm", {"model": "/m/llama"}) == "/m/llama"
    assert model_folder("vllm", {"model_tag": "/m/llama"}) == "/m/llama"
    assert model_folder("tgi", {"model_id": "/data/bloom"}) == "/data/bloom"
    assert model_folder("llamacpp", {"model": "/gguf/qwen/q4_k_m.GGUF"}) == "/gguf/qwen"
    assert model_folder("llamacpp", {"model": "q4.gguf"}) == "."
    assert model_folder("sglang", {"tp_size": 2}) is None
    assert model_folder("generic", {"model": "/m"}) is None
    assert model_folder("vllm", {"model": ("/a", "/b")}) == "/b"


def test_the_running_values_of_a_launch_diff_name_the_model_and_the_drafts() -> None:
    argv = [
        "vllm",
        "serve",
        "/models/llama",
        "--speculative-config",
        '{"num_speculative_tokens": 3}',
    ]
    diff = launch_diff(None, argv, None, engine="vllm")
    values = running_values(diff)
    assert model_folder("vllm", values) == "/models/llama"
    from tui.engines import spec

    assert spec("vllm").draft_tokens(values) == 3  # type: ignore[misc]


def test_the_args_line_gives_the_values_argv_lacks() -> None:
    line = (
        "[2026-10-30 11:00:01] server_args={'model_path': '/models/q', "
        "'speculative_algorithm': 'EAGLE3', 'speculative_num_steps': 3}"
    )
    diff = launch_diff(None, None, parse_reported(line), engine="sglang")
    values = running_values(diff)
    assert model_folder("sglang", values) == "/models/q"


# ------------------------------------------------------------------ the answer


def openai_chunk(text: str, reason: str | None = None) -> str:
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": reason}
    return json.dumps({"id": "cmpl-1", "object": "text_completion", "choices": [choice]})


def usage_chunk(tokens: int) -> str:
    return json.dumps(
        {"id": "cmpl-1", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": tokens}}
    )


def answer(stream: list[tuple[float, str]], **changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "run": {"pid": 4242, "start_ticks": 9000, "same": True, "alive": True},
        "sampling": {"temperature": 0.6, "top_p": 0.95},
        "sampling_source": SAMPLING_MODEL,
        "sampling_path": "/models/qwen/generation_config.json",
        "recommended": {"temperature": 0.6, "top_p": 0.95},
        "sampling_problem": None,
        "sent_at": SENT_AT,
        "status": 200,
        "events": [[at, f"data: {payload}"] for at, payload in stream],
        "body": "",
        "timed_out": False,
        "cut": False,
        "error": None,
        "elapsed_s": 1.25,
        "cpu_s": 0.01,
    }
    base.update(changes)
    return base


def read(engine: str, data: dict[str, object]):
    return read_canary("kpro5", "qwen", engine, data, utc_offset=CET, started_at=STARTED)


def test_a_healthy_stream_gives_ttft_tokens_per_second_and_no_repetition() -> None:
    words = PROSE.split()
    events = [(0.2 + 0.05 * i, openai_chunk(" " + w)) for i, w in enumerate(words)]
    events.append((0.2 + 0.05 * len(words), openai_chunk("", "length")))
    events.append((1.2, usage_chunk(len(words))))
    events.append((1.21, "[DONE]"))
    result = read("vllm", answer(events))
    assert result.outcome is CanaryOutcome.OK and result.ok and result.exit_status == 0
    assert result.ttft_s == pytest.approx(0.2)
    assert result.tokens == len(words)
    span = 0.05 * (len(words) - 1)
    assert result.tokens_per_s == pytest.approx((len(words) - 1) / span)
    assert result.finish_reason == "length"
    assert result.repetition == 0.0
    assert result.output == (" " + " ".join(words))[:OUTPUT_CHARS]
    assert result.run_pid == 4242 and result.run_started_at == STARTED
    assert result.sampling == {"temperature": 0.6, "top_p": 0.95}
    assert result.agent_cpu_s == 0.01


def test_without_a_usage_count_the_events_with_text_are_the_tokens() -> None:
    events = [(0.1, openai_chunk("Paris")), (0.3, openai_chunk(".", "stop"))]
    result = read("sglang", answer(events))
    assert result.tokens == 2
    assert result.tokens_per_s == pytest.approx(1 / 0.2)
    assert result.finish_reason == "stop"


def test_a_looping_output_is_repetition() -> None:
    events = [(0.1 + 0.01 * i, openai_chunk(LOOP)) for i in range(10)]
    result = read("llamacpp", answer(events))
    assert result.outcome is CanaryOutcome.REPETITION and result.exit_status == 1
    assert result.repetition is not None and result.repetition >= REPETITION_LOOPS


def test_an_error_answer_is_shown_as_it_came() -> None:
    body = json.dumps(
        {"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError"}
    )
    result = read("vllm", answer([], status=404, body=body))
    assert result.outcome is CanaryOutcome.ERROR and result.exit_status == 1
    assert result.error == "HTTP 404: The model `x` does not exist."
    assert result.http_status == 404


def test_an_error_event_in_the_stream_is_an_error() -> None:
    error = {"error": {"code": 500, "message": "slot unavailable", "type": "server_error"}}
    result = read("llamacpp", answer([(0.1, openai_chunk("a")), (0.2, json.dumps(error))]))
    assert result.outcome is CanaryOutcome.ERROR
    assert result.error == "slot unavailable"


def test_a_non_json_error_body_is_quoted_sanitised() -> None:
    result = read("sglang", answer([], status=500, body="Internal \x1b[31mServer Error"))
    assert result.error == "HTTP 500: Internal \\x1b[31mServer Error"


def test_tgi_streams_tokens_and_ends_with_details() -> None:
    def token(text: str, special: bool = False, details: dict | None = None) -> str:
        return json.dumps(
            {
                "index": 1,
                "token": {"id": 5, "text": text, "logprob": -0.1, "special": special},
                "generated_text": None if details is None else "Paris.",
                "details": details,
            }
        )

    events = [
        (0.3, token(" Paris")),
        (0.4, token(".")),
        (
            0.5,
            token(
                "</s>", special=True, details={"finish_reason": "eos_token", "generated_tokens": 3}
            ),
        ),
    ]
    result = read("tgi", answer(events))
    assert result.ok
    assert result.output == " Paris."
    assert result.tokens == 3
    assert result.finish_reason == "eos_token"
    assert result.ttft_s == pytest.approx(0.3)


def test_tgi_error_answers_carry_their_kind() -> None:
    body = json.dumps({"error": "`top_p` must be > 0.0 and < 1.0", "error_type": "validation"})
    result = read("tgi", answer([], status=422, body=body))
    assert result.error == "HTTP 422: `top_p` must be > 0.0 and < 1.0 (validation)"


def test_a_timeout_keeps_what_came_before_it() -> None:
    result = read("vllm", answer([(0.2, openai_chunk("Par"))], timed_out=True, elapsed_s=30.0))
    assert result.outcome is CanaryOutcome.TIMEOUT and result.timed_out
    assert result.exit_status == 2
    assert result.ttft_s == pytest.approx(0.2)
    assert "30.0 s" in (result.error or "")


def test_a_refused_connection_is_an_error_in_the_agents_words() -> None:
    data = answer([], status=None, error="connection refused on 127.0.0.1:8000")
    result = read("vllm", data)
    assert result.outcome is CanaryOutcome.ERROR
    assert result.error == "connection refused on 127.0.0.1:8000"


@pytest.mark.parametrize(
    ("run", "words"),
    [
        ({"pid": 1, "start_ticks": 2, "same": False, "alive": True}, "another process"),
        ({"pid": 1, "start_ticks": 2, "same": False, "alive": False}, "gone"),
    ],
)
def test_another_run_gets_no_canary(run: dict[str, object], words: str) -> None:
    result = read("vllm", answer([], run=run, status=None, sent_at=None))
    assert result.outcome is CanaryOutcome.NO_RUN and result.exit_status == 2
    assert words in (result.error or "")


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"events": "nope"}, "events is a string, not a list"),
        ({"events": [[0.1]]}, "events[0] is not [seconds, text]"),
        ({"run": None}, "run is missing"),
        ({"status": "200"}, "status is a string"),
    ],
)
def test_a_garbled_answer_says_what_was_wrong(data: dict[str, object], words: str) -> None:
    result = read("vllm", answer([], **data))
    assert result.outcome is CanaryOutcome.ERROR
    assert words in (result.error or "")


def test_a_stream_of_nothing_is_an_error() -> None:
    result = read("vllm", answer([(0.1, "[DONE]")]))
    assert result.outcome is CanaryOutcome.ERROR
    assert result.error == "the server answered no stream"


def test_the_host_text_is_made_printable() -> None:
    events = [(0.1, openai_chunk("evil\x1b]0;title\x07 \u202e text\n", "st\x1bop"))]
    result = read("vllm", answer(events))
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "\n" not in result.output
    assert result.finish_reason is not None and "\x1b" not in result.finish_reason


def test_json_has_the_documented_shape_in_the_hosts_zone() -> None:
    events = [(0.2, openai_chunk(" Paris")), (0.4, openai_chunk(".", "stop"))]
    document = read("vllm", answer(events)).to_json()
    assert set(document) == {
        "schema", "host", "service", "ok", "outcome", "ttft_s", "tokens_per_s", "tokens",
        "finish_reason", "repetition", "output", "sampling", "sampling_source",
        "sampling_path", "recommended", "http_status", "error", "sent_at", "elapsed_s", "run",
    }  # fmt: skip
    assert document["schema"] == CANARY_SCHEMA
    assert document["ok"] is True and document["outcome"] == "ok"
    assert document["sent_at"] == "2025-12-01T13:03:10+01:00"
    assert document["run"] == {"pid": 4242, "started_at": "2025-12-01T10:06:40+01:00"}
    assert document["sampling_source"] == SAMPLING_MODEL
    json.dumps(document)


def test_the_lines_say_each_fact_once() -> None:
    events = [(0.2, openai_chunk(" Paris")), (0.4, openai_chunk(".", "stop"))]
    data = answer(
        events,
        sampling={"temperature": 0.7},
        sampling_source=SAMPLING_CONFIG,
        sampling_path=None,
        recommended=None,
        sampling_problem="no generation_config.json in /models/qwen",
    )
    lines = read("vllm", data).lines()
    text = "\n".join(lines)
    assert lines[0] == "kpro5/qwen: the canary completed"
    assert "time to first token: 0.20 s" in lines
    assert "finish reason: stop" in lines
    assert "sampling: temperature 0.7 (hosts.yaml canary.sampling)" in lines
    assert "generation_config.json not used: no generation_config.json in /models/qwen" in lines
    assert "output:  Paris." in lines
    assert "run: pid 4242, started 10:06:40, sent 13:03:10" in lines
    assert "repetition: 0.00" in text


def test_server_defaults_are_said_as_such() -> None:
    data = answer([(0.2, openai_chunk("x", "stop"))], sampling={}, sampling_source=SAMPLING_SERVER)
    assert "sampling: none set (the server's defaults)" in read("vllm", data).lines()


JSON_LEAVES = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10)
)
KEYS = st.sampled_from(
    ["choices", "text", "error", "usage", "token", "details", "message", "object",
     "finish_reason", "completion_tokens", "generated_tokens", "special"]
)  # fmt: skip
PAYLOADS = st.one_of(
    st.text(max_size=80),
    st.builds(
        json.dumps,
        st.recursive(
            JSON_LEAVES,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
            max_leaves=12,
        ),
    ),
)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp", "tgi", "generic"])
@settings(max_examples=100, deadline=None)
@given(
    payloads=st.lists(PAYLOADS, max_size=6),
    status=st.one_of(st.none(), st.integers(min_value=-5, max_value=700)),
    body=st.one_of(st.none(), PAYLOADS),
    junk=st.dictionaries(
        st.sampled_from(["run", "events", "sampling", "sent_at", "timed_out", "elapsed_s"]),
        st.one_of(st.none(), st.integers(), st.text(max_size=5), st.lists(st.integers())),
        max_size=2,
    ),
)
def test_no_answer_makes_the_reader_raise(
    engine: str, payloads: list[str], status: int | None, body: str | None, junk: dict
) -> None:
    data = answer([(0.1 * i, p) for i, p in enumerate(payloads)], status=status, body=body, **junk)
    result = read(engine, data)
    json.dumps(result.to_json())
    assert all(isinstance(line, str) and "\n" not in line for line in result.lines())
