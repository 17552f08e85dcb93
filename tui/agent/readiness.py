"""Where a run's bytes begin in its log, and whether its ready line is there."""

import os

from .files import cannot_read, open_file
from .logtime import Dater
from .phases import PhaseScan, compile_phases

READY_SCAN = 8 * 1024 * 1024
# How far past the anchor to look for the line where the server prints the arguments it
# really runs with (the request names that line's heads: "args_heads").
ARGS_SCAN = 4 * 1024 * 1024
# An args dump of many lines (an ``until`` head) is read up to this many bytes; a pretty
# dump prints a list one element a line, so the line count is only a second guard.
ARGS_DUMP_BYTES = 64 * 1024
ARGS_DUMP_LINES = 4096
# Start times are known to a clock tick (1/100 s); allow that much.
START_SLACK = 0.05
# A process stamps its first line within this many seconds of its start (its build and
# system lines come first), so a log whose first stamp is later lost its first lines.
FRESH_STAMP = 10.0
# How far an elapsed stamp placed after the process's start may pass the file's last
# write: the start is known to 1/100 s and the engine's clock starts after exec.
ELAPSED_SLACK = 1.0


def find_anchor(fd, size, start_time, dater, pid_tag, *, heads=()):
    """Offset of the first byte this run wrote, and how it was found (or None, reason).

    The first line stamped at or after the process start. Timestamps are whole
    seconds, so a line of the start's own second after an older run's lines may be
    that run's last: the answer is unsure, unless the line is where a run prints the
    arguments it runs with (``heads``), which a run prints only as it begins. A vLLM
    run tags its lines with its pid, but pids come back (every container counts from
    1), so a tagged line is this run's only when it is also stamped at or after the
    start. (A log stamped by time since its process started is read by
    :func:`elapsed_anchor`.)
    """
    start = int(start_time)
    low = before_start(fd, size, start, dater)
    if pid_tag:
        span = (low, min(size, low + READY_SCAN))
        at, how = first_tagged(fd, span, pid_tag, start, dater)
        if at is not None or how is not None:
            return at, how
    chunk = os.pread(fd, min(size - low, 1024 * 1024), low)
    offset = low
    previous_ts = None
    for line in chunk.split(b"\n"):
        ts = dater.time(line)
        if ts is not None and ts >= start:
            if ts == start and offset > 0:
                return start_second_line(offset, line, heads)
            if offset > 0 and previous_ts is None and low == offset:
                previous = dater.last(os.pread(fd, 4096, max(0, offset - 4096)))
                if previous is not None and previous >= start:
                    return None, "the log's timestamps are not in order"
            return offset, "timestamps"
        if ts is not None:
            previous_ts = ts
        offset += len(line) + 1
    if offset >= size:
        return size, "nothing written since the start"
    return None, "no timestamps to place the start"


def start_second_line(offset, line, heads):
    """(offset, how) for a run's first line stamped in the very second its process
    started, after other lines: an older run (ended in that second) may have written
    it, unless it is a run's args line, which a run prints only as it begins."""
    if any(head in line for head in heads):
        return offset, "timestamps and the run's args line"
    return None, "a line of another run may share the start's second"


def elapsed_anchor(fd, size, dater):
    """(offset, how) of a run in a log whose stamps count from its process's start, read
    backwards from the end (at most READY_SCAN bytes): the run is the one after the last
    line whose stamp is smaller than the stamped line before it (a process started over
    there), or, when the stamps never start over, the one from the first stamped line.
    That run is this process's when it looks written by it from its start: its first
    stamp is within FRESH_STAMP of the start, and no line of it placed after
    ``dater.started`` comes after the file's last write (``dater.clock``). The caller asks
    only about a file the process has open for writing. Otherwise (None, why)."""
    elapsed = Dater(
        [[p.pattern.decode("utf-8", "surrogateescape"), k] for p, k in dater.patterns], 0, 0
    )
    last = None
    after = None
    restart = False
    for offset, line in lines_back(fd, size, READY_SCAN):
        if offset is None:
            return None, "cannot tell: no run starts within the log's last %d MiB" % (
                READY_SCAN // (1024 * 1024)
            )
        ts = elapsed.time(line)
        if ts is None:
            continue
        if last is None:
            last = ts
        if after is not None and ts > after[1]:
            restart = True
            break
        after = (offset, ts)
    if after is None:
        return None, "no timestamps to place the start"
    if not from_this_start(after[1], last, dater):
        return None, "cannot tell: the stamps count from a process's start and %s" % (
            "the run where they start over is not this one's" if restart else "never start over"
        )
    if restart:
        return after[0], "the stamps start over"
    return after[0], "the stamps count from this process's start"


def from_this_start(first, last, dater):
    """Whether a run whose elapsed stamps go from ``first`` to ``last`` fits the process
    started at ``dater.started``: it stamped its first line soon after that start, and its
    last line placed after the start is no later than the file's last write."""
    return (
        dater.started is not None
        and first <= FRESH_STAMP
        and dater.started + last <= dater.clock + ELAPSED_SLACK
    )


