"""The engine registry: one module per engine, and nothing else in babysit spells what an
engine prints.

Each engine's ready lines, death lines, args heads and Prometheus names live in its
module (``tui/engines/<name>.py`` or the package ``tui/engines/<name>/``); no other
product module holds them as string literals, nor names the engine by a literal
(``"sglang"``): it asks :mod:`tui.engines`. The simulator (``tui/sim/``) shares no
code with the parsers, so it spells the lines again, on purpose; it is left out of
the search, and every engine whose log babysit reads has its simulator package.
"""

from __future__ import annotations

import ast
import json
import math
import pkgutil
from datetime import datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tui
import tui.engines
from tui.engines import GENERIC, SPECS, Engine, of_program, readable, spec
from tui.engines.spec import CanaryEvent, EngineSpec

pytestmark = pytest.mark.unit

ROOT = Path(tui.__file__).parent
#: The engines babysit knows: adding one is adding its module (and its simulator's).
KNOWN = {"generic", "sglang", "vllm", "llamacpp", "tgi"}
#: The shortest literal searched for: shorter ones ("Running") are common words.
MIN_LENGTH = 8


def engine_modules() -> set[str]:
    return {
        m.name
        for m in pkgutil.iter_modules(tui.engines.__path__)
        if m.name != "spec" and not m.name.startswith("_")
    }


def test_the_registry_lists_every_engine_module() -> None:
    assert set(SPECS) >= KNOWN
    assert set(SPECS) == engine_modules(), "each module defines the SPEC of the engine it names"
    assert {e.value for e in Engine} == set(SPECS)
    for name, found in SPECS.items():
        assert isinstance(found, EngineSpec) and found.name == name
        assert spec(name) is found and spec(Engine(name)) is found
    assert spec("no such engine").name == GENERIC
    assert {s.name for s in readable()} == KNOWN - {GENERIC}
    assert of_program(["python3", "-m", "sglang.launch_server"]) is SPECS["sglang"]
    assert of_program(["/usr/bin/vllm", "serve", "m"]) is SPECS["vllm"]
    assert (
        of_program(["/opt/llama.cpp/build/bin/llama-server", "-m", "q.gguf"]) is SPECS["llamacpp"]
    )
    assert of_program(["text-generation-launcher", "--model-id", "m"]) is SPECS["tgi"]
    assert of_program(["bash", "run.sh"]) is None


def declared(engine: EngineSpec) -> set[str]:
    """Every line an engine's spec names (what it prints, in any field)."""
    return {
        *engine.ready,
        *engine.run_starts,
        *engine.deaths,
        *engine.hangs,
        *engine.startup_failures,
        *engine.telling,
        *(h.text for h in engine.args_heads),
        *(line for phase in engine.phases for line in phase.lines),
    }


def own_texts(engine: EngineSpec) -> set[str]:
    """The literals that are this engine's alone: its ready lines, death lines, args heads
    and Prometheus names, less the lines another engine prints too (uvicorn's
    ``Uvicorn running on`` is any uvicorn server's)."""
    page = engine.prometheus
    texts = {
        *engine.ready,
        *engine.deaths,
        *engine.hangs,
        *(h.text for h in engine.args_heads),
        *page.gauges,
        *page.rates,
        *(page.acceptance or ()),
    }
    shared = set().union(*(declared(s) for s in SPECS.values() if s is not engine))
    return {t for t in texts - shared if len(t) >= MIN_LENGTH}


