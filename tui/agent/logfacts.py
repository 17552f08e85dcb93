"""A log's identity, size, first and last stamps, and its tail."""

import os
import stat

from .files import NotRegular, cannot_read, open_file, stat_or_none
from .logtime import Dater

LOG_HEAD = 4096
LOG_TAIL = 8192


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


def log_facts(path, tail_bytes=0, stamps=()):
    """The log's identity, size and first and last stamps, from an fd on it (see
    open_file), its lines dated by ``stamps`` (see logtime). When it cannot be read,
    ``problem`` says why in plain words; a regular file we may not read still has what
    stat tells of it."""
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
    dater = Dater(stamps, st.st_mtime)
    facts["first_ts"] = dater.first(head)
    facts["last_ts"] = dater.last(tail)
    return facts
