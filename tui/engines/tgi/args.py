"""The arguments TGI's launcher runs with, read from the ``{:#?}`` dump it logs at startup.

The launcher logs ``tracing::info!("{:#?}", args)``: Rust's pretty ``Debug`` of its
clap ``Args`` struct, one field a line, a field's name its flag's (``--model-id``
sets ``model_id``)::

    2025-05-01T01:31:15.912301Z  INFO text_generation_launcher: Args {
        model_id: "bigscience/bloom-560m",
        num_shard: Some(
            2,
        ),
        quantize: Some(
            BitsandbytesNf4,
        ),
        cuda_graphs: Some(
            [
                1,
                2,
            ],
        ),
        trust_remote_code: false,
        ...
    }

With ``--json-output`` the same text is the JSON line's message (newlines
escaped); TGI <= 1.x printed ``{:?}``, the whole dump on one line. Values read
as: ``Some(x)`` -> x, ``None`` -> None, ``"text"`` -> text, ``true``/``false``,
numbers, lists, and an enum variant as the word its flag takes
(``BitsandbytesNf4`` -> ``bitsandbytes-nf4``). Nothing is evaluated; a value of
another shape is kept as its text. A dump cut short (by the agent's bounds, or a
log still being written) is ``truncated``: it gives the fields that end before the
cut, and the value the cut runs into is not reported (its text is not the value).
"""

from __future__ import annotations

import json
import re

from tui.engines.spec import ArgsHead, ReportedValues

#: The ``form`` of each head: the pretty dump (``{:#?}``, one field a line), the one-line
#: dump of TGI <= 1.x (``{:?}``), and the JSON line's.
TEXT_FORM = "tgi-args"
LINE_FORM = "tgi-args-line"
JSON_FORM = "tgi-args-json"
_OPENING = "Args {"

