"""A container's json-file log: where a run's records begin, and what they say.

Docker's json-file driver writes one JSON record a line, ``{"log": TEXT,
"stream": "stdout"|"stderr", "time": RFC3339}``, ``time`` always last, and
escapes ``TEXT`` as Go does: ``"`` and ``\\`` with a backslash, control characters
(``\\n``, ``\\r``, ``\\u0009``…), ``<`` ``>`` ``&`` as ``\\u003c`` ``\\u003e``
``\\u0026``, U+2028 and U+2029, and invalid UTF-8 as ``\\ufffd``. A restarted
container keeps its file, so the lines of earlier runs lie above this run's; a
run's first record is found by ``time``, reading back from the end.

Needles (ready lines, args heads) are looked for in the raw bytes by their longest
piece that Go writes unchanged, and each hit is confirmed in the record's decoded
``log``: a needle is never matched across the escaping nor in another field.
"""

import json
import os
import re

from .container import docker_time
from .files import cannot_read, open_file
from .readiness import (
    ARGS_DUMP_BYTES,
    ARGS_DUMP_LINES,
    ARGS_SCAN,
    READY_SCAN,
    args_heads_of,
    lines_back,
    lines_in,
)

#: Bytes of one record kept whole. Docker cuts a message at 16 KiB, so a record is at
#: most about six times that once escaped; a longer line is read cut, and undated.
RECORD_KEEP = 256 * 1024
#: Bytes read back from the end, record by record, looking for the run's first one
#: (a run that has just started, the case a restart makes, is found in them); past
#: them, the first record is found by a binary search on the records' times, which
#: reads a few blocks however long the run.
JSON_BACK_SCAN = 1024 * 1024
#: A binary search stops once its span is this small, and reads the rest line by line.
JSON_BISECT_SPAN = 64 * 1024
#: Records tried past an undated one in a binary search's step.
JSON_BISECT_TRIES = 16
#: A run's first record written later than this after its start: the file lost the
#: run's first lines (rotated or truncated since). A server in a container may print
#: nothing while its imports load from a cold cache, so this is more than a plain
#: log's first stamp is allowed (readiness.FRESH_STAMP).
JSON_FRESH = 60.0
_TIME_AT_END = re.compile(rb'"time":"([0-9T:.+Z-]{1,40})"\}\r?$')
#: What Go's encoder may write otherwise than as it is: all but printable ASCII, and
#: these of it (non-ASCII is split on too: U+2028 and invalid bytes are escaped).
_GO_CHANGES = re.compile(r'[^\x20-\x7e]|["\\<>&]')
#: The piece every record holds: a needle with no plain piece is looked for in all.
_ANY_RECORD = b'"log":"'


def record_time(line):
    """Epoch seconds of a json-file record's ``time``, or None (not such a record)."""
    match = _TIME_AT_END.search(line[-128:])
    return docker_time(match.group(1).decode("ascii")) if match else None


def record_text(line):
    """The decoded ``log`` of a json-file record, or None (not such a record)."""
    try:
        record = json.loads(line.decode("utf-8", "replace"))
    except ValueError:
        return None
    text = record.get("log") if isinstance(record, dict) else None
    return text if isinstance(text, str) else None


def plain_piece(needle):
    """The longest part of ``needle`` that Go's encoder writes unchanged, as bytes."""
    return max(_GO_CHANGES.split(needle), key=len).encode("ascii")


def json_anchor(fd, size, bound):
    """(offset of this run's first record, how it was found), or (None, why).

    ``bound`` is the earliest time a record of this run may have (None: every record
    of the file is this run's). Records are read back from the end, at most
    JSON_BACK_SCAN bytes, down to the last one stamped before ``bound``; a run longer
    than that is placed by a binary search on the records' times."""
    if bound is None:
        return 0, "the container has not run before: the whole file is this run's"
    first = size
    for offset, line in lines_back(fd, size, JSON_BACK_SCAN, keep=RECORD_KEEP):
        if offset is None:
            return json_bisect(fd, first, bound), "the records' times"
        ts = record_time(line)
        if ts is None:
            continue
        if ts < bound:
            return first, "the records' times"
        first = offset
    if first >= size:
        return size, "nothing written since the start"
    return first, "the records' times"


