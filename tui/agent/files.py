"""Opening a log: only a regular file is ever read, and what stops it is said in plain words."""

import os
import stat

from .users import user_name


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
