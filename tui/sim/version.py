"""Engine release numbers, compared the way the simulator needs to pick a log format."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(?:post)?(\d+))?$")


@dataclass(frozen=True, order=True)
class Version:
    """A release: ``major.minor.micro`` plus a fourth part.

    The fourth part is SGLang's ``.postN`` or vLLM's fourth number (``0.10.1.1``);
    both sort after the plain release, which is the order they were published in.
    ``text`` is what the server prints and never takes part in comparisons.
    """

    key: tuple[int, int, int, int]
    text: str = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> Version:
        match = _VERSION.match(text.strip())
        if match is None:
            raise ValueError(f"not a version number: {text!r}")
        major, minor, micro, post = match.groups()
        key = (int(major), int(minor), int(micro or 0), int(post or 0))
        return cls(key, text.strip().lstrip("v"))

    def __str__(self) -> str:
        return self.text


def V(text: str) -> Version:
    """Shorthand for :meth:`Version.parse`."""
    return Version.parse(text)
