"""Answers from hosts, read at one boundary: parsed, bounded, checked and made printable.

Everything the agent says (a probe's answer, a follower's frame header, a kill's
events) is JSON written by a program on a machine babysit may not trust. It
enters babysit's data only through :func:`decode`, which

- refuses what is not one JSON object, or is nested deeper than :data:`MAX_DEPTH`
  (Python's parser would otherwise end in a ``RecursionError``);
- makes every string printable (:func:`tui.core.sanitize.printable_text`:
  escapes and bidi controls are shown as ``\\x1b`` or ``\\u202e``, never passed
  on), keys included, so a later path that forgets to clean cannot put a host's
  escape sequence on a terminal;

and through the typed readers of :class:`Fields`, which say exactly where an
answer does not have the shape it must have (``services[0].runs[1] is a string,
not an object``). Callers turn :class:`AnswerError` into an UNKNOWN verdict or an
error event with that one line; a bad answer never ends in a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from tui.core.sanitize import printable, printable_text

#: Deeper than any answer the agent writes (its deepest is about 6 levels).
MAX_DEPTH = 32
#: Values in one answer: a probe of 1,024 services holds about 100 each.
MAX_NODES = 1_000_000
#: Numbers babysit stores are pids, sizes, offsets, inodes and ticks: all below 2**63.
MAX_INT = 2**63 - 1
#: Timestamps from a host are refused past the year 9999 less a day (datetime cannot show
#: them in every time zone).
MAX_TIME = 253402300799.0 - 86400


class AnswerError(ValueError):
    """An answer from a host is not JSON, or does not have the shape it must have."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where} {problem}")
        self.where = where
        self.problem = problem


