"""`babysit parse FILE|-`: parse a saved server log offline (post-mortems, tests).

The file is streamed one line at a time (a line longer than 64 KiB is cut
there and its rest skipped), so memory does not grow with the file: per run
and metric the summary keeps a count, first and last time, min and max, and a
fixed-size reservoir of 2,048 values for the median (a uniform sample by
Algorithm L with a fixed seed, so the same file gives the same figures; exact
up to 2,048 values). A
run's summary is printed, and forgotten, when the next run starts.

Run boundaries are the startup lines each run prints once (SGLang
``server_args=…``, vLLM's version and args lines); lines before any of them
are run 0. vLLM lines carry no year: it comes from ``--year``, else the file's
mtime (now for ``-``).

With ``--json`` the output is JSON lines, each with a ``type``: ``file`` (first,
with ``schema``), ``run`` (a run started or became ready), ``metric``
(``{ts, kind, fields, offset, run, source, values}`` per metric line),
``summary`` (per run, at its end) and ``end`` (counts). Without it, a table
per run. Exit status 0 when at least one metric line was found, 1 when none.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import sys
from collections.abc import Iterator
from datetime import datetime
from typing import BinaryIO, TextIO

from tui.agent.files import cannot_read, open_file
from tui.cli import add_json_option
from tui.core.lines import line_text
from tui.core.logcursor import MAX_LINE_BYTES
from tui.core.metrics.boundaries import LogScanner, RunEvent, RunEventKind
from tui.core.metrics.model import Metric, MetricSample
from tui.core.metrics.series import series_label
from tui.core.metrics.stamps import YEAR_SLACK
from tui.core.sanitize import printable
from tui.engines import readable, spec
from tui.errors import UsageError

SCHEMA = 1
RESERVOIR = 2048


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE|-", help="a saved log, or - for stdin")
    parser.add_argument(
        "--engine",
        choices=[e.name for e in readable()],
        help="read only this engine's formats (default: detect from the lines)",
    )
    parser.add_argument(
        "--year",
        type=int,
        metavar="Y",
        help="put every vLLM stamp (they print no year) in year Y "
        "(default: the latest year at or before the file's mtime; now for -)",
    )
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    engine: str | None = args.engine or None
    with _open(args.file) as (stream, mtime):
        reference = _reference(args.year, mtime)
        scanner = LogScanner(engine, reference=reference)
        report: Report = (
            JsonReport(sys.stdout, args.file, engine, reference)
            if args.json
            else TextReport(sys.stdout, args.file)
        )
        try:
            found = parse_stream(stream, scanner, report)
            sys.stdout.flush()
        except BrokenPipeError:
            # The reader went away (`| head`): that is the end, not an error.
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - python's own advice for EPIPE
            return 0
    return 0 if found else 1


@contextlib.contextmanager
def _open(path: str) -> Iterator[tuple[BinaryIO, float | None]]:
    if path == "-":
        yield sys.stdin.buffer, None
        return
    # Opened the way the agent opens a log on a host, with the same words when it cannot
    # be: only a regular file is read (a FIFO would block, /dev/zero never ends).
    try:
        fd = open_file(path)
    except OSError as error:
        raise UsageError(printable(cannot_read(path, error))) from None
    with os.fdopen(fd, "rb") as stream:
        yield stream, os.fstat(stream.fileno()).st_mtime


def _reference(year: int | None, mtime: float | None) -> datetime | None:
    if year is not None:  # every stamp in year Y: the limit is its last second
        return datetime(year, 12, 31, 23, 59, 59) - YEAR_SLACK
    if mtime is not None:
        return datetime.fromtimestamp(mtime)
    return None


def read_lines(stream: BinaryIO, limit: int = MAX_LINE_BYTES) -> Iterator[tuple[int, str]]:
    """(offset, text) per line, text decoded and cleaned; at most ``limit`` bytes of a line."""
    offset = 0
    skipping = False
    readline = stream.readline
    while True:
        data = readline(limit)
        if not data:
            return
        start = offset
        offset += len(data)
        if skipping:
            skipping = not data.endswith(b"\n")
            continue
        if not data.endswith(b"\n") and len(data) >= limit:
            skipping = True
        yield start, line_text(data[:-1] if data.endswith(b"\n") else data)


def parse_stream(stream: BinaryIO, scanner: LogScanner, report: Report) -> bool:
    """Feed every line to ``scanner`` and everything found to ``report``; whether a metric
    line was found."""
    summary = RunSummary(0)
    lines = metric_lines = 0
    for offset, text in read_lines(stream):
        lines += 1
        everything = scanner.feed_all(text, offset)
        if not everything:
            continue
        if isinstance(everything[0], MetricSample):
            metric_lines += 1
        for found in everything:
            if isinstance(found, MetricSample):
                summary.add(found)
                report.sample(found)
                continue
            if found.kind is RunEventKind.STARTED:
                report.run_end(summary)
                summary = RunSummary(found.run)
            summary.events.append(found)
            report.run_event(found)
    report.run_end(summary)
    engine = scanner.engine
    report.end(lines, metric_lines, scanner.run, engine)
    return metric_lines > 0


class Stat:
    """count, first/last time, min/max, and a median from a bounded reservoir.

    The reservoir is a uniform sample of at most :data:`RESERVOIR` values
    (Algorithm L: once full, it draws how many values to skip, so most values
    cost a comparison, not a random number).
    """

    __slots__ = ("_next", "_w", "count", "first", "last", "max", "min", "reservoir")

    def __init__(self) -> None:
        self.count = 0
        self.first: datetime | None = None
        self.last: datetime | None = None
        self.min = math.inf
        self.max = -math.inf
        self.reservoir: list[float] = []
        self._next = RESERVOIR  # count at which the next value enters a full reservoir
        self._w = 1.0

    def add(self, value: float, ts: datetime, rng: random.Random) -> None:
        count = self.count = self.count + 1
        if self.first is None:
            self.first = ts
        self.last = ts
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        if count <= RESERVOIR:
            self.reservoir.append(value)
            if count == RESERVOIR:
                self._skip(rng)
        elif count == self._next:
            self.reservoir[rng.randrange(RESERVOIR)] = value
            self._skip(rng)

    def _skip(self, rng: random.Random) -> None:
        self._w *= math.exp(math.log(rng.random() or 1e-300) / RESERVOIR)
        gap = math.log(rng.random() or 1e-300) / math.log1p(-self._w) if self._w < 1 else 0
        self._next = self.count + int(gap) + 1

    @property
    def exact(self) -> bool:
        return self.count <= RESERVOIR

    @property
    def median(self) -> float:
        ordered = sorted(self.reservoir)
        middle = len(ordered) // 2
        if len(ordered) % 2:
            return ordered[middle]
        return (ordered[middle - 1] + ordered[middle]) / 2


class RunSummary:
    """Per metric and series label, the :class:`Stat` of one run, plus its run events."""

    def __init__(self, run: int) -> None:
        self.run = run
        self.events: list[RunEvent] = []
        self.stats: dict[tuple[Metric, str], Stat] = {}
        self._rng = random.Random(run)

    def add(self, sample: MetricSample) -> None:
        label = series_label(sample)
        for metric, value in sample.values.items():
            stat = self.stats.get((metric, label))
            if stat is None:
                stat = self.stats[(metric, label)] = Stat()
            stat.add(value, sample.ts, self._rng)

    def rows(self) -> list[tuple[Metric, str, Stat]]:
        order = list(Metric)
        keys = sorted(self.stats, key=lambda k: (order.index(k[0]), k[1]))
        return [(metric, label, self.stats[(metric, label)]) for metric, label in keys]

    def to_json(self) -> dict[str, object]:
        metrics = []
        for metric, label, stat in self.rows():
            metrics.append(
                {
                    "metric": metric.value,
                    "label": label,
                    "unit": metric.unit.value,
                    "count": stat.count,
                    "first_ts": _iso(stat.first),
                    "last_ts": _iso(stat.last),
                    "min": stat.min,
                    "median": stat.median,
                    "max": stat.max,
                    "median_exact": stat.exact,
                }
            )
        return {"type": "summary", "run": self.run, "metrics": metrics}


def _iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.isoformat()


class Report:
    """Where :func:`parse_stream` puts what it finds."""

    def run_event(self, event: RunEvent) -> None: ...

    def sample(self, sample: MetricSample) -> None: ...

    def run_end(self, summary: RunSummary) -> None: ...

    def end(self, lines: int, metric_lines: int, runs: int, engine: str | None) -> None: ...


class JsonReport(Report):
    def __init__(
        self, out: TextIO, path: str, engine: str | None, reference: datetime | None
    ) -> None:
        self.out = out
        self._write(
            {
                "type": "file",
                "schema": SCHEMA,
                "path": path,
                "engine": engine,
                "year_reference": _iso(reference),
            }
        )

    def _write(self, record: dict[str, object]) -> None:
        self.out.write(json.dumps(record, ensure_ascii=False) + "\n")

    def run_event(self, event: RunEvent) -> None:
        self._write({"type": "run", **event.to_json()})

    def sample(self, sample: MetricSample) -> None:
        self._write({"type": "metric", **sample.to_json()})

    def run_end(self, summary: RunSummary) -> None:
        if summary.stats or summary.events:
            self._write(summary.to_json())

    def end(self, lines: int, metric_lines: int, runs: int, engine: str | None) -> None:
        self._write(
            {
                "type": "end",
                "lines": lines,
                "metric_lines": metric_lines,
                "runs": runs,
                "engine": engine,
            }
        )


class TextReport(Report):
    """A table per run, printed when the run ends."""

    def __init__(self, out: TextIO, path: str) -> None:
        self.out = out
        self.path = path

    def run_end(self, summary: RunSummary) -> None:
        if not summary.stats and not summary.events:
            return
        self.out.write(_run_heading(summary) + "\n")
        if not summary.stats:
            self.out.write("  no metric lines\n\n")
            return
        table = [("metric", "count", "first", "last", "min", "median", "max")]
        for metric, label, stat in summary.rows():
            unit = metric.unit
            table.append(
                (
                    metric.title + (f" [{label}]" if label else ""),
                    f"{stat.count:,}",
                    _when(stat.first),
                    _when(stat.last),
                    unit.format(stat.min),
                    ("" if stat.exact else "~") + unit.format(stat.median),
                    unit.format(stat.max),
                )
            )
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        for row in table:
            cells = [
                cell.ljust(width) if i in (0, 2, 3) else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            self.out.write("  " + "  ".join(cells).rstrip() + "\n")
        self.out.write("\n")

    def end(self, lines: int, metric_lines: int, runs: int, engine: str | None) -> None:
        what = spec(engine).title if engine else "engine unknown"
        self.out.write(
            f"{printable(self.path)}: {what}, {lines:,} lines, {metric_lines:,} metric lines, "
            f"{runs} run{'s' if runs != 1 else ''} started\n"
        )


def _when(ts: datetime | None) -> str:
    return "" if ts is None else ts.isoformat(sep=" ", timespec="seconds")


def _run_heading(summary: RunSummary) -> str:
    if summary.run == 0:
        return "run 0 (before any startup line)"
    parts = [f"run {summary.run}"]
    for event in summary.events:
        where = f"byte {event.offset:,}" if event.offset is not None else "?"
        when = f" {_when(event.ts)}" if event.ts is not None else ""
        parts.append(f"{event.kind.value}{when} at {where} ({event.marker})")
    return " · ".join(parts)
