"""A run's startup phases in its log, and the service's run history on the host.

The request's service carries ``phases``: [{"name", "lines", "progress"}], in the
engine's order. :class:`PhaseScan` is fed the bytes readiness reads from the run's
anchor to its ready line (the same pass, see readiness.scan_for) and finds the first
line of each phase (any of its ``lines``, as a substring) and the last ``progress``
figures (a regex whose two groups are done and total) within each phase's span, up
to the next phase's line in the log. A tqdm bar ends its updates with ``\\r``: a line
ends there too.

``<record_dir>/startups.json`` (protocol.STARTUPS_FILE) keeps the service's last
STARTUPS_KEPT runs, the newest last: when each began, when each phase began, and
its ready time. :func:`startup_history` updates the record of the one run that
writes the service's log, only when it changed, and answers with the records.
"""

import errno
import json
import os
import re
import time

from .private import private_folder
from .protocol import STARTUPS_FILE, STARTUPS_KEPT

#: Bytes before a line searched for the last stamped line (the time of an unstamped one).
LOOKBACK = 64 * 1024
#: Bytes a progress match may reach past the span it starts in.
MATCH_REACH = 4096
#: Bytes of startups.json read at most: a larger file is not the agent's.
HISTORY_READ = 256 * 1024
#: How a phase's time is known: its line's stamp, the last stamped line's before it,
#: or when the run history first saw it.
DATED_STAMP = "stamp"
DATED_BEFORE = "before"
DATED_SEEN = "seen"
#: Compiled phase lists kept (one per distinct list a request carries).
_PHASE_LISTS_KEPT = 64
_phase_lists = {}
_PHASE_LINE_END = re.compile(b"[\r\n]")


def compile_phases(phases):
    """[(name, [line bytes], [progress regexes])] of the request's phases, one entry a
    name (a generic server's request carries every engine's phases, several of one
    name: their lines and regexes are joined); a phase without a name or lines is left
    out, a progress regex that does not compile is none. Cached."""
    try:
        key = json.dumps(phases, sort_keys=True)
    except (TypeError, ValueError):
        return []
    found = _phase_lists.get(key)
    if found is None:
        by_name = {}
        for phase in phases if isinstance(phases, list) else ():
            if not isinstance(phase, dict) or not isinstance(phase.get("name"), str):
                continue
            lines = [t.encode("utf-8", "surrogateescape") for t in phase.get("lines") or ()]
            lines = [t for t in lines if t]
            if not lines:
                continue
            name = phase["name"]
            if name not in by_name:
                by_name[name] = (name, [], [])
            by_name[name][1].extend(t for t in lines if t not in by_name[name][1])
            pattern = _progress_regex(phase.get("progress"))
            if pattern is not None:
                by_name[name][2].append(pattern)
        found = list(by_name.values())
        if len(_phase_lists) >= _PHASE_LISTS_KEPT:
            _phase_lists.clear()
        _phase_lists[key] = found
    return found


def _progress_regex(source):
    if not isinstance(source, str) or not source:
        return None
    try:
        pattern = re.compile(source.encode("utf-8", "surrogateescape"))
    except (re.error, ValueError, OverflowError):
        return None
    return pattern if pattern.groups >= 2 else None


def phase_line_start(data, index):
    """Where the line holding ``data[index]`` starts in ``data`` (after a ``\\n`` or a
    ``\\r``), or -1 when it starts before ``data``."""
    start = max(data.rfind(b"\n", 0, index), data.rfind(b"\r", 0, index))
    return start + 1 if start >= 0 else -1


