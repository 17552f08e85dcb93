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
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta

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
# followed by a level (its clock, found first: a search that starts with a letter is fast),
# or a JSON object opening with its timestamp.
_CLOCK = re.compile(r"T\d\d:\d\d:\d\d")
_DATE_LENGTH = len("2025-05-01")
_TEXT_START = re.compile(
    rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z(?:{COLOUR}|\s)*"
    r"(?:TRACE|DEBUG|INFO|WARN|ERROR)\b"
)
# tracing dims the stamp: the code before it is the line's first byte.
_DIM = "\x1b[2m"
_JSON_START = '{"timestamp":"'
# The message itself, after the router's file:line (full format) or its target (compact,
# where the span's fields follow the message): not "Success" inside another message. The
# target's path is read whole, once (possessive), and the message is looked for after it:
# each place the path could start is tried once.
_SUCCESS = re.compile(r"(?:\.rs:\d+|text_generation_router(?:::\w+)*+)(: Success(?=\s*$| \w+=))?")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(s|ms|µs|μs|us|ns)", re.ASCII)
# The unit as a power of ten: "611.286748" "e-3" reads as 0.611286748 exactly as printed.
_EXPONENT = {"s": "", "ms": "e-3", "µs": "e-6", "μs": "e-6", "us": "e-6", "ns": "e-9"}

#: The span fields a ``Success`` sample keeps, durations in seconds, in the router's order.
DURATIONS = ("total_time", "validation_time", "queue_time", "inference_time", "time_per_token")
#: Token counts some routers record in the same span (``prompt_tokens="12"``).
COUNTS = ("prompt_tokens", "generated_tokens")
_FIELDS = (*DURATIONS, *COUNTS)
_MESSAGE = "Success"
_MICRO_DIGITS = 6
_SECONDS_KEPT = 256
_UNSEEN = datetime.min


def strip_colour(text: str) -> str:
    """``text`` without its escape sequences."""
    return _ESCAPES.sub("", text) if "\x1b" in text else text


def seconds(printed: str) -> float | None:
    """A Rust ``Duration`` as ``{:?}`` prints it, in seconds: ``"45.2ms"`` -> 0.0452; or None."""
    match = _DURATION.fullmatch(printed)
    if match is None:
        return None
    return float(match.group(1) + _EXPONENT[match.group(2)])


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


def line_starts(text: str) -> list[int]:
    """Where each line inside ``text`` begins, past its first: a stamp followed by a level
    (with the code that dims the stamp), or a JSON object opening with its stamp."""
    starts = []
    for clock in _CLOCK.finditer(text):
        at = clock.start() - _DATE_LENGTH
        if at > 0 and _TEXT_START.match(text, at):
            starts.append(at - len(_DIM) if text.endswith(_DIM, 0, at) else at)
    at = text.find(_JSON_START, 1)
    while at > 0:
        starts.append(at)
        at = text.find(_JSON_START, at + 1)
    return sorted(s for s in set(starts) if s > 0)


def pieces(text: str) -> Iterator[tuple[int, str]]:
    """(index, text) of each line in ``text``: one, or more when lines were glued."""
    starts = [0, *line_starts(text)]
    for begin, end in zip(starts, [*starts[1:], len(text)], strict=True):
        yield begin, text[begin:end]


#: A span field: (its value as printed, the text a sample holds for it).
Timing = tuple[str, str]


def text_timings(line: str) -> dict[str, Timing] | None:
    """The span fields of a text-format ``Success`` line (None for another line).

    A field's last printed value wins: the request's parameters, printed first, may
    hold any text (a stop sequence), the timings are recorded after them.
    """
    if not any(match.group(1) for match in _SUCCESS.finditer(line)):
        return None
    found: dict[str, Timing] = {}
    for key in _FIELDS:
        head = f'{key}="'
        end = len(line)
        while (at := line.rfind(head, 0, end)) >= 0:
            start = at + len(head)
            close = line.find('"', start)
            before = line[at - 1 : at]
            if close >= 0 and not (before.isalnum() or before == "_"):
                held = field_text(key, line[start:close])
                if held is not None:
                    found[key] = (line[start:close], held)
                    break
            end = at
    return found


def field_text(key: str, value: str) -> str | None:
    """What a sample holds for the field ``key`` printed as ``value``: a duration in
    seconds, a count as printed; None when ``value`` is neither."""
    if key in COUNTS:
        return value if value.isascii() and value.isdigit() else None
    held = seconds(value)
    return None if held is None else repr(held)


def json_timings(line: str) -> dict[str, Timing] | None:
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
    found: dict[str, Timing] = {}
    for index, scope in enumerate(scopes):
        # "span" repeats the last of "spans": read once
        if not isinstance(scope, dict) or (index and scope == scopes[index - 1]):
            continue
        for key in _FIELDS:
            value = scope.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            held = field_text(key, value) if isinstance(value, str) else None
            if held is not None:
                found[key] = (value, held)
    return found


class TgiReader:
    """Reads a TGI log: every line's time, and a sample for each ``Success`` line.

    The sample's ``values`` are empty: one request's timings are not the server's
    throughput (requests overlap in a batch, and the span holds no token count in
    most releases), so the canonical throughput, queue and batch come from
    ``/metrics`` only. Its fields hold the timings in seconds.
    """

    def __init__(self, utc_offset: int | None = None) -> None:
        self._utc_offset = utc_offset
        #: each stamp's second on the wall clock (many lines share one), at most
        #: :data:`_SECONDS_KEPT` of them
        self._seconds: dict[tuple[int, ...], datetime | None] = {}

    def line_time(self, text: str) -> datetime | None:
        parts = stamp_parts(text)
        if parts is None:
            return None
        second = parts[:-1]
        ts = self._seconds.get(second, _UNSEEN)
        if ts is _UNSEEN:
            if len(self._seconds) >= _SECONDS_KEPT:
                self._seconds.clear()
            ts = self._seconds[second] = wall_clock((*second, 0), self._utc_offset)
        return None if ts is None else ts.replace(microsecond=parts[-1])

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
        in_order = [(key, printed[key]) for key in _FIELDS if key in printed]
        return MetricSample(
            ts=ts,
            kind=REQUEST_KIND,  # type: ignore[arg-type]
            engine=ENGINE,  # type: ignore[arg-type]
            body=", ".join(f"{key}: {value}" for key, (value, _) in in_order),
            values={},
            offset=offset,
            run=run,
            pairs={key: held for key, (_, held) in in_order},
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
