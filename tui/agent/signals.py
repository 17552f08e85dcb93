"""Signalling a process through a pidfd, so a check and the signal cannot race with
pid reuse; where the kernel has none, os.kill right after the check."""

import os
import select

from .clib import c_library
from .procfs import start_ticks_of

SYS_PIDFD_OPEN = 434
SYS_PIDFD_SEND_SIGNAL = 424


def pidfd_open(pid):
    """A pidfd for ``pid``, or None where the kernel (or Python) has none."""
    if hasattr(os, "pidfd_open"):
        try:
            return os.pidfd_open(pid)
        except OSError as error:
            if error.errno == 3:  # ESRCH: gone
                raise
            return None
    try:
        ctypes, libc = c_library()
        fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    except (OSError, AttributeError):
        return None
    if fd < 0:
        if ctypes.get_errno() == 3:
            raise ProcessLookupError(pid)
        return None
    return fd


def send_signal(pid, pidfd, signum):
    if pidfd is None:
        os.kill(pid, signum)
        return
    import signal as signal_module

    if hasattr(signal_module, "pidfd_send_signal"):
        signal_module.pidfd_send_signal(pidfd, signum)
        return
    ctypes, libc = c_library()
    if libc.syscall(SYS_PIDFD_SEND_SIGNAL, pidfd, signum, None, 0) != 0:
        raise OSError(ctypes.get_errno(), "pidfd_send_signal failed")


def gone(pid, ticks, pidfd):
    if pidfd is not None:
        ready, _, _ = select.select([pidfd], [], [], 0)
        if ready:
            return True
    return start_ticks_of(pid) != ticks