def literals(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal of a module but its docstrings (f-strings'
    constant parts included)."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def home(path: Path) -> str | None:
    """The engine whose home ``path`` is (``tui/engines/<name>.py``, ``tui/engines/<name>/``),
    or None."""
    parts = path.relative_to(ROOT).parts
    if parts[0] != "engines" or len(parts) < 2:
        return None
    return parts[1].removesuffix(".py")


def product_modules() -> list[Path]:
    return [p for p in sorted(ROOT.rglob("*.py")) if p.relative_to(ROOT).parts[0] != "sim"]


@pytest.mark.parametrize("name", sorted(set(SPECS) - {GENERIC}))
def test_an_engine_is_one_module(name: str) -> None:
    engine = SPECS[name]
    texts = own_texts(engine)
    assert texts, f"{name} declares what it prints"
    found = []
    for path in product_modules():
        if home(path) == name:
            continue
        for line, value in literals(path):
            held = [t for t in texts if t in value]
            named = value.lower() == name or value.lower().startswith((f"{name}:", f"{name}-"))
            if held or named:
                found.append(f"{path.relative_to(ROOT)}:{line}: {value[:60]!r}")
    assert not found, f"{name}'s knowledge outside its module:\n" + "\n".join(found)


@pytest.mark.parametrize("name", sorted(s.name for s in readable()))
def test_every_engine_babysit_reads_has_its_simulator(name: str) -> None:
    package = ROOT / "sim" / name
    assert (package / "__init__.py").is_file(), f"tui/sim/{name}/ simulates {name}"


@pytest.mark.parametrize("name", sorted(KNOWN - {GENERIC}))
def test_the_startup_phases_are_declared(name: str) -> None:
    phases = SPECS[name].phases
    assert len(phases) >= 3
    assert all(p.name and p.lines for p in phases)
    assert len({p.name for p in phases}) == len(phases), "each phase once, in order"


LINES = st.one_of(
    st.text(max_size=300),
    st.builds(
        "".join,
        st.lists(
            st.sampled_from(
                [
                    "[2026-01-02 03:04:05] ",
                    "[2026-01-02 03:04:05.123 DP1 TP0] ",
                    "INFO 01-02 03:04:05 [loggers.py:1] ",
                    "(APIServer pid=7) ",
                    "Decode batch, ",
                    "Prefill batch. ",
                    "Engine 000: ",
                    "2 Engines Aggregated: ",
                    "Avg prompt throughput: ",
                    "SpecDecoding metrics: ",
                    "Prefix cache hit rate: GPU: ",
                    "#running-req: ",
                    "gen throughput (token/s): ",
                    "1.5",
                    "nan",
                    "1e999",
                    "%",
                    ", ",
                    ": ",
                    "\r",
                    "\x00",
                    "02-30 ",
                    "9999-99-99 99:99:99",
                ]
            ),
            max_size=14,
        ),
    ),
)


@pytest.mark.parametrize("name", sorted(s.name for s in readable()))
@settings(max_examples=200, deadline=None)
@given(lines=st.lists(LINES, min_size=1, max_size=4))
def test_no_reader_raises_on_any_text(name: str, lines: list[str]) -> None:
    for reference in (None, datetime(2026, 1, 3)):
        reader = SPECS[name].reader(  # type: ignore[misc]
            reference=reference, clock=lambda: datetime(2026, 1, 3), started=datetime(2026, 1, 1)
        )
        for offset, line in enumerate(lines):
            for sample in reader.records(line, offset, run=1):
                assert sample.engine == name
                assert all(math.isfinite(v) for v in sample.values.values())
            reader.line_time(line)


def canaries() -> list[str]:
    return sorted(name for name, s in SPECS.items() if s.canary is not None)


def test_every_engine_babysit_reads_can_be_sent_a_canary() -> None:
    assert set(canaries()) == KNOWN - {GENERIC}
    assert SPECS[GENERIC].canary is None
    for name in canaries():
        api = SPECS[name].canary
        assert api is not None and api.path.startswith("/")
        body = api.body("The capital of France is", 8)
        json.dumps(body)
        place: object = body
        for key in api.sampling_at:
            assert isinstance(place, dict)
            place = place[key]
        assert isinstance(place, dict), f"{name}'s sampling goes into an object"
        assert not set(api.sampling_keys) & set(place), "the body holds no sampling key"


@pytest.mark.parametrize("name", sorted(KNOWN - {GENERIC}))
def test_the_serving_fields_are_declared(name: str) -> None:
    engine = SPECS[name]
    assert engine.model_keys, f"{name} names where its model is"
    assert engine.draft_tokens is not None
    assert engine.draft_tokens({}) is None, "no values, no draft tokens"
    assert isinstance(engine.prints_progress, bool)
    assert isinstance(engine.counts_when_idle, bool)
    assert all(len(line) >= MIN_LENGTH for line in engine.hangs)


#: Each engine's running values that say how many tokens one draft proposes.
DRAFTS = {
    "sglang": ({"speculative_algorithm": "EAGLE3", "speculative_num_steps": 3}, 3),
    "vllm": ({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 4}}, 4),
    "llamacpp": ({"model_draft": "d.gguf", "draft_max": "16"}, 16),
    "tgi": ({"speculate": 2}, 2),
}


@pytest.mark.parametrize("name", sorted(DRAFTS))
def test_draft_tokens_come_from_the_running_values(name: str) -> None:
    values, expected = DRAFTS[name]
    assert SPECS[name].draft_tokens(values) == expected  # type: ignore[misc]


def test_draft_tokens_read_every_spelling_of_a_value() -> None:
    sglang, vllm = SPECS["sglang"].draft_tokens, SPECS["vllm"].draft_tokens
    assert sglang is not None and vllm is not None
    # server_args lists the steps with speculative decoding off too
    assert sglang({"speculative_algorithm": None, "speculative_num_steps": 5}) is None
    assert sglang({"speculative_algorithm": "NGRAM", "speculative_num_draft_tokens": 4}) == 3
    assert vllm({"speculative_config": '{"num_speculative_tokens": 5}'}) == 5
    assert vllm({"speculative_config": "{'model': 'd', 'num_speculative_tokens': 2}"}) == 2
    assert vllm({"num_speculative_tokens": 3}) == 3
    assert vllm({"speculative_config": "SpeculativeConfig(method=eagle)"}) is None


EVENTS = st.one_of(
    st.text(max_size=200),
    st.builds(
        json.dumps,
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ["choices", "text", "finish_reason", "usage", "completion_tokens", "error",
                     "message", "object", "token", "special", "details", "generated_tokens",
                     "error_type"]
                ),
                inner,
                max_size=5,
            ),
            max_leaves=16,
        ),
    ),
)  # fmt: skip


@pytest.mark.parametrize("name", canaries())
@settings(max_examples=300, deadline=None)
@given(payload=EVENTS)
def test_no_canary_reader_raises_on_any_text(name: str, payload: str) -> None:
    api = SPECS[name].canary
    assert api is not None
    for event in (api.read_event(payload), api.read_answer(payload)):
        if event is None:
            continue
        assert isinstance(event, CanaryEvent)
        assert isinstance(event.text, str)
        assert event.finish_reason is None or isinstance(event.finish_reason, str)
        assert event.error is None or isinstance(event.error, str)
        assert event.tokens is None or (isinstance(event.tokens, int) and event.tokens >= 0)
