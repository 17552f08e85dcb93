"""WEDGED and the canary in plain words, said the same on every view.

The host screen's banner, the fleet's row and ``babysit status`` read their words
for a :class:`~tui.core.serving.Wedged` and a :class:`~tui.core.canary.CanaryResult`
from here: since when (the host's clock, and how long ago), the cause in a word or
two, and a canary's one-line gist. The cause in full words begins the WEDGED
summary (:func:`tui.core.wedge.wedged_words`).
"""

from __future__ import annotations

from tui.core.canary import CanaryOutcome, CanaryResult
from tui.core.hostclock import HostWords
from tui.core.sanitize import printable
from tui.core.serving import WedgeCause, Wedged

#: Each cause in a word or two, for the fleet's note column.
CAUSE_SHORT = {
    WedgeCause.STALL: "stalled",
    WedgeCause.FATAL: "fatal line",
    WedgeCause.CANARY: "canary timeout",
}
#: Characters of a canary's error kept in its gist.
ERROR_CHARS = 80


def cause_short(wedged: Wedged) -> str:
    """``stalled``: the cause in the fleet's few words."""
    return CAUSE_SHORT.get(wedged.cause, printable(wedged.cause))


def since_words(wedged: Wedged, words: HostWords) -> str:
    """``since 09:21:31 (3 min ago)``, in the host's clock."""
    return f"since {words.when(wedged.since)}"


def canary_outcome_words(result: CanaryResult) -> str:
    """``ok, TTFT 0.21 s, 61.8 tok/s`` or ``timed out after 30 s``: what the canary found."""
    outcome = result.outcome
    if outcome is CanaryOutcome.TIMEOUT:
        waited = result.elapsed_s
        return "timed out" if waited is None else f"timed out after {waited:.0f} s"
    if outcome is CanaryOutcome.NO_RUN:
        return "no live run to ask"
    if outcome is CanaryOutcome.UNREACHABLE:
        return _with_error("the host could not be asked", result)
    if outcome is CanaryOutcome.ERROR:
        status = f" (HTTP {result.http_status})" if result.http_status is not None else ""
        return _with_error(f"error answer{status}", result)
    parts = ["ok" if outcome is CanaryOutcome.OK else "output repeats"]
    if outcome is CanaryOutcome.REPETITION and result.repetition is not None:
        parts[0] += f" (repetition {result.repetition:.2f})"
    if result.ttft_s is not None:
        parts.append(f"TTFT {result.ttft_s:.2f} s")
    if result.tokens_per_s is not None:
        parts.append(f"{result.tokens_per_s:.1f} tok/s")
    return ", ".join(parts)


def canary_gist(result: CanaryResult, words: HostWords) -> str:
    """``canary 12:03:10 (2 min ago): ok, TTFT 0.21 s, 61.8 tok/s``: one line, with its age."""
    when = f" {words.when(result.sent_at)}" if result.sent_at is not None else ""
    return f"canary{when}: {canary_outcome_words(result)}"


def _with_error(words: str, result: CanaryResult) -> str:
    if not result.error:
        return words
    error = printable(result.error)
    if len(error) > ERROR_CHARS:
        error = error[: ERROR_CHARS - 1] + "…"
    return f"{words}: {error}"
