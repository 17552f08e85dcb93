"""The pure core of following: sanitiser, line splitter, bounded buffer, frame decoder."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tui.core.frames import FrameDecoder, FrameError
from tui.core.logcursor import (
    CUT_MARKER,
    EventKind,
    EventRow,
    LineBuffer,
    LineSplitter,
    LogEvent,
)
from tui.core.sanitize import clean_bytes, clean_line, printable

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"\x1b]0;pwned\x07after", "after"),
        (b"\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"),
        (b"\x1b[2J\x1b[H\x1b[31mred\x1b[0m", "red"),
        (b"\x1b[?1049h alt", " alt"),
        (b"\x1bP1$r dcs \x1b\\ok", "ok"),
        (b"\x1b(B\x1b7\x1b8plain", "plain"),
        (b"\xc2\x9b2J c1 csi", " c1 csi"),
        (b"\xc2\x9d0;title\xc2\x9c c1 osc", " c1 osc"),
        (b"\x9b\x9d raw c1 bytes", "\ufffd\ufffd raw c1 bytes"),
        (b"bell\x07 bs\x08 nul\x00 del\x7f", "bell bs nul del"),
        (b"tab\tstays", "tab\tstays"),
        (b"\xff\xfe invalid utf-8", "\ufffd\ufffd invalid utf-8"),
        (b"unicode \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac", "unicode ✓ 日本"),
        (b"\x1b[", ""),
        (b"\x1b]0;unterminated title", ""),
    ],
)
def test_sanitiser_strips_what_a_terminal_would_obey(raw: bytes, shown: str) -> None:
    assert clean_bytes(raw) == shown


@settings(max_examples=500)
@given(st.binary(max_size=300))
def test_sanitised_text_has_no_controls_at_all(raw: bytes) -> None:
    text = clean_bytes(raw)
    assert not any((ord(c) < 32 and c != "\t") or 0x7F <= ord(c) <= 0x9F for c in text)
    assert "\x1b" not in text


@given(st.text(max_size=100))
def test_clean_line_keeps_printable_text_as_is(text: str) -> None:
    printable_only = "".join(c for c in text if c.isprintable())
    assert clean_line(printable_only) == printable_only


def test_printable_shows_controls_as_escapes() -> None:
    assert printable("a\nb\x1b[2J\tc") == "a\\nb\\x1b[2J\tc"


def split_all(chunks: list[bytes], max_line: int = 64) -> tuple[LineSplitter, list]:
    splitter = LineSplitter(max_line=max_line, clock=lambda: 0.0)
    lines = []
    offset = 0
    for chunk in chunks:
        lines.extend(splitter.feed(1, 2, offset, chunk))
        offset += len(chunk)
    return splitter, lines


@settings(max_examples=300)
@given(st.binary(max_size=400).map(lambda b: b.replace(b"\r", b"")), st.data())
def test_splitter_gives_the_same_lines_whatever_the_chunking(data: bytes, draw) -> None:
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=12)))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    _, whole = split_all([data], max_line=10_000)
    splitter, pieces = split_all(chunks, max_line=10_000)
    assert [(x.text, x.offset, x.size) for x in pieces] == [
        (x.text, x.offset, x.size) for x in whole
    ]
    complete = data[: data.rfind(b"\n") + 1] if b"\n" in data else b""
    assert [x.offset for x in pieces] == [
        i for i in range(len(complete)) if i == 0 or complete[i - 1 : i] == b"\n"
    ][: len(pieces)]
    assert sum(x.size for x in pieces) == len(complete)
    cursor = splitter.resume_cursor
    assert cursor is not None and cursor.offset == len(complete)
    assert splitter.pending_bytes == len(data) - len(complete)


@settings(max_examples=300)
@given(
    st.binary(max_size=600).map(lambda b: b.replace(b"\r", b"")),
    st.data(),
    st.integers(0, 200),
    st.integers(8, 100),
)
def test_the_resume_cursor_carries_what_was_read_before_it(
    data: bytes, draw, start: int, max_line: int
) -> None:
    """Whatever the chunking, cut lines and partial lines: the cursor's head is the
    file's first bytes and its anchor the bytes just before its offset."""
    start = min(start, len(data))
    cuts = sorted(draw.draw(st.lists(st.integers(start, len(data)), max_size=12)))
    chunks = [data[a:b] for a, b in zip([start, *cuts], [*cuts, len(data)], strict=True)]
    splitter = LineSplitter(max_line=max_line, clock=lambda: 0.0)
    # The host starts at ``start`` and says what it read there.
    splitter.expect(1, 2, start, data[:64], data[max(0, start - 64) : start])
    offset = start
    for chunk in chunks:
        if chunk:
            splitter.feed(1, 2, offset, chunk)
        offset += len(chunk)
        cursor = splitter.resume_cursor
        if cursor is None:
            continue
        assert cursor.head == data[:64]
        assert cursor.anchor == data[max(0, cursor.offset - 64) : cursor.offset]
    splitter.discard_pending()
    cursor = splitter.resume_cursor
    if cursor is not None:
        assert cursor.anchor == data[max(0, cursor.offset - 64) : cursor.offset]


