"""SGLang's metric lines (``Decode batch``, ``Prefill batch``) in every prefix they come with.

The line prefix, by what set up SGLang's logging:

* its own ``configure_logger``: ``[YYYY-MM-DD HH:MM:SS(.mmm)( DP0 TP0 ...)] ``;
* 0.2.x-0.3.x: ``[HH:MM:SS TP0] `` (no date: the run's start date is the line's);
* the diffusion logger (``sglang.multimodal_gen``): ``[MM-DD HH:MM:SS] `` (no year);
* another program's logger, or ``SGLANG_LOGGING_CONFIG_PATH``:
  ``YYYY-MM-DD HH:MM:SS LEVEL PID [file.py:N] ``, the stdlib
  ``YYYY-MM-DD HH:MM:SS,mmm [LEVEL] name: ``, and python-json-logger's objects (one per
  line, the ``message`` read as a line's message, ``asctime`` its time).

The engine's own line may sit inside a wrapper's (``docker logs --timestamps``, a log
viewer, journald, an outer stamp, a Ray actor tag, tqdm progress glued in front): it
is found where it starts and read with its own stamp. Two lines glued into one (a lost
newline) are two records, each ending where the next line's prefix starts. ANSI
escapes are stripped first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from tui.core.metrics.model import Metric, MetricSample, canonical
from tui.core.metrics.stamps import infer_year
from tui.engines._json_lines import line_time as json_line_time
from tui.engines._json_lines import records as json_records
from tui.engines._pid_tags import run_start
from tui.engines.spec import ReaderClock

NAME = "sglang"

_DATE = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
_RANKS = r"((?: [A-Z_]+\d+)*)"
_LEVEL = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)"
_HEAD_SOURCE = r"(Decode|Prefill) batch(?: \[(\d+)\])?[.,] ?"
#: The release prefix and a stats head at the line's start: the common case, one match.
_BATCH = re.compile(rf"\[({_DATE})(?:\.(\d{{3}}))?{_RANKS}\] {_HEAD_SOURCE}")
#: The release prefix alone: ``[2026-05-09 09:22:05.123 DP0 TP0] ``.
PREFIX = re.compile(rf"\[({_DATE})(?:\.(\d{{3}}))?{_RANKS}\] ")
#: Every prefix shape, anywhere in a line. Groups: 1 date, 2 millis, 3 ranks (the
#: release prefix); 4 clock, 5 ranks (time-only); 6 month-day clock (diffusion);
#: 7 date, 8 millis (another logger's format).
_LINE = re.compile(
    rf"\[({_DATE})(?:\.(\d{{3}}))?{_RANKS}\] "
    rf"|\[(\d\d:\d\d:\d\d){_RANKS}\] "
    r"|\[(\d\d-\d\d \d\d:\d\d:\d\d)\] "
    rf"|({_DATE})(?:[.,](\d{{3}}))? (?:{_LEVEL} \d+ \[[^\]\s]+:\d+\]|\[{_LEVEL}\] [\w.]+:) "
)
_HEAD = re.compile(_HEAD_SOURCE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

#: key in a line -> canonical metric; for each metric the line's first such key wins
_CANON: dict[str, Metric] = {
    "gen throughput (token/s)": Metric.GEN_THROUGHPUT,
    "input throughput (token/s)": Metric.PREFILL_THROUGHPUT,
    "accept len": Metric.ACCEPT_LEN,
    "accept rate": Metric.ACCEPT_RATE,
    "#running-req": Metric.RUNNING,
    "#queue-req": Metric.QUEUED,
    "token usage": Metric.TOKEN_USAGE,
    "full token usage": Metric.TOKEN_USAGE,
    "gpu token usage": Metric.TOKEN_USAGE,
    "#token": Metric.KV_TOKENS,
    "#full token": Metric.KV_TOKENS,
    "#gpu token": Metric.KV_TOKENS,
    "#gpu-token": Metric.KV_TOKENS,
    "cache hit rate": Metric.PREFIX_HIT_RATE,
}
DECODE = "sglang-decode"
PREFILL = "sglang-prefill"
_NONE: tuple[MetricSample, ...] = ()
#: Stamps remembered per reader (one per second of log, at most this many).
_STAMP_CACHE = 256
#: A time-only line read without a run may be this far after the log's last write
#: (clock skew) before it is taken for the day before.
_TIME_ONLY_SLACK = timedelta(hours=1)
_DAY = timedelta(days=1)


class Reader(ReaderClock):
    """SGLang's metric lines; see :class:`tui.engines.spec.LineReader`. A time-only stamp
    takes the date of ``started`` (the next day when it is earlier in the day than the
    start), else of ``reference`` or ``clock()``; a year-less one the year
    ``reference`` (or ``clock()``) gives it."""

    def __init__(self, **made: Any) -> None:
        super().__init__(**made)
        self._times: dict[str, datetime] = {}

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        if "Decode batch" not in text and "Prefill batch" not in text:  # the heads
            return _NONE
        try:
            # the common case first: the release prefix at the start, one line
            match = _BATCH.match(text) if text[:1] == "[" else None
            if match is not None and text.find("[", match.end()) < 0:
                stamp, millis, ranks, head, forward = match.groups()
                ts = self._time(stamp, millis)
                body = text[match.end() :]
                return (
                    self._sample(ts, head, forward, body, source=ranks[1:], offset=offset, run=run),
                )
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            if '"message"' in text:
                found = self._json(text, offset, run)
                if found:
                    return found
            return self._glued(text, offset, run)
        except (ValueError, OverflowError, IndexError):
            return _NONE

    def _glued(self, text: str, offset: int | None, run: int) -> tuple[MetricSample, ...]:
        """Every stats line found in ``text``, each up to where the next line starts."""
        starts = list(_LINE.finditer(text))
        found: list[MetricSample] = []
        for index, line in enumerate(starts):
            head = _HEAD.match(text, line.end())
            if head is None:
                continue
            end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
            body = text[head.end() : end]
            if "pid=" in body:
                # Ray actor tags left at the body's end by the glued line after it
                body = body.rstrip()
                body = body[: run_start(body, len(body), space_optional=True)]
            try:
                ts, source = self._stamp_of(line)
            except (ValueError, OverflowError):
                continue
            head_name, forward = head.groups()
            found.append(
                self._sample(ts, head_name, forward, body, source=source, offset=offset, run=run)
            )
        return tuple(found)

    def _json(self, text: str, offset: int | None, run: int) -> tuple[MetricSample, ...]:
        """The stats lines among a JSON formatter's objects on this line."""
        found = []
        for message, ts in json_records(text):
            head = _HEAD.match(message)
            if head is not None:
                name, forward = head.groups()
                body = message[head.end() :]
                found.append(
                    self._sample(ts, name, forward, body, source="", offset=offset, run=run)
                )
        return tuple(found)

    @staticmethod
    def _sample(
        ts: datetime,
        head: str,
        forward: str | None,
        body: str,
        *,
        source: str,
        offset: int | None,
        run: int,
    ) -> MetricSample:
        if "\r" in body:
            body = body.split("\r", 1)[0]
        body = body.rstrip(" ,")
        if forward is not None:
            body = f"forward iter: {forward}, {body}"
        return MetricSample(
            ts=ts,
            kind=DECODE if head == "Decode" else PREFILL,
            engine=NAME,
            body=body,
            values=canonical(body, _CANON),
            offset=offset,
            source=source,
            run=run,
        )

    def line_time(self, text: str) -> datetime | None:
        try:
            if "\x1b" in text:
                text = _ANSI.sub("", text)
            match = PREFIX.match(text) if text[:1] == "[" else None
            if match is not None:
                return self._time(match.group(1), match.group(2))
            line = _LINE.search(text)
            if line is not None:
                return self._stamp_of(line)[0]
            return json_line_time(text)
        except (ValueError, OverflowError):
            return None

    def _stamp_of(self, line: re.Match[str]) -> tuple[datetime, str]:
        """The time and the rank tags of a :data:`_LINE` match."""
        date, millis, ranks, clock, clock_ranks, month_day, other, other_millis = line.groups()
        if date is not None:
            return self._time(date, millis), ranks[1:]
        if clock is not None:
            return self._time_only(clock), clock_ranks[1:]
        if month_day is not None:
            return self._yearless(month_day), ""
        return self._time(other, other_millis), ""

    def _time(self, stamp: str, millis: str | None) -> datetime:
        ts = self._times.get(stamp)
        if ts is None:
            if len(self._times) > _STAMP_CACHE:
                self._times.clear()
            ts = datetime(
                int(stamp[0:4]),
                int(stamp[5:7]),
                int(stamp[8:10]),
                int(stamp[11:13]),
                int(stamp[14:16]),
                int(stamp[17:19]),
            )
            self._times[stamp] = ts
        return ts if millis is None else ts.replace(microsecond=int(millis) * 1000)

    def _time_only(self, clock: str) -> datetime:
        hour, minute, second = int(clock[0:2]), int(clock[3:5]), int(clock[6:8])
        if self._started is not None:
            start = self._started.replace(microsecond=0)
            ts = start.replace(hour=hour, minute=minute, second=second)
            return ts + _DAY if ts < start else ts
        base = self._now()
        ts = base.replace(hour=hour, minute=minute, second=second, microsecond=0)
        return ts - _DAY if ts > base + _TIME_ONLY_SLACK else ts

    def _yearless(self, stamp: str) -> datetime:
        base = self._now()
        clock = (int(stamp[6:8]), int(stamp[9:11]), int(stamp[12:14]))
        return infer_year(int(stamp[0:2]), int(stamp[3:5]), clock, base)