_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"?'  # a string (unterminated at a cut)
    r"|'(?:[^'\\]|\\.)*'"  # a char
    r"|[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])"  # a number
    r"|[A-Za-z_]\w*"  # a name: a field, a variant, None, Some, true, false
    r"|[^\s\w]"  # punctuation
)
_ESCAPE = re.compile(r"\\(u\{([0-9a-fA-F]{1,6})\}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_CLOSERS = {"(": ")", "[": "]", "{": "}"}
# Variants whose clap name is not the kebab-case of the variant's (``#[clap(name = …)]``).
_VARIANT_WORDS = {"BFloat16": "bfloat16", "Fp8e4m3fn": "fp8_e4m3fn", "Fp8e5m2": "fp8_e5m2"}
_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: Nesting deeper than this is kept as text (no field of ``Args`` nests beyond three).
MAX_DEPTH = 16


class _Unreadable(Exception):
    """A value that is not of a shape this module reads."""


def variant_word(name: str) -> str:
    """The word a clap ``ValueEnum`` variant is given as on the command line."""
    return _VARIANT_WORDS.get(name) or _WORD_BOUNDARY.sub("-", name).lower()


def _unescape(literal: str) -> str:
    body = literal[1:-1] if len(literal) > 1 and literal.endswith(literal[0]) else literal[1:]

    def one(match: re.Match[str]) -> str:
        if match.group(2):
            code = int(match.group(2), 16)
            return chr(code) if code < 0x110000 else match.group(0)
        char = match.group(1)
        return _SIMPLE_ESCAPES.get(char, char)

    return _ESCAPE.sub(one, body)


class _Dump:
    """Tokens of one dump, read from a position on."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(text)]
        self.at = 0

    def peek(self, ahead: int = 0) -> str | None:
        index = self.at + ahead
        return self.tokens[index][0] if index < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise _Unreadable("the dump ends here")
        self.at += 1
        return token

    def expect(self, token: str) -> None:
        if self.take() != token:
            raise _Unreadable(f"not {token}")

    def value(self, depth: int = 0) -> object:
        if depth > MAX_DEPTH:
            raise _Unreadable("nested too deep")
        item = self.take()
        if item[0] in "\"'":
            return _unescape(item)
        if item[0].isdigit() or (item[0] in "+-" and len(item) > 1):
            return float(item) if any(c in item for c in ".eE") else int(item)
        if item in ("[", "("):
            return self.sequence(_CLOSERS[item], depth)
        if item == "{":
            return self.mapping(depth)
        if not (item[0].isalpha() or item[0] == "_"):
            raise _Unreadable(f"unexpected {item!r}")
        return self.named(item, depth)

    def named(self, name: str, depth: int) -> object:
        if name == "None":
            return None
        if name in ("true", "false"):
            return name == "true"
        following = self.peek()
        if name == "Some" and following == "(":
            self.take()
            inner = self.value(depth + 1)
            if self.peek() == ",":
                self.take()
            self.expect(")")
            return inner
        if following == "{":
            self.take()
            return self.fields(depth + 1)
        if following == "(":
            self.take()
            return self.sequence(")", depth)
        return variant_word(name)

    def sequence(self, closer: str, depth: int) -> list[object]:
        items: list[object] = []
        while self.peek() != closer:
            items.append(self.value(depth + 1))
            if self.peek() == ",":
                self.take()
            elif self.peek() != closer:
                raise _Unreadable(f"no {closer}")
        self.take()
        return items

    def mapping(self, depth: int) -> dict[str, object]:
        found: dict[str, object] = {}
        while self.peek() != "}":
            key = self.value(depth + 1)
            self.expect(":")
            found[str(key)] = self.value(depth + 1)
            if self.peek() == ",":
                self.take()
            elif self.peek() != "}":
                raise _Unreadable("no }")
        self.take()
        return found

    def fields(self, depth: int) -> dict[str, object]:
        """The fields of a struct nested in ``Args``, up to its ``}``."""
        found: dict[str, object] = {}
        while self.peek() != "}":
            name = self.take()
            if not name.isidentifier():
                raise _Unreadable("not a field")
            self.expect(":")
            found[name] = self.value(depth)
            if self.peek() == ",":
                self.take()
            elif self.peek() != "}":
                raise _Unreadable("no }")
        self.take()
        return found

    def arguments(self) -> ReportedValues:
        """The fields of ``Args`` up to its closing ``}``: a field that cannot be read is
        kept as its text. A dump that ends before that ``}`` is ``truncated``: it keeps
        the fields that end before the cut, and a value the cut runs into is left out."""
        found = ReportedValues()
        while self.peek() not in ("}", None):
            name = self.take()
            if self.peek() != ":" or not name.isidentifier():
                self.skip_item()
            else:
                self.take()
                value = self.field_value()
                if self.peek() is None:
                    break
                found[name] = value
            if self.peek() == ",":
                self.take()
        found.truncated = self.peek() != "}"
        return found

    def field_value(self) -> object:
        """The value of a field of ``Args``, or its text when it is not of a shape read here."""
        begin = self.at
        try:
            value = self.value(0)
            if self.peek() in (",", "}", None):
                return value
        except _Unreadable:
            pass
        self.at = begin
        return self.skip_item()

    def skip_item(self) -> str:
        """Skip to the next ``,`` or ``}`` outside brackets, or the end; the text skipped."""
        begin = self.tokens[self.at][1] if self.at < len(self.tokens) else len(self.text)
        end = begin
        stack: list[str] = []
        while (token := self.peek()) is not None:
            if not stack and token in (",", "}"):
                break
            if token in _CLOSERS:
                stack.append(_CLOSERS[token])
            elif stack and token == stack[-1]:
                stack.pop()
            end = self.tokens[self.at][2]
            self.at += 1
        return self.text[begin:end].strip()


def dump_text(line: str, head: ArgsHead) -> str | None:
    """The ``Args { … }`` text of an args line (a JSON line's message for the JSON form)."""
    if head.form == JSON_FORM or line.lstrip().startswith('{"'):
        start = line.find("{")
        try:
            event, _ = json.JSONDecoder().raw_decode(line, max(start, 0))
        except (ValueError, RecursionError):
            return None
        if not isinstance(event, dict):
            return None
        nested = event.get("fields")
        message = event.get("message", nested.get("message") if isinstance(nested, dict) else None)
        line = message if isinstance(message, str) else ""
    start = line.find(_OPENING)
    return None if start < 0 else line[start:]


def read_reported(line: str, head: ArgsHead) -> ReportedValues | None:
    """The launcher's arguments on its args line (or lines), field name -> value, marked
    ``truncated`` when the dump ends before its closing ``}``; None when the line holds
    no ``Args {`` dump. Never raises."""
    text = dump_text(line, head)
    if text is None:
        return None
    dump = _Dump(text)
    dump.at = 2  # past "Args" and "{"
    try:
        return dump.arguments()
    except (_Unreadable, ValueError, RecursionError):
        return None