def test_the_cursor_of_a_file_left_and_come_back_to_keeps_its_fingerprints() -> None:
    splitter = LineSplitter(clock=lambda: 0.0)
    splitter.feed(1, 10, 0, b"first file line\n")
    splitter.feed(1, 11, 0, b"a line of the other file\n")
    splitter.feed(1, 10, 16, b"more\n")
    cursor = splitter.resume_cursor
    assert cursor is not None
    assert (cursor.inode, cursor.offset) == (10, 21)
    assert cursor.head == b"first file line\nmore\n"
    assert cursor.anchor == b"first file line\nmore\n"


@given(st.integers(1, 300), st.integers(1, 50))
@example(64, 1)  # exactly the limit, a byte at a time: whole, not cut
@example(65, 1)
def test_long_lines_are_cut_and_never_held_whole(length: int, chunk: int) -> None:
    data = b"x" * length + b"\nnext\n"
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    splitter = LineSplitter(max_line=64, clock=lambda: 0.0)
    lines = []
    offset = 0
    for piece in chunks:
        lines.extend(splitter.feed(1, 2, offset, piece))
        offset += len(piece)
        assert splitter.pending_bytes <= 64
    if length > 64:
        assert lines[0].cut and lines[0].text == "x" * 64 + CUT_MARKER
    else:
        assert lines[0].text == "x" * length and not lines[0].cut
    assert lines[-1].text == "next"
    assert lines[-1].offset == length + 1


def test_switching_files_flushes_the_partial_line() -> None:
    splitter = LineSplitter(clock=lambda: 0.0)
    assert splitter.feed(1, 10, 0, b"done\npartial")[0].text == "done"
    lines = splitter.feed(1, 11, 0, b"new file\n")
    assert [(x.text, x.inode, x.complete) for x in lines] == [
        ("partial", 10, False),
        ("new file", 11, True),
    ]


def test_discarded_partial_is_read_again_not_twice() -> None:
    splitter = LineSplitter(clock=lambda: 0.0)
    splitter.feed(1, 10, 0, b"a\nhal")
    splitter.discard_pending()
    cursor = splitter.resume_cursor
    assert cursor is not None and cursor.offset == 2
    lines = splitter.feed(1, 10, cursor.offset, b"half\n")
    assert [(x.text, x.offset) for x in lines] == [("half", 2)]


def test_line_buffer_is_bounded_and_counts_what_fell_off() -> None:
    buffer = LineBuffer(max_lines=3)
    for i in range(5):
        buffer.append(EventRow(LogEvent(EventKind.OPENED, str(i), 0.0)))
    assert len(buffer) == 3
    assert buffer.first_index == 2 and buffer.appended == 5
    assert [r.event.message for r in buffer] == ["2", "3", "4"]  # type: ignore[union-attr]


@settings(max_examples=200)
@given(
    st.lists(
        st.tuples(st.sampled_from(["data", "opened", "eof"]), st.binary(max_size=40)), max_size=8
    ),
    st.data(),
)
def test_frame_decoder_survives_any_chunking(frames, draw) -> None:
    stream = b""
    for kind, payload in frames:
        header = {"t": kind, "inode": 5}
        if payload:
            header["n"] = len(payload)
        stream += json.dumps(header).encode() + b"\n" + payload
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    decoder = FrameDecoder()
    decoded = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        decoded.extend(decoder.feed(stream[a:b]))
    assert [(f.kind, f.payload) for f in decoded] == frames


def test_frame_decoder_rejects_garbage() -> None:
    with pytest.raises(FrameError):
        FrameDecoder().feed(b"Traceback (most recent call last):\n")


@pytest.mark.parametrize(
    "header",
    [
        b'{"t": "data", "n": 1000000000000000000}\n',  # would be buffered for ever
        b'{"t": "data", "n": -1}\n',
        b"[" * 5000 + b"]" * 5000 + b"\n",  # nested past Python's own recursion limit
        b'{"t": "data", "dev": NaN}\n',
    ],
    ids=["huge-payload", "negative-payload", "deep", "nan"],
)
def test_a_frame_header_of_no_shape_is_a_frame_error_never_a_crash(header: bytes) -> None:
    with pytest.raises(FrameError):
        FrameDecoder().feed(header)


def test_a_frame_header_is_printable_where_it_enters() -> None:
    (frame,) = FrameDecoder().feed(
        b'{"t": "opened", "path": "/tmp/a\\u001b]0;x\\u0007\\u202eb\\nc"}\n'
    )
    assert frame.read.string("path") == "/tmp/a\\x1b]0;x\\x07\\u202eb\\nc"
