"""A container's json-file log: a run's first record, its ready line and args line,
found in crafted files as Docker writes them (Go's escaping, ``time`` last)."""

from __future__ import annotations

import calendar
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tui.agent import jsonlog
from tui.agent.containerprobe import run_bound
from tui.agent.jsonlog import (
    JSON_BACK_SCAN,
    json_anchor,
    json_readiness,
    json_span,
    plain_piece,
    record_text,
    record_time,
)

pytestmark = pytest.mark.unit

T0 = float(calendar.timegm((2026, 12, 1, 9, 0, 0)))
VLLM_READY = "Application startup complete."
SERVICE = {
    "ready": [VLLM_READY],
    "args_heads": [{"text": "non-default args: {", "until": None}],
}


def stamp(ts: float) -> str:
    """Docker's RFC 3339 time with nanoseconds, trailing zeros trimmed, in UTC."""
    whole = int(ts)
    nanos = round((ts - whole) * 1e9)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
    fraction = ("." + f"{nanos:09d}".rstrip("0")) if nanos else ""
    return base + fraction + "Z"


def record(text: str, ts: float, stream: str = "stdout") -> bytes:
    """One json-file line as Docker's encoder writes it."""
    body = json.dumps(text, ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        body = body.replace(char, escaped)
    stream_json = json.dumps(stream)
    return f'{{"log":{body},"stream":{stream_json},"time":"{stamp(ts)}"}}\n'.encode()


def run_lines(start: float, texts: list[str], step: float = 0.001) -> bytes:
    return b"".join(record(t + "\n", start + i * step) for i, t in enumerate(texts))


def write(path: Path, *parts: bytes) -> Path:
    path.write_bytes(b"".join(parts))
    return path


def ready_of(path: Path, bound: float | None, started: float | None, service=SERVICE):
    return json_readiness(str(path), bound, started, service)


def test_a_record_is_dated_and_decoded() -> None:
    line = record('he said "<ok>" & left\t\x01', T0 + 0.5).rstrip(b"\n")
    assert record_time(line) == pytest.approx(T0 + 0.5)
    assert record_text(line) == 'he said "<ok>" & left\t\x01'
    assert b"\\u003cok\\u003e" in line
    assert record_time(b'{"log":"x"}') is None
    assert record_text(b"not json") is None


def test_the_second_run_starts_past_the_first_runs_ready_line(tmp_path: Path) -> None:
    first = run_lines(T0, ["INFO starting", "args", VLLM_READY, "INFO stats", "sigquit"])
    second_start = T0 + 60
    second = run_lines(second_start + 0.2, ["INFO starting", "non-default args: {'port': 8000}"])
    path = write(tmp_path / "c-json.log", first, second)
    ready = ready_of(path, T0 + 10, second_start)
    assert ready["anchor"] == len(first)
    assert ready["seen"] is False
    assert ready["cut"] is False
    assert ready["args_line"] == "non-default args: {'port': 8000}"
    # the new run's own ready line, dated by its record's time
    later = record(VLLM_READY + "\n", second_start + 5)
    write(path, first, second, later)
    ready = ready_of(path, T0 + 10, second_start)
    assert ready["seen"] is True
    assert ready["offset"] == len(first) + len(second)
    assert ready["line"] == VLLM_READY
    assert ready["at"] == pytest.approx(second_start + 5)


def test_a_container_that_never_finished_has_only_this_runs_records(tmp_path: Path) -> None:
    path = write(tmp_path / "c-json.log", run_lines(T0 + 0.1, ["hello", VLLM_READY]))
    ready = ready_of(path, None, T0)
    assert (ready["anchor"], ready["seen"], ready["cut"]) == (0, True, False)


def test_a_file_that_begins_late_in_the_run_may_have_lost_its_ready_line(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "c-json.log", run_lines(T0 + 3600, ["INFO stats"]))
    ready = ready_of(path, T0 - 5, T0)
    assert (ready["anchor"], ready["seen"], ready["cut"]) == (0, False, True)


def test_nothing_written_since_the_start(tmp_path: Path) -> None:
    path = write(tmp_path / "c-json.log", run_lines(T0, ["old", VLLM_READY]))
    ready = ready_of(path, T0 + 100, T0 + 100)
    assert ready["anchor"] == path.stat().st_size
    assert ready["seen"] is False


def test_needles_match_the_decoded_log_only(tmp_path: Path) -> None:
    service = {"ready": ['ready <"all"> & \tset', "stdout"], "args_heads": []}
    noise = record("stdout is where I write, not the ready line\n", T0 + 1)
    # the needle's words split across two records never count
    split = record('ready <"all"> & ', T0 + 1.1) + record("\tset\n", T0 + 1.2)
    hit = record('the server: ready <"all"> & \tset\n', T0 + 2, stream="stderr")
    path = write(tmp_path / "c-json.log", split, hit)
    ready = json_readiness(str(path), None, T0, service)
    assert ready["offset"] == len(split)
    assert ready["line"] == 'the server: ready <"all"> & \tset'
    path = write(tmp_path / "c-json.log", noise)
    ready = json_readiness(str(path), None, T0, service)
    assert ready["offset"] == 0  # "stdout" is in its log text too


def test_a_needle_in_another_field_never_matches(tmp_path: Path) -> None:
    path = write(tmp_path / "c-json.log", record("plain words\n", T0, stream="stdout"))
    ready = json_readiness(str(path), None, T0, {"ready": ["stdout"], "args_heads": []})
    assert ready["seen"] is False


def test_plain_pieces_are_what_go_writes_unchanged() -> None:
    assert plain_piece(VLLM_READY) == VLLM_READY.encode()
    assert plain_piece('a <b> "longest piece" &') == b"longest piece"
    assert plain_piece("<>&") == b""


def test_an_args_dump_of_many_records_is_joined(tmp_path: Path) -> None:
    service = {"ready": [], "args_heads": [{"text": "Args {", "until": "}"}]}
    lines = ["boot", "Args {", '    model_id: "q",', "    port: 80,", "}", "after"]
    path = write(tmp_path / "c-json.log", run_lines(T0, lines))
    ready = json_readiness(str(path), None, T0, service)
    assert ready["args_line"] == 'Args {\n    model_id: "q",\n    port: 80,\n}'
    assert ready["seen"] is None


def _counting_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    reads: list[int] = []
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        data = real(fd, n, offset)
        reads.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", pread)
    return reads


def _filler(start: float, size: int, step: float = 1e-4) -> Iterator[bytes]:
    line = "INFO a stats line of a busy server, written again and again " * 2
    written = 0
    i = 0
    while written < size:
        chunk = record(line + "\n", start + i * step)
        written += len(chunk)
        i += 1
        yield chunk


def test_a_huge_first_run_is_never_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = b"".join(_filler(T0, 48 * 1024 * 1024))
    second = run_lines(T0 + 9000, ["starting", VLLM_READY])
    path = write(tmp_path / "c-json.log", first, second)
    reads = _counting_reads(monkeypatch)
    ready = ready_of(path, T0 + 8999, T0 + 9000)
    assert ready["anchor"] == len(first)
    assert ready["seen"] is True
    assert sum(reads) <= 4 * 1024 * 1024


def test_a_run_longer_than_the_walk_back_is_placed_by_its_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = b"".join(_filler(T0, 30 * 1024 * 1024)) + record(VLLM_READY + "\n", T0 + 5000)
    second_start = T0 + 9000
    second = record("starting\n", second_start + 0.1) + b"".join(
        _filler(second_start + 1, JSON_BACK_SCAN + 3 * 1024 * 1024)
    )
    path = write(tmp_path / "c-json.log", first, second)
    reads = _counting_reads(monkeypatch)
    with open(path, "rb") as handle:
        anchor, how = json_anchor(handle.fileno(), len(first) + len(second), second_start - 1)
    assert anchor == len(first)
    assert how == "the records' times"
    # the walk back, then about a block per halving: never the 30 MiB of the first run
    assert sum(reads) <= JSON_BACK_SCAN + 2 * 1024 * 1024


def test_the_files_first_and_last_times(tmp_path: Path) -> None:
    path = write(tmp_path / "c-json.log", run_lines(T0, ["a", "b", "c"], step=1.0), b'{"log":"cu')
    with open(path, "rb") as handle:
        first, last = json_span(handle.fileno(), path.stat().st_size)
    assert (first, last) == (T0, T0 + 2)


@pytest.mark.parametrize(
    ("started", "finished", "bound"),
    [
        pytest.param(T0, None, None, id="never-finished"),
        pytest.param(T0, T0 - 3, T0 - 3, id="restarted: the last run's finish"),
        pytest.param(T0, T0 + 30, T0, id="exited: its own finish"),
        pytest.param(None, T0, T0, id="never-started-since"),
    ],
)
def test_the_bound_of_a_runs_records(
    started: float | None, finished: float | None, bound: float | None
) -> None:
    assert run_bound({"started_at": started, "finished_at": finished}) == bound


hostile_line = st.one_of(
    st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")),
    st.text(max_size=200).map(lambda t: record(t, T0 + 1).rstrip(b"\n")),
    st.sampled_from(
        [
            b'{"log":"x","time":"2026-12-01T09:00:05Z"}',
            b'{"log":"' + VLLM_READY.encode() + b'","time":"9999-99-99T99:99:99Z"}',
            b'"time":"2026-12-01T09:00:05Z"}',
            b'{"log":"\\u0041pplication startup complete.","time":"2026-12-01T09:00:09Z"}',
            b"\xff\xfe" * 50,
        ]
    ),
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(hostile_line, max_size=30), bound=st.sampled_from([None, T0, T0 + 3]))
def test_hostile_lines_never_break_the_search(
    tmp_path: Path, lines: list[bytes], bound: float | None
) -> None:
    path = write(tmp_path / "hostile-json.log", b"\n".join(lines) + (b"\n" if lines else b""))
    size = path.stat().st_size
    ready = ready_of(path, bound, T0)
    starts = {0, size} | {i + 1 for i, b in enumerate(path.read_bytes()) if b == ord("\n")}
    assert ready["anchor"] in starts
    if ready.get("seen"):
        assert ready["offset"] in starts and ready["offset"] >= ready["anchor"]
        assert VLLM_READY in ready["line"]
    assert jsonlog.record_text(b"") is None
