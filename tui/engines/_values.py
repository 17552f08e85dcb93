"""A running server's values (argparse destination -> value) as the launch diff gives
them: typed command-line words (``3``, ``"3"``), an args line's literals, or text kept
unparsed. Read here the way every engine's ``draft_tokens`` needs them."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping

#: Values a server's ``off`` spells (``None`` printed as text, an empty flag).
_OFF = ("", "none", "null", "false")


def text_of(value: object) -> str | None:
    """A value as text (an unparsed literal's own text), or None for no text."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (tuple, list)):
        return text_of(value[-1]) if value else None
    return str(value).strip()


def is_set(value: object) -> bool:
    """Whether a value turns its option on: not None, False, empty, or their spellings."""
    if value is True:
        return True
    text = text_of(value)
    return text is not None and text.lower() not in _OFF


def whole(value: object) -> int | None:
    """A value as a whole number at or above 0, or None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if value >= 0 else None
    text = text_of(value)
    if text is None or not text.isdigit() or len(text) > 9:
        return None
    return int(text)


def mapping(value: object) -> Mapping[str, object] | None:
    """A value that is an object: a dict, or its text as JSON or a Python literal."""
    if isinstance(value, Mapping):
        return value
    text = text_of(value)
    if not text or not text.startswith("{"):
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            found = parse(text)
        # SystemError: CPython 3.11's AST constructor, its depth count upset by a deep input
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError, SystemError):
            continue
        if isinstance(found, dict):
            return found
    return None