def json_bisect(fd, high, bound):
    """The offset of the first record at or after ``bound`` before ``high`` (a line
    start known to be at or after it, or the file's end), by a binary search over
    record starts. Where the times cannot tell, the answer errs late (``high``): a
    later anchor may miss this run's lines, an earlier one would count another's."""
    low = 0
    while high - low > JSON_BISECT_SPAN:
        found = dated_record(fd, (low + high) // 2, high)
        if found is None:
            break
        offset, ts = found
        if ts < bound:
            low = offset
        else:
            high = offset
    for offset, line in lines_in(fd, low, min(high, low + JSON_BACK_SCAN), keep=RECORD_KEEP):
        ts = record_time(line)
        if ts is not None and ts >= bound:
            return offset
    return high


def dated_record(fd, at, end):
    """(offset, time) of the first dated record that starts after ``at`` (inside a
    record, maybe) and before ``end``, of at most JSON_BISECT_TRIES; else None. The
    first JSON_BISECT_SPAN bytes are read alone: they hold a record or many."""
    for span in (JSON_BISECT_SPAN, JSON_BISECT_TRIES * RECORD_KEEP):
        records = lines_in(fd, at, min(end, at + span), keep=RECORD_KEEP)
        next(records, None)
        for tries, (offset, line) in enumerate(records):
            if tries >= JSON_BISECT_TRIES:
                return None
            ts = record_time(line)
            if ts is not None:
                return offset, ts
    return None


def json_find(fd, start, end, needles, limit):
    """(offset, record line, decoded text) of the first record in [start, end) whose
    ``log`` holds any of ``needles`` (text), reading at most ``limit`` bytes."""
    pieces = [plain_piece(n) or _ANY_RECORD for n in needles]
    for offset, line in lines_in(fd, start, min(end, start + limit), keep=RECORD_KEEP):
        if not any(piece in line for piece in pieces):
            continue
        text = record_text(line)
        if text is not None and any(n in text for n in needles):
            return offset, line, text
    return None


def json_args_line(fd, anchor, size, heads):
    """The args line past ``anchor`` (decoded), or None; for a head with ``until``, the
    lines up to the first that starts with it, joined by newlines (bounded as
    readiness.args_line bounds them)."""
    if not heads:
        return None
    texts = [t.decode("utf-8", "replace") for t, _ in heads]
    found = json_find(fd, anchor, size, texts, ARGS_SCAN)
    if found is None:
        return None
    offset, _, text = found
    until = next((u for t, u in heads if t.decode("utf-8", "replace") in text), None)
    if until is None:
        return text.rstrip("\n")
    until = until.decode("utf-8", "replace")
    lines = []
    total = 0
    end = min(size, offset + 6 * ARGS_DUMP_BYTES)
    for _, line in lines_in(fd, offset, end, keep=RECORD_KEEP):
        decoded = record_text(line)
        if decoded is None:
            continue
        decoded = decoded.rstrip("\n")
        lines.append(decoded)
        total += len(decoded) + 1
        if (lines[1:] and decoded.lstrip().startswith(until)) or len(lines) >= ARGS_DUMP_LINES:
            break
        if total >= ARGS_DUMP_BYTES:
            break
    return "\n".join(lines)


def json_readiness(path, bound, started, service):
    """Where this run's records begin in the json-file at ``path``, and whether its
    ready line is there: the shape of readiness.readiness. ``bound`` as for
    json_anchor; ``started`` is the run's StartedAt (epoch seconds)."""
    try:
        fd = open_file(path)
    except OSError as error:
        return {"anchor": None, "source": cannot_read(path, error), "seen": None}
    try:
        return records_ready(fd, os.fstat(fd).st_size, (bound, started), service)
    finally:
        os.close(fd)


def records_ready(fd, size, times, service):
    """json_readiness on an open json-file of ``size`` bytes; ``times`` is (bound, started)."""
    bound, started = times
    anchor, source = json_anchor(fd, size, bound)
    if anchor is None:
        return {"anchor": None, "source": source, "seen": None}
    cut = False
    if anchor == 0 and size > 0:
        first = next(iter(lines_in(fd, 0, size, keep=RECORD_KEEP)), (0, b""))[1]
        first_ts = record_time(first)
        cut = first_ts is None or started is None or first_ts > started + JSON_FRESH
    args = json_args_line(fd, anchor, size, args_heads_of(service.get("args_heads")))
    patterns = [p for p in (service.get("ready") or []) if isinstance(p, str) and p]
    if not patterns:
        return {
            "anchor": anchor,
            "seen": None,
            "args_line": args,
            "source": "no ready line is known for this engine (set ready: in hosts.yaml)",
        }
    found = json_find(fd, anchor, size, patterns, READY_SCAN)
    result = {
        "anchor": anchor,
        "source": source,
        "seen": found is not None,
        "cut": cut and found is None,
        "complete": size - anchor <= READY_SCAN,
        "args_line": args,
    }
    if found is not None:
        offset, raw, text = found
        result["offset"], result["line"], result["at"] = offset, text.rstrip("\n"), record_time(raw)
    elif not result["complete"]:
        result["seen"] = None
        result["source"] = "the run wrote more than %d MiB before any ready line" % (
            READY_SCAN // (1024 * 1024)
        )
    return result


def json_span(fd, size):
    """(time of the file's first record, time of its last), each None when not found."""
    first = None
    for _, line in lines_in(fd, 0, min(size, RECORD_KEEP), keep=RECORD_KEEP):
        first = record_time(line)
        break
    last = None
    for offset, line in lines_back(fd, size, RECORD_KEEP, keep=RECORD_KEEP):
        if offset is None:
            break
        last = record_time(line)
        if last is not None:
            break
    return first, last


def json_log_times(path, dev, inode):
    """(first, last) record times of the json-file at ``path`` if it is still the file
    (dev, inode); (None, None) otherwise."""
    try:
        fd = open_file(path)
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (dev, inode):
            return None, None
        return json_span(fd, st.st_size)
    finally:
        os.close(fd)
