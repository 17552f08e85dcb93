"""babysit's agent: follows one log file on a host and reports it byte by byte.

This file is sent to the host on every use and never installed: a short fixed
bootstrap (``python3 -I -S -c BOOTSTRAP``) reads it, compressed, from stdin,
then the request's JSON, so no request is ever in a command line (see
tui/remote/agentcall.py). It runs over ssh, through ``pct exec`` and locally the
same way, and leaves nothing behind. It must therefore run on any python3 >= 3.6
with the standard library alone. Whatever the mode, its output begins with one
mark line carrying the request's nonce (say_started).

Output on stdout (after the mark) is a stream of frames: one line of JSON, then, when the JSON
has ``"n"``, exactly that many raw bytes. Frames:

    opened    {path, dev, inode, size, mtime, start, read_back, head, anchor}
    data      {dev, inode, offset, size, n} + n bytes of the file at offset
    resume    {dev, inode, offset, held, checked, why}   the check of a cursor to resume at
    truncated {dev, inode, read, seen, old_size, new_size, regrown, away, reused,
               copy, copy_dev, copy_inode, unread}
    replaced  {old_dev, old_inode, new_dev, new_inode, old_state}
    deleted   {dev, inode}             the path is gone; the old file is still held
    missing   {path}                   the path does not exist (yet)
    appeared  {path}
    writer    {pid, fd, fd_path, deleted, matches_path}
    writer-gone {pid}
    lost      {dev, inode, offset}     the file to resume in is nowhere to be found
    eof       {dev, inode, offset}     (without --follow) everything was sent
    error     {message, path, file_type}   path and file_type when the path is not a
                                          regular file to read (see cannot_read)

Invariants: data frames of one file are contiguous (each starts where the last
ended) unless a ``truncated`` frame comes between; before switching to a new
file at the path, the old one is read to its end; the agent exits when its
stdin or stdout closes, so it dies with its channel, even while busy or blocked
(watch_channel). Only a regular file is ever read (open_file).

``head`` and ``anchor`` (hex) are a file's first bytes and the bytes just before
a position. A cursor to resume at carries them; the agent resumes there only if
the file still holds them (``resume`` says which), else it reads the file from
its start. When a file is cut, ``read`` is how much of its old content was
sent; a copy beside it (``log.1``, …) that holds the same bytes is read from
there to its end first (``copy``, ``unread``), so nothing written before the
cut is lost.

With ``{"mode": "probe"}`` it instead prints one JSON answer to "which run is
this?" for the services asked about and exits; with ``{"mode":
"serve-probes"}`` it stays and answers one such request per line of stdin, so a
refresh every few seconds costs no new python3 (nor, over SSH, a new session).
"""

import binascii
import datetime
import errno
import json
import os
import re
import select
import stat
import sys
import time

CHUNK = 256 * 1024
FINGERPRINT = 64
MAX_READ_PER_ROUND = 4 * 1024 * 1024
# Files beside the log looked at for a rotated copy of it, at most.
MAX_COPY_CANDIDATES = 64
BACK_BLOCK = 64 * 1024
ACTIVE_POLL = 0.1
IDLE_POLL = 1.0
POLL_BACKOFF_LIMIT = 0.5
# After reading, wait this long before reading again, so a busy log is read in
# batches (fewer wakeups on both ends) at the cost of a few ms of latency.
COALESCE = 0.01

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


class Closed(Exception):
    """Our stdout or stdin closed: the other end is gone, so are we."""


class Output(object):
    def __init__(self, stream):
        self.stream = stream
        self.bytes_read = 0

    def frame(self, kind, payload=None, **fields):
        fields["t"] = kind
        if payload:
            fields["n"] = len(payload)
        try:
            self.stream.write(json.dumps(fields, separators=(",", ":")).encode("utf-8") + b"\n")
            if payload:
                self.stream.write(payload)
        except (BrokenPipeError, OSError):
            raise Closed() from None

    def flush(self):
        try:
            self.stream.flush()
        except (BrokenPipeError, OSError):
            raise Closed() from None


class Inotify(object):
    """inotify through ctypes; every method is a no-op where the kernel or libc lacks it."""

    def __init__(self):
        self.fd = -1
        self.watches = {}
        try:
            ctypes, libc = c_library()
            self._add = libc.inotify_add_watch
            self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            self._rm = libc.inotify_rm_watch
            self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            self.fd = -1

    def watch(self, key, path, mask):
        if self.fd < 0:
            return
        self.unwatch(key)
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd >= 0:
            self.watches[key] = wd

    def unwatch(self, key):
        wd = self.watches.pop(key, None)
        if wd is not None and wd not in self.watches.values():
            self._rm(self.fd, wd)

    def drain(self):
        if self.fd < 0:
            return
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return


class Followed(object):
    """An open file being read: which one (dev, inode), how far, and what it looked like."""

    def __init__(self, fd, path, label=None):
        self.fd = fd
        self.path = path
        self.label = label
        st = os.fstat(fd)
        self.dev = st.st_dev
        self.inode = st.st_ino
        self.pos = 0
        self.head = b""
        self.anchor = b""
        self.seen = None
        self.deleted_said = False

    def close(self):
        try:
            os.close(self.fd)
        except OSError:
            pass


class NotRegular(OSError):
    """What was opened is not a regular file (a FIFO, a directory, a device, a socket)."""

    def __init__(self, path, mode):
        OSError.__init__(self, "%s is %s" % (path, file_kind(mode)))
        self.mode = mode


FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISREG, "a regular file"),
)


def file_kind(mode):
    for test, words in FILE_KINDS:
        if test(mode):
            return words
    return "a special file"


