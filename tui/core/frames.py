"""Decoding the agent's output: JSON header lines, each optionally followed by raw bytes.

See ``tui/agent/__init__.py`` for the frames and their fields. The decoder holds
at most one partial frame, whatever the chunking of the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui.core.answers import AnswerError, Fields, decode
from tui.core.sanitize import printable_bytes

#: A header longer than this is not a header: the stream is corrupt.
MAX_HEADER = 64 * 1024
#: The agent sends at most 256 KiB of log bytes a frame (tui/agent/follow.py: CHUNK); a header that
#: announces more than this is not one of its frames.
MAX_PAYLOAD = 16 * 1024 * 1024


class FrameError(ValueError):
    """The agent's output does not follow the protocol (a field of the wrong type is an
    :class:`~tui.core.answers.AnswerError`, also a ValueError)."""


@dataclass(frozen=True)
class Frame:
    """One frame: its kind, its header's fields (every string already printable, see
    :mod:`tui.core.answers`) and its payload of log bytes."""

    kind: str
    fields: dict[str, object] = field(default_factory=dict)
    payload: bytes = b""

    @property
    def read(self) -> Fields:
        """The header's fields through typed readers that raise :class:`AnswerError`."""
        return Fields(self.fields, f"a {self.kind} frame")

    def int(self, name: str) -> int:
        return self.read.integer(name)


class FrameDecoder:
    def __init__(self) -> None:
        self._buffer = bytearray()
        self._header: dict[str, object] | None = None

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while True:
            if self._header is None:
                newline = self._buffer.find(b"\n")
                if newline < 0:
                    if len(self._buffer) > MAX_HEADER:
                        raise FrameError("agent output has no frame header")
                    return frames
                raw = bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                try:
                    header = decode(raw, "a frame header").plain()
                except AnswerError as error:
                    raise FrameError(f"agent sent a bad header: {error}") from None
                if not isinstance(header.get("t"), str):
                    raise FrameError(f"agent sent a bad header: {printable_bytes(raw[:200])}")
                self._header = header
            size = self._header.get("n", 0)
            if not isinstance(size, int) or not 0 <= size <= MAX_PAYLOAD:
                raise FrameError(f"agent sent a bad payload size: {size!r}")
            if len(self._buffer) < size:
                return frames
            payload = bytes(self._buffer[:size])
            del self._buffer[:size]
            header, self._header = self._header, None
            kind = str(header.pop("t"))
            header.pop("n", None)
            frames.append(Frame(kind, header, payload))
