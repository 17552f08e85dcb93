"""TGI's log lines: their stamps, their colour codes, and the router's per-request ``Success``.

The launcher (``text-generation-launcher``) logs with ``tracing_subscriber``'s
compact format, or JSON (``--json-output``: the event's fields nested under
``"fields"``); it prints the router's and the shards' lines among its own. The
router (``text-generation-router``) logs in the full format with file and line,
or JSON with the fields flattened (``"message":"…"`` at the top). Both colour
their text lines with ANSI escapes (the router unless ``LOG_COLORIZE=1``), so a
log file holds them: every line is read with its escapes removed.

Shapes (shown without colour), each stamped in UTC (RFC 3339, microseconds)::

    2025-05-01T01:31:15.912301Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0
    2025-05-01T01:31:15.912301Z  INFO generate{parameters=… total_time="1.12s" …}:
        text_generation_router::server: router/src/server.rs:432: Success     (one line)
    {"timestamp":"2025-05-01T01:31:15.912301Z","level":"INFO","fields":{"message":"…"},"target":"…"}
    {"timestamp":"…","level":"INFO","message":"Success","target":"…","span":{"total_time":"1.12s",…}}

The only metric line is the router's ``Success``, one per request: its span
holds the request's timings (Rust ``Duration`` ``{:?}``: ``1.234567s``,
``45.2ms``, ``310µs``, ``15ns``), read into seconds. Throughput, queue and batch
exist only on ``/metrics`` (see the package's ``Prometheus``).
"""

from __future__ import annotations

import calendar
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from tui.core.metrics.model import MetricSample

ENGINE = "tgi"
#: The kind of sample a ``Success`` line gives.
REQUEST_KIND = "tgi-request"

#: One SGR colour code, as tracing writes them (``\x1b[2m``, ``\x1b[0m``, ``\x1b[32m``).
COLOUR = r"\x1b\[[0-9;]*m"
_STAMP = r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?Z"
#: A text line's stamp at its start, colour codes before it allowed (the stamp is dimmed).
TEXT_STAMP = rf"(?:{COLOUR})*{_STAMP}"
#: A JSON line's stamp: tracing's JSON formatter writes ``timestamp`` first.
JSON_STAMP = rf'\{{"timestamp":"{_STAMP}"'

_TEXT_STAMP = re.compile(TEXT_STAMP)
_JSON_STAMP = re.compile(JSON_STAMP)
# An escape sequence (CSI with its parameters, or ESC, intermediates and a final byte).
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|[ -/]*[0-~]?)")
# Where a line starts inside a physical line (two lines glued by a lost newline): a stamp
# followed by a level, or a JSON object opening with its timestamp.
_LINE_START = re.compile(
    rf"(?:{COLOUR})*\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(?:{COLOUR}|\s)*"
    r"(?:TRACE|DEBUG|INFO|WARN|ERROR)\b"
    r'|\{"timestamp":"'
)
# The request's span fields in a text line, as the full and compact formats print them.
_TIMING = re.compile(
    r"\b(total_time|validation_time|queue_time|inference_time|time_per_token"
    r'|prompt_tokens|generated_tokens)="([^"]*)"'
)
# The message itself, after the router's file:line (full format) or its target (compact,
# where the span's fields follow the message): not "Success" inside another message.
_SUCCESS = re.compile(r"(?:\.rs:\d+|text_generation_router(?:::\w+)*): Success(?=\s*$| \w+=)")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(s|ms|µs|μs|us|ns)", re.ASCII)
_EXPONENT = {"s": 0, "ms": -3, "µs": -6, "μs": -6, "us": -6, "ns": -9}

#: The span fields a ``Success`` sample keeps, durations in seconds, in the router's order.
DURATIONS = ("total_time", "validation_time", "queue_time", "inference_time", "time_per_token")
#: Token counts some routers record in the same span (``prompt_tokens="12"``).
COUNTS = ("prompt_tokens", "generated_tokens")
_MESSAGE = "Success"
_MICRO_DIGITS = 6


def strip_colour(text: str) -> str:
    """``text`` without its escape sequences."""
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def seconds(printed: str) -> float | None:
    """A Rust ``Duration`` as ``{:?}`` prints it, in seconds: ``"45.2ms"`` -> 0.0452; or None."""
    match = _DURATION.fullmatch(printed)
    if match is None:
        return None
    return float(Decimal(match.group(1)).scaleb(_EXPONENT[match.group(2)]))


def stamp_parts(text: str) -> tuple[int, ...] | None:
    """(year, month, day, hour, minute, second, microsecond) of the stamp that starts a
    line of any shape, in UTC; None when the line starts with none."""
    match = _TEXT_STAMP.match(text) or _JSON_STAMP.match(text)
    if match is None:
        return None
    *clock, fraction = match.groups()
    micro = int((fraction or "0")[:_MICRO_DIGITS].ljust(_MICRO_DIGITS, "0"))
    return (*(int(part) for part in clock), micro)


