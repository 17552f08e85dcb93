"""Log bytes as lines to show: one line's bytes as text, and a tail cut into whole lines.

Every view that turns a log's bytes into lines (the follower's splitter, ``babysit
parse``, a probe's tail) reads a line's text through :func:`line_text`, so one line
reads the same wherever it is shown; a tail read at an offset is cut by
:func:`whole_lines`.
"""

from __future__ import annotations

from tui.core.sanitize import clean_bytes

NEWLINE = b"\n"
CARRIAGE_RETURN = b"\r"


def line_text(raw: bytes) -> str:
    """One line's bytes (without its newline) as text to show: a CRLF's CR dropped,
    invalid UTF-8 as U+FFFD, escapes and controls removed."""
    if raw.endswith(CARRIAGE_RETURN):
        raw = raw[:-1]
    return clean_bytes(raw)


def whole_lines(data: bytes, offset: int | None, since: int | None = None) -> list[tuple[str, int]]:
    """The whole lines of ``data``, read at byte ``offset`` of a file, as (text, offset).

    A first line that starts before ``offset`` (``offset`` > 0: its start is not in
    ``data``) and a last line without its newline are left out, as are lines before
    ``since``. ``offset`` None (nothing was read) gives no lines.
    """
    if offset is None or not data:
        return []
    if offset > 0:
        cut = data.find(NEWLINE)
        if cut < 0:
            return []
        data, offset = data[cut + 1 :], offset + cut + 1
    lines = []
    for raw in data.split(NEWLINE)[:-1]:
        if since is None or offset >= since:
            lines.append((line_text(raw), offset))
        offset += len(raw) + 1
    return lines
