"""Where a container's log is, for the follow mode: its json-file, or why it cannot be read.

A container service's log is the runtime's json-file (``LogPath``). It is followed
as a file only when the log driver writes one (``json-file``) and this user may
read it; otherwise the ``container`` frame says why (``readable`` false), and
babysit follows ``docker logs`` instead (tui/remote/dockerlogs.py).
"""

import os
import time

from .container import container_facts
from .files import cannot_read, open_file

#: The log driver whose files are the json lines the follow mode reads.
JSON_FILE_DRIVER = "json-file"
#: Seconds between two questions to the runtime about the same container.
RESOLVE_INTERVAL = 2.0
#: How a run's start is shown: the host's own clock.
STARTED_FORMAT = "%H:%M:%S"


def container_log(ref, runtime):
    """The ``container`` frame's fields for container ``ref``: its id, its run's start,
    its log path, and whether that file can be followed here (``readable``, ``why``)."""
    facts = container_facts(ref, runtime)
    started = facts.get("started_at")
    fields = {
        "ref": ref,
        "runtime": runtime,
        "found": bool(facts.get("found")),
        "problem": facts.get("problem"),
        "id": facts.get("id") or "",
        "name": facts.get("name") or ref,
        "started_at": started,
        "started_local": (
            time.strftime(STARTED_FORMAT, time.localtime(started)) if started else None
        ),
        "running": bool(facts.get("running")),
        "log_driver": facts.get("log_driver") or "",
        "log_path": facts.get("log_path") or "",
        "readable": False,
        "why": None,
    }
    if not fields["found"]:
        return fields
    driver, path = fields["log_driver"], fields["log_path"]
    if driver != JSON_FILE_DRIVER:
        fields["why"] = "its log driver is %s, which writes no json-file babysit can read" % (
            driver or "not named"
        )
    elif not path:
        fields["why"] = "%s gives no log path for it" % runtime
    else:
        try:
            os.close(open_file(path))
        except FileNotFoundError:
            pass  # not written yet: followed as a log that appears
        except OSError as error:
            fields["why"] = "the json-file cannot be read by this user: %s" % cannot_read(
                path, error
            )
            return fields
        fields["readable"] = True
    return fields
