"""How Rust's formatting machinery writes the values TGI logs and exposes.

``{:#?}`` of a struct (the launcher's ``Args`` dump), ``{:?}`` of a
``std::time::Duration`` (the router's span timings) and ``Display`` of an
``f64`` (metric values and histogram bounds in ``metrics-exporter-prometheus``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

INDENT = "    "
NANOS_PER_SECOND = 1_000_000_000
_UNITS = ((NANOS_PER_SECOND, 9, "s"), (1_000_000, 6, "ms"), (1_000, 3, "µs"))


@dataclass(frozen=True)
class Some:
    """``Option::Some(value)``; ``None`` (Python's) stands for ``Option::None``."""

    value: object


@dataclass(frozen=True)
class Variant:
    """A unit enum variant such as ``Awq`` or ``On``, printed bare."""

    name: str


def f64_display(value: float) -> str:
    """``format!("{}", x)`` of an f64: shortest round-trip digits, no ``.0`` on integers."""
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e16:
        return str(int(value))
    text = repr(float(value))
    if "e" not in text:
        return text
    mantissa, _, exponent = text.partition("e")
    digits = mantissa.replace("-", "").replace(".", "")
    power = int(exponent)
    sign = "-" if value < 0 else ""
    if power < 0:
        return f"{sign}0.{'0' * (-power - 1)}{digits}"
    return f"{sign}{digits}{'0' * (power - len(digits) + 1)}"


def float_debug(value: float) -> str:
    """``{:?}`` of an f32/f64: like Display, but integers keep ``.0``."""
    text = f64_display(value)
    return text + ".0" if text.lstrip("-").isdigit() else text


def duration_debug(nanos: int) -> str:
    """``{:?}`` of a Duration: ``1.124718123s``, ``45.2ms``, ``310µs``, ``512ns``."""
    nanos = max(int(nanos), 0)
    for unit, digits, suffix in _UNITS:
        if nanos >= unit:
            whole, frac = divmod(nanos, unit)
            tail = f"{frac:0{digits}d}".rstrip("0")
            return f"{whole}.{tail}{suffix}" if tail else f"{whole}{suffix}"
    return f"{nanos}ns"


def debug(value: object, depth: int = 0, pretty: bool = True) -> str:  # noqa: PLR0911 - one per type
    """``{:#?}`` (``pretty``) or ``{:?}`` of a value built from the types above."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Variant):
        return value.name
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return float_debug(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, Some):
        inner = debug(value.value, depth + 1, pretty)
        if not pretty:
            return f"Some({inner})"
        pad = INDENT * (depth + 1)
        return f"Some(\n{pad}{inner},\n{INDENT * depth})"
    if isinstance(value, (list, tuple)):
        return _sequence(value, depth, pretty)
    raise TypeError(f"no Rust Debug form for {type(value).__name__}")


def _sequence(items: Sequence[object], depth: int, pretty: bool) -> str:
    if not items:
        return "[]"
    if not pretty:
        return "[" + ", ".join(debug(item, depth, False) for item in items) + "]"
    pad = INDENT * (depth + 1)
    body = "".join(f"{pad}{debug(item, depth + 1)},\n" for item in items)
    return f"[\n{body}{INDENT * depth}]"


def struct_debug(name: str, fields: Sequence[tuple[str, object]], pretty: bool = True) -> str:
    """``{:#?}`` of a struct: one ``field: value,`` line each, four-space indent."""
    if not pretty:
        inner = ", ".join(f"{key}: {debug(value, 0, False)}" for key, value in fields)
        return f"{name} {{ {inner} }}"
    body = "".join(f"{INDENT}{key}: {debug(value, 1)},\n" for key, value in fields)
    return f"{name} {{\n{body}}}"
