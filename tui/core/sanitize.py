"""Make untrusted text (remote paths, log lines) safe to put on a terminal.

Log bytes come from a program on another machine. Before any widget or
terminal sees them, every escape sequence (CSI, OSC, DCS, …) and every C0/C1
control except tab is removed, and invalid UTF-8 becomes U+FFFD. Otherwise a
line such as ``\\x1b]0;pwned\\x07`` retitles the window and ``\\x1b[2J`` clears
the screen of the person reading it.
"""

from __future__ import annotations

import re

# C0 controls except tab, DEL, and C1 controls: any of them can move the cursor,
# retitle the window or hide text once a terminal sees it.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")

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
    """``text`` with escape sequences removed and controls other than tab dropped."""
    if text.isprintable():
        return text
    return _CONTROL.sub("", _ESCAPES.sub("", text))


def clean_bytes(data: bytes) -> str:
    """Decode log bytes (invalid UTF-8 becomes U+FFFD) and clean them with :func:`clean_line`."""
    return clean_line(data.decode("utf-8", "replace"))


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\n``, ``\\x1b``).

    For short facts such as file names, where the reader must see exactly what is
    there rather than have it interpreted or silently dropped.
    """
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")
