"""A log file the follower has open."""

import os


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