def lines_back(fd, end, limit, keep=65536):
    """(offset, line) for each line in [0, end), the last first, each cut at ``keep``
    bytes; at most ``limit`` bytes are read, and a walk stopped by that limit ends with
    (None, b"") (a line whose start lies further back)."""
    floor = max(0, end - limit)
    pos = end
    tail = b""  # the head of the line that starts in the bytes before ``pos``
    while pos > floor:
        data = os.pread(fd, min(1024 * 1024, pos - floor), max(floor, pos - 1024 * 1024))
        if not data:
            break
        base = pos - len(data)
        cut = len(data)
        while True:
            newline = data.rfind(b"\n", 0, cut)
            if newline < 0:
                break
            if cut == len(data):
                line = (data[newline + 1 :] + tail)[:keep]
            else:
                line = data[newline + 1 : min(cut, newline + 1 + keep)]
            if base + newline + 1 < end:
                yield base + newline + 1, line
            cut = newline
        tail = (data[:cut] + tail)[:keep] if cut == len(data) else data[: min(cut, keep)]
        pos = base
    if pos <= 0:
        if end > 0:
            yield 0, tail
    else:
        yield None, b""


def before_start(fd, size, start, dater):
    """A line start at or before the first line stamped ``start`` or later (0 when
    the timestamps cannot tell): a binary search over line starts."""
    low, high = 0, size
    while high - low > 4096:
        mid = (low + high) // 2
        chunk = os.pread(fd, 8192, mid)
        newline = chunk.find(b"\n")
        if newline < 0:
            break
        ts = dater.first(chunk[newline + 1 :])
        if ts is None:
            break
        if ts < start:
            low = mid + newline + 1
        else:
            high = mid
    return low


def first_tagged(fd, span, tag, start, dater):
    """(offset, "pid tag") of the first line in ``span`` that carries ``tag`` and is
    stamped at or after ``start``; (None, why) when the only tagged lines after the
    older ones carry no stamp (uvicorn's, tracebacks), so they may be either run's;
    (None, None) when no tagged line tells (the run does not tag its lines)."""
    undated = False
    for offset, line in lines_in(fd, *span):
        if tag not in line:
            continue
        ts = dater.time(line)
        if ts is None:
            undated = True
        elif ts >= start:
            return offset, "pid tag"
        else:
            undated = False  # the undated lines before an older line are the older run's
    if undated:
        return None, "lines tagged %s follow an older run's, with no time stamp to tell whose" % (
            tag.decode("utf-8", "replace").rstrip(")")
        )
    return None, None


def lines_in(fd, start, end, keep=65536):
    """(offset, line) for each line in [start, end); a line is cut at ``keep`` bytes."""
    pos = start
    line_at = start
    head = b""
    while pos < end:
        data = os.pread(fd, min(1024 * 1024, end - pos), pos)
        if not data:
            break
        cut = 0
        while True:
            newline = data.find(b"\n", cut)
            stop = len(data) if newline < 0 else newline
            if len(head) < keep:
                head += data[cut : min(stop, cut + keep - len(head))]
            if newline < 0:
                break
            yield line_at, head
            line_at = pos + newline + 1
            head = b""
            cut = newline + 1
        pos += len(data)
    if line_at < pos:
        yield line_at, head


def holds_whole_run(fd, anchor, start_time, dater):
    """Whether the log provably holds this run's output from its first byte: a line
    stamped before the run started lies just before the anchor. A log cut since the
    run began (logrotate's copytruncate) starts inside the run and holds none, so a
    ready line it lacks may have been cut away."""
    if dater.elapsed:
        return True  # the anchor is a process's first stamped line (see elapsed_anchor)
    if anchor <= 0:
        return False
    ts = dater.last(os.pread(fd, 4096, max(0, anchor - 4096)))
    return ts is not None and ts < int(start_time)


def scan_for(fd, start, end, needles, limit=READY_SCAN, *, watch=None):
    """(offset, line) of the first line in [start, end) containing any needle. ``watch``
    (a phases.PhaseScan) is fed every byte before that line, in the same pass."""
    if limit is not None:
        end = min(end, start + limit)
    pos = start
    carry = b""
    while pos < end:
        data = os.pread(fd, min(1024 * 1024, end - pos), pos)
        if not data:
            break
        block = carry + data
        base = pos - len(carry)
        # the earliest line holding any needle (not the first needle's line: with several
        # ready lines, a later one must not date the run's readiness)
        found = [i for i in (block.find(needle) for needle in needles) if i >= 0]
        if found:
            index = min(found)
            line_start = block.rfind(b"\n", 0, index) + 1
            line_end = block.find(b"\n", index)
            line = block[line_start : line_end if line_end >= 0 else len(block)]
            if watch is not None:
                watch.feed(block, base, line_start)
            return base + line_start, line.decode("utf-8", "replace")
        cut = block.rfind(b"\n")
        carry = block[cut + 1 :] if cut >= 0 else block
        if len(carry) > 65536:
            carry = carry[-65536:]
        if watch is not None:
            watch.feed(block, base, len(block) - len(carry))
        pos += len(data)
    if watch is not None:
        watch.feed(carry, pos - len(carry), len(carry))
    return None


