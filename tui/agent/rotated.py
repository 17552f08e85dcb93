"""A docker json-file log's rotated files: ``<log>.1`` (the newest), ``<log>.2``, ….

Docker rotates its json-file (``max-size``/``max-file``) by deleting the oldest
file, renaming each ``.N`` to ``.N+1`` and the log to ``.1``, then opening a new
log; a file is never written again once renamed. So the files listed at one
instant are the newest ones, oldest first from the highest number to the log
itself. :func:`stable_listing` opens them all in one consistent listing (taken
until two in a row agree, since a rotation may run meanwhile); an fd held keeps a
file readable after docker deletes it.
"""

import os

from .files import open_file

#: Rotated files looked at, at most (``max-file`` beyond that loses the oldest).
MAX_ROTATED = 100
#: Listings taken, at most, to find two in a row that agree.
LISTING_TRIES = 5


def rotated_name(path, number):
    return path if number == 0 else "%s.%d" % (path, number)


def _listing(path):
    """[(number, where, fd, dev, inode)] of the log (number 0) and its rotated files,
    oldest first."""
    found = []
    for number in range(MAX_ROTATED + 1):
        where = rotated_name(path, number)
        try:
            fd = open_file(where)
        except OSError:
            if number == 0:
                continue  # between a rename and the new log's open
            break
        st = os.fstat(fd)
        found.append((number, where, fd, st.st_dev, st.st_ino))
    return found[::-1]


def _close(listing):
    for entry in listing:
        try:
            os.close(entry[2])
        except OSError:
            pass


def stable_listing(path):
    """A listing of the log's files that two looks in a row agree on (the last one
    taken when they never do)."""
    last = None
    for _ in range(LISTING_TRIES):
        now = _listing(path)
        if last is not None:
            same = [e[:2] + e[3:] for e in now] == [e[:2] + e[3:] for e in last]
            _close(last)
            if same:
                return now
        last = now
    return last or []
