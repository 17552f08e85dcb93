"""Line output shared by every thread of a simulated server.

Each call writes complete lines with ``os.write`` on the raw descriptor, so
nothing sits in a Python buffer: whoever tails the redirected file sees a line
as soon as the server "logs" it, and lines from threads never interleave.
"""

from __future__ import annotations

import errno
import os
import threading

STDOUT = 1
STDERR = 2


class Output:
    """Writes text to fd 1 or 2 under one lock.

    Invariant: a call either writes all of its bytes or marks that descriptor
    broken (reader gone, EPIPE) and drops all later text for it, like a server
    whose log pipe was closed keeps serving.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._broken: set[int] = set()

    def write(self, text: str, fd: int = STDERR) -> None:
        data = text.encode("utf-8", "replace")
        with self._lock:
            if fd in self._broken:
                return
            view = memoryview(data)
            while view:
                try:
                    written = os.write(fd, view)
                except InterruptedError:
                    continue
                except OSError as error:
                    if error.errno in (errno.EPIPE, errno.EBADF, errno.EIO):
                        self._broken.add(fd)
                        return
                    raise
                view = view[written:]

    def line(self, text: str, fd: int = STDERR) -> None:
        """Write ``text`` and a newline."""
        self.write(text + "\n", fd)
