"""Prometheus text exposition (format 0.0.4) the way ``prometheus_client`` writes it.

The simulator builds the text itself so the servers need nothing outside the
standard library; the layout (``_total`` on counters, ``_created`` families as
gauges at the end of each family, ``le`` last, Go-style floats) follows
``prometheus_client.exposition.generate_latest``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

Labels = Mapping[str, str]


def go_float(value: float) -> str:
    """Format a float as ``prometheus_client.utils.floatToGoString`` does."""
    value = float(value)
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def _escape_label(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _escape_help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _sample(name: str, labels: Labels, value: float, extra: tuple[str, str] | None = None) -> str:
    pairs = [f'{key}="{_escape_label(str(labels[key]))}"' for key in sorted(labels)]
    if extra is not None:
        pairs.append(f'{extra[0]}="{_escape_label(extra[1])}"')
    label_text = "{" + ",".join(pairs) + "}" if pairs else ""
    return f"{name}{label_text} {go_float(value)}"


class Exposition:
    """Accumulates metric families; :meth:`text` returns the whole page."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def _head(self, name: str, help_text: str, kind: str) -> None:
        self._lines.append(f"# HELP {name} {_escape_help(help_text)}")
        self._lines.append(f"# TYPE {name} {kind}")

    def _created(self, name: str, help_text: str, rows: Sequence[tuple[Labels, float]]) -> None:
        self._head(f"{name}_created", help_text, "gauge")
        self._lines.extend(_sample(f"{name}_created", labels, value) for labels, value in rows)

    def gauge(self, name: str, help_text: str, rows: Sequence[tuple[Labels, float]]) -> None:
        self._head(name, help_text, "gauge")
        self._lines.extend(_sample(name, labels, value) for labels, value in rows)

    def counter(
        self,
        name: str,
        help_text: str,
        rows: Sequence[tuple[Labels, float]],
        created: float | None = None,
    ) -> None:
        """``name`` without ``_total``; ``created`` adds the ``_created`` family."""
        self._head(f"{name}_total", help_text, "counter")
        self._lines.extend(_sample(f"{name}_total", labels, value) for labels, value in rows)
        if created is not None:
            self._created(name, help_text, [(labels, created) for labels, _ in rows])

    def histogram(
        self,
        name: str,
        help_text: str,
        bounds: Sequence[float],
        rows: Sequence[tuple[Labels, Sequence[int], float]],
        created: float | None = None,
    ) -> None:
        """``rows`` hold per-bucket (non-cumulative) counts, one more than ``bounds`` (+Inf)."""
        self._head(name, help_text, "histogram")
        for labels, counts, total in rows:
            running = 0
            for bound, count in zip([*bounds, math.inf], counts, strict=True):
                running += count
                self._lines.append(
                    _sample(f"{name}_bucket", labels, running, ("le", go_float(bound)))
                )
            self._lines.append(_sample(f"{name}_count", labels, running))
            self._lines.append(_sample(f"{name}_sum", labels, total))
        if created is not None:
            self._created(name, help_text, [(labels, created) for labels, _, _ in rows])

    def text(self) -> str:
        return "\n".join(self._lines) + "\n"
