"""Which log lines are warnings or errors: what the log pane's ``e`` filter keeps.

Engines write their level as a word (SGLang and vLLM ``WARNING`` / ``ERROR``, TGI's
``WARN``, llama.cpp's ``error:``) and a failing Python process writes a traceback
whose lines name an exception. A line is a problem when it says one of those; a
metric line (``Decode batch … #running-req: 3``) never does. The test is on words,
not on an engine's format, so a line of any engine (or a wrapper script's) is kept
the same way.
"""

from __future__ import annotations

import re

from tui.core.cause import failure_kind
from tui.engines import SPECS

#: Level words, as whole words. ``error`` and ``warning`` in lower case only before a
#: colon (``error: model not found``), so a counter such as ``errors=0`` or
#: ``error_rate`` is not taken for one. What a failure line is (out of memory, a signal,
#: an engine's death line) is :func:`tui.core.cause.failure_kind`'s to say.
PROBLEM = re.compile(
    r"\b(?:WARN(?:ING)?|ERROR|CRITICAL|FATAL|PANIC)\b"
    r"|\b(?:[Ww]arning|[Ee]rror|[Ff]atal):"
    r"|Traceback \(most recent call last\)"
    r"|\b[A-Z]\w*(?:Error|Exception)\b"
    r"|\bcore dumped\b"
    r"|\bfailed\b|\bFailed\b"
)


#: The lines an engine prints as it dies or fails to start, each engine's spec's own
#: (llama.cpp's ``Segmentation fault``, …): problems whatever level the line says.
DEATH_LINES = tuple(
    sorted({line for s in SPECS.values() for line in (*s.deaths, *s.startup_failures)})
)


def is_problem(text: str) -> bool:
    """Whether the log line ``text`` is a warning or an error."""
    return PROBLEM.search(text) is not None or failure_kind(text, DEATH_LINES) is not None
