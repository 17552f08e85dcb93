"""One line's bytes read the same in every view: the follower, ``babysit parse`` and a tail."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.commands.parse import read_lines
from tui.core.lines import line_text, whole_lines
from tui.core.logcursor import LineSplitter

pytestmark = pytest.mark.unit

#: Lines made of bytes a log may hold: text, controls, escapes, CRs, invalid UTF-8.
LOG_BYTES = st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12).map(
    lambda lines: b"".join(line + b"\n" for line in lines)
)


@settings(max_examples=300)
@given(LOG_BYTES)
def test_the_splitter_parse_and_a_tail_give_the_same_lines(data: bytes) -> None:
    splitter = LineSplitter(max_line=10_000, clock=lambda: 0.0)
    followed = [(x.text, x.offset) for x in splitter.feed(1, 2, 0, data)]
    parsed = [(text, offset) for offset, text in read_lines(io.BytesIO(data), limit=10_000)]
    assert followed == parsed == whole_lines(data, 0)


def test_a_tail_read_past_the_start_skips_its_first_line_and_keeps_offsets() -> None:
    data = b"t of a line\nsecond\r\nthird\nno newline yet"
    assert whole_lines(data, 100) == [("second", 112), ("third", 120)]
    assert whole_lines(data, 100, since=120) == [("third", 120)]
    assert whole_lines(b"all one cut line", 100) == []
    assert whole_lines(data, None) == []
    assert whole_lines(b"", 0) == []


def test_line_text_drops_a_crlf_cr_escapes_and_controls() -> None:
    assert line_text(b"ready\r") == "ready"
    assert line_text(b"\x1b]0;pwned\x07a\x1b[31mb\x00c") == "abc"
    assert line_text(b"\xff ok") == "\ufffd ok"


@settings(max_examples=500)
@given(st.binary(max_size=60).map(lambda b: b.replace(b"\n", b"")))
def test_a_line_is_its_decoded_bytes_with_its_cr_and_unsafe_characters_dropped(raw: bytes) -> None:
    """The quick way through (a line with nothing to drop is its decoded bytes) reads every
    line as the whole way does."""
    from tui.core.sanitize import clean_bytes

    assert line_text(raw) == clean_bytes(raw[:-1] if raw.endswith(b"\r") else raw)
