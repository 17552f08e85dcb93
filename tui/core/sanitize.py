"""Make untrusted text (remote paths, log lines) safe to put on a terminal."""

from __future__ import annotations

import re

# C0 controls except tab, DEL, and C1 controls: any of them can move the cursor,
# retitle the window or hide text once a terminal sees it.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\n``, ``\\x1b``).

    For short facts such as file names, where the reader must see exactly what is
    there rather than have it interpreted.
    """
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")
