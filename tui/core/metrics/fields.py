"""The ``key: value`` part of a metric line: split in line order, values typed.

Every pair is kept, known or not; nothing here raises on any text.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping

#: A value as printed: a number, ``True``/``False``, a list of numbers, or the text itself.
FieldValue = int | float | bool | str | tuple[float, ...]

_NUMBER_UNIT = re.compile(r"([-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(%|[A-Za-z/]+)?\.?")


def field_value(raw: str) -> FieldValue:
    """Type one printed value: ``12`` -> 12, ``97.4%`` -> 97.4, ``512.3 tokens/s`` -> 512.3,
    ``True`` -> True, ``0.780, 0.612`` -> (0.78, 0.612); anything else stays text."""
    if raw[:1] in _NUMERIC_START:
        space = raw.find(" ")
        digits = raw if space < 0 else raw[:space]
        if digits[-1:] == "%" and space < 0:
            digits = digits[:-1]
        try:
            number = float(digits) if "." in digits else int(digits)
        except ValueError:
            return _slow_value(raw)
        if space < 0 or raw.find(" ", space + 1) < 0:
            return number  # "12", "97.4%", "512.3 tokens/s", "4 reqs"
    return _slow_value(raw)


_NUMERIC_START = frozenset("0123456789-+.")


def _slow_value(raw: str) -> FieldValue:
    text = raw.strip()
    if text in ("True", "False"):
        return text == "True"
    if ", " in text:
        try:
            return tuple(float(part) for part in text.split(", "))
        except ValueError:
            return raw
    match = _NUMBER_UNIT.fullmatch(text)
    if match is None:
        return raw
    digits = match.group(1).replace(",", "")
    try:
        return float(digits) if "." in digits or "e" in digits.lower() else int(digits)
    except ValueError:
        return raw


_SPLIT_PAIR = operator.methodcaller("split", ": ", 1)


def split_fields(body: str) -> dict[str, str]:
    """``key: value`` pairs split on ``", "``, in order, values as printed. A part without
    ``": "`` continues the value before it (vLLM's per-position acceptance list)."""
    parts = body.split(", ")
    try:
        return dict(map(_SPLIT_PAIR, parts))  # every part a pair: the common case, in C
    except ValueError:
        pass
    fields: dict[str, str] = {}
    last: str | None = None
    for part in parts:
        key, sep, raw = part.partition(": ")
        if sep:
            fields[key] = raw
            last = key
        elif last is not None and part:
            fields[last] = f"{fields[last]}, {part}"
    return fields


def typed_fields(raw: Mapping[str, str]) -> dict[str, FieldValue]:
    """:func:`field_value` applied to every value, order kept."""
    return {key: field_value(value) for key, value in raw.items()}
