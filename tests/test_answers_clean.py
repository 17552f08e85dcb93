"""The one boundary every answer from a host crosses (tui/core/answers.py): each string
made printable wherever it sits, and an answer too deep, too big or holding a number
that is not finite refused with its reason."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tui.core import answers
from tui.core.answers import MAX_DEPTH, AnswerError, decode, read
from tui.core.sanitize import printable, printable_text

pytestmark = pytest.mark.unit

#: Text with what a hostile host would send: escapes, controls, bidi overrides, newlines.
TEXT = st.text(
    st.sampled_from(["a", "é", " ", "\n", "\t", "\x1b", "\x07", "\x9b", "\u202e", "\u2066", "["]),
    max_size=6,
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=30,
)


def spec(value: object) -> object:
    """What the boundary promises, written plainly: keys as facts, strings as text."""
    if isinstance(value, str):
        return printable_text(value)
    if isinstance(value, dict):
        return {printable(k): spec(v) for k, v in value.items()}
    if isinstance(value, list):
        return [spec(v) for v in value]
    return value


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(TEXT, VALUES, max_size=5))
def test_every_string_anywhere_is_made_printable_and_nothing_else_changes(data) -> None:
    clean = decode(json.dumps(data), "the answer").data
    assert clean == spec(data)
    assert repr(clean) == repr(spec(data))  # same types too (True stays True, 1 stays 1)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"a": 1e999}', "not finite"),
        ('{"a": [1, [2, -1e999]]}', "not finite"),
        ("[1]", "is a list, not an object"),
        ('{"a": NaN}', "is not JSON"),
    ],
)
def test_what_is_not_a_number_or_an_object_is_refused(text: str, said: str) -> None:
    with pytest.raises(AnswerError, match=said):
        decode(text, "the answer")


def test_nested_past_the_limit_is_refused_and_at_it_is_read() -> None:
    def nest(levels: int) -> object:
        value: object = "x"
        for _ in range(levels):
            value = {"k": [value]}
        return value

    read(nest(MAX_DEPTH // 2 - 1), "the answer")
    with pytest.raises(AnswerError, match="nested deeper than"):
        read(nest(MAX_DEPTH // 2 + 1), "the answer")


def test_more_values_than_the_budget_is_refused_counting_every_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # {"a": [1, "x", {"b": null}]}: the object, the list, 1, "x", the inner object, null
    monkeypatch.setattr(answers, "MAX_NODES", 6)
    read({"a": [1, "x", {"b": None}]}, "the answer")
    monkeypatch.setattr(answers, "MAX_NODES", 5)
    with pytest.raises(AnswerError, match="holds more than 5 values"):
        read({"a": [1, "x", {"b": None}]}, "the answer")
