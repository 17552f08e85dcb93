"""Whether a run serves: its ready line past this run's anchor, or /health when the log
cannot tell; and what a run that is not ready yet is waiting for, in plain words."""

from __future__ import annotations

from dataclasses import replace

from tui.core.runs import Ready, Run, ServiceProbe

#: The /health status that says the server serves.
HEALTHY = 200


def ready_of(probe: ServiceProbe, run: Run) -> Ready:
    """The run's readiness. /health counts only when the log cannot tell: readiness
    unknown, or no ready line in a log that may have lost it (cut since the run began)."""
    ready = run.ready or Ready(seen=None, source="not probed")
    if (ready.seen is None or (ready.seen is False and ready.cut)) and probe.health == HEALTHY:
        # what the log showed of this run stays (its anchor, its startup phases)
        return replace(
            ready, seen=True, source="HTTP /health answered 200", by_http=True, cut=False
        )
    return ready


def ready_words(ready: Ready, clock: str | None) -> str:
    """``ready since 14:03:00`` (``clock``: the ready line's time in the host's clock)."""
    when = f" since {clock}" if clock else ""
    how = " (by HTTP /health; no ready line found)" if ready.by_http else ""
    return f"ready{when}{how}"


def waiting_words(probe: ServiceProbe, ready: Ready) -> str:
    """``not ready yet (no ready line since this run began at offset N)`` and what
    /health said, or why the log may not tell."""
    where = f" since this run began at offset {ready.anchor}" if ready.anchor is not None else ""
    health = ""
    if probe.health is not None:
        health = f"; /health answers {probe.health}"
    elif ready.cut and not probe.health_asked:
        health = (
            "; the log begins inside this run, so a cut may have taken its ready line "
            "(with port: set, /health can tell)"
        )
    return f"not ready yet (no ready line{where}){health}"
