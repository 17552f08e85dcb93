"""The pieces under the end-to-end tests of llama.cpp and TGI, each alone: where a fresh
elapsed-stamped log's run begins, lines placed by the run's start and the host's zone, and
another engine's speculative options read as speculation."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from tui.agent.logtime import Dater
from tui.agent.readiness import elapsed_anchor, holds_whole_run
from tui.core.launch.argv import FlagSet
from tui.core.launch.diff import speculative
from tui.core.metrics.boundaries import LogScanner, RunEvent, RunEventKind
from tui.core.metrics.model import Metric, MetricSample
from tui.core.metrics.parse import MetricsParser
from tui.engines import SPECS

pytestmark = pytest.mark.unit

START = time.mktime((2026, 12, 1, 12, 0, 0, 0, 0, -1))
LLAMA_STAMPS = [[s.pattern, s.kind] for s in SPECS["llamacpp"].stamps]
FRESH = b"0.00.012.000 I build: 8800 (2f72460)\n0.00.900.000 I srv  main: listening on x\n"
EVAL = (
    "slot print_timing: id  0 | task 3 |        eval time =    1074.12 ms /   400 tokens "
    "(    2.69 ms per token,   372.40 tokens per second)"
)
TGI_ARGS = "2026-12-01T10:00:00.000000Z  INFO text_generation_launcher: Args {"


def anchor_of(tmp_path: Path, data: bytes, *, written: float) -> tuple[int | None, str]:
    """Where ``elapsed_anchor`` puts the run of a process started at START in a log of
    ``data`` last written at ``written``."""
    log = tmp_path / "serve.log"
    log.write_bytes(data)
    fd = os.open(log, os.O_RDONLY)
    try:
        return elapsed_anchor(fd, len(data), Dater(LLAMA_STAMPS, written, START))
    finally:
        os.close(fd)


def test_a_fresh_log_written_by_its_process_alone_is_its_run_from_the_first_line(
    tmp_path: Path,
) -> None:
    lead = b"a wrapper's line, unstamped\n"
    assert anchor_of(tmp_path, lead + FRESH, written=START + 1) == (
        len(lead),
        "the stamps count from this process's start",
    )


@pytest.mark.parametrize(
    ("data", "written"),
    [
        # a line placed after the file's last write: another, longer run wrote it
        (FRESH + b"5.00.000.000 I srv  update_slots: all slots are idle\n", START + 60),
        # the first stamp is late: the log lost its first lines (cut while it ran)
        (b"3.00.000.000 I srv  update_slots: all slots are idle\n", START + 600),
    ],
)
def test_a_log_that_may_hold_another_runs_lines_cannot_tell(
    tmp_path: Path, data: bytes, written: float
) -> None:
    at, why = anchor_of(tmp_path, data, written=written)
    assert at is None and why.startswith("cannot tell"), why


def test_a_fresh_elapsed_log_holds_its_whole_run(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_bytes(FRESH)
    fd = os.open(log, os.O_RDONLY)
    try:
        assert holds_whole_run(fd, 0, START, Dater(LLAMA_STAMPS, START + 1, START))
    finally:
        os.close(fd)


def test_the_report_places_llama_lines_by_the_run_start_once_told() -> None:
    scanner = LogScanner("llamacpp")
    assert scanner.feed("0.00.012.000 I system info: n_threads = 8, x", 0) is not None
    started = datetime(2026, 12, 1, 12, 0, 0)
    scanner.place(started, 3600)
    (sample,) = scanner.feed_all(f"1.35.226.052 I {EVAL}", 100)
    assert isinstance(sample, MetricSample)
    assert sample.ts == datetime(2026, 12, 1, 12, 1, 35, 226052)
    assert sample.values[Metric.GEN_THROUGHPUT] == pytest.approx(372.4)
    assert sample.run == 1  # the run seen before the start was told still counts


def test_tgi_lines_are_placed_in_the_hosts_zone() -> None:
    east = MetricsParser("tgi", utc_offset=2 * 3600)
    assert east.line_time(TGI_ARGS) == datetime(2026, 12, 1, 12, 0, 0)
    # the other engines' readers take no zone, and a generic log's parser still reads them
    assert MetricsParser(None, utc_offset=2 * 3600).line_time(TGI_ARGS) == datetime(
        2026, 12, 1, 12, 0, 0
    )


def test_tgi_args_dump_starts_a_run() -> None:
    (event,) = LogScanner("tgi").feed_all(TGI_ARGS, 0)
    assert isinstance(event, RunEvent) and event.kind is RunEventKind.STARTED
    assert event.marker == "tgi-args"


@pytest.mark.parametrize(
    ("engine", "argv", "said"),
    [
        ("llamacpp", ["llama-server", "-m", "a.gguf", "-md", "d.gguf"], "model_draft d.gguf"),
        ("tgi", ["text-generation-launcher", "--speculate", "3"], "speculate 3"),
        ("llamacpp", ["llama-server", "-m", "a.gguf"], None),
    ],
)
def test_another_engines_speculative_options_say_speculation(
    engine: str, argv: list[str], said: str | None
) -> None:
    assert speculative(FlagSet.parse(argv), engine) == said
