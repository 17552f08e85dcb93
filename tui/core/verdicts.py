"""The verdicts babysit gives a service, and everything each one is called, in one table.

A view never spells a verdict itself: the word on screen, the name in JSON, the
severity a fleet sorts by, the exit status of ``babysit status`` and the tone a
screen colours it with are all read from :data:`LOOKS`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType


class Verdict(enum.Enum):
    """What babysit can say of a service; the value is its name in JSON."""

    LIVE = "live"
    STARTING = "starting"
    #: The run is alive, owns its log and was ready, but does not serve: work is pending
    #: and nothing progressed for ``wedged_after``, a fatal line of this run was printed
    #: while its process lives on, or a canary timed out (see tui/core/serving.py).
    WEDGED = "wedged"
    STALE = "stale"
    DEAD = "dead"
    NO_LOG = "no-log"
    AMBIGUOUS = "ambiguous"
    UNKNOWN = "unknown"

    @property
    def look(self) -> Look:
        return LOOKS[self]

    @property
    def word(self) -> str:
        """``LIVE``, ``NO-LOG``: how people read it."""
        return LOOKS[self].word

    @property
    def severity(self) -> int:
        """Higher is worse; for sorting fleets."""
        return LOOKS[self].severity

    @property
    def exit_status(self) -> int:
        """Like monitoring plugins: 0 ok, 1 warning, 2 critical, 3 unknown."""
        return LOOKS[self].exit_status

    @property
    def tone(self) -> str:
        """The screen's colour class: ``live``, ``starting``, ``bad`` or ``unknown``."""
        return LOOKS[self].tone


@dataclass(frozen=True)
class Look:
    word: str
    severity: int
    exit_status: int
    tone: str


#: Every verdict's word, severity, exit status and tone.
LOOKS: Mapping[Verdict, Look] = MappingProxyType(
    {
        Verdict.LIVE: Look("LIVE", 0, 0, "live"),
        Verdict.STARTING: Look("STARTING", 1, 1, "starting"),
        Verdict.NO_LOG: Look("NO-LOG", 2, 2, "bad"),
        Verdict.DEAD: Look("DEAD", 3, 2, "bad"),
        Verdict.WEDGED: Look("WEDGED", 4, 2, "bad"),
        Verdict.STALE: Look("STALE", 5, 2, "bad"),
        Verdict.AMBIGUOUS: Look("AMBIGUOUS", 6, 2, "bad"),
        Verdict.UNKNOWN: Look("UNKNOWN", 7, 3, "unknown"),
    }
)

#: The tones a screen must style, each once.
TONES: tuple[str, ...] = tuple(dict.fromkeys(look.tone for look in LOOKS.values()))


def worst_exit_status(verdicts: Iterable[Verdict]) -> int:
    """Monitoring-plugin exit status for a set of services: unknown wins, then the worst."""
    statuses = [v.exit_status for v in verdicts]
    if 3 in statuses:
        return 3
    return max(statuses, default=0)
