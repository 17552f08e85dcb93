"""A followed file cut under the follower: said in a frame, and the rest read from its copy."""

import os

from .locate import find_copy
from .protocol import FRAME_DATA, FRAME_TRUNCATED

#: Bytes read from a copy at a time.
COPY_CHUNK = 256 * 1024


def report_cut(
    out, followed, head, anchor, *, read, seen, new_size, regrown, away=False, reused=False
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
        out.frame(FRAME_TRUNCATED, **fields)
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
        out.frame(FRAME_TRUNCATED, **fields)
        pos = read
        while pos < st.st_size:
            data = os.pread(fd, min(COPY_CHUNK, st.st_size - pos), pos)
            if not data:
                break
            out.bytes_read += len(data)
            out.frame(FRAME_DATA, data, dev=st.st_dev, inode=st.st_ino, offset=pos, size=st.st_size)
            pos += len(data)
    finally:
        os.close(fd)
