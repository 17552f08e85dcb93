"""A run's startup in plain words, said the same on every view.

The host screen's banner and ``babysit status`` say where a starting run is in a
sentence (:func:`startup_line`, resting on :func:`tui.core.phases.startup_words`);
the fleet's row says it in a few cells (:func:`startup_cell`); a ready run's banner
says how long its startup took (:func:`ready_in`). Times are the host's own.
"""

from __future__ import annotations

from datetime import datetime

from tui.core.hostclock import HostWords
from tui.core.phases import LAUNCHING, Startup, startup_words
from tui.core.sanitize import printable
from tui.core.units import duration_words

#: How the fleet's row and the banner write an ETA: the hour and the minute.
ETA_FORMAT = "%H:%M"


def eta_clock(words: HostWords, ts: float) -> str:
    """``14:05``: a time to come, on the host's clock, to the minute."""
    return datetime.fromtimestamp(ts, words.zone).strftime(ETA_FORMAT)


def last_run_total(s: Startup) -> float | None:
    """Seconds the service's last run took from its start to ready; None when no run of
    the service is kept that reached ready."""
    return sum(s.last.values()) if s.last else None


def ready_in(s: Startup) -> float | None:
    """Seconds this run took from its start to ready; None before ready or when either
    end is not known."""
    if not s.ready or s.since is None:
        return None
    started = next((at for name, at in s.passed if name == LAUNCHING), None)
    return None if started is None else max(0.0, s.since - started)


def startup_line(s: Startup, words: HostWords, *, began: bool = False) -> str:
    """``loading weights (3 of 8) for 2m 10s; ready by about 14:05 (the last run took 4m
    30s here); the last run was ready after 6m 02s``, or the overdue note in its place
    of the first part; with ``began``, ``; the phase began 09:20:06`` after it.
    ``words.now`` is the host's time now."""
    said = startup_words(s, words.now, lambda ts: eta_clock(words, ts))
    total = last_run_total(s)
    if total is not None:
        said += f"; the last run was ready after {duration_words(total)}"
    if began and s.since is not None:
        said += f"; the phase began {words.clock(s.since)}"
    return printable(said)


def progress_short(s: Startup) -> str:
    """``loading weights 3/8``: the phase and its progress in the fewest cells."""
    progress = f" {s.done}/{s.total}" if s.done is not None and s.total is not None else ""
    return printable(f"{s.phase}{progress}")


def startup_cell(s: Startup, words: HostWords) -> str:
    """``loading weights 3/8 · ETA 14:05``; past twice its last run's time
    ``loading weights 3/8 · 9m 12s, overdue``; with nothing to go by, how long it has
    been in the phase (``loading weights 3/8 · 2m 10s``). At most about 40 cells for the
    usual phases: it fits at 80 columns."""
    head = progress_short(s)
    elapsed = duration_words(max(0.0, words.now - s.since)) if s.since is not None else None
    if s.overdue is not None and elapsed is not None:
        return f"{head} · {elapsed}, overdue"
    if s.eta is not None:
        return f"{head} · ETA {eta_clock(words, s.eta)}"
    return f"{head} · {elapsed}" if elapsed is not None else head
