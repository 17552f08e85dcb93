"""The CLI's last line of defence: whatever a verb prints to the terminal is printable.

Host and config text is made printable where it enters babysit's data
(:mod:`tui.core.sanitize`); :func:`guarded_output` makes sure that a path which
forgot still cannot write an escape sequence or a bidi control to the terminal.
(The TUI writes to the terminal through Textual, which renders only our widgets.)
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

from tui.core.sanitize import json_escape


class PrintableStream:
    """A text stream that passes on only printable text (see :func:`guarded_output`)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        if not text.isprintable():
            text = json_escape(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self.stream, name)


@contextlib.contextmanager
def guarded_output() -> Iterator[None]:
    """While inside, everything written to ``sys.stdout`` and ``sys.stderr`` is printable;
    a ``\\uXXXX`` escape never breaks a --json document."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(out), PrintableStream(err)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
