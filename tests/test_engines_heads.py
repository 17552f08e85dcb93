"""The engine facts babysit looks for are written once: launch, metrics and the probe read
the engines' specs (:mod:`tui.engines`), and the nvidia-smi columns are :mod:`tui.core.gpu`'s."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tui.agent
from tui.config import Engine, Service, Source
from tui.core.gpu import APPS_FIELDS, APPS_QUERY, GPU_FIELDS, GPU_QUERY
from tui.core.launch.reported import parse_reported
from tui.core.metrics.boundaries import RunBoundary, RunEventKind
from tui.engines import SPECS
from tui.engines.spec import ArgsHead
from tui.remote.probe import probe_request

pytestmark = pytest.mark.unit

#: The prefix each engine prints before a message (SGLang's stamp, vLLM's level and file).
PREFIX = {
    "sglang": "[2026-01-02 03:04:05] ",
    "vllm": "INFO 01-02 03:04:05 [api_server.py:1] ",
}


#: (engine, head) of the engines above, whose args line is one line after that prefix.
HEADS = [(name, head) for name in PREFIX for head in SPECS[name].args_heads]


def args_line(engine: str, head: ArgsHead) -> str:
    """An args line with this head and one argument, closed as the head opens."""
    body = "model='m')" if head.text.endswith("(") else "'model': 'm'}"
    return PREFIX[engine] + head.text + body


@pytest.mark.parametrize(("engine", "head"), HEADS, ids=lambda h: getattr(h, "form", h))
def test_launch_reads_every_args_head_in_its_form(engine: str, head: ArgsHead) -> None:
    reported = parse_reported(args_line(engine, head))
    assert reported is not None
    assert reported.format == head
    assert reported.engine == engine
    assert not reported.truncated


@pytest.mark.parametrize(("engine", "head"), HEADS, ids=lambda h: getattr(h, "form", h))
def test_metrics_start_a_run_at_every_args_head(engine: str, head: ArgsHead) -> None:
    for wanted in (None, Engine(engine)):
        event = RunBoundary(wanted).feed(args_line(engine, head), 0)
        assert event is not None and event.kind is RunEventKind.STARTED
        assert event.engine == engine
        assert event.marker == f"{engine}-args"


def _service(engine: Engine) -> Service:
    return Service(name="s", host="h", engine=engine, log="/x.log", source=Source("t", 1))


def test_the_probe_asks_for_the_engines_heads_and_every_one_for_a_generic_server() -> None:
    def heads(engine: Engine) -> list[str]:
        (asked,) = probe_request([_service(engine)])["services"]  # type: ignore[misc]
        return [h["text"] for h in asked["args_heads"]]

    every = {h.text for s in SPECS.values() for h in s.args_heads}
    assert set(heads(Engine.GENERIC)) == every
    for engine in Engine:
        if engine is not Engine.GENERIC:
            assert heads(engine) == [h.text for h in engine.spec.args_heads]


def test_the_agent_queries_the_columns_core_reads() -> None:
    """The agent (stdlib only, it cannot import core) spells the queries itself: its copies
    must be core's, or a column would be read as another."""
    queries = (
        (f"--query-gpu={','.join(GPU_FIELDS)}", GPU_QUERY),
        (f"--query-compute-apps={','.join(APPS_FIELDS)}", APPS_QUERY),
    )
    strings = {
        node.value
        for path in Path(tui.agent.__file__).parent.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    for query, command in queries:
        assert query in command
        assert query in strings