def args_heads_of(heads):
    """[(head bytes, until bytes or None)] of the request's heads: objects ``{text, until}``,
    [text, until] pairs or plain texts."""
    found = []
    for head in heads or ():
        if isinstance(head, dict):
            text, until = head.get("text"), head.get("until")
        elif isinstance(head, (list, tuple)):
            text, until = (*head, None)[:2]
        else:
            text, until = head, None
        if isinstance(text, str) and text:
            found.append(
                (text.encode(), until.encode() if isinstance(until, str) and until else None)
            )
    return found


def args_line(fd, anchor, size, heads):
    """The line where the server prints the args it runs with (past ``anchor``), or None;
    for a head with ``until``, its lines up to the first that starts with it, joined
    by newlines (at most ARGS_DUMP_LINES lines, ARGS_DUMP_BYTES bytes)."""
    if not heads:
        return None
    found = scan_for(fd, anchor, size, [text for text, _ in heads], limit=ARGS_SCAN)
    if found is None:
        return None
    offset, line = found
    raw = line.encode("utf-8", "surrogateescape")
    until = next((u for t, u in heads if t in raw), None)
    if until is None:
        return line
    lines = []
    total = 0
    end = min(size, offset + ARGS_DUMP_BYTES)
    for _, text in lines_in(fd, offset, end, keep=ARGS_DUMP_BYTES):
        lines.append(text)
        total += len(text) + 1
        if (lines[1:] and text.lstrip().startswith(until)) or len(lines) >= ARGS_DUMP_LINES:
            break
        if total >= ARGS_DUMP_BYTES:
            break
    return b"\n".join(lines).decode("utf-8", "replace")


def readiness(log_path, run, record, service):
    """Where this run's bytes begin in the log, and whether its ready line is there.

    ``service`` is the request's entry: its ``ready`` lines, ``stamps``, ``pid_tag`` and
    ``args_heads``. ``seen`` is False only as far as the log shows; ``cut`` says the log
    may have lost the run's first bytes (it begins inside the run), so a ready line it
    lacks may have been there: then /health is asked (see probe_service).
    """
    ready_patterns = service.get("ready") or []
    heads = args_heads_of(service.get("args_heads"))
    try:
        fd = open_file(log_path)
    except FileNotFoundError:
        return {"anchor": None, "source": "no log", "seen": None}
    except OSError as error:
        return {"anchor": None, "source": cannot_read(log_path, error), "seen": None}
    try:
        st = os.fstat(fd)
        dater = Dater(service.get("stamps"), st.st_mtime, run["start_time"])
        anchor, source, cut = None, None, True
        if record and (record.get("dev"), record.get("inode")) == (st.st_dev, st.st_ino):
            anchor, source = record.get("launch_offset"), "run record"
            if isinstance(anchor, int) and anchor > st.st_size:
                return {
                    "anchor": None,
                    "seen": None,
                    "source": "the log (%d bytes) is shorter than where this run began "
                    "(offset %d): it was cut since" % (st.st_size, anchor),
                }
        elif st.st_mtime < run["start_time"] - START_SLACK:
            anchor, source, cut = st.st_size, "nothing written since the start", False
        else:
            tag = service.get("pid_tag")
            tag = (tag % run["pid"]).encode() if isinstance(tag, str) and "%d" in tag else None
            if dater.elapsed:
                anchor, source = elapsed_anchor(fd, st.st_size, dater)
            else:
                anchor, source = find_anchor(
                    fd, st.st_size, run["start_time"], dater, tag, heads=[t for t, _ in heads]
                )
        if anchor is None:
            return {"anchor": None, "source": source, "seen": None}
        if cut:
            cut = not holds_whole_run(fd, anchor, run["start_time"], dater)
        args = args_line(fd, anchor, st.st_size, heads)
        if not ready_patterns:
            return {
                "anchor": anchor,
                "seen": None,
                "args_line": args,
                "source": "no ready line is known for this engine (set ready: in hosts.yaml)",
            }
        phases = compile_phases(service.get("phases"))
        scan = PhaseScan(phases, dater, anchor) if phases else None
        found = scan_for(fd, anchor, st.st_size, [p.encode() for p in ready_patterns], watch=scan)
        result = {
            "anchor": anchor,
            "source": source,
            "seen": found is not None,
            "cut": cut and found is None,
            "complete": st.st_size - anchor <= READY_SCAN,
            "args_line": args,
        }
        if scan is not None:
            result["phases"] = scan.marks()
        if found is not None:
            result["offset"], result["line"] = found
            result["at"] = dater.time(found[1].encode())
            if result["at"] is None and scan is not None:
                result["at_before"] = scan.stamp_behind()
        elif not result["complete"]:
            result["seen"] = None
            result["source"] = "the run wrote more than %d MiB before any ready line" % (
                READY_SCAN // (1024 * 1024)
            )
        return result
    finally:
        os.close(fd)