class PhaseScan(object):
    """The phases of one run, fed its bytes in order from ``anchor``: :meth:`feed` each
    block, then read :meth:`marks` and :meth:`stamp_behind`. ``dater`` dates a line."""

    def __init__(self, phases, dater, anchor):
        self.phases = phases
        self.dater = dater
        self.anchor = anchor
        #: bytes fed so far end here; ``behind`` holds the last LOOKBACK of them
        self.done_to = anchor
        self.behind = b""
        #: phase index -> its mark (``offset``: its line's start)
        self.found = {}

    def feed(self, block, base, upto):
        """Look at ``block[:upto]``, the bytes at ``base``.. that follow those fed before
        (a phase line or a progress figure that starts there may run past ``upto``)."""
        if upto <= 0:
            return
        for index, (_, lines, _) in enumerate(self.phases):
            if index in self.found:
                continue
            hits = [h for h in (block.find(t, 0, upto + len(t) - 1) for t in lines) if h >= 0]
            if hits:
                self.found[index] = self._mark(index, block, base, min(hits))
        self._progress(block, base, upto)
        if upto >= LOOKBACK:
            self.behind = block[upto - LOOKBACK : upto]
        else:
            self.behind = (self.behind + block[:upto])[-LOOKBACK:]
        self.done_to = base + upto

    def _mark(self, index, block, base, hit):
        start = phase_line_start(block, hit)
        if start >= 0:
            offset, head, before = base + start, b"", block[:start]
        else:
            back = phase_line_start(self.behind, len(self.behind))
            back = max(back, 0)
            offset, head, before = self.done_to - len(self.behind) + back, self.behind[back:], b""
            start = 0
        end = _PHASE_LINE_END.search(block, hit)
        line = head + block[start : end.start() if end else len(block)]
        at, dated = self.dater.time(line), DATED_STAMP
        if at is None:
            at = self.stamp_behind(before)
            dated = DATED_BEFORE if at is not None else DATED_SEEN
        return {
            "name": self.phases[index][0],
            "offset": offset,
            "at": at,
            "dated": dated,
            "done": None,
            "total": None,
        }

    def _spans(self):
        """[(start, end or None, mark)] of the phases found, in log order."""
        marks = sorted(self.found.values(), key=lambda m: m["offset"])
        return [
            (m["offset"], marks[i + 1]["offset"] if i + 1 < len(marks) else None, m)
            for i, m in enumerate(marks)
        ]

    def _progress(self, block, base, upto):
        """The last progress figures of each phase within ``block[:upto]``."""
        patterns = dict((self.phases[i][0], self.phases[i][2]) for i in self.found)
        for start, end, mark in self._spans():
            first = max(0, start - base)
            last = upto if end is None else min(upto, end - base)
            if last <= first:
                continue
            match = None
            for pattern in patterns[mark["name"]]:
                found = _last_match(pattern, block, first, last)
                if found is not None and (match is None or found.start() > match.start()):
                    match = found
            if match is not None:
                try:
                    mark["done"], mark["total"] = int(match.group(1)), int(match.group(2))
                except (TypeError, ValueError):
                    continue

    def marks(self):
        """``ready.phases`` of the answer: the marks in log order."""
        return [dict(mark) for _, _, mark in self._spans()]

    def stamp_behind(self, more=b""):
        """The time of the last stamped line in the bytes fed (and ``more``, the bytes
        that follow them), at most LOOKBACK back and never before the anchor; None."""
        more = more[-LOOKBACK:]
        data = (self.behind + more)[-LOOKBACK:]
        whole = len(data) == len(self.behind) + len(more) and (
            self.done_to - len(self.behind) == self.anchor
        )
        end = len(data)
        while end > 0:
            start = phase_line_start(data, end)
            if start < 0 and not whole:
                break  # the end of a line that starts further back
            at = self.dater.time(data[max(start, 0) : end])
            if at is not None:
                return at
            end = max(start, 0) - 1
        return None


def _last_match(pattern, block, first, last):
    """The last match of ``pattern`` that starts in ``block[first:last]`` (it may reach
    MATCH_REACH bytes past it), or None."""
    match = None
    for found in pattern.finditer(block, first, min(len(block), last + MATCH_REACH)):
        if found.start() >= last:
            break
        match = found
    return match


# ------------------------------------------------------------------ the run history


