"""inotify, for waking on a log's changes instead of polling."""

import os

from .clib import c_library

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


class Inotify(object):
    """inotify through ctypes; every method is a no-op where the kernel or libc lacks it."""

    def __init__(self):
        self.fd = -1
        self.watches = {}
        try:
            ctypes, libc = c_library()
            self._add = libc.inotify_add_watch
            self._add.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            self._rm = libc.inotify_rm_watch
            self.fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        except (OSError, AttributeError):
            self.fd = -1

    def watch(self, key, path, mask):
        if self.fd < 0:
            return
        self.unwatch(key)
        wd = self._add(self.fd, os.fsencode(path), mask)
        if wd >= 0:
            self.watches[key] = wd

    def unwatch(self, key):
        wd = self.watches.pop(key, None)
        if wd is not None and wd not in self.watches.values():
            self._rm(self.fd, wd)

    def drain(self):
        if self.fd < 0:
            return
        while True:
            try:
                if not os.read(self.fd, 65536):
                    return
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
