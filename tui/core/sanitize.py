"""Make untrusted text (log lines, paths, anything a host or a config said) safe to show.

Text comes from programs on other machines and from files people copy and paste.
Before a terminal sees it:

- every escape sequence (CSI, OSC, DCS, …) and every C0/C1 control except tab
  is removed from log lines (:func:`clean_line`), and invalid UTF-8 becomes
  U+FFFD; otherwise ``\\x1b]0;pwned\\x07`` retitles the window of the person
  reading it, ``\\x1b[2J`` clears their screen and OSC 52 writes their clipboard;
- every Unicode bidirectional control (U+202E RIGHT-TO-LEFT OVERRIDE and its
  kin) is removed too: it makes a line read as something it is not;
- short facts (a file name, a user, a host's error) keep every character
  visible instead (:func:`printable`): the reader sees ``\\x1b`` or ``\\u202e``
  where it stands, so a name is never silently changed into another name.

:func:`printable_text` is the same for multi-line text (it keeps newlines).
Answers from the agent pass through :mod:`tui.core.answers`, which applies these
at the one place they enter babysit's data.
"""

from __future__ import annotations

import re

#: The Unicode bidirectional controls: ALM, LRM, RLM, LRE RLE PDF LRO RLO, LRI RLI FSI PDI.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

# Lone surrogates (from JSON's "\ud800") cannot be written to a UTF-8 terminal at all.
_SURROGATE = "\ud800-\udfff"
# LINE SEPARATOR and PARAGRAPH SEPARATOR: str.splitlines() (and some terminals) break there.
_LINE_BREAKS = "\u2028\u2029"

# C0 controls except tab, DEL, C1 controls, bidi controls, lone surrogates and line
# separators: any of them can move the cursor, retitle the window, hide text or end the
# program.
_UNICODE = f"{BIDI_CONTROLS}{_SURROGATE}{_LINE_BREAKS}"
_CONTROL = re.compile(f"[\\x00-\\x08\\x0a-\\x1f\\x7f-\\x9f{_UNICODE}]")
#: The same but keeping newlines, for text of several lines: what no text babysit shows
#: may hold (hosts.yaml refuses the same set).
UNSAFE_TEXT = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f{_UNICODE}]")

# Escape sequences, 7-bit (ESC ...) and 8-bit (CSI U+009B, OSC U+009D, ...):
#  - CSI: ESC [ or U+009B, parameter bytes, intermediate bytes, one final byte;
#  - OSC, DCS, SOS, PM, APC: ESC ] P X ^ _ (or U+009D U+0090 U+0098 U+009E U+009F)
#    up to BEL or ST (ESC \\ or U+009C), or to the end of the line if unterminated;
#  - any other ESC followed by intermediates and one final byte (ESC ( B, ESC 7, …).
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)


def clean_line(text: str) -> str:
    """``text`` with escape sequences removed, and controls other than tab dropped."""
    if text.isprintable():
        return text
    return _CONTROL.sub("", _ESCAPES.sub("", text))


def clean_bytes(data: bytes) -> str:
    """Decode log bytes (invalid UTF-8 becomes U+FFFD) and clean them with :func:`clean_line`."""
    return clean_line(data.decode("utf-8", "replace"))


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\n``, ``\\x1b``, ``\\u202e``).

    For short facts such as file names, where the reader must see exactly what is
    there rather than have it interpreted or silently dropped.
    """
    if text.isprintable():
        return text
    return _CONTROL.sub(_escape, text)


def printable_text(text: str) -> str:
    """:func:`printable` for text of several lines: newlines stay newlines."""
    if text.isprintable():
        return text
    return UNSAFE_TEXT.sub(_escape, text)


def printable_bytes(data: bytes) -> str:
    """Decode a host's bytes (invalid UTF-8 becomes U+FFFD) as a :func:`printable` fact."""
    return printable(data.decode("utf-8", "replace"))


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if code <= 0xFF:
        return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{code:02x}")
    return f"\\u{code:04x}"


def json_escape(text: str) -> str:
    """``text`` with every unsafe character as ``\\uXXXX``: it reads as itself on a
    terminal and is a valid escape inside a JSON string."""
    return UNSAFE_TEXT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