def read_history(path):
    """(the records of ``path``, the problem in plain words or None). A missing file
    holds none; a garbled one (or one larger than HISTORY_READ) is said and read as none."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(HISTORY_READ + 1)
    except OSError as error:
        if error.errno == errno.ENOENT:
            return [], None
        return None, "cannot read %s: %s" % (path, error.strerror or error)
    if len(data) > HISTORY_READ:
        return [], "%s is larger than %d KiB: not read" % (path, HISTORY_READ // 1024)
    try:
        runs = json.loads(data.decode("utf-8"))["runs"]
        if not isinstance(runs, list):
            raise ValueError("runs is not a list")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return [], "%s is garbled: not read" % path
    return [r for r in runs if _is_record(r)], None


def _is_record(record):
    return (
        isinstance(record, dict)
        and isinstance(record.get("pid"), int)
        and isinstance(record.get("start_ticks"), int)
        and isinstance(record.get("started"), (int, float))
        and isinstance(record.get("phases", []), list)
    )


def write_history(path, records):
    """Write ``records`` to ``path`` (mode 0600, through a temporary name in the same
    folder, made 0700 if missing); the problem in plain words, or None."""
    folder = os.path.dirname(path)
    temporary = "%s.%d.tmp" % (path, os.getpid())
    try:
        private_folder(folder)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            data = json.dumps({"runs": records}).encode("utf-8")
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)
        os.rename(temporary, path)
    except OSError as error:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        where = error.filename or path
        return "cannot write %s: %s" % (where, error.strerror or error)
    return None


def run_record(run, boot_id, own, now):
    """The history record of ``run`` (its ``ready`` as readiness answered), ``own`` its
    record as kept (or None). A phase or ready line with no time of its own is given
    the one its record kept, else ``now``; the marks of ``run`` get those times too."""
    ready = run["ready"]
    kept = dict((p.get("name"), p.get("at")) for p in (own or {}).get("phases") or ())
    phases = []
    for mark in ready.get("phases") or ():
        if mark["at"] is None:
            mark["at"] = kept.get(mark["name"]) or now
        phases.append({"name": mark["name"], "at": mark["at"]})
    ready_at = None
    if ready.get("seen"):
        ready_at = ready.get("at") or ready.get("at_before") or (own or {}).get("ready_at") or now
    return {
        "boot_id": boot_id,
        "pid": run["pid"],
        "start_ticks": run["start_ticks"],
        # the start time is known to 1/100 s, read anew each probe: the kept one stays
        "started": (own or {}).get("started", run["start_time"]),
        "phases": phases,
        "ready_at": ready_at,
    }


def startup_history(service, boot_id, runs, now=None):
    """``{"startups", "startups_problem"}`` of a service entry: the run history in the
    service's ``record_dir``, with the record of the one run of ``runs`` that writes
    its log from an anchor (none when several do) brought up to date and written
    when it changed."""
    record_dir = service.get("record_dir")
    if not record_dir:
        return {"startups": [], "startups_problem": None}
    path = os.path.join(os.path.expanduser(record_dir), STARTUPS_FILE)
    records, problem = read_history(path)
    writers = [r for r in runs if (r.get("ready") or {}).get("anchor") is not None]
    if len(writers) != 1:
        return {"startups": records or [], "startups_problem": problem}
    run = writers[0]
    identity = (boot_id, run["pid"], run["start_ticks"])
    keep = records or []
    own = next((r for r in keep if _record_identity(r) == identity), None)
    fresh = run_record(run, boot_id, own, time.time() if now is None else now)
    if fresh == own:
        return {"startups": keep, "startups_problem": problem}
    if own is not None:
        keep = [fresh if r is own else r for r in keep]
    else:
        keep = [*keep, fresh][-STARTUPS_KEPT:]
    if records is not None:  # a file that could not be read is not written over
        problem = write_history(path, keep) or problem
    return {"startups": keep, "startups_problem": problem}


def _record_identity(record):
    return (record.get("boot_id"), record.get("pid"), record.get("start_ticks"))
