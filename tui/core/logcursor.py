"""Where a log line came from, to the byte, and a bounded memory of recent lines.

The follower on the host reports bytes as (dev, inode, offset, data). This
module turns them into lines that remember exactly that, and into events
(truncated, replaced, deleted, …) that say when the file under the path changed.
Nothing here does I/O, and nothing here imports textual or asyncssh.

Invariants:

* A :class:`LineSplitter` never loses a byte and never splits a line across
  chunks: a line is emitted once, when its newline arrives (or when its file
  ends for good), with the offset of its first byte.
* A line longer than :data:`MAX_LINE_BYTES` is cut there, shown with a visible
  marker, and the rest of it is skipped as it streams past — never held whole.
* :attr:`LineSplitter.resume_cursor` is the point after the last byte that went
  into an emitted line: resuming from it repeats and loses nothing.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tui.core.sanitize import clean_bytes

MAX_LINE_BYTES = 64 * 1024
DEFAULT_MAX_LINES = 20_000
CUT_MARKER = " [… line cut at 64 KiB]"


@dataclass(frozen=True)
class LogCursor:
    """A position in one file: the file is (dev, inode), never a path."""

    dev: int
    inode: int
    offset: int

    def to_json(self) -> dict[str, int]:
        return {"dev": self.dev, "inode": self.inode, "offset": self.offset}


class EventKind(enum.Enum):
    OPENED = "opened"
    TRUNCATED = "truncated"
    REPLACED = "replaced"
    DELETED = "deleted"
    MISSING = "missing"
    APPEARED = "appeared"
    WRITER = "writer"
    WRITER_GONE = "writer-gone"
    DISCONNECTED = "disconnected"
    RECONNECTED = "reconnected"
    RESUMED = "resumed"
    #: The verdict on which run this is changed (live → dead, …).
    VERDICT = "verdict"
    ERROR = "error"
    #: The host's login shell printed something before the agent started (skipped).
    SHELL_CHATTER = "shell-chatter"


@dataclass(frozen=True)
class LogEvent:
    """Something that happened to the followed file or to the way we reach it."""

    kind: EventKind
    message: str
    observed_at: float
    data: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class LogLine:
    """One line of the log, sanitised for the screen, with its exact origin.

    ``offset`` is the byte offset of the line's first byte in file (dev, inode);
    ``size`` is how many bytes of the file the line covers (newline included).
    """

    text: str
    dev: int
    inode: int
    offset: int
    size: int
    arrived_at: float
    cut: bool = False
    #: False for a last line that ended without a newline (its file was left).
    complete: bool = True


@dataclass(frozen=True)
class EventRow:
    """An event drawn inline among the lines (``── log replaced: … ──``)."""

    event: LogEvent


Row = LogLine | EventRow


class LineSplitter:
    """Splits (dev, inode, offset, bytes) chunks into whole :class:`LogLine` objects."""

    def __init__(
        self, max_line: int = MAX_LINE_BYTES, clock: Callable[[], float] = time.time
    ) -> None:
        self._max = max_line
        self._clock = clock
        self._file: tuple[int, int] | None = None
        self._start = 0  # offset of the first byte of the pending line
        self._pending = bytearray()
        self._skipping = False  # inside the rest of a line already cut
        self._end = 0  # offset just after the last byte seen

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line held in memory (never more than the line limit)."""
        return len(self._pending)

    @property
    def resume_cursor(self) -> LogCursor | None:
        """Where to resume so that nothing is lost or repeated (start of the pending line)."""
        if self._file is None:
            return None
        dev, inode = self._file
        if self._skipping:
            return LogCursor(dev, inode, self._end)
        return LogCursor(dev, inode, self._start)

    def feed(self, dev: int, inode: int, offset: int, data: bytes) -> list[LogLine]:
        """Take the next chunk. A chunk from another file, or one that does not start
        where the last ended, first flushes the pending partial line."""
        lines: list[LogLine] = []
        if self._file != (dev, inode) or offset != self._end:
            lines.extend(self.flush())
            self._file = (dev, inode)
            self._start = self._end = offset
            self._skipping = False
        now = self._clock()
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            newline = data.find(b"\n", pos)
            if self._skipping:
                if newline < 0:
                    break
                self._skipping = False
                self._start = offset + newline + 1
                pos = newline + 1
                continue
            room = self._max - len(self._pending)
            if newline < 0 or newline - pos > room:
                take = min(len(view) - pos, room)
                self._pending += view[pos : pos + take]
                pos += take
                if len(self._pending) >= self._max:
                    lines.append(self._emit(now, cut=True, size=len(self._pending)))
                    self._skipping = True
                continue
            self._pending += view[pos:newline]
            lines.append(self._emit(now, size=len(self._pending) + 1))
            pos = newline + 1
            self._start = offset + pos
        self._end = offset + len(data)
        return lines

    def discard_pending(self) -> None:
        """Forget the partial line: the bytes will be read again from :attr:`resume_cursor`."""
        cursor = self.resume_cursor
        self._pending.clear()
        self._skipping = False
        if cursor is not None:
            self._start = self._end = cursor.offset

    def flush(self) -> list[LogLine]:
        """Emit the pending partial line (its file ended or was left for another)."""
        if not self._pending or self._file is None:
            self._pending.clear()
            return []
        line = self._emit(self._clock(), size=len(self._pending), complete=False)
        return [line]

    def _emit(self, now: float, *, size: int, cut: bool = False, complete: bool = True) -> LogLine:
        dev, inode = self._file  # type: ignore[misc]
        raw = bytes(self._pending)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        text = clean_bytes(raw) + (CUT_MARKER if cut else "")
        line = LogLine(text, dev, inode, self._start, size, now, cut=cut, complete=complete)
        self._start += size
        self._pending.clear()
        return line


class LineBuffer:
    """The most recent rows (lines and events), at most ``max_lines`` of them.

    Rows are numbered from the first ever appended, so a view can tell which of
    the rows it drew are gone (``first_index`` moved past them).
    """

    def __init__(self, max_lines: int = DEFAULT_MAX_LINES) -> None:
        self._rows: deque[Row] = deque(maxlen=max_lines)
        self._appended = 0

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)

    def __getitem__(self, index: int) -> Row:
        return self._rows[index]

    @property
    def max_lines(self) -> int:
        return self._rows.maxlen or 0

    @property
    def first_index(self) -> int:
        """The absolute number of the oldest row still held."""
        return self._appended - len(self._rows)

    @property
    def appended(self) -> int:
        return self._appended

    def append(self, row: Row) -> None:
        self._rows.append(row)
        self._appended += 1

    def extend(self, rows: list[LogLine] | list[Row]) -> None:
        for row in rows:
            self.append(row)

    def last_line(self) -> LogLine | None:
        for row in reversed(self._rows):
            if isinstance(row, LogLine):
                return row
        return None
