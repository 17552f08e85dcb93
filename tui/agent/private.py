"""babysit's records on a host: folders and files its user's alone."""

import errno
import os


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
