"""An args line that prints Python literals: ``Name(key=value, ...)`` or ``{'key': value, ...}``.

Values are read with :func:`ast.literal_eval`, one at a time; a value that is not a
literal (``<object at 0x…>``, ``SomeConfig(...)``) is kept as :class:`Unparsed`
text. Nothing is ever evaluated. SGLang's and vLLM's args lines are read here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tui.engines.spec import ArgsHead, ReportedValues


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


#: A mark that may start a token: a quote, a bracket, a comma.
_MARKS = re.compile(r"""['"()\[\]{},]""")
#: A quoted string's text after its opening quote, up to where its closing quote would be.
_QUOTED = {"'": re.compile(r"(?:[^'\\]|\\.)*"), '"': re.compile(r'(?:[^"\\]|\\.)*')}
_OPEN = {"(": ")", "[": "]", "{": "}"}
_QUOTED_KEY = re.compile(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^:]*):""")


def read_reported(line: str, head: ArgsHead) -> ReportedValues | None:
    """The values of an args line whose head is ``head`` (an engine's ``read_reported``)."""
    return read_literals(line, head.text)


def _split_items(line: str, start: int, closer: str) -> tuple[list[str], bool]:
    """Top-level comma-separated items from ``start`` to the matching ``closer``; whether the
    closer was found. Quotes and brackets are respected; an unfinished last item is dropped."""
    items: list[str] = []
    stack: list[str] = []
    begin = start
    for mark, at, end in _tokens(line, start):
        if mark in _OPEN:
            stack.append(_OPEN[mark])
        elif mark in ")]}":
            if stack:
                if stack[-1] == mark:
                    stack.pop()
                continue
            if mark == closer:
                last = line[begin:at]
                if last.strip():
                    items.append(last)
                return items, True
        elif mark == "," and not stack:
            items.append(line[begin:at])
            begin = end
    return items, False


def _tokens(line: str, start: int) -> Iterator[tuple[str, int, int]]:
    """(mark, start, end) of each bracket, comma and quoted string from ``start`` (a quoted
    string's mark is its quote). A quote that is not closed is no token, nor is any later
    quote of its kind up to where its text stops: each is read once."""
    unclosed = {"'": -1, '"': -1}
    at = start
    while (found := _MARKS.search(line, at)) is not None:
        mark, at = found.group(), found.start()
        if mark not in unclosed:
            yield mark, at, at + 1
            at += 1
        elif at < unclosed[mark]:
            at += 1
        else:
            stop = _QUOTED[mark].match(line, at + 1).end()
            if line.startswith(mark, stop):
                yield mark, at, stop + 1
                at = stop + 1
            else:
                unclosed[mark] = stop
                at += 1


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
    # SystemError: CPython 3.11's AST constructor, its depth count upset by a deep input
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, SystemError):
        return Unparsed(text)
