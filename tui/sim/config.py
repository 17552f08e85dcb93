"""One simulated server as asked for on the command line: its config and its scenario."""

from __future__ import annotations

from dataclasses import dataclass

from tui.sim.flags import ServerFlags
from tui.sim.version import Version

SCENARIOS = (
    "healthy",
    "spec-off",
    "oom",
    "crash-after:S",
    "killed-after:S",
    "killed-at-load",
    "ignore-sigterm",
    "slow-load",
    "repeat",
    "wedged",
    "nccl-timeout",
    "engine-dead",
    "orphan-workers",
)
#: Scenarios that happen S seconds after the server is ready.
TIMED = ("crash-after", "killed-after")
#: Scenarios where the engine stops ``--wedge-after`` seconds after ready while the process
#: lives on: ``wedged`` (silently), ``nccl-timeout`` (torch's NCCL watchdog says so),
#: ``engine-dead`` (vLLM's engine core dies, the API server stays up).
WEDGING = ("wedged", "nccl-timeout", "engine-dead")
#: The scenario whose workers (``--tp N``, N >= 2) start sessions of their own and outlive
#: the server, holding their GPU memory (:mod:`tui.sim.orphan`).
ORPHANING = "orphan-workers"
#: default of ``--wedge-after``: seconds of serving before a wedging scenario strikes
DEFAULT_WEDGE_AFTER = 20.0


@dataclass(frozen=True)
class Scenario:
    """How this run misbehaves. ``crash_after`` (seconds after ready) only for the timed
    ones: ``crash-after`` (a CUDA fault in the engine) and ``killed-after`` (a child
    process, the scheduler, engine core or a worker, killed by SIGKILL as the OOM killer
    does). ``killed-at-load``: the same while the weights load."""

    name: str = "healthy"
    crash_after: float | None = None

    @classmethod
    def parse(cls, text: str) -> Scenario:
        name, _, arg = text.partition(":")
        if name in TIMED:
            try:
                seconds = float(arg)
            except ValueError:
                raise ValueError(f"{name} needs seconds, e.g. {name}:30") from None
            if not 0 <= seconds < float("inf"):
                raise ValueError(f"{name} needs a finite, non-negative number of seconds")
            return cls(name, seconds)
        if arg or name not in SCENARIOS:
            raise ValueError(f"unknown scenario {text!r}; choose from {', '.join(SCENARIOS)}")
        return cls(name)


@dataclass(frozen=True)
class SimConfig:
    """One simulated server as asked for on the command line. Invariant: ``tp >= 1``."""

    engine: str
    version: Version
    port: int
    bind_host: str
    load_seconds: float
    scenario: Scenario
    seed: int | None
    tp: int
    stats_interval: float | None
    flags: ServerFlags
    #: how log records are formatted (see ``--log-format``); "default" is the release default
    log_format: str = "default"
    #: seconds of serving after ready before a wedging scenario (:data:`WEDGING`) strikes
    wedge_after: float = DEFAULT_WEDGE_AFTER
