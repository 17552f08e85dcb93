"""What the followed log is doing, in plain words: agent frames in, rows out.

:class:`FollowState` is the pure half of following a log: it turns the agent's
frames into :class:`~tui.core.logcursor.LogLine` rows and
:class:`~tui.core.logcursor.EventRow` rows, keeps track of which file (dev,
inode) is shown and how big it is, and knows where to resume after a
reconnect. The I/O half lives in ``tui.remote.follow``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from tui.core.containers import PLAIN
from tui.core.frames import Frame
from tui.core.logcursor import (
    STREAM_DEV,
    EventKind,
    EventRow,
    LineSplitter,
    LogCursor,
    LogEvent,
    Row,
)
from tui.core.sanitize import printable
from tui.core.units import human_age, human_size


@dataclass(frozen=True)
class FileInfo:
    """The file currently shown, as last reported by the host."""

    path: str
    dev: int
    inode: int
    size: int
    observed_at: float
    deleted: bool = False
    #: Set when following a process's open file rather than the path.
    writer_pid: int | None = None
    #: What to call it instead of its path (a container's json-file, whose path is a
    #: long folder of the runtime's, or a ``docker logs`` stream, which has none).
    label: str | None = None


def file_title(info: FileInfo | None, path: str) -> str:
    """``/root/sglang-serve.log · inode 5678 · 1.23 MiB`` (+ deleted, + writer pid); a
    container's json-file by its container (``container vllm-qwen · json-file · inode …``),
    a stream (``docker logs``) by its name alone: it has no inode or size to show."""
    if info is None:
        return f"{printable(path)} · not open yet"
    if info.dev == STREAM_DEV:
        return printable(info.label or info.path)
    parts = [
        printable(info.label or info.path) + (" (deleted)" if info.deleted else ""),
        f"inode {info.inode}",
        human_size(info.size),
    ]
    if info.writer_pid is not None:
        parts.append(f"following pid {info.writer_pid}")
    return " · ".join(parts)


@dataclass(frozen=True)
class Start:
    """Where following begins: the last ``tail`` lines, the start of the file, or a cursor."""

    tail: int | None = 10
    from_start: bool = False
    cursor: LogCursor | None = None

    def to_json(self) -> dict[str, object]:
        if self.cursor is not None:
            return {"cursor": self.cursor.to_json()}
        if self.from_start:
            return {"from_start": True}
        return {"tail": self.tail if self.tail is not None else 10}


@dataclass(frozen=True)
class ContainerLogSource:
    """Where the host found a container's log (its ``container`` frame)."""

    ref: str
    runtime: str
    found: bool
    id: str = ""
    name: str = ""
    started_at: float | None = None
    #: The run's start on the host's clock (``14:02:11``).
    started_local: str | None = None
    log_driver: str = ""
    log_path: str = ""
    #: Whether the json-file can be followed as a file; else ``why`` says why not.
    readable: bool = False
    why: str | None = None
    problem: str | None = None


