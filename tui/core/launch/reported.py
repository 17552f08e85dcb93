"""The arguments a server printed about itself at startup (its args line).

Reported values are read as Python literals with :func:`ast.literal_eval`, one
value at a time; a value that is not a literal (``<object at 0x…>``,
``SomeConfig(...)``) is kept as :class:`Unparsed` text. Nothing is ever evaluated.
Which lines are args lines, and in which form, is :data:`tui.core.engines.ARGS_HEADS`.
"""

from __future__ import annotations

import ast
import enum
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tui.core.engines import ARGS_HEADS
from tui.core.metrics.model import Engine
from tui.core.secrets import redact_value, secret_name


class ReportedFormat(enum.Enum):
    SGLANG_REPR = "sglang-server-args"
    SGLANG_DICT = "sglang-server-args-dict"
    VLLM_NAMESPACE = "vllm-args-namespace"
    VLLM_NON_DEFAULT = "vllm-non-default-args"

    @property
    def complete(self) -> bool:
        """Whether the report lists every argument (else only the ones not at their default)."""
        return self is not ReportedFormat.VLLM_NON_DEFAULT

    @property
    def engine(self) -> Engine:
        return Engine.SGLANG if self.value.startswith("sglang") else Engine.VLLM


_REPORT_HEADS = tuple((head.text, ReportedFormat(head.form)) for head in ARGS_HEADS)


@dataclass(frozen=True)
class Unparsed:
    """A reported value that is not a Python literal, kept as its text (never evaluated)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class ReportedArgs:
    """The arguments a server printed about itself at startup.

    ``values`` maps argparse destinations to literal values (or :class:`Unparsed`).
    ``truncated`` is true when the line ended before the closing bracket (a cut
    line): the values seen are kept, the rest is unknown. ``offset`` is the log
    offset of the line, when the caller knows it.
    """

    format: ReportedFormat
    values: Mapping[str, object]
    truncated: bool = False
    offset: int | None = None

    @property
    def complete(self) -> bool:
        return self.format.complete and not self.truncated

    @property
    def engine(self) -> Engine:
        return self.format.engine


def parse_reported(line: str, offset: int | None = None) -> ReportedArgs | None:
    """The arguments on a startup line, or None if the line prints none. Never raises."""
    if "args" not in line:
        return None
    found = next(((h, f) for h, f in _REPORT_HEADS if h in line), None)
    if found is None:
        return None
    head, fmt = found
    start = line.find(head)
    opening = start + len(head) - 1
    closer = ")" if line[opening] == "(" else "}"
    items, complete = _split_items(line, opening + 1, closer)
    values: dict[str, object] = {}
    separator = "=" if closer == ")" else ":"
    for item in items:
        key_text, sep, raw_value = _split_pair(item, separator)
        if not sep:
            continue
        key = str(_literal(key_text) if closer == "}" else key_text.strip())
        value = _literal(raw_value)
        values[key] = _redacted(value) if secret_name(key) else value
    return ReportedArgs(fmt, values, truncated=not complete, offset=offset)


_TOKENS = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[()\[\]{},]""")
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _split_items(line: str, start: int, closer: str) -> tuple[list[str], bool]:
    """Top-level comma-separated items from ``start`` to the matching ``closer``; whether the
    closer was found. Quotes and brackets are respected; an unfinished last item is dropped."""
    items: list[str] = []
    stack: list[str] = []
    begin = start
    for match in _TOKENS.finditer(line, start):
        mark = match.group()
        if mark in _OPEN:
            stack.append(_OPEN[mark])
        elif mark in ")]}":
            if stack:
                if stack[-1] == mark:
                    stack.pop()
                continue
            if mark == closer:
                last = line[begin : match.start()]
                if last.strip():
                    items.append(last)
                return items, True
        elif mark == "," and not stack:
            items.append(line[begin : match.start()])
            begin = match.end()
    return items, False


def _split_pair(item: str, separator: str) -> tuple[str, str, str]:
    """``key=value`` or ``'key': value``, the separator found outside quotes."""
    if separator == "=":
        return item.partition("=")
    match = re.match(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^:]*):""", item)
    if match is None:
        return item, "", ""
    return match.group(1), ":", item[match.end() :]


def _redacted(value: object) -> object:
    """A reported secret as a redacted word, its digest that of the text the command line
    would carry (``api_key='sk-…'`` and ``--api-key sk-…`` compare equal)."""
    if isinstance(value, Unparsed):
        return redact_value(value.text)
    if value is None or isinstance(value, bool):
        return value
    return redact_value(value if isinstance(value, (str, int, float)) else value_text(value))


def _literal(text: str) -> object:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Unparsed(text)


def value_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, separators=(", ", ": "))
        except (TypeError, ValueError):
            return repr(value)
    return str(value)