def wall_clock(parts: tuple[int, ...], utc_offset: int | None) -> datetime | None:
    """A UTC stamp as the host's wall clock (naive): ``utc_offset`` seconds east of UTC,
    or this machine's own zone at that moment when None. None for a date that is none."""
    try:
        utc = datetime(*parts)
        if utc_offset is not None:
            return utc + timedelta(seconds=utc_offset)
        return datetime.fromtimestamp(calendar.timegm(utc.timetuple())).replace(
            microsecond=utc.microsecond
        )
    except (ValueError, OverflowError, OSError):
        return None


def pieces(text: str) -> Iterator[tuple[int, str]]:
    """(index, text) of each line in ``text``: one, or more when lines were glued."""
    starts = [m.start() for m in _LINE_START.finditer(text)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        yield begin, text[begin:end]


def text_timings(line: str) -> dict[str, str] | None:
    """The span fields of a text-format ``Success`` line, as printed (None for another line).

    A field's last printed value wins: the request's parameters, printed first, may
    hold any text (a stop sequence), the timings are recorded after them.
    """
    if _SUCCESS.search(line) is None:
        return None
    found: dict[str, str] = {}
    for match in _TIMING.finditer(line):
        key, value = match.groups()
        if valid(key, value):
            found[key] = value
    return found


def valid(key: str, value: str) -> bool:
    """Whether ``value`` reads as the field ``key`` holds (a duration, or a count)."""
    if key in COUNTS:
        return value.isascii() and value.isdigit()
    return seconds(value) is not None


def json_timings(line: str) -> dict[str, str] | None:
    """The span fields of a JSON ``Success`` line (router: flattened; launcher: nested)."""
    try:
        event, _ = json.JSONDecoder().raw_decode(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(event, dict):
        return None
    nested = event.get("fields")
    message = event.get("message", nested.get("message") if isinstance(nested, dict) else None)
    if message != _MESSAGE:
        return None
    spans = event.get("spans")
    scopes = [*(spans if isinstance(spans, list) else ()), event.get("span")]
    found: dict[str, str] = {}
    for scope in scopes:
        if not isinstance(scope, dict):
            continue
        for key in (*DURATIONS, *COUNTS):
            value = scope.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and key in COUNTS:
                value = str(value)
            if not isinstance(value, str):
                continue
            if valid(key, value):
                found[key] = value
    return found


def sample_pairs(printed: Mapping[str, str]) -> dict[str, str]:
    """The fields a sample holds: durations in seconds, counts as printed, in order."""
    pairs: dict[str, str] = {}
    for key in (*DURATIONS, *COUNTS):
        if key in printed:
            value = seconds(printed[key]) if key in DURATIONS else None
            pairs[key] = printed[key] if value is None else repr(value)
    return pairs


class TgiReader:
    """Reads a TGI log: every line's time, and a sample for each ``Success`` line.

    The sample's ``values`` are empty: one request's timings are not the server's
    throughput (requests overlap in a batch, and the span holds no token count in
    most releases), so the canonical throughput, queue and batch come from
    ``/metrics`` only. Its fields hold the timings in seconds.
    """

    def __init__(self, utc_offset: int | None = None) -> None:
        self._utc_offset = utc_offset

    def line_time(self, text: str) -> datetime | None:
        parts = stamp_parts(text)
        return None if parts is None else wall_clock(parts, self._utc_offset)

    def records(self, text: str, offset: int | None, *, run: int = 0) -> Sequence[MetricSample]:
        if _MESSAGE not in text:
            return ()
        found = []
        for at, piece in pieces(text):
            sample = self._sample(piece, at, text, offset, run)
            if sample is not None:
                found.append(sample)
        return tuple(found)

    def _sample(
        self, piece: str, at: int, text: str, offset: int | None, run: int
    ) -> MetricSample | None:
        if _MESSAGE not in piece:
            return None
        clean = strip_colour(piece)
        printed = json_timings(clean) if clean.startswith("{") else text_timings(clean)
        if not printed:
            return None
        ts = self.line_time(clean)
        if ts is None:
            return None
        if offset is not None and at:
            offset += len(text[:at].encode("utf-8", "surrogatepass"))
        body = ", ".join(f"{key}: {value}" for key, value in printed.items())
        return MetricSample(
            ts=ts,
            kind=REQUEST_KIND,  # type: ignore[arg-type]
            engine=ENGINE,  # type: ignore[arg-type]
            body=body,
            values={},
            offset=offset,
            run=run,
            pairs=sample_pairs(printed),
        )


def reader(
    reference: datetime | None = None,
    clock: object = None,
    started: datetime | None = None,
    *,
    utc_offset: int | None = None,
) -> TgiReader:
    """A reader of one TGI log. ``utc_offset`` is the host's zone (seconds east of UTC):
    TGI stamps in UTC and a sample's time is the host's wall clock. Every stamp holds
    its date, so ``reference``, ``clock`` and ``started`` are not needed."""
    del reference, clock, started
    return TgiReader(utc_offset)
