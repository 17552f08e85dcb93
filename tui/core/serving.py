"""Serving, not only alive: whether a LIVE run still answers, and the evidence when it does not.

A run babysit would call LIVE (its process alive, writing its log, ready) is WEDGED
when one of these holds, decided in one place (:class:`ServingWatch`, kept by the
service's :class:`~tui.core.report.ServiceFacts`) for every view:

* **stall** — work is pending and nothing progressed for ``wedged_after`` seconds.
  Pending: running or queued requests above 0 in this run's latest metric line or
  this probe's ``/metrics`` page, a canary in flight, or a client that sent a request
  the server has answered nothing to (:class:`Clients`). Progress: a new generation
  progress line (generation or prefill throughput above 0) or growth of the
  generation counters. Idle is never wedged: with nothing pending, a server may print
  nothing for hours.
* **fatal-line** — a line of this run says the engine stopped serving (the engine's
  ``deaths`` and ``hangs``: NCCL's watchdog timeout, SGLang's scheduler watchdog,
  vLLM's EngineDeadError) while its process lives on ("engine dead, API up").
* **canary-timeout** — this run's last canary timed out while its process lives, and
  nothing progressed since it was sent.

JSON (``status --json``, the service's ``wedged``)::

    {"since": "2026-12-01T12:03:10+01:00", "cause": "stall",
     "evidence": ["2 requests running (the log's latest metric line, byte 48213, 12:03:10)",
                  "no progress since 12:03:10 (3 min ago): the last progress line, byte 48213"]}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tui.core.answers import Fields


class WedgeCause:
    """Why a run is WEDGED (the ``cause`` in JSON)."""

    STALL = "stall"
    FATAL = "fatal-line"
    CANARY = "canary-timeout"


@dataclass(frozen=True)
class Wedged:
    """A run that is alive but does not serve: since when (host epoch seconds), why, and the
    facts it rests on (never empty)."""

    since: float
    cause: str
    evidence: tuple[str, ...]

    def to_json(self, iso: Callable[[float], str | None]) -> dict[str, object]:
        return {"since": iso(self.since), "cause": self.cause, "evidence": list(self.evidence)}


@dataclass(frozen=True)
class Progress:
    """This run's last progress: when (host epoch seconds) and where (the log line's
    offset; None: a ``/metrics`` counter that grew).

    JSON (a service's ``progress`` in ``status --json``)::

        {"at": "2026-12-01T12:03:10+01:00", "offset": 48213, "source": "log"}
    """

    at: float
    offset: int | None

    def to_json(self, iso: Callable[[float], str | None]) -> dict[str, object]:
        source = "log" if self.offset is not None else "/metrics"
        return {"at": iso(self.at), "offset": self.offset, "source": source}


@dataclass(frozen=True)
class Client:
    """One client's TCP connection to the server's port, as the server's socket sees it.

    ``quiet_s``: seconds since the server last sent anything on it. ``waiting_s``: seconds
    since the client's last data when the server has sent nothing after it (a request
    not answered at all), else None. Both None when the kernel was not asked over
    netlink (``/proc/net/tcp`` gives no times)."""

    peer: str
    quiet_s: float | None = None
    waiting_s: float | None = None


#: Client connections listed in an answer at most (the longest waiting first).
MAX_CLIENTS_SHOWN = 16


@dataclass(frozen=True)
class Clients:
    """The client connections open to a run's serving port, from the probe.

    ``source``: ``netlink`` (the kernel's tcp_info: times known) or ``proc``
    (``/proc/PID/net/tcp``: counts only). ``open``: every established connection to the
    port held by the run's processes; ``shown``: at most :data:`MAX_CLIENTS_SHOWN` of them.

    Agent JSON (a run's ``clients``)::

        {"source": "netlink", "port": 30000, "open": 3,
         "clients": [{"peer": "127.0.0.1:53312", "quiet_ms": 181000, "waiting_ms": 181000}]}
    """

    source: str
    port: int | None
    open: int
    shown: tuple[Client, ...] = ()

    @classmethod
    def from_json(cls, data: Fields) -> Clients:
        shown = []
        for c in data.children("clients")[:MAX_CLIENTS_SHOWN]:
            quiet, waiting = c.opt_integer("quiet_ms"), c.opt_integer("waiting_ms")
            shown.append(
                Client(
                    peer=c.string("peer"),
                    quiet_s=None if quiet is None else max(quiet, 0) / 1000,
                    waiting_s=None if waiting is None else max(waiting, 0) / 1000,
                )
            )
        return cls(
            source=data.string("source"),
            port=data.opt_integer("port"),
            open=max(data.integer("open"), 0),
            shown=tuple(shown),
        )

    @property
    def timed(self) -> bool:
        return self.source == "netlink"
