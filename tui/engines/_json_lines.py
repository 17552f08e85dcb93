"""Lines a JSON log formatter (python-json-logger) writes: one object per record.

SGLang under ``SGLANG_LOGGING_CONFIG_PATH`` and vLLM's ``--logging-config`` JSON
formatter both write ``{"asctime": "YYYY-MM-DD HH:MM:SS,mmm", "levelname": …,
"message": …}``; each engine reads the ``message`` as one of its own lines' message.
"""

from __future__ import annotations

import json
from datetime import datetime

_DECODER = json.JSONDecoder()
#: Objects tried on one line (each ``{`` is a try): one line is one object, two if glued.
MAX_TRIES = 8
#: The agent's stamp of such a line (a regex source matched at the line's start).
STAMP = r'\{.*?"asctime": ?"(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)'


def json_object(text: str) -> dict[str, object] | None:
    """``text`` read as one JSON object, or None (not JSON, or not an object)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def objects(text: str) -> list[dict[str, object]]:
    """The JSON objects on a line, in order (a wrapper's text before them skipped), from
    at most :data:`MAX_TRIES` of its ``{``. Never raises."""
    found: list[dict[str, object]] = []
    start = text.find("{")
    for _ in range(MAX_TRIES):
        if start < 0:
            break
        try:
            record, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            start = text.find("{", start + 1)
            continue
        if isinstance(record, dict):
            found.append(record)
        start = text.find("{", end)
    return found


def records(text: str) -> list[tuple[str, datetime]]:
    """(message, time) of each object on the line that has both."""
    found = []
    for record in objects(text):
        message, ts = record.get("message"), asctime(record.get("asctime"))
        if isinstance(message, str) and ts is not None:
            found.append((message, ts))
    return found


def asctime(stamp: object) -> datetime | None:
    """``YYYY-MM-DD HH:MM:SS,mmm`` (the logging module's ``asctime``) on the host's wall
    clock, or None."""
    if not isinstance(stamp, str) or len(stamp) < 19:
        return None
    try:
        ts = datetime(
            int(stamp[0:4]),
            int(stamp[5:7]),
            int(stamp[8:10]),
            int(stamp[11:13]),
            int(stamp[14:16]),
            int(stamp[17:19]),
        )
    except ValueError:
        return None
    millis = stamp[20:23]
    return ts.replace(microsecond=int(millis) * 1000) if millis.isdigit() else ts


def line_time(text: str) -> datetime | None:
    """The ``asctime`` of the line's first object, or None."""
    found = objects(text) if '"asctime"' in text else []
    return asctime(found[0].get("asctime")) if found else None
