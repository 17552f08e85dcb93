"""Times in a host's own clock and ages against the probe's clock, as verdicts say them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from tui.core.runs import Run, ServiceProbe
from tui.core.units import human_age


class HostWords:
    """Formats times in the host's own clock, ages against the probe's clock."""

    def __init__(self, utc_offset: int, now: float) -> None:
        self.zone = timezone(timedelta(seconds=utc_offset))
        self.now = now

    @classmethod
    def of(cls, probe: ServiceProbe) -> HostWords:
        """The host's clock as the probe read it."""
        return cls(probe.utc_offset, probe.observed_at)

    def clock(self, ts: float) -> str:
        return datetime.fromtimestamp(ts, self.zone).strftime("%H:%M:%S")

    def ago(self, ts: float) -> str:
        return f"{human_age(self.now - ts)} ago"

    def when(self, ts: float) -> str:
        return f"{self.clock(ts)} ({self.ago(ts)})"

    def started(self, run: Run) -> str:
        start = run.root.start_time
        return f"pid {run.root.pid} (started {self.clock(start)}, {self.ago(start)})"
