"""The launch mode: start the server in a session of its own, and write its run record."""

import json
import os
import re
import time

from .output import emit_line
from .private import append_private, private_folder
from .procfs import read_text, start_ticks_of
from .protocol import ANSWER_FAILED, ANSWER_LAUNCHED


def rotate_log(path, keep):
    """Rename the log to ``<log>.<YYYYmmdd-HHMMSS>`` and keep the newest ``keep`` of those.

    A log path that is a symlink (or lies in a linked folder) names the file it
    resolves to: that file is rotated beside itself, and the link is kept, so the
    new run's log is again where the link points."""
    if not os.path.lexists(path):
        return None
    path = os.path.realpath(path)
    if not os.path.exists(path):
        return None  # a dangling link: nothing to rotate; the launch writes its target
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = "%s.%s" % (path, stamp)
    n = 1
    while os.path.lexists(target):
        target = "%s.%s-%d" % (path, stamp, n)
        n += 1
    os.rename(path, target)
    directory = os.path.dirname(path) or "."
    pattern = re.compile(re.escape(os.path.basename(path)) + r"\.\d{8}-\d{6}(-\d+)?$")
    rotated = sorted(name for name in os.listdir(directory) if pattern.match(name))
    for name in rotated[: max(0, len(rotated) - keep)]:
        os.unlink(os.path.join(directory, name))
    return target


def launch(args):
    """Start the server in a session of its own, its output appended to a new log.

    The child writes one marker line, then execs the server, so the server's pid
    is the one recorded. The parent writes the run record and exits at once: the
    server keeps running when the channel (ssh, pct exec) closes.
    """
    log = os.path.expanduser(args["log"])
    rotated = rotate_log(log, int(args.get("keep", 5))) if args.get("rotate", True) else None
    log_dir = os.path.dirname(log)
    if log_dir and not os.path.isdir(log_dir):
        os.makedirs(log_dir)
    log_fd = os.open(
        log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | getattr(os, "O_CLOEXEC", 0), 0o644
    )
    st = os.fstat(log_fd)
    offset = st.st_size
    # The env and the argv came on stdin: the server gets its environment from execvpe,
    # never from a command line. What is written down (the marker line, the run record)
    # is the argv with its secrets redacted, as babysit rendered it (``shown_argv``).
    env = dict(os.environ)
    env.update(args.get("env") or {})
    argv = args["argv"]
    shown = args["shown_argv"]
    cwd = args.get("cwd") or os.path.expanduser("~")
    err_read, err_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: becomes the server
        try:
            os.close(err_read)
            os.setsid()
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.dup2(log_fd, 1)
            os.dup2(log_fd, 2)
            os.chdir(cwd)
            me = os.getpid()
            marker = "babysit run=%s pid=%d start=%s argv=%s\n" % (
                args["run_id"],
                me,
                time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                json.dumps(shown),
            )
            os.write(1, marker.encode("utf-8"))
            keep = {0, 1, 2, err_write}
            for fd in os.listdir("/proc/self/fd"):
                if int(fd) not in keep:
                    try:
                        os.close(int(fd))
                    except OSError:
                        pass
            import fcntl

            fcntl.fcntl(err_write, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
            os.execvpe(argv[0], argv, env)
        except BaseException as error:  # the child must never return to the agent's code
            try:
                os.write(err_write, ("%s: %s" % (argv[0], error)).encode("utf-8", "replace"))
            finally:
                os._exit(127)
    os.close(err_write)
    os.close(log_fd)
    failure = b""
    while True:
        chunk = os.read(err_read, 4096)
        if not chunk:
            break
        failure += chunk
    os.close(err_read)
    if failure:
        os.waitpid(pid, 0)
        emit_line(ANSWER_FAILED, message=failure.decode("utf-8", "replace"), rotated=rotated)
        return 1
    boot_id = read_text("/proc/sys/kernel/random/boot_id").strip()
    ticks = start_ticks_of(pid)
    record = {
        "run_id": args["run_id"],
        "boot_id": boot_id,
        "pid": pid,
        "start_ticks": ticks,
        "started_at": time.time(),
        "log_path": log,
        "dev": st.st_dev,
        "inode": st.st_ino,
        "launch_offset": offset,
        "argv": shown,
        "cwd": cwd,
        "env_keys": sorted((args.get("env") or {}).keys()),
        "who": args.get("who"),
    }
    record_dir = os.path.expanduser(args["record_dir"])
    private_folder(record_dir)
    append_private(os.path.join(record_dir, "runs.jsonl"), json.dumps(record) + "\n")
    emit_line(ANSWER_LAUNCHED, rotated=rotated, **record)
    return 0