def decode(raw: bytes | str, what: str) -> Fields:
    """One JSON object from a host, every string in it made printable.

    ``what`` names the answer in errors ("the probe's answer", "a frame header").
    """
    try:
        data = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise AnswerError(what, f"is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as error:
        raise AnswerError(what, f"is not JSON ({_short(str(error))})") from None
    return read(data, what)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON knows")


def read(data: object, what: str) -> Fields:
    """An answer already parsed (a record read back, a test's), checked and made printable
    as :func:`decode` does."""
    if isinstance(data, Fields):
        return data
    clean = _clean(data, 0, what, [MAX_NODES - 1])  # less the answer itself
    if not isinstance(clean, dict):
        raise AnswerError(what, f"is {_kind(clean)}, not an object")
    return Fields(clean, what)


def _clean(value: object, depth: int, where: str, budget: list[int]) -> object:
    """``value`` with every string made printable (keys as facts, values as text),
    refused when it is too deep, too big or holds a number that is not finite.
    ``budget`` counts the values left to read; ``value`` itself was counted by its
    caller."""
    if isinstance(value, str):
        return value if value.isprintable() else printable_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise AnswerError(where, "holds a number that is not finite")
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth >= MAX_DEPTH:
        raise AnswerError(where, f"is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        keys = [key if key.isprintable() else printable(key) for key in value]
        return dict(zip(keys, _clean_all(list(value.values()), depth, where, budget), strict=True))
    if isinstance(value, list):
        return _clean_all(value, depth, where, budget)
    raise AnswerError(where, f"holds {_kind(value)}")  # json.loads makes nothing else


def _clean_all(items: list[object], depth: int, where: str, budget: list[int]) -> list[object]:
    """:func:`_clean` of a container's ``items``: its strings and integers here, in one
    loop, not one call each (an answer holds thousands, read on every refresh)."""
    budget[0] -= len(items)
    if budget[0] < 0:
        raise AnswerError(where, f"holds more than {MAX_NODES:,} values")
    clean: list[object] = []
    for item in items:
        if isinstance(item, str):
            clean.append(item if item.isprintable() else printable_text(item))
        elif (kind := type(item)) is int or kind is bool or item is None:
            clean.append(item)
        else:
            clean.append(_clean(item, depth + 1, where, budget))
    return clean


_KINDS = (
    (bool, "true or false"),
    (int, "a number"),
    (float, "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "an object"),
)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return next((word for kind, word in _KINDS if isinstance(value, kind)), type(value).__name__)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Fields:
    """One JSON object of an answer, read through typed getters that name where it failed.

    Strings read with :meth:`string` are one line (a newline shows as ``\\n``);
    :meth:`text` keeps the newlines of multi-line text (a CSV, a /metrics page).
    A missing key and ``null`` are the same to the ``opt_`` readers.
    """

    data: Mapping[str, object]
    where: str

    def __contains__(self, name: str) -> bool:
        return name in self.data

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def _at(self, name: str) -> str:
        return f"{self.where}: {name}" if ":" not in self.where else f"{self.where}.{name}"

    def _fail(self, name: str, value: object, expected: str) -> AnswerError:
        return AnswerError(self._at(name), f"is {_kind(value)}, not {expected}")

    def _required(self, name: str) -> object:
        value = self.data.get(name)
        if value is None:
            raise AnswerError(self._at(name), "is missing")
        return value

    # numbers

    def integer(self, name: str) -> int:
        return self._int(name, self._required(name))

    def opt_integer(self, name: str) -> int | None:
        value = self.data.get(name)
        return None if value is None else self._int(name, value)

    def _int(self, name: str, value: object) -> int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._fail(name, value, "a whole number")
        if not -MAX_INT <= value <= MAX_INT:
            raise AnswerError(self._at(name), "is out of range")
        return value

    def number(self, name: str) -> float:
        return self._number(name, self._required(name))

    def opt_number(self, name: str) -> float | None:
        value = self.data.get(name)
        return None if value is None else self._number(name, value)

    def _number(self, name: str, value: object) -> float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self._fail(name, value, "a number")
        number = float(value) if abs(value) <= 1e300 else math.inf
        if not math.isfinite(number):
            raise AnswerError(self._at(name), "is not a finite number")
        return number

    def time(self, name: str) -> float:
        return self._time(name, self._required(name))

    def opt_time(self, name: str) -> float | None:
        value = self.data.get(name)
        return None if value is None else self._time(name, value)

    def _time(self, name: str, value: object) -> float:
        number = self._number(name, value)
        if not 0 <= number <= MAX_TIME:
            raise AnswerError(self._at(name), "is not a time babysit can show")
        return number

    def flag(self, name: str) -> bool:
        """A true/false field; missing or null is false."""
        value = self.data.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            raise self._fail(name, value, "true or false")
        return value

    def opt_flag(self, name: str) -> bool | None:
        value = self.data.get(name)
        return None if value is None else self.flag(name)

    # strings

    def string(self, name: str) -> str:
        return self._str(name, self._required(name))

    def opt_string(self, name: str) -> str | None:
        value = self.data.get(name)
        return None if value is None else self._str(name, value)

    def _str(self, name: str, value: object) -> str:
        if not isinstance(value, str):
            raise self._fail(name, value, "a string")
        return printable(value)

    def text(self, name: str) -> str:
        value = self._required(name)
        if not isinstance(value, str):
            raise self._fail(name, value, "a string")
        return value

    def opt_text(self, name: str) -> str | None:
        value = self.data.get(name)
        return None if value is None else self.text(name)

    def integers(self, name: str) -> list[int]:
        """A list of whole numbers; missing or null is empty."""
        return [self._int(f"{name}[{i}]", v) for i, v in enumerate(self._list(name))]

    def pids_or_words(self, name: str) -> list[int | str]:
        """A list of pids, or of the host's words where it could not tell one
        (``"unknown (not readable)"``); missing or null is empty."""
        out: list[int | str] = []
        for i, value in enumerate(self._list(name)):
            out.append(
                self._str(f"{name}[{i}]", value)
                if isinstance(value, str)
                else self._int(f"{name}[{i}]", value)
            )
        return out

    def strings(self, name: str) -> tuple[str, ...]:
        """A list of strings; missing or null is empty."""
        return tuple(self._str(f"{name}[{i}]", v) for i, v in enumerate(self._list(name)))

    # structure

    def child(self, name: str) -> Fields:
        return self._fields(name, self._required(name))

    def opt_child(self, name: str) -> Fields | None:
        value = self.data.get(name)
        return None if value is None else self._fields(name, value)

    def _fields(self, name: str, value: object) -> Fields:
        if not isinstance(value, dict):
            raise self._fail(name, value, "an object")
        return Fields(value, self._at(name))

    def children(self, name: str) -> tuple[Fields, ...]:
        """A list of objects; missing or null is empty."""
        return tuple(self._fields(f"{name}[{i}]", v) for i, v in enumerate(self._list(name)))

    def _list(self, name: str) -> list[object]:
        value = self.data.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._fail(name, value, "a list")
        return value

    def values(self, name: str) -> list[object]:
        """A list of anything (already made printable); missing or null is empty."""
        return self._list(name)

    def plain(self) -> dict[str, object]:
        """This object as plain data for free-form use (a record, a note): every string in
        it one line (a host's newline shows as ``\\n``, never starts a line of its own)."""
        return _one_line(self.data)  # type: ignore[return-value]

    def plain_text(self) -> dict[str, object]:
        """This object as plain data whose strings may span lines (a CSV, a /metrics page)."""
        return dict(self.data)


def _one_line(value: object) -> object:
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {k: _one_line(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_one_line(v) for v in value]
    return value


__all__ = ["MAX_DEPTH", "AnswerError", "Fields", "decode", "read"]
