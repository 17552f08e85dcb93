"""A docker json-file record read as a line: its log, its stamp and stream, partial records
joined, and hostile records shown, never raised: the same in the splitter and a tail."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core.containers import DOCKER_JSON
from tui.core.lines import (
    JOINED_CUT_MARKER,
    MAX_JOINED_CHARS,
    line_text,
    read_record,
    rfc3339_ns,
    tail_lines,
    whole_lines,
)
from tui.core.logcursor import CUT_MARKER, MAX_RECORD_BYTES, LineSplitter, LogLine

pytestmark = pytest.mark.unit

TIME = "2026-12-01T20:14:57.835960008Z"
EPOCH = 1796156097.835960008


def record(log: str, stream: str = "stdout", time: str = TIME) -> bytes:
    """One line of a json-file log as docker writes it (Go escapes <, > and &)."""
    text = json.dumps({"log": log, "stream": stream, "time": time}, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")).encode()


def test_a_record_reads_as_its_log_with_its_time_and_stream() -> None:
    r = read_record(record("INFO ready\n", "stderr"), DOCKER_JSON)
    assert (r.text, r.stream, r.ends) == ("INFO ready", "stderr", True)
    assert r.stamp == pytest.approx(EPOCH, abs=1e-6)
    assert line_text(record("a\r\n"), DOCKER_JSON) == "a"


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("2026-12-01T20:14:57Z", 1796156097 * 10**9),
        ("2026-12-01T20:14:57.5Z", 1796156097 * 10**9 + 500_000_000),
        ("2026-12-01T22:14:57.000000001+02:00", 1796156097 * 10**9 + 1),
        ("2026-13-01T20:14:57Z", None),
        ("yesterday", None),
        ("2026-12-01T20:14:57.1234567890Z", None),
    ],
)
def test_rfc3339_nanoseconds(text: str, ns: int | None) -> None:
    assert rfc3339_ns(text) == ns


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"not json at all", "not json at all"),
        (b'{"log": 5}', '{"log": 5}'),
        (b"[1, 2]", "[1, 2]"),
        (b'{"log": "cut', '{"log": "cut'),
        (b"[" * 100_000, "[" * 100_000),
        (b'{"log":"\\u001b]0;pwned\\u0007x\\u202e\\ud800y\\n","time":"bad"}', "xy"),
        (b'{"log":"\\u001b[31mred\\u001b[0m\\n"}', "red"),
        (b"\xff\xfe{", "\ufffd\ufffd{"),
        (b'{"log":"ok\\n","stream":"\\u001b"}', "ok"),
    ],
)
def test_hostile_records_read_as_text_never_raise(raw: bytes, shown: str) -> None:
    r = read_record(raw, DOCKER_JSON)
    assert r.text == shown
    assert r.stream in (None, "stdout", "stderr")


def test_partial_records_are_one_line_at_the_first_records_offset() -> None:
    big = "<" * 40_000
    parts = [record(big[:16384]), record(big[16384:32768]), record(big[32768:] + "\n")]
    data = b"".join(p + b"\n" for p in [*parts, record("next\n")])
    lines = tail_lines(data, 0, format=DOCKER_JSON)
    assert [(x.text, x.offset) for x in lines] == [
        (big, 0),
        ("next", sum(len(p) + 1 for p in parts)),
    ]
    assert lines[0].size == sum(len(p) + 1 for p in parts)
    assert lines[0].stamp == pytest.approx(EPOCH, abs=1e-6)
    # The splitter, fed a byte at a time, gives the same lines, offsets and sizes.
    splitter = LineSplitter(clock=lambda: 0.0, format=DOCKER_JSON)
    fed = [x for i in range(len(data)) for x in splitter.feed(1, 2, i, data[i : i + 1])]
    assert [(x.text, x.offset, x.size) for x in fed] == [(x.text, x.offset, x.size) for x in lines]
    assert all(len(p) < MAX_RECORD_BYTES for p in parts)


def test_a_resume_cursor_never_falls_inside_a_split_line() -> None:
    first, second = record("a" * 10), record("b\n")
    splitter = LineSplitter(clock=lambda: 0.0, format=DOCKER_JSON)
    assert splitter.feed(1, 2, 0, first + b"\n") == []
    cursor = splitter.resume_cursor
    assert cursor is not None and cursor.offset == 0
    (line,) = splitter.feed(1, 2, len(first) + 1, second + b"\n")
    assert (line.text, line.offset, line.size) == ("a" * 10 + "b", 0, len(first) + len(second) + 2)
    assert splitter.resume_cursor.offset == line.size  # type: ignore[union-attr]


def test_a_joined_line_is_bounded_and_other_streams_end_it() -> None:
    pieces = [record("x" * 16384) for _ in range(6)] + [record("end\n")]
    data = b"".join(p + b"\n" for p in pieces)
    (line,) = tail_lines(data, 0, format=DOCKER_JSON)
    assert line.cut and line.text.endswith(JOINED_CUT_MARKER)
    assert len(line.text) == MAX_JOINED_CHARS + len(JOINED_CUT_MARKER)
    out, err = record("out part"), record("err line\n", "stderr")
    mixed = out + b"\n" + err + b"\n"
    assert whole_lines(mixed, 0, format=DOCKER_JSON) == [
        ("out part", 0),
        ("err line", len(out) + 1),
    ]


def test_a_record_past_the_limit_is_cut_and_shown_raw() -> None:
    splitter = LineSplitter(clock=lambda: 0.0, format=DOCKER_JSON)
    raw = record("y" * (MAX_RECORD_BYTES + 10) + "\n") + b"\n" + record("after\n") + b"\n"
    lines = splitter.feed(1, 2, 0, raw)
    assert lines[0].cut and lines[0].text.endswith(CUT_MARKER)
    assert lines[1].text == "after"
    assert splitter.pending_bytes == 0


LOGS = st.text(max_size=30).map(lambda t: t.replace("\n", ""))
RECORDS = st.lists(
    st.tuples(LOGS, st.booleans(), st.sampled_from(["stdout", "stderr"])), max_size=10
).map(
    lambda items: b"".join(
        record(log + ("\n" if ends else ""), s) + b"\n" for log, ends, s in items
    )
)
JUNK = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6).map(
    lambda lines: b"".join(line + b"\n" for line in lines)
)


@settings(max_examples=300)
@given(st.lists(st.one_of(RECORDS, JUNK), max_size=4).map(b"".join), st.integers(1, 64))
def test_the_splitter_and_a_tail_agree_on_any_records_in_any_chunks(
    data: bytes, chunk: int
) -> None:
    splitter = LineSplitter(clock=lambda: 0.0, format=DOCKER_JSON)
    fed = []
    for at in range(0, len(data), chunk):
        fed.extend(splitter.feed(1, 2, at, data[at : at + chunk]))
    fed.extend(splitter.flush())
    whole = tail_lines(data, 0, format=DOCKER_JSON)
    complete = [(x.text, x.offset, x.size, x.stamp, x.stream) for x in fed if x.complete]
    assert complete == [(x.text, x.offset, x.size, x.stamp, x.stream) for x in whole]
    # Every byte is in exactly one line, in order.
    assert all(a.offset + a.size == b.offset for a, b in itertools.pairwise(fed))
    assert sum(x.size for x in fed) == len(data)
    assert all("\x1b" not in x.text and "\u202e" not in x.text for x in fed)


def test_a_metric_line_with_a_stamp_takes_the_stamps_time_over_the_engines() -> None:
    from tui.core.metrics.model import Metric
    from tui.core.report import ServiceFacts

    text = (
        "INFO 12-20 10:00:07 metrics.py:467] Avg prompt throughput: 51.2 tokens/s, Avg "
        "generation throughput: 8.9 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 1 "
        "reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 35.2%."
    )
    stamped, plain = (ServiceFacts("here", "svc", engine="vllm", intended=None) for _ in range(2))
    line = LogLine(text, 1, 2, 0, len(text) + 1, 0.0, stamp=EPOCH)
    assert stamped.feed_line(line, utc_offset=3600)
    assert plain.feed_line(replace(line, stamp=None), utc_offset=3600)

    def when(facts: ServiceFacts) -> float:
        metrics = facts.report(EPOCH).metrics
        assert metrics is not None
        return metrics.series_of(Metric.GEN_THROUGHPUT)[-1].ts

    assert when(stamped) == pytest.approx(EPOCH, abs=1e-5)
    assert when(plain) != pytest.approx(EPOCH, abs=1)
