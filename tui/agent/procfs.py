"""What /proc tells of processes: their table, their open files and fds, their start."""

import os
import stat
import time

from .files import stat_or_none
from .users import user_name


def read_text(path, default=""):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return default


def boot_facts():
    """(boot id, boot time, clock ticks per second). The boot time is the wall clock
    less the time since boot read from CLOCK_BOOTTIME (to the microsecond, the clock
    /proc/PID/stat's start ticks count on): /proc/stat's btime is whole seconds, and
    /proc/uptime's hundredths move the boot time, and every start time with it, by
    up to a tick from one reading to the next (and lxcfs makes it the container's)."""
    boot_id = read_text("/proc/sys/kernel/random/boot_id").strip()
    return boot_id, time.time() - _since_boot(), os.sysconf("SC_CLK_TCK")


def _since_boot():
    clock = getattr(time, "CLOCK_BOOTTIME", None)  # Python 3.7 and later
    if clock is not None:
        try:
            return time.clock_gettime(clock)
        except OSError:
            pass
    return float(read_text("/proc/uptime", "0 0").split()[0])


def process_table():
    """pid -> facts, from /proc/PID/stat, status and cmdline (readable for every user)."""
    table = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        stat_text = read_text("/proc/%d/stat" % pid)
        if not stat_text:
            continue
        close = stat_text.rfind(")")
        fields = stat_text[close + 2 :].split()
        if len(fields) < 20:
            continue
        raw = b""
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                raw = handle.read()
        except OSError:
            pass
        uid = None
        # Kernel threads and zombies have no command line and can be no one's run:
        # their status (the most costly of the three files) is not read.
        for line in read_text("/proc/%d/status" % pid).splitlines() if raw else ():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                break
        table[pid] = {
            "pid": pid,
            "ppid": int(fields[1]),
            "pgrp": int(fields[2]),
            "start_ticks": int(fields[19]),
            "state": fields[0],
            "uid": uid,
            "comm": stat_text[stat_text.find("(") + 1 : close],
            "cmdline": [part.decode("utf-8", "replace") for part in raw.split(b"\0")[:-1]],
        }
    return table


def open_files(pid):
    """Regular files ``pid`` holds open, or None when we may not look."""
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    files = []
    for name in names:
        link = os.path.join(fd_dir, name)
        try:
            target = os.readlink(link)
        except OSError:
            continue
        if not target.startswith("/"):
            continue
        st = stat_or_none(link)
        if st is None or not stat.S_ISREG(st.st_mode):
            continue
        deleted = target.endswith(" (deleted)")
        files.append(
            {
                "fd": int(name),
                "path": target[: -len(" (deleted)")] if deleted else target,
                "dev": st.st_dev,
                "inode": st.st_ino,
                "deleted": deleted,
                "write": writes(pid, name),
            }
        )
    return files


def fd_links(pid):
    """[(fd, link target)] for every fd of ``pid`` (readlink only, no stat), or None."""
    fd_dir = "/proc/%d/fd" % pid
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return None
    links = []
    for name in names:
        try:
            links.append((name, os.readlink(os.path.join(fd_dir, name))))
        except OSError:
            continue
    return links


def writes(pid, fd):
    """Whether fd ``fd`` of ``pid`` is open for writing."""
    try:
        with open("/proc/%d/fdinfo/%s" % (pid, fd)) as info:
            for line in info:
                if line.startswith("flags:"):
                    return int(line.split()[1], 8) & 0o3 != 0
    except (OSError, ValueError):
        pass
    return False


def start_ticks_of(pid):
    text = read_text("/proc/%d/stat" % pid)
    if not text:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    if fields and fields[0] == "Z":
        return None  # a zombie is already dead; only its parent's wait is missing
    return int(fields[19]) if len(fields) > 19 else None


def uid_name_of(pid):
    for line in read_text("/proc/%d/status" % pid).splitlines():
        if line.startswith("Uid:"):
            return user_name(int(line.split()[1]))
    return None