class FollowState:
    """The frames of one follower, in order, as rows; ``format`` is the log's
    (``plain``, or ``docker-json`` for a container's json-file)."""

    def __init__(
        self,
        path: str | None,
        label: str,
        clock: Callable[[], float] = time.time,
        format: str = PLAIN,
    ) -> None:
        self.path = path
        self.label = label
        self._clock = clock
        self.splitter = LineSplitter(clock=clock, format=format)
        #: The container's log as the host last said (followers of a container).
        self.container: ContainerLogSource | None = None
        self.file: FileInfo | None = None
        self.bytes_read = 0
        self.eof = False
        self._writer_pid: int | None = None
        self._last_data: tuple[int, int] | None = None
        # Whether the last start asked the host to resume at a cursor, and, after a
        # reconnect, how long the link was down (said once the host has checked it).
        self._resuming = False
        self._gap: float | None = None

    # ---------------------------------------------------------------- frames

    def handle(self, frame: Frame) -> list[Row]:
        handler = getattr(self, "_on_" + frame.kind.replace("-", "_"), None)
        if handler is None:
            return []
        return handler(frame)

    def _event(self, kind: EventKind, message: str, **data: object) -> EventRow:
        return EventRow(LogEvent(kind, message, self._clock(), dict(data)))

    def _on_data(self, frame: Frame) -> list[Row]:
        dev, inode = frame.int("dev"), frame.int("inode")
        rows: list[Row] = []
        if self._last_data is not None and self._last_data != (dev, inode):
            rows.extend(self.splitter.flush())
            at_path = self.file is not None and (self.file.dev, self.file.inode) == (dev, inode)
            message = (
                f"back to inode {inode}, the file now at the path"
                if at_path
                else f"more lines written to inode {inode}, the file that was replaced"
            )
            rows.append(self._event(EventKind.RESUMED, message, dev=dev, inode=inode))
        self._last_data = (dev, inode)
        if self.file is not None and (self.file.dev, self.file.inode) == (dev, inode):
            self.file = replace(self.file, size=frame.int("size"), observed_at=self._clock())
        rows.extend(self.splitter.feed(dev, inode, frame.int("offset"), frame.payload))
        return rows

    def _on_opened(self, frame: Frame) -> list[Row]:
        path = frame.read.opt_string("path") or printable(self.path or "")
        size = frame.int("size")
        inode = frame.int("inode")
        dev = frame.int("dev")
        source = self.container
        label = None
        if source is not None and source.log_path == path:
            label = f"container {printable(source.name or source.ref)} · json-file"
        self.file = FileInfo(
            path, dev, inode, size, self._clock(), writer_pid=self._writer_pid, label=label
        )
        self._last_data = (dev, inode)
        self.eof = False
        start = frame.int("start")
        self.splitter.expect(
            dev,
            inode,
            start,
            _unhex(frame.read.opt_string("head")),
            _unhex(frame.read.opt_string("anchor")),
        )
        where = "from the start" if start == 0 else f"from offset {start}"
        return [
            *self._reconnect_said("starting again"),
            self._event(
                EventKind.OPENED,
                f"following {path} (inode {inode}, {human_size(size)}) {where}",
                path=path,
                dev=frame.int("dev"),
                inode=inode,
                size=size,
                start=start,
                read_back=frame.read.opt_integer("read_back") or 0,
            ),
        ]

    def _on_truncated(self, frame: Frame) -> list[Row]:
        """The file was cut (and maybe written again) under us.

        ``read`` is how much of the old content babysit had read; ``old_size`` its
        size when it was cut, known only from a copy beside it (``copy``, which then
        holds the ``unread`` bytes, read next); else only ``seen`` (the largest size
        babysit saw) bounds it from below.
        """
        rows: list[Row] = list(self.splitter.flush())
        fields = frame.read
        new = frame.int("new_size")
        read = frame.int("read")
        seen = max(read, frame.int("seen"))
        old = fields.opt_integer("old_size")
        copy = fields.opt_string("copy")
        unread = fields.opt_integer("unread")
        regrown = fields.flag("regrown")
        if fields.flag("reused"):
            how = "truncated and rewritten, or deleted and made again with the same inode number,"
        else:
            how = "truncated and rewritten" if regrown else "truncated"
        if fields.flag("away"):
            how += " while babysit was not connected"
        was = (
            f"was {human_size(old)}" if isinstance(old, int) else f"was at least {human_size(seen)}"
        )
        message = f"log {how} ({was}, now {human_size(new)})"
        if isinstance(copy, str) and isinstance(unread, int):
            message += (
                f": its copy {copy} holds the {human_size(unread)} not read yet; "
                "reading them from there"
                if unread
                else f": everything was read before (its copy is {copy})"
            )
            self._last_data = (frame.int("copy_dev"), frame.int("copy_inode"))
        else:
            message += f": no copy beside it; anything after byte {read:,} is lost"
        if self.file is not None and (self.file.dev, self.file.inode) == (
            frame.int("dev"),
            frame.int("inode"),
        ):
            self.file = replace(self.file, size=new, observed_at=self._clock())
        rows.append(
            self._event(
                EventKind.TRUNCATED,
                message,
                inode=frame.int("inode"),
                read=read,
                old_size=old if isinstance(old, int) else None,
                seen=seen,
                new_size=new,
                regrown=regrown,
                unread=unread if isinstance(unread, int) else None,
                copy=copy if isinstance(copy, str) else None,
            )
        )
        return rows

    def _on_replaced(self, frame: Frame) -> list[Row]:
        rows: list[Row] = list(self.splitter.flush())
        old, new = frame.int("old_inode"), frame.int("new_inode")
        state = frame.read.opt_string("old_state")
        if frame.read.flag("rotated"):
            where = printable(frame.read.opt_string("new_path") or "?")
            message = f"log rotated: inode {old} read to its end; now inode {new} ({where})"
        else:
            message = f"log replaced: now inode {new} (old inode {old} was {state})"
        rows.append(
            self._event(
                EventKind.REPLACED,
                message,
                old_inode=old,
                new_inode=new,
                old_state=state,
            )
        )
        return rows

    def _on_deleted(self, frame: Frame) -> list[Row]:
        """The path names no file now: deleted (no links left) or renamed away."""
        inode = frame.int("inode")
        renamed = bool(frame.read.opt_integer("links"))
        if self.file is not None and not renamed:
            self.file = replace(self.file, deleted=True)
        if renamed:
            message = (
                f"log renamed away: {self.path} no longer names inode {inode}; "
                "still reading it under its new name"
            )
        else:
            message = (
                f"log deleted: {self.path} is gone; still reading inode {inode}, which is held open"
            )
        return [self._event(EventKind.DELETED, message, inode=inode, renamed=renamed)]

    def _on_missing(self, frame: Frame) -> list[Row]:
        self.file = None
        return [
            self._event(
                EventKind.MISSING,
                f"{frame.read.opt_string('path')} does not exist; waiting for it",
                path=frame.read.opt_string("path"),
            )
        ]

    def _on_appeared(self, frame: Frame) -> list[Row]:
        return [
            self._event(
                EventKind.APPEARED,
                f"{frame.read.opt_string('path')} appeared",
                path=frame.read.opt_string("path"),
            )
        ]

    def _on_writer(self, frame: Frame) -> list[Row]:
        pid, fd = frame.int("pid"), frame.int("fd")
        self._writer_pid = pid
        which = {1: "stdout", 2: "stderr"}.get(fd, f"fd {fd}")
        shown = frame.read.opt_string("fd_path") or "?"
        deleted = " (deleted)" if frame.read.flag("deleted") else ""
        note = (
            ""
            if frame.read.flag("matches_path") or not self.path
            else (f"; it does not write {self.path}")
        )
        return [
            self._event(
                EventKind.WRITER,
                f"following pid {pid}'s {which}: {shown}{deleted}{note}",
                pid=pid,
                fd=fd,
                fd_path=shown,
                deleted=bool(deleted),
                matches_path=frame.read.flag("matches_path"),
            )
        ]

    def _on_writer_gone(self, frame: Frame) -> list[Row]:
        pid = frame.int("pid")
        return [
            self._event(
                EventKind.WRITER_GONE, f"pid {pid} exited; what it wrote stays readable", pid=pid
            )
        ]

    def _on_container(self, frame: Frame) -> list[Row]:
        """Where the host found the container's log (or why not): said when it is a
        file to follow, or when there is no container; an unreadable one is left to the
        ``docker logs`` follower, which says so."""
        read = frame.read
        started = read.opt_time("started_at")
        source = ContainerLogSource(
            ref=read.string("ref"),
            runtime=read.opt_string("runtime") or "docker",
            found=read.flag("found"),
            id=read.opt_string("id") or "",
            name=read.opt_string("name") or "",
            started_at=started,
            started_local=read.opt_string("started_local"),
            log_driver=read.opt_string("log_driver") or "",
            log_path=read.opt_string("log_path") or "",
            readable=read.flag("readable"),
            why=read.opt_string("why"),
            problem=read.opt_string("problem"),
        )
        self.container = source
        name = printable(source.name or source.ref)
        if not source.found:
            message = f"container {name}: {printable(source.problem or 'not found')}; asking again"
            return [self._event(EventKind.MISSING, message, container=source.ref)]
        if not source.readable:
            return []
        since = f", started {source.started_local}" if source.started_local else ""
        self.path = source.log_path
        return [
            self._event(
                EventKind.SOURCE,
                f"following the json-file of container {name} ({source.id[:12]}{since}): "
                f"{printable(source.log_path)}",
                container=source.id,
                source="json-file",
                path=source.log_path,
            )
        ]

    def _on_resume(self, frame: Frame) -> list[Row]:
        """The host's check of the cursor it was asked to resume at."""
        inode, offset = frame.int("inode"), frame.int("offset")
        if not frame.read.flag("held"):
            why = frame.read.opt_string("why") or "it is not the file that was read"
            return self._reconnect_said(
                f"could not resume at inode {inode}, offset {offset}: {why}"
            )
        if frame.read.flag("checked") or offset == 0:
            return self._reconnect_said(
                f"resumed at inode {inode}, offset {offset}: its first bytes and those before "
                "the offset are as read, so nothing lost or repeated"
                if offset
                else f"resumed at inode {inode}, offset 0: nothing lost or repeated"
            )
        return self._reconnect_said(
            f"resumed at inode {inode}, offset {offset} (not checked: what was read there "
            "is not known)"
        )

    def _on_lost(self, frame: Frame) -> list[Row]:
        inode, offset = frame.int("inode"), frame.int("offset")
        return [
            *self._reconnect_said(f"inode {inode} is gone"),
            self._event(
                EventKind.ERROR,
                f"inode {inode} is gone (deleted and closed while disconnected): what was "
                f"written to it after offset {offset} cannot be shown",
                inode=inode,
                offset=offset,
            ),
        ]

    def _on_eof(self, frame: Frame) -> list[Row]:
        self.eof = True
        self.bytes_read = frame.int("bytes_read")
        return list(self.splitter.flush())

    def _on_error(self, frame: Frame) -> list[Row]:
        """The host cannot read what was asked (``path`` and ``file_type`` when it is the
        file at the path: not there as a regular file)."""
        said = {key: frame.read.opt_string(key) for key in ("path", "file_type")}
        data = {key: value for key, value in said.items() if value is not None}
        return [
            *self._reconnect_said("the follower reports an error"),
            self._event(EventKind.ERROR, frame.read.opt_string("message") or "no message", **data),
        ]

    # ---------------------------------------------------------------- connection

    def disconnected(self, reason: str) -> list[Row]:
        self.splitter.discard_pending()
        return [self._event(EventKind.DISCONNECTED, f"connection lost: {reason}; reconnecting")]

    def reconnected(self, gap: float) -> list[Row]:
        """The link is back after ``gap`` seconds. When resuming at a cursor, what is
        said waits for the host's check of it (a ``resume`` frame): "nothing lost or
        repeated" only once the host has proven it."""
        if self._resuming:
            self._gap = gap
            return []
        return [
            self._event(
                EventKind.RECONNECTED,
                f"reconnected after {human_age(gap)}; starting again",
                gap=gap,
            )
        ]

    def _reconnect_said(self, where: str) -> list[Row]:
        """The reconnected row, once, with what the host found (nothing if not reconnecting)."""
        gap, self._gap = self._gap, None
        if gap is None:
            return []
        return [
            self._event(
                EventKind.RECONNECTED, f"reconnected after {human_age(gap)}; {where}", gap=gap
            )
        ]

    def resume_start(self, initial: Start) -> Start:
        cursor = self.splitter.resume_cursor
        self._resuming = cursor is not None
        self._gap = None
        return Start(cursor=cursor) if cursor is not None else initial


def _unhex(value: object) -> bytes:
    """Bytes the host sent as hex (a fingerprint); empty when absent or garbled."""
    if not isinstance(value, str):
        return b""
    try:
        return bytes.fromhex(value)
    except ValueError:
        return b""
