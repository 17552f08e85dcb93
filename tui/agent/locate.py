"""Finding a log's bytes again: its last lines, the same inode elsewhere, a rotated
copy of it, the fd a process writes it through."""

import os
import stat

from .files import open_file, stat_or_none
from .procfs import writes

# Files beside the log looked at for a rotated copy of it, at most.
MAX_COPY_CANDIDATES = 64
BACK_BLOCK = 64 * 1024


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
