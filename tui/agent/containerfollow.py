"""The follow mode's part for a container's log: where it is, and docker's rotation.

:class:`ContainerLog` belongs to one :class:`~follow.LogFollower` given
``container: {name, runtime}`` instead of a path. It asks the runtime where the
log is (a ``container`` frame says so, and why it cannot be read when it cannot:
babysit then follows ``docker logs``), asks again when the path goes missing
(the container removed and made again under its name), and reads every file
docker's rotation makes, in order, none lost nor read twice: at each look it holds
an fd on each file newer than the one being read (docker may delete a rotated file
a few milliseconds later, with ``max-file=2``), in the order they were written
(tui/agent/rotated.py), from a thread woken by the directory's changes; when the
path names another file, the one being read is read to its end, then each held
one, the last of which is the log at the path.
"""

import os
import select
import sys
import threading
import time

from .containerlog import RESOLVE_INTERVAL, container_log
from .followed import Followed
from .inotify import IN_CREATE, IN_MOVED_TO, Inotify
from .output import Closed
from .protocol import FRAME_CONTAINER
from .rotated import stable_listing

#: Seconds the path may be missing before the runtime is asked again (a rotation
#: leaves it missing for an instant between its rename and the new log's open).
MISSING_GRACE = 0.5
#: Seconds the rotation watch waits for the directory to change before looking anyway.
WATCH_POLL = 0.5
#: Seconds a thread runs before the other gets its turn (Python's default is 5 ms).
SWITCH_INTERVAL = 0.0002


class ContainerLog(object):
    """The container whose log ``follower`` follows, and what its runtime said last."""

    def __init__(self, follower, ref, runtime):
        self.follower = follower
        self.ref = ref
        self.runtime = runtime or "docker"
        self.asked_at = None
        self.said = None
        self.missing_since = None
        #: Files newer than the one being read, held open: ((dev, inode), Followed),
        #: oldest first; ``last`` is the newest file held or read. It is always open
        #: (held, or the one being read), so its inode number cannot be given to a
        #: file docker makes later: inode numbers of files closed and deleted are.
        self.newer = []
        self.last = None
        self.lock = threading.Lock()
        self.watcher = None

    def resolve(self):
        """Ask the runtime where the log is, and say it (once for the same answer).
        Whether there is a path to follow; ends the agent (Closed) when there is one
        it cannot read."""
        follower = self.follower
        self.asked_at = time.monotonic()
        fields = container_log(self.ref, self.runtime)
        said = tuple(fields[k] for k in ("id", "log_path", "readable", "problem", "why"))
        if said != self.said:
            self.said = said
            follower.out.frame(FRAME_CONTAINER, **fields)
        if fields["found"] and not fields["readable"]:
            follower.out.flush()
            raise Closed()
        if not fields["found"]:
            return False
        if fields["log_path"] != follower.path:
            follower.path = fields["log_path"]
            follower.watch_dir()
        return True

    def due(self):
        """Whether it is time to ask again (and, if so, asked): the path has been
        missing for a while, or no container was found."""
        now = time.monotonic()
        if self.missing_since is None:
            self.missing_since = now
        if now - self.missing_since < MISSING_GRACE:
            return False
        if self.asked_at is not None and now - self.asked_at < RESOLVE_INTERVAL:
            return False
        return self.resolve()

    def present(self):
        self.missing_since = None

    def reset(self):
        """The file being read was opened afresh (not one held): hold what comes after it."""
        with self.lock:
            for _, followed in self.newer:
                followed.close()
            self.newer = []
            cur = self.follower.cur
            self.last = (cur.dev, cur.inode) if cur is not None else None
        if self.watcher is None:
            # The watch must get its turn within a fraction of a rotation's life.
            sys.setswitchinterval(SWITCH_INTERVAL)
            self.watcher = threading.Thread(target=self.watch, name="rotation watch")
            self.watcher.daemon = True
            self.watcher.start()

    def hold_newer(self):
        """Hold every file listed after the newest one held or read (docker lists the
        newest files, so the ones not held yet come after it)."""
        with self.lock:
            path = self.follower.path
            if self.last is None or not path:
                return
            listing = stable_listing(path)
            after = self.last not in [(e[3], e[4]) for e in listing]  # not listed: deleted
            held = [key for key, _ in self.newer]
            for _, where, fd, dev, inode in listing:
                key = (dev, inode)
                if key == self.last:
                    after = True
                if not after or key == self.last or key in held:
                    os.close(fd)
                    continue
                self.newer.append((key, Followed(fd, where)))
                held.append(key)
                self.last = key

    def watch(self):
        """The rotation watch (a thread of its own, so that a follower busy writing
        frames still holds each new file the moment docker makes it)."""
        inotify = Inotify()
        watched = None
        while True:
            directory = os.path.dirname(self.follower.path or "") or None
            if directory != watched and directory is not None:
                inotify.watch("dir", directory, IN_CREATE | IN_MOVED_TO)
                watched = directory
            if inotify.fd >= 0:
                try:
                    select.select([inotify.fd], [], [], WATCH_POLL)
                except (InterruptedError, OSError, ValueError):
                    pass
                inotify.drain()
            else:
                time.sleep(WATCH_POLL / 10)
            self.hold_newer()

    def rotated(self):
        """The path names another file: read the one being read to its end, then each
        newer one held, oldest first; the last is the log at the path."""
        follower = self.follower
        self.hold_newer()
        while follower.pump(follower.cur):
            pass
        while True:
            with self.lock:
                if not self.newer:
                    return
                _, followed = self.newer.pop(0)
                more = bool(self.newer)
            follower.switch_to(followed, rotated=True)
            if more:
                while follower.pump(followed):
                    pass
