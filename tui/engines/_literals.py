"""An args line that prints Python literals: ``Name(key=value, ...)`` or ``{'key': value, ...}``.

Values are read with :func:`ast.literal_eval`, one at a time; a value that is not a
literal (``<object at 0x…>``, ``SomeConfig(...)``) is kept as :class:`Unparsed`
text. Nothing is ever evaluated. SGLang's and vLLM's args lines are read here.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from tui.engines.spec import ReportedValues


@dataclass(frozen=True)
class Unparsed:
    """A reported value that is not a Python literal, kept as its text (never evaluated)."""

    text: str

    def __str__(self) -> str:
        return self.text


def read_literals(line: str, head: str) -> ReportedValues | None:
    """The values after ``head`` (which ends with the opening ``(`` or ``{``), or None when
    the line does not hold ``head``. ``truncated`` is set when the line ends before the
    closing bracket. Never raises."""
    start = line.find(head)
    if start < 0 or not head:
        return None
    opening = start + len(head) - 1
    closer = ")" if line[opening] == "(" else "}"
    items, complete = _split_items(line, opening + 1, closer)
    values = ReportedValues()
    separator = "=" if closer == ")" else ":"
    for item in items:
        key_text, sep, raw_value = _split_pair(item, separator)
        if not sep:
            continue
        key = str(_literal(key_text) if closer == "}" else key_text.strip())
        values[key] = _literal(raw_value)
    values.truncated = not complete
    return values


_TOKENS = re.compile(r"""'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[()\[\]{},]""")
_OPEN = {"(": ")", "[": "]", "{": "}"}
_QUOTED_KEY = re.compile(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^:]*):""")


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
    match = _QUOTED_KEY.match(item)
    if match is None:
        return item, "", ""
    return match.group(1), ":", item[match.end() :]


def _literal(text: str) -> object:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return Unparsed(text)
