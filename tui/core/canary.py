"""A canary: one small completion sent to a run's server on its host, and what it says.

babysit's agent sends it on the host's loopback (never from this machine across the
network), to the engine's own endpoint (:attr:`tui.engines.spec.EngineSpec.canary`),
with the model's recommended sampling (its ``generation_config.json``, when the model's
folder is on the host; else the service's ``canary.sampling``; else the server's
defaults), and only to the run it was meant for: the agent re-checks the pid's start
time before it sends. The answer is read as a stream, each piece stamped as it
arrived: time to first token, tokens per second, the finish reason, the output's first
characters (sanitised) and a repetition score.

``babysit canary --json`` prints :meth:`CanaryResult.to_json`::

    {"schema": 1, "host": "kpro5", "service": "qwen", "ok": true, "outcome": "ok",
     "ttft_s": 0.21, "tokens_per_s": 61.8, "tokens": 64, "finish_reason": "length",
     "repetition": 0.0, "output": " Paris. It is …",
     "sampling": {"temperature": 0.6, "top_p": 0.95}, "sampling_source": "generation_config",
     "sampling_path": "/models/qwen/generation_config.json",
     "recommended": {"temperature": 0.6, "top_p": 0.95},
     "http_status": 200, "error": null, "sent_at": "2026-12-01T12:03:10+01:00",
     "elapsed_s": 1.24, "run": {"pid": 4242, "started_at": "2026-12-01T09:20:06+01:00"}}

Exit status: 0 completed without repetition, 1 completed with repetition or an error
answer, 2 timed out (or no live run to ask), 3 the host could not be asked.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

#: The version of ``babysit canary --json``'s document.
CANARY_SCHEMA = 1
#: A repetition score at or above this says the output loops.
REPETITION_LOOPS = 0.5
#: Characters of the output kept (sanitised).
OUTPUT_CHARS = 200


class CanaryOutcome(enum.Enum):
    """How a canary ended; the value is its name in JSON."""

    OK = "ok"
    REPETITION = "repetition"
    ERROR = "error"
    TIMEOUT = "timeout"
    #: no live run of the service to ask (nothing was sent)
    NO_RUN = "no-run"
    #: the host could not be asked
    UNREACHABLE = "unreachable"

    @property
    def exit_status(self) -> int:
        return _EXIT[self]


_EXIT = {
    CanaryOutcome.OK: 0,
    CanaryOutcome.REPETITION: 1,
    CanaryOutcome.ERROR: 1,
    CanaryOutcome.TIMEOUT: 2,
    CanaryOutcome.NO_RUN: 2,
    CanaryOutcome.UNREACHABLE: 3,
}


@dataclass(frozen=True)
class CanaryResult:
    """One canary's answer, tied to the run it was sent to (pid and start time).

    Times are the host's epoch seconds; ``utc_offset`` is its zone (for JSON)."""

    host: str
    service: str
    outcome: CanaryOutcome
    sent_at: float | None = None
    run_pid: int | None = None
    run_start_ticks: int | None = None
    run_started_at: float | None = None
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    tokens: int | None = None
    elapsed_s: float | None = None
    finish_reason: str | None = None
    #: the output's first :data:`OUTPUT_CHARS` characters, made printable
    output: str = ""
    #: share of the output covered by repeated n-grams, 0-1 (None: no output)
    repetition: float | None = None
    #: the sampling parameters sent, and where they came from (SAMPLING_* words)
    sampling: Mapping[str, float] = field(default_factory=dict)
    sampling_source: str = "server"
    sampling_path: str | None = None
    #: what the model's generation_config.json recommends, when it was read
    recommended: Mapping[str, float] | None = None
    http_status: int | None = None
    #: what went wrong, in plain words (an error answer as it came, sanitised)
    error: str | None = None
    utc_offset: int = 0
    #: the agent's own CPU seconds for this canary
    agent_cpu_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.outcome is CanaryOutcome.OK

    @property
    def exit_status(self) -> int:
        return self.outcome.exit_status

    @property
    def timed_out(self) -> bool:
        return self.outcome is CanaryOutcome.TIMEOUT

    def to_json(self) -> dict[str, object]:
        raise NotImplementedError

    def lines(self) -> list[str]:
        """The result in plain words, one fact per line, for ``babysit canary``."""
        raise NotImplementedError


def repetition_score(text: str) -> float:
    """The share of ``text`` covered by n-grams that occur more than once (0: none, 1: all)."""
    raise NotImplementedError


def canary_request(
    engine: str,
    config: object,
    *,
    pid: int,
    start_ticks: int,
    port: int,
    model_dir: str | None,
) -> dict[str, object] | None:
    """The agent's request (MODE_CANARY) for ``config`` (a CanaryConfig) to this run; None
    when the engine has no canary API."""
    raise NotImplementedError


def model_folder(engine: str, values: Mapping[str, object]) -> str | None:
    """The model's folder from the running server's values (argparse destination -> value,
    the launch diff's running side or the args line): the spec's ``model_keys`` first
    found; a file's folder for a file (a GGUF)."""
    raise NotImplementedError


def read_canary(
    host: str,
    service: str,
    engine: str,
    answer: Mapping[str, object],
    *,
    utc_offset: int,
    started_at: float | None,
    iso: Callable[[float], str | None] | None = None,
) -> CanaryResult:
    """The agent's canary answer as a result (never raises: a garbled answer is an ERROR
    result that says what was wrong)."""
    raise NotImplementedError
