"""The verdicts babysit gives a service, and everything each one is called, in one table.

A view never spells a verdict itself: the word on screen, its glyph, the name in JSON,
the severity a fleet sorts by, the exit status of ``babysit status``, the theme colour
it is drawn in and the CSS class a screen styles it by are all read from :data:`LOOKS`.
Each verdict has a glyph and a word of its own (so they still differ without colour,
under ``NO_COLOR`` or on a monochrome terminal) and a colour of its own; the screens'
CSS (tui/app/babysit.tcss, tui/app/fleet.tcss) draws each class in its look's colour,
and a test holds them to this table.
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
    def glyph(self) -> str:
        """``●``, ``✖``: one cell, drawn before the word."""
        return LOOKS[self].glyph

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
        """The screen's class for it (``-dead``, ``fleet-table--dead``): its JSON name."""
        return self.value

    @property
    def bad(self) -> bool:
        """Whether it is critical (exit status 2): the run does not serve, or babysit
        cannot tell which run it is."""
        return LOOKS[self].exit_status == 2


@dataclass(frozen=True)
class Look:
    """How a verdict is said and drawn. ``colour``: the theme variable it is drawn in
    (``success`` is ``$success``); ``filled``: drawn as a block of its colour (the
    word reversed) even where the others are drawn as coloured text, so that two
    verdicts of one colour still differ."""

    word: str
    glyph: str
    severity: int
    exit_status: int
    colour: str
    filled: bool = False


#: Every verdict's word, glyph, severity, exit status and colour. WEDGED and DEAD share
#: the error colour (both mean "it does not serve"); WEDGED is filled, because its
#: process lives on and answers its health checks.
LOOKS: Mapping[Verdict, Look] = MappingProxyType(
    {
        Verdict.LIVE: Look("LIVE", "●", 0, 0, "success"),
        Verdict.STARTING: Look("STARTING", "◐", 1, 1, "primary"),
        Verdict.NO_LOG: Look("NO-LOG", "○", 2, 2, "secondary"),
        Verdict.DEAD: Look("DEAD", "✖", 3, 2, "error"),
        Verdict.WEDGED: Look("WEDGED", "■", 4, 2, "error", filled=True),
        Verdict.STALE: Look("STALE", "◌", 5, 2, "warning"),
        Verdict.AMBIGUOUS: Look("AMBIGUOUS", "◆", 6, 2, "accent"),
        Verdict.UNKNOWN: Look("UNKNOWN", "?", 7, 3, "text-muted"),
    }
)

#: The classes a screen must style, each once.
TONES: tuple[str, ...] = tuple(v.tone for v in Verdict)
#: The glyph of a LIVE verdict with hints (``● LIVE ⚠ 2``), and its class.
DEGRADED_GLYPH = "⚠"
DEGRADED_TONE = "degraded"


def worst_exit_status(verdicts: Iterable[Verdict]) -> int:
    """Monitoring-plugin exit status for a set of services: unknown wins, then the worst."""
    statuses = [v.exit_status for v in verdicts]
    if 3 in statuses:
        return 3
    return max(statuses, default=0)
