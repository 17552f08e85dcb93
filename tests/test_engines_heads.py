"""The engine facts babysit looks for are written once: launch, metrics and the probe read
:mod:`tui.core.engines`, and the nvidia-smi columns are :mod:`tui.core.gpu`'s."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tui.agent
from tui.core.engines import ARGS_HEADS, ArgsHead, args_heads
from tui.core.gpu import APPS_FIELDS, APPS_QUERY, GPU_FIELDS, GPU_QUERY
from tui.core.launch.reported import ReportedFormat, parse_reported
from tui.core.metrics.boundaries import RunBoundary, RunEventKind, RunMarker
from tui.core.metrics.model import Engine

pytestmark = pytest.mark.unit

#: The prefix each engine prints before a message (SGLang's stamp, vLLM's level and file).
PREFIX = {
    "sglang": "[2026-01-02 03:04:05] ",
    "vllm": "INFO 01-02 03:04:05 [api_server.py:1] ",
}


def args_line(head: ArgsHead) -> str:
    """An args line with this head and one argument, closed as the head opens."""
    body = "model='m')" if head.text.endswith("(") else "'model': 'm'}"
    return PREFIX[head.engine] + head.text + body


@pytest.mark.parametrize("head", ARGS_HEADS, ids=lambda h: h.form)
def test_launch_reads_every_args_head_in_its_form(head: ArgsHead) -> None:
    reported = parse_reported(args_line(head))
    assert reported is not None
    assert reported.format is ReportedFormat(head.form)
    assert reported.format.engine is Engine(head.engine)
    assert not reported.truncated


@pytest.mark.parametrize("head", ARGS_HEADS, ids=lambda h: h.form)
def test_metrics_start_a_run_at_every_args_head(head: ArgsHead) -> None:
    for engine in (None, Engine(head.engine)):
        event = RunBoundary(engine).feed(args_line(head), 0)
        assert event is not None and event.kind is RunEventKind.STARTED
        assert event.engine is Engine(head.engine)
        assert event.marker in (RunMarker.SGLANG_SERVER_ARGS, RunMarker.VLLM_ARGS)


def test_every_reported_format_has_its_head_and_the_probe_asks_for_them() -> None:
    assert {h.form for h in ARGS_HEADS} == {f.value for f in ReportedFormat}
    assert set(args_heads("generic")) == {h.text for h in ARGS_HEADS}
    for engine in ("sglang", "vllm"):
        assert args_heads(engine) == tuple(h.text for h in ARGS_HEADS if h.engine == engine)


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
