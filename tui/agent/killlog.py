"""The steps of one kill, kept on the host whatever the channel does; the kill-record mode."""

import json
import os
import re
import time

from .output import emit_line
from .private import private_folder
from .protocol import ANSWER_RECORD, KILL_FINISHED, KILL_RUNNING

KILL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: How many kill records a service's folder keeps (the newest).
KILL_RECORDS_KEPT = 50


def kill_record_path(args):
    kill_id = str(args.get("kill_id") or "")
    if not KILL_ID.match(kill_id) or not args.get("record_dir"):
        return None
    return os.path.join(os.path.expanduser(args["record_dir"]), "kills", kill_id + ".json")


class KillLog(object):
    """The steps of one kill: to the caller while it listens (``out_fd``), and to the
    host's record at ``path``, rewritten whole at each step, whatever the channel does."""

    def __init__(self, path, header, out_fd=None):
        self.path = path
        self.out_fd = out_fd
        self.record = dict(header)
        self.record.update(state=KILL_RUNNING, started_at=time.time(), events=[])
        self.saved = path is not None
        if path is not None:
            prune_kill_records(os.path.dirname(path))

    def emit(self, kind, **fields):
        fields["t"] = kind
        fields["seq"] = len(self.record["events"])
        self.record["events"].append(fields)
        self.save()
        self.send((json.dumps(fields) + "\n").encode("utf-8"))

    def finish(self, status):
        self.record.update(state=KILL_FINISHED, status=status, finished_at=time.time())
        self.save()

    def save(self):
        if not self.saved:
            return
        try:
            private_folder(os.path.dirname(self.path))
            part = self.path + ".part"
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(json.dumps(self.record))
            os.rename(part, self.path)
        except OSError:
            self.saved = False  # the kill goes on; the caller is told there is no record

    def send(self, data):
        """To the caller, never blocking: the first write that fails (the front is gone,
        or the channel stalls) ends the sending; the record has every step."""
        if self.out_fd is None:
            return
        try:
            if os.write(self.out_fd, data) == len(data):
                return
        except OSError:
            pass
        os.close(self.out_fd)
        self.out_fd = None


def prune_kill_records(folder):
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
    except OSError:
        return
    paths = [os.path.join(folder, n) for n in names]
    paths.sort(key=lambda p: os.stat(p).st_mtime if os.path.exists(p) else 0)
    for path in paths[: max(0, len(paths) - (KILL_RECORDS_KEPT - 1))]:
        try:
            os.unlink(path)
        except OSError:
            pass


def kill_record(args):
    """The record of one kill (see KillLog), for a caller that lost the kill's channel."""
    path = kill_record_path(args)
    record = None
    if path is not None:
        try:
            with open(path) as handle:
                record = json.load(handle)
        except (OSError, ValueError):
            record = None
    emit_line(ANSWER_RECORD, path=path, record=record)
    return 0