def open_file(path):
    """A read-only fd on the regular file at ``path``; :class:`NotRegular` for anything else.

    The type is decided by fstat on the fd itself, never by a stat before the open
    (the path may name another file by then). The first open is O_PATH, which opens
    nothing: a FIFO does not block, a device's driver is not called (a tape would
    rewind, a watchdog would arm). Only a regular file is then opened for reading,
    through that fd, so it is the very file that was checked. O_NONBLOCK on both:
    a FIFO swapped in where O_PATH is missing must not block either (a regular
    file's reads ignore the flag)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    o_path = getattr(os, "O_PATH", 0)
    fd = None
    if o_path:
        handle = os.open(path, o_path | getattr(os, "O_CLOEXEC", 0))
        try:
            mode = os.fstat(handle).st_mode
            if not stat.S_ISREG(mode):
                raise NotRegular(path, mode)
            try:
                fd = os.open("/proc/self/fd/%d" % handle, flags)
            except FileNotFoundError:  # no /proc: open the path itself, checked below
                fd = None
        except OSError as error:
            if isinstance(error, NotRegular) or error.errno != 9:  # EBADF: fstat of O_PATH
                raise  # (kernels before 3.6); opened the plain way below
        finally:
            os.close(handle)
    if fd is None:
        fd = os.open(path, flags)
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise NotRegular(path, mode)
    return fd


def cannot_read(path, error):
    """One plain line for a log path that cannot be read (``error`` from open_file)."""
    link = ""
    if os.path.islink(path):
        link = " (a symbolic link to %s)" % os.path.realpath(path)
    if isinstance(error, NotRegular):
        return "%s%s is %s, not a regular file; babysit reads only regular files" % (
            path,
            link,
            file_kind(error.mode),
        )
    number = getattr(error, "errno", None)
    if number == 2:  # ENOENT
        return "%s does not exist" % path
    if number == 20:  # ENOTDIR: a folder on the way is a file
        parent = os.path.dirname(os.path.normpath(path))
        while parent and parent != os.path.dirname(parent):
            st = stat_or_none(parent)
            if st is not None and not stat.S_ISDIR(st.st_mode):
                return "%s cannot exist: %s is %s, not a directory" % (
                    path,
                    parent,
                    file_kind(st.st_mode),
                )
            parent = os.path.dirname(parent)
        return "%s cannot exist: a folder on its way is not a directory" % path
    if number in (1, 13):  # EPERM, EACCES
        return "%s%s cannot be read: permission denied to user %s" % (
            path,
            link,
            user_name(os.geteuid()),
        )
    reason = getattr(error, "strerror", None) or str(error)
    return "cannot open %s%s: %s" % (path, link, reason[:1].lower() + reason[1:])


def stat_or_none(path):
    try:
        return os.stat(path)
    except OSError:
        return None


class Agent(object):
    def __init__(self, args, out, stdin_fd):
        self.args = args
        self.out = out
        self.stdin_fd = stdin_fd
        self.path = args.get("path")
        self.pid = args.get("pid")
        self.follow = args.get("follow", True)
        self.cur = None
        self.previous = []
        # Why the path is not being read, as last said ("missing", or the error's
        # words): said once, and again only when it changes.
        self.refused = None
        self.writer_gone_said = False
        self.inotify = Inotify()
        self.wake_fds = [fd for fd in (self.inotify.fd,) if fd >= 0]

    # ------------------------------------------------------------------ start

    def start(self):
        start = self.args.get("start") or {"tail": 10}
        if self.pid is not None:
            self.start_writer()
        elif "cursor" in start:
            self.start_cursor(start["cursor"])
        else:
            self.open_path(start)
        self.watch_dir()

    def watch_dir(self):
        if self.path and self.pid is None:
            directory = os.path.dirname(self.path) or "."
            self.inotify.watch(
                "dir",
                directory,
                IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_ATTRIB,
            )

    def set_current(self, followed, start_offset, read_back=0):
        self.cur = followed
        followed.pos = start_offset
        st = os.fstat(followed.fd)
        followed.anchor = os.pread(
            followed.fd,
            min(FINGERPRINT, start_offset),
            start_offset - min(FINGERPRINT, start_offset),
        )
        followed.head = os.pread(followed.fd, min(FINGERPRINT, st.st_size), 0)
        self.out.frame(
            "opened",
            path=followed.path,
            dev=followed.dev,
            inode=followed.inode,
            size=st.st_size,
            mtime=st.st_mtime,
            start=start_offset,
            read_back=read_back,
            head=hexlify(followed.head),
            anchor=hexlify(followed.anchor),
        )
        self.inotify.watch(
            "file",
            "/proc/self/fd/%d" % followed.fd,
            IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF,
        )

    def open_path(self, start):
        """Open the file at the path and start reading it; if it cannot be, say why (once
        for the same reason) and leave ``cur`` empty, to be tried again."""
        try:
            fd = open_file(self.path)
        except OSError as error:
            if isinstance(error, FileNotFoundError):
                if self.refused != "missing":
                    self.out.frame("missing", path=self.path)
                self.refused = "missing"
                return
            message = cannot_read(self.path, error)
            if self.refused != message:
                fields = {"path": self.path, "message": message}
                if isinstance(error, NotRegular):
                    fields["file_type"] = file_kind(error.mode)
                self.out.frame("error", **fields)
            self.refused = message
            return
        if self.refused is not None:
            self.out.frame("appeared", path=self.path)
            self.refused = None
        followed = Followed(fd, self.path)
        size = os.fstat(fd).st_size
        if start.get("from_start"):
            self.set_current(followed, 0)
        else:
            offset, read_back = tail_offset(fd, size, int(start.get("tail", 10)))
            self.out.bytes_read += read_back
            self.set_current(followed, offset, read_back)

    def start_cursor(self, cursor):
        dev, inode, offset = cursor["dev"], cursor["inode"], cursor["offset"]
        try:
            followed = Followed(open_file(self.path), self.path)
        except OSError:
            followed = None  # not there, or not a file to read: said when it is opened
        if followed is not None:
            if (followed.dev, followed.inode) == (dev, inode):
                self.resume_at(followed, cursor, at_path=True)
                return
            followed.close()
        found = find_inode(dev, inode, self.path)
        if found is not None:
            fd, where = found
            followed = Followed(fd, where)
            if self.resume_at(followed, cursor, at_path=False):
                return
            followed.close()
            why = "inode %d, found as %s, does not hold what was read" % (inode, where)
        else:
            why = "inode %d is nowhere to be found" % inode
        self.out.frame(
            "resume", dev=dev, inode=inode, offset=offset, held=False, checked=True, why=why
        )
        self.out.frame("lost", dev=dev, inode=inode, offset=offset)
        self.open_path({"from_start": True})

    def resume_at(self, followed, cursor, at_path):
        """Resume ``followed`` at the cursor if it still holds what was read there;
        else, when it is the file at the path (or the writer's), read it from its start
        (after its copy, if one holds the rest). False if it was left alone."""
        offset = cursor["offset"]
        head = unhexlify(cursor.get("head"))
        anchor = unhexlify(cursor.get("anchor"))
        size = os.fstat(followed.fd).st_size
        why = None
        if size < offset:
            why = "it is %d bytes long now, less than the %d read" % (size, offset)
        elif head and os.pread(followed.fd, len(head), 0) != head:
            why = "its first bytes are not those read before"
        elif anchor and os.pread(followed.fd, len(anchor), offset - len(anchor)) != anchor:
            why = "the bytes before offset %d are not those read before" % offset
        held = why is None
        if not held and not at_path:
            return False
        self.out.frame(
            "resume",
            dev=followed.dev,
            inode=followed.inode,
            offset=offset,
            held=held,
            checked=bool(head and anchor) if held else True,
            why=why,
        )
        if held:
            self.set_current(followed, offset)
            return True
        self.report_cut(
            followed,
            head,
            anchor,
            read=offset,
            seen=offset,
            new_size=size,
            regrown=size >= offset,
            away=True,
            reused=why.startswith("its first bytes"),
        )
        self.set_current(followed, 0)
        return True

    def start_writer(self):
        found = writer_fd(self.pid, self.path)
        if found is None:
            self.out.frame(
                "error",
                message="pid %d has no regular file open%s"
                % (self.pid, " at %s" % self.path if self.path else ""),
            )
            raise Closed() from None
        fd_num, fd_path, deleted, matches = found
        self.out.frame(
            "writer",
            pid=self.pid,
            fd=fd_num,
            fd_path=fd_path,
            deleted=deleted,
            matches_path=matches,
        )
        try:
            fd = open_file("/proc/%d/fd/%d" % (self.pid, fd_num))
        except OSError as error:  # it closed the file, or has another one there now
            self.out.frame(
                "error",
                message="pid %d fd %d: %s"
                % (self.pid, fd_num, cannot_read("/proc/%d/fd/%d" % (self.pid, fd_num), error)),
            )
            raise Closed() from None
        followed = Followed(fd, fd_path, label="pid %d fd %d" % (self.pid, fd_num))
        start = self.args.get("start") or {"tail": 10}
        if "cursor" in start and (start["cursor"]["dev"], start["cursor"]["inode"]) == (
            followed.dev,
            followed.inode,
        ):
            self.resume_at(followed, start["cursor"], at_path=True)
        elif start.get("from_start"):
            self.set_current(followed, 0)
        else:
            offset, read_back = tail_offset(fd, os.fstat(fd).st_size, int(start.get("tail", 10)))
            self.out.bytes_read += read_back
            self.set_current(followed, offset, read_back)

    # ------------------------------------------------------------------ reading

    def pump(self, followed):
        """Send what ``followed`` has past its position; True if anything happened."""
        st = os.fstat(followed.fd)
        moved = False
        if st.st_size < followed.pos:
            self.truncated(followed, st.st_size, regrown=False)
            moved = True
        elif (
            followed.pos > 0
            and followed.seen != (st.st_size, st.st_mtime_ns)
            and not self.fingerprints_hold(followed)
        ):
            self.truncated(followed, st.st_size, regrown=True)
            moved = True
        followed.seen = (st.st_size, st.st_mtime_ns)
        budget = MAX_READ_PER_ROUND
        while followed.pos < st.st_size and budget > 0:
            want = min(CHUNK, st.st_size - followed.pos, budget)
            data = os.pread(followed.fd, want, followed.pos)
            if not data:
                break
            self.out.bytes_read += len(data)
            self.out.frame(
                "data",
                data,
                dev=followed.dev,
                inode=followed.inode,
                offset=followed.pos,
                size=st.st_size,
            )
            followed.pos += len(data)
            budget -= len(data)
            followed.anchor = (followed.anchor + data)[-FINGERPRINT:]
            if len(followed.head) < FINGERPRINT:
                followed.head = os.pread(followed.fd, FINGERPRINT, 0)
            moved = True
        return moved

    def fingerprints_hold(self, followed):
        """Whether the bytes we already sent are still where we left them.

        Log lines look alike, so the bytes at the anchor alone can match by
        chance after a truncate-and-regrow; the file's first bytes rarely do.
        """
        if followed.head and os.pread(followed.fd, len(followed.head), 0) != followed.head:
            return False
        if followed.anchor:
            at = followed.pos - len(followed.anchor)
            if os.pread(followed.fd, len(followed.anchor), at) != followed.anchor:
                return False
        return True

    def truncated(self, followed, new_size, regrown):
        seen = followed.seen[0] if followed.seen else 0
        self.report_cut(
            followed,
            followed.head,
            followed.anchor,
            read=followed.pos,
            seen=max(seen, followed.pos),
            new_size=new_size,
            regrown=regrown,
        )
        followed.pos = 0
        followed.head = b""
        followed.anchor = b""

    def report_cut(
        self, followed, head, anchor, *, read, seen, new_size, regrown, away=False, reused=False
    ):
        """Say that ``followed`` was cut after ``read`` bytes were sent; if a copy of it
        beside it holds those bytes (logrotate's copytruncate), send the rest from it."""
        copy = find_copy(followed.path, (followed.dev, followed.inode), head, anchor, read)
        fields = {
            "dev": followed.dev,
            "inode": followed.inode,
            "read": read,
            "seen": seen,
            "old_size": None,
            "new_size": new_size,
            "regrown": regrown,
            "away": away,
            "reused": reused,
            "copy": None,
            "unread": None,
        }
        if copy is None:
            self.out.frame("truncated", **fields)
            return
        fd, where, st = copy
        try:
            fields.update(
                old_size=st.st_size,
                copy=where,
                copy_dev=st.st_dev,
                copy_inode=st.st_ino,
                unread=st.st_size - read,
            )
            self.out.frame("truncated", **fields)
            pos = read
            while pos < st.st_size:
                data = os.pread(fd, min(CHUNK, st.st_size - pos), pos)
                if not data:
                    break
                self.out.bytes_read += len(data)
                self.out.frame(
                    "data", data, dev=st.st_dev, inode=st.st_ino, offset=pos, size=st.st_size
                )
                pos += len(data)
        finally:
            os.close(fd)

    def check_path(self):
        """Notice the path vanishing, appearing, or naming another file."""
        if self.pid is not None:
            if not self.writer_gone_said and not os.path.exists("/proc/%d" % self.pid):
                self.out.frame("writer-gone", pid=self.pid)
                self.writer_gone_said = True
            return
        if self.cur is None:
            self.open_path({"from_start": True})
            return
        st = stat_or_none(self.path)
        cur = self.cur
        if st is None:
            if not cur.deleted_said:
                cur.deleted_said = True
                links = os.fstat(cur.fd).st_nlink
                self.out.frame("deleted", dev=cur.dev, inode=cur.inode, links=links)
            return
        if (st.st_dev, st.st_ino) == (cur.dev, cur.inode):
            return
        # The path names another file now: finish the old one first.
        self.pump(cur)
        links = os.fstat(cur.fd).st_nlink
        self.out.frame(
            "replaced",
            old_dev=cur.dev,
            old_inode=cur.inode,
            new_dev=st.st_dev,
            new_inode=st.st_ino,
            old_state="deleted" if links == 0 else "renamed",
        )
        for old in self.previous:
            old.close()
        self.previous = [cur]
        self.cur = None
        self.open_path({"from_start": True})

    # ------------------------------------------------------------------ loop

    def wait(self, timeout):
        if not self.wake_fds:
            time.sleep(timeout)
            return
        try:
            ready, _, _ = select.select(self.wake_fds, [], [], timeout)
        except InterruptedError:
            return
        if self.inotify.fd in ready:
            self.inotify.drain()

    def run(self):
        if self.stdin_fd is not None:
            watch_channel(self.stdin_fd)
        self.start()
        self.out.flush()
        idle = ACTIVE_POLL
        while True:
            moved = False
            if self.cur is not None:
                moved = self.pump(self.cur)
            for old in self.previous:
                moved = self.pump(old) or moved
            if not self.follow and self.cur is not None and not moved:
                self.out.frame(
                    "eof",
                    dev=self.cur.dev,
                    inode=self.cur.inode,
                    offset=self.cur.pos,
                    bytes_read=self.out.bytes_read,
                )
                self.out.flush()
                return
            if not self.follow and self.cur is None:
                self.out.flush()
                return
            self.check_path()
            self.out.flush()
            if moved:
                idle = ACTIVE_POLL
                time.sleep(COALESCE)
                self.inotify.drain()
            elif self.inotify.fd >= 0:
                self.wait(IDLE_POLL)  # inotify wakes us; this is only a safety net
            else:
                self.wait(idle)
                idle = min(idle * 1.5, POLL_BACKOFF_LIMIT)


def watch_channel(fd):
    """End this process as soon as ``fd`` (our stdin, the channel babysit holds) reads
    EOF, whatever the main thread is doing: busy reading, blocked writing to a reader
    that stopped reading, or blocked in a call that does not return. Nothing more is
    sent on stdin while following, so EOF is the only thing read here."""
    import threading

    def watch():
        try:
            while os.read(fd, 4096):
                pass
        except OSError:
            pass
        os._exit(0)

    thread = threading.Thread(target=watch, name="channel")
    thread.daemon = True
    thread.start()


def tail_offset(fd, size, lines):
    """Offset where the last ``lines`` lines of the file begin, reading backwards only
    as far as needed. Returns (offset, bytes read)."""
    if lines <= 0 or size == 0:
        return size, 0
    end = size
    last = os.pread(fd, 1, size - 1)
    if last == b"\n":
        end = size - 1  # a final newline ends the last line; it does not start one
    pos = end
    count = 0
    read = 1
    limit = max(1024 * 1024, lines * 8 * 1024)
    while pos > 0 and read < limit:
        block = min(BACK_BLOCK, pos)
        pos -= block
        data = os.pread(fd, block, pos)
        read += len(data)
        index = len(data)
        while True:
            index = data.rfind(b"\n", 0, index)
            if index < 0:
                break
            count += 1
            if count == lines:
                return pos + index + 1, read
    return pos, read


def find_inode(dev, inode, path):
    """Open the file (dev, inode) again if it can still be found: renamed in the same
    directory (log rotation), or held open by some process (deleted while written)."""
    directory = os.path.dirname(path) or "."
    try:
        entries = os.listdir(directory)
    except OSError:
        entries = []

    def opened(where):
        """An fd on ``where`` if it is (still, once opened) the file (dev, inode)."""
        try:
            fd = open_file(where)
        except OSError:
            return None
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) == (dev, inode):
            return fd
        os.close(fd)
        return None

    for name in entries:
        candidate = os.path.join(directory, name)
        st = stat_or_none(candidate)
        if st is not None and (st.st_dev, st.st_ino) == (dev, inode) and stat.S_ISREG(st.st_mode):
            fd = opened(candidate)
            if fd is not None:
                return fd, candidate
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        pids = []
    for pid in pids:
        fd_dir = "/proc/%s/fd" % pid
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            link = os.path.join(fd_dir, fd)
            st = stat_or_none(link)
            if st is not None and (st.st_dev, st.st_ino) == (dev, inode):
                try:
                    target = os.readlink(link)
                except OSError:
                    continue
                held = opened(link)
                if held is not None:
                    return held, target
    return None


def find_copy(path, exclude, head, anchor, offset):
    """The newest file beside ``path`` named after it (``log.1``, ``log-20260509``, …)
    that begins with ``head`` and has ``anchor`` just before ``offset``: a copy of
    what was read, as logrotate's copytruncate leaves. Returns (fd, path, stat) or None."""
    if not path or not head or offset <= 0:
        return None
    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    try:
        names = [n for n in os.listdir(directory) if n != base and n.startswith(base)]
    except OSError:
        return None
    # Regular files only (opening a FIFO named like the log would block), newest first:
    # the copy of what was just read is among the latest, however many old ones lie there.
    found = []
    for name in names:
        st = stat_or_none(os.path.join(directory, name))
        if st is not None and stat.S_ISREG(st.st_mode):
            found.append((st.st_mtime, name))
    found.sort(reverse=True)
    for _, name in found[:MAX_COPY_CANDIDATES]:
        candidate = os.path.join(directory, name)
        try:
            fd = open_file(candidate)
        except OSError:
            continue
        st = os.fstat(fd)
        if (
            (st.st_dev, st.st_ino) != exclude
            and st.st_size >= offset
            and os.pread(fd, len(head), 0) == head
            and os.pread(fd, len(anchor), offset - len(anchor)) == anchor
        ):
            return fd, candidate, st
        os.close(fd)
    return None


def hexlify(data):
    return binascii.hexlify(data).decode("ascii")


def unhexlify(text):
    if not text:
        return b""
    try:
        return binascii.unhexlify(text)
    except (TypeError, ValueError):
        return b""


def writer_fd(pid, path):
    """The fd through which ``pid`` writes ``path`` (or, failing that, its stdout).

    Returns (fd, the path the kernel shows, deleted?, matches the given path?) or None.
    """
    fd_dir = "/proc/%d/fd" % pid
    path_st = stat_or_none(path) if path else None
    found = []
    try:
        names = sorted(os.listdir(fd_dir), key=int)
    except OSError:
        return None
    for name in names:
        link = os.path.join(fd_dir, name)
        st = stat_or_none(link)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        try:
            target = os.readlink(link)
        except OSError:
            continue
        deleted = target.endswith(" (deleted)")
        shown = target[: -len(" (deleted)")] if deleted else target
        matches = bool(path) and (
            shown == path
            or (path_st is not None and (st.st_dev, st.st_ino) == (path_st.st_dev, path_st.st_ino))
        )
        found.append((int(name), shown, deleted, matches, writes(pid, name)))
    matching = [f for f in found if f[3]]
    if matching:
        best = min(matching, key=lambda f: (not f[4], f[0] not in (1, 2), f[0]))
    else:
        # Not writing the given path (or none given): its stdout, if that is a file.
        stdout = [f for f in found if f[0] == 1]
        if not stdout:
            return None
        best = stdout[0]
    return best[0], best[1], best[2], best[3]


def writes(pid, fd):
    try:
        with open("/proc/%d/fdinfo/%s" % (pid, fd)) as info:
            for line in info:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 0o3 != 0
    except (OSError, ValueError):
        pass
    return False


# The name the agent's code runs under (see BOOTSTRAP in tui/remote/agentcall.py): it is
# in the command line of every agent and of the shells that start one, so one agent
# never takes itself, another agent or their shells for a server.
AGENT_NAME = "babysit-agent"

# ====================================================================== probe
#
# One round trip answers "which run is this?" for a list of services: the
# processes that could be each service's run, what files they hold open, the
# log's inode and timestamps, and where this run's bytes begin in the log.

LOG_HEAD = 4096
LOG_TAIL = 8192
READY_SCAN = 8 * 1024 * 1024
# How far past the anchor to look for the line where the server prints the arguments it
# really runs with (the request names that line's heads: "args_heads").
ARGS_SCAN = 4 * 1024 * 1024
# Start times are known to 1/100 s (clock ticks and /proc/uptime); allow that much.
START_SLACK = 0.05
TS_PATTERNS = [
    # SGLang: [2026-05-09 09:22:05] or [2026-05-09 09:22:05.123 TP0]
    (re.compile(rb"^\[(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"), True),
    # vLLM: [(APIServer pid=1) ]INFO 05-09 09:22:05 ...   (no year)
    (
        re.compile(
            rb"^(?:\([^)]*pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) "
            rb"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)"
        ),
        False,
    ),
    # ISO-8601 anywhere at the start (generic servers)
    (re.compile(rb"^\[?(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)"), True),
]


def read_text(path, default=""):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return default


def boot_facts():
    """(boot id, boot time, clock ticks per second). The boot time comes from
    /proc/uptime (1/100 s) rather than /proc/stat's whole-second btime, so
    process start times are exact enough to compare with file mtimes."""
    boot_id = read_text("/proc/sys/kernel/random/boot_id").strip()
    uptime = float(read_text("/proc/uptime", "0 0").split()[0])
    return boot_id, time.time() - uptime, os.sysconf("SC_CLK_TCK")


def process_table():
    """pid -> facts, from /proc/PID/stat, status and cmdline (readable for every user)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        stat_text = read_text("/proc/%d/stat" % pid)
        if not stat_text:
            continue
        close = stat_text.rfind(")")
        fields = stat_text[close + 2 :].split()
        if len(fields) < 20:
            continue
        raw = b""
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                raw = handle.read()
        except OSError:
            pass
        uid = None
        # Kernel threads and zombies have no command line and can be no one's run:
        # their status (the most costly of the three files) is not read.
        for line in read_text("/proc/%d/status" % pid).splitlines() if raw else ():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                break
        table[pid] = {
            "pid": pid,
            "ppid": int(fields[1]),
            "pgrp": int(fields[2]),
            "start_ticks": int(fields[19]),
            "state": fields[0],
            "uid": uid,
            "comm": stat_text[stat_text.find("(") + 1 : close],
            "cmdline": [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]],
        }
    return table


def user_name(uid, cache={}):  # noqa: B006 - a deliberate per-agent cache
    if uid is None:
        return None
    if uid not in cache:
        try:
            import pwd

            cache[uid] = pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            cache[uid] = str(uid)
    return cache[uid]


def open_files(pid):
    """Regular files ``pid`` holds open, or None when we may not look."""
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    files = []
    for name in names:
        link = os.path.join(fd_dir, name)
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if not target.startswith("/"):
            continue
        st = stat_or_none(link)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        deleted = target.endswith(" (deleted)")
        files.append(
            {
                "fd": int(name),
                "path": target[: -len(" (deleted)")] if deleted else target,
                "dev": st.st_dev,
                "inode": st.st_ino,
                "deleted": deleted,
                "write": writes(pid, name),
            }
        )
    return files


def fd_links(pid):
    """[(fd, link target)] for every fd of ``pid`` (readlink only, no stat), or None."""
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    links = []
    for name in names:
        try:
            links.append((name, os.readlink(os.path.join(fd_dir, name))))
        except OSError:
            continue
    return links


# Asking the kernel for listening sockets over netlink (sock_diag), as `ss -lt` does.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST_DUMP = 0x1 | 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
TCP_LISTEN = 10


def listening_sockets():
    """{port: {socket inode: owner uid}} for every listening TCP socket (v4 and v6).

    Asked over netlink for listening sockets only. /proc/net/tcp would do, but
    the kernel walks its whole connection hash table to print it: milliseconds
    even on an idle machine, and far more on a host with much memory or many
    clients. /proc/net/tcp stays the fallback where netlink is refused.
    """
    try:
        return listening_by_netlink()
    except (OSError, ValueError):
        return listening_by_proc()


def listening_by_netlink():
    import socket
    import struct

    found = {}
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    try:
        for seq, family in enumerate((socket.AF_INET, socket.AF_INET6), 1):
            # inet_diag_req_v2: family, protocol, ext, pad, states, then a zero sockid.
            request = struct.pack("=BBBBI48x", family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
            header = struct.pack(
                "=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST_DUMP, seq, 0
            )
            sock.sendall(header + request)
            done = False
            while not done:
                data = sock.recv(65536)
                if not data:
                    raise ValueError("netlink closed")
                offset = 0
                while offset + 16 <= len(data):
                    length, kind = struct.unpack_from("=IH", data, offset)
                    if length < 16:
                        raise ValueError("bad netlink message")
                    if kind == NLMSG_DONE:
                        done = True
                        break
                    if kind == NLMSG_ERROR:
                        raise ValueError("netlink error")
                    if kind == SOCK_DIAG_BY_FAMILY and length >= 16 + 72:
                        # inet_diag_msg: family, state, timer, retrans, sockid
                        # (sport big-endian first), expires, rqueue, wqueue, uid, inode.
                        (port,) = struct.unpack_from("!H", data, offset + 16 + 4)
                        uid, inode = struct.unpack_from("=II", data, offset + 16 + 64)
                        found.setdefault(port, {})[inode] = uid
                    offset += (length + 3) & ~3
    finally:
        sock.close()
    return found


def listening_by_proc():
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in read_text(table).splitlines()[1:]:
            parts = line.split()
            if len(parts) < 10 or parts[3] != "0A":  # 0A = LISTEN
                continue
            port = int(parts[1].rsplit(":", 1)[1], 16)
            found.setdefault(port, {})[int(parts[9])] = int(parts[7])
    return found


def listening_inodes(port):
    """Inodes of TCP sockets listening on ``port`` (any address, v4 or v6)."""
    return set(listening_sockets().get(port, {}))


def line_time(line, clock):
    """The time a line is stamped with, or None. ``clock`` is when the file was last
    written: a stamp without a year (vLLM's) is put in the latest year that places it
    no later than that, give or take a day for a server whose clock zone differs, so
    last December's lines in a file written in January are last year's, not in the
    future."""
    for pattern, has_year in TS_PATTERNS:
        match = pattern.match(line)
        if not match:
            continue
        parts = [int(x) for x in match.groups()]
        if has_year:
            try:
                return time.mktime(
                    (parts[0], parts[1], parts[2], parts[3], parts[4], parts[5], 0, 0, -1)
                )
            except (OverflowError, ValueError):
                return None
        return yearless_time(parts, clock)
    return None


# How far after the file's last write a year-less stamp may be (clocks in other zones).
YEARLESS_SLACK = 86400


def yearless_time(parts, clock):
    reference = time.localtime(clock).tm_year
    for year in range(reference + 1, reference - 9, -1):
        try:
            ts = time.mktime(datetime.datetime(year, *parts).timetuple())
        except (OverflowError, ValueError):
            continue  # Feb 29 in a common year
        if ts <= clock + YEARLESS_SLACK:
            return ts
    return None


def first_time(data, clock):
    for line in data.split(b"\n"):
        ts = line_time(line, clock)
        if ts is not None:
            return ts
    return None


def last_time(data, clock):
    for line in reversed(data.split(b"\n")):
        ts = line_time(line, clock)
        if ts is not None:
            return ts
    return None


def stat_facts(path, st):
    return {
        "path": path,
        "exists": True,
        "regular": True,
        "dev": st.st_dev,
        "inode": st.st_ino,
        "size": st.st_size,
        "mtime": st.st_mtime,
    }


def log_facts(path, tail_bytes=0):
    """The log's identity, size and first and last stamps, from an fd on it (see
    open_file). When it cannot be read, ``problem`` says why in plain words; a regular
    file we may not read still has what stat tells of it."""
    try:
        fd = open_file(path)
    except OSError as error:
        st = stat_or_none(path)
        facts = {"path": path, "exists": st is not None, "regular": False}
        if not isinstance(error, FileNotFoundError):
            facts["problem"] = cannot_read(path, error)
        if st is not None and stat.S_ISREG(st.st_mode) and not isinstance(error, NotRegular):
            facts.update(stat_facts(path, st), problem=facts["problem"])
        return facts
    want = max(LOG_TAIL, tail_bytes)
    try:
        st = os.fstat(fd)
        facts = stat_facts(path, st)
        head = os.pread(fd, LOG_HEAD, 0)
        tail = os.pread(fd, want, max(0, st.st_size - want))
    finally:
        os.close(fd)
    if tail_bytes:
        import base64

        last = tail[-tail_bytes:]
        facts["tail_offset"] = st.st_size - len(last)
        facts["tail"] = base64.b64encode(last).decode("ascii")
    facts["first_ts"] = first_time(head, st.st_mtime)
    facts["last_ts"] = last_time(tail, st.st_mtime)
    return facts


def find_anchor(fd, size, start_time, clock, pid_tag):
    """Offset of the first byte this run wrote, and how it was found (or None, reason).

    The first line stamped at or after the process start (timestamps are whole
    seconds, so a line of the same second from another run makes the answer
    unsure). A vLLM run tags its lines with its pid, but pids come back (every
    container counts from 1), so a tagged line is this run's only when it is also
    stamped at or after the start.
    """
    start = int(start_time)
    low = before_start(fd, size, start, clock)
    if pid_tag:
        span = (low, min(size, low + READY_SCAN))
        at, how = first_tagged(fd, span, pid_tag, start, clock)
        if at is not None or how is not None:
            return at, how
    chunk = os.pread(fd, min(size - low, 1024 * 1024), low)
    offset = low
    previous_ts = None
    for line in chunk.split(b"\n"):
        ts = line_time(line, clock)
        if ts is not None and ts >= start:
            if ts == start and offset > 0:
                # Stamped in the very second the process started, after other lines:
                # an older run (ended in that second) may have written it.
                return None, "a line of another run may share the start's second"
            if offset > 0 and previous_ts is None and low == offset:
                previous = last_time(os.pread(fd, 4096, max(0, offset - 4096)), clock)
                if previous is not None and previous >= start:
                    return None, "the log's timestamps are not in order"
            return offset, "timestamps"
        if ts is not None:
            previous_ts = ts
        offset += len(line) + 1
    if offset >= size:
        return size, "nothing written since the start"
    return None, "no timestamps to place the start"


def before_start(fd, size, start, clock):
    """A line start at or before the first line stamped ``start`` or later (0 when
    the timestamps cannot tell): a binary search over line starts."""
    low, high = 0, size
    while high - low > 4096:
        mid = (low + high) // 2
        chunk = os.pread(fd, 8192, mid)
        newline = chunk.find(b"\n")
        if newline < 0:
            break
        ts = first_time(chunk[newline + 1 :], clock)
        if ts is None:
            break
        if ts < start:
            low = mid + newline + 1
        else:
            high = mid
    return low


def first_tagged(fd, span, tag, start, clock):
    """(offset, "pid tag") of the first line in ``span`` that carries ``tag`` and is
    stamped at or after ``start``; (None, why) when the only tagged lines after the
    older ones carry no stamp (uvicorn's, tracebacks), so they may be either run's;
    (None, None) when no tagged line tells (the run does not tag its lines)."""
    undated = False
    for offset, line in lines_in(fd, *span):
        if tag not in line:
            continue
        ts = line_time(line, clock)
        if ts is None:
            undated = True
        elif ts >= start:
            return offset, "pid tag"
        else:
            undated = False  # the undated lines before an older line are the older run's
    if undated:
        return None, "lines tagged %s follow an older run's, with no time stamp to tell whose" % (
            tag.decode("utf-8", "replace").rstrip(")")
        )
    return None, None


def lines_in(fd, start, end, keep=65536):
    """(offset, line) for each line in [start, end); a line is cut at ``keep`` bytes."""
    pos = start
    line_at = start
    head = b""
    while pos < end:
        data = os.pread(fd, min(1024 * 1024, end - pos), pos)
        if not data:
            break
        cut = 0
        while True:
            newline = data.find(b"\n", cut)
            stop = len(data) if newline < 0 else newline
            if len(head) < keep:
                head += data[cut : min(stop, cut + keep - len(head))]
            if newline < 0:
                break
            yield line_at, head
            line_at = pos + newline + 1
            head = b""
            cut = newline + 1
        pos += len(data)
    if line_at < pos:
        yield line_at, head


def holds_whole_run(fd, anchor, start_time, clock):
    """Whether the log provably holds this run's output from its first byte: a line
    stamped before the run started lies just before the anchor. A log cut since the
    run began (logrotate's copytruncate) starts inside the run and holds none, so a
    ready line it lacks may have been cut away."""
    if anchor <= 0:
        return False
    ts = last_time(os.pread(fd, 4096, max(0, anchor - 4096)), clock)
    return ts is not None and ts < int(start_time)


def scan_for(fd, start, end, needles, limit=READY_SCAN):
    """(offset, line) of the first line in [start, end) containing any needle."""
    if limit is not None:
        end = min(end, start + limit)
    pos = start
    carry = b""
    while pos < end:
        data = os.pread(fd, min(1024 * 1024, end - pos), pos)
        if not data:
            break
        block = carry + data
        base = pos - len(carry)
        for needle in needles:
            index = block.find(needle)
            if index >= 0:
                line_start = block.rfind(b"\n", 0, index) + 1
                line_end = block.find(b"\n", index)
                line = block[line_start : line_end if line_end >= 0 else len(block)]
                return base + line_start, line.decode("utf-8", "replace")
        cut = block.rfind(b"\n")
        carry = block[cut + 1 :] if cut >= 0 else block
        if len(carry) > 65536:
            carry = carry[-65536:]
        pos += len(data)
    return None


def readiness(log_path, run, record, ready_patterns, engine, args_heads=()):  # noqa: PLR0917
    """Where this run's bytes begin in the log, and whether its ready line is there.

    ``seen`` is False only as far as the log shows; ``cut`` says the log may have lost
    the run's first bytes (it begins inside the run), so a ready line it lacks may
    have been there: then /health is asked (see probe_service).
    """
    try:
        fd = open_file(log_path)
    except FileNotFoundError:
        return {"anchor": None, "source": "no log", "seen": None}
    except OSError as error:
        return {"anchor": None, "source": cannot_read(log_path, error), "seen": None}
    try:
        st = os.fstat(fd)
        clock = st.st_mtime
        anchor, source, cut = None, None, True
        if record and (record.get("dev"), record.get("inode")) == (st.st_dev, st.st_ino):
            anchor, source = record.get("launch_offset"), "run record"
            if isinstance(anchor, int) and anchor > st.st_size:
                return {
                    "anchor": None,
                    "seen": None,
                    "source": "the log (%d bytes) is shorter than where this run began "
                    "(offset %d): it was cut since" % (st.st_size, anchor),
                }
        elif st.st_mtime < run["start_time"] - START_SLACK:
            anchor, source, cut = st.st_size, "nothing written since the start", False
        else:
            tag = None
            if engine == "vllm":
                tag = ("pid=%d)" % run["pid"]).encode()
            anchor, source = find_anchor(fd, st.st_size, run["start_time"], clock, tag)
        if anchor is None:
            return {"anchor": None, "source": source, "seen": None}
        if cut:
            cut = not holds_whole_run(fd, anchor, run["start_time"], clock)
        heads = [h.encode() for h in args_heads]
        args_line = scan_for(fd, anchor, st.st_size, heads, limit=ARGS_SCAN) if heads else None
        if not ready_patterns:
            return {
                "anchor": anchor,
                "seen": None,
                "args_line": args_line[1] if args_line else None,
                "source": "no ready line is known for this engine (set ready: in hosts.yaml)",
            }
        found = scan_for(fd, anchor, st.st_size, [p.encode() for p in ready_patterns])
        result = {
            "anchor": anchor,
            "source": source,
            "seen": found is not None,
            "cut": cut and found is None,
            "complete": st.st_size - anchor <= READY_SCAN,
            "args_line": args_line[1] if args_line else None,
        }
        if found is not None:
            result["offset"], result["line"] = found
            result["at"] = line_time(found[1].encode(), clock)
        elif not result["complete"]:
            result["seen"] = None
            result["source"] = "the run wrote more than %d MiB before any ready line" % (
                READY_SCAN // (1024 * 1024)
            )
        return result
    finally:
        os.close(fd)


def http_text(port, path="/metrics", limit=4 * 1024 * 1024):
    """(status, body text) of a GET on loopback, or (None, the error) when it fails."""
    try:
        import urllib.request

        url = "http://127.0.0.1:%d%s" % (port, path)  # always http on loopback
        with urllib.request.urlopen(url, timeout=2.0) as r:  # noqa: S310
            return r.status, r.read(limit).decode("utf-8", "replace")
    except Exception as error:  # any failure is an answer here
        return getattr(error, "code", None), str(error)


def http_status(port, path="/health"):
    try:
        import urllib.request

        url = "http://127.0.0.1:%d%s" % (port, path)  # always http on loopback
        with urllib.request.urlopen(url, timeout=1.0) as r:  # noqa: S310
            return r.status
    except Exception as error:  # any failure (refused, timeout, HTTP error) is an answer
        code = getattr(error, "code", None)
        return code if isinstance(code, int) else None


def last_record(record_dir):
    path = os.path.join(os.path.expanduser(record_dir), "runs.jsonl")
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 65536))
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            return json.loads(line.decode("utf-8"))
        except ValueError:
            continue
    return None


def matches_launch(cmdline, launch):
    """The process runs the service's launch command: same program name and every
    launch argument, in order (the real argv may have more)."""
    if not launch or not cmdline:
        return False
    program = os.path.basename(launch[0])
    actual = os.path.basename(cmdline[0])
    if actual != program and not (program.startswith("python") and actual.startswith("python")):
        return False
    rest = iter(cmdline[1:])
    return all(any(arg == have for have in rest) for arg in launch[1:])


class ProcessView(object):
    """One consistent look at the host's processes, with per-pid caches for this probe."""

    def __init__(self, client=None):
        self.boot_id, self.btime, self.hz = boot_facts()
        self.table = process_table()
        self.me = os.getpid()
        self.children = {}
        for info in self.table.values():
            self.children.setdefault(info["ppid"], []).append(info["pid"])
        self._files = {}
        self._links = {}
        self._listening = None
        # babysit's own processes here: this agent and every process above it (the
        # shells and the session that started it, and the babysit client when it runs
        # on this host), which may hold a service's log open for their own output.
        # Never pid 1, which may be the server itself in a container.
        self.chain = [self.me]
        pid = os.getppid()
        while pid > 1 and pid in self.table and pid not in self.chain:
            self.chain.append(pid)
            pid = self.table[pid]["ppid"]
        # The babysit that asks, and what is above it, when it runs on this very host
        # (same boot; each pid still with the start it had there).
        self.client = []
        if client and client.get("boot_id") == self.boot_id:
            for pid, ticks in client.get("processes") or []:
                info = self.table.get(pid)
                if info is not None and info["start_ticks"] == ticks:
                    self.client.append(pid)
        self.own = set(self.chain) | set(self.client)

    def listening(self, port):
        """{socket inode: owner uid} of the sockets listening on ``port``."""
        if self._listening is None:
            self._listening = listening_sockets()
        return self._listening.get(port, {})

    def files(self, pid):
        if pid not in self._files:
            self._files[pid] = open_files(pid)
        return self._files[pid]

    def links(self, pid):
        if pid not in self._links:
            self._links[pid] = fd_links(pid)
        return self._links[pid]

    def alive(self, pid):
        """A live process that is not one of babysit's agents (this one included), nor a
        shell that started one. (The processes above this agent are in ``own``.)"""
        info = self.table.get(pid)
        if info is None or pid == self.me or info["state"] == "Z":
            return False
        # An agent's command line is python3 -I -S -c BOOTSTRAP, and BOOTSTRAP names the
        # agent; the shells that started one hold that text too. No request's text is in
        # any command line (requests travel on stdin), so none can forge or hide this.
        return not any(AGENT_NAME in part for part in info["cmdline"])

    def descendants(self, pid):
        out, stack = [], list(self.children.get(pid, []))
        while stack:
            child = stack.pop()
            out.append(child)
            stack.extend(self.children.get(child, []))
        return sorted(out)

    def describe(self, pid, sources):
        info = self.table[pid]
        files = self.files(pid)
        try:
            cwd = os.readlink("/proc/%d/cwd" % pid)
        except OSError:
            cwd = None
        return {
            "pid": pid,
            "ppid": info["ppid"],
            "pgrp": info["pgrp"],
            "start_ticks": info["start_ticks"],
            "start_time": self.btime + info["start_ticks"] / float(self.hz),
            "uid": info["uid"],
            "user": user_name(info["uid"]),
            "cmdline": info["cmdline"],
            "cwd": cwd,
            "children": self.descendants(pid),
            "sources": sorted(sources),
            "files": files,
            "readable": files is not None,
        }

    def roots(self, candidates):
        """Candidates that are not below another candidate: one per run."""
        roots = []
        for pid in sorted(candidates):
            parent = self.table[pid]["ppid"]
            inside = False
            while parent in self.table and parent > 1:
                if parent in candidates:
                    inside = True
                    break
                parent = self.table[parent]["ppid"]
            if not inside:
                roots.append(pid)
        return roots


def record_candidate(view, record):
    """(state of babysit's last run record, its pid if that very process still runs)."""
    if record is None:
        return None, None
    pid = record.get("pid")
    if record.get("boot_id") != view.boot_id:
        return "from an earlier boot", None
    if pid not in view.table:
        return "gone", None
    if view.table[pid]["start_ticks"] != record.get("start_ticks"):
        return "pid reused", None
    return "running", pid


class LogFile(object):
    """The file at a service's log path, to tell which open files are it: by device
    and inode, never by the text of a path (a symlink, a linked folder or a ``//``
    name the same file another way than the process that opened it did). A deleted
    file is the log's former self when the name it had is where the path leads."""

    def __init__(self, path):
        st = stat_or_none(path)
        regular = st is not None and stat.S_ISREG(st.st_mode)
        self.key = (st.st_dev, st.st_ino) if regular else None
        folder, base = os.path.split(path)
        self.names = set(
            [os.path.realpath(path), os.path.join(os.path.realpath(folder or "."), base)]
        )
        self.bases = set(os.path.basename(name) for name in self.names)

    def holds(self, entry):
        """Whether an entry of open_files() is this log (or its deleted former self)."""
        return (entry["dev"], entry["inode"]) == self.key or (
            entry["deleted"] and entry["path"] in self.names
        )

    def is_fd(self, pid, fd, target):
        """Whether fd ``fd`` of ``pid``, whose link reads ``target``, is this log (or its
        deleted former self). Only a file named like the log is looked at (stat on
        every open file of every process could stall on a dead network mount); its
        device and inode decide."""
        deleted = target.endswith(" (deleted)")
        name = target[: -len(" (deleted)")] if deleted else target
        if not name.startswith("/") or os.path.basename(name) not in self.bases:
            return False
        if deleted and name in self.names:
            return True
        if self.key is None:
            return False
        st = stat_or_none("/proc/%d/fd/%s" % (pid, fd))
        return st is not None and (st.st_dev, st.st_ino) == self.key


def find_candidates(view, service, log_file):
    """{pid: set of reasons} for processes that may be the service's run; the
    processes that look like it but whose files we may not read; and the sockets
    listening on its port that no process we can read holds."""
    sources = {}
    port = service.get("port")
    listeners = view.listening(port) if port else {}
    sockets = dict(("socket:[%d]" % inode, inode) for inode in listeners)
    held = set()
    pattern = re.compile(service["match"]) if service.get("match") else None
    launch = service.get("launch")
    unreadable = []
    for pid, info in view.table.items():
        if pid in view.own or not view.alive(pid) or not info["cmdline"]:
            continue
        if pattern is not None:
            by_command = pattern.search(" ".join(info["cmdline"])) is not None
        else:
            by_command = matches_launch(info["cmdline"], launch)
        links = view.links(pid)
        if links is None:
            if by_command:
                unreadable.append(
                    {
                        "pid": pid,
                        "uid": info["uid"],
                        "user": user_name(info["uid"]),
                        "cmdline": info["cmdline"],
                    }
                )
            continue
        if by_command:
            sources.setdefault(pid, set()).add("command")
        for fd, target in links:
            if target in sockets:
                held.add(sockets[target])
                sources.setdefault(pid, set()).add("port")
            elif log_file.is_fd(pid, fd, target) and writes(pid, fd):
                sources.setdefault(pid, set()).add("writes log")
    hidden = [
        {"port": port, "inode": inode, "uid": uid, "user": user_name(uid)}
        for inode, uid in sorted(listeners.items())
        if inode not in held
    ]
    return sources, unreadable, hidden


def probe_service(view, service):
    log_path = service["log"]
    try:
        log = log_facts(log_path, int(service.get("tail_bytes") or 0))
    except OSError as error:
        raise ServiceFailed("cannot read the log %s: %s" % (log_path, reason_of(error))) from None
    log_file = LogFile(log_path)
    record = last_record(service["record_dir"]) if service.get("record_dir") else None
    record_state, record_pid = record_candidate(view, record)
    sources, unreadable, hidden = find_candidates(view, service, log_file)
    if record_pid is not None and record_pid not in view.own and view.alive(record_pid):
        sources.setdefault(record_pid, set()).add("record")
    runs = []
    for pid in view.roots(set(sources)):
        run = view.describe(pid, sources[pid])
        run["members"] = []
        for child in run["children"]:
            if child in sources:
                run["sources"] = sorted(set(run["sources"]) | sources[child])
            run["members"].append(view.describe(child, sources.get(child, ())))
        for member in [run, *run["members"]]:
            if member["files"] is not None:
                member["files"] = [dict(f, at_log=log_file.holds(f)) for f in member["files"]]
        if log.get("regular") and any(
            f["write"] and (f["dev"], f["inode"]) == (log["dev"], log["inode"])
            for member in [run, *run["members"]]
            for f in (member["files"] or [])
        ):
            try:
                run["ready"] = readiness(
                    log_path,
                    run,
                    record if "record" in run["sources"] else None,
                    service.get("ready", []),
                    service.get("engine"),
                    service.get("args_heads") or (),
                )
            except OSError as error:
                raise ServiceFailed(
                    "cannot read the log %s: %s" % (log_path, reason_of(error))
                ) from None
        runs.append(run)
    # Only when the log cannot tell (readiness unknown, or no ready line in a log that
    # may have lost the run's first bytes): SGLang answers /health by running a
    # generation, which would add a line to its log and work to its GPU on every refresh.
    health = None
    unsure = any(
        run["ready"].get("seen") is None or run["ready"].get("cut")
        for run in runs
        if "ready" in run
    )
    asked = bool(service.get("port") and service.get("health", True) and unsure)
    if asked:
        health = http_status(service["port"])
    return {
        "name": service["name"],
        "log": log,
        "runs": runs,
        "unreadable": unreadable,
        "hidden_listeners": hidden,
        "record": record,
        "record_state": record_state,
        "health": health,
        "health_asked": asked,
        "gpu_csv": None,  # filled in by probe(), once for all services
        "prometheus": http_text(service["port"]) if service.get("prometheus") else None,
    }


class ServiceFailed(Exception):
    """What went wrong probing one service, in plain words."""


def reason_of(error):
    if isinstance(error, ServiceFailed):
        return str(error)
    if isinstance(error, OSError) and error.strerror:
        if error.filename:
            return "%s: %s" % (error.filename, error.strerror)
        return error.strerror
    return "%s: %s" % (type(error).__name__, error)


def probe(args):
    view = ProcessView(args.get("client"))
    services = args.get("services", [])
    entries = []
    for service in services:
        # What fails for one service (a log on a failing disk) is that service's answer.
        try:
            entries.append(probe_service(view, service))
        except Exception as error:  # any failure is this service's answer
            entries.append({"name": service.get("name"), "error": reason_of(error), "runs": []})
    wanting = [entries[i] for i, s in enumerate(services) if s.get("gpus") is not None]
    if wanting:
        readings = gpu_readings(view, entries, float(args.get("apps_max_age") or 0))
        for entry in wanting:
            entry["gpu_csv"] = readings
    return {
        "boot_id": view.boot_id,
        "boot_time": view.btime,
        "now": time.time(),
        "utc_offset": time.localtime().tm_gmtoff,
        "uid": os.getuid(),
        "hostname": os.uname()[1],
        "agent_pid": os.getpid(),
        "services": entries,
    }


#: The last --query-compute-apps reading of this (long-lived) agent, see gpu_readings.
APPS_SEEN = {}


def gpu_readings(view, entries, apps_max_age):
    """nvidia-smi's readings, asked once per probe however many services want them.

    The GPU query runs every time. The process list may be the last one, when the
    caller allows it (``apps_max_age`` seconds) and it provably still holds: every
    process it lists is alive (same start time) and visible here, and every
    process of the runs found now had started before it was read, so none of them
    can be missing from it for having started since. ``apps_at`` says when it was
    read.
    """
    out = nvidia_smi_csv(apps=False)
    now = time.time()
    seen = APPS_SEEN.get("reading")
    if seen is not None and apps_max_age > 0 and now - seen["apps_at"] <= apps_max_age:
        listed_alive = all(
            pid in view.table and view.table[pid]["start_ticks"] == ticks
            for pid, ticks in seen["listed"]
        )
        # Start times are exact to a clock tick, but rest on the wall clock as read
        # now: a second's margin for the clock's steps.
        runs_older = all(
            member["start_time"] <= seen["apps_at"] - 1.0
            for entry in entries
            for run in entry["runs"]
            for member in [run, *run["members"]]
        )
        if listed_alive and runs_older:
            out.update(seen["csv"])
            return out
    csv = nvidia_smi_csv(gpus=False)
    csv["apps_at"] = now
    listed = []
    for line in csv["apps"].splitlines():
        first = line.split(",", 1)[0].strip()
        if first.isdigit() and int(first) in view.table:
            listed.append((int(first), view.table[int(first)]["start_ticks"]))
        elif first.isdigit():
            listed.append((int(first), None))  # a pid we cannot see: never reused
    APPS_SEEN["reading"] = {"apps_at": now, "csv": csv, "listed": listed}
    out.update(csv)
    return out


# ====================================================================== actions
#
# Guarded kill and launch. A process is signalled only through a pidfd opened
# *before* its start time is re-checked, so the check and the signal cannot
# race with pid reuse; where the kernel has no pidfd, the check comes right
# before os.kill and the answer says which method was used.

SYS_PIDFD_OPEN = 434
SYS_PIDFD_SEND_SIGNAL = 424


def emit_line(kind, **fields):
    fields["t"] = kind
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def start_ticks_of(pid):
    text = read_text("/proc/%d/stat" % pid)
    if not text:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if fields and fields[0] == "Z":
        return None  # a zombie is already dead; only its parent's wait is missing
    return int(fields[19]) if len(fields) > 19 else None


def c_library(loaded={}):  # noqa: B006 - loaded once per agent
    """(ctypes, the C library), on first use: only following and killing need them.

    dlopen(NULL) finds libc's symbols through Python itself, without
    ctypes.util.find_library (which runs ldconfig and costs megabytes of imports).
    """
    if not loaded:
        import ctypes

        loaded["pair"] = (ctypes, ctypes.CDLL(None, use_errno=True))
    return loaded["pair"]


def pidfd_open(pid):
    """A pidfd for ``pid``, or None where the kernel (or Python) has none."""
    if hasattr(os, "pidfd_open"):
        try:
            return os.pidfd_open(pid)
        except OSError as error:
            if error.errno == 3:  # ESRCH: gone
                raise
            return None
    try:
        ctypes, libc = c_library()
        fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        if ctypes.get_errno() == 3:
            raise ProcessLookupError(pid)
        return None
    return fd


def send_signal(pid, pidfd, signum):
    if pidfd is None:
        os.kill(pid, signum)
        return
    import signal as signal_module

    if hasattr(signal_module, "pidfd_send_signal"):
        signal_module.pidfd_send_signal(pidfd, signum)
        return
    ctypes, libc = c_library()
    if libc.syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, signum, None, 0) != 0:
        raise OSError(ctypes.get_errno(), "pidfd_send_signal failed")


def gone(pid, ticks, pidfd):
    if pidfd is not None:
        ready, _, _ = select.select([pidfd], [], [], 0)
        if ready:
            return True
    return start_ticks_of(pid) != ticks


def port_owners(port):
    listening = set("socket:[%d]" % inode for inode in listening_inodes(port))
    if not listening:
        return []
    owners = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            links = fd_links(int(name)) or []
            if any(target in listening for _, target in links):
                owners.append(int(name))
    return owners or ["unknown (not readable)"]


def nvidia_smi(*args):
    """(exit status, stdout, stderr) of one nvidia-smi query; 127 when it cannot run."""
    import subprocess

    try:
        done = subprocess.run(
            ["nvidia-smi", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return 127, "", str(error)
    return (
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
    )


def nvidia_smi_csv(gpus=True, apps=True):
    """The raw CSV of the nvidia-smi queries babysit reads (statuses and errors too)."""
    out = {}
    queries = (
        (
            "gpus",
            "--query-gpu=index,name,power.draw,power.limit,utilization.gpu,"
            "memory.used,memory.total,temperature.gpu",
        ),
        ("apps", "--query-compute-apps=pid,used_memory"),
    )
    for name, query in queries:
        if not (gpus if name == "gpus" else apps):
            continue
        status, stdout, stderr = nvidia_smi(query, "--format=csv,noheader,nounits")
        out[name + "_status"] = status
        out[name + "_error"] = stderr.strip()[-300:]
        out[name] = stdout
    return out


def gpu_apps():
    """[{pid, used_mib, gpu_uuid}] from nvidia-smi, or None when it is not there."""
    status, stdout, _ = nvidia_smi(
        "--query-compute-apps=pid,used_memory,gpu_uuid", "--format=csv,noheader,nounits"
    )
    if status != 0:
        return None
    apps = []
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            used = int(parts[1]) if parts[1].isdigit() else None
            apps.append(
                {
                    "pid": int(parts[0]),
                    "used_mib": used,
                    "gpu_uuid": parts[2] if len(parts) > 2 else None,
                }
            )
    return apps


# ---------------------------------------------------------------------- kill
#
# A kill runs in a worker of its own (forked, setsid'd, its stdio on /dev/null), so it
# finishes on the host whatever becomes of the channel that asked for it: the lifeline's
# SIGTERM, a dropped connection, the caller's process group ended, EOF on stdin. The
# front process only relays the worker's steps to the caller. Every step is also kept in
# ``<record_dir>/kills/<kill id>.json``, which a caller that lost the channel reads back.

KILL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: How many kill records a service's folder keeps (the newest).
KILL_RECORDS_KEPT = 50
#: Seconds SIGKILLed processes get to be gone.
KILL_WAIT = 10.0
#: The bound on a run's processes when the caller gives none (one rank's worth).
DEFAULT_MAX_PROCESSES = 50
MAX_GRACE = 3600.0


def kill_record_path(args):
    kill_id = str(args.get("kill_id") or "")
    if not KILL_ID.match(kill_id) or not args.get("record_dir"):
        return None
    return os.path.join(os.path.expanduser(args["record_dir"]), "kills", kill_id + ".json")


class KillLog(object):
    """The steps of one kill: to the caller while it listens (``out_fd``), and to the
    host's record at ``path``, rewritten whole at each step, whatever the channel does."""

    def __init__(self, path, header, out_fd=None):
        self.path = path
        self.out_fd = out_fd
        self.record = dict(header)
        self.record.update(state="running", started_at=time.time(), events=[])
        self.saved = path is not None
        if path is not None:
            prune_kill_records(os.path.dirname(path))

    def emit(self, kind, **fields):
        fields["t"] = kind
        fields["seq"] = len(self.record["events"])
        self.record["events"].append(fields)
        self.save()
        self.send((json.dumps(fields) + "\n").encode("utf-8"))

    def finish(self, status):
        self.record.update(state="finished", status=status, finished_at=time.time())
        self.save()

    def save(self):
        if not self.saved:
            return
        try:
            private_folder(os.path.dirname(self.path))
            part = self.path + ".part"
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(json.dumps(self.record))
            os.rename(part, self.path)
        except OSError:
            self.saved = False  # the kill goes on; the caller is told there is no record

    def send(self, data):
        """To the caller, never blocking: the first write that fails (the front is gone,
        or the channel stalls) ends the sending; the record has every step."""
        if self.out_fd is None:
            return
        try:
            if os.write(self.out_fd, data) == len(data):
                return
        except OSError:
            pass
        os.close(self.out_fd)
        self.out_fd = None


def prune_kill_records(folder):
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return
    paths = [os.path.join(folder, n) for n in names]
    paths.sort(key=lambda p: os.stat(p).st_mtime if os.path.exists(p) else 0)
    for path in paths[: max(0, len(paths) - (KILL_RECORDS_KEPT - 1))]:
        try:
            os.unlink(path)
        except OSError:
            pass


def own_processes(view):
    """{pid: what it is} for babysit's own processes here: babysit and what is above it
    when the caller runs on this very machine; this agent and every process above it (the
    shells, the sshd session or pct exec that carry its channel); babysit's other agents."""
    own = {}
    for pid in view.client:
        own[pid] = "babysit itself, or a process above it (its shell or terminal)"
    for pid in view.chain:
        own.setdefault(
            pid,
            "babysit's agent for this kill"
            if pid == view.me
            else "above babysit's agent on this host: it carries babysit's own connection",
        )
    for pid, info in view.table.items():
        # ProcessView.alive is the one place that tells babysit's agents from the rest.
        if pid not in own and info["state"] != "Z" and not view.alive(pid):
            own[pid] = "one of babysit's agents"
    return own


def kill_refusal(args, view):  # noqa: PLR0911 - one return per reason
    """Why this kill must not send a single signal, or None."""
    nothing = "; nothing was signalled"
    if args.get("boot_id") and args["boot_id"] != view.boot_id:
        return "the host rebooted since the run was seen" + nothing
    try:
        grace = float(args.get("grace", 30))
    except (TypeError, ValueError):
        grace = float("nan")
    if not 0 < grace <= MAX_GRACE:  # also false for nan
        return "the grace must be more than 0 and at most %g seconds" % MAX_GRACE + nothing
    targets = [(t["pid"], t["start_ticks"]) for t in args["targets"]]
    if any(pid == 1 for pid, _ in targets):
        return (
            "pid 1 is init (the first process of this host or container): babysit never "
            "signals it" + nothing
        )
    own = own_processes(view)
    for pid, ticks in targets:
        info = view.table.get(pid)
        if pid in own and info is not None and info["start_ticks"] == ticks:
            return "pid %d (%s) is %s: babysit never signals its own processes%s" % (
                pid,
                info["comm"],
                own[pid],
                nothing,
            )
    bound = int(args.get("max_processes") or DEFAULT_MAX_PROCESSES)
    why = (
        "more than this service could have (at most %d); it may be a shell, a session or "
        "init matched by mistake" % bound
    )
    if len(targets) > bound:
        return "the run has %d processes, %s%s" % (len(targets), why, nothing)
    root, ticks = targets[0]
    info = view.table.get(root)
    if info is not None and info["start_ticks"] == ticks:
        now = 1 + len(view.descendants(root))
        if now > bound:
            return (
                "the run's tree has grown to %d processes since it was confirmed (%d then), %s%s"
                % (
                    now,
                    len(targets),
                    why,
                    nothing,
                )
            )
    return None


def kill(args):
    """SIGTERM the verified tree, wait the grace, SIGKILL what is left; report as we go.

    Refused, with the reason, before any signal: another boot, pid 1, any of babysit's
    own processes, a tree larger than the service could have. Otherwise the work is done
    by a detached worker (see above) and this process relays its steps."""
    path = kill_record_path(args)
    header = {"kill_id": args.get("kill_id"), "targets": args["targets"], "port": args.get("port")}
    refused = kill_refusal(args, ProcessView(args.get("client")))
    if refused is not None:
        log = KillLog(path, header, out_fd=1)
        log.emit("refused", reason=refused)
        log.finish(3)
        return 3
    sys.stdout.flush()
    read_fd, write_fd = os.pipe()
    worker = os.fork()
    if worker == 0:
        status = 1
        try:
            os.close(read_fd)
            detach()
            import fcntl

            flags = fcntl.fcntl(write_fd, fcntl.F_GETFL)
            fcntl.fcntl(write_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
            log = KillLog(path, header, out_fd=write_fd)
            log.emit("started", worker=os.getpid(), record=path if log.saved else None)
            try:
                status = run_kill(args, log)
            except Exception as error:  # said in the record, never lost with the channel
                log.emit("error", message="%s: %s" % (type(error).__name__, error))
            log.finish(status)
        finally:
            os._exit(status)
    os.close(write_fd)
    relay(read_fd)
    _, wait_status = os.waitpid(worker, 0)
    return os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else 1


def detach():
    """The worker leaves the caller's session and stdio: nothing aimed at the channel's
    processes (a lifeline's SIGTERM, a group's SIGKILL, a hangup, a closed pipe) reaches it."""
    import signal as signal_module

    os.setsid()
    for name in ("SIGHUP", "SIGINT", "SIGPIPE"):
        signal_module.signal(getattr(signal_module, name), signal_module.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def relay(read_fd):
    """The worker's lines to stdout until the worker ends; once stdout fails, keep
    draining (so the worker never waits on us) but stop writing."""
    writing = True
    while True:
        chunk = os.read(read_fd, 65536)
        if not chunk:
            break
        while writing and chunk:
            try:
                chunk = chunk[os.write(1, chunk) :]
            except OSError:
                writing = False
    os.close(read_fd)


def run_kill(args, log):
    handles = []
    for target in args["targets"]:
        pid, ticks = target["pid"], target["start_ticks"]
        try:
            pidfd = pidfd_open(pid)
        except ProcessLookupError:
            log.emit("gone", pid=pid)
            continue
        now_ticks = start_ticks_of(pid)
        if now_ticks is None:
            log.emit("gone", pid=pid)
        elif now_ticks != ticks:
            log.emit("changed", pid=pid, start_ticks=now_ticks)
            if pidfd is not None:
                os.close(pidfd)
        else:
            handles.append((pid, ticks, pidfd))
    gpus = args.get("gpus") or []
    # Without gpus:, the service's GPUs are those its run holds memory on now.
    before = gpu_apps() if handles and not gpus else None
    signalled = set()
    method = "pidfd" if all(h[2] is not None for h in handles) else "kill after re-check"
    for pid, ticks, pidfd in handles:
        if pidfd is None and start_ticks_of(pid) != ticks:
            log.emit("changed", pid=pid, start_ticks=start_ticks_of(pid))
            continue
        try:
            send_signal(pid, pidfd, 15)
            signalled.add(pid)
            log.emit("signalled", pid=pid, signal="SIGTERM", method=method)
        except (ProcessLookupError, OSError):
            log.emit("gone", pid=pid)
    deadline = time.time() + float(args.get("grace", 30))
    alive = list(handles)
    while alive and time.time() < deadline:
        still = []
        for handle in alive:
            if gone(*handle):
                log.emit("exited", pid=handle[0])
            else:
                still.append(handle)
        alive = still
        if alive:
            time.sleep(0.1)
    for pid, ticks, pidfd in alive:
        if pidfd is None and start_ticks_of(pid) != ticks:
            continue
        try:
            send_signal(pid, pidfd, 9)
            signalled.add(pid)
            log.emit("signalled", pid=pid, signal="SIGKILL", method=method)
        except (ProcessLookupError, OSError):
            pass
    deadline = time.time() + KILL_WAIT
    while alive and time.time() < deadline:
        alive = [h for h in alive if not gone(*h)]
        if alive:
            time.sleep(0.1)
    for _pid, _ticks, pidfd in handles:
        if pidfd is not None:
            os.close(pidfd)
    if handles:
        time.sleep(float(args.get("settle", 0.5)))
    apps = gpu_apps()
    held = gpu_held(gpus, [h[0] for h in handles], signalled, before, apps)
    log.emit(
        "done",
        remaining=[h[0] for h in alive],
        port_owners=port_owners(args["port"]) if args.get("port") else [],
        gpu_apps=apps,
        gpu=held,
    )
    return 0 if not alive and not (held or {}).get("held") else 1


def gpu_index_of_uuid():
    """{GPU uuid: index} from nvidia-smi, or None when it does not answer."""
    status, stdout, _ = nvidia_smi("--query-gpu=index,uuid", "--format=csv,noheader")
    if status != 0:
        return None
    found = {}
    for line in stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0].isdigit():
            found[parts[1]] = int(parts[0])
    return found


def uid_name_of(pid):
    for line in read_text("/proc/%d/status" % pid).splitlines():
        if line.startswith("Uid:"):
            return user_name(int(line.split()[1]))
    return None


def gpu_held(gpus, pids, signalled, before, after):
    """What holds memory on the service's GPUs once the kill is over, whoever it is (a
    process that escaped the tree holds it as surely as one that was signalled).

    The service's GPUs are its ``gpus:`` indexes; without them, the GPUs the run's
    processes held memory on just before the first signal. None when there is nothing to
    check (no gpus: and no nvidia-smi); ``checked`` false with the reason when it cannot be."""
    if after is None:
        if not gpus:
            return None
        return {"checked": False, "reason": "nvidia-smi did not answer on the host"}
    index_of = gpu_index_of_uuid()
    if not index_of:
        return {"checked": False, "reason": "nvidia-smi did not list the GPUs' uuids"}
    if gpus:
        scope, source = set(gpus), "gpus"
    else:
        scope = set(index_of.get(a["gpu_uuid"]) for a in before or [] if a["pid"] in pids)
        scope.discard(None)
        source = "run"
        if not scope:
            return (
                None
                if before is None
                else {
                    "checked": False,
                    "reason": "the service names no gpus: and nvidia-smi listed none of the "
                    "run's processes (inside a container it may show the host's pids)",
                }
            )
    held = []
    for app in after:
        index = index_of.get(app["gpu_uuid"])
        if index in scope and (app["used_mib"] or 0) > 0:
            held.append(
                {
                    "pid": app["pid"],
                    "used_mib": app["used_mib"],
                    "gpu": index,
                    "user": uid_name_of(app["pid"]),
                    "signalled": app["pid"] in signalled,
                }
            )
    return {"checked": True, "source": source, "gpus": sorted(scope), "held": held}


def kill_record(args):
    """The record of one kill (see KillLog), for a caller that lost the kill's channel."""
    path = kill_record_path(args)
    record = None
    if path is not None:
        try:
            with open(path) as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            record = None
    emit_line("record", path=path, record=record)
    return 0


def alive(args):
    ticks = start_ticks_of(args["pid"])
    emit_line("alive", alive=ticks is not None and ticks == args["start_ticks"])
    return 0


def private_folder(path):
    """Make the folder ``path`` and its missing parents, each one mode 0700 (babysit's
    records on a host are its user's alone)."""
    missing = []
    while path and not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path.rstrip(os.sep))
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except OSError as error:
            if error.errno != errno.EEXIST:
                raise


def append_private(path, text):
    """Append ``text`` to the file ``path``, mode 0600 (made so if an older babysit left
    it readable by others)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            try:
                os.fchmod(fd, 0o600)
            except OSError:
                pass
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data) :]
    finally:
        os.close(fd)


def rotate_log(path, keep):
    """Rename the log to ``<log>.<YYYYmmdd-HHMMSS>`` and keep the newest ``keep`` of those.

    A log path that is a symlink (or lies in a linked folder) names the file it
    resolves to: that file is rotated beside itself, and the link is kept, so the
    new run's log is again where the link points."""
    if not os.path.lexists(path):
        return None
    path = os.path.realpath(path)
    if not os.path.exists(path):
        return None  # a dangling link: nothing to rotate; the launch writes its target
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = "%s.%s" % (path, stamp)
    n = 1
    while os.path.lexists(target):
        target = "%s.%s-%d" % (path, stamp, n)
        n += 1
    os.rename(path, target)
    directory = os.path.dirname(path) or "."
    pattern = re.compile(re.escape(os.path.basename(path)) + r"\.\d{8}-\d{6}(-\d+)?$")
    rotated = sorted(name for name in os.listdir(directory) if pattern.match(name))
    for name in rotated[: max(0, len(rotated) - keep)]:
        os.unlink(os.path.join(directory, name))
    return target


def preflight(args):
    """Is the port free, and do other processes hold memory on the service's GPUs?"""
    port = args.get("port")
    emit_line(
        "preflight",
        port_owners=port_owners(port) if port else [],
        gpu_apps=gpu_apps(),
        gpus=gpu_uuids(args.get("gpus") or []),
    )
    return 0


def gpu_uuids(indexes):
    """{index as text: uuid} of the GPUs ``indexes`` (see gpu_index_of_uuid)."""
    if not indexes:
        return {}
    index_of = gpu_index_of_uuid() or {}
    return dict((str(index), uuid) for uuid, index in index_of.items() if index in indexes)


def launch(args):
    """Start the server in a session of its own, its output appended to a new log.

    The child writes one marker line, then execs the server, so the server's pid
    is the one recorded. The parent writes the run record and exits at once: the
    server keeps running when the channel (ssh, pct exec) closes.
    """
    log = args["log"]
    rotated = rotate_log(log, int(args.get("keep", 5))) if args.get("rotate", True) else None
    log_dir = os.path.dirname(log)
    if log_dir and not os.path.isdir(log_dir):
        os.makedirs(log_dir)
    log_fd = os.open(
        log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644
    )
    st = os.fstat(log_fd)
    offset = st.st_size
    # The env and the argv came on stdin: the server gets its environment from execvpe,
    # never from a command line. What is written down (the marker line, the run record)
    # is the argv with its secrets redacted, as babysit rendered it (``shown_argv``).
    env = dict(os.environ)
    env.update(args.get("env") or {})
    argv = args["argv"]
    shown = args["shown_argv"]
    cwd = args.get("cwd") or os.path.expanduser("~")
    err_read, err_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: becomes the server
        try:
            os.close(err_read)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.chdir(cwd)
            me = os.getpid()
            marker = "babysit run=%s pid=%d start=%s argv=%s\n" % (
                args["run_id"],
                me,
                time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                json.dumps(shown),
            )
            os.write(1, marker.encode("utf-8"))
            keep = {0, 1, 2, err_write}
            for fd in os.listdir("/proc/self/fd"):
                if int(fd) not in keep:
                    try:
                        os.close(int(fd))
                    except OSError:
                        pass
            import fcntl

            fcntl.fcntl(err_write, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
            os.execvpe(argv[0], argv, env)
        except BaseException as error:  # the child must never return to the agent's code
            try:
                os.write(err_write, ("%s: %s" % (argv[0], error)).encode("utf-8", "replace"))
            finally:
                os._exit(127)
    os.close(err_write)
    os.close(log_fd)
    failure = b""
    while True:
        chunk = os.read(err_read, 4096)
        if not chunk:
            break
        failure += chunk
    os.close(err_read)
    if failure:
        os.waitpid(pid, 0)
        emit_line("failed", message=failure.decode("utf-8", "replace"), rotated=rotated)
        return 1
    boot_id = read_text("/proc/sys/kernel/random/boot_id").strip()
    ticks = start_ticks_of(pid)
    record = {
        "run_id": args["run_id"],
        "boot_id": boot_id,
        "pid": pid,
        "start_ticks": ticks,
        "started_at": time.time(),
        "log_path": log,
        "dev": st.st_dev,
        "inode": st.st_ino,
        "launch_offset": offset,
        "argv": shown,
        "cwd": cwd,
        "env_keys": sorted((args.get("env") or {}).keys()),
        "who": args.get("who"),
    }
    record_dir = os.path.expanduser(args["record_dir"])
    private_folder(record_dir)
    append_private(os.path.join(record_dir, "runs.jsonl"), json.dumps(record) + "\n")
    emit_line("launched", rotated=rotated, **record)
    return 0


def serve_probes():
    """Answer probe requests, one JSON line each on stdin, with one JSON line each on
    stdout, until stdin closes. Each answer is a fresh look: nothing is kept between
    requests but the uid→name cache and nvidia-smi's last process list (reused only
    as gpu_readings allows). A request that fails is answered with ``{"error": ...}``
    and the agent waits for the next one."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0
        try:
            answer = probe(json.loads(line.decode("utf-8")))
        except Exception as error:
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        try:
            stdout.write(json.dumps(answer).encode("utf-8") + b"\n")
            stdout.flush()
        except OSError:  # the reader is gone
            return 0


def give_back_memory():
    """Return to the system what compiling this file took (about 3 MiB, glibc only):
    a long-lived agent should weigh no more than it needs."""
    try:
        c_library()[1].malloc_trim(0)
    except (OSError, AttributeError):
        pass


def say_started(nonce):
    """The first bytes of our output, so whoever reads it can skip what a login
    shell printed before we ran (see tui/remote/agentcall.py: start_mark)."""
    if nonce:
        os.write(1, b"\x1e" + AGENT_NAME.encode() + b":" + nonce.encode("ascii") + b"\n")


def main(argv):
    args = json.loads(argv[0])
    say_started(args.get("nonce"))
    mode = args.get("mode")
    if mode in ("serve-probes", None):
        give_back_memory()
    if mode == "probe":
        sys.stdout.write(json.dumps(probe(args)))
        sys.stdout.write("\n")
        return 0
    if mode == "serve-probes":
        return serve_probes()
    if mode in ACTIONS:
        return ACTIONS[mode](args)
    out = Output(sys.stdout.buffer)
    try:
        stdin_fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        stdin_fd = None
    agent = Agent(args, out, stdin_fd)
    try:
        agent.run()
    except Closed:
        pass
    except KeyboardInterrupt:
        pass
    return 0


ACTIONS = {
    "kill": kill,
    "kill-record": kill_record,
    "alive": alive,
    "launch": launch,
    "preflight": preflight,
}


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1:]))
