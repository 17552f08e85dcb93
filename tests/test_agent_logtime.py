"""The agent dates a log's lines the ways the request says (each engine's stamps, from the
registry), finds where a run begins in a log stamped by time since its start, and brings
back an args dump of many lines."""

from __future__ import annotations

import calendar
import os
import time
from pathlib import Path

import pytest

from tui.agent.logtime import Dater
from tui.agent.readiness import args_heads_of, args_line, elapsed_anchor, scan_for
from tui.engines import SPECS
from tui.engines.spec import Stamp, StampKind

pytestmark = pytest.mark.unit

START = time.mktime((2026, 12, 1, 23, 59, 0, 0, 0, -1))


def stamps(*found: Stamp) -> list[list[str]]:
    return [[s.pattern, s.kind] for s in found]


def test_each_engines_stamps_date_its_lines() -> None:
    sglang = Dater(stamps(*SPECS["sglang"].stamps), clock=START)
    assert sglang.time(b"[2026-12-01 23:59:05] Decode batch") == START + 5
    vllm = Dater(stamps(*SPECS["vllm"].stamps), clock=START + 60)
    assert vllm.time(b"(APIServer pid=7) INFO 12-01 23:59:05 [x.py:1] hi") == START + 5
    assert vllm.time(b"[2026-12-01 23:59:05] not vLLM's") is None


def test_utc_time_only_and_elapsed_stamps() -> None:
    utc = Dater(stamps(Stamp(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)", StampKind.UTC)), 0)
    assert utc.time(b"2026-12-01T10:00:00.5Z INFO x") == calendar.timegm((2026, 12, 1, 10, 0, 0))
    only = [[r"\[(\d\d):(\d\d):(\d\d)", StampKind.TIME_ONLY]]
    # the date is the run's; a time before the start's is past midnight
    assert Dater(only, clock=START + 3600, started=START).time(b"[23:59:30 TP0] x") == START + 30
    assert Dater(only, clock=START + 3600, started=START).time(b"[00:00:30 TP0] x") == START + 90
    elapsed = [[r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ", StampKind.ELAPSED]]
    assert Dater(elapsed, clock=START, started=START).time(b"1.02.500.000 I x") == START + 62.5
    assert Dater(elapsed, clock=START).time(b"1.02.500.000 I x") is None, "no run, no time"


def test_a_bad_stamp_of_the_request_is_left_out() -> None:
    dater = Dater(
        [["(", StampKind.WALL], ["x", "no such kind"], *stamps(*SPECS["sglang"].stamps)], 0
    )
    assert len(dater.patterns) == len(SPECS["sglang"].stamps)


def test_a_run_of_an_elapsed_stamped_log_begins_where_the_stamps_start_over(
    tmp_path: Path,
) -> None:
    # last written 3 s after the start: the second run's lines fit it, the first run's not
    elapsed = Dater([[r"(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) ", StampKind.ELAPSED]], START + 3, START)
    older = b"0.00.001.000 I first run\n0.05.000.000 I serving\n"
    newer = b"0.00.002.000 I second run\n0.01.000.000 I loading\n"
    log = tmp_path / "serve.log"
    log.write_bytes(older + newer)
    fd = os.open(log, os.O_RDONLY)
    try:
        assert elapsed_anchor(fd, len(older + newer), elapsed) == (
            len(older),
            "the stamps start over",
        )
        at, why = elapsed_anchor(fd, len(older), elapsed)
        assert at is None and "cannot tell" in why
    finally:
        os.close(fd)


def test_an_args_dump_of_many_lines_comes_back_up_to_its_until_line(tmp_path: Path) -> None:
    dump = b'x\nINFO Args {\n    model_id: "m",\n    port: 80,\n}\nINFO next\n'
    log = tmp_path / "serve.log"
    log.write_bytes(dump)
    heads = args_heads_of([{"text": "Args {", "until": "}"}, ["server_args=", None], "plain"])
    assert heads == [(b"Args {", b"}"), (b"server_args=", None), (b"plain", None)]
    fd = os.open(log, os.O_RDONLY)
    try:
        found = args_line(fd, 0, len(dump), heads)
    finally:
        os.close(fd)
    assert found == 'INFO Args {\n    model_id: "m",\n    port: 80,\n}'


def test_the_first_line_holding_any_needle_is_found_whichever_needle_it_holds(
    tmp_path: Path,
) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(b"loading\nmain: listening on http://127.0.0.1:8080\nlater: model loaded\n")
    fd = os.open(log, os.O_RDONLY)
    try:
        found = scan_for(fd, 0, log.stat().st_size, [b"model loaded", b"listening on"])
    finally:
        os.close(fd)
    assert found == (8, "main: listening on http://127.0.0.1:8080")
