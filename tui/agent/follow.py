"""Following one log file byte by byte: the follow mode."""

import os
import select
import sys
import time

from .channel import watch_channel
from .containerfollow import ContainerLog
from .cut import report_cut
from .files import NotRegular, cannot_read, file_kind, open_file, stat_or_none
from .followed import Followed
from .inotify import (
    IN_ATTRIB,
    IN_CREATE,
    IN_DELETE,
    IN_DELETE_SELF,
    IN_MODIFY,
    IN_MOVE_SELF,
    IN_MOVED_FROM,
    IN_MOVED_TO,
    Inotify,
)
from .locate import find_inode, tail_offset, writer_fd
from .output import Closed, Output, hexlify, unhexlify
from .protocol import (
    FRAME_APPEARED,
    FRAME_DATA,
    FRAME_DELETED,
    FRAME_EOF,
    FRAME_ERROR,
    FRAME_LOST,
    FRAME_MISSING,
    FRAME_OPENED,
    FRAME_REPLACED,
    FRAME_RESUME,
    FRAME_WRITER,
    FRAME_WRITER_GONE,
    OLD_DELETED,
    OLD_RENAMED,
)

CHUNK = 256 * 1024
FINGERPRINT = 64
MAX_READ_PER_ROUND = 4 * 1024 * 1024
ACTIVE_POLL = 0.1
IDLE_POLL = 1.0
POLL_BACKOFF_LIMIT = 0.5
# After reading, wait this long before reading again, so a busy log is read in
# batches (fewer wakeups on both ends) at the cost of a few ms of latency.
COALESCE = 0.01
# A container's log is looked at sooner: docker may delete a rotated file a few ms
# after renaming it (containerfollow.py holds it open first).
ROTATION_COALESCE = 0.002


class LogFollower(object):
    """One log file (or the file a process writes) followed until the channel closes,
    or, without ``follow``, read to its end."""

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
        container = args.get("container")
        self.container = (
            ContainerLog(self, container.get("name"), container.get("runtime"))
            if container
            else None
        )

    # ------------------------------------------------------------------ start

    def start(self):
        start = self.args.get("start") or {"tail": 10}
        if self.container is not None and not self.container.resolve():
            return  # no such container yet: asked again while following
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

    def set_current(self, followed, start_offset, read_back=0, held=False):
        """Read ``followed`` from ``start_offset``; ``held``: a container's newer file."""
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
            FRAME_OPENED,
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
        if self.container is not None and not held:
            self.container.reset()

    def open_path(self, start):
        """Open the file at the path and start reading it; if it cannot be, say why (once
        for the same reason) and leave ``cur`` empty, to be tried again."""
        try:
            fd = open_file(self.path)
        except OSError as error:
            if isinstance(error, FileNotFoundError):
                if self.refused != FRAME_MISSING:
                    self.out.frame(FRAME_MISSING, path=self.path)
                self.refused = FRAME_MISSING
                return
            message = cannot_read(self.path, error)
            if self.refused != message:
                fields = {"path": self.path, "message": message}
                if isinstance(error, NotRegular):
                    fields["file_type"] = file_kind(error.mode)
                self.out.frame(FRAME_ERROR, **fields)
            self.refused = message
            return
        if self.refused is not None:
            self.out.frame(FRAME_APPEARED, path=self.path)
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
            FRAME_RESUME, dev=dev, inode=inode, offset=offset, held=False, checked=True, why=why
        )
        self.out.frame(FRAME_LOST, dev=dev, inode=inode, offset=offset)
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
            FRAME_RESUME,
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
        report_cut(
            self.out,
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
                FRAME_ERROR,
                message="pid %d has no regular file open%s"
                % (self.pid, " at %s" % self.path if self.path else ""),
            )
            raise Closed() from None
        fd_num, fd_path, deleted, matches = found
        self.out.frame(
            FRAME_WRITER,
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
                FRAME_ERROR,
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
                FRAME_DATA,
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
        report_cut(
            self.out,
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

    def check_path(self):
        """Notice the path vanishing, appearing, or naming another file."""
        if self.pid is not None:
            if not self.writer_gone_said and not os.path.exists("/proc/%d" % self.pid):
                self.out.frame(FRAME_WRITER_GONE, pid=self.pid)
                self.writer_gone_said = True
            return
        if self.cur is None:
            if self.container is None or self.container.due():
                self.open_path({"from_start": True})
            return
        st = stat_or_none(self.path)
        cur = self.cur
        if st is None and self.container is not None:
            if not self.container.due():
                return  # a rotation's instant, or the container is gone: asked again soon
            st = stat_or_none(self.path)
        if st is None:
            if not cur.deleted_said:
                cur.deleted_said = True
                links = os.fstat(cur.fd).st_nlink
                self.out.frame(FRAME_DELETED, dev=cur.dev, inode=cur.inode, links=links)
            return
        if self.container is not None:
            self.container.present()
        if (st.st_dev, st.st_ino) == (cur.dev, cur.inode):
            return
        if self.container is not None:
            self.container.rotated()
            return
        # The path names another file now: finish the old one first.
        self.pump(cur)
        self.said_replaced(cur, st.st_dev, st.st_ino)
        for old in self.previous:
            old.close()
        self.previous = [cur]
        self.cur = None
        self.open_path({"from_start": True})

    def said_replaced(self, cur, new_dev, new_inode, **more):
        """The replaced frame: ``cur`` (read to its end) leaves for file (dev, inode)."""
        links = os.fstat(cur.fd).st_nlink
        self.out.frame(
            FRAME_REPLACED,
            old_dev=cur.dev,
            old_inode=cur.inode,
            new_dev=new_dev,
            new_inode=new_inode,
            old_state=OLD_DELETED if links == 0 else OLD_RENAMED,
            **more,
        )

    def switch_to(self, followed, rotated=False):
        """Leave the file being read (read to its end) for ``followed``, from its start."""
        cur = self.cur
        self.said_replaced(
            cur, followed.dev, followed.inode, new_path=followed.path, rotated=rotated
        )
        cur.close()
        self.set_current(followed, 0, held=True)

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
            if self.container is not None:
                self.container.hold_newer()
            if self.cur is not None:
                moved = self.pump(self.cur)
            for old in self.previous:
                moved = self.pump(old) or moved
            if not self.follow and self.cur is not None and not moved:
                self.out.frame(
                    FRAME_EOF,
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
                time.sleep(COALESCE if self.container is None else ROTATION_COALESCE)
                self.inotify.drain()
            elif self.inotify.fd >= 0:
                self.wait(IDLE_POLL)  # inotify wakes us; this is only a safety net
            else:
                self.wait(idle)
                idle = min(idle * 1.5, POLL_BACKOFF_LIMIT)


def follow(args):
    """The follow mode: frames on stdout until the channel closes (see LogFollower)."""
    try:
        stdin_fd = sys.stdin.fileno()
    except (AttributeError, ValueError, OSError):
        stdin_fd = None
    follower = LogFollower(args, Output(sys.stdout.buffer), stdin_fd)
    try:
        follower.run()
    except Closed:
        pass
    except KeyboardInterrupt:
        pass
    return 0
