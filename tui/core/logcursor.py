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
  (A docker json-file log's records may be up to :data:`MAX_RECORD_BYTES`: its
  16 KiB pieces grow when escaped.)
* A docker json-file log (format ``docker-json``) reads each record as its
  ``log``, stamped with its ``time``; a line docker split into partial records is
  one :class:`LogLine` whose offset is its first record's and whose size covers
  them all (tui/core/lines.py). Offsets are always the file's byte offsets.
* :attr:`LineSplitter.resume_cursor` is the point after the last byte that went
  into an emitted line: resuming from it repeats and loses nothing. It carries
  the file's first bytes and the bytes just before it (as far as they are
  known), so the host can prove that the file (dev, inode) still holds what was
  read: a truncate-and-regrow, or a new file given the freed inode number, is
  caught there and never taken for the same file.
"""

from __future__ import annotations

import enum
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from tui.core.containers import DOCKER_JSON, PLAIN
from tui.core.lines import Joined, Record, RecordJoiner, line_text, read_record

MAX_LINE_BYTES = 64 * 1024
#: The longest record of a docker json-file log read whole (a 16 KiB piece of
#: escapes, ``\u003c`` for each ``<``, is six times as long).
MAX_RECORD_BYTES = 256 * 1024
#: The device of lines that come from no file (a ``docker logs`` stream): no real
#: device number is negative. Such a line's inode names its container, and its offset
#: orders it by its stamp (see tui/remote/dockerlogs.py).
STREAM_DEV = -1
DEFAULT_MAX_LINES = 20_000
CUT_MARKER = " [… line cut at 64 KiB]"
#: Bytes kept of a file's start and of what comes just before a position (the
#: agent's FINGERPRINT).
FINGERPRINT = 64
#: Files whose fingerprints are remembered when the data switches between files.
REMEMBERED_FILES = 8


@dataclass(frozen=True)
class LogCursor:
    """A position in one file: the file is (dev, inode), never a path.

    ``head`` (the file's first bytes) and ``anchor`` (the bytes just before
    ``offset``) are what was read there, at most :data:`FINGERPRINT` each, empty
    when not known: the host checks them before resuming, since (dev, inode)
    alone may name a file cut and rewritten, or a new file with a reused inode.
    """

    dev: int
    inode: int
    offset: int
    head: bytes = b""
    anchor: bytes = b""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"dev": self.dev, "inode": self.inode, "offset": self.offset}
        if self.head:
            out["head"] = self.head.hex()
        if self.anchor:
            out["anchor"] = self.anchor.hex()
        return out


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
    #: Where the lines come from (a container's json-file, or ``docker logs``).
    SOURCE = "source"


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
    #: When the line was written, epoch seconds, as its log says with year and zone (a
    #: docker record's ``time``, a ``docker logs`` line's prefix); None when it does not.
    stamp: float | None = None
    #: ``stdout`` or ``stderr`` when the log says which the line was written to.
    stream: str | None = None

    @property
    def from_stream(self) -> bool:
        """Whether the line came from a stream (``docker logs``) rather than a file:
        its (dev, inode, offset) is then synthetic (:data:`STREAM_DEV`)."""
        return self.dev == STREAM_DEV


@dataclass(frozen=True)
class EventRow:
    """An event drawn inline among the lines (``── log replaced: … ──``)."""

    event: LogEvent


Row = LogLine | EventRow


class LineSplitter:
    """Splits (dev, inode, offset, bytes) chunks into whole :class:`LogLine` objects."""

    def __init__(
        self,
        max_line: int | None = None,
        clock: Callable[[], float] = time.time,
        format: str = PLAIN,
    ) -> None:
        self.format = format
        docker = format == DOCKER_JSON
        self._max = (
            max_line if max_line is not None else (MAX_RECORD_BYTES if docker else MAX_LINE_BYTES)
        )
        self._clock = clock
        # A docker log's partial records, held until their line's last one comes.
        self._joiner = RecordJoiner() if docker else None
        self._file: tuple[int, int] | None = None
        self._start = 0  # offset of the first byte of the pending line
        self._record = 0  # offset of the first byte of the pending record (a plain line)
        self._pending = bytearray()
        self._skipping = False  # inside the rest of a line already cut
        self._end = 0  # offset just after the last byte seen
        # What is known of the file's bytes: its first ones, the last ones before
        # _end, and those before the resume point.
        self._head = b""
        self._tail = b""
        self._anchor = b""
        # Where the host said it starts a file, with its fingerprints there.
        self._origin: tuple[int, int, int, bytes, bytes] | None = None
        # (dev, inode) -> (end, head, tail) of files left for another.
        self._memory: dict[tuple[int, int], tuple[int, bytes, bytes]] = {}

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished line held in memory (never more than the line limit)."""
        return len(self._pending)

    @property
    def resume_cursor(self) -> LogCursor | None:
        """Where to resume so that nothing is lost or repeated (start of the pending line),
        with what was read at the file's start and just before that point."""
        if self._file is None:
            return None
        dev, inode = self._file
        offset = self._end if self._skipping else self._start
        return LogCursor(dev, inode, offset, head=self._head, anchor=self._anchor)

    def expect(self, dev: int, inode: int, offset: int, head: bytes, anchor: bytes) -> None:
        """The host starts file (dev, inode) at ``offset``; ``head`` are its first bytes
        and ``anchor`` those just before ``offset``, as the host read them."""
        self._origin = (dev, inode, offset, head[:FINGERPRINT], anchor[-FINGERPRINT:])

    def _switch(self, dev: int, inode: int, offset: int) -> None:
        """Data now comes from (dev, inode) at ``offset``: take what is known of it there."""
        if self._file is not None and self._file != (dev, inode):
            self._memory.pop(self._file, None)
            self._memory[self._file] = (self._end, self._head, self._tail)
            while len(self._memory) > REMEMBERED_FILES:
                del self._memory[next(iter(self._memory))]
        head, tail = b"", b""
        origin = self._origin
        remembered = self._memory.get((dev, inode))
        if origin is not None and origin[:3] == (dev, inode, offset):
            head, tail = origin[3], origin[4]
        elif remembered is not None and remembered[0] == offset:
            _, head, tail = remembered
        elif self._file == (dev, inode) and offset > 0:
            head = self._head  # same file, a jump forward: its start is the same
        self._file = (dev, inode)
        self._start = self._end = self._record = offset
        self._skipping = False
        if self._joiner is not None:
            self._joiner.clear()
        self._head, self._tail, self._anchor = head, tail, tail

    def feed(self, dev: int, inode: int, offset: int, data: bytes) -> list[LogLine]:
        """Take the next chunk. A chunk from another file, or one that does not start
        where the last ended, first flushes the pending partial line."""
        lines: list[LogLine] = []
        if self._file != (dev, inode) or offset != self._end:
            lines.extend(self.flush())
            self._switch(dev, inode, offset)
        now = self._clock()
        view = memoryview(data)
        pos = 0
        while pos < len(view):
            newline = data.find(b"\n", pos)
            if self._skipping:
                if newline < 0:
                    break
                self._skipping = False
                self._start = self._record = offset + newline + 1
                pos = newline + 1
                continue
            room = self._max - len(self._pending)
            if newline < 0 or newline - pos > room:
                take = min(len(view) - pos, room)
                self._pending += view[pos : pos + take]
                pos += take
                # Cut only once a byte past the limit is seen that does not end the
                # line: a line of exactly the limit is whole.
                if pos < len(view):
                    lines.extend(self._emit(now, cut=True, size=len(self._pending)))
                    self._skipping = True
                continue
            self._pending += view[pos:newline]
            lines.extend(self._emit(now, size=len(self._pending) + 1))
            pos = newline + 1
        self._remember(offset, data)
        self._end = offset + len(data)
        return lines

    def _remember(self, offset: int, data: bytes) -> None:
        """Keep the fingerprints up to date with ``data``, just fed at ``offset``."""
        known = len(self._head)
        if known < FINGERPRINT and offset <= known < offset + len(data):
            self._head += data[known - offset : FINGERPRINT - offset]
        before = self._tail
        self._tail = (before + data[-FINGERPRINT:])[-FINGERPRINT:]
        if self._skipping:
            self._anchor = self._tail
        elif self._start >= offset:
            # The resume point moved into this chunk (else it is where it was).
            k = self._start - offset
            self._anchor = (before + data[max(0, k - FINGERPRINT) : k])[-FINGERPRINT:]

    def discard_pending(self) -> None:
        """Forget the partial line: the bytes will be read again from :attr:`resume_cursor`."""
        cursor = self.resume_cursor
        self._pending.clear()
        self._skipping = False
        if self._joiner is not None:
            self._joiner.clear()
        if cursor is not None:
            self._start = self._end = self._record = cursor.offset
            self._tail = self._anchor

    def flush(self) -> list[LogLine]:
        """Emit the pending partial line (its file ended or was left for another)."""
        held = self._joiner is not None and self._joiner.holding
        if self._file is None or not (self._pending or held):
            self._pending.clear()
            return []
        now = self._clock()
        lines = self._emit(now, size=len(self._pending), complete=False) if self._pending else []
        if self._joiner is not None:
            lines.extend(self._line(j, now, complete=False) for j in self._joiner.flush())
            self._start = self._record
        self._anchor = self._tail  # the resume point is the end of what was fed
        return lines

    def _emit(
        self, now: float, *, size: int, cut: bool = False, complete: bool = True
    ) -> list[LogLine]:
        """The pending bytes (``size`` of the file, with their newline) are one record:
        the lines it ends."""
        raw = bytes(self._pending)
        self._pending.clear()
        at = self._record
        self._record += size
        if self._joiner is None:
            self._start = self._record
            text = line_text(raw) + (CUT_MARKER if cut else "")
            return [self._line(Joined(text, at, size, cut=cut), now, complete=complete)]
        # a record cut is no JSON: its bytes as they are, a line of its own
        record = Record(line_text(raw) + CUT_MARKER) if cut else read_record(raw, DOCKER_JSON)
        if not complete:
            record = Record(record.text, record.stamp, record.stream)
        joined = self._joiner.add(record, at, size)
        if cut:
            joined.extend(self._joiner.flush())
        self._start = self._joiner.start if self._joiner.holding else self._record
        return [self._line(j, now, complete=complete, cut=cut and j.offset == at) for j in joined]

    def _line(self, joined: Joined, now: float, *, complete: bool, cut: bool = False) -> LogLine:
        dev, inode = self._file  # type: ignore[misc]
        return LogLine(
            joined.text,
            dev,
            inode,
            joined.offset,
            joined.size,
            now,
            cut=cut or joined.cut,
            complete=complete,
            stamp=joined.stamp,
            stream=joined.stream,
        )


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
