"""The arguments a server printed about itself at startup (its args line).

Which lines are args lines, and how each is read, is each engine's
(:attr:`tui.engines.spec.EngineSpec.args_heads` and ``read_reported``); here the
line is matched against every engine's heads and its secrets are redacted. Values
are Python literals or :class:`Unparsed` text; nothing is ever evaluated.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from tui.core.secrets import redact_value, secret_name
from tui.engines import SPECS
from tui.engines._literals import Unparsed
from tui.engines.spec import ArgsHead, EngineSpec

__all__ = ["ReportedArgs", "Unparsed", "parse_reported", "value_text"]

#: (head, its engine) of every engine, each engine's newest form first.
_HEADS: tuple[tuple[ArgsHead, EngineSpec], ...] = tuple(
    (head, spec) for spec in SPECS.values() if spec.read_reported for head in spec.args_heads
)
#: A substring every head holds, when they share one (a cheap first test), else "".
_COMMON = "args" if all("args" in head.text for head, _ in _HEADS) else ""


@dataclass(frozen=True)
class ReportedArgs:
    """The arguments a server printed about itself at startup.

    ``format`` is the args head the line starts with (its ``form`` names the shape).
    ``values`` maps argparse destinations to literal values (or :class:`Unparsed`).
    ``truncated`` is true when the line ended before the closing bracket (a cut
    line): the values seen are kept, the rest is unknown. ``offset`` is the log
    offset of the line, when the caller knows it. ``engine`` is the engine's name.
    """

    format: ArgsHead
    values: Mapping[str, object]
    truncated: bool = False
    offset: int | None = None
    engine: str = ""

    @property
    def complete(self) -> bool:
        return self.format.complete and not self.truncated


def parse_reported(line: str, offset: int | None = None) -> ReportedArgs | None:
    """The arguments on a startup line, or None if the line prints none. Never raises."""
    if _COMMON not in line:
        return None
    found = next(((h, s) for h, s in _HEADS if h.text in line), None)
    if found is None:
        return None
    head, engine = found
    try:
        read = engine.read_reported(line, head)  # type: ignore[misc]
    except (ValueError, TypeError, IndexError, RecursionError, MemoryError):
        return None
    if read is None:
        return None
    values = {k: _redacted(v) if secret_name(k) else v for k, v in read.items()}
    truncated = bool(getattr(read, "truncated", False))
    return ReportedArgs(head, values, truncated=truncated, offset=offset, engine=engine.name)


def _redacted(value: object) -> object:
    """A reported secret as a redacted word, its digest that of the text the command line
    would carry (``api_key='sk-…'`` and ``--api-key sk-…`` compare equal)."""
    if isinstance(value, Unparsed):
        return redact_value(value.text)
    if value is None or isinstance(value, bool):
        return value
    return redact_value(value if isinstance(value, (str, int, float)) else value_text(value))


def value_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        try:
            return json.dumps(value, separators=(", ", ": "))
        except (TypeError, ValueError):
            return repr(value)
    return str(value)
